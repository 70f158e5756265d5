"""The measurement campaign: every number of the project measured again on one machine and one code. Its steps derive
from the registry: every benchmark of `presets.BENCHMARKS` at each of its `campaign` settings, then the presets cpu
and mid (`experiments.reproduce`), the whole job at full size with the fastest program and precision (`end_to_end`:
pretraining plus finetuning, `presets.END_TO_END`), the full preset's other full-size runs, then the report. Each step runs the command a user would type, from the repository
root, its output streamed; a run whose record exists is not rerun (`--replace` deletes them first). A benchmark step
whose new summary flags a noisy configuration (`harness.noisy`) is measured once more, its records replaced.
  python -m experiments.campaign --dry_run                      # steps, commands, runs and estimated minutes
  python -m experiments.campaign [--only=STEP,...] [--replace]  # ~9 hours on 2 cores: run alone on the machine"""

import dataclasses
import functools
import os
import shutil
import sys
from typing import Callable, List, Sequence, Tuple

from absl import app
from absl import flags

from common.settings import programs
from experiments import ROOT
from experiments import driver
from experiments import presets
from experiments import records
from experiments.benchmarks import harness

PRESETS = ("cpu", "mid", "full")
REPORT = "report"
# The whole job at full size (`presets.END_TO_END`), a step of its own before the full preset, which leaves its record.
END_TO_END, FULL = "end_to_end", "full"
# experiments.reproduce's --work_dir default: where the presets' resumable runs keep their checkpoints.
REPRODUCE_WORK_DIR = os.path.join("scratch", "reproduce")
_UNFITTED = {driver.POOLED: driver.FALLBACK}  # rates for listing runs whose estimates nobody reads


class StepFailedError(Exception):
  """A step's command exited with an error."""


@dataclasses.dataclass(frozen=True)
class Step:
  """One step: `name` ("<benchmark>/<its records folder>", "preset/<preset>" or "report"), `command` as a user types
  it ("python" first), `plan` (driver.Rates -> the driver.Jobs of its runs), `owned` (what --replace deletes), and a
  benchmark's `summary` and `scratch` (its logs and checkpoints, deleted with `owned` before it is measured again)."""
  name: str
  command: Tuple[str, ...]
  plan: Callable[[driver.Rates], List[driver.Job]]
  owned: Tuple[str, ...] = ()
  summary: str = ""
  scratch: Tuple[str, ...] = ()

  @property
  def group(self) -> str:  # the benchmark's name, "preset" or "report"
    return self.name.split("/")[0]

  @property
  def bfloat16_records(self) -> frozenset:
    """The records of its runs that compute in mixed_bfloat16 (they need a processor with native bfloat16)."""
    return frozenset(j.record for j in self.plan(_UNFITTED) if driver.computes_in_bfloat16(j.spec))

  @property
  def bfloat16(self) -> bool:
    return bool(self.bfloat16_records)


def _argument(path: str) -> str:
  """An absolute `path` as a command run from the repository root names it: relative inside the repository."""
  return os.path.relpath(path, ROOT) if os.path.commonpath([path, ROOT]) == ROOT else path


def steps(output_dir: str = "results", bfloat16: bool = True) -> List[Step]:
  """Every step in campaign order (records under `output_dir`, benchmarks' under <output_dir>/benchmarks/<name>/;
  the end-to-end run in bfloat16 if `bfloat16`, the processor having it natively, else in float32); ValueError if two
  share a name (two settings of a benchmark writing one records folder)."""
  out, found = os.path.abspath(output_dir), []
  for b in presets.BENCHMARKS:
    folder, work = os.path.join(out, "benchmarks", b.name), os.path.join(ROOT, harness.WORK_DIR, b.name)
    moved = [] if folder == os.path.join(ROOT, harness.OUTPUT_DIR, b.name) else [f"--output_dir={_argument(folder)}"]
    for overrides in b.campaign:
      s = harness.setting(b, overrides)
      summary = os.path.join(folder, harness.summary_file(b, s))
      found.append(Step(f"{b.name}/{b.folder(s)}", tuple(harness.command(b, overrides) + moved),
                        functools.partial(harness.plan, b, s, folder, work),
                        (os.path.join(folder, b.folder(s)), summary), summary, (os.path.join(work, b.folder(s)),)))
  reproduce, work, owned = ("python", "-m", "experiments.reproduce"), os.path.join(ROOT, REPRODUCE_WORK_DIR), set()
  end_to_end = f"{presets.FULL_SIZE.name}/{presets.END_TO_END[programs.PRECISIONS[1 if bfloat16 else 0]]}"
  for name, p, only in [(f"preset/{p}", p, []) for p in PRESETS if p != FULL] + [
      (END_TO_END, FULL, [end_to_end]), (f"preset/{FULL}", FULL, [])]:
    plan = functools.partial(driver.plan, presets.select(presets.build(p), only), p, out, work)
    mine = tuple(r for r in (j.record for j in plan(_UNFITTED)) if r not in owned)  # a record has one owner
    owned.update(mine)
    found.append(Step(name, (*reproduce, f"--preset={p}", *(f"--only={o}" for o in only),
                          f"--output_dir={_argument(out)}"), plan, mine))
  found.append(Step(REPORT, (*reproduce, "--figures_only", f"--output_dir={_argument(out)}"), lambda rates: []))
  names = [s.name for s in found]
  twice = sorted({n for n in names if names.count(n) > 1})
  if twice:
    raise ValueError(f"campaign steps named twice (two settings, one records folder): {', '.join(twice)}")
  return found


def select(all_steps: Sequence[Step], only: Sequence[str]) -> List[Step]:
  """The steps `only` names (a step's name, or a benchmark's name or "preset": all its steps) in campaign order, all
  for none; ValueError naming the names that match no step."""
  unknown = [n for n in only if not any(n in (s.name, s.group) for s in all_steps)]
  if unknown:
    raise ValueError(f"unknown campaign step {', '.join(map(repr, unknown))}; steps: "
                     f"{', '.join(s.name for s in all_steps)} (or a benchmark's name, or preset)")
  return [s for s in all_steps if not only or s.name in only or s.group in only]


def check_replace(step: Step, output_dir: str) -> None:
  """ValueError unless --replace may delete `step`'s records: all it owns lies inside `output_dir`, and its resumable
  runs left no checkpoints (a rerun would resume them, not measure again; the campaign leaves those to you)."""
  root = os.path.realpath(output_dir)
  outside = [p for p in step.owned if os.path.commonpath([os.path.realpath(p), root]) != root
             or os.path.realpath(p) == root]
  if outside:
    raise ValueError(f"{step.name}: --replace deletes nothing outside --output_dir={output_dir}: {', '.join(outside)}")
  left = sorted({j.model_dir for j in step.plan(_UNFITTED) if j.model_dir and os.path.isdir(j.model_dir)
                 and os.listdir(j.model_dir)})
  if left:
    raise ValueError(f"{step.name}: checkpoints of earlier runs would be resumed, not measured again; delete them "
                     f"first (--replace deletes nothing outside --output_dir): {', '.join(left)}")


def replace(step: Step, output_dir: str, out: Callable[[str], None] = print) -> List[str]:
  """Deletes `step`'s records and summary (its owned paths that exist, after `check_replace`); returns them."""
  check_replace(step, output_dir)
  return _delete(step.owned, out)


def _delete(paths: Sequence[str], out: Callable[[str], None], why: str = "--replace") -> List[str]:
  deleted = [p for p in paths if os.path.lexists(p)]
  for path in deleted:
    if os.path.isdir(path) and not os.path.islink(path):
      shutil.rmtree(path)
    else:
      os.remove(path)
    out(f"[campaign] {why}: deleted {path}")
  return deleted


def runnable(chosen: Sequence[Step], bfloat16: bool, out: Callable[[str], None] = print) -> List[Step]:
  """`chosen` as this processor can measure it: without native bfloat16 (`bfloat16` False) a benchmark step computing
  in bfloat16 is skipped, and a preset's bfloat16 runs keep their records (--replace leaves them; one without a
  record is left out, `driver.runnable_here`); each named with why. Their records stay from the machine that
  measured them."""
  kept = []
  for s in chosen:
    if bfloat16 or not s.bfloat16:
      kept.append(s)
    elif s.group == "preset":
      mine = s.bfloat16_records
      out(f"[campaign] {s.name}: its {len(mine)} bfloat16 runs keep their records, not measured again: this "
          "processor has no native bfloat16 (the programs refuse it)")
      kept.append(dataclasses.replace(s, owned=tuple(p for p in s.owned if p not in mine)))
    else:
      out(f"[campaign] skipping {s.name}: it computes in bfloat16 and this processor has no native bfloat16 (the "
          "programs refuse it); its records stay as they are")
  return kept


def dry_run(chosen: Sequence[Step], output_dir: str, replacing: bool = False,
            out: Callable[[str], None] = print) -> float:
  """Prints each step's command, runs (recorded ones apart; with `replacing` they run again) and estimated minutes,
  then the total; runs nothing. Returns the estimated seconds of the runs to do."""
  rates, totals = driver.fit_rates(output_dir), [0, 0, 0.0]
  for s in chosen:
    jobs = s.plan(rates)
    todo = [j for j in jobs if replacing or not os.path.exists(j.record)]
    seconds = sum(j.estimate for j in todo)
    totals = [totals[0] + len(jobs), totals[1] + len(todo), totals[2] + seconds]
    out(f"{s.name}: {len(jobs)} runs ({len(jobs) - len(todo)} recorded, {len(todo)} to run), estimated "
        f"{driver.minutes(seconds)}\n  {' '.join(s.command)}")
  out(f"total: {len(chosen)} steps, {totals[0]} runs ({totals[0] - totals[1]} recorded, {totals[1]} to run), "
      f"estimated {driver.minutes(totals[2])} ({driver.describe_rates(rates)})")
  return totals[2]


def run(chosen: Sequence[Step], output_dir: str, replacing: bool = False,
        out: Callable[[str], None] = functools.partial(print, flush=True)) -> None:
  """Runs each step's command in order (`driver.call`), output streamed; with `replacing`, deletes its records first
  (every step checked before anything runs: ValueError); a benchmark step that wrote a summary flagging noisy
  configurations runs once more, its records and scratch deleted first. StepFailedError naming the first step that
  fails; the steps before it and its finished records are kept."""
  for s in chosen if replacing else ():
    check_replace(s, output_dir)
  for i, s in enumerate(chosen):
    if replacing:
      replace(s, output_dir, out)
    for again in (False, True):
      before = os.path.exists(s.summary) and os.path.getmtime(s.summary)
      out(f"[campaign] step {i + 1}/{len(chosen)} {s.name}{' again' if again else ''}: {' '.join(s.command)}")
      code = driver.call([sys.executable, *s.command[1:]]).returncode
      if code != 0:
        raise StepFailedError(f"campaign step {s.name} failed (exit status {code}); the steps before it and its "
                              "finished records are kept: rerun to continue" + (
                                  " (--replace would delete them again: name the steps left with --only)"
                                  if replacing else ""))
      written = os.path.exists(s.summary) and os.path.getmtime(s.summary) != before  # a step that ran something
      flagged = harness.noisy(records.load(s.summary)) if written else []
      if again or not flagged:
        break
      _delete(s.owned + s.scratch, out, f"{s.name}: repeats of {', '.join(flagged)} more than "
                                        f"{harness.NOISE:.0%} apart, measuring it once more")


def main() -> None:
  """The command line (module docstring); its flags are defined here, so importing the module defines none."""
  dry = flags.DEFINE_bool("dry_run", False, "Print each step with its command, runs and estimated minutes; run "
                          "nothing.")
  only = flags.DEFINE_list("only", [], "Steps to run (a step's name, or a benchmark's name or preset: all its "
                           "steps); default all, in campaign order.")
  replacing = flags.DEFINE_bool("replace", False, "Delete each step's records and summary before it runs, so that it "
                                "measures again instead of reusing them.")
  output = flags.DEFINE_string("output_dir", "results", "Where records, figures/ and README.md go (benchmarks' "
                               "under <output_dir>/benchmarks/<name>/).")

  def _main(argv):
    if len(argv) > 1:
      raise app.UsageError(f"Unexpected positional arguments: {' '.join(argv[1:])}")
    try:
      bfloat16 = driver.native_bfloat16()
      chosen = runnable(select(steps(output.value, bfloat16), only.value), bfloat16)
      (dry_run if dry.value else run)(chosen, output.value, replacing.value)
    except (ValueError, StepFailedError) as e:
      print(f"error: {e}", file=sys.stderr)
      sys.exit(1)

  app.run(_main)


if __name__ == "__main__":
  main()
