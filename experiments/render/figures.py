"""The drawing helpers of every figure (`Study.figure`s, drawn by `experiments.report.draw`): axes, series, bars, the
scaling figure; a footer names preset, dataset and hardware, oversubscribed points are hollow."""

import textwrap
from typing import Dict, Optional, Sequence, Tuple

from matplotlib import figure as mpl_figure

from common.settings import programs
from experiments import perf_model, presets, records
from experiments.render import series

REPORT_COLOR = "0.45"
REPORT_LABEL = presets.REPORT_HARDWARE
COLORS = ("tab:blue", "tab:orange", "tab:green", "tab:red", "tab:purple", "tab:brown")
# A scaling figure's markers and line styles: the main folder's, then the others' by their place in `records.folders`.
MAIN_STYLE, FOLDER_STYLES = ("o", "-"), (("s", "-."), ("D", ":"), ("v", "--"))
STYLE_NAMES = {"s": "squares", "D": "diamonds", "v": "triangles", "-.": "dash-dotted", ":": "dotted", "--": "dashed"}
PRESET_MARKERS = {"paper": "o", "cpu": "^", "smoke": "x", "mid": "v", "full": "D"}
DP = programs.DATA_PARALLEL


def folder_style(output_dir: str, machine: str) -> Tuple[str, str]:
  """(marker, line style) of another machine's folder under `output_dir` (`records.folders`), by its place there;
  ValueError for a folder that is not one of them."""
  return FOLDER_STYLES[records.folders(output_dir).index(machine) % len(FOLDER_STYLES)]


def color(program: str) -> str:
  """A program's registry colour."""
  return programs.get(program).color


def new(ncols: int = 1, width: float = 6.4, height: float = 4.8):
  """A figure with `ncols` axes side by side: (figure, [axes])."""
  return grid(ncols, ncols, width, height)


def grid(count: int, columns: int = 2, width: float = 6.4, height: float = 4.8):
  """A figure with `count` axes in rows of at most `columns`, the unused places left empty: (figure, [axes])."""
  columns = max(1, min(columns, count))
  rows = -(-count // columns)
  fig = mpl_figure.Figure(figsize=(width * columns, height * rows))
  axes = list(fig.subplots(rows, columns, squeeze=False).flatten())
  for ax in axes[count:]:
    ax.set_visible(False)
  return fig, axes[:count]


def finish(fig, data: records.StudyRecords, extra: str = "", presets_shown: Sequence[str] = (),
           more: Sequence[Tuple[records.StudyRecords, Tuple[str, str]]] = ()) -> None:
  """Titles the figure; footer: preset and what it shrinks, dataset, hardware, hollow markers, other machines `more`
  (each with its (marker, line style))."""
  fig.suptitle(data.declared.title, fontsize=12)
  rs = [r for p in (presets_shown or [data.preset]) for r in series.by_preset(data)[p].values()]
  lines = [series.preset_note(data.declared, p) for p in (presets_shown or [data.preset])]
  lines.append(f"ours: dataset {records.datasets(rs)}; {records.hardware(rs)}; 1 thread per device" + (
      "; hollow markers/hatched bars: more devices than cores (oversubscribed)"
      if any(records.oversubscribed(r) for r in rs) else ""))
  lines += [f"also: {records.hardware(list(o.runs.values()))} ({STYLE_NAMES[marker]}, {STYLE_NAMES[line]}), preset "
            f"{o.preset}" for o, (marker, line) in more]
  text = "\n".join(textwrap.fill(line, int(fig.get_figwidth() * 13)) for line in lines + ([extra] if extra else []))
  fig.text(0.01, 0.01, text, fontsize=7, va="bottom", ha="left", family="monospace")
  fig.tight_layout(rect=(0, 0.025 * (text.count("\n") + 1) + 0.02, 1, 0.95))


def points(ax, xs: Sequence[float], ys: Sequence[float], over: Sequence[bool], c: str, label: Optional[str],
           linestyle: str = "-", marker: str = "o") -> None:
  """A measured series: a line, filled markers, hollow markers where oversubscribed."""
  ax.plot(xs, ys, linestyle=linestyle, color=c, label=label)
  for x, y, o in zip(xs, ys, over):
    ax.plot([x], [y], marker=marker, color=c, markerfacecolor="white" if o else c, linestyle="none")


def report_series(ax, xs: Sequence[float], ys: Sequence[float], label: str, c: str = REPORT_COLOR) -> None:
  """A series of the report's numbers (dashed, square markers)."""
  ax.plot(xs, ys, linestyle="--", marker="s", color=c, markersize=4, label=label)


def bars(ax, xs: Sequence[float], heights: Sequence[float], width: float, c: str, label: str,
         over: Optional[Sequence[bool]] = None, bottoms: Optional[Sequence[float]] = None,
         annotate: Optional[str] = "{:.0f}") -> None:
  """Bars, hatched where oversubscribed, each with its value above it in the format `annotate` (None: none)."""
  for i, (x, h) in enumerate(zip(xs, heights)):
    o, b = bool(over and over[i]), bottoms[i] if bottoms else 0.0
    ax.bar(x, h, width, bottom=b, color=c, hatch="//" if o else None, edgecolor="white" if o else c,
           label=label if i == 0 else None)
    if annotate:
      ax.annotate(annotate.format(h), (x, h), ha="center", va="bottom", fontsize=7)


def devices_axes(left, right, cores: int, max_g: int) -> None:
  """Seconds (left) and speedup (right) vs devices: labels, the linear speedup, the axis greyed beyond the cores."""
  right.plot([1, max_g], [1, max_g], ":", color="0.7", label="linear speedup")
  for ax, ylabel in ((left, "pretraining seconds (steady state)"), (right, "speedup over 1 device (single runs)")):
    if max_g > cores:
      ax.axvspan(cores + 0.5, max_g + 0.5, color="0.93", zorder=0)
      ax.text(cores + 0.55, 0.02, f"G > {cores}: oversubscribed on {cores} cores", transform=ax.get_xaxis_transform(),
              fontsize=7, color="0.35")
    ax.set(xlim=(0.5, max_g + 0.5), xticks=range(1, max_g + 1), xlabel="devices G", ylabel=ylabel)
  left.set_ylim(bottom=0)
  left.legend(fontsize=7)
  right.legend(fontsize=6, ncol=2, loc="upper left")


def scaling(data: records.StudyRecords, others: Dict[str, records.StudyRecords]):
  """Seconds vs devices with the model's lines (left), speedup over 1 device (right): every machine, the report."""
  fig, (left, right) = new(2)
  max_g = perf_model.MAX_PREDICTED_DEVICES if len(series.stacks(data)) == 1 else 4
  styles = {machine: folder_style(data.output_dir, machine) for machine in others}
  for machine, d in [("", data)] + list(others.items()):
    marker, line = styles[machine] if machine else MAIN_STYLE
    model, _ = perf_model.calibrated(d.runs)
    single, cores = len(series.stacks(d)) == 1, f"{series.cores(d)} cores"
    for i, (h, by_g) in enumerate(series.stacks(d).items()):
      c, gs, label = DP.color if single else COLORS[i], list(by_g), f"{'' if single else f'{h} layers, '}{cores}"
      over = [records.oversubscribed(by_g[g]) for g in gs]
      points(left, gs, [by_g[g]["pretrain_seconds"] for g in gs], over, c, label, line, marker)
      if model is not None and h <= len(model.epoch_seconds):
        xs = range(1, (max_g if single else h) + 1)
        left.plot(xs, [model.predict(by_g[gs[0]]["config"], g) for g in xs], "--", color=c, alpha=0.5, linewidth=1)
      if 1 in by_g:
        points(right, gs, [records.ratio(by_g[1], by_g[g]) for g in gs], over, c, f"ours, {label}", line, marker)
  reported_here = data.declared.reported  # {layers: {devices: seconds}}, or the report's words
  report = reported_here if isinstance(reported_here, dict) else {}
  for i, (h, rep) in enumerate(sorted(report.items())):
    report_series(right, sorted(rep), [rep[1] / rep[g] for g in sorted(rep)], f"{REPORT_LABEL}, {h} layers", COLORS[i])
  if not report:
    right.plot([], [], " ", label=f"{REPORT_LABEL}: {reported_here}")
  left.plot([], [], "--", color="0.5", linewidth=1, label="performance model (fit on G <= 2)")
  devices_axes(left, right, series.cores(data), max_g)
  model, why = perf_model.calibrated(data.runs)
  finish(fig, data, f"performance model ({records.machine_label(list(data.runs.values()))}): {model.describe()}; "
                    f"calibrated on {', '.join(model.calibration)}" if model else why,
         more=[(d, styles[machine]) for machine, d in others.items()])
  return fig
