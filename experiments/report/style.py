"""What every figure and table shares: colours and names of the programs (`common.programs`), the footer naming
preset and hardware, the marking of oversubscribed points (more logical devices than cores), number formats."""

import textwrap
from typing import Optional, Sequence

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from common import programs  # noqa: E402
from experiments import presets  # noqa: E402
from experiments import records  # noqa: E402
from experiments import reported  # noqa: E402

REPORT_LABEL = reported.HARDWARE
REPORT_COLOR = "0.45"
COLORS = ("tab:blue", "tab:orange", "tab:green", "tab:red", "tab:purple", "tab:brown")
DAGGER = "† more logical devices than cores the process could use (oversubscribed)."
# Markers and line styles of the machines a scaling figure shows: this one (""), then the others.
MACHINE_STYLES = {"": ("o", "-"), "xeon16": ("D", ":")}


def program_name(program: str) -> str:
  """A program's registry label, e.g. "model parallel"; ValueError for an unregistered program."""
  return programs.get(program).label


def program_color(program: str) -> str:
  """A program's registry colour; ValueError for an unregistered program."""
  return programs.get(program).color


def machine_label(data: records.EntryData) -> str:
  """The machine and code of the entry's records (`records.machine_label`)."""
  return records.machine_label(list(data.runs.values()))


def figure(ncols: int = 1, width: float = 6.4, height: float = 4.8):
  """A figure with `ncols` axes side by side (a list of axes)."""
  fig, axes = plt.subplots(1, ncols, figsize=(width * ncols, height), squeeze=False)
  return fig, list(axes[0])


def preset_note(entry: str, preset: str) -> str:
  """"preset cpu: examples 5500 (paper 55000); ..." or "preset paper (the report's settings)"."""
  notes = presets.shrink_notes(entry, preset)
  return (f"preset {preset}: " + "; ".join(notes) if notes else
          f"preset {preset}" + (" (the report's settings)" if preset == "paper" else ""))


def finish(fig, data: records.EntryData, extra: str = "", presets_shown: Sequence[str] = (),
           more: Sequence[records.EntryData] = ()) -> None:
  """Titles the figure and adds the footer: preset (and what it shrinks), hardware, cores, and the
  meaning of hollow markers; `more`: other machines' records drawn too."""
  fig.suptitle(presets.title(data.entry), fontsize=12)
  lines = [preset_note(data.entry, p) for p in (presets_shown or [data.preset])]
  rs = data.all_records() if presets_shown else list(data.runs.values())
  over = any(records.oversubscribed(r) for r in rs)
  lines.append(f"ours: {records.hardware(rs)}; 1 thread per device"
               + ("; hollow markers/hatched bars: more devices than cores (oversubscribed)" if over else ""))
  for other in more:
    lines.append(f"also: {records.hardware(list(other.runs.values()))} (diamonds, dotted), preset {other.preset}")
  if extra:
    lines.append(extra)
  text = "\n".join(textwrap.fill(line, int(fig.get_figwidth() * 13)) for line in lines)
  n = text.count("\n") + 1
  fig.text(0.01, 0.01, text, fontsize=7, va="bottom", ha="left", family="monospace")
  fig.tight_layout(rect=(0, 0.025 * n + 0.02, 1, 0.95))


def points(ax, xs: Sequence[float], ys: Sequence[float], over: Sequence[bool], color: str, label: Optional[str],
           linestyle: str = "-", marker: str = "o") -> None:
  """A measured series: a line, filled markers, hollow markers where oversubscribed."""
  ax.plot(xs, ys, linestyle=linestyle, color=color, label=label)
  for x, y, o in zip(xs, ys, over):
    ax.plot([x], [y], marker=marker, color=color, markerfacecolor="white" if o else color, linestyle="none")


def report_series(ax, xs: Sequence[float], ys: Sequence[float], label: str, color: str = REPORT_COLOR,
                  marker: str = "s") -> None:
  """A series of the report's numbers (dashed, square markers)."""
  ax.plot(xs, ys, linestyle="--", marker=marker, color=color, markersize=4, label=label)


def bars(ax, positions: Sequence[float], heights: Sequence[float], width: float, color: str, label: str,
         over: Optional[Sequence[bool]] = None, bottoms: Optional[Sequence[float]] = None) -> None:
  """Bars, hatched where oversubscribed."""
  over, bottoms = over or [False] * len(heights), bottoms or [0.0] * len(heights)
  for i, (x, h, o, b) in enumerate(zip(positions, heights, over, bottoms)):
    ax.bar(x, h, width, bottom=b, color=color, hatch="//" if o else None, edgecolor="white" if o else color,
           label=label if i == 0 else None)


def annotate_bars(ax, positions: Sequence[float], heights: Sequence[float], fmt: str = "{:.0f}") -> None:
  """Writes each bar's value above it."""
  for x, h in zip(positions, heights):
    ax.annotate(fmt.format(h), (x, h), ha="center", va="bottom", fontsize=7)


def label_inside(ax, x: float, y: float, text: str) -> None:
  """A label readable on any bar (dark text on a white box)."""
  ax.annotate(text, (x, y), ha="center", fontsize=9, bbox=dict(boxstyle="round", fc="white", ec="none", alpha=0.8))


def fmt_seconds(seconds: Optional[float]) -> str:
  """Seconds with 3 significant digits below 100, whole seconds above."""
  return "—" if seconds is None else f"{seconds:.3g}" if seconds < 100 else f"{seconds:.0f}"


def fmt_ratio(ratio: Optional[float]) -> str:
  """A speedup or ratio, e.g. "1.31×"."""
  return "—" if ratio is None else f"{ratio:.2f}×"


def fmt_accuracy(a: Optional[float]) -> str:
  """An accuracy in [0, 1] with 4 decimals."""
  return "—" if a is None else f"{a:.4f}"


def fmt_spread(s: Optional[dict], fmt: str = "{:.2f}") -> str:
  """A spread {"min", "median", "max"} as "median (min–max)"."""
  return f"{fmt.format(s['median'])} ({fmt.format(s['min'])}–{fmt.format(s['max'])})" if s else "—"


def md_table(header: Sequence[str], rows: Sequence[Sequence]) -> str:
  """A markdown table."""
  return "\n".join(["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
                   + ["| " + " | ".join(str(c) for c in row) + " |" for row in rows])


def save(fig, path: str) -> None:
  """Writes the figure as PNG and frees it."""
  fig.savefig(path, dpi=110)
  plt.close(fig)
