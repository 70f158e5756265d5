"""Strategy comparisons: model vs data parallel at batch 7000 (mp_vs_dp, conres1.png), greedy vs model vs
data parallel (strategy_comparison, conres3.png), and reconstruction loss vs wall-clock seconds with the
time to reach a fixed loss (convergence)."""

from typing import Dict, List, Optional, Tuple

from experiments import plot_style
from experiments import records
from experiments import reported

# convergence: the fixed loss of layer k is greedy's final loss of layer k times (1 + this).
LOSS_TOLERANCE = 0.01
STRATEGIES = ("greedy", "mp", "dp")


def mp_vs_dp_groups(data: plot_style.EntryData) -> List[Tuple[str, Dict[str, dict]]]:
  """[(group label "E epochs - Config n", {"dp": record, "mp": record})] in the report's order."""
  groups: Dict[Tuple[int, str], Dict[str, dict]] = {}
  for name, r in data.runs.items():
    config, epochs, strategy = name.split("_")
    groups.setdefault((int(epochs[1:]), config), {})[strategy] = r
  return [(f"{e} epochs - Config {c[1]}", groups[(e, c)]) for e, c in sorted(groups)]


def draw_mp_vs_dp(data: plot_style.EntryData):
  """Grouped bars: data parallel vs model parallel seconds; ours (left), the report's (right)."""
  fig, (left, right) = plot_style.figure(2)
  groups = mp_vs_dp_groups(data)
  for j, strategy in enumerate(("dp", "mp")):
    xs = [i + (j - 0.5) * 0.35 for i in range(len(groups))]
    rs = [g.get(strategy) for _, g in groups]
    heights = [r["pretrain_seconds"] if r else 0.0 for r in rs]
    plot_style.bars(left, xs, heights, 0.35, plot_style.STRATEGY_COLORS[strategy],
                    plot_style.STRATEGY_NAMES[strategy], [bool(r) and records.oversubscribed(r) for r in rs])
    plot_style.annotate_bars(left, xs, heights)
    rep = [reported.MP_VS_DP[key][strategy] for key in sorted(reported.MP_VS_DP)]
    rxs = [i + (j - 0.5) * 0.35 for i in range(len(rep))]
    plot_style.bars(right, rxs, rep, 0.35, plot_style.STRATEGY_COLORS[strategy], plot_style.STRATEGY_NAMES[strategy])
    plot_style.annotate_bars(right, rxs, rep)
  left.set_xticks(range(len(groups)), [label for label, _ in groups], fontsize=8)
  right.set_xticks(range(4), [f"{e} epochs - Config {c[1]}" for e, c in sorted(reported.MP_VS_DP)], fontsize=8)
  left.set_title("ours", fontsize=9)
  right.set_title(plot_style.REPORT_LABEL, fontsize=9)
  for ax in (left, right):
    ax.set_ylabel("pretraining seconds")
    ax.legend(fontsize=8)
  configs = sorted({"-".join(map(str, r["config"]["hidden_units"])) for g in groups for r in g[1].values()},
                   key=lambda c: (len(set(c.split("-"))), c))
  plot_style.finish(fig, data, f"ours: Config 1 / Config 2 = {' / '.join(configs)}; report: 2000-2000-2000-2000 / "
                               "2000-1000-500-100")
  return fig


def strategy_records(data: plot_style.EntryData) -> Dict[str, dict]:
  """{"greedy"|"mp"|"dp": record} of strategy_comparison / convergence."""
  return {s: data.runs[s] for s in STRATEGIES if s in data.runs}


def draw_strategy_comparison(data: plot_style.EntryData):
  """Bars of pretraining seconds per strategy with speedups over greedy; ours and the report's."""
  fig, (left, right) = plot_style.figure(2, width=5.5)
  rs = strategy_records(data)
  names = list(rs)
  heights = [rs[s]["pretrain_seconds"] for s in names]
  for i, s in enumerate(names):
    plot_style.bars(left, [i], [heights[i]], 0.6, plot_style.STRATEGY_COLORS[s], plot_style.STRATEGY_NAMES[s],
                    [records.oversubscribed(rs[s])])
  base = rs["greedy"]["pretrain_seconds"] if "greedy" in rs else None
  plot_style.annotate_bars(left, range(len(names)), heights)
  if base:
    for i, h in enumerate(heights):
      plot_style.label_inside(left, i, h / 2, f"{base / h:.2f}x")
  rep = reported.STRATEGY_COMPARISON
  for i, s in enumerate(STRATEGIES):
    plot_style.bars(right, [i], [rep[s]], 0.6, plot_style.STRATEGY_COLORS[s], plot_style.STRATEGY_NAMES[s])
    plot_style.label_inside(right, i, rep[s] / 2, f"{rep['greedy'] / rep[s]:.2f}x")
  plot_style.annotate_bars(right, range(3), [rep[s] for s in STRATEGIES])
  left.set_xticks(range(len(names)), [plot_style.STRATEGY_NAMES[s] for s in names], fontsize=8)
  right.set_xticks(range(3), [plot_style.STRATEGY_NAMES[s] for s in STRATEGIES], fontsize=8)
  left.set_title("ours (speedup over greedy inside the bars)", fontsize=9)
  right.set_title(plot_style.REPORT_LABEL, fontsize=9)
  for ax in (left, right):
    ax.set_ylabel("pretraining seconds")
  plot_style.finish(fig, data)
  return fig


def convergence_targets(rs: Dict[str, dict]) -> Optional[List[float]]:
  """The fixed loss of each layer: greedy's final epoch loss of that layer x (1 + LOSS_TOLERANCE)."""
  if "greedy" not in rs:
    return None
  return [layer["epochs"][-1]["loss"] * (1 + LOSS_TOLERANCE) for layer in rs["greedy"]["layers"]]


def times_to_target(data: plot_style.EntryData) -> Dict[str, Optional[float]]:
  """{strategy: seconds until every layer reached its fixed loss (None: never)}."""
  rs = strategy_records(data)
  targets = convergence_targets(rs)
  if targets is None:
    return {}
  return {s: records.time_to_loss(records.loss_curves(r), targets) for s, r in rs.items()}


def draw_convergence(data: plot_style.EntryData):
  """One panel per layer: epoch loss vs seconds since pretraining began, per strategy, with the fixed
  loss as a dotted line and each strategy's time to reach it (all layers) in the legend."""
  rs = strategy_records(data)
  layers = max(len(r["layers"]) for r in rs.values())
  fig, axes = plot_style.figure(layers, width=3.6, height=4.2)
  targets = convergence_targets(rs)
  reach = times_to_target(data)
  for s, r in rs.items():
    label = plot_style.STRATEGY_NAMES[s]
    if s in reach:
      label += f": {plot_style.fmt_seconds(reach[s])} s" if reach[s] is not None else ": not reached"
    for k, curve in enumerate(records.loss_curves(r)):
      over = records.oversubscribed(r)
      plot_style.points(axes[k], [t for t, _ in curve], [loss for _, loss in curve], [over] * len(curve),
                        plot_style.STRATEGY_COLORS[s], label if k == 0 else None, marker=".")
  for k, ax in enumerate(axes):
    if targets:
      ax.axhline(targets[k], linestyle=":", color="0.3", linewidth=1)
    ax.set_title(f"layer {k + 1}", fontsize=9)
    ax.set_xlabel("seconds since pretraining began")
    ax.set_yscale("log")
  axes[0].set_ylabel("reconstruction loss (epoch mean)")
  axes[0].legend(fontsize=7, title="time to fixed loss", title_fontsize=7)
  plot_style.finish(fig, data, f"fixed loss (dotted): greedy's final loss of each layer x {1 + LOSS_TOLERANCE}; "
                               "time to reach it = when the last layer gets there. The report has no such figure.")
  return fig
