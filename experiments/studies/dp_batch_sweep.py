"""Data parallel: seconds per epoch of one layer against the global batch (the report's dpres2.png)."""

from typing import List, Tuple

from experiments import records
from experiments.presets import DP, Study, NO_PROFILE, Run, spec
from experiments.render.figures import REPORT_LABEL, finish, new, points, report_series
from experiments.render.tables import Others, Table, md_table

# The report's seconds per epoch of one 2000-unit layer on 4 GPUs vs batch size, read off dpres2.png (milliseconds on
# the plot). The original's batch was per GPU (global batch = 4 x batch).
REPORTED = {50: 131.3, 100: 45.3, 200: 20.5, 300: 14.0, 400: 11.4, 500: 9.8, 600: 8.7, 700: 8.1, 800: 7.7, 900: 7.3,
            1000: 7.0, 2000: 5.8, 3000: 5.5, 4000: 4.6, 5000: 4.6, 6000: 4.4, 7000: 4.2, 8000: 4.3, 9000: 4.4}


def sweep_points(data: records.StudyRecords) -> List[Tuple[int, float, float, bool]]:
  """[(global batch, median seconds per epoch, examples per second, oversubscribed)] sorted by batch."""
  return sorted((b, s, (r["config"]["train_examples"] // b) * b / s, records.oversubscribed(r))
                for r in data.runs.values() for b, s in [(r["config"]["batch_size"],
                                                          records.layer_epoch_seconds(r)[0])])


def _dp_batch_sweep(s) -> List[Run]:
  return [spec(f"b{b}", DP, (s["units"],), s["epochs"], b, s["devices"], s["examples"], settings=NO_PROFILE)
          for b in s["batches"]]


def table(data: records.StudyRecords, others: Others) -> Table:
  """Seconds per epoch and examples per second per global batch, ours and the report's."""
  pts, g = sweep_points(data), sorted({records.devices(r) for r in data.runs.values()})
  rows = [[batch, "/".join(f"{batch // d}" for d in g), f"{secs:.2f}" + (" †" if over else ""), f"{rate:,.0f}",
           f"{rep}" if rep else "—", f"{55_000 / rep:,.0f}" if rep else "—"]
          for batch, secs, rate, over in pts for rep in [REPORTED.get(batch // 4)]]
  best, rep_best = min(pts, key=lambda p: p[1]), min(REPORTED, key=REPORTED.get)
  examples = min(r["config"]["train_examples"] for r in data.runs.values())
  return md_table(["global batch", "ours per device", "ours s/epoch", "ours examples/s",
                   "report s/epoch (global/4 per GPU)", "report examples/s"], rows), [
      f"Ours on {'/'.join(map(str, g))} devices; the report's per-GPU batch on 4 GPUs is matched at global = 4 × it. "
      f"Fastest epoch: ours at global batch {best[0]}, the report's at {rep_best} per GPU (global {4 * rep_best}); "
      "both fall steeply from the smallest batch, where per-step costs (all-reduce, dispatch) dominate.",
      f"Ours ran {examples:,} examples per epoch (report: 55,000): compare examples per second. Single runs."]


def figure(data: records.StudyRecords, others=None):
  """Seconds per epoch (left) and examples per second (right) vs global batch, ours and the report's."""
  fig, (left, right) = new(2)
  pts, rep = sweep_points(data), REPORTED
  g = sorted({records.devices(r) for r in data.runs.values()})
  examples = sorted({r["config"]["train_examples"] for r in data.runs.values()})
  label = f"ours, {'/'.join(map(str, g))} devices, {'/'.join(f'{n:,}' for n in examples)} examples"
  for ax, k in ((left, 1), (right, 2)):
    points(ax, [p[0] for p in pts], [p[k] for p in pts], [p[3] for p in pts], DP.color, label)
  report_series(left, [4 * b for b in rep], list(rep.values()), f"{REPORT_LABEL}, 4 GPUs, 55,000 examples")
  report_series(right, [4 * b for b in rep], [55_000 / s for s in rep.values()], f"{REPORT_LABEL}, 4 GPUs")
  best = min(pts, key=lambda p: p[1])
  left.annotate(f"min at {best[0]}", best[:2], textcoords="offset points", xytext=(0, -14), fontsize=7, ha="center")
  for ax, ylabel in ((left, "seconds per epoch of one layer"), (right, "examples per second")):
    ax.set(xscale="log", yscale="log", xlabel="global batch (report: 4 GPUs x its per-GPU batch)", ylabel=ylabel)
    ax.legend(fontsize=7)
  finish(fig, data)
  return fig


STUDIES = (Study("dp_batch_sweep", "Data parallel: seconds per epoch of one layer vs global batch", dict(
    paper=dict(examples=55_000, epochs=2, units=2000, devices=4, batches=(
        52, 100, 200, 300, 400, 500, 600, 700, 800, 900, 1000, 2000, 3000, 4000, 5000, 6000, 7000, 8000, 9000)),
    cpu=dict(examples=18_000, epochs=2, units=1000, devices=2,
             batches=(52, 100, 200, 300, 500, 700, 1000, 2000, 4000, 6000, 7000, 9000)),
    smoke=dict(examples=400, epochs=1, units=32, devices=2, batches=(52, 200))), _dp_batch_sweep, table, figure,
    order=3, reported=REPORTED),)
