"""Does pretraining help? Greedy without it, with the report's recipe, the tuned one; 3 seeds, MNIST, Fashion-MNIST."""

import dataclasses
import os
from typing import List, Optional, Tuple

from common.settings import programs
from experiments import records, sweep
from experiments.records import accuracy
from experiments.presets import Headline, Study, Run, spec
from experiments.render import figures, tables
from experiments.sweep import CPU_ACCURACY, DATASETS, SEEDS, SHORT, SMOKE_ACCURACY, VAL, by_arm, spread_text

# The ablation's arms: greedy with no pretraining, the report's recipe and the tuned one (their settings).
ABLATION_ARMS = (("none", {"recipe": "tuned", "pretrain_epochs": 0}), ("report", {"recipe": "report"}),
                 ("tuned", {"recipe": "tuned"}))
GOAL_POINTS = 1.0  # the tuned recipe's pretraining should beat no pretraining by this many points on both datasets
ARM_LABELS = {"none": "no pretraining (tuned recipe, 0 pretraining epochs)", "report": "report's recipe",
              "tuned": "tuned recipe", "none_own": "no pretraining, its own best finetuning rate (sweep)"}


def ablation_runs(s: dict) -> list:
  """The ablation's runs at sizes `s`: per dataset, arm and seed (s["seeds"]) a greedy run, seed 0's drawing filters."""
  return [spec(f"{SHORT[d]}_{arm}_s{seed}", programs.GREEDY, s["hidden"], s["epochs"], s["batch"], 1, s["examples"],
               s["epochs"], settings={**settings, "dataset": d, "pictures": seed == 0}, seed=seed)
          for d in s.get("datasets", DATASETS) for arm, settings in ABLATION_ARMS for seed in s.get("seeds", SEEDS)]


def ablation_table(data, others) -> Tuple[str, List[str]]:
  """Per dataset and arm: test and validation accuracy (mean, min–max over the seeds), held-out reconstruction per
  layer (mean), the finetuning rate; and the tuned recipe's gain over no pretraining against the goal."""
  arms, body, sentences = by_arm(data.runs), [], []
  for d in DATASETS:
    for arm in (a for a in ARM_LABELS if arms.get((SHORT[d], a))):
      rs = [r for _, r in sorted(arms[(SHORT[d], arm)].items())]  # by seed
      body.append([records.dataset_label(d), ARM_LABELS[arm], spread_text([accuracy(r) for r in rs]),
                   spread_text([accuracy(r, VAL) for r in rs]), " / ".join(f"{x:.0f}" for x in sweep.heldout_means(rs)),
                   f"{rs[0]['config']['finetune_learning_rate']:g}", len(rs)])
    none, own = gain(arms, d, "none"), gain(arms, d, "none_own")
    if none:
      sentences.append(
          f"{records.dataset_label(d)}: the tuned recipe's pretraining adds {none[0]:+.2f} points of test accuracy "
          f"over no pretraining with the same finetuning (per seed {none[1]:+.2f} to {none[2]:+.2f}; goal ≥ "
          f"+{GOAL_POINTS:g}: " + ("met" if none[1] >= GOAL_POINTS else "met on average, not by every seed"
                                  if none[0] >= GOAL_POINTS else "missed") + ")" + (
              f", and {own[0]:+.2f} ({own[1]:+.2f} to {own[2]:+.2f}) over no pretraining at its own best finetuning "
              "rate, the fairer baseline (the tuned rate is too large for a network finetuned from its initial "
              "weights)." if own else "."))
  one = next(iter(data.runs.values()))["config"]
  sentences.append(f"Greedy, {len(one['hidden_units'])} x {one['hidden_units'][0]} units, {one['train_examples']:,} "
                   f"images, {one['finetune_epochs']} + {one['finetune_epochs']} epochs (none: 0 + "
                   f"{one['finetune_epochs']}), batch {one['batch_size']}; held-out reconstruction: test images "
                   "through the stack below, fixed masks (of untrained layers without pretraining). The last arm is "
                   "the sweep's confirm-round records of its best candidate without pretraining.")
  return tables.md_table(["dataset", "recipe", "test accuracy", "validation accuracy",
                          "held-out reconstruction per layer", "finetuning rate", "seeds"], body), sentences


def gain(arms: dict, dataset: str, baseline: str) -> Optional[Tuple[float, float, float]]:
  """(mean, min, max) over common seeds of the tuned arm's test accuracy minus the `baseline` arm's, points, or None."""
  gains = sweep.gains(arms.get((SHORT[dataset], "tuned"), {}), arms.get((SHORT[dataset], baseline), {}))
  return (sum(gains) / len(gains), min(gains), max(gains)) if gains else None


def ablation_figure(data, others=None):
  """The first layer's filters of seed 0 under each arm side by side, a row per dataset (the runs' own pictures)."""
  from matplotlib import image as mpl_image  # noqa: only to draw
  arms = by_arm(data.runs)
  shown = [d for d in DATASETS if any((SHORT[d], a) in arms for a in ARM_LABELS)]
  columns = ["none", "report", "tuned"]
  fig = figures.mpl_figure.Figure(figsize=(4.2 * len(columns), 4.4 * len(shown)))
  axes = fig.subplots(len(shown), len(columns), squeeze=False)
  for i, d in enumerate(shown):
    for j, arm in enumerate(columns):
      ax, r = axes[i][j], arms.get((SHORT[d], arm), {}).get(0)
      ax.set_axis_off()
      path = None if r is None else os.path.join(data.output_dir, "runs", data.study,  # beside the record
                                                 f"{r['config']['run_name']}_filters.png")
      if path and os.path.exists(path):
        ax.imshow(mpl_image.imread(path))
      else:
        ax.text(0.5, 0.5, "no picture", ha="center", va="center")
      ax.set_title(f"{records.dataset_label(d)}: {ARM_LABELS[arm].split(' (')[0]}", fontsize=10)
  fig.suptitle("The first layer's filters (seed 0)", fontsize=12)
  fig.tight_layout(rect=(0, 0, 1, 0.95))
  return fig


def _none_own(s, found) -> List[Run]:
  """Second round: the sweep's confirm runs of its best candidate without pretraining (shared), once `found` has it."""
  runs = sweep.confirm_runs(dict(sweep.SIZES[s["preset"]], preset=s["preset"]), found)
  return [dataclasses.replace(r, name=f"{r.name.split('_')[1]}_none_own_s{r.config.seed}", may_fail=False)
          for r in runs if r.name.split("_")[2] == "none"]


def headline_gain(output_dir: str, data, used: List[dict]) -> str:
  """The headline's cell: per dataset the tuned recipe's gain over none at its own best rate, mean (min to max)."""
  d = data.get("pretraining_ablation")
  used += list(d.runs.values()) if d else []
  found = [(dataset, gain(by_arm(d.runs), dataset, "none_own")) for dataset in DATASETS] if d else []
  parts = [f"{records.dataset_label(dataset)} {g[0]:+.1f} points ({g[1]:+.1f} to {g[2]:+.1f})" for dataset, g in found
           if g]
  return ", ".join(parts) + ", 3 seeds" if parts else "not run yet"


STUDIES = (Study(
    "pretraining_ablation", "Does pretraining help? No pretraining, the report's recipe and the tuned one (greedy)",
    dict(pretraining=CPU_ACCURACY, smoke=SMOKE_ACCURACY), ablation_runs, ablation_table, ablation_figure, kind="own",
    timed=False, order=16, shares=(sweep.NAME,), later=(_none_own,), headline=(Headline(
        6, "Test accuracy added by tuned pretraining over none at its own best rate, 4 × 500 units", "—",
        headline_gain),)),)
