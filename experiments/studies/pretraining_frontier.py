"""The speed-accuracy frontier of the pipeline's schedules (docs/pretraining.md, "Fast and as accurate as greedy"):
greedy, the original pipeline, each schedule setting of pipeline_parallel (`pipeline_parallel.schedule`: cosine
rate, layer warm-up, staggered start, polish) at two or three values, model_parallel and sync_layerwise, with the
tuned recipe, 3 seeds, MNIST and Fashion-MNIST; every run records its input drift and its held-out reconstruction
after every epoch. The staggered starts are also the causal test of the drift: they remove the early drift in steps
(d = E is greedy) and change nothing else but the data order of the upper layers' steps and the time."""

from typing import Any, Dict, List, Mapping, Tuple

from experiments.presets import Study, spec
from experiments.schedules import ARMS
from experiments.report import tables
from experiments.studies.pretraining_sweep import (CPU_ACCURACY, DATASETS, SEEDS, SHORT, SMOKE_ACCURACY, accuracy,
                                                   by_arm, spread_text)

VAL = "validation_accuracy"


def frontier_runs(s: Mapping[str, Any]) -> List:
  """Every arm at sizes `s` ({"hidden", "examples", "epochs", "batch", "devices"}), per seed (outer), per dataset:
  the tuned recipe, held-out reconstruction after every epoch, `s["arms"]` (default all) only."""
  wanted = s.get("arms")
  return [spec(f"{SHORT[d]}_{name}_s{seed}", p, s["hidden"], s["epochs"], s["batch"], s["devices"], s["examples"],
               s["epochs"], settings={"recipe": "tuned", "dataset": d, "heldout_every_epoch": True, **settings},
               seed=seed)
          for seed in s.get("seeds", SEEDS) for d in reversed(s.get("datasets", DATASETS))
          for name, p, settings in ARMS if wanted is None or name in wanted]


def frontier_table(data, others) -> Tuple[str, List[str]]:
  """Per dataset and arm: test and validation accuracy minus greedy's of the same seed (points, mean and min–max
  over the seeds) and the input drift of the top layer in its first and last epochs (mean over the seeds)."""
  found, body = by_arm(data.runs), []
  for d in DATASETS:
    greedy = found.get((SHORT[d], "greedy"), {})
    for name, _, _ in ARMS:
      rs = found.get((SHORT[d], name))
      if not rs:
        continue
      seeds = sorted(s for s in rs if s in greedy)
      diff = lambda key: [100 * (accuracy(rs[s], key) - accuracy(greedy[s], key)) for s in seeds]  # noqa: E731
      drift = [r["input_drift"]["layers"][-1]["epochs"] for r in rs.values() if r.get("input_drift")]
      body.append([d, name, len(rs), spread_text([accuracy(r, VAL) for r in rs.values()]),
                   "—" if name == "greedy" else spread_text(diff(VAL), digits=2),
                   "—" if name == "greedy" else spread_text(diff("test_accuracy"), digits=2),
                   _mean_drift(drift, 0), _mean_drift(drift, -1)])
  return tables.md_table(["dataset", "arm", "seeds", "validation accuracy", "validation: vs greedy (points)",
                          "test: vs greedy (points)", "top layer's drift, first epoch", "last epoch"], body), []


def _mean_drift(per_run: List[List[Dict[str, Any]]], at: int) -> str:
  values = [epochs[at]["distance_to_final"] for epochs in per_run if epochs]
  return f"{sum(values) / len(values):.3f}" if values else "—"


PRETRAINING_FRONTIER = Study(
    "pretraining_frontier", "The pipeline's schedules: accuracy against greedy, and input drift",
    dict(pretraining=dict(CPU_ACCURACY, devices=2),
         smoke=dict(SMOKE_ACCURACY, devices=2, arms=("greedy", "pp", "pp_stagger1"))),
    frontier_runs, frontier_table, kind="own", order=18, timed=False)
STUDIES = (PRETRAINING_FRONTIER,)
