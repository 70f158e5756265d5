"""The machine's limit (`experiments.benchmarks.matmul_rates`, `experiments.benchmarks.limit`): each shape is timed
every way and the fastest counts; no committed configuration measured against that limit exceeds it."""

import glob
import json
import os

import pytest

from experiments.benchmarks import limit as bench_limit
from experiments.benchmarks import matmul_rates
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
