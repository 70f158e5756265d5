"""The machine's limit (`experiments.benchmarks.matmul_rates`, `experiments.benchmarks.limit`): each shape is timed
every way and the fastest counts; no committed configuration measured against that limit exceeds it."""

import glob
import json
import os

import numpy as np
import pytest

from experiments.benchmarks import limit as bench_limit
from experiments.benchmarks import matmul_rates
from experiments.benchmarks import update_floor
from conftest import ROOT


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


def _best_of_summaries():
  """The committed limit summaries whose limit is the fastest of several ways (`matmul_ways`)."""
  paths = sorted(glob.glob(os.path.join(ROOT, "results", "benchmarks", bench_limit.BENCHMARK.name, "summary_*.json")))
  return [(p, s) for p in paths for s in [json.load(open(p))] if "matmul_ways" in s]


@pytest.mark.parametrize("path,summary", _best_of_summaries() or [pytest.param(None, None, marks=pytest.mark.skip(
    reason="no committed limit summary measured with the fastest of several ways yet"))])
def test_no_configuration_outruns_the_limit(path, summary):
  # Every pretraining fraction of a summary whose limit is the fastest way: at most 1 plus its repeats' spread.
  for name, c in summary["configurations"].items():
    f = c["pretrain_fraction_of_limit"]
    assert f["median"] <= 1.0 + (f["max"] - f["min"]), (os.path.basename(path), name, f)


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
