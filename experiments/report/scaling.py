"""Scaling figures: pretraining time vs devices (mp_scaling_b100, mp_scaling_b5000, dp_scaling) with the
performance model's lines and the speedups beside the report's (mpres1.png, mpres2.png), for this machine
and for every other machine with records (`records.OTHER_MACHINES`)."""

from typing import Dict

from common import programs
from experiments import perf_model
from experiments import records
from experiments import reported
from experiments.report import series
from experiments.report import style
from experiments.report import tables


def shade_oversubscribed(ax, cores: int, max_devices: int) -> None:
  """Greys the devices axis beyond the core count."""
  if max_devices > cores:
    ax.axvspan(cores + 0.5, max_devices + 0.5, color="0.93", zorder=0)
    ax.text(cores + 0.55, 0.02, f"G > {cores}: oversubscribed on {cores} cores", transform=ax.get_xaxis_transform(),
            fontsize=7, color="0.35")
  ax.set_xlim(0.5, max_devices + 0.5)
  ax.set_xticks(range(1, max_devices + 1))
  ax.set_xlabel("devices G")


def _machine(ax_seconds, ax_speedup, data: records.EntryData, machine: str, max_devices: int) -> None:
  """One machine's measured points (and model lines) on both panels."""
  marker, line = style.MACHINE_STYLES[machine]
  model, _ = series.model_for(data)
  cores = f"{min(records.cores(r) for r in data.runs.values())} cores"
  single = len(series.stacks(data)) == 1
  for i, (h, by_g) in enumerate(series.stacks(data).items()):
    color = programs.DATA_PARALLEL.color if single else style.COLORS[i]
    gs = list(by_g)
    secs = [series.seconds(by_g[g]) for g in gs]
    over = [records.oversubscribed(by_g[g]) for g in gs]
    label = f"{'' if single else f'{h} layers, '}{cores}"
    style.points(ax_seconds, gs, secs, over, color, label, linestyle=line, marker=marker)
    if model is not None and h <= len(model.epoch_seconds):
      curve = perf_model.curve(model, by_g[gs[0]]["config"], max_devices if single else h)
      ax_seconds.plot(list(curve), list(curve.values()), "--", color=color, alpha=0.5, linewidth=1)
    if 1 in by_g:
      style.points(ax_speedup, gs, [records.ratio(by_g[1], by_g[g]) for g in gs], over, color, f"ours, {label}",
                   linestyle=line, marker=marker)


def draw(data: records.EntryData, others: Dict[str, records.EntryData]):
  """Seconds vs devices (left) and speedup over one device (right), ours on every machine and the report's."""
  fig, (left, right) = style.figure(2)
  single = len(series.stacks(data)) == 1
  max_g = perf_model.MAX_PREDICTED_DEVICES if single else 4
  _machine(left, right, data, "", max_g)
  for machine, other in others.items():
    _machine(left, right, other, machine, max_g)
  report = tables.scaling_report(data.entry)
  for i, (h, rep) in enumerate(sorted(report.items())):
    style.report_series(right, sorted(rep), [rep[1] / rep[g] for g in sorted(rep)], f"{style.REPORT_LABEL}, {h} layers",
                        color=style.COLORS[i])
  if not report:
    right.plot([], [], " ", label=f"{style.REPORT_LABEL}: {reported.DP_SCALING_TEXT}")
  left.plot([], [], "--", color="0.5", linewidth=1, label="performance model (fit on G <= 2)")
  cores = min(records.cores(r) for r in data.runs.values())
  shade_oversubscribed(left, cores, max_g)
  left.set_ylabel("pretraining seconds (steady state)")
  left.set_ylim(bottom=0)
  left.legend(fontsize=7)
  right.plot([1, max_g], [1, max_g], ":", color="0.7", label="linear speedup")
  shade_oversubscribed(right, cores, max_g)
  right.set_ylabel("speedup over 1 device (single runs)")
  right.legend(fontsize=6, ncol=2, loc="upper left")
  model, why = series.model_for(data)
  extra = (f"performance model ({style.machine_label(data)}): {model.describe()}; calibrated on "
           f"{', '.join(model.calibration)}" if model else why)
  style.finish(fig, data, extra, more=list(others.values()))
  return fig
