"""The speed-accuracy frontier of the pipeline's schedules (docs/pretraining.md, "Fast and as accurate as greedy"):
greedy, the original pipeline, each schedule setting of pipeline_parallel (`common.pipeline.schedule`: cosine
rate, layer warm-up, staggered start, polish) at two or three values, model_parallel and sync_layerwise, with the
tuned recipe, 3 seeds, MNIST and Fashion-MNIST; every run records its input drift and its held-out reconstruction
after every epoch. The staggered starts are also the causal test of the drift: they remove the early drift in steps
(d = E is greedy) and change nothing else but the data order of the upper layers' steps and the time."""

import os
import statistics
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple

from matplotlib import figure as mpl_figure

from experiments import records
from experiments.records import accuracy
from experiments.presets import Study, spec
from experiments.schedules import ARMS, BASELINE, CHOSEN
from experiments.render import tables
from experiments.sweep import (CPU_ACCURACY, DATASETS, SEEDS, SHORT, SMOKE_ACCURACY, VAL, by_arm, gains,
                               spread_text)

BASE = BASELINE[0]  # greedy's arm


# CHOSEN (experiments.schedules: the arm `choose` picked on the 3 seeds' validation accuracy and the
# pipeline_schedules benchmark's three alternated repeats at batch 100) runs with greedy on CONFIRM_SEEDS: 5 in all.
CONFIRM_SEEDS = (3, 4)


def frontier_runs(s: Mapping[str, Any]) -> List:
  """Every arm at sizes `s` ({"hidden", "examples", "epochs", "batch", "devices"}), per seed (outer), per dataset:
  the tuned recipe, held-out reconstruction after every epoch, `s["arms"]` (default all) only; then greedy and the
  CHOSEN arm on CONFIRM_SEEDS (not where `s` names its arms: the smoke preset)."""
  wanted = s.get("arms")
  seeds = [(seed, [a for a in ARMS if wanted is None or a[0] in wanted]) for seed in s.get("seeds", SEEDS)] + [
      (seed, [a for a in ARMS if a[0] in (BASE, CHOSEN)]) for seed in (CONFIRM_SEEDS if CHOSEN and not wanted else ())]
  return [spec(f"{SHORT[d]}_{name}_s{seed}", p, s["hidden"], s["epochs"], s["batch"], s["devices"], s["examples"],
               s["epochs"], settings={"recipe": "tuned", "dataset": d, "heldout_every_epoch": True, **settings},
               seed=seed)
          for seed, arms in seeds for d in reversed(s.get("datasets", DATASETS)) for name, p, settings in arms]


def frontier_table(data, others) -> Tuple[str, List[str]]:
  """Per dataset and arm: test and validation accuracy minus greedy's of the same seed (points, mean and min–max
  over the seeds) and the input drift of the top layer in its first and last epochs (mean over the seeds)."""
  found, body = by_arm(data.runs), []
  for d in DATASETS:
    greedy = found.get((SHORT[d], BASE), {})
    for name, _, _ in ARMS:
      rs = found.get((SHORT[d], name))
      if not rs:
        continue
      drift = [r["input_drift"]["layers"][-1]["epochs"] for r in rs.values() if r.get("input_drift")]
      body.append([d, name, len(rs), spread_text([accuracy(r, VAL) for r in rs.values()]),
                   "—" if name == BASE else spread_text(gains(rs, greedy, VAL), digits=2),
                   "—" if name == BASE else spread_text(gains(rs, greedy), digits=2),
                   _mean_drift(drift, 0), _mean_drift(drift, -1)])
  speed, machine = _speedups(data.output_dir)
  arm, why = choose(data, speed)
  return tables.md_table(["dataset", "arm", "seeds", "validation accuracy", "validation: vs greedy (points)",
                          "test: vs greedy (points)", "top layer's drift, first epoch", "last epoch"], body), [
      "Validation and test accuracy: mean (min–max) over the seeds; vs greedy: points of the same seed's greedy run. "
      "Drift: the distance of the codes the top layer read to the final codes below it, relative to their spread "
      "over the probe (`input_drift`), mean over the seeds.",
      f"The rule (`choose`, validation only) on these records and the speeds of {machine}: "
      f"`{arm}`, {why}." if speed else "No speed summary of `pipeline_schedules` yet: the rule is not applied.",
      _confirmed(found) if CHOSEN else ""]


def _confirmed(found) -> str:
  """The sentence of the chosen arm on every seed it ran (SEEDS and CONFIRM_SEEDS): its test and validation accuracy
  minus greedy's of the same seeds (points, mean and min–max), per dataset, against the goal (mean >= -TOLERANCE)."""
  parts = []
  for d in DATASETS:
    rs, greedy = found.get((SHORT[d], CHOSEN), {}), found.get((SHORT[d], BASE), {})
    parts.append(f"{records.dataset_label(d)} ({len(set(rs) & set(greedy))} seeds): test "
                 f"{spread_text(gains(rs, greedy), digits=2)}, validation {spread_text(gains(rs, greedy, VAL), digits=2)}")
  return (f"`{CHOSEN}` (the rule's choice) and greedy ran seeds {', '.join(map(str, CONFIRM_SEEDS))} too; over all "
          f"their seeds, `{CHOSEN}` minus greedy: " + "; ".join(parts) + f" (the goal: each mean ≥ −{TOLERANCE}).")


def _mean_drift(per_run: List[List[Dict[str, Any]]], at: int) -> str:
  values = [epochs[at]["distance_to_final"] for epochs in per_run if epochs]
  return f"{sum(values) / len(values):.3f}" if values else "—"


# The arms of the drift figure (Fashion-MNIST, where the pipeline loses), with their colours.
DRIFT_ARMS = ((BASELINE[0], "tab:blue"), ("mp", "tab:orange"), ("pp", "tab:red"), ("pp_cosine", "tab:purple"),
              ("pp_stagger2", "tab:green"), ("pp_warmup1", "tab:brown"))
SPEED_BENCHMARK = "pipeline_schedules"  # the benchmark that times the arms (experiments/benchmarks/)
TOLERANCE = 0.1  # points of validation accuracy below greedy's that the rule of `choose` accepts


def choose(data, speedups: Mapping[str, float]) -> Tuple[Optional[str], str]:
  """The rule, written before it was applied (docs/pretraining.md): among the pipeline arms whose mean validation
  accuracy minus greedy's (same seeds) is >= -TOLERANCE points on both datasets, the fastest by `speedups`
  ({arm: median speedup over greedy at batch 100}); when none is, the arm whose worse dataset's mean difference is
  largest. Only the frontier's seeds (SEEDS) are read, not the confirm runs; test accuracy is not read. Returns (arm
  or None without records, why)."""
  found = {key: {seed: r for seed, r in rs.items() if seed in SEEDS} for key, rs in by_arm(data.runs).items()}
  worst = {}
  for name, _, _ in ARMS:
    if not name.startswith("pp"):
      continue
    diffs = [gains(found.get((SHORT[d], name), {}), found.get((SHORT[d], BASE), {}), VAL) for d in DATASETS]
    if all(diffs):
      worst[name] = min(map(statistics.mean, diffs))
  passing = [a for a, w in worst.items() if w >= -TOLERANCE and a in speedups]
  if passing:
    arm = max(passing, key=lambda a: speedups[a])
    return arm, f"the fastest ({speedups[arm]:.2f}x) of {', '.join(sorted(passing))}, within {TOLERANCE} point"
  if not worst:
    return None, "no records"
  arm = max(worst, key=worst.get)
  return arm, f"no arm within {TOLERANCE} point on both datasets; the best worse-dataset difference ({worst[arm]:+.2f})"


def frontier_figure(data, others) -> mpl_figure.Figure:
  """Rows 1-2: per layer n > 1 (columns), the input drift (distance of the codes read to the final ones) and the
  held-out reconstruction after each of its epochs, mean over the seeds, Fashion-MNIST, for `DRIFT_ARMS`. Row 3: per
  dataset, each arm's mean validation accuracy minus greedy's (points; bars: min-max over the seeds) against its
  speedup over greedy from the benchmark's newest batch-100 summary (greedy at (1, 0)); no row 3 without one."""
  found = by_arm(data.runs)
  speed, machine = _speedups(data.output_dir)
  rows = 3 if speed else 2
  fig = mpl_figure.Figure(figsize=(15, 4.2 * rows))
  axes = fig.subplots(rows, 3, squeeze=False)
  for name, colour in DRIFT_ARMS:
    rs = [r for r in found.get(("fashion", name), {}).values() if r.get("input_drift")
          and records.has_heldout_curves(r) and len(r["layers"]) == len(axes[0]) + 1]
    if not rs:
      continue
    for n, (top, bottom) in enumerate(zip(axes[0], axes[1])):
      drift = [r["input_drift"]["layers"][n]["epochs"] for r in rs]
      _mean_line(top, [[e["distance_to_final"] for e in epochs] for epochs in drift], colour, name)
      _mean_line(bottom, [[e["heldout_loss"] for e in r["layers"][n + 1]["epochs"]] for r in rs], colour, name)
      top.set_title(f"layer {n + 2}: input drift (Fashion-MNIST)", fontsize=10)
      bottom.set_title(f"layer {n + 2}: held-out reconstruction", fontsize=10)
      top.set_ylabel("distance of the codes read to the final codes")
      bottom.set_ylabel("nats per image")
  for ax in list(axes[0]) + list(axes[1]):
    ax.set_xlabel("epoch of the layer")
    if ax.get_legend_handles_labels()[0]:
      ax.legend(fontsize=7)
  if speed:
    for ax, d in zip(axes[2], DATASETS):
      greedy = found.get((SHORT[d], BASE), {})
      ax.plot([1.0], [0.0], "o", color="tab:blue")
      ax.annotate(BASE, (1.0, 0.0), fontsize=7)
      for name in speed:
        rs = found.get((SHORT[d], name), {})
        diffs = gains(rs, greedy, VAL)
        if diffs:
          mean = statistics.mean(diffs)
          ax.errorbar([speed[name]], [mean], yerr=[[mean - min(diffs)], [max(diffs) - mean]], fmt="o", color="0.3",
                      capsize=3)
          ax.annotate(name, (speed[name], mean), fontsize=7, xytext=(4, 2), textcoords="offset points")
      ax.axhline(-TOLERANCE, linestyle=":", color="0.6")
      ax.set_title(f"{records.dataset_label(d)}: validation accuracy against speed", fontsize=10)
      ax.set_xlabel("pretraining speedup over greedy (batch 100, 2 devices)")
      ax.set_ylabel("validation accuracy minus greedy's (points)")
    axes[2][2].axis("off")
  fig.suptitle("The pipeline's schedules: input drift, held-out reconstruction, accuracy against speed", fontsize=12)
  fig.text(0.01, 0.005, f"accuracy: {records.machine_label(list(data.runs.values()))}; speed: "
           f"{machine}", fontsize=7, family="monospace")
  fig.tight_layout(rect=(0, 0.02, 1, 0.97))
  return fig


def _mean_line(ax, series: Sequence[Sequence[float]], colour: str, label: str) -> None:
  n = min(len(s) for s in series)
  ax.plot(range(1, n + 1), [statistics.mean(s[i] for s in series) for i in range(n)], "o-", color=colour,
          label=label, markersize=3)


def _speedups(output_dir: str) -> Tuple[Dict[str, float], str]:
  """({arm: median speedup over greedy}, its machine label) of the batch-100 summary of `SPEED_BENCHMARK` with the most
  repeats; ({}, "—") without one."""
  found = [s for s in records.load_summaries(output_dir, SPEED_BENCHMARK).values() if s["setting"]["batch_size"] == 100]
  if not found:
    return {}, "—"
  summary = max(found, key=lambda s: s["setting"]["repeats"])
  rs = records.flat_records(os.path.join(output_dir, "benchmarks", SPEED_BENCHMARK), summary)
  return ({arm: spread["median"] for arm, spread in summary["speedup_vs_greedy"].items()},
          records.machine_label([r for r in rs if r]))


STUDIES = (Study(
    "pretraining_frontier", "The pipeline's schedules: accuracy against greedy, and input drift",
    dict(pretraining=dict(CPU_ACCURACY, devices=2),
         smoke=dict(SMOKE_ACCURACY, devices=2, arms=(BASELINE[0], "pp", "pp_stagger1"))),
    frontier_runs, frontier_table, frontier_figure, kind="own", order=18, timed=False),)
