"""What the run record says about asynchrony: the staleness of the updates and the functions that ran twice, per
layer and epoch, kept in the checkpointed progress so that a resumed run reports the whole run.

TensorFlow-free (numpy only).
"""

from typing import Any, Dict, List, Optional, Sequence

import numpy as np

QUANTILES = (50, 90, 99)

STALENESS_DEFINITION = (
    "updates by other workers applied between a step's first weight read and its own apply: the version counter "
    "returned by the apply's assign_add (after the weight update), minus 1, minus the counter read before the "
    "step's first weight read; the reads of the layer's three variables are not atomic together (another update "
    "may land between them), nor are the three updates.")
FAULTS_NOTE = (
    "A function whose worker failed is rescheduled by TensorFlow's ClusterCoordinator on another worker and runs "
    "again from its first step: updates its failed run had applied stay applied, so they may have been applied "
    "twice (duplicate_updates, from the version counter, counts them). rescheduled_functions = function starts "
    "counted on the parameter server - functions scheduled (TensorFlow has no public counter): a function put back "
    "before it started is not counted.")


def summarize(staleness: np.ndarray) -> Dict[str, Any]:
  """Statistics of int [n] staleness values: {"updates", "mean", "max", "p50", "p90", "p99", "histogram":
  [[staleness, count], ...] (the values that occur, ascending)}; mean, max and quantiles None when n = 0."""
  values, counts = np.unique(np.asarray(staleness, np.int64), return_counts=True)
  summary: Dict[str, Any] = {"updates": int(counts.sum())}
  empty = values.size == 0
  summary["mean"] = None if empty else float(np.dot(values, counts) / counts.sum())
  summary["max"] = None if empty else int(values[-1])
  for q in QUANTILES:
    summary[f"p{q}"] = None if empty else float(np.percentile(np.repeat(values, counts), q))
  summary["histogram"] = [[int(v), int(c)] for v, c in zip(values, counts)]
  return summary


def merge_histograms(histograms: Sequence[Sequence[Sequence[int]]]) -> np.ndarray:
  """int64 [n]: the staleness values of several `summarize` histograms, expanded and concatenated."""
  parts = [np.repeat(np.asarray([v for v, _ in h], np.int64), [c for _, c in h]) for h in histograms if h]
  return np.concatenate(parts) if parts else np.zeros(0, np.int64)


class EpochLedger:
  """Collects one layer-epoch's staleness values, workers and counters, chunk by chunk.

  Args:
    num_workers: W, for the per-worker function counts.
  """

  def __init__(self, num_workers: int):
    self.num_workers = num_workers
    self.reset((0, 0), 0)

  def reset(self, counters: Sequence[int], scheduled: int) -> None:
    """Starts an epoch: the counters (version, starts) and the functions scheduled so far, now."""
    self._counters0, self._scheduled0 = tuple(counters), scheduled
    self._staleness: List[np.ndarray] = []
    self._workers: List[np.ndarray] = []

  def add(self, staleness: np.ndarray, workers: np.ndarray) -> None:
    """One chunk's staleness values (int [steps]) and the worker of each function (int [functions])."""
    self._staleness.append(np.asarray(staleness, np.int64))
    self._workers.append(np.asarray(workers, np.int64))

  def close(self, layer: int, epoch: int, steps: int, counters: Sequence[int], scheduled: int) -> Dict[str, Any]:
    """The epoch's entry: {"layer", "epoch" (1-based), "staleness": `summarize`, "faults": counts,
    "functions_per_worker"}, given the counters and the functions scheduled at its end."""
    applied, starts = counters[0] - self._counters0[0], counters[1] - self._counters0[1]
    functions = scheduled - self._scheduled0
    workers = np.concatenate(self._workers) if self._workers else np.zeros(0, np.int64)
    return {
        "layer": layer, "epoch": epoch,
        "staleness": summarize(np.concatenate(self._staleness) if self._staleness else np.zeros(0, np.int64)),
        "faults": {"functions_scheduled": functions, "function_starts": starts,
                   "rescheduled_functions": starts - functions, "steps": steps, "updates_applied": applied,
                   "duplicate_updates": applied - steps},
        "functions_per_worker": [int(c) for c in np.bincount(workers, minlength=self.num_workers)],
    }


def record_fields(entries: Sequence[Dict[str, Any]], num_layers: int, staleness_aware_lr: bool,
                  workers_alive: Optional[int]) -> Dict[str, Any]:
  """The record's "staleness" and "faults" fields from every layer-epoch entry of the run (`EpochLedger.close`).

  Returns:
    {"staleness": {"definition", "staleness_aware_lr", "updates", "mean", "max", "p50", "p90", "p99",
      "histogram" (over the whole run), "layers": [{"layer", "epochs": [{"epoch", **summarize}]}]},
     "faults": {"note", totals of every count, "workers_alive_at_end" (None when not checked),
      "layers": [{"layer", "epochs": [{"epoch", **counts, "functions_per_worker"}]}]}}
  """
  by_layer = [[e for e in entries if e["layer"] == i + 1] for i in range(num_layers)]
  overall = summarize(merge_histograms([e["staleness"]["histogram"] for e in entries]))
  staleness = dict({"definition": STALENESS_DEFINITION, "staleness_aware_lr": staleness_aware_lr}, **overall)
  staleness["layers"] = [{"layer": i + 1, "epochs": [dict({"epoch": e["epoch"]}, **e["staleness"]) for e in layer]}
                         for i, layer in enumerate(by_layer)]
  keys = ("functions_scheduled", "function_starts", "rescheduled_functions", "steps", "updates_applied",
          "duplicate_updates")
  faults: Dict[str, Any] = {"note": FAULTS_NOTE}
  faults.update({k: int(sum(e["faults"][k] for e in entries)) for k in keys})
  faults["workers_alive_at_end"] = workers_alive
  faults["layers"] = [{"layer": i + 1, "epochs": [dict({"epoch": e["epoch"]}, **e["faults"],
                                                       functions_per_worker=e["functions_per_worker"])
                                                  for e in layer]} for i, layer in enumerate(by_layer)]
  return {"staleness": staleness, "faults": faults}
