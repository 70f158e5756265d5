"""The whole tuned job's time to 98.5% on MNIST: the report's network at full size (4 × 2000 units, all 55,000
images) with the tuned recipe, its layer warm-up named (`experiments.schedules.FAIR_CHOSEN`), on the fastest program
and precision (pipeline_parallel on 2 devices in bfloat16), linear probe and per-epoch held-out evaluation off, over a
grid of pretraining and finetuning epochs. `choose`: the configuration with the fewest pretraining + finetuning
seconds whose validation accuracy reaches GOAL; its test accuracy is reported, never used to choose. Each run is one
process alone on the machine, and every run of the grid on one machine (their seconds are compared). `next_run` gives
the order: the grid cheapest first (`GRID`, by its epochs' predicted seconds), except that once its three cheapest
points missed the goal the costliest (20 + 20) runs, to learn whether any point reaches it (if not, `BEYOND` runs); a
point costlier than one that reached the goal is not run, nor one with no more epochs of either kind than one that
missed it (assumed, not tested, not to do better: single runs). The table says which ran and why the others did not."""

from typing import Any, List, Mapping, Optional, Tuple

from experiments import records
from experiments import schedules
from experiments.presets import BF16, CONFIG_1, MNIST, Headline, Run, Study, spec
from experiments.render import tables

GOAL = 0.985  # validation accuracy on MNIST
EPOCHS = (5, 10, 15, 20)
# Seconds of one epoch's pretraining and finetuning, only to order the grid (the measured seconds decide).
PRETRAIN_WEIGHT, FINETUNE_WEIGHT = 18.0, 11.0
GRID: Tuple[Tuple[int, int], ...] = tuple(sorted(((p, f) for p in EPOCHS for f in EPOCHS),
                                                 key=lambda e: PRETRAIN_WEIGHT * e[0] + FINETUNE_WEIGHT * e[1]))
PROGRAM = schedules.PP
# Beyond the grid, when no point of it reached the goal: the epochs of the tuned pipeline's full-size runs.
BEYOND: Tuple[Tuple[int, int], ...] = ((30, 30),)


def _runs(s: Mapping[str, Any]) -> List[Run]:
  """The grid, cheapest first: pipeline_parallel in bfloat16 at sizes `s`, each (pretraining, finetuning) epochs."""
  settings = {"recipe": "tuned", "dataset": MNIST, **BF16, **schedules.original(PROGRAM),
              "layer_warmup_epochs": schedules.FAIR_CHOSEN[PROGRAM.name]}
  return [spec(_name(p, f), PROGRAM, s["hidden"], p, s["batch"], s["devices"], s["examples"], f,
               settings=settings, resumable=True) for p, f in s.get("grid", GRID + BEYOND)]


def seconds(record: Mapping[str, Any]) -> float:
  """A run's pretraining + finetuning seconds."""
  return record["pretrain_seconds"] + record["finetune"]["seconds"]


def choose(runs: Mapping[str, dict]) -> Optional[str]:
  """The run with the fewest pretraining + finetuning seconds whose validation accuracy is at least GOAL (None:
  none); test accuracy is not read."""
  passing = [n for n, r in runs.items() if r.get("finetune") and records.accuracy(r, "validation_accuracy") >= GOAL]
  return min(passing, key=lambda n: seconds(runs[n])) if passing else None


def _name(pretrain_epochs: int, finetune_epochs: int) -> str:
  """A grid run's name, pp_bf16_p<P>_f<F>."""
  return f"pp_bf16_p{pretrain_epochs}_f{finetune_epochs}"


def _epochs(name: str) -> Tuple[int, int]:
  """(pretraining, finetuning) epochs of a grid run's name, pp_bf16_p<P>_f<F>."""
  p, f = name.rsplit("_p", 1)[1].split("_f")
  return int(p), int(f)


def _skipped(name: str, runs: Mapping[str, dict]) -> Optional[str]:
  """Why the point `name` need not run given the records `runs` (None: it should): costlier than a point that
  reached the goal, or no more epochs of either kind than a point that missed it."""
  order = [_name(p, f) for p, f in GRID]
  reached = [n for n in runs if n in order and records.accuracy(runs[n], "validation_accuracy") >= GOAL]
  if name not in order and reached:
    return "beyond the grid, not needed: a point of it reached the goal"
  if name in order and any(order.index(name) > order.index(n) for n in reached):
    return "costlier than a point that reached the goal"
  p, f = _epochs(name)
  missed = [_epochs(n) for n, r in runs.items() if records.accuracy(r, "validation_accuracy") < GOAL]
  if any(p <= q and f <= g for q, g in missed):
    return "no more epochs of either kind than a point that missed the goal"
  return None


def next_run(runs: Mapping[str, dict]) -> Optional[str]:
  """The grid point to run next given the records `runs` ({run name: record}), or None when the rule has its answer:
  the cheapest point not run and not skipped (`_skipped`), the costliest first once the three cheapest missed, and
  `BEYOND` when every point of the grid that may run missed."""
  order = [_name(p, f) for p, f in GRID]
  costliest = order[-1]
  if costliest not in runs and all(n in runs and records.accuracy(runs[n], "validation_accuracy") < GOAL
                                   for n in order[:3]):
    return costliest
  left = [n for n in order if n not in runs and not _skipped(n, runs)]
  if left:
    return left[0]
  if choose({n: r for n, r in runs.items() if n in order}) is None:
    return next((_name(p, f) for p, f in BEYOND if _name(p, f) not in runs), None)
  return None


def _beyond(record: Mapping[str, Any]) -> bool:
  """Whether a run's epochs lie outside the grid (`BEYOND`)."""
  return (record["config"]["pretrain_epochs"], record["config"]["finetune_epochs"]) not in GRID


def _why_not(not_run: List[str], runs: Mapping[str, dict]) -> dict:
  """{reason: [run names]} of the declared runs that did not run (`_skipped`; "not run yet" for the others)."""
  out: dict = {}
  for name in not_run:
    out.setdefault(_skipped(name, runs) or "not run yet", []).append(name)
  return out


def table(data: records.StudyRecords, others) -> Tuple[str, List[str]]:
  """Every grid point that ran, cheapest first: epochs, seconds (pretraining, finetuning, the whole process), accuracy;
  which the rule chose."""
  rows, ran = [], [run.name for run in data.planned if run.name in data.runs]
  for name in ran:
    r = data.runs[name]
    rows.append([f"`{name}`", f"{r['config']['pretrain_epochs']} + {r['config']['finetune_epochs']}",
                 f"{r['pretrain_seconds'] / 60:.1f} + {r['finetune']['seconds'] / 60:.1f}",
                 f"{(r['run_seconds'] if 'run_seconds' in r else r['total_seconds']) / 60:.1f}",
                 tables.fmt(records.accuracy(r, "validation_accuracy"), "acc"), tables.fmt(records.accuracy(r), "acc")])
  chosen = choose({n: data.runs[n] for n in ran})
  not_run = [run.name for run in data.planned if run.name not in data.runs]
  beyond = bool(chosen) and _beyond(data.runs[chosen])
  return tables.md_table(["run", "epochs", "minutes: pretraining + finetuning", "minutes: whole process",
                          "validation accuracy", "test accuracy"], rows), [
      (f"The fastest to reach validation accuracy {GOAL}"
       + (" (beyond the grid: no point of it that ran reached it)" if beyond else "") + f": `{chosen}`, "
       f"{seconds(data.runs[chosen]) / 60:.1f} minutes of pretraining + finetuning, test accuracy "
       f"{records.accuracy(data.runs[chosen]):.4f}.") if chosen else f"No run reached validation accuracy {GOAL}.",
      "pipeline_parallel on 2 devices, mixed_bfloat16, the tuned recipe with its layer warm-up, 4 × 2000 units, all "
      "55,000 images, batch 100; one process alone on the machine each; single runs. The grid runs cheapest first"
      + "".join(f"; not run, {why}: {', '.join(f'`{n}`' for n in names)}" for why, names in _why_not(
          not_run, data.runs).items()) + "."]


def _headline(output_dir: str, data, used: List[dict]) -> str:
  """The fastest run to GOAL: its minutes, epochs and test accuracy (or that none reached it)."""
  mine = data.get("time_to_accuracy")
  runs = mine.runs if mine else {}
  chosen = choose(runs)
  if chosen is None:
    used += list(runs.values())
    return "not run yet" if not runs else f"no run reached {GOAL} ({len(runs)} of the grid ran)"
  r = runs[chosen]
  used.append(r)
  cheaper = [run.name for run in getattr(mine, "planned", ()) if run.name not in runs and _skipped(run.name, runs) is
             None and _epochs(run.name) in GRID]
  return (f"{seconds(r) / 60:.1f} min ({r['config']['pretrain_epochs']} + {r['config']['finetune_epochs']} epochs"
          + (", no point of the grid that ran reached it" if _beyond(r) else "")
          + (f"; {len(cheaper)} cheaper points of the grid not run yet" if cheaper else "") + f"), test accuracy "
          f"{records.accuracy(r):.4f}")


STUDIES = (Study(
    "time_to_accuracy", "The whole tuned job's time to 98.5% validation accuracy on MNIST, full size",
    dict(full=dict(examples=55_000, hidden=CONFIG_1, batch=100, devices=2),
         smoke=dict(examples=400, hidden=(16, 16), batch=40, devices=2, grid=((1, 1),))),
    _runs, table, kind="own", layout="time_to_accuracy/{run}.json", order=21,
    headline=(Headline(8, "Full size, tuned, MNIST: minutes to 98.5% validation accuracy (pipeline, bfloat16)", "—",
                       _headline),)),)
