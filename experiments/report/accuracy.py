"""Accuracy figures: greedy vs model parallel test accuracy vs epochs (accuracy_vs_epochs, conres2.png) and
data parallel at a large batch with the report's and the large-batch recipe (dp_accuracy). Records of every
preset present are drawn, each labelled."""

from common import programs
from experiments import records
from experiments import reported
from experiments.report import series
from experiments.report import style

PRESET_MARKERS = {"paper": "o", "cpu": "^", "smoke": "x", "mid": "v", "full": "D"}


def draw_accuracy(data: records.EntryData, others=None):
  """Test accuracy vs (pretraining, finetuning) epochs; x = the i-th setting of each preset."""
  fig, (ax,) = style.figure(1, width=8)
  shown = series.presets_shown(data)
  for preset in shown:
    positions = {e: i + 1 for i, e in enumerate(series.epoch_settings(preset))}
    for program, points in sorted(series.accuracy_series(data, preset).items()):
      style.points(ax, [positions[e] for e, _ in points], [a for _, a in points], [False] * len(points),
                   style.program_color(program), f"ours ({preset}), {style.program_name(program)}",
                   marker=PRESET_MARKERS[preset], linestyle="-" if preset == data.preset else "-.")
  for program, values in reported.ACCURACY.items():
    es = sorted(values)
    style.report_series(ax, [i + 1 for i in range(len(es))], [values[e] for e in es],
                        f"{style.REPORT_LABEL}, {style.program_name(program)}", color=style.program_color(program))
  ax.axhline(reported.MP_ACCURACY_TEXT, color="0.7", linewidth=0.8)
  ax.annotate(f"report text: model parallel ~{reported.MP_ACCURACY_TEXT:.4f}", (0.6, reported.MP_ACCURACY_TEXT),
              fontsize=7, va="bottom", color="0.4")
  labels = []
  paper = series.epoch_settings("paper")
  for i, e in enumerate(paper):
    extra = [f"{p}: {series.epoch_settings(p)[i]}+{series.epoch_settings(p)[i]}" for p in shown if p != "paper"
             and i < len(series.epoch_settings(p))]
    labels.append(f"{e}+{e}" + "".join(f"\n({x})" for x in extra))
  ax.set_xticks(range(1, len(labels) + 1), labels, fontsize=8)
  ax.set_xlabel("pretraining + finetuning epochs (report's; shrunk presets in brackets)")
  ax.set_ylabel("test accuracy")
  ax.legend(fontsize=7)
  style.finish(fig, data, presets_shown=shown)
  return fig


_BARS = (("report_recipe", "ours: DP, report's recipe", programs.DATA_PARALLEL.color),
         ("large_batch", "ours: DP, large-batch recipe", "darkgreen"),
         ("baseline", "ours: greedy, batch 100", programs.GREEDY.color),
         ("report", f"{style.REPORT_LABEL}: DP", style.REPORT_COLOR))


def draw_dp_accuracy(data: records.EntryData, others=None):
  """Bars per epoch setting, one panel per preset with records."""
  shown = series.presets_shown(data)
  fig, axes = style.figure(len(shown), width=8 if len(shown) == 1 else 6.5)
  for ax, preset in zip(axes, shown):
    rows = series.dp_accuracy_rows(data, preset)
    for j, (key, label, color) in enumerate(_BARS):
      present = [(i + (j - 1.5) * 0.2, row[key]) for i, row in enumerate(rows) if row[key] is not None]
      xs, heights = [x for x, _ in present], [h for _, h in present]
      style.bars(ax, xs, heights, 0.2, color, label)
      style.annotate_bars(ax, xs, heights, "{:.3f}")
    for i, row in enumerate(rows):
      if row["baseline"] is not None:
        ax.hlines(row["baseline"] - series.DP_TOLERANCE, i - 0.45, i + 0.45, colors="0.2", linestyles=":")
    dp = [r for n, r in series.runs_of(data, preset).items() if n.startswith("dp_")]
    ax.set_xticks(range(len(rows)), [f"{row['epochs']}+{row['epochs']} epochs" for row in rows])
    ax.set_xlim(-0.6, len(rows) - 0.4)
    ax.set_title(f"ours: preset {preset}, DP {series.batch_label(dp) or '—'}; report: batch 5000 per tower, "
                 "30+30 / 60+60", fontsize=8)
    ax.set_ylabel("test accuracy")
    ax.set_ylim(0, 1.35)
    ax.set_yticks([0, 0.2, 0.4, 0.6, 0.8, 1.0])
    ax.legend(fontsize=7, loc="upper left", ncol=2)
  style.finish(fig, data, f"dotted: greedy - {series.DP_TOLERANCE} (the data-parallel goal)", presets_shown=shown)
  return fig
