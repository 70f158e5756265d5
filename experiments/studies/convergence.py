"""Reconstruction loss vs wall-clock seconds per program (beside the report's comparison; Santara et al.'s metric)."""

from typing import Dict, List, Optional, Tuple

from common.settings import programs
from experiments import harness, presets, records
from experiments.render import series, tables
from experiments.render.figures import color, finish, new, points
from experiments.render.tables import Others, Table, fmt, md_table

LOSS_TOLERANCE = harness.LOSS_TOLERANCE  # the fixed loss of layer k: the baseline's final one times (1 + this)


def convergence_loss(rs: series.Runs) -> Tuple[str, Optional[List[float]]]:
  """(the loss compared: "heldout_loss" when every record has it after every epoch, else "loss"; each layer's fixed
  loss, the baseline's final x (1 + LOSS_TOLERANCE), None without the baseline)."""
  base = programs.baseline().run_name
  key = "heldout_loss" if rs and all(records.has_heldout_curves(r) for r in rs.values()) else "loss"
  return key, [layer["epochs"][-1][key] * (1 + LOSS_TOLERANCE) for layer in rs[base]["layers"]] if base in rs else None


def times_to_target(data: records.StudyRecords) -> Dict[str, Tuple[Optional[float], List[Optional[float]]]]:
  """{run name: (seconds until every layer reached its fixed loss, the seconds of each layer)} (None: never)."""
  rs = series.program_records(data)
  key, targets = convergence_loss(rs)
  return {s: records.time_to_loss(records.loss_curves(r, key), targets) for s, r in rs.items()} if targets else {}


def table(data: records.StudyRecords, others: Others) -> Table:
  """Pretraining seconds, seconds to the fixed loss (all layers and per layer) and final losses per program."""
  reach, rs = times_to_target(data), series.program_records(data)
  key, _ = convergence_loss(rs)
  rows = [[series.program_name(series.program_of(r)), fmt(r["pretrain_seconds"]),
           fmt(reach[s][0]) if reach.get(s, (None,))[0] is not None else "not reached",
           ", ".join(fmt(t) for t in reach.get(s, (None, []))[1]),
           ", ".join(f"{layer['epochs'][-1][key]:.2f}" for layer in r["layers"])] for s, r in rs.items()]
  what = ("held-out reconstruction loss (the 10,000 test images through the stack below, fixed masks: the "
          "same quantity for every program)" if key == "heldout_loss" else
          "training reconstruction loss (epoch mean; these records have no per-epoch held-out loss)")
  return md_table(["program", "pretraining s", "seconds to fixed loss", "per layer", "final loss per layer"], rows), [
      f"Loss: {what}. Fixed loss: greedy's final loss of each layer × {1 + LOSS_TOLERANCE}; a program reaches "
      "it when its last layer does (the metric of Santara et al. 2016, \"Faster learning of deep stacked autoencoders "
      "on multi-core systems using synchronized layer-wise pre-training\"). The report has no such figure. Model "
      "parallel trains lower layers for more epochs (their start offsets) and upper layers on inputs that still change."]


def figure(data: records.StudyRecords, others=None):
  """Per layer: the compared loss after each epoch vs seconds, the fixed loss dotted, times to it in the legend."""
  rs = series.program_records(data)
  fig, axes = new(max(len(r["layers"]) for r in rs.values()), width=3.6, height=4.2)
  (key, targets), reach = convergence_loss(rs), times_to_target(data)
  for name, r in rs.items():
    label = series.program_name(series.program_of(r)) + ("" if name not in reach else ": not reached" if reach[name][0]
                                                       is None else f": {tables.fmt(reach[name][0])} s")
    for k, curve in enumerate(records.loss_curves(r, key)):
      points(axes[k], [t for t, _ in curve], [loss for _, loss in curve], [records.oversubscribed(r)] * len(curve),
             color(series.program_of(r)), label if k == 0 else None, marker=".")
  for k, ax in enumerate(axes):
    if targets:
      ax.axhline(targets[k], linestyle=":", color="0.3", linewidth=1)
    ax.set_title(f"layer {k + 1}", fontsize=9)
    ax.set(xlabel="seconds since pretraining began", yscale="log")
  axes[0].set_ylabel("held-out reconstruction loss (test images)" if key == "heldout_loss"
                     else "reconstruction loss (epoch mean)")
  axes[0].legend(fontsize=7, title="time to fixed loss", title_fontsize=7)
  finish(fig, data, f"fixed loss (dotted): greedy's final loss of each layer x {1 + LOSS_TOLERANCE}; time to "
                    "reach it = when the last layer gets there. The report has no such figure.")
  return fig


STUDIES = (presets.Study("convergence", "Reconstruction loss vs wall-clock seconds", presets.COMPARISON_SIZES,
                         presets.comparison_runs, table, figure, order=10, shares=("strategy_comparison",)),)
