"""What `auto` chooses per processor class: the table in common/settings/processor_defaults.py (edited by hand) is the
one the committed benchmark summaries give by its rules (`derived_table`); a class without a row takes the nearest
measured class's choice; the rules of the table, on fixture summaries."""

import json
import os
import statistics

import pytest

from common.settings import processor_defaults
from common.settings import programs
from common.training import finetune
from common.measure import provenance
from experiments import records
from experiments.benchmarks import finetune as bench_finetune
from experiments.benchmarks import kernels as bench_kernels
from experiments.benchmarks import limit as bench_limit
from conftest import ROOT

F32, BF16 = programs.PRECISIONS
PP, G = programs.PIPELINE_PARALLEL.name, programs.GREEDY.name


def _by_class(output_dir, benchmark):
  """{class: [summary, ...]} of a benchmark's summaries (those that recorded the CPU flags)."""
  out = {}
  for summary in records.load_summaries(output_dir, benchmark).values():
    isa = provenance.instruction_set(summary.get("provenance", {}).get("cpu_flags"))
    if isa:
      out.setdefault(isa, []).append(summary)
  return out


def _pool_seconds(output_dir, summary, precision):
  """{pool: median over repeats of pretraining + finetuning seconds} of pipeline_parallel in a limit summary."""
  found, out = records.records_of(os.path.join(output_dir, "benchmarks", bench_limit.BENCHMARK.name), summary), {}
  for pool in bench_limit.POOLS:
    rs = found.get(f"pipeline_{pool}_{precision}") or (
        found.get(f"pipeline_{pool}") if summary["setting"].get("precision") == precision else None)
    if rs and all(rs):
      out[pool] = statistics.median(r["pretrain_seconds"] + r["finetune"]["seconds"] for r in rs)
  return out


def _newest_run(output_dir, summary):
  """When the newest run of a limit summary started (its records' `date_utc`; "" when none is dated)."""
  found = records.records_of(os.path.join(output_dir, "benchmarks", bench_limit.BENCHMARK.name), summary)
  return max(((r.get("environment") or {}).get("date_utc") or "" for rs in found.values() for r in rs if r),
             default="")


def derived_table(output_dir):
  """The table the summaries under <output_dir>/benchmarks/ give, each summary's class from its provenance's CPU
  flags: kernels per program and precision, `bench_kernels.choice` over the class's summaries; thread_pool,
  pipeline_parallel's per precision: of the limit benchmark's two pools at batch 100, the one with the shorter median
  pretraining + finetuning seconds (where two summaries of a class measured a precision, the one with the newer runs);
  finetune_placement per precision: the finetune benchmark's choice at batch 100 over every placement on the default
  kernel path (`bench_finetune.sets_the_default`)."""
  rows = {}
  for isa, summaries in _by_class(output_dir, bench_kernels.BENCHMARK.name).items():
    for p in bench_kernels.PROGRAMS:
      for precision in programs.PRECISIONS:
        chosen = bench_kernels.choice(summaries, p.name, precision)
        if chosen:
          rows.setdefault(isa, {}).setdefault("kernels", {}).setdefault(p.name, {})[precision] = chosen
  for isa, summaries in _by_class(output_dir, bench_limit.BENCHMARK.name).items():
    # Oldest first, so that where two summaries of a class measured one precision the newer one's choice stands.
    for summary in sorted((s for s in summaries if s["setting"]["batch_size"] == 100),
                          key=lambda s: _newest_run(output_dir, s)):
      for precision in programs.PRECISIONS:
        seconds = _pool_seconds(output_dir, summary, precision)
        if len(seconds) == 2:
          rows.setdefault(isa, {}).setdefault("thread_pool", {}).setdefault(PP, {})[precision] = min(
              seconds, key=seconds.get)
  for isa, summaries in _by_class(output_dir, bench_finetune.BENCHMARK.name).items():
    for summary in filter(bench_finetune.sets_the_default, summaries):
      for precision, measured in summary["placements"].items():
        rows.setdefault(isa, {}).setdefault("finetune_placement", {})[precision] = measured["choice"]
  return {isa: rows[isa] for isa in processor_defaults.CLASS_ORDER if isa in rows}


def test_the_table_is_the_one_the_committed_summaries_make():
  assert processor_defaults.TABLE == derived_table(os.path.join(ROOT, "results")), (
      "common/settings/processor_defaults.py's TABLE differs from what the committed summaries give: edit it")


def test_a_class_without_a_row_takes_the_nearest_measured_ones_choice(monkeypatch):
  monkeypatch.setattr(processor_defaults, "TABLE", {
      "AMX": {"finetune_placement": {F32: "pipelined", BF16: "one_device"}},
      "AVX2": {"finetune_placement": {F32: "replicas"}, "thread_pool": {PP: {F32: "shared"}}}})
  choice = processor_defaults.choice
  assert choice("finetune_placement", F32, isa="AMX") == ("pipelined", "AMX")
  assert choice("finetune_placement", F32, isa="AVX-512 BF16") == ("pipelined", "AMX")  # 1 step up, 2 down
  assert choice("finetune_placement", F32, isa="AVX-512") == ("replicas", "AVX2")  # 2 steps up, 1 down
  assert choice("finetune_placement", BF16, isa="AVX2") == ("one_device", "AMX")  # the nearest row that has it
  assert choice("thread_pool", F32, PP, isa="older") == ("shared", "AVX2")
  assert choice("thread_pool", BF16, PP, isa="AMX") == (None, None)  # measured nowhere: the program's declared one
  assert choice("kernels", F32, PP, isa=None) == (None, None)
  assert programs.PIPELINE_PARALLEL.default_kernels(F32) == programs.PIPELINE_PARALLEL.kernels[F32]
  assert finetune.auto_placement(F32, "shared", 2, isa="AMX") == "pipelined"
  assert finetune.auto_placement(BF16, "per_device", 2, isa="AMX") == "replicas"  # one device's one thread: replicas
  with pytest.raises(ValueError, match="unknown setting"):
    choice("precision", F32)


def _summary(folder, name, cpu_flags, setting, records=None, **measures):
  os.makedirs(folder, exist_ok=True)
  paths = {}
  for config, found in (records or {}).items():
    paths[config] = []
    for r, record in enumerate(found):
      path = os.path.join(folder, name[:-5], f"{config}_r{r}.json")
      os.makedirs(os.path.dirname(path), exist_ok=True)
      with open(path, "w") as f:
        json.dump(record, f)
      paths[config].append(f"results/benchmarks/{os.path.basename(folder)}/{name[:-5]}/{config}_r{r}.json")
  with open(os.path.join(folder, name), "w") as f:
    json.dump({"provenance": {"cpu_flags": cpu_flags}, "setting": setting, "records": paths, **measures}, f)


def test_the_rules_of_the_table_on_fixture_summaries(tmp_path):
  bf16_epyc, avx2 = ["avx2", "avx512f", "avx512_bf16"], ["avx2"]
  benchmarks = tmp_path / "benchmarks"

  def run(pretrain, fine):
    return {"pretrain_seconds": pretrain, "finetune": {"seconds": fine}}
  # limit, both precisions in one summary: per precision the pool with the shorter pretraining + finetuning.
  _summary(str(benchmarks / "limit"), "summary_b100_avx512_bf16.json", bf16_epyc, {"batch_size": 100}, {
      f"pipeline_per_device_{F32}": [run(10, 5)] * 3, f"pipeline_shared_{F32}": [run(11, 3)] * 3,
      f"pipeline_per_device_{BF16}": [run(6, 3), run(6, 3), run(9, 9)], f"pipeline_shared_{BF16}": [run(7, 3)] * 3})
  # limit, one precision per summary (from before), and another batch (not a row's source).
  _summary(str(benchmarks / "limit"), "summary_b100_float32.json", avx2, {"batch_size": 100, "precision": F32}, {
      "pipeline_per_device": [run(10, 5)] * 2, "pipeline_shared": [run(12, 5)] * 2})
  _summary(str(benchmarks / "limit"), "summary_b1000_float32.json", avx2, {"batch_size": 1000, "precision": F32}, {
      "pipeline_per_device": [run(10, 5)], "pipeline_shared": [run(1, 1)]})

  def dated(pretrain, fine):
    return dict(run(pretrain, fine), environment={"date_utc": "2026-12-06T18:00:00"})
  # limit, a newer summary of a class (its runs dated, the older's not), though its file name sorts first: it stands.
  _summary(str(benchmarks / "limit"), "summary_b100_avx2.json", avx2, {"batch_size": 100}, {
      f"pipeline_per_device_{F32}": [dated(10, 5)] * 3, f"pipeline_shared_{F32}": [dated(9, 5)] * 3})
  # finetune: its fastest placement per precision; kernels: the path faster in every repeat.
  _summary(str(benchmarks / "finetune"), "summary_b100_avx512_bf16.json", bf16_epyc, {"batch_size": 100},
           placements={F32: {"choice": "one_device"}, BF16: {"choice": "pipelined"}})
  _summary(str(benchmarks / "kernels"), "summary_b100.json", bf16_epyc, {"batch_size": 100, "precision": F32},
           programs={G: {"faster": "xla", "all_repeats_agree": True},
                     PP: {"faster": "tf", "all_repeats_agree": False}})
  made = derived_table(str(tmp_path))
  assert made == {
      "AVX-512 BF16": {"kernels": {G: {F32: "xla"}}, "thread_pool": {PP: {F32: "shared", BF16: "per_device"}},
                       "finetune_placement": {F32: "one_device", BF16: "pipelined"}},
      "AVX2": {"thread_pool": {PP: {F32: "shared"}}}}  # the older summary alone would give per_device
  assert list(made) == [c for c in processor_defaults.CLASS_ORDER if c in made]
