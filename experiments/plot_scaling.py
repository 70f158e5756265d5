"""Scaling figures: pretraining time vs devices (mp_scaling_b100, mp_scaling_b5000, dp_scaling), with the
performance model's prediction and the speedup beside the report's (mpres1.png, mpres2.png)."""

from typing import Dict, List, Optional, Tuple

from experiments import perf_model
from experiments import plot_style
from experiments import records
from experiments import reported


def mp_layers(data: plot_style.EntryData) -> Dict[int, Dict[int, dict]]:
  """{hidden layers: {devices: record}} of a model-parallel scaling entry."""
  out: Dict[int, Dict[int, dict]] = {}
  for r in data.runs.values():
    out.setdefault(len(r["config"]["hidden_units"]), {})[records.devices(r)] = r
  return out


def model_for(data: plot_style.EntryData) -> Tuple[Optional[perf_model.Model], str]:
  """The performance model calibrated on the entry's own runs, or (None, why not)."""
  try:
    if data.entry == "dp_scaling":
      return perf_model.calibrate_data_parallel(data.runs), ""
    return perf_model.calibrate_model_parallel(data.runs), ""
  except (ValueError, KeyError) as e:
    return None, f"no performance model: {e}"


def shade_oversubscribed(ax, cores: int, max_devices: int) -> None:
  """Greys the devices axis beyond the core count."""
  if max_devices > cores:
    ax.axvspan(cores + 0.5, max_devices + 0.5, color="0.93", zorder=0)
    ax.text(cores + 0.55, 0.02, f"G > {cores} cores: oversubscribed", transform=ax.get_xaxis_transform(),
            fontsize=7, color="0.35")
  ax.set_xlim(0.5, max_devices + 0.5)
  ax.set_xticks(range(1, max_devices + 1))
  ax.set_xlabel("devices G")


def _speedup_panel(ax, cores: int, max_devices: int) -> None:
  ax.plot([1, max_devices], [1, max_devices], ":", color="0.7", label="linear speedup")
  shade_oversubscribed(ax, cores, max_devices)
  ax.set_ylabel("speedup over 1 device")


def draw_mp(data: plot_style.EntryData):
  """mp_scaling_b100 / mp_scaling_b5000: seconds vs devices per stack depth, model lines, speedups."""
  fig, (left, right) = plot_style.figure(2)
  model, why = model_for(data)
  report = reported.MP_SCALING_B100 if data.entry == "mp_scaling_b100" else reported.MP_SCALING_B5000
  stacks = mp_layers(data)
  cores = min(records.cores(r) for r in data.runs.values())
  for i, (h, by_g) in enumerate(sorted(stacks.items())):
    color = plot_style.COLORS[i]
    gs = sorted(by_g)
    seconds = [by_g[g]["pretrain_seconds"] for g in gs]
    over = [records.oversubscribed(by_g[g]) for g in gs]
    plot_style.points(left, gs, seconds, over, color, f"{h} hidden layers")
    hidden = by_g[gs[0]]["config"]["hidden_units"]
    epochs = by_g[gs[0]]["config"]["pretrain_epochs"]
    if model is not None and h <= len(model.epoch_seconds):
      curve = model.curve(hidden, epochs, max_devices=h)
      left.plot(list(curve), list(curve.values()), "--", color=color, alpha=0.6, linewidth=1)
    if 1 in by_g:
      plot_style.points(right, gs, [by_g[1]["pretrain_seconds"] / s for s in seconds], over, color,
                        f"ours, {h} layers")
    rep = report.get(h, {})
    plot_style.report_series(right, sorted(rep), [rep[1] / rep[g] for g in sorted(rep)],
                             f"{plot_style.REPORT_LABEL}, {h} layers", color=color, marker="s")
  if model is not None:
    left.plot([], [], "--", color="0.5", linewidth=1, label="performance model")
  shade_oversubscribed(left, cores, 4)
  left.set_ylabel("pretraining seconds (steady state)")
  left.set_ylim(bottom=0)
  left.legend(fontsize=8)
  _speedup_panel(right, cores, 4)
  right.legend(fontsize=7, ncol=2, loc="upper left")
  extra = (f"performance model: {model.describe()}; calibrated on {', '.join(model.calibration)}" if model else why)
  plot_style.finish(fig, data, extra)
  return fig


def draw_dp(data: plot_style.EntryData):
  """dp_scaling: seconds vs devices, the model's line to 8 devices, speedup vs linear ("near linear")."""
  fig, (left, right) = plot_style.figure(2)
  model, why = model_for(data)
  by_g = {records.devices(r): r for r in data.runs.values()}
  gs = sorted(by_g)
  cores = min(records.cores(r) for r in data.runs.values())
  seconds = [by_g[g]["pretrain_seconds"] for g in gs]
  over = [records.oversubscribed(by_g[g]) for g in gs]
  plot_style.points(left, gs, seconds, over, plot_style.STRATEGY_COLORS["dp"], "data parallel (measured)")
  max_g = perf_model.MAX_PREDICTED_DEVICES if model else max(gs)
  if model is not None:
    c = by_g[gs[0]]["config"]
    curve = model.curve(c["hidden_units"], c["pretrain_epochs"])
    left.plot(list(curve), list(curve.values()), "--", color="0.4", linewidth=1, label="performance model")
  shade_oversubscribed(left, cores, max_g)
  left.set_ylabel("pretraining seconds (steady state)")
  left.set_ylim(bottom=0)
  left.legend(fontsize=8)
  if 1 in by_g:
    plot_style.points(right, gs, [by_g[1]["pretrain_seconds"] / s for s in seconds], over,
                      plot_style.STRATEGY_COLORS["dp"], "ours")
  right.plot([], [], " ", label=f"{plot_style.REPORT_LABEL}: {reported.DP_SCALING_TEXT}")
  _speedup_panel(right, cores, max(gs))
  right.legend(fontsize=7)
  extra = (f"performance model: {model.describe()}; calibrated on {', '.join(model.calibration)}" if model else why)
  plot_style.finish(fig, data, extra)
  return fig


def model_errors(data: plot_style.EntryData) -> List[perf_model.Error]:
  """The performance model's relative error at every measured run of a scaling entry."""
  model, _ = model_for(data)
  return perf_model.relative_errors(model, data.runs) if model else []
