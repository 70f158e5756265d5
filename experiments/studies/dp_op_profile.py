"""Data parallel: seconds per epoch by phase against devices (the report's dpres3.png)."""

import re
from typing import Dict, Tuple

from experiments import presets, records
from experiments.render import series
from experiments.render.figures import REPORT_LABEL, bars, finish, new
from experiments.render.tables import Others, PHASES, Table, cores_note, md_table

PHASE_STYLES = {"input": ("input (gather + corrupt)", "tab:blue"), "forward_loss": ("forward + loss", "tab:orange"),
                "gradients": ("gradients", "0.6"), "allreduce": ("all-reduce (accumulate + average)", "gold"),
                "apply": ("apply SGD update", "tab:cyan")}
# The report's op profile, seconds per phase vs GPUs, read off dpres3.png (milliseconds on the plot). Its phases map
# to ours: computing loss -> forward_loss, computing gradient -> gradients, accumulating and averaging gradient ->
# allreduce, applying gradient -> apply (too small to read); initialising weights (~0.2 s) has no counterpart per
# epoch. REPORTED_TOTAL: its seconds per epoch in all.
REPORTED = {g: dict(forward_loss=f, gradients=d, allreduce=a, apply=0.0) for g, f, d, a in (
    (1, 63.7, 4.4, 13.7), (2, 24.1, 2.8, 10.1), (3, 14.9, 1.8, 10.5), (4, 11.4, 1.3, 10.6))}
REPORTED_TOTAL = {1: 82.0, 2: 37.2, 3: 27.4, 4: 23.5}


def profile_rows(data: records.StudyRecords) -> Dict[int, Tuple[Dict[str, float], bool]]:
  """{devices: ({phase: seconds per epoch}, oversubscribed)} from data_parallel's op profiles in the records."""
  out = {records.devices(r): ({p: float(phases.get(p, 0.0)) for p in PHASES}, records.oversubscribed(r))
         for r in data.runs.values() for phases in [(r.get("profile") or {}).get("seconds_per_epoch")] if phases}
  return dict(sorted(out.items()))


def table(data: records.StudyRecords, others: Others) -> Table:
  """Seconds per epoch of each phase per device count, ours and the report's."""
  ours, rows = profile_rows(data), []
  for g in sorted(set(ours) | set(REPORTED)):
    (phases, over), rep = ours.get(g, ({}, False)), REPORTED.get(g)
    rows.append([g] + [f"{phases[p]:.3f}" if p in phases else "—" for p in PHASES]
                + [(f"{sum(phases.values()):.3f}" if phases else "—") + (" †" if over else ""),
                   f"{rep['forward_loss'] + rep['gradients']:.1f}" if rep else "—", f"{rep['allreduce']:.1f}" if rep
                   else "—", f"{REPORTED_TOTAL.get(g, '—')}"])
  return md_table(["devices"] + [f"ours {p}" for p in PHASES] + [
      "ours total", "report loss+gradient", "report accumulate+average", "report total"], rows), [
          f"Ours: {series.batch_label(list(data.runs.values()))}; {presets.REPORT_DP_BATCH_NOTE}.",
          cores_note(data, others)]


def _phases(ax, rows: Dict[int, Dict[str, float]], over: Dict[int, bool]) -> None:
  """Stacked bars of seconds per epoch by phase per device count, the total above each."""
  gs, bottoms = list(rows), [0.0] * len(rows)
  for phase, (label, c) in PHASE_STYLES.items():
    heights = [rows[g].get(phase, 0.0) for g in gs]
    bars(ax, gs, heights, 0.6, c, label, [over.get(g, False) for g in gs], bottoms, annotate=None)
    bottoms = [b + h for b, h in zip(bottoms, heights)]
  for x, total in zip(gs, bottoms):
    ax.annotate(("{:.2f}" if max(bottoms) < 10 else "{:.1f}").format(total), (x, total), ha="center", va="bottom",
                fontsize=7)
  ax.set(xticks=gs, xlabel="devices G", ylabel="seconds per epoch")


def figure(data: records.StudyRecords, others=None):
  """Stacked seconds per epoch by phase vs devices: ours (left) and the report's (right)."""
  fig, (left, right) = new(2)
  rows = profile_rows(data)
  methods = sorted({re.sub(r"all \d+ replica\(s\)", "all G replicas", str((r.get("profile") or {}).get("method", "?")))
                    for r in data.runs.values()})  # One note for all device counts.
  if rows:
    _phases(left, {g: p for g, (p, _) in rows.items()}, {g: o for g, (_, o) in rows.items()})
  else:
    left.text(0.5, 0.5, "no op profile in these records", ha="center", transform=left.transAxes)
  left.set_title(f"ours (layer 1), {series.batch_label(list(data.runs.values()))}", fontsize=7)
  left.legend(fontsize=7)
  _phases(right, REPORTED, {})
  right.set_title(f"{REPORT_LABEL} (read off dpres3.png)", fontsize=9)
  finish(fig, data, "ours: " + " / ".join(methods))
  return fig


STUDIES = (presets.Study("dp_op_profile", "Data parallel: time per epoch by phase vs devices", dict(
    paper=dict(examples=55_000, epochs=1, batch=1000, units=2000, devices=(1, 2, 3, 4)),
    cpu=dict(examples=11_000, epochs=1, batch=1000, units=1000, devices=(1, 2, 3, 4)),
    smoke=dict(examples=400, epochs=2, batch=200, hidden=(32, 32), devices=(1, 2))), presets.dp_scaling_runs, table,
    figure, order=4, reported=REPORTED, shares=("dp_scaling",)),)
