"""The measurement campaign (`experiments.campaign`): its steps derive from the registry's benchmarks and the presets, a
benchmark setting's command line gives the harness the setting it declares, --replace deletes exactly a step's
records, --only and --dry_run; no training (stand-in commands, fake record files in temporary directories)."""

import dataclasses
import json
import os
import subprocess
import sys

import pytest

from experiments import campaign
from experiments import driver
from experiments import presets
from experiments.benchmarks import harness
from experiments.benchmarks import kernels as bench_kernels
from conftest import ROOT, python

UNFITTED = {driver.POOLED: driver.FALLBACK}
# harness.main of each (benchmark name, flags) of the JSON list argv[1], its `run` replaced: prints the Setting it
# builds and the command its summary would record, as a JSON line, and runs nothing.
MAIN = """
import json, sys
from absl import flags
from experiments import presets
from experiments.benchmarks import harness
harness.run = lambda benchmark, setting, output_dir, work_dir, command, **_: print(json.dumps([repr(setting),
                                                                                                 command])) or ("", {})
for name, argv in json.loads(sys.argv[1]):
  before, sys.argv = set(flags.FLAGS), [name, *argv]
  harness.app.run = lambda main: main(flags.FLAGS(sys.argv))
  harness.main(next(b for b in presets.BENCHMARKS if b.name == name))
  for defined in set(flags.FLAGS) - before:
    delattr(flags.FLAGS, defined)
"""


def _campaign(*flags):
  return subprocess.run([python(), "-m", "experiments.campaign", *flags], cwd=ROOT, capture_output=True,
                        text=True, timeout=120, env=dict(os.environ, PYTHONPATH=ROOT))


def test_the_steps_derive_from_the_registry_and_the_presets(tmp_path, monkeypatch):
  steps = campaign.steps(str(tmp_path))
  names = [s.name for s in steps]
  assert len(names) == len(set(names))
  assert names[-5:] == ["preset/cpu", "preset/mid", "end_to_end", "preset/full", "report"]
  # Every benchmark, each of its campaign settings once, in the registry's order.
  assert [s.group for s in steps[:-5]] == [b.name for b in presets.BENCHMARKS for _ in b.campaign]
  for b in presets.BENCHMARKS:
    mine = [s for s in steps if s.group == b.name]
    assert [s.name for s in mine] == [f"{b.name}/{b.folder(harness.setting(b, o))}" for o in b.campaign]
    assert [s.command for s in mine] == [tuple(harness.command(b, o)) + (
        f"--output_dir={tmp_path / 'benchmarks' / b.name}",) for o in b.campaign]
  assert "kernels/b100_mixed_bfloat16" in names and "equal_cores/n%d_b5000" % (os.cpu_count() or 1) in names
  assert steps[-5].command == ("python", "-m", "experiments.reproduce", "--preset=cpu", f"--output_dir={tmp_path}")
  # The whole job at full size: the fastest program in the fastest precision the processor has, one run of the full
  # preset, whose step leaves that run's record to it.
  for bfloat16, run in ((True, "pipeline_parallel_g2_b100_e30_bf16"), (False, "pipeline_parallel_g2_b100_e30")):
    by_name = {s.name: s for s in campaign.steps(str(tmp_path), bfloat16)}
    e2e, full = by_name["end_to_end"], by_name["preset/full"]
    assert e2e.command[3:5] == ("--preset=full", f"--only=full_size/{run}")
    assert [os.path.basename(p) for p in e2e.owned] == [f"{run}.json"]
    assert set(e2e.owned).isdisjoint(full.owned) and len(full.owned) == len(full.plan(UNFITTED)) - 1
    assert [j.spec.config.finetune_epochs for j in e2e.plan(UNFITTED)] == [30]
  assert steps[-1].command == ("python", "-m", "experiments.reproduce", "--figures_only", f"--output_dir={tmp_path}")
  # In the committed results (the default), the commands are the ones a user types.
  default = {s.name: s.command for s in campaign.steps(os.path.join(ROOT, "results"))}
  assert " ".join(default["kernels/b5000"]) == "python -m experiments.benchmarks.kernels --batch_size=5000 " \
                                                "--train_examples=55000"
  assert default["preset/mid"][-1] == "--output_dir=results"
  # A benchmark joins the campaign through the registry alone; two settings writing one folder are refused.
  extra = dataclasses.replace(bench_kernels.BENCHMARK, name="extra", campaign=({"batch_size": 7},))
  monkeypatch.setattr(presets, "BENCHMARKS", presets.BENCHMARKS + (extra,))
  assert [s.name for s in campaign.steps(str(tmp_path))][-6] == "extra/b7"
  monkeypatch.setattr(presets, "BENCHMARKS", (dataclasses.replace(extra, campaign=({}, {"repeats": 5})),))
  with pytest.raises(ValueError, match="named twice .*: extra/b100"):
    campaign.steps(str(tmp_path))


def test_setting_gives_mains_defaults_and_each_command_line_gives_its_setting():
  """harness.main, given a step's flags, builds the Setting `harness.setting` gives for the step's overrides and
  records the step's command; with no flags, the defaults."""
  steps = {s.name: s for s in campaign.steps(os.path.join(ROOT, "results"))}
  cases = [(b, {}, ["python", "-m", f"experiments.benchmarks.{b.name}"]) for b in presets.BENCHMARKS] + [
      (b, o, list(steps[f"{b.name}/{b.folder(harness.setting(b, o))}"].command))
      for b in presets.BENCHMARKS for o in b.campaign]

  done = subprocess.run([python(), "-c", MAIN, json.dumps([(b.name, c[3:]) for b, _, c in cases])], cwd=ROOT,
                        capture_output=True, text=True, timeout=120, env=dict(os.environ, PYTHONPATH=ROOT))
  assert done.returncode == 0, done.stderr[-3000:]
  found = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("[")]
  assert found == [[repr(harness.setting(b, overrides)), " ".join(command)] for b, overrides, command in cases]
  assert all(f"--{name}=" in " ".join(command) for _, overrides, command in cases for name in overrides)
  s = harness.setting(bench_kernels.BENCHMARK, {})
  assert (s.batch_size, s.repeats, s.options) == (100, 3, {"precision": "float32"})
  assert harness.setting(bench_kernels.BENCHMARK, {"hidden_units": "8,4", "batch_size": "10"}).hidden_units == (8, 4)
  with pytest.raises(ValueError, match="benchmark kernels has no flag nope; its flags: hidden_units"):
    harness.setting(bench_kernels.BENCHMARK, {"nope": 1})
  with pytest.raises(ValueError, match="has no flag nope"):
    harness.command(bench_kernels.BENCHMARK, {"nope": 1})


def _touch(path):
  os.makedirs(os.path.dirname(path), exist_ok=True)
  with open(path, "w") as f:
    f.write("{}")


def test_replace_deletes_exactly_a_steps_records_and_summary(tmp_path, monkeypatch):
  with open(os.path.join(ROOT, "experiments", "reproduce.py")) as f:  # the presets' checkpoints are where reproduce
    assert f'"work_dir", "{campaign.REPRODUCE_WORK_DIR}"' in f.read()  # puts them by default
  monkeypatch.setattr(harness, "WORK_DIR", str(tmp_path / "bench_work"))
  monkeypatch.setattr(campaign, "REPRODUCE_WORK_DIR", str(tmp_path / "work"))
  out = tmp_path / "out"
  steps = {s.name: s for s in campaign.steps(str(out))}
  chosen = [steps[n] for n in ("kernels/b100", "kernels/b1000", "preset/cpu", "preset/mid")]
  files = {s.name: [j.record for j in s.plan(UNFITTED)] + [p for p in s.owned if p.endswith(".json")] for s in chosen}
  others = [str(out / "runs" / "driver_log.jsonl"), str(out / "benchmarks" / "kernels" / "summary_b5000.json"),
            str(tmp_path / "beside.json")]
  for path in sum(files.values(), others):
    _touch(path)
  lines = []
  for name in ("kernels/b100", "preset/mid"):
    deleted = campaign.replace(steps[name], str(out), lines.append)
    assert sorted(deleted) == sorted(p for p in steps[name].owned if os.path.exists(os.path.dirname(p)))
    assert not any(os.path.exists(p) for p in files[name]), name
  assert all(os.path.exists(p) for p in files["kernels/b1000"] + files["preset/cpu"] + others)
  assert os.path.isdir(out / "benchmarks" / "kernels") and len(lines) == 2 + 4
  assert all(line.startswith("[campaign] --replace: deleted ") for line in lines)
  # Checkpoints a resumable run left would be resumed instead of measured again: refused, nothing deleted.
  job = next(j for j in steps["preset/cpu"].plan(UNFITTED) if j.model_dir)
  _touch(os.path.join(job.model_dir, "checkpoint"))
  with pytest.raises(ValueError, match="preset/cpu: checkpoints of earlier runs would be resumed"):
    campaign.replace(steps["preset/cpu"], str(out))
  assert all(os.path.exists(p) for p in files["preset/cpu"])
  with pytest.raises(ValueError, match="deletes nothing outside --output_dir"):
    campaign.replace(campaign.Step("x", (), lambda rates: [], (str(tmp_path / "beside.json"),)), str(out))
  assert os.path.exists(tmp_path / "beside.json")


def test_only_selects_steps_and_an_unknown_name_is_refused():
  steps = campaign.steps(os.path.join(ROOT, "results"))
  assert [s.name for s in campaign.select(steps, ["report", "kernels/b100"])] == ["kernels/b100", "report"]
  assert [s.name for s in campaign.select(steps, ["preset"])] == ["preset/cpu", "preset/mid", "preset/full"]
  assert len(campaign.select(steps, ["kernels"])) == len(bench_kernels.BENCHMARK.campaign)
  assert campaign.select(steps, []) == steps
  with pytest.raises(ValueError, match="unknown campaign step 'nope'"):
    campaign.select(steps, ["kernels", "nope"])
  bad = _campaign("--only=nope", "--dry_run")
  assert bad.returncode != 0 and bad.stdout == ""
  assert len(bad.stderr.strip().splitlines()) == 1 and bad.stderr.startswith("error: unknown campaign step 'nope'")


def test_without_native_bfloat16_bfloat16_benchmarks_are_skipped_and_presets_keep_their_bfloat16_records(tmp_path):
  every = campaign.steps(str(tmp_path))
  assert campaign.runnable(every, True, lambda _: None) == every
  lines = []
  kept = campaign.runnable(every, False, lines.append)
  by_name = {s.name: s for s in kept}
  assert "precision/b100" not in by_name and "kernels/b100_mixed_bfloat16" not in by_name
  assert "kernels/b100" in by_name and "report" in by_name
  assert any(line.startswith("[campaign] skipping precision/b100: ") for line in lines)
  cpu, before = by_name["preset/cpu"], next(s for s in every if s.name == "preset/cpu")
  bf16 = {j.record for j in before.plan(UNFITTED) if driver.computes_in_bfloat16(j.spec)}
  assert bf16 and bf16 <= set(before.owned) and not bf16 & set(cpu.owned)
  assert set(cpu.owned) == set(before.owned) - bf16
  assert all(not s.bfloat16 or s.group == "preset" for s in kept)


def test_without_native_bfloat16_a_preset_leaves_out_its_bfloat16_runs_that_have_no_record(tmp_path, monkeypatch):
  jobs = driver.plan(presets.select(presets.build("cpu"), ["precision_accuracy"]), "cpu", str(tmp_path),
                     str(tmp_path / "work"), UNFITTED)
  bf16 = [j for j in jobs if driver.computes_in_bfloat16(j.spec)]
  assert bf16 and len(bf16) < len(jobs)
  monkeypatch.setattr(driver, "native_bfloat16", lambda: True)
  assert driver.runnable_here(jobs, lambda _: None) == jobs
  monkeypatch.setattr(driver, "native_bfloat16", lambda: False)
  os.makedirs(os.path.dirname(bf16[0].record))
  with open(bf16[0].record, "w") as f:
    json.dump({"environment": {}}, f)  # one has a record: kept (the driver skips it), the others are left out
  lines = []
  assert driver.runnable_here(jobs, lines.append) == [j for j in jobs if j not in bf16[1:]]
  assert len(lines) == 1 and all(j.run_name in lines[0] for j in bf16[1:]) and "no native bfloat16" in lines[0]


def test_dry_run_prints_every_step_and_runs_nothing(tmp_path):
  out = tmp_path / "out"
  dry = _campaign("--dry_run", f"--output_dir={out}")
  assert dry.returncode == 0, dry.stderr[-2000:]
  every = campaign.steps(str(out), driver.native_bfloat16())
  steps = campaign.runnable(every, driver.native_bfloat16(), lambda _: None)
  for s in steps:
    assert f"{s.name}: " in dry.stdout and f"  {' '.join(s.command)}\n" in dry.stdout, s.name
  for s in every:
    if s not in steps and s.group != "preset":
      assert f"skipping {s.name}: it computes in bfloat16" in dry.stdout, s.name
  assert f"total: {len(steps)} steps, " in dry.stdout and " estimated " in dry.stdout
  assert not out.exists()
  # Recorded runs are counted apart; with --replace they run again.
  step = next(s for s in every if s.name == "kernels/b100")
  _touch(step.plan(UNFITTED)[0].record)
  n = len(step.plan(UNFITTED))  # 2 kernel paths x 3 repeats of every program that runs both
  assert n == 6 * len(bench_kernels.PROGRAMS)
  for replacing, counts in ((False, f"(1 recorded, {n - 1} to run)"), (True, f"(0 recorded, {n} to run)")):
    lines = []
    campaign.dry_run([step], str(out), replacing, lines.append)
    assert lines[0].startswith(f"kernels/b100: {n} runs {counts}, estimated "), lines[0]


def test_run_streams_each_step_in_order_and_stops_at_the_first_failure(tmp_path, capfd):
  def step(name, code, owned=()):
    return campaign.Step(name, ("python", "-c", f"import sys; print('ran {name}'); sys.exit({code})"),
                         lambda rates: [], owned)
  (tmp_path / "old.json").write_text("{}")
  lines = []
  with pytest.raises(campaign.StepFailedError, match="campaign step two failed .exit status 3."):
    campaign.run([step("one", 0, (str(tmp_path / "old.json"),)), step("two", 3), step("three", 0)], str(tmp_path),
                 True, lines.append)
  assert capfd.readouterr().out.splitlines() == ["ran one", "ran two"]
  assert lines[0] == f"[campaign] --replace: deleted {tmp_path / 'old.json'}" and not (tmp_path / "old.json").exists()
  assert lines[1:] == ["[campaign] step 1/3 one: python -c import sys; print('ran one'); sys.exit(0)",
                       "[campaign] step 2/3 two: python -c import sys; print('ran two'); sys.exit(3)"]


def test_a_benchmark_step_whose_new_summary_flags_noise_is_measured_once_more(tmp_path):
  """The step's command writes a summary whose repeats are 20% apart: its records and scratch are deleted and it runs
  once more, not twice more; a quiet summary, or one the step did not rewrite (nothing ran), runs once."""
  def step(name, spread, write=True):
    folder, summary, scratch = tmp_path / name, tmp_path / f"summary_{name}.json", tmp_path / "scratch" / name
    folder.mkdir()
    scratch.mkdir(parents=True)
    content = json.dumps({"pretrain_seconds": {"one_side": {"min": 1.0, "median": 1.0, "max": spread}}})
    code = (f"import pathlib; runs = pathlib.Path({str(tmp_path / name)!r} + '.runs'); runs.write_text("
            "(runs.read_text() if runs.exists() else '') + 'x')" + (
                f"; pathlib.Path({str(summary)!r}).write_text({content!r})" if write else ""))
    if not write:
      summary.write_text(content)
    return campaign.Step(name, ("python", "-c", code), lambda rates: [], (str(folder), str(summary)), str(summary),
                         (str(scratch),))
  lines = []
  campaign.run([step("noisy", 1.2), step("quiet", 1.1), step("old", 1.2, write=False)], str(tmp_path),
               out=lines.append)
  assert [(tmp_path / f"{n}.runs").read_text() for n in ("noisy", "quiet", "old")] == ["xx", "x", "x"]
  assert not (tmp_path / "noisy").exists() and not (tmp_path / "scratch" / "noisy").exists()
  assert (tmp_path / "quiet").exists() and (tmp_path / "scratch" / "old").exists()
  assert lines[1] == (f"[campaign] noisy: repeats of one_side more than 15% apart, measuring it once more: deleted "
                      f"{tmp_path / 'noisy'}") and lines[4].startswith("[campaign] step 1/3 noisy again: python -c ")
