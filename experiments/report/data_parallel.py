"""Data-parallel figures: seconds per epoch vs global batch (dp_batch_sweep, dpres2.png) and the op profile
by phase vs devices (dp_op_profile, dpres3.png)."""

import re
from typing import Dict

from common import programs
from experiments import records
from experiments import reported
from experiments.report import series
from experiments.report import style

PHASE_LABELS = {"input": "input (gather + corrupt)", "forward_loss": "forward + loss", "gradients": "gradients",
                "allreduce": "all-reduce (accumulate + average)", "apply": "apply SGD update"}
PHASE_COLORS = {"input": "tab:blue", "forward_loss": "tab:orange", "gradients": "0.6", "allreduce": "gold",
                "apply": "tab:cyan"}


def draw_sweep(data: records.EntryData, others=None):
  """Seconds per epoch (left) and examples per second (right) vs global batch, ours and the report's."""
  fig, (left, right) = style.figure(2)
  pts = series.sweep_points(data)
  examples = {r["config"]["train_examples"] for r in data.runs.values()}
  g = {records.devices(r) for r in data.runs.values()}
  color = programs.DATA_PARALLEL.color
  xs = [p[0] for p in pts]
  over = [p[3] for p in pts]
  label = f"ours, {'/'.join(map(str, sorted(g)))} devices, {'/'.join(f'{n:,}' for n in sorted(examples))} examples"
  style.points(left, xs, [p[1] for p in pts], over, color, label)
  style.points(right, xs, [p[2] for p in pts], over, color, label)
  rep = reported.DP_BATCH_SWEEP
  rep_x = [4 * b for b in rep]  # the report's batch was per GPU
  style.report_series(left, rep_x, list(rep.values()), f"{style.REPORT_LABEL}, 4 GPUs, 55,000 examples")
  style.report_series(right, rep_x, [55_000 / s for s in rep.values()], f"{style.REPORT_LABEL}, 4 GPUs")
  best = min(pts, key=lambda p: p[1])
  left.annotate(f"min at {best[0]}", (best[0], best[1]), textcoords="offset points", xytext=(0, -14), fontsize=7,
                ha="center")
  for ax, ylabel in ((left, "seconds per epoch of one layer"), (right, "examples per second")):
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("global batch (report: 4 GPUs x its per-GPU batch)")
    ax.set_ylabel(ylabel)
    ax.legend(fontsize=7)
  style.finish(fig, data)
  return fig


def _stack(ax, rows: Dict[int, Dict[str, float]], over: Dict[int, bool]) -> None:
  gs = list(rows)
  bottoms = [0.0] * len(gs)
  for phase in series.PHASES:
    heights = [rows[g].get(phase, 0.0) for g in gs]
    style.bars(ax, gs, heights, 0.6, PHASE_COLORS[phase], PHASE_LABELS[phase], [over.get(g, False) for g in gs],
               bottoms)
    bottoms = [b + h for b, h in zip(bottoms, heights)]
  style.annotate_bars(ax, gs, bottoms, "{:.2f}" if max(bottoms) < 10 else "{:.1f}")
  ax.set_xticks(gs)
  ax.set_xlabel("devices G")
  ax.set_ylabel("seconds per epoch")


def draw_profile(data: records.EntryData, others=None):
  """Stacked seconds per epoch by phase vs devices: ours (left) and the report's (right)."""
  fig, (left, right) = style.figure(2)
  rows = series.profile_rows(data)
  methods = sorted({re.sub(r"all \d+ replica\(s\)", "all G replicas", str((r.get("profile") or {}).get("method", "?")))
                    for r in data.runs.values()})  # One note for all device counts.
  if rows:
    _stack(left, {g: p for g, (p, _) in rows.items()}, {g: o for g, (_, o) in rows.items()})
  else:
    left.text(0.5, 0.5, "no op profile in these records", ha="center", transform=left.transAxes)
  left.set_title(f"ours (layer 1), {series.batch_label(list(data.runs.values()))}", fontsize=7)
  left.legend(fontsize=7)
  _stack(right, reported.DP_OP_PROFILE, {})
  right.set_title(f"{style.REPORT_LABEL} (read off dpres3.png)", fontsize=9)
  style.finish(fig, data, "ours: " + " / ".join(methods))
  return fig
