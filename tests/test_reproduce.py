"""The reproduce driver: presets, the run plan, skipping, failures, progress lines (with stand-in programs
that write synthetic records), and the smoke preset end to end with the real programs."""

import importlib.util
import json
import os
import subprocess
import sys

import pytest

from experiments import budget
from experiments import driver
from experiments import figures
from experiments import presets
from experiments import records
from experiments import results_readme

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def test_presets_are_consistent_and_paper_matches_the_report():
  for name in presets.PRESETS:
    entries = presets.build(name)
    assert list(entries) == list(presets.ENTRIES)
    for entry in entries.values():
      assert entry.runs, (name, entry.name)
      for run in entry.runs:
        examples, batch, g = run.flag("train_examples"), run.flag("batch_size"), run.flag("num_devices")
        assert 2 * batch <= examples or name == "smoke", (entry.name, run.name)  # >= 2 steps per epoch
        if run.program == "data_parallel":
          assert batch % g == 0, (entry.name, run.name)
    homes = [(r.home, r.stored_name) for e in entries.values() for r in e.runs if r.home == e.name]
    assert len(homes) == len(set(homes))
  paper = presets.build("paper")
  b100 = {r.name: r for r in paper["mp_scaling_b100"].runs}
  assert sorted(b100) == ["h2_g1", "h2_g2", "h3_g1", "h3_g2", "h3_g3", "h4_g1", "h4_g2", "h4_g3", "h4_g4"]
  assert (b100["h4_g4"].flag("pretrain_epochs"), b100["h4_g4"].flag("batch_size")) == (30, 100)
  b5000 = {r.name: r for r in paper["mp_scaling_b5000"].runs}
  assert (b5000["h3_g3"].flag("pretrain_epochs"), b5000["h3_g3"].flag("batch_size")) == (60, 5000)
  assert {r.flag("pretrain_epochs") for r in paper["dp_scaling"].runs} == {40}
  assert {r.flag("batch_size") for r in paper["mp_vs_dp"].runs} == {7000}
  assert sorted({r.flag("pretrain_epochs") for r in paper["accuracy_vs_epochs"].runs}) == [10, 20, 30, 40, 50, 60]
  assert all(r.flag("train_examples") == 55_000 for e in paper.values() for r in e.runs)
  # Shared runs: convergence draws strategy_comparison's records; its model-parallel run is mp_scaling_b5000's.
  for preset in ("cpu", "paper"):
    entries = presets.build(preset)
    conv = {r.name: (r.home, r.stored_name) for r in entries["convergence"].runs}
    assert conv["greedy"] == ("strategy_comparison", "greedy")
    g = {"cpu": 2, "paper": 4}[preset]  # the cpu preset compares strategies on the 2 cores there are
    assert conv["mp"] == ("mp_scaling_b5000", f"h4_g{g}")
    dp_acc = {r.name: r.home for r in entries["dp_accuracy"].runs}
    assert [k for k, home in dp_acc.items() if home == "accuracy_vs_epochs"] == [
        n for n in dp_acc if n.startswith("greedy")]


def test_cpu_preset_budget_is_about_an_hour():
  total = sum(budget.entry_seconds(presets.build("cpu"), 2).values())
  assert 40 * 60 < total < 75 * 60
  assert sum(budget.entry_seconds(presets.build("smoke"), 2).values()) < 8 * 60


def test_select_entries_and_single_runs():
  entries = presets.build("cpu")
  chosen = presets.select(entries, ["dp_scaling/g2", "mp_vs_dp"])
  assert list(chosen) == ["dp_scaling", "mp_vs_dp"]
  assert [r.name for r in chosen["dp_scaling"].runs] == ["g2"]
  assert len(chosen["mp_vs_dp"].runs) == 8
  with pytest.raises(ValueError, match="unknown entry"):
    presets.select(entries, ["nope"])
  with pytest.raises(ValueError, match="has no run"):
    presets.select(entries, ["dp_scaling/g9"])


@pytest.fixture
def fake_modules(tmp_path, monkeypatch):
  """{program: module} stand-ins that call tests.fixtures.fake_train.main(program)."""
  stubs = tmp_path / "stubs"
  stubs.mkdir()
  modules = {}
  for program in ("greedy", "model_parallel", "data_parallel"):
    (stubs / f"fake_{program}.py").write_text(
        f"from tests.fixtures import fake_train\nfake_train.main({program!r})\n")
    modules[program] = f"fake_{program}"
  monkeypatch.setenv("PYTHONPATH", str(stubs))
  return modules


def _driver(output_dir, modules, lines, preset="smoke", jobs=1):
  return driver.Driver(preset, output_dir, jobs=jobs, modules=modules, out=lines.append)


def test_driver_runs_skips_and_draws_everything(tmp_path, fake_modules):
  out = str(tmp_path / "out")
  entries = presets.build("smoke")
  jobs = driver.plan(entries, "smoke", out, str(tmp_path / "work"), 2)
  unique = {(r.home, r.stored_name) for e in entries.values() for r in e.runs}
  assert len(jobs) == len(unique)
  lines = []
  assert _driver(out, fake_modules, lines, jobs=2).run(jobs) == len(jobs)
  done = [line for line in lines if " done in " in line]
  assert len(done) == len(jobs) and all("ETA" in line and "elapsed" in line for line in done)
  assert any(line.startswith("[reproduce smoke] ") and " run 1/" in line for line in lines)
  for job in jobs:
    assert os.path.exists(job.record)
    assert "fake run" in open(job.log).read()
  log = records.driver_log(out)
  assert len(log) == len(jobs) and {line["parallel_jobs"] for line in log} == {2}
  # A rerun skips every existing record.
  lines = []
  assert _driver(out, fake_modules, lines).run(jobs) == 0
  assert f"{len(jobs)} of {len(jobs)} records exist; running 0" in lines[0]
  # Figures and README from the records alone.
  assert len(figures.draw(out, presets.ENTRIES, out=lambda _: None)) == 10
  text = open(results_readme.write(out)).read()
  assert "preset smoke" in text


def test_driver_stops_on_a_failing_program_and_keeps_finished_records(tmp_path, fake_modules, monkeypatch):
  out = str(tmp_path / "out")
  entries = presets.select(presets.build("smoke"), ["dp_scaling"])
  jobs = driver.plan(entries, "smoke", out, str(tmp_path / "work"), 2)
  monkeypatch.setenv("FAKE_TRAIN_FAIL", "smoke_g2")
  lines = []
  with pytest.raises(driver.RunFailedError) as failure:
    _driver(out, fake_modules, lines).run(jobs)
  message = str(failure.value)
  assert "dp_scaling/g2 failed (exit status 1)" in message
  assert "--run_name=smoke_g2" in message and "fake failure of smoke_g2" in message
  assert os.path.exists(jobs[0].record) and not os.path.exists(jobs[1].record)
  # Fixed, the rerun does only the missing run.
  monkeypatch.delenv("FAKE_TRAIN_FAIL")
  assert _driver(out, fake_modules, []).run(jobs) == 1


def test_driver_refuses_a_record_made_with_other_flags(tmp_path, fake_modules):
  out = str(tmp_path / "out")
  jobs = driver.plan(presets.select(presets.build("smoke"), ["dp_scaling/g1"]), "smoke", out, str(tmp_path), 2)
  _driver(out, fake_modules, []).run(jobs)
  record = json.load(open(jobs[0].record))
  record["config"]["batch_size"] = 7
  json.dump(record, open(jobs[0].record, "w"))
  with pytest.raises(driver.RunFailedError, match="batch_size=7 .preset: 200.*Delete it"):
    _driver(out, fake_modules, []).run(jobs)


def test_command_line_errors():
  env = dict(os.environ, PYTHONPATH=ROOT)
  def run(*args):
    return subprocess.run([sys.executable, "-m", "experiments.reproduce", *args], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=120)
  bad = run("--preset=cpu", "--jobs=2")
  assert bad.returncode == 1 and "only with --preset=smoke" in bad.stderr
  bad = run("--preset=cpu", "--only=nope")
  assert bad.returncode == 1 and "unknown entry 'nope'" in bad.stderr
  dry = run("--preset=cpu", "--dry_run", "--only=dp_scaling")
  assert dry.returncode == 0 and "dp_scaling: 4 runs, estimated" in dry.stdout


def _programs_present():
  return all(importlib.util.find_spec(p) is not None for p in ("greedy", "model_parallel", "data_parallel"))


@pytest.mark.skipif(not _programs_present(), reason="model_parallel and data_parallel are not there yet")
def test_smoke_preset_end_to_end_with_the_real_programs(tmp_path):
  out = tmp_path / "out"
  env = dict(os.environ, PYTHONPATH=ROOT)
  done = subprocess.run([sys.executable, "-m", "experiments.reproduce", "--preset=smoke", f"--output_dir={out}",
                         f"--work_dir={tmp_path / 'work'}", "--jobs=2"], cwd=ROOT, env=env, capture_output=True,
                        text=True, timeout=900)
  assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
  assert sorted(os.listdir(out / "figures")) == sorted(f"{e}.png" for e in presets.ENTRIES)
  for entry in presets.build("smoke").values():
    for run in entry.runs:
      record = records.load(records.record_path(str(out), "smoke", run))
      assert record is not None and records.mismatches(record, run) == [], (entry.name, run.name)
  text = (out / "README.md").read_text()
  assert text.count("preset smoke") >= 10
