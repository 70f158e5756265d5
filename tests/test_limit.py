"""The machine's limit (`experiments.benchmarks.matmul_rates`, `experiments.benchmarks.limit`): each shape is timed
every way and the fastest counts; the limit benchmark's summary computes every fraction of the limit exactly from
its records, and every committed summary's fractions are those its own records give."""

import glob
import json
import os
import statistics

import numpy as np
import pytest

from common.measure import cost
from common.measure import timing
from common.settings import programs
from experiments import harness
from experiments import records
from experiments.benchmarks import limit as bench_limit
from experiments.benchmarks import matmul_rates
from experiments.benchmarks import update_floor
from conftest import ROOT, run_module


def test_every_shape_is_timed_every_way_and_the_fastest_counts():
  hidden, batch = (24,), 8
  rates = matmul_rates.rates(hidden, batch, iterations=2, repeats=1)
  assert set(rates) == {"float32", "mixed_bfloat16"}
  for r in rates.values():
    assert r["ways"] == list(matmul_rates.WAYS)
    assert [(s["m"], s["k"], s["n"], s["transpose_a"], s["transpose_b"]) for s in r["shapes"]] == list(
        dict.fromkeys(matmul_rates.shapes(hidden, batch)))
    for s in r["shapes"]:
      assert set(s["ways"]) == set(matmul_rates.WAYS) and all(g > 0 for g in s["ways"].values())
      assert s["fastest"] == max(s["ways"], key=s["ways"].get) and s["gflops_per_second"] == s["ways"][s["fastest"]]
    # The step's rate: its FLOPs over the sum of each product's seconds at its shape's fastest way.
    rate = {(s["m"], s["k"], s["n"], s["transpose_a"], s["transpose_b"]): s["gflops_per_second"] for s in r["shapes"]}
    step = matmul_rates.shapes(hidden, batch)
    flops = [2.0 * m * k * n / 1e9 for m, k, n, _, _ in step]
    assert r["gflops_per_second"] == pytest.approx(sum(flops) / sum(f / rate[shape] for f, shape in zip(flops, step)))
  assert [s["fastest"] for s in matmul_rates.rates(hidden, batch, 1, 1, ways=["xla"])["float32"]["shapes"]] == [
      "xla"] * len(rates["float32"]["shapes"])
  with pytest.raises(ValueError, match="choose among"):
    matmul_rates.rates(hidden, batch, ways=["blas"])


F32, BF16 = programs.PRECISIONS
# The fixture records of `test_the_summary_computes_every_fraction_from_the_records`: one layer of 32 units, 400
# examples at batch 100 (4 steps an epoch), 2 pretraining epochs and 1 finetuning epoch. Their FLOPs, by hand: a
# pretraining epoch is 5 products of 784 x 32 per example (greedy's and the pipeline's alike: one layer, no layer
# below, none above); finetuning 3 products per layer and example, 784 x 32 then 32 x 10.
PRETRAIN_FLOPS = 2 * 400 * 5 * 2 * 784 * 32
FINETUNE_FLOPS = 3 * 400 * 2 * (784 * 32 + 32 * 10)
RATES = {F32: 1e-3, BF16: 2e-3}  # one core's matrix-product rate, GFLOP/s
FLOOR = {F32: 0.01, BF16: 0.1}  # one core's seconds per step in the passes over the kernel
# The fractions of the limit the records are made to reach, per repeat (in order), by configuration base name.
PRETRAIN_FRACTIONS = {"greedy_1core": [0.5, 0.8, 0.25], "pipeline_per_device": [0.3, 0.2, 0.4],
                      "pipeline_shared": [0.6, 0.45, 0.1], programs.MODEL_PARALLEL.name: [0.2, 0.7, 0.35]}
FINETUNE_FRACTIONS = {"greedy_1core": [0.4, 0.2, 0.6], "pipeline_per_device": [0.5, 0.1, 0.3],
                      "pipeline_shared": [0.25, 0.75, 0.5], programs.MODEL_PARALLEL.name: [0.9, 0.6, 0.3]}


def _assert_spread(got, want, what):
  """`got` is the spread of `want` (values in order), to float rounding."""
  assert got["values"] == pytest.approx(want, rel=1e-12, abs=0), what
  assert [got["min"], got["median"], got["max"]] == pytest.approx(
      [min(want), statistics.median(want), max(want)], rel=1e-12, abs=0), what


def test_two_streams_run_every_shape_at_once_each_on_its_own_thread(monkeypatch):
  """`stream_rates`: each shape's loops of the streams, released together on threads of their own; the rate is the
  streams' FLOPs over the wall from the first start to the last end (here each loop "takes" a made-up span)."""
  hidden, batch = (24,), 8
  spans = iter([(0.0, 1.0), (0.5, 2.0)] * 8)  # per call of _together: two streams from 0 to 2 s
  calls = []

  def together(loops):
    calls.append(len(loops))
    for loop in loops:
      loop().numpy()  # the loops run for real
    return max(e for _, e in [next(spans), next(spans)])
  monkeypatch.setattr(matmul_rates, "_together", together)
  rates = matmul_rates.stream_rates(hidden, batch, streams=2, iterations=2, repeats=1, precisions=["float32"])
  shapes = matmul_rates.shapes(hidden, batch)
  flops = sum(2.0 * 2 * m * k * n * 2 for m, k, n, _, _ in shapes)  # 2 streams x 2 iterations per shape
  assert calls == [2] * len(set(shapes))
  assert rates["float32"]["gflops_per_second"] == pytest.approx(flops / (2.0 * len(shapes)) / 1e9)
  assert rates["float32"]["streams"] == 2


def test_the_streams_run_at_once():
  """`_together` runs its loops at the same time: the first returns only once the second has started."""
  import threading
  started = threading.Event()

  class Done:
    def numpy(self):
      return 0

  def first():
    assert started.wait(timeout=600), "the second stream never started while the first ran"
    return Done()

  def second():
    started.set()
    return Done()
  assert matmul_rates._together([first, second]) >= 0  # pylint: disable=protected-access


def test_the_summary_computes_every_fraction_from_the_records(monkeypatch):
  """`limit.summarize` on fixture records whose seconds are made so that each repeat reaches known fractions of the
  limit: the fractions, cores (devices x threads, at most the usable cores), ceilings and speedups come out exactly,
  repeat by repeat."""
  s = harness.Setting((32,), 100, 2, 400, 2, 3, {"precisions": [F32, BF16], "finetune_epochs": 1})
  runs = bench_limit.configurations(s)
  assert [r.name for r in runs] == [f"{n}_{p}" for p in (F32, BF16) for n in bench_limit.BASES]
  cores = {n: 1 if n == bench_limit.BASES[0] else 3 for n in bench_limit.BASES}  # 2 devices x 2 threads, 3 usable
  found = {}
  for p in (F32, BF16):
    for n, r in zip(bench_limit.BASES, [r for r in runs if r.name.endswith(p)]):
      limit = cores[n] * RATES[p] * 1e9
      found[r.name] = [{
          "strategy": r.program, "layers": [{"epochs": [{}, {}]}], "pretrain_seconds": PRETRAIN_FLOPS / (f * limit),
          "config": {"hidden_units": [32], "train_examples": 400, "batch_size": 100, "precision": p,
                     "num_devices": 1 if cores[n] == 1 else 2, "threads_per_device": 1 if cores[n] == 1 else 2},
          "environment": {"usable_cores": 3},
          "finetune": {"seconds": FINETUNE_FLOPS / (g * limit), "epochs": 1, "placement": "replicas"}}
          for f, g in zip(PRETRAIN_FRACTIONS[n], FINETUNE_FRACTIONS[n])]
  assert {harness.flops(r) for rs in found.values() for r in rs} == {PRETRAIN_FLOPS}
  monkeypatch.setattr(harness, "matmul_rates", lambda _: {p: {"gflops_per_second": g, "ways": ["tf"]}
                                                          for p, g in RATES.items()})
  monkeypatch.setattr(harness, "update_floor", lambda _: {p: {"seconds_per_step": t, "layers": [{"seconds": t}]}
                                                          for p, t in FLOOR.items()})
  # Two streams at once reach 1.5 times one core's rate: the limit as the machine runs, on two cores.
  monkeypatch.setattr(harness, "two_stream_rates", lambda _: {p: {"threads": 1.5 * g, "processes": 1.2 * g,
                                                                  "gflops_per_second": 1.5 * g}
                                                              for p, g in RATES.items()})
  summary = bench_limit.summarize(s, found)
  for name in found:  # the running limit: one core's rate on one core; on these 3 cores none was measured
    c = summary["configurations"][name]
    if c["cores"] == 1:
      assert c["pretrain_fraction_of_running_limit"] == c["pretrain_fraction_of_limit"]
    else:
      assert c["cores"] == 3 and c["pretrain_fraction_of_running_limit"] is None
  assert summary["matmul_gflops_per_second_one_core"] == RATES and list(summary["configurations"]) == list(found)
  for p in (F32, BF16):
    # The limit's seconds of the products, and the passes over the kernel: 2 epochs of 4 steps.
    products, passes = PRETRAIN_FLOPS / (RATES[p] * 1e9), 2 * 4 * FLOOR[p]
    ceiling = products / (products + passes)
    for n in bench_limit.BASES:
      name, c = f"{n}_{p}", summary["configurations"][f"{n}_{p}"]
      pre, fine = PRETRAIN_FRACTIONS[n], FINETUNE_FRACTIONS[n]
      assert c["precision"] == p and c["cores"] == cores[n], (name, c)
      _assert_spread(c["pretrain_fraction_of_limit"], pre, name)
      _assert_spread(c["pretrain_gflops_per_second"], [f * cores[n] * RATES[p] for f in pre], name)
      _assert_spread(c["pretrain_ceiling_of_limit"], [ceiling] * 3, name)
      _assert_spread(c["pretrain_fraction_of_ceiling"], [f / ceiling for f in pre], name)
      _assert_spread(c["finetune_fraction_of_limit"], fine, name)
      _assert_spread(c["finetune_gflops_per_second"], [g * cores[n] * RATES[p] for g in fine], name)
      # One core's finetuning seconds over this configuration's, repeat by repeat.
      one = [FINETUNE_FLOPS / (g * RATES[p] * 1e9) for g in FINETUNE_FRACTIONS["greedy_1core"]]
      _assert_spread(c["finetune_speedup_vs_one_core"],
                     [a / (FINETUNE_FLOPS / (g * cores[n] * RATES[p] * 1e9)) for a, g in zip(one, fine)], name)
    # The pipeline's pool of the higher median fraction (shared: 0.45 > 0.3), and of the higher finetuning speedup.
    assert summary[f"pipeline_fraction_{p}"]["pool"] == "shared"
    _assert_spread(summary[f"pipeline_fraction_{p}"], PRETRAIN_FRACTIONS["pipeline_shared"], p)
    assert summary[f"pipeline_ceiling_{p}"] == summary["configurations"][f"pipeline_shared_{p}"][
        "pretrain_ceiling_of_limit"]
    speedups = {pool: summary["configurations"][f"pipeline_{pool}_{p}"]["finetune_speedup_vs_one_core"]["median"]
                for pool in bench_limit.POOLS}
    assert summary[f"finetune_speedup_{p}"]["pool"] == max(speedups, key=speedups.get)
    _assert_spread(summary[f"model_parallel_fraction_{p}"], PRETRAIN_FRACTIONS[programs.MODEL_PARALLEL.name], p)
  # One core's float32 finetuning seconds over its bfloat16 ones (bfloat16's limit is twice float32's).
  _assert_spread(summary["bf16_over_f32_finetune_one_core"],
                 [(1 / (g * RATES[F32])) / (1 / (g * RATES[BF16])) for g in FINETUNE_FRACTIONS["greedy_1core"]],
                 "bf16_over_f32")


def _committed_summaries():
  """(file name, summary) of every committed limit summary."""
  paths = sorted(glob.glob(os.path.join(ROOT, "results", "benchmarks", bench_limit.BENCHMARK.name, "summary_*.json")))
  return [(os.path.basename(p), json.load(open(p))) for p in paths]


@pytest.mark.parametrize("name,summary", _committed_summaries() or [pytest.param(None, None, marks=pytest.mark.skip(
    reason="no committed limit summary"))])
def test_each_committed_fraction_is_recomputed_from_its_own_records(name, summary):
  """Every fraction of the limit in a committed summary (pretraining and finetuning; the ceilings where it measured
  them; the per-precision figures taken from them) equals, repeat by repeat, what its own records' seconds give at
  its own measured rates: the summary is what its records say, not edited, and the FLOPs the fractions count are the
  ones `harness.flops` and `cost` count today."""
  rates = summary["matmul_gflops_per_second_one_core"]
  assert set(summary["configurations"]) == set(summary["records"]), name
  for config_name, c in summary["configurations"].items():
    rs = [records.load(os.path.join(ROOT, path)) for path in summary["records"][config_name]]
    what = (name, config_name)
    assert rs and None not in rs, (what, summary["records"][config_name])  # every record it names is committed
    p = c.get("precision", summary.get("precision"))
    assert {r["config"]["precision"] for r in rs} == {p}, what
    rate = (rates[p] if isinstance(rates, dict) else rates) * 1e9
    cores = min(rs[0]["config"]["num_devices"] * rs[0]["config"]["threads_per_device"],
                rs[0]["environment"]["usable_cores"])
    assert c["cores"] == cores, what
    pre = [harness.flops(r) / r["pretrain_seconds"] / (cores * rate) for r in rs]
    _assert_spread(c["pretrain_fraction_of_limit"], pre, what)
    _assert_spread(c["finetune_fraction_of_limit"], [
        cost.finetune_epoch_flops(r["config"]["hidden_units"], r["config"]["train_examples"]) * r["finetune"]["epochs"]
        / r["finetune"]["seconds"] / (cores * rate) for r in rs], what)
    if "two_streams" in summary:  # the limit as the machine runs: one core's rate, or two streams' on two cores
      running = {1: rate, 2: summary["two_streams"][p]["gflops_per_second"] * 1e9}.get(cores)
      if running is None:
        assert c["pretrain_fraction_of_running_limit"] is None, what
      else:
        _assert_spread(c["pretrain_fraction_of_running_limit"],
                       [harness.flops(r) / r["pretrain_seconds"] / running for r in rs], what)
    if "update_floor" in summary:
      products = [harness.flops(r) / rate for r in rs]
      ceiling = [x / (x + harness.floor_seconds(r, summary["update_floor"][p])) for x, r in zip(products, rs)]
      _assert_spread(c["pretrain_ceiling_of_limit"], ceiling, what)
      _assert_spread(c["pretrain_fraction_of_ceiling"], [f / y for f, y in zip(pre, ceiling)], what)
  for key, value in summary.items():  # the per-precision figures: a configuration's, as it is
    if key.startswith(("pipeline_fraction_", "pipeline_ceiling_", "model_parallel_fraction_")):
      p = next(q for q in programs.PRECISIONS if key.endswith(q))
      measure = ("pretrain_ceiling_of_limit" if "ceiling" in key else "pretrain_fraction_of_running_limit"
                 if "running" in key else "pretrain_fraction_of_limit")
      source = (f"pipeline_{value['pool']}_{p}" if "pool" in value else f"model_parallel_{p}" if
                key.startswith(programs.MODEL_PARALLEL.name) else None)
      if source is None:  # the ceiling: of the pool of the higher pretraining fraction
        source = f"pipeline_{summary[f'pipeline_fraction_{p}']['pool']}_{p}"
      assert {k: v for k, v in value.items() if k != "pool"} == summary["configurations"][source][measure], (name, key)
    elif key.startswith("fraction_"):  # one precision per summary, from before
      assert value == summary["configurations"][key[len("fraction_"):]]["pretrain_fraction_of_limit"], (name, key)


def test_only_the_precisions_asked_are_timed():
  rates = matmul_rates.rates((24,), 8, iterations=1, repeats=1, ways=["tf"], precisions=["float32"])
  assert list(rates) == ["float32"] and rates["float32"]["ways"] == ["tf"]
  with pytest.raises(ValueError, match="choose among"):
    matmul_rates.rates((24,), 8, precisions=["float16"])


def test_every_layers_passes_over_its_kernel_are_timed_every_way_and_the_fastest_counts():
  hidden = (24, 16)
  found = update_floor.floors(hidden, iterations=2, repeats=1)
  assert set(found) == {"float32", "mixed_bfloat16"}
  for precision, f in found.items():
    assert f["ways"] == list(update_floor.WAYS) and f["working_set_mb"] == update_floor.WORKING_SET_MB
    assert [(l["input_units"], l["hidden_units"]) for l in f["layers"]] == [(784, 24), (24, 16)]
    for layer in f["layers"]:
      assert layer["copies"] == update_floor.copies(layer["input_units"], layer["hidden_units"], precision)
      assert set(layer["ways"]) == set(update_floor.WAYS) and all(t > 0 for t in layer["ways"].values())
      assert layer["fastest"] == min(layer["ways"], key=layer["ways"].get)
      assert layer["seconds"] == layer["ways"][layer["fastest"]]
    assert f["seconds_per_step"] == pytest.approx(sum(l["seconds"] for l in f["layers"]))
  with pytest.raises(ValueError, match="choose among"):
    update_floor.floors(hidden, ways=["eigen"])
  with pytest.raises(ValueError, match="choose among"):
    update_floor.floors(hidden, precisions=["float16"])


def test_the_kernel_copies_stream_at_least_the_working_set_and_at_most_max_copies():
  # 2000 x 2000: float32 kernel + float32 gradient 32 MB, + bfloat16 gradient 24 MB.
  assert update_floor.copies(2000, 2000, "float32", 128) == 4
  assert update_floor.copies(2000, 2000, "mixed_bfloat16", 128) == 6  # 5 x 24 MB = 120 MB < 128
  assert update_floor.copies(2000, 2000, "float32", 1) == 1
  assert update_floor.copies(24, 16, "float32", 128) == update_floor.MAX_COPIES


@pytest.mark.parametrize("precision", ["float32", "mixed_bfloat16"])
def test_each_way_makes_the_same_update(precision):
  # The ways time the same passes: from one kernel and gradient, 3 steps of each leave the kernel that 3 SGD updates,
  # kernel - rate x gradient, make (within float32 rounding: XLA may fuse the multiply and the subtraction into one
  # rounding, as the programs' --kernels=xla path does).
  import tensorflow as tf
  start = tf.random.stateless_uniform([30, 20], (1, 2))
  gradient = tf.random.stateless_uniform([30, 20], (3, 4))
  gradient = tf.cast(gradient, tf.bfloat16) if precision == "mixed_bfloat16" else gradient
  expected = start.numpy()
  for _ in range(3):
    expected = expected - np.float32(1e-3) * tf.cast(gradient, tf.float32).numpy()
  for way in update_floor.WAYS:
    kernel = tf.Variable(start)
    update_floor._loop(way, precision, [kernel], [gradient], 3)().numpy()
    np.testing.assert_allclose(kernel.numpy(), expected, rtol=1e-6, atol=1e-9, err_msg=way)
    assert np.abs(kernel.numpy() - start.numpy()).max() > 1e-4  # the updates happened


def test_the_account_splits_the_seconds_beyond_the_limit_exactly():
  """`limit.account`: wall - limit = interference + computing + tails + idle, each from the records: the limit's
  seconds at twice one core's rate, interference from greedy beside a copy of itself against greedy alone (same
  repeat), tails the full ticks beyond their median, idle the rest of the stages' mean idle time."""
  s = harness.Setting((32,), 100, 2, 400, 2, 2, {"precisions": [F32], "finetune_epochs": 1, "account": 1})
  runs = bench_limit.configurations(s)
  beside = [r for r in runs if r.name == f"{bench_limit.PAIR}_{F32}"]
  assert len(beside) == 1 and beside[0].launcher == ("experiments.beside",) and beside[0].config.num_devices == 1
  pipe = next(r for r in runs if r.name == f"pipeline_shared_{F32}")
  record = {"strategy": pipe.program, "config": dict(pipe.config.to_dict(), train_examples=400, batch_size=100),
            "layers": [{"epochs": [{}, {}]}], "pretrain_seconds": 10.0,
            "pipeline": {"busy_seconds": [7.0, 5.0], "tick_seconds": timing.tail_summary([1.0] * 6 + [2.0, 3.0])}}
  rate = harness.flops(record) / 8.0  # one core's FLOP/s: the limit (two cores) takes 4 s
  got = bench_limit.account([record], [{"pretrain_seconds": 4.0}], [{"pretrain_seconds": 5.0}], rate)
  median = {k: v["seconds"]["median"] for k, v in got.items()}
  assert median["limit"] == pytest.approx(4.0) and median["wall"] == 10.0
  assert median["interference"] == pytest.approx(0.25 * 4.0)  # beside a copy: 25% slower
  assert median["computing"] == pytest.approx(6.0 - 4.0 - 1.0)  # mean busy 6 s
  assert median["tails"] == pytest.approx(3.0)  # 8 ticks, mean 1.375 s, median 1 s
  assert median["idle"] == pytest.approx(10.0 - 6.0 - 3.0)
  assert sum(median[k] for k in bench_limit.ACCOUNT) == pytest.approx(median["wall"] - median["limit"])
  assert got["tails"]["fraction_of_wall"]["median"] == pytest.approx(0.3)
  no_clock = dict(record, pipeline={"busy_seconds": None, "tick_seconds": None})
  assert bench_limit.account([no_clock], [{"pretrain_seconds": 4.0}], [{"pretrain_seconds": 5.0}], rate) == {}


def test_beside_runs_the_program_with_a_quiet_copy_and_keeps_its_exit_status(tmp_path):
  """`python -m experiments.beside <module> <flags>`: the program's record and exit status; the copy beside it writes
  nothing and is gone when the program ends."""
  flags = ["--hidden_units=8", "--pretrain_epochs=1", "--finetune_epochs=0", "--train_examples=200", "--batch_size=50",
           "--nopictures", "--progress=log", f"--results_dir={tmp_path}", "--run_name=main"]
  proc = run_module("experiments.beside", programs.GREEDY.module, *flags)
  assert proc.returncode == 0, proc.stderr[-3000:]
  assert sorted(p.name for p in tmp_path.iterdir()) == ["main.json"]
  refused = run_module("experiments.beside", programs.GREEDY.module, "--batch_size=0", "--results_dir=")
  assert refused.returncode == 1 and "--batch_size" in refused.stderr


def _account_summary(flags, batch_size, fractions):
  """A fixture limit summary with an account per precision of `fractions` ({precision: {part: [per repeat]}})."""
  return {"provenance": {"cpu_model": "Intel(R) Xeon(R) Processor", "cpu_flags": flags, "machine_id": "abcdef123456",
                         "commit": "0123456789abcdef"},
          "setting": {"batch_size": batch_size, "hidden_units": [2000, 2000], "train_examples": 400,
                      "pretrain_epochs": 2, "repeats": 3},
          "precisions": list(fractions),
          **{f"account_{p}": {k: {"fraction_of_wall": harness.spread(v), "seconds": harness.spread(v)}
                              for k, v in parts.items()} for p, parts in fractions.items()}}


def test_the_account_figure_draws_each_part_of_each_summary_with_an_account_at_its_median():
  """`limit.figure`: a panel per summary with an account (by class, then batch), per precision a bar per part at the
  repeats' median with the least-to-most range; summaries without an account are left out; None when none has one."""
  parts = [k for k, _ in bench_limit.PARTS]
  f32 = {k: [0.1 * (i + 1), 0.1 * (i + 1) + 0.02, 0.1 * (i + 1) - 0.01] for i, k in enumerate(parts)}
  f32["computing"] = [-0.05, -0.02, 0.01]  # a part may be negative (the stages beat greedy's interference)
  bf16 = {k: [0.2, 0.21, 0.19] for k in parts}
  summaries = {"summary_b100_amx.json": _account_summary(["avx2", "amx_bf16"], 100, {F32: f32, BF16: bf16}),
               "summary_b1000_avx2.json": _account_summary(["avx2"], 1000, {F32: f32}),
               "summary_b100_float32.json": {"provenance": {}, "setting": {"batch_size": 100}, "precision": F32}}
  assert bench_limit.figure({"old.json": summaries["summary_b100_float32.json"]}) is None
  fig = bench_limit.figure(summaries)
  axes = [ax for ax in fig.axes if ax.get_visible()]
  assert len(axes) == 2  # AMX before AVX2; the summary without an account has no panel
  assert "AMX" in axes[0].get_title() and "batch 100" in axes[0].get_title() and "machine abcdef" in axes[0].get_title()
  assert "AVX2" in axes[1].get_title() and "batch 1000" in axes[1].get_title()
  heights = [[round(p.get_height(), 6) for p in ax.patches] for ax in axes]
  assert heights[0] == [round(statistics.median(f32[k]), 6) for k in parts] + [0.2] * len(parts)
  assert heights[1] == [round(statistics.median(f32[k]), 6) for k in parts]
  assert [t.get_text() for t in axes[0].get_legend().get_texts()] == ["float32", "bfloat16"]
