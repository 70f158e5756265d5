"""The benchmarks: the harness (alternated repeats, summaries, provenance of one machine and code) with stand-in
programs that write synthetic records, each benchmark's configurations, summaries, tables and figures, and the
choices the committed summaries make (kernels)."""

import json
import os
import types

import pytest

from common.settings import programs
from experiments import harness
from experiments import presets
from experiments import records
from experiments.benchmarks import data_parallel as bench_data_parallel
from experiments.benchmarks import equal_cores as bench_equal_cores
from experiments.benchmarks import kernels as bench_kernels
from experiments.benchmarks import model_parallel as bench_model_parallel
from experiments.benchmarks import pipeline_parallel as bench_pipeline_parallel
from experiments.report import draw
from tests.fixtures import make_records
from conftest import ROOT

RESULTS = os.path.join(ROOT, "results")
GREEDY, SYNC, MP, DP, PP = (programs.GREEDY, programs.SYNC_LAYERWISE, programs.MODEL_PARALLEL, programs.DATA_PARALLEL,
                            programs.PIPELINE_PARALLEL)


def test_benchmark_harness_alternates_repeats_and_summarizes(tmp_path, fake_modules):
  setting = harness.Setting((32, 16), 100, 2, 400, 2, 2, {"target_speedup": 1.4})
  out = str(tmp_path / "bench")
  jobs = harness.plan(bench_model_parallel.BENCHMARK, setting, out, str(tmp_path / "work"))
  # Repeat r runs the three programs rotated by r, so none always goes first.
  order = [j.run_name for j in jobs]
  g, s, m = GREEDY.name, SYNC.name, MP.name
  assert order == [f"{g}_r0", f"{s}_r0", f"{m}_r0", f"{s}_r1", f"{m}_r1", f"{g}_r1"]
  assert {j.spec.config.num_devices for j in jobs if j.spec.program == m} == {2}
  lines, here = [], make_records.ENVIRONMENT  # this "machine" is the fake records' (their environment)
  path, summary = harness.run(bench_model_parallel.BENCHMARK, setting, out, str(tmp_path / "work"), "test", lines.append,
                              fake_modules, here)
  assert path == os.path.join(out, "summary_b100.json") and os.path.exists(path)
  assert summary["order"] == order and summary["machine_load"] is not None and summary["noisy"] == records.noisy(summary)
  seconds = {name: [records.load(p)["pretrain_seconds"] for p in paths] for name, paths in summary["records"].items()}
  assert summary["pretrain_seconds"][g]["values"] == seconds[g]
  assert summary["speedup_vs_greedy"]["values"] == pytest.approx([a / b for a, b in zip(seconds[g], seconds[m])])
  # The summary names the records' machine and code, and each configuration's kernels and thread pool.
  assert summary["provenance"]["cpu_model"] == "Fixture CPU" and summary["provenance"]["usable_cores"] == 2
  assert summary["provenance"]["configurations"][m]["thread_pool"] == MP.default_thread_pool()
  # A rerun times nothing and keeps the summary that was measured.
  os.utime(path, (0, 0))
  harness.run(bench_model_parallel.BENCHMARK, setting, out, str(tmp_path / "work"), "test", lines.append, fake_modules,
              here)
  assert os.path.getmtime(path) == 0
  # On another machine, or with other code, the records are not reused: refused before any run, with the way out.
  os.remove(jobs[-1].record)
  for field, value in (("cpu_model", "Other CPU"), ("cpu_flags", ["avx2", "amx_bf16"]), ("code_digest", "e")):
    with pytest.raises(ValueError, match=f"{field}: .*--output_dir=DIR"):
      harness.run(bench_model_parallel.BENCHMARK, setting, out, str(tmp_path / "work"), "test", lines.append,
                  fake_modules, dict(here, **{field: value}))
    assert not os.path.exists(jobs[-1].record) and os.path.getmtime(path) == 0
  # A field the records lack (here the machine's id) is not compared.
  harness.run(bench_model_parallel.BENCHMARK, setting, out, str(tmp_path / "work"), "test", lines.append, fake_modules,
              dict(here, machine_id="any"))
  assert os.path.exists(jobs[-1].record)


def test_a_record_of_another_machine_instance_is_foreign(tmp_path):
  """`harness.foreign_record`: the machine's id (another host, or the same after a reboot) counts like the processor;
  a job without a record is not looked at."""
  path = tmp_path / "r.json"
  path.write_text(json.dumps({"environment": dict(make_records.ENVIRONMENT, machine_id="aaaaaaaaaaaa")}))
  jobs = [types.SimpleNamespace(record=str(tmp_path / "missing.json")), types.SimpleNamespace(record=str(path))]
  assert harness.foreign_record(jobs, dict(make_records.ENVIRONMENT, machine_id="aaaaaaaaaaaa")) is None
  assert harness.foreign_record(jobs, dict(make_records.ENVIRONMENT, machine_id="bbbbbbbbbbbb")) == (
      f"{path} (machine_id: aaaaaaaaaaaa, here bbbbbbbbbbbb)")


def test_harness_refuses_to_summarize_records_of_two_machines_or_codes():
  env = {"cpu_model": "A", "usable_cores": 2, "commit": "c" * 40, "code_digest": "d", "commit_dirty": False,
         "kernels": "tf", "thread_pool": "shared", "precision": "float32", "cpu_flags": ["avx2"]}
  same = {"x": [{"environment": env}], "y": [{"environment": dict(env, kernels="xla")}]}
  assert harness.provenance(same)["cpu_model"] == "A" and harness.provenance(same)["configurations"]["y"]["kernels"] == "xla"
  assert harness.provenance(same)["cpu_flags"] == ["avx2"]  # the instruction set, as the records list it
  for field, value in (("cpu_model", "B"), ("usable_cores", 4), ("code_digest", "e"), ("cpu_flags", ["avx2", "amx_bf16"])):
    with pytest.raises(ValueError, match=f"disagree on {field}"):
      harness.provenance({"x": [{"environment": env}], "y": [{"environment": dict(env, **{field: value})}]})
  # Two commits of the same code (they differ only in results/, docs/, *.md: the same digest) are one code.
  other = {"x": [{"environment": env}], "y": [{"environment": dict(env, commit="f" * 40)}]}
  assert harness.provenance(other)["commits"] == ["c" * 40, "f" * 40]
  with pytest.raises(ValueError, match="disagree on commit"):
    harness.provenance({"x": [{"environment": env}], "y": [{"environment": dict(env, commit="f" * 40,
                                                                                  code_digest="e")}]})


def test_benchmarks_list_one_configuration_per_variant():
  setting = harness.Setting((32, 16), 100, 2, 400, 2, 1, {"target_speedup": 1.4, "kernels": ["xla", "tf"],
                                                          "thread_pool": ["per_device", "shared"]})
  runs = bench_model_parallel.configurations(setting)
  assert [r.name for r in runs] == [GREEDY.name, SYNC.name, MP.name] + [
      f"{MP.name}_{v}" for v in ("xla_shared", "tf_per_device", "tf_shared")]
  assert (runs[3].config.kernels, runs[3].config.thread_pool) == ("xla", "shared")
  assert bench_model_parallel.BENCHMARK.folder(setting) == "b100_variants"
  setting = harness.Setting((32, 16), 100, 2, 400, 2, 1, {"chunk_steps": ["1", "4"], "kernels": ["tf", "xla"],
                                                          "baselines": 0})
  runs = bench_pipeline_parallel.configurations(setting)
  assert [r.name for r in runs] == [f"{PP.name}_{v}" for v in ("k1_tf", "k1_xla", "k4_tf", "k4_xla")]
  assert (runs[3].config.pipeline_chunk_steps, runs[3].config.kernels) == (4, "xla")
  assert bench_pipeline_parallel.BENCHMARK.folder(setting) == "b100_chunks_kernels"
  setting = harness.Setting((32, 16), 100, 2, 400, 2, 1, {"chunk_steps": ["4", "16"], "kernels": ["auto"],
                                                          "precisions": ["float32", "mixed_bfloat16"], "baselines": 0})
  runs = bench_pipeline_parallel.configurations(setting)
  assert [r.name for r in runs] == [f"{PP.name}_{v}" for v in ("k4_float32", "k16_float32", "k4_mixed_bfloat16",
                                                               "k16_mixed_bfloat16")]
  assert (runs[3].config.pipeline_chunk_steps, runs[3].config.precision) == (16, "mixed_bfloat16")
  assert bench_pipeline_parallel.BENCHMARK.folder(setting) == f"b100_chunks_{harness.machine_class()}"
  setting = harness.Setting((32,), 100, 2, 400, 2, 1, {"profile_steps": 5, "kernels": ["xla", "tf"]})
  runs = bench_data_parallel.configurations(setting)
  assert [r.name for r in runs] == [GREEDY.name, "dp_g1", "dp_g2", "dp_g1_tf", "dp_g2_tf"]
  assert (runs[4].config.profile_steps, runs[4].config.kernels, runs[4].config.num_devices) == (5, "tf", 2)
  assert bench_data_parallel.BENCHMARK.folder(setting) == "b100_kernels"
  # The default setting names no kernel path: the committed records' configurations are unchanged.
  runs = bench_data_parallel.configurations(harness.Setting((32,), 100, 2, 400, 2, 1, {"profile_steps": 5}))
  assert [r.name for r in runs] == [GREEDY.name, "dp_g1", "dp_g2"] and runs[2].config.profile_steps == 5
  assert not [a for a in runs[2].arguments() if a.startswith("--kernels")]


def test_kernels_benchmark_runs_every_program_on_both_paths_and_names_the_faster():
  setting = harness.Setting((32, 16), 100, 2, 400, 2, 2, {"precision": programs.PRECISIONS[1]})
  runs = bench_kernels.configurations(setting)
  names = [p.name for p in bench_kernels.PROGRAMS]
  assert names == [p.name for p in programs.PROGRAMS if p.kernel_paths == ("xla", "tf")]
  assert [r.name for r in runs] == [f"{p}_{k}" for p in names for k in ("xla", "tf")]
  assert all(r.config.precision == programs.PRECISIONS[1] for r in runs)
  assert bench_kernels.BENCHMARK.folder(setting) == f"b100_{programs.PRECISIONS[1]}"
  assert [r.config.num_devices for r in runs[::2]] == [1 if p.one_device else 2 for p in bench_kernels.PROGRAMS]
  assert all(r.config.kernels == r.name.rsplit('_', 1)[1] for r in runs)
  dp = next(r for r in runs if r.program == DP.name)
  assert dp.config.profile_steps == 0  # data_parallel's timing flags: no op profile inside the timed epochs
  # greedy: xla faster in both repeats; pipeline: tf faster in one repeat, slower in the other.
  seconds = {p: {"xla": [10.0, 10.0], "tf": [12.0, 11.0]} for p in names}
  seconds[PP.name] = {"xla": [10.0, 8.0], "tf": [6.0, 9.0]}
  records_ = {f"{p}_{k}": [{"pretrain_seconds": t, "pretrain_cpu_seconds": 1.5 * t} for t in ts]
              for p, by_path in seconds.items() for k, ts in by_path.items()}
  summary = bench_kernels.summarize(setting, records_)
  greedy, pipe = summary["programs"][GREEDY.name], summary["programs"][PP.name]
  assert greedy["faster"] == "xla" and greedy["all_repeats_agree"] and greedy["devices"] == 1
  assert greedy["xla_over_tf"]["values"] == pytest.approx([10 / 12, 10 / 11])
  assert pipe["faster"] == "tf" and not pipe["all_repeats_agree"] and pipe["devices"] == 2
  assert pipe["cores_busy"]["tf"]["median"] == pytest.approx(1.5)
  assert summary[f"xla_over_tf_{GREEDY.name}"] == greedy["xla_over_tf"]


def test_no_programs_default_kernel_path_is_the_one_the_committed_benchmark_found_slower():
  summaries = list(records.load_summaries(RESULTS, bench_kernels.BENCHMARK.name).values())
  for precision in programs.PRECISIONS:  # each precision measured: its default per program is the records' choice
    if not [s for s in summaries if bench_kernels.precision_of(s) == precision]:
      continue
    for program in bench_kernels.PROGRAMS:
      chosen = bench_kernels.choice(summaries, program.name, precision)  # None: no measured difference,
      assert chosen in (None, program.default_kernels(precision)), (program.name, precision)  # either path may stay
  g = GREEDY.name
  tf_faster = {"programs": {g: {"faster": "tf", "all_repeats_agree": True}}}
  xla_faster = {"programs": {g: {"faster": "xla", "all_repeats_agree": True}}}
  unclear = {"programs": {g: {"faster": "xla", "all_repeats_agree": False}}}
  assert bench_kernels.choice([tf_faster, unclear], g) == "tf"
  assert bench_kernels.choice([tf_faster, xla_faster], g) is None
  assert bench_kernels.choice([xla_faster, xla_faster, tf_faster], g) == "xla"
  assert bench_kernels.choice([xla_faster], g) not in (None, GREEDY.default_kernels())  # the check above can fail


def test_equal_cores_benchmark_gives_every_program_the_same_cores():
  setting = harness.Setting((32, 16), 100, 2, 400, 2, 1, {"cores": 2})
  runs = bench_equal_cores.configurations(setting)
  names = [r.name for r in runs]
  for p in programs.PROGRAMS:  # on one device with both cores' threads; on two with one each, unless one-device
    assert f"{p.name}_g1_t2" in names and (f"{p.name}_g2_t1" in names) == (not p.one_device), p.name
  # Both pools of the programs that have two (model_parallel, pipeline_parallel), each named on the command line.
  assert [n for n in names if n.endswith("_shared")] == [f"{p.name}_g2_t1_shared" for p in programs.PROGRAMS
                                                         if len(p.thread_pools) > 1]
  assert {f"{MP.name}_g2_t1_shared", f"{PP.name}_g2_t1_shared"} <= set(names)
  assert all(r.config.num_devices * r.config.threads_per_device == 2 for r in runs)
  assert all(r.config.heldout_every_epoch for r in runs)
  assert bench_equal_cores.baseline(setting) == "greedy_g1_t2"
  # Both pools named on the command line: neither configuration depends on the program's default.
  pools = {r.name: [f for f in r.arguments() if f.startswith("--thread_pool")] for r in runs}
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
             "fastest_configuration": {GREEDY.name: "greedy_g1_t2", MP.name: "model_parallel_g2_t1_shared",
                                       PP.name: "pipeline_parallel_g2_t1"},
             "fastest_program": "model_parallel_g2_t1_shared",
             "seconds_to_greedy_heldout_loss": {n: [v[0] * 0.9, None, v[2]] if n.startswith("pipe") else v
                                                for n, v in seconds.items()}}
  (folder / "summary_n2_b100.json").write_text(json.dumps(summary))
  section = bench_equal_cores.section(str(tmp_path))
  paragraphs = section.split("\n\n")
  sentence, table = paragraphs[1], paragraphs[-1]
  # Medians of the per-repeat ratios 2.0, 1.5, 2.0 (not the ratio of medians, 11 / 5.5 = 2.0 by chance only).
  assert ("at batch 100, `model_parallel` with `--num_devices=2 --threads_per_device=1 --thread_pool=shared` "
          "(2.00× greedy on all 2 cores, 1.50–2.00)") in sentence
  assert table.count("\n") == 5  # header, rule, 4 configurations
  assert "`--num_devices=2 --threads_per_device=1 --thread_pool=per_device`" in table
  pipeline_row = next(line for line in table.splitlines() if "pipeline" in line)
  assert pipeline_row.endswith("| — |")  # one repeat never reached greedy's loss
  assert os.path.exists(draw.benchmark_figure(str(tmp_path), bench_equal_cores.BENCHMARK))
  with pytest.raises(ValueError, match="not an equal-cores configuration"):
    bench_equal_cores.flags_of(GREEDY.name)


def _records(seconds, **fields):
  """{configuration: [synthetic record per repeat]} from {configuration: [pretraining seconds per repeat]}."""
  return {n: [dict({"pretrain_seconds": t, "pretrain_cpu_seconds": t}, **fields) for t in ts] for n, ts in seconds.items()}


def test_the_new_benchmarks_configure_every_program_and_summarize_repeat_by_repeat(monkeypatch):
  from experiments.benchmarks import async_data_parallel as bench_async
  from experiments.benchmarks import finetune as bench_finetune
  from experiments.benchmarks import hybrid as bench_hybrid
  from experiments.benchmarks import precision as bench_precision
  from experiments.benchmarks import strategies as bench_strategies
  f32, bf16 = programs.PRECISIONS
  # precision: every registered program in both precisions; speedups of the same repeat.
  s = harness.Setting((32, 16), 100, 2, 400, 2, 2, {})
  runs = bench_precision.configurations(s)
  assert [r.name for r in runs] == [f"{p.name}_{q}" for p in programs.PROGRAMS for q in (f32, bf16)]
  assert all(r.config.num_devices == (1 if programs.get(r.program).one_device else 2) for r in runs)
  layers = [{"epochs": [{}, {}]}, {"epochs": [{}, {}]}]
  found = _records({r.name: [10.0, 12.0] if r.name.endswith(f32) else [5.0, 8.0] for r in runs}, layers=layers,
                   config={"hidden_units": [32, 16], "train_examples": 400, "batch_size": 100},
                   strategy=GREEDY.name)
  monkeypatch.setattr(harness, "matmul_rates", lambda s: {q: {"gflops_per_second": g, "shapes": []}
                                                                  for q, g in ((f32, 200.0), (bf16, 400.0))})
  summary = bench_precision.summarize(s, found)
  assert summary[f"speedup_{GREEDY.name}"]["values"] == pytest.approx([2.0, 1.5])
  assert summary["pipeline_bf16_vs_greedy_f32"]["values"] == pytest.approx([2.0, 1.5])
  flops = 2 * 400 * (5 * 2 * 784 * 32 + 5 * 2 * 32 * 16 + 2 * 2 * 784 * 32)  # 2 epochs of 400 examples, 2 layers
  assert harness.flops(found[f"{GREEDY.name}_{f32}"][0]) == pytest.approx(flops)
  assert summary["programs"][GREEDY.name]["fraction_of_bf16_rate"][bf16]["values"][0] == pytest.approx(
      flops / 5.0 / 400e9)
  # finetune: one core, and each placement on G devices (one_device: one device of G threads); the ratios are of
  # finetuning seconds, the fastest placement is the choice.
  s = harness.Setting((32,), 100, 1, 400, 2, 2, {"finetune_epochs": 2, "precisions": [f32]})
  runs = bench_finetune.configurations(s)
  assert [(r.name, r.config.num_devices, r.config.threads_per_device) for r in runs] == [
      (f"one_core_{f32}", 1, 1), (f"replicas_{f32}", 2, 1), (f"one_device_{f32}", 1, 2), (f"pipelined_{f32}", 2, 1)]
  assert runs[0].config.finetune_epochs == 2 and runs[3].config.finetune_placement == "pipelined"
  seconds = {"one_core": 9.0, "replicas": 5.0, "one_device": 6.0, "pipelined": 4.5}
  found = {f"{p}_{f32}": [{"finetune": {"seconds": t, "placement": p}}] * 2 for p, t in seconds.items()}
  summary = bench_finetune.summarize(s, found)
  assert summary["placements"][f32]["choice"] == "pipelined"
  assert summary[f"finetune_speedup_{f32}"]["median"] == pytest.approx(2.0)
  caption, header, rows = bench_finetune.details(summary)
  assert [row[1] for row in rows] == list(bench_finetune.PLACEMENTS) and rows[2][4] == "yes"
  assert rows[2][2] == "9.00 → 4.50"  # one core's finetuning seconds → the placement's (medians)
  # Several kernel paths: every configuration once per path, each path's placements against its own one core.
  bf16 = programs.PRECISIONS[1]
  s = harness.Setting((32,), 100, 1, 400, 2, 2, {"finetune_epochs": 2, "precisions": [bf16],
                                                 "finetune_kernels": ["tf", "xla"]})
  runs = bench_finetune.configurations(s)
  assert [r.name for r in runs][:5] == [f"one_core_{bf16}_tf", f"replicas_{bf16}_tf", f"one_device_{bf16}_tf",
                                        f"pipelined_{bf16}_tf", f"one_core_{bf16}_xla"]
  assert (runs[6].config.finetune_kernels, runs[6].config.threads_per_device) == ("xla", 2)
  assert bench_finetune.BENCHMARK.folder(s) == f"b100_{harness.machine_class()}_kernels"
  found = {f"{p}_{bf16}_{k}": [{"finetune": {"seconds": t * (2 if k == "xla" else 1), "placement": p}}]
           for p, t in seconds.items() for k in ("tf", "xla")}
  summary = bench_finetune.summarize(s, found)
  assert summary[f"finetune_speedup_{bf16}_xla"]["median"] == pytest.approx(2.0)
  assert summary["placements"][f"{bf16}_xla"]["one_core_seconds"]["median"] == pytest.approx(18.0)
  s = harness.Setting((32,), 100, 1, 400, 2, 2, {"finetune_epochs": 2, "precisions": [bf16], "placements": [
      "one_device"], "finetune_kernels": ["tf", "xla"]})
  assert [r.name for r in bench_finetune.configurations(s)] == [
      f"{p}_{bf16}_{k}" for k in ("tf", "xla") for p in ("one_core", "one_device")]
  summary = bench_finetune.summarize(s, found)
  assert summary["placements"][f"{bf16}_tf"]["choice"] == "one_device" and "replicas" not in summary["placements"][
      f"{bf16}_tf"]
  caption, header, rows = bench_finetune.details(summary)
  assert "not the default" in caption and [row[:2] for row in rows] == [[f"{bf16}_tf", "one_device"],
                                                                          [f"{bf16}_xla", "one_device"]]
  # Only a summary of every placement on the default kernel path at batch 100 sets the class's default placement.
  every = {"placements": {}, "setting": {"batch_size": 100}}
  assert bench_finetune.sets_the_default(every)
  assert not bench_finetune.sets_the_default({**every, "setting": {"batch_size": 1000}})
  assert not bench_finetune.sets_the_default({**every, "setting": {"batch_size": 100, "placements": ["one_device"]}})
  assert not bench_finetune.sets_the_default({**every, "setting": {"batch_size": 100, "finetune_kernels": ["tf"]}})
  assert not bench_finetune.sets_the_default({"setting": {"batch_size": 100}})  # earlier code: no placements
  # limit: per precision greedy on one core, the pipeline with each intra-op pool; fractions of one core's rate times
  # the cores, finetuning speedups over one core (same repeat), bfloat16's one-core finetuning against float32's.
  from experiments.benchmarks import limit as bench_limit
  bf16 = programs.PRECISIONS[1]
  s = harness.Setting((32,), 100, 2, 400, 2, 2, {"precisions": [f32, bf16], "finetune_epochs": 1})
  runs = bench_limit.configurations(s)
  assert [(r.name, r.config.num_devices) for r in runs] == [
      (f"{n}_{p}", 1 if n == bench_limit.BASES[0] else 2) for p in (f32, bf16) for n in bench_limit.BASES]
  assert runs[2].config.thread_pool == "shared" and runs[4].config.precision == bf16
  assert runs[3].program == programs.MODEL_PARALLEL.name and runs[3].config.num_devices == 2
  config = {"hidden_units": [32], "train_examples": 400, "batch_size": 100, "threads_per_device": 1}
  fine_seconds = {"greedy_1core": 3.0, "pipeline_per_device": 2.0, "pipeline_shared": 1.5,
                  programs.MODEL_PARALLEL.name: 2.5}  # float32; bfloat16 half
  found = {f"{n}_{p}": [{"pretrain_seconds": 2.0, "strategy": r.program, "layers": [{"epochs": [{}, {}]}],
                         "config": dict(config, num_devices=r.config.num_devices, precision=p),
                         "environment": {"usable_cores": 2},
                         "finetune": {"seconds": fine_seconds[n] / (2 if p == bf16 else 1), "epochs": 1,
                                      "placement": "replicas"}}] * 2
           for p in (f32, bf16) for n, r in zip(bench_limit.BASES, runs)}
  monkeypatch.setattr(harness, "matmul_rates",
                      lambda s: {f32: {"gflops_per_second": 1e-3, "ways": ["tf"]},
                                 bf16: {"gflops_per_second": 2e-3, "ways": ["tf", "xla"]}})
  # One layer's passes over its kernel: 0.01 s per step in float32, 0.1 s in bfloat16; 4 steps per epoch, 2 epochs.
  monkeypatch.setattr(harness, "update_floor", lambda s: {q: {"seconds_per_step": t, "layers": [{"seconds": t}]}
                                                          for q, t in ((f32, 0.01), (bf16, 0.1))})
  # Two streams at once: 1.6 (threads) or 1.8 (processes) times one core's rate; the higher is the running limit.
  monkeypatch.setattr(harness, "two_stream_rates", lambda s: {
      q: {"threads": 1.6 * g, "processes": 1.8 * g, "gflops_per_second": 1.8 * g} for q, g in ((f32, 1e-3),
                                                                                             (bf16, 2e-3))})
  summary = bench_limit.summarize(s, found)
  pipe = found[f"pipeline_shared_{f32}"][0]
  assert summary["configurations"][f"pipeline_shared_{f32}"]["pretrain_fraction_of_running_limit"][
      "median"] == pytest.approx(harness.flops(pipe) / 2.0 / 1.8e6)
  assert summary["configurations"][f"greedy_1core_{f32}"]["pretrain_fraction_of_running_limit"]["median"] == \
      pytest.approx(harness.flops(found[f"greedy_1core_{f32}"][0]) / 2.0 / 1e6)  # one core: one stream's rate
  assert summary[f"pipeline_fraction_running_{f32}"]["pool"] == summary[f"pipeline_fraction_{f32}"]["pool"]
  one = found[f"greedy_1core_{f32}"][0]
  assert summary["configurations"][f"greedy_1core_{f32}"]["cores"] == 1
  assert summary["configurations"][f"greedy_1core_{f32}"]["pretrain_fraction_of_limit"]["median"] == pytest.approx(
      harness.flops(one) / 2.0 / 1e6)
  assert summary["matmul_ways"] == {f32: ["tf"], bf16: ["tf", "xla"]}
  assert summary[f"pipeline_fraction_{bf16}"]["median"] == pytest.approx(
      harness.flops(found[f"pipeline_shared_{bf16}"][0]) / 2.0 / 4e6)
  fine = 3 * 400 * 2 * (784 * 32 + 32 * 10)
  assert summary["configurations"][f"pipeline_shared_{f32}"]["finetune_fraction_of_limit"]["median"] == pytest.approx(
      fine / 1.5 / 2e6)
  assert summary[f"finetune_speedup_{f32}"]["median"] == pytest.approx(2.0)
  assert summary[f"finetune_speedup_{f32}"]["pool"] == "shared"
  assert summary["bf16_over_f32_finetune_one_core"]["median"] == pytest.approx(2.0)
  # The ceiling: products at the limit's rate over products plus the passes over the kernels, 8 layer-steps.
  products = harness.flops(found[f"pipeline_shared_{bf16}"][0]) / 2e6
  ceiling = summary["configurations"][f"pipeline_shared_{bf16}"]["pretrain_ceiling_of_limit"]
  assert ceiling["median"] == pytest.approx(products / (products + 8 * 0.1))
  assert summary[f"pipeline_ceiling_{bf16}"] == ceiling
  assert summary["configurations"][f"pipeline_shared_{bf16}"]["pretrain_fraction_of_ceiling"][
      "median"] == pytest.approx(summary[f"pipeline_fraction_{bf16}"]["median"] / ceiling["median"])
  assert summary[f"model_parallel_fraction_{f32}"]["median"] == pytest.approx(
      harness.flops(found[f"model_parallel_{f32}"][0]) / 2.0 / 2e6)
  caption, header, rows = bench_limit.details(summary)
  assert [row[0] for row in rows] == [r.name for r in runs] and all(len(row) == len(header) for row in rows)
  assert rows[1][header.index("pretraining: ceiling the kernels' passes leave")] == summary["configurations"][
      f"pipeline_per_device_{f32}"]["pretrain_ceiling_of_limit"]
  # async_functions: the async program on W workers at each K; the fastest K by examples per second.
  from experiments.benchmarks import async_functions as bench_functions
  s = harness.Setting((32,), 100, 1, 400, 2, 2, {"steps_per_function_values": ["1", "2", "4"]})
  runs = bench_functions.configurations(s)
  assert [r.name for r in runs] == ["k1", "k2", "k4"] and runs[2].config.steps_per_function == 4
  assert all("--workers=2" in r.launcher and "--ps=1" in r.launcher for r in runs)
  found = {f"k{k}": [{"pretrain_seconds": t, "async": {"steps_per_function": min(k, 2)},
                      "staleness": {"mean": 0.5, "max": m}}] * 2 for k, t, m in ((1, 4.0, 1), (2, 2.0, 2), (4, 2.5, 3))}
  summary = bench_functions.summarize(s, found)
  assert summary["choice"] == 2 and summary["fastest_vs_smallest"]["median"] == pytest.approx(2.0)
  assert summary["functions"]["k4"]["steps_per_function"] == 2 and summary["functions"]["k4"]["staleness_max"] == 3
  assert summary["functions"]["k1"]["examples_per_second"]["median"] == pytest.approx(400 / 4.0)
  assert [row[6] for row in bench_functions.details(summary)[2]] == ["", "yes", ""]
  # hybrid: on 2 cores (P, R) with P R <= 2, and data parallel; the model predicts every (P, R).
  monkeypatch.setattr(bench_hybrid.provenance, "usable_cores", lambda: 2)
  s = harness.Setting((32, 32, 32, 32), 100, 1, 400, 2, 2, {"stages": ["1", "2", "4"], "replicas": ["1", "2"]})
  runs = bench_hybrid.configurations(s)
  assert [r.name for r in runs] == ["p1_r1", "p1_r2", "p2_r1", DP.run_name]
  assert runs[1].config.num_devices == 2 and runs[1].config.replicas_per_stage == 2
  assert [(p, r) for p, r in bench_hybrid.points(s)] == [(1, 1), (1, 2), (2, 1), (2, 2), (4, 1), (4, 2)]
  # async: greedy, then data parallel and async on W workers without and with the straggler.
  s = harness.Setting((32,), 100, 1, 400, 2, 1, {"slow_worker_delay": 0.01})
  runs = bench_async.configurations(s)
  assert [r.name for r in runs] == [GREEDY.run_name, DP.run_name, f"{DP.run_name}_straggler",
                                    programs.ASYNC_DATA_PARALLEL.run_name,
                                    f"{programs.ASYNC_DATA_PARALLEL.run_name}_straggler"]
  assert runs[4].launcher == ("common.launch", "--workers=2", "--ps=1")
  assert runs[4].config.benchmark_slow_worker_delay_seconds == 0.01
  # strategies: the cpu preset's strategy comparison, every compared program.
  runs = bench_strategies.configurations(harness.Setting((1000,) * 4, 5000, 10, 10_000, 2, 3, {}))
  assert [r.name for r in runs] == [p.run_name for p in presets.COMPARED]


def test_the_new_benchmarks_details_and_the_straggler_figure_come_from_their_summaries(tmp_path):
  from experiments.benchmarks import async_data_parallel as bench_async
  from experiments.benchmarks import hybrid as bench_hybrid
  adp, dp = programs.ASYNC_DATA_PARALLEL.run_name, DP.run_name
  spread = harness.spread([2.0, 3.0, 4.0])
  summary = {"setting": {"batch_size": 100, "slow_worker_delay": 0.01},
             "examples_per_second": {n: spread for n in (GREEDY.run_name, dp, f"{dp}_straggler", adp)},
             "speedup_vs_greedy": {dp: spread, f"{dp}_straggler": spread, adp: spread},
             "seconds_to_greedy_heldout_loss": {GREEDY.run_name: [10.0, 11.0, 12.0], dp: [8.0, 9.0, 7.0],
                                                f"{dp}_straggler": [20.0, None, 22.0], adp: [6.0, 6.5, 7.0]},
             "staleness": {adp: {"mean": 0.5, "p90": 1.0, "max": 3}}, "rescheduled_functions": {adp: [0, 0, 1]}}
  def record(heldout):  # two layers, their held-out loss after each epoch at 5 s and 10 s
    return {"layers": [{"epochs": [{"elapsed_seconds": 5.0 * (e + 1), "heldout_loss": h} for e, h in enumerate(layer)]}
                       for layer in heldout]}
  greedy_record = record([[3.0, 2.0], [6.0, 4.0]])
  assert harness.seconds_to_loss_of(record([[2.0, 1.0], [5.0, 4.0]]), greedy_record) == 10.0  # a number a table
  assert harness.seconds_to_loss_of(record([[2.0, 1.0], [3.0, 2.0]]), greedy_record) == 5.0  # and figure can draw
  assert harness.seconds_to_loss_of(record([[2.0, 1.0], [7.0, 5.0]]), greedy_record) is None
  caption, header, rows = bench_async.details(summary)
  assert len(rows) == 4 and rows[0][0] == GREEDY.run_name and rows[2][3] == "—" and rows[3][3] == 6.5
  assert rows[3][4] == "0.50 / 1.00 / 3.00" and rows[3][5] == "0, 0, 1"
  folder = tmp_path / "benchmarks" / bench_async.BENCHMARK.name
  folder.mkdir(parents=True)
  (folder / "summary_b100.json").write_text(json.dumps(summary))
  path = draw.benchmark_figure(str(tmp_path), bench_async.BENCHMARK)
  assert path.endswith(bench_async.BENCHMARK.figure_file) and os.path.getsize(path) > 10_000
  # hybrid: only the measured configurations; the model (no all-reduce cost) only where one replica per stage.
  hybrid = {"pretrain_seconds": {"p1_r1": spread, "p1_r2": spread, "p2_r1": spread, DP.run_name: spread},
            "model": {"describe": "rate", "predictions": [
                {"stages": 1, "replicas": 1, "devices": 1, "measured": True, "predicted_seconds": 4.0},
                {"stages": 2, "replicas": 1, "devices": 2, "measured": True, "predicted_seconds": 2.5},
                {"stages": 4, "replicas": 4, "devices": 16, "measured": False, "predicted_seconds": 0.5}]}}
  caption, header, rows = bench_hybrid.details(hybrid)
  assert rows == [[1, 1, 1, spread, "4 (fit)"], [1, 2, 2, spread, "— (no all-reduce cost)"], [2, 1, 2, spread, "2.5"]]
  assert "no all-reduce cost" in caption


def test_pipeline_benchmark_gives_each_configurations_tick_tails():
  ticks = lambda median, p99: {"pipeline": {"tick_seconds": {"median": median, "p99": p99}}}
  tails = bench_pipeline_parallel.tick_tails([ticks(0.2, 0.3), ticks(0.1, 0.2), ticks(0.4, 0.5)])
  assert tails["median"] == pytest.approx(1.5) and tails["min"] == pytest.approx(1.25)
  assert tails["max"] == pytest.approx(2.0)
  assert bench_pipeline_parallel.tick_tails([ticks(0.2, 0.3), {"pipeline": {}}]) is None
  assert bench_pipeline_parallel.details({"speedup_vs_first": {}}) is None  # summaries from before the tails
  caption, header, rows = bench_pipeline_parallel.details({
      "tick_p99_over_median": {"a": tails, "b": None}, "speedup_vs_first": {"b": {"median": 1.1}}})
  assert rows == [["a", "—", tails], ["b", {"median": 1.1}, "—"]] and len(header) == 3
