"""The run list and the driver: presets, the run plan, skipping, failures, progress lines, the benchmark
harness (with stand-in programs that write synthetic records), and the smoke preset end to end with the real
programs."""

import importlib
import json
import os
import subprocess
import sys

import pytest

from common import programs
from experiments import budget
from experiments import driver
from experiments import presets
from experiments import records
from experiments.benchmarks import data_parallel as bench_data_parallel
from experiments.benchmarks import harness
from experiments.benchmarks import model_parallel as bench_model_parallel
from experiments.benchmarks import devices_beyond_cores as bench_beyond_cores
from experiments.benchmarks import equal_cores as bench_equal_cores
from experiments.benchmarks import kernels as bench_kernels
from experiments.benchmarks import pipeline_parallel as bench_pipeline_parallel
from experiments.report import figures
from experiments.report import readme
from conftest import ROOT

RESULTS = os.path.join(ROOT, "results")


def test_presets_are_consistent_and_paper_matches_the_report():
  for name in presets.PRESETS:
    entries = presets.build(name)
    assert list(entries) == {"mid": ["large_batch"], "full": ["full_size"]}.get(name, list(presets.REPORT_ENTRIES + presets.BEYOND))
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
  # Shared runs: convergence draws strategy_comparison's records (their own: they record the held-out loss
  # after every epoch, which the scaling runs do not).
  for preset in ("cpu", "paper"):
    entries = presets.build(preset)
    conv = {r.name: (r.home, r.stored_name) for r in entries["convergence"].runs}
    assert list(conv) == [name for name, _ in presets.COMPARED]
    assert conv["greedy"] == ("strategy_comparison", "greedy")
    assert conv["mp"] == ("strategy_comparison", "mp")
    assert all("--heldout_every_epoch" in r.extra_flags for r in entries["convergence"].runs)
    dp_acc = {r.name: r.home for r in entries["dp_accuracy"].runs}
    assert [k for k, home in dp_acc.items() if home == "accuracy_vs_epochs"] == [
        n for n in dp_acc if n.startswith("greedy")]


def test_the_studies_are_presets_whose_committed_records_match_their_runs():
  # The large-batch study and the full-size runs are presets of the run list; their committed records (made
  # before they were) must still be found and match the flags, or reproduce would refuse them.
  for preset, entry, count in (("mid", "large_batch", 4), ("full", "full_size", 5)):
    runs = presets.build(preset)[entry].runs
    assert len(runs) == count
    for run in runs:
      record = records.load(records.record_path(RESULTS, preset, run))
      assert record is not None, (preset, run.name)
      assert records.mismatches(record, run) == [], (preset, run.name)
      assert run.resumable
  full = {r.name: r for r in presets.build("full")["full_size"].runs}
  assert full["dp_b5000_e30_large_batch"].extra_flags[-len(presets.LARGE_BATCH_CANDIDATES[-1][1]):] == \
      presets.LARGE_BATCH_CANDIDATES[-1][1]


def test_cpu_preset_budget_is_about_an_hour():
  total = sum(budget.entry_seconds(presets.build("cpu"), 2).values())
  assert 40 * 60 < total < 75 * 60
  assert sum(budget.entry_seconds(presets.build("smoke"), 2).values()) < 9 * 60


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
  with pytest.raises(ValueError, match="unknown preset"):
    presets.build("huge")


@pytest.fixture
def fake_modules(tmp_path, monkeypatch):
  """{program: module} stand-ins that call tests.fixtures.fake_train.main(program), for every program of the
  run list and of the model-parallel benchmark."""
  stubs = tmp_path / "stubs"
  stubs.mkdir()
  modules = {}
  programs = {r.program for e in presets.build("smoke").values() for r in e.runs} | set(bench_model_parallel.PROGRAMS)
  for program in sorted(programs):
    (stubs / f"fake_{program}.py").write_text(
        f"from tests.fixtures import fake_train\nfake_train.main({program!r})\n")
    modules[program] = f"fake_{program}"
  monkeypatch.setenv("PYTHONPATH", str(stubs))
  return modules


def _run(jobs, out, modules, lines, parallel=1):
  return driver.run(jobs, "reproduce smoke", os.path.join(out, "runs", "driver_log.jsonl"), parallel, modules,
                    lines.append)


def test_driver_runs_skips_and_draws_everything(tmp_path, fake_modules):
  out = str(tmp_path / "out")
  entries = presets.build("smoke")
  jobs = driver.plan(entries, "smoke", out, str(tmp_path / "work"), 2)
  unique = {(r.home, r.stored_name) for e in entries.values() for r in e.runs}
  assert len(jobs) == len(unique)
  lines = []
  assert _run(jobs, out, fake_modules, lines, parallel=2) == len(jobs)
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
  assert _run(jobs, out, fake_modules, lines) == 0
  assert f"{len(jobs)} of {len(jobs)} records exist; running 0" in lines[0]
  # Figures and README from the records alone.
  assert len(figures.draw(out, presets.ENTRIES, out=lambda _: None)) == 11
  text = open(readme.write(out)).read()
  assert "preset smoke" in text


def test_driver_stops_on_a_failing_program_and_keeps_finished_records(tmp_path, fake_modules, monkeypatch):
  out = str(tmp_path / "out")
  entries = presets.select(presets.build("smoke"), ["dp_scaling"])
  jobs = driver.plan(entries, "smoke", out, str(tmp_path / "work"), 2)
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


def test_driver_refuses_a_record_made_with_other_flags(tmp_path, fake_modules):
  out = str(tmp_path / "out")
  jobs = driver.plan(presets.select(presets.build("smoke"), ["dp_scaling/g1"]), "smoke", out, str(tmp_path), 2)
  _run(jobs, out, fake_modules, [])
  record = json.load(open(jobs[0].record))
  record["config"]["batch_size"] = 7
  json.dump(record, open(jobs[0].record, "w"))
  with pytest.raises(driver.RunFailedError, match="batch_size=7 .preset: 200.*Delete it"):
    _run(jobs, out, fake_modules, [])


def test_benchmark_harness_alternates_repeats_and_summarizes(tmp_path, fake_modules):
  setting = harness.Setting((32, 16), 100, 2, 400, 2, 2, {"target_speedup": 1.4})
  out = str(tmp_path / "bench")
  jobs = harness.plan(bench_model_parallel.BENCHMARK, setting, out, str(tmp_path / "work"), 2)
  # Repeat r runs the three programs rotated by r, so none always goes first.
  order = [j.run_name for j in jobs]
  assert order == ["greedy_r0", "sync_layerwise_r0", "model_parallel_r0", "sync_layerwise_r1", "model_parallel_r1",
                   "greedy_r1"]
  assert {j.run.flag("num_devices") for j in jobs if j.run.program == "model_parallel"} == {2}
  lines = []
  path, summary = harness.run(bench_model_parallel.BENCHMARK, setting, out, str(tmp_path / "work"), "test", lines.append,
                              fake_modules)
  assert path == os.path.join(out, "summary_b100.json") and os.path.exists(path)
  assert summary["order"] == order and summary["machine_load"] is not None
  seconds = {name: [records.load(p)["pretrain_seconds"] for p in paths] for name, paths in summary["records"].items()}
  assert summary["pretrain_seconds"]["greedy"]["values"] == seconds["greedy"]
  assert summary["speedup_vs_greedy"]["values"] == pytest.approx(
      [g / m for g, m in zip(seconds["greedy"], seconds["model_parallel"])])
  # A rerun times nothing and keeps the summary that was measured.
  os.utime(path, (0, 0))
  harness.run(bench_model_parallel.BENCHMARK, setting, out, str(tmp_path / "work"), "test", lines.append, fake_modules)
  assert os.path.getmtime(path) == 0


def test_benchmarks_list_one_configuration_per_variant():
  setting = harness.Setting((32, 16), 100, 2, 400, 2, 1, {"target_speedup": 1.4, "kernels": ["xla", "tf"],
                                                          "thread_pool": ["per_device", "shared"]})
  runs = bench_model_parallel.configurations(setting)
  assert [r.name for r in runs] == ["greedy", "sync_layerwise", "model_parallel", "model_parallel_xla_shared",
                                    "model_parallel_tf_per_device", "model_parallel_tf_shared"]
  assert runs[3].extra_flags == ("--kernels=xla", "--thread_pool=shared")
  assert bench_model_parallel.BENCHMARK.folder(setting) == "b100_variants"
  setting = harness.Setting((32, 16), 100, 2, 400, 2, 1, {"chunk_steps": ["1", "4"], "kernels": ["tf", "xla"],
                                                          "baselines": 0})
  runs = bench_pipeline_parallel.configurations(setting)
  assert [r.name for r in runs] == ["pipeline_parallel_k1_tf", "pipeline_parallel_k1_xla", "pipeline_parallel_k4_tf",
                                    "pipeline_parallel_k4_xla"]
  assert runs[3].extra_flags == ("--pipeline_chunk_steps=4", "--kernels=xla")
  assert bench_pipeline_parallel.BENCHMARK.folder(setting) == "b100_chunks_kernels"
  setting = harness.Setting((32,), 100, 2, 400, 2, 1, {"profile_steps": 5, "kernels": ["xla", "tf"]})
  runs = bench_data_parallel.configurations(setting)
  assert [r.name for r in runs] == ["greedy", "dp_g1", "dp_g2", "dp_g1_tf", "dp_g2_tf"]
  assert runs[4].extra_flags == ("--profile_steps=5", "--kernels=tf") and runs[4].flag("num_devices") == 2
  assert bench_data_parallel.BENCHMARK.folder(setting) == "b100_kernels"
  # The default setting names no kernel path: the committed records' configurations are unchanged.
  runs = bench_data_parallel.configurations(harness.Setting((32,), 100, 2, 400, 2, 1, {"profile_steps": 5}))
  assert [r.name for r in runs] == ["greedy", "dp_g1", "dp_g2"] and runs[2].extra_flags == ("--profile_steps=5",)


def test_kernels_benchmark_runs_every_program_on_both_paths_and_names_the_faster():
  setting = harness.Setting((32, 16), 100, 2, 400, 2, 2, {})
  runs = bench_kernels.configurations(setting)
  programs = [p for p, _ in bench_kernels.PROGRAMS]
  assert [r.name for r in runs] == [f"{p}_{k}" for p in programs for k in ("xla", "tf")]
  assert [r.flag("num_devices") for r in runs[::2]] == [1, 1, 2, 2, 2]
  assert all(r.extra_flags[0] == f"--kernels={r.name.rsplit('_', 1)[1]}" for r in runs)
  assert "--profile_steps=0" in runs[6].extra_flags  # data_parallel: no op profile inside the timed epochs
  # greedy: xla faster in both repeats; pipeline: tf faster in one repeat, slower in the other.
  seconds = {p: {"xla": [10.0, 10.0], "tf": [12.0, 11.0]} for p in programs}
  seconds["pipeline_parallel"] = {"xla": [10.0, 8.0], "tf": [6.0, 9.0]}
  records_ = {f"{p}_{k}": [{"pretrain_seconds": t, "pretrain_cpu_seconds": 1.5 * t} for t in ts]
              for p, by_path in seconds.items() for k, ts in by_path.items()}
  summary = bench_kernels.summarize(setting, records_)
  greedy, pipe = summary["programs"]["greedy"], summary["programs"]["pipeline_parallel"]
  assert greedy["faster"] == "xla" and greedy["all_repeats_agree"] and greedy["devices"] == 1
  assert greedy["xla_over_tf"]["values"] == pytest.approx([10 / 12, 10 / 11])
  assert pipe["faster"] == "tf" and not pipe["all_repeats_agree"] and pipe["devices"] == 2
  assert pipe["cores_busy"]["tf"]["median"] == pytest.approx(1.5)
  assert summary["xla_over_tf_greedy"] == greedy["xla_over_tf"]


def test_every_programs_default_kernel_path_is_the_one_the_committed_benchmark_found_faster():
  summaries = list(harness.load_summaries(RESULTS, bench_kernels.BENCHMARK).values())
  assert {s["setting"]["batch_size"] for s in summaries} >= {100, 1000, 5000}
  for program, _ in bench_kernels.PROGRAMS:
    chosen = bench_kernels.choice(summaries, program)
    assert chosen is not None, program
    assert programs.get(program).default_kernels() == chosen, program
  tf_faster = {"programs": {"greedy": {"faster": "tf", "all_repeats_agree": True}}}
  xla_faster = {"programs": {"greedy": {"faster": "xla", "all_repeats_agree": True}}}
  unclear = {"programs": {"greedy": {"faster": "xla", "all_repeats_agree": False}}}
  assert bench_kernels.choice([tf_faster, unclear], "greedy") == "tf"
  assert bench_kernels.choice([tf_faster, xla_faster], "greedy") is None
  assert bench_kernels.choice([xla_faster, xla_faster, tf_faster], "greedy") == "xla"


def test_equal_cores_benchmark_gives_every_program_the_same_cores():
  setting = harness.Setting((32, 16), 100, 2, 400, 2, 1, {"cores": 2})
  runs = bench_equal_cores.configurations(setting)
  assert [r.name for r in runs] == [
      "greedy_g1_t2", "sync_layerwise_g1_t2", "model_parallel_g1_t2", "model_parallel_g2_t1",
      "model_parallel_g2_t1_shared", "data_parallel_g1_t2", "data_parallel_g2_t1", "pipeline_parallel_g1_t2",
      "pipeline_parallel_g2_t1", "pipeline_parallel_g2_t1_shared"]
  assert all(r.flag("num_devices") * r.flag("threads_per_device") == 2 for r in runs)
  assert all("--heldout_every_epoch" in r.extra_flags for r in runs)
  assert bench_equal_cores.baseline(setting) == "greedy_g1_t2"
  # Both pools named on the command line: neither configuration depends on the program's default.
  pools = {r.name: [f for f in r.extra_flags if f.startswith("--thread_pool")] for r in runs}
  assert pools["model_parallel_g2_t1"] == ["--thread_pool=per_device"]
  assert pools["model_parallel_g2_t1_shared"] == ["--thread_pool=shared"]
  assert pools["greedy_g1_t2"] == [] and pools["model_parallel_g1_t2"] == []


def test_equal_cores_report_names_the_fastest_program_with_its_flags(tmp_path):
  """The table, the figure and the sentence come from the summary alone; ratios are taken repeat by repeat."""
  folder = tmp_path / "benchmarks" / "equal_cores"
  folder.mkdir(parents=True)
  seconds = {"greedy_g1_t2": [10.0, 12.0, 11.0], "model_parallel_g2_t1": [9.0, 9.5, 9.0],
             "model_parallel_g2_t1_shared": [5.0, 8.0, 5.5], "pipeline_parallel_g2_t1": [6.0, 6.0, 6.0]}
  summary = {"cores": 2, "baseline": "greedy_g1_t2",
             "setting": {"batch_size": 100, "train_examples": 22000, "pretrain_epochs": 3, "repeats": 3, "cpu_count": 2,
                         "hidden_units": [1000] * 4},
             "pretrain_seconds": {n: harness.spread(v) for n, v in seconds.items()},
             "fastest_configuration": {"greedy": "greedy_g1_t2", "model_parallel": "model_parallel_g2_t1_shared",
                                       "pipeline_parallel": "pipeline_parallel_g2_t1"},
             "fastest_program": "model_parallel_g2_t1_shared",
             "seconds_to_greedy_heldout_loss": {n: [v[0] * 0.9, None, v[2]] if n.startswith("pipe") else v
                                                for n, v in seconds.items()}}
  (folder / "summary_n2_b100.json").write_text(json.dumps(summary))
  from experiments.report import equal_cores as report_equal_cores
  sentence = report_equal_cores.conclusion(str(tmp_path))
  # Medians of the per-repeat ratios 2.0, 1.5, 2.0 (not the ratio of medians, 11 / 5.5 = 2.0 by chance only).
  assert ("at batch 100, `model_parallel` with `--num_devices=2 --threads_per_device=1 --thread_pool=shared` "
          "(2.00× greedy on all 2 cores, 1.50–2.00)") in sentence
  table = report_equal_cores.table(str(tmp_path))
  assert table.count("\n") == 5  # header, rule, 4 configurations
  assert "`--num_devices=2 --threads_per_device=1 --thread_pool=per_device`" in table
  pipeline_row = next(line for line in table.splitlines() if "pipeline" in line)
  assert pipeline_row.endswith("| — |")  # one repeat never reached greedy's loss
  assert os.path.exists(report_equal_cores.draw(str(tmp_path)))
  with pytest.raises(ValueError, match="not an equal-cores configuration"):
    report_equal_cores.flags_of("greedy")


def test_devices_beyond_cores_benchmark_runs_each_program_where_it_can():
  setting = harness.Setting((32, 16, 8, 8), 640, 2, 1280, 2, 1, {"devices": ["1", "2", "8", "64", "3"],
                                                                 "code": ["after_fix"]})
  runs = bench_beyond_cores.configurations(setting)
  # model_parallel up to its 4 layers; data_parallel where G divides the batch (3 does not divide 640).
  assert [r.name for r in runs] == ["dp_g1", "dp_g2", "dp_g8", "dp_g64", "mp_g1", "mp_g2", "mp_g3"]
  assert runs[3].extra_flags == ("--profile_steps=0",) and runs[3].flag("num_devices") == 64
  assert bench_beyond_cores.BENCHMARK.summary_file(setting) == "summary_b640_after_fix.json"
  record = {"timing": {"warmup": 3.0, "pretrain_train": 10.0, "profile/input": 0.5}, "run_seconds": 20.0}
  assert bench_beyond_cores.outside_phases(record) == 7.0  # profile/* are per-epoch estimates, not phases


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
  dry = run("--preset=full", "--dry_run")
  assert dry.returncode == 0 and "full_size: 5 runs" in dry.stdout and "results/full_size/greedy_b100_e30.json" in dry.stdout


def test_smoke_preset_end_to_end_with_the_real_programs(tmp_path):
  out = tmp_path / "out"
  env = dict(os.environ, PYTHONPATH=ROOT)
  before = {os.path.join(d, f): os.path.getmtime(os.path.join(d, f)) for d, _, files in os.walk(RESULTS) for f in files}
  done = subprocess.run([sys.executable, "-m", "experiments.reproduce", "--preset=smoke", f"--output_dir={out}",
                         f"--work_dir={tmp_path / 'work'}", "--jobs=2"], cwd=ROOT, env=env, capture_output=True,
                        text=True, timeout=900)
  assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
  after = {os.path.join(d, f): os.path.getmtime(os.path.join(d, f)) for d, _, files in os.walk(RESULTS) for f in files}
  assert after == before  # Nothing written into the committed results.
  assert sorted(os.listdir(out / "figures")) == sorted(f"{e}.png" for e in presets.REPORT_ENTRIES + presets.BEYOND)
  for entry in presets.build("smoke").values():
    for run in entry.runs:
      record = records.load(records.record_path(str(out), "smoke", run))
      assert record is not None and records.mismatches(record, run) == [], (entry.name, run.name)
  text = (out / "README.md").read_text()
  assert text.count("preset smoke") >= 10
