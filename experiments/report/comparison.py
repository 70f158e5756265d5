"""Strategy comparisons: model vs data parallel (mp_vs_dp, conres1.png), every program of
`presets.COMPARED` side by side (strategy_comparison, conres3.png), and reconstruction loss vs wall-clock
seconds with the time to reach a fixed loss (convergence)."""

from common import programs
from experiments import records
from experiments import reported
from experiments.report import series
from experiments.report import style


def draw_mp_vs_dp(data: records.EntryData, others=None):
  """Grouped bars: data parallel vs model parallel seconds; ours (left), the report's (right)."""
  fig, (left, right) = style.figure(2)
  groups = series.mp_vs_dp_groups(data)
  for j, program in enumerate((programs.DATA_PARALLEL.name, programs.MODEL_PARALLEL.name)):
    xs = [i + (j - 0.5) * 0.35 for i in range(len(groups))]
    rs = [g.get(program) for _, g in groups]
    heights = [series.seconds(r) if r else 0.0 for r in rs]
    style.bars(left, xs, heights, 0.35, style.program_color(program), style.program_name(program),
               [bool(r) and records.oversubscribed(r) for r in rs])
    style.annotate_bars(left, xs, heights)
    rep = [reported.MP_VS_DP[key][program] for key in sorted(reported.MP_VS_DP)]
    rxs = [i + (j - 0.5) * 0.35 for i in range(len(rep))]
    style.bars(right, rxs, rep, 0.35, style.program_color(program), style.program_name(program))
    style.annotate_bars(right, rxs, rep)
  left.set_xticks(range(len(groups)), [label for label, _ in groups], fontsize=8)
  right.set_xticks(range(4), [f"{e} epochs - Config {c[1]}" for e, c in sorted(reported.MP_VS_DP)], fontsize=8)
  rs = list(data.runs.values())
  left.set_title(f"ours: {series.batch_label(rs)}", fontsize=8)
  right.set_title(f"{style.REPORT_LABEL}: batch 7000 (data parallel: per tower)", fontsize=8)
  for ax in (left, right):
    ax.set_ylabel("pretraining seconds")
    ax.legend(fontsize=8)
  configs = sorted({"-".join(map(str, r["config"]["hidden_units"])) for g in groups for r in g[1].values()},
                   key=lambda c: (len(set(c.split("-"))), c))
  style.finish(fig, data, f"ours: Config 1 / Config 2 = {' / '.join(configs)}; report: 2000-2000-2000-2000 / "
                          "2000-1000-500-100")
  return fig


def draw_strategy_comparison(data: records.EntryData, others=None):
  """Bars of pretraining seconds per program with speedups over greedy; ours and the report's."""
  fig, (left, right) = style.figure(2, width=5.5)
  rs = series.strategy_records(data)
  names = [series.strategy(r) for r in rs.values()]
  heights = [series.seconds(r) for r in rs.values()]
  for i, (program, r) in enumerate(zip(names, rs.values())):
    style.bars(left, [i], [heights[i]], 0.6, style.program_color(program), style.program_name(program),
               [records.oversubscribed(r)])
  base = rs.get(programs.GREEDY.run_name)
  style.annotate_bars(left, range(len(names)), heights)
  for i, r in enumerate(rs.values() if base else ()):
    style.label_inside(left, i, heights[i] / 2, f"{style.fmt_ratio(records.ratio(base, r))[:-1]}x")
  rep = reported.STRATEGY_COMPARISON
  for i, program in enumerate(rep):
    style.bars(right, [i], [rep[program]], 0.6, style.program_color(program), style.program_name(program))
    style.label_inside(right, i, rep[program] / 2, f"{rep[programs.GREEDY.name] / rep[program]:.2f}x")
  style.annotate_bars(right, range(len(rep)), list(rep.values()))
  left.set_xticks(range(len(names)), [style.program_name(p) for p in names], fontsize=8)
  right.set_xticks(range(len(rep)), [style.program_name(p) for p in rep], fontsize=8)
  left.set_title("ours, single runs (speedup over greedy inside the bars)", fontsize=9)
  right.set_title(style.REPORT_LABEL, fontsize=9)
  for ax in (left, right):
    ax.set_ylabel("pretraining seconds")
  style.finish(fig, data, f"ours: {series.batch_label(list(rs.values()))}; report: batch 5000 (data parallel: per "
                          "tower)")
  return fig


def draw_convergence(data: records.EntryData, others=None):
  """One panel per layer: held-out reconstruction loss after each epoch (the training epoch loss for records
  without it) vs seconds since pretraining began, per program, with the fixed loss as
  a dotted line and each program's time to reach it (all layers) in the legend."""
  rs = series.strategy_records(data)
  layers = max(len(r["layers"]) for r in rs.values())
  fig, axes = style.figure(layers, width=3.6, height=4.2)
  targets = series.convergence_targets(rs)
  reach = series.times_to_target(data)
  key = series.convergence_key(rs)
  for name, r in rs.items():
    program = series.strategy(r)
    label = style.program_name(program)
    if name in reach:
      label += f": {style.fmt_seconds(reach[name])} s" if reach[name] is not None else ": not reached"
    for k, curve in enumerate(records.loss_curves(r, key)):
      over = records.oversubscribed(r)
      style.points(axes[k], [t for t, _ in curve], [loss for _, loss in curve], [over] * len(curve),
                   style.program_color(program), label if k == 0 else None, marker=".")
  for k, ax in enumerate(axes):
    if targets:
      ax.axhline(targets[k], linestyle=":", color="0.3", linewidth=1)
    ax.set_title(f"layer {k + 1}", fontsize=9)
    ax.set_xlabel("seconds since pretraining began")
    ax.set_yscale("log")
  axes[0].set_ylabel("held-out reconstruction loss (test images)" if key == "heldout_loss"
                     else "reconstruction loss (epoch mean)")
  axes[0].legend(fontsize=7, title="time to fixed loss", title_fontsize=7)
  style.finish(fig, data, f"fixed loss (dotted): greedy's final loss of each layer x {1 + series.LOSS_TOLERANCE}; "
                          "time to reach it = when the last layer gets there. The report has no such figure.")
  return fig
