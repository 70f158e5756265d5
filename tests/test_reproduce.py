"""The run list and the driver: presets, the run plan, skipping, failures, progress lines (with stand-in programs
that write synthetic records), the command lines of every run, and the machine label of records. The benchmarks and
their harness: tests/test_benchmarks.py."""

import dataclasses
import json
import os
import subprocess

import pytest

from common.settings import programs
from experiments import driver
from experiments import presets
from experiments.reproduce import REGISTRY
from experiments import records
from experiments import schedules
from experiments import harness
from experiments import sweep
from experiments.report import draw
from experiments.report import readme
from conftest import ROOT, python

RESULTS = os.path.join(ROOT, "results")
GREEDY, SYNC, MP, DP, PP = (programs.GREEDY, programs.SYNC_LAYERWISE, programs.MODEL_PARALLEL, programs.DATA_PARALLEL,
                            programs.PIPELINE_PARALLEL)


def test_presets_are_consistent_and_paper_matches_the_report():
  for name in presets.PRESETS:
    studies = presets.build(REGISTRY, name)
    study = {"mid": ["large_batch"], "full": ["full_size", "time_to_accuracy"],
             "pretraining": ["pretraining_sweep", "pretraining_ablation", "pretraining_programs",
                             "pretraining_frontier", "fair_frontier"]}.get(name)
    assert list(studies) == (study or [e.name for e in REGISTRY.studies if (e.kind != "study" or name == "smoke")
                                       and name in e.sizes])
    assert study or {e.name for e in REGISTRY.studies if e.kind in ("report", "beyond")} - set(studies) <= {
        REGISTRY.get("fashion_mnist_accuracy").name}
    for study, runs in studies.items():
      assert runs, (name, study)
      for run in runs:
        examples, batch, g = run.config.train_examples, run.config.batch_size, run.config.num_devices
        assert 2 * batch <= examples or name == "smoke", (study, run.name)  # >= 2 steps per epoch
        if run.program == DP.name:
          assert batch % g == 0, (study, run.name)
    homes = [(r.home, r.stored_name) for e, runs in studies.items() for r in runs if r.home == e]
    assert len(homes) == len(set(homes))
  paper = presets.build(REGISTRY, "paper")
  b100 = {r.name: r for r in paper["mp_scaling_b100"]}
  assert sorted(b100) == ["h2_g1", "h2_g2", "h3_g1", "h3_g2", "h3_g3", "h4_g1", "h4_g2", "h4_g3", "h4_g4"]
  assert (b100["h4_g4"].config.pretrain_epochs, b100["h4_g4"].config.batch_size) == (30, 100)
  b5000 = {r.name: r for r in paper["mp_scaling_b5000"]}
  assert (b5000["h3_g3"].config.pretrain_epochs, b5000["h3_g3"].config.batch_size) == (60, 5000)
  assert {r.config.pretrain_epochs for r in paper["dp_scaling"]} == {40}
  assert {r.config.batch_size for r in paper["mp_vs_dp"]} == {7000}
  assert sorted({r.config.pretrain_epochs for r in paper["accuracy_vs_epochs"]}) == [10, 20, 30, 40, 50, 60]
  assert all(r.config.train_examples == 55_000 for e in paper.values() for r in e)
  # Shared runs: convergence draws strategy_comparison's records (their own: they record the held-out loss
  # after every epoch, which the scaling runs do not).
  for preset in ("cpu", "paper"):
    studies = presets.build(REGISTRY, preset)
    conv = {r.name: (r.home, r.stored_name) for r in studies["convergence"]}
    assert list(conv) == [p.run_name for p in presets.COMPARED]
    assert conv[GREEDY.run_name] == ("strategy_comparison", GREEDY.run_name)
    assert conv[MP.run_name] == ("strategy_comparison", MP.run_name)
    assert all(r.config.heldout_every_epoch for r in studies["convergence"])
    dp_acc = {r.name: r.home for r in studies["dp_accuracy"]}
    assert [k for k, home in dp_acc.items() if home == "accuracy_vs_epochs"] == [
        n for n in dp_acc if n.startswith(GREEDY.run_name)]


def test_the_studies_are_presets_whose_committed_records_match_their_runs():
  # The large-batch study and the full-size runs are presets of the run list; their committed records must be found
  # where the presets put them (here or in the earlier records' folder) and match the flags, or reproduce would
  # refuse them. Every MNIST full-size run of the report's recipe has one; a Fashion-MNIST or tuned recipe's run may
  # still be running.
  for preset, study in (("mid", "large_batch"), ("full", "full_size")):
    runs = presets.build(REGISTRY, preset)[study]
    assert runs
    for run in runs:
      record = next(filter(None, (records.load(presets.record_path(folder, preset, run))
                                  for folder in (RESULTS, os.path.join(RESULTS, "earlier")))), None)
      tuned = run.config.recipe == "tuned"
      assert record is not None or preset == "mid" or run.config.dataset != "mnist" or tuned, (preset, run.name)
      assert record is None or records.mismatches(record, run) == [], (preset, run.name)
      assert run.resumable
  full = {r.name: r for r in presets.build(REGISTRY, "full")["full_size"]}
  large = full["dp_b5000_e30_large_batch"].config
  assert all(getattr(large, k) == v for k, v in presets.LARGE_BATCH_CANDIDATES[-1][1].items())
  # Greedy, model parallel and the pipeline in both precisions, the same runs otherwise.
  for name in ("greedy_b100_e30", "model_parallel_g2_b100_e30", "pipeline_parallel_g2_b100_e30"):
    assert full[f"{name}_bf16"].config == dataclasses.replace(full[name].config, **presets.BF16)
  # The two Fashion-MNIST full-size runs: greedy and the pipeline on 2 devices, the MNIST runs' sizes otherwise; with
  # the tuned recipe the same two on each dataset.
  fashion = {n: r for n, r in full.items() if r.config.dataset == presets.FASHION and "_tuned" not in n}
  assert sorted(fashion) == ["fashion_mnist_greedy_b100_e30", "fashion_mnist_pipeline_parallel_g2_b100_e30"]
  tuned = sorted(n for n in full if n.endswith("_tuned"))
  assert tuned == sorted(f"{d}{n[len('fashion_mnist_'):]}_tuned" for d in ("", "fashion_mnist_") for n in fashion)
  for name in tuned:
    report = full[name[:-len("_tuned")]]
    assert all(getattr(full[name].config, k) == getattr(report.config, k) for k in presets.SHARED)
    assert full[name].config.recipe == "tuned" and report.config.recipe == "report"
    assert full[name].config.dataset == report.config.dataset
  # Greedy's Fashion-MNIST seeds 1-2 and the frontier's chosen schedule (its settings named) at full size.
  for seed in (1, 2):
    extra = full[f"fashion_mnist_greedy_b100_e30_tuned_s{seed}"].config
    assert extra == dataclasses.replace(full["fashion_mnist_greedy_b100_e30_tuned"].config, seed=seed)
  chosen_arm, _, settings = schedules.arm(schedules.CHOSEN)
  for d, seeds in (("fashion_mnist_", (0, 1, 2)), ("", (0,))):
    for seed in seeds:
      run = full[f"{d}pipeline_parallel_g2_b100_e30_tuned_{chosen_arm}_s{seed}"].config
      base = full[f"{d}pipeline_parallel_g2_b100_e30_tuned"].config
      assert run == dataclasses.replace(base, seed=seed, **settings)
  for name, run in fashion.items():
    mnist = full[name[len("fashion_mnist_"):]]
    assert run.config == dataclasses.replace(mnist.config, dataset="fashion_mnist")


def test_the_compared_programs_derive_from_the_registry():
  # The baseline and every program on several devices; a new multi-device program joins with no edit in experiments/.
  one_device = {p.name for p in programs.PROGRAMS if p.one_device}
  assert presets.COMPARED == (programs.baseline(),) + tuple(p for p in programs.PROGRAMS if p.name not in one_device)
  assert set(presets.COMPARED) - set(presets.ACCURACY_COMPARED) == {DP}  # data_parallel: its own accuracy study
  runs = presets.build(REGISTRY, "smoke")["strategy_comparison"]
  assert [(r.name, r.program) for r in runs] == [(p.run_name, p.name) for p in presets.COMPARED]
  assert [r.config.num_devices for r in runs] == [1 if r.program in one_device else 2 for r in runs]


def test_select_studies_and_single_runs():
  studies = presets.build(REGISTRY, "cpu")
  chosen = presets.select(studies, ["dp_scaling/g2", "mp_vs_dp"])
  assert list(chosen) == ["dp_scaling", "mp_vs_dp"]
  assert [r.name for r in chosen["dp_scaling"]] == ["g2"]
  assert chosen["mp_vs_dp"] == studies["mp_vs_dp"]  # the whole study: every one of its runs
  with pytest.raises(ValueError, match="unknown study"):
    presets.select(studies, ["nope"])
  with pytest.raises(ValueError, match="has no run"):
    presets.select(studies, ["dp_scaling/g9"])
  with pytest.raises(ValueError, match="unknown preset"):
    presets.build(REGISTRY, "huge")


def _run(jobs, out, modules, lines, parallel=1):
  return driver.run(jobs, "reproduce smoke", os.path.join(out, "runs", "driver_log.jsonl"), parallel, modules,
                    lines.append)


def test_driver_runs_skips_and_draws_everything(tmp_path, fake_modules):
  out = str(tmp_path / "out")
  studies = presets.build(REGISTRY, "smoke")
  jobs = driver.plan(studies, "smoke", out, str(tmp_path / "work"))
  unique = {(r.home, r.stored_name) for e in studies.values() for r in e}
  assert len(jobs) == len(unique)
  lines = []
  assert _run(jobs, out, fake_modules, lines, parallel=2) == len(jobs)
  done = [line for line in lines if " done in " in line]
  assert len(done) == len(jobs) and all("elapsed" in line for line in done)
  assert any(line.startswith("[reproduce smoke] ") and " run 1/" in line for line in lines)
  for job in jobs:
    assert os.path.exists(job.record)
    pictures = " --pictures " if job.spec.config.pictures else " --nopictures "  # only the runs that draw them
    assert "fake run" in open(job.log).read() and pictures in open(job.log).readline()
  with open(os.path.join(out, "runs", "driver_log.jsonl")) as f:
    log = [json.loads(line) for line in f if line.strip()]
  assert len(log) == len(jobs) and {line["parallel_jobs"] for line in log} == {2}
  # A rerun skips every existing record.
  lines = []
  assert _run(jobs, out, fake_modules, lines) == 0
  assert f"{len(jobs)} of {len(jobs)} records exist; running 0" in lines[0]
  # Figures and README from the records alone.
  assert len(draw.draw(out, REGISTRY, out=lambda _: None)) == len([e for e in REGISTRY.studies if e.figure])
  text = open(readme.write(out, REGISTRY)).read()
  assert "preset smoke" in text


def test_driver_stops_on_a_failing_program_and_keeps_finished_records(tmp_path, fake_modules, monkeypatch):
  out = str(tmp_path / "out")
  studies = presets.select(presets.build(REGISTRY, "smoke"), ["dp_scaling"])
  jobs = driver.plan(studies, "smoke", out, str(tmp_path / "work"))
  monkeypatch.setenv("FAKE_TRAIN_FAIL", "smoke_g2")
  lines = []
  with pytest.raises(driver.RunFailedError) as failure:
    _run(jobs, out, fake_modules, lines)
  message = str(failure.value)
  assert "dp_scaling/g2 failed (exit status 1)" in message
  assert "--run_name=smoke_g2" in message and "fake failure of smoke_g2" in message
  assert os.path.exists(jobs[0].record) and not os.path.exists(jobs[1].record)
  # Fixed, the rerun does only the missing run.
  monkeypatch.delenv("FAKE_TRAIN_FAIL")
  assert _run(jobs, out, fake_modules, []) == 1


def test_a_run_allowed_to_fail_gets_its_failure_record_and_the_driver_goes_on(tmp_path, fake_modules, monkeypatch):
  out = str(tmp_path / "out")
  studies = presets.select(presets.build(REGISTRY, "smoke"), ["dp_scaling"])
  jobs = driver.plan(studies, "smoke", out, str(tmp_path / "work"))
  jobs = [dataclasses.replace(jobs[0], spec=dataclasses.replace(jobs[0].spec, may_fail=True)), *jobs[1:]]
  monkeypatch.setenv("FAKE_TRAIN_FAIL", jobs[0].run_name)
  lines = []
  assert _run(jobs, out, fake_modules, lines) == len(jobs)
  record = json.load(open(jobs[0].record))
  assert record["failed"] == f"fake failure of {jobs[0].run_name}" and record["exit_status"] == 1
  assert any(f"{jobs[0].run_name}: failed: fake failure" in line for line in lines)
  assert all(os.path.exists(j.record) for j in jobs)


def test_driver_refuses_a_record_made_with_other_flags(tmp_path, fake_modules):
  out = str(tmp_path / "out")
  jobs = driver.plan(presets.select(presets.build(REGISTRY, "smoke"), ["dp_scaling/g1"]), "smoke", out, str(tmp_path))
  _run(jobs, out, fake_modules, [])
  record = json.load(open(jobs[0].record))
  record["config"]["batch_size"] = 7
  json.dump(record, open(jobs[0].record, "w"))
  with pytest.raises(driver.RunFailedError, match=r"batch_size=7 \(run: 200\).*Delete it"):
    _run(jobs, out, fake_modules, [])


def test_a_later_round_is_built_from_the_records_of_the_round_before(tmp_path, fake_modules):
  """The pretraining sweep declares its confirm round (`Study.later`): none of its runs exist until every coarse run
  has a record; then the next pass (`experiments.reproduce` makes `REGISTRY.rounds` of them) plans the confirm runs
  chosen from those records, and the ablation's runs shared with them, and only those."""
  from tests.fixtures import make_records
  out = str(tmp_path / "out")
  assert REGISTRY.rounds == 1 + max(len(study.later) for study in REGISTRY.studies)

  def sweep_round(name):
    built = presets.build(REGISTRY, "smoke", records.table(out, REGISTRY.layouts))
    return built, [r.name for r in built[name]]
  built, names = sweep_round("pretraining_sweep")
  assert names == ["coarse_mnist_p0.03_c0.1_f0.3_s0", "coarse_mnist_none_f0.3_s0", "coarse_mnist_report_s0"]
  for run in built["pretraining_sweep"][:-1]:  # every coarse record but one: still no confirm round
    os.makedirs(os.path.dirname(presets.record_path(out, "smoke", run)), exist_ok=True)
    json.dump(make_records.make(run, "smoke"), open(presets.record_path(out, "smoke", run), "w"))
  assert sweep_round("pretraining_sweep")[1] == names
  jobs = driver.plan(presets.select(built, ["pretraining_sweep"]), "smoke", out, str(tmp_path / "work"))
  assert _run(jobs, out, fake_modules, []) == 1  # the first pass: the missing coarse run
  built, after = sweep_round("pretraining_sweep")
  confirm = ["confirm_mnist_p0.03_c0.1_f0.3_s0", "confirm_mnist_p0.03_c0.1_f0.3_constant_s0",
             "confirm_mnist_p0.03_c0.1_f0.3_last_s0", "confirm_mnist_none_f0.3_s0", "confirm_mnist_report_s0"]
  assert after == names + confirm
  ablation = {r.name: (r.home, r.stored_name) for r in built["pretraining_ablation"]}
  assert ablation["mnist_none_own_s0"] == ("pretraining_sweep", "confirm_mnist_none_f0.3_s0")
  jobs = driver.plan(presets.select(built, ["pretraining_sweep", "pretraining_ablation"]), "smoke", out,
                     str(tmp_path / "work"))
  lines = []
  assert _run(jobs, out, fake_modules, lines) == len(confirm) + 3  # the second pass: confirm, and the ablation's own
  assert f"{len(names)} of {len(jobs)} records exist" in lines[0]


def test_command_line_errors():
  env = dict(os.environ, PYTHONPATH=ROOT)
  def run(*args):
    return subprocess.run([python(), "-m", "experiments.reproduce", *args], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=600)
  bad = run("--preset=cpu", "--jobs=2")
  assert bad.returncode == 1 and "only with --preset=smoke" in bad.stderr
  bad = run("--preset=cpu", "--only=nope")
  assert bad.returncode == 1 and "unknown study 'nope'" in bad.stderr
  bad = run("--figures_only", "--output_dir=/no/such/dir")
  assert bad.returncode == 1 and "Traceback" not in bad.stderr, bad.stderr[-2000:]
  assert bad.stderr.strip().splitlines()[-1] == ("error: --output_dir=/no/such/dir: no such directory; "
                                                 "--figures_only draws from the records there.")
  dry = run("--preset=cpu", "--dry_run", "--only=dp_scaling")
  assert dry.returncode == 0 and "dp_scaling: 4 runs, 4 recorded, 0 to run" in dry.stdout
  assert "results/runs/dp_scaling/cpu_g2.json (recorded: " in dry.stdout and " s on AMD EPYC" in dry.stdout
  dry = run("--preset=full", "--dry_run")
  assert dry.returncode == 0 and f"full_size: {len(presets.build(REGISTRY, 'full')['full_size'])} runs" in dry.stdout
  assert "results/full_size/greedy_b100_e30.json" in dry.stdout and "full_size/fashion_mnist_greedy_b100_e30" in dry.stdout


def test_every_run_of_every_preset_and_benchmark_is_a_command_line_its_program_accepts(tmp_path):
  """Every run `experiments.reproduce` can launch (every preset's studies) and every benchmark's configurations at
  its defaults are parsed by their program's own flags and build its `Config` (every per-setting and cross-setting
  check) without training, the one the run declared: a study or benchmark whose runs a program would refuse, or whose
  derived command line would train something else, fails here, in seconds, not hours into a run."""
  from common.settings import flags as settings_flags
  checked = set()
  jobs = [(p, j) for p in presets.PRESETS for j in driver.plan(presets.build(REGISTRY, p), p, str(tmp_path), "w")]
  jobs += [(b.name, j) for b in REGISTRY.benchmarks for j in harness.plan(b, harness.setting(b, {}), str(tmp_path), "w")]
  for where, j in jobs:
    cmd = driver.command(j)
    program = programs.get(j.spec.program)
    arguments = tuple(cmd[cmd.index(program.module) + 1:])
    if (program.name, arguments) in checked:
      continue
    checked.add((program.name, arguments))
    try:
      parsed = program.make_config(**settings_flags.values_from_arguments(program.config, arguments))
    except ValueError as e:
      pytest.fail(f"{where}: {j.spec.name}: {e}")
    # The command line derived from the run's Config gives its program that Config's training settings.
    assert parsed.training_fingerprint() == j.spec.config.training_fingerprint(), (where, j.spec.name)
  assert len({p for p, _ in checked}) == len(programs.PROGRAMS) and len(checked) > 300


def test_machine_label_names_one_code_once_by_the_commit_its_runs_started_from():
  def record(commit, digest, when, cpu="AMD EPYC"):
    return {"environment": {"cpu_model": cpu, "usable_cores": 2, "commit": commit * 40, "code_digest": digest,
                            **({"date_utc": f"2026-11-2{when}T10:00:00+00:00"} if when else {})}}
  # Named by the earliest run, not by the smallest hash: b ran first.
  rs = [record("b", "x", 1), record("a", "x", 3), record("c", "y", 2), record("d", "x", 1, cpu="Xeon")]
  assert records.machine_label(rs) == (
      "AMD EPYC, instruction set not recorded, 2 cores, commit bbbbbbb (+1 of the same code), commit ccccccc; "
      "Xeon, instruction set not recorded, 2 cores, commit ddddddd")
  assert records.machine_label([record("a", "x", None), record("b", "x", 5)]).endswith("commit bbbbbbb (+1 of the "
                                                                                      "same code)")  # undated: last


def test_spread_text_writes_mean_min_and_max_and_no_negative_zero():
  assert sweep.spread_text([]) == "—" and sweep.spread_text([0.5]) == "0.5000"
  assert sweep.spread_text([0.02, -0.03], 2) == "0.00 (-0.03–0.02)"  # mean -0.005 rounds to zero: no sign
  assert sweep.spread_text([-0.004], 2) == "0.00" and sweep.spread_text([-0.006], 2) == "-0.01"
