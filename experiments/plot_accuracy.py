"""Accuracy figures: greedy vs model parallel test accuracy vs epochs (accuracy_vs_epochs, conres2.png)
and data parallel at batch 5000 with the report's and a large-batch recipe (dp_accuracy). Records of
every preset present are drawn (e.g. the cpu preset and the full-size paper runs), each labelled."""

from typing import Dict, List, Optional, Tuple

from experiments import plot_style
from experiments import presets
from experiments import records
from experiments import reported

PRESET_MARKERS = {"paper": "o", "cpu": "^", "smoke": "x"}
# dp_accuracy's acceptance rule: data parallel at batch 5000 reaches at least greedy - this.
DP_TOLERANCE = 0.005


def _epoch_positions(preset: str, entry: str = "accuracy_vs_epochs") -> List[int]:
  return sorted({r.flag("pretrain_epochs") for r in presets.build(preset)[entry].runs})


def _presets_shown(data: plot_style.EntryData) -> List[str]:
  return [data.preset] + [p for p in presets.PRESETS if p in data.other]


def _runs(data: plot_style.EntryData, preset: str) -> Dict[str, dict]:
  return data.runs if preset == data.preset else data.other[preset]


def accuracy_series(data: plot_style.EntryData, preset: str) -> Dict[str, List[Tuple[int, float]]]:
  """{"greedy"|"mp": [(epochs, test accuracy)]} of one preset's records."""
  out: Dict[str, List[Tuple[int, float]]] = {}
  for name, r in _runs(data, preset).items():
    strategy, epochs = name.rsplit("_e", 1)
    if records.test_accuracy(r) is not None:
      out.setdefault(strategy, []).append((int(epochs), records.test_accuracy(r)))
  return {k: sorted(v) for k, v in out.items()}


def draw_accuracy(data: plot_style.EntryData):
  """Test accuracy vs (pretraining, finetuning) epochs; x = the i-th setting of each preset."""
  fig, (ax,) = plot_style.figure(1, width=8)
  shown = _presets_shown(data)
  for preset in shown:
    positions = {e: i + 1 for i, e in enumerate(_epoch_positions(preset))}
    for strategy, series in sorted(accuracy_series(data, preset).items()):
      plot_style.points(ax, [positions[e] for e, _ in series], [a for _, a in series],
                        [False] * len(series), plot_style.STRATEGY_COLORS[strategy],
                        f"ours ({preset}), {plot_style.STRATEGY_NAMES[strategy]}", marker=PRESET_MARKERS[preset],
                        linestyle="-" if preset == data.preset else "-.")
  for strategy, values in reported.ACCURACY.items():
    es = sorted(values)
    plot_style.report_series(ax, [i + 1 for i in range(len(es))], [values[e] for e in es],
                             f"{plot_style.REPORT_LABEL}, {plot_style.STRATEGY_NAMES[strategy]}",
                             color=plot_style.STRATEGY_COLORS[strategy])
  ax.axhline(reported.MP_ACCURACY_TEXT, color="0.7", linewidth=0.8)
  ax.annotate(f"report text: model parallel ~{reported.MP_ACCURACY_TEXT:.4f}", (0.6, reported.MP_ACCURACY_TEXT),
              fontsize=7, va="bottom", color="0.4")
  labels = []
  for i, e in enumerate(_epoch_positions("paper")):
    extra = [f"{p}: {_epoch_positions(p)[i]}+{_epoch_positions(p)[i]}" for p in shown if p != "paper"
             and i < len(_epoch_positions(p))]
    labels.append(f"{e}+{e}" + "".join(f"\n({x})" for x in extra))
  ax.set_xticks(range(1, len(labels) + 1), labels, fontsize=8)
  ax.set_xlabel("pretraining + finetuning epochs (report's; shrunk presets in brackets)")
  ax.set_ylabel("test accuracy")
  ax.legend(fontsize=7)
  plot_style.finish(fig, data, presets_shown=shown)
  return fig


def dp_accuracy_rows(data: plot_style.EntryData, preset: str) -> List[Dict[str, Optional[float]]]:
  """Per epoch setting: {"epochs", "report_recipe", "large_batch", "greedy", "report"} test accuracies
  (None where the record is missing)."""
  runs = _runs(data, preset)
  rows = []
  paper_epochs = _epoch_positions("paper", "dp_accuracy")
  for i, e in enumerate(_epoch_positions(preset, "dp_accuracy")):
    def acc(name):
      return records.test_accuracy(runs[name]) if name in runs else None
    rows.append({"epochs": e, "report_recipe": acc(f"dp_e{e}_report"), "large_batch": acc(f"dp_e{e}_large_batch"),
                 "greedy": acc(f"greedy_e{e}"), "report": reported.DP_ACCURACY.get(paper_epochs[i])
                 if i < len(paper_epochs) else None})
  return rows


_BARS = (("report_recipe", "ours: DP, report's recipe", "tab:green"),
         ("large_batch", "ours: DP, large-batch recipe", "darkgreen"),
         ("greedy", "ours: greedy, batch 100", "tab:blue"),
         ("report", f"{plot_style.REPORT_LABEL}: DP", plot_style.REPORT_COLOR))


def draw_dp_accuracy(data: plot_style.EntryData):
  """Bars per epoch setting, one panel per preset with records."""
  shown = _presets_shown(data)
  fig, axes = plot_style.figure(len(shown), width=8 if len(shown) == 1 else 6.5)
  for ax, preset in zip(axes, shown):
    rows = dp_accuracy_rows(data, preset)
    for j, (key, label, color) in enumerate(_BARS):
      present = [(i + (j - 1.5) * 0.2, row[key]) for i, row in enumerate(rows) if row[key] is not None]
      xs, heights = [x for x, _ in present], [h for _, h in present]
      plot_style.bars(ax, xs, heights, 0.2, color, label)
      plot_style.annotate_bars(ax, xs, heights, "{:.3f}")
    for i, row in enumerate(rows):
      if row["greedy"] is not None:
        ax.hlines(row["greedy"] - DP_TOLERANCE, i - 0.45, i + 0.45, colors="0.2", linestyles=":")
    batch = sorted({records.config(r, "batch_size") for n, r in _runs(data, preset).items() if n.startswith("dp_")})
    ax.set_xticks(range(len(rows)), [f"{row['epochs']}+{row['epochs']} epochs" for row in rows])
    ax.set_xlim(-0.6, len(rows) - 0.4)
    ax.set_title(f"ours: preset {preset}, data parallel (DP) batch {'/'.join(map(str, batch)) or '—'}; "
                 "report: batch 5000, 30+30 / 60+60", fontsize=8)
    ax.set_ylabel("test accuracy")
    ax.set_ylim(0, 1.35)
    ax.set_yticks([0, 0.2, 0.4, 0.6, 0.8, 1.0])
    ax.legend(fontsize=7, loc="upper left", ncol=2)
  plot_style.finish(fig, data, f"dotted: greedy - {DP_TOLERANCE} (the data-parallel goal)", presets_shown=shown)
  return fig
