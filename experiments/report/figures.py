"""Every figure: <output_dir>/figures/<entry>.png of each entry with records (its `Entry.figure` is one of the
functions below) and the equal-cores figure; a footer names preset, dataset and hardware, oversubscribed points are
hollow."""

import os
import re
import statistics
import textwrap
from typing import Callable, Dict, List, Optional, Sequence

from matplotlib import figure as mpl_figure

from common.settings import programs
from experiments import load
from experiments import perf_model
from experiments import presets
from experiments import records
from experiments import reported
from experiments.benchmarks import async_data_parallel as async_bench
from experiments.benchmarks import equal_cores as equal_cores_bench
from experiments.benchmarks import harness
from experiments.report import series
from experiments.report import tables

REPORT_COLOR = "0.45"
REPORT_LABEL = reported.HARDWARE
COLORS = ("tab:blue", "tab:orange", "tab:green", "tab:red", "tab:purple", "tab:brown")
# Markers and line styles of the machines a scaling figure shows: this one (""), then the others.
MACHINE_STYLES = {"": ("o", "-"), "xeon16": ("D", ":"), records.EARLIER: ("s", "-.")}
PRESET_MARKERS = {"paper": "o", "cpu": "^", "smoke": "x", "mid": "v", "full": "D"}
PHASES = {"input": ("input (gather + corrupt)", "tab:blue"), "forward_loss": ("forward + loss", "tab:orange"),
          "gradients": ("gradients", "0.6"), "allreduce": ("all-reduce (accumulate + average)", "gold"),
          "apply": ("apply SGD update", "tab:cyan")}
GREEDY, MP, DP = programs.GREEDY, programs.MODEL_PARALLEL, programs.DATA_PARALLEL


def color(program: str) -> str:
  """A program's registry colour."""
  return programs.get(program).color


def new(ncols: int = 1, width: float = 6.4, height: float = 4.8):
  """A figure with `ncols` axes side by side: (figure, [axes])."""
  fig = mpl_figure.Figure(figsize=(width * ncols, height))
  return fig, list(fig.subplots(1, ncols, squeeze=False)[0])


def finish(fig, data: records.EntryData, extra: str = "", presets_shown: Sequence[str] = (),
           more: Sequence[records.EntryData] = ()) -> None:
  """Titles the figure; footer: preset and what it shrinks, dataset, hardware, hollow markers, other machines `more`."""
  fig.suptitle(presets.get(data.entry).title, fontsize=12)
  rs = [r for p in (presets_shown or [data.preset]) for r in series.by_preset(data)[p].values()]
  lines = [series.preset_note(data.entry, p) for p in (presets_shown or [data.preset])]
  lines.append(f"ours: dataset {records.datasets(rs)}; {records.hardware(rs)}; 1 thread per device" + (
      "; hollow markers/hatched bars: more devices than cores (oversubscribed)"
      if any(records.oversubscribed(r) for r in rs) else ""))
  lines += [f"also: {records.hardware(list(o.runs.values()))} (diamonds, dotted), preset {o.preset}" for o in more]
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


def scaling(data: records.EntryData, others: Dict[str, records.EntryData]):
  """Seconds vs devices with the model's lines (left), speedup over 1 device (right): every machine, the report."""
  fig, (left, right) = new(2)
  max_g = perf_model.MAX_PREDICTED_DEVICES if len(series.stacks(data)) == 1 else 4
  for machine, d in [("", data)] + list(others.items()):
    marker, line = MACHINE_STYLES[machine]
    model, _ = perf_model.calibrated(d.runs)
    single = len(series.stacks(d)) == 1
    cores = f"{series.cores(d)} cores" + (", earlier code" if machine == records.EARLIER else "")
    for i, (h, by_g) in enumerate(series.stacks(d).items()):
      c, gs, label = DP.color if single else COLORS[i], list(by_g), f"{'' if single else f'{h} layers, '}{cores}"
      over = [records.oversubscribed(by_g[g]) for g in gs]
      points(left, gs, [by_g[g]["pretrain_seconds"] for g in gs], over, c, label, line, marker)
      if model is not None and h <= len(model.epoch_seconds):
        xs = range(1, (max_g if single else h) + 1)
        left.plot(xs, [model.predict(by_g[gs[0]]["config"], g) for g in xs], "--", color=c, alpha=0.5, linewidth=1)
      if 1 in by_g:
        points(right, gs, [records.ratio(by_g[1], by_g[g]) for g in gs], over, c, f"ours, {label}", line, marker)
  report = reported.MP_SCALING.get(data.entry, {})
  for i, (h, rep) in enumerate(sorted(report.items())):
    report_series(right, sorted(rep), [rep[1] / rep[g] for g in sorted(rep)], f"{REPORT_LABEL}, {h} layers",
                  COLORS[i])
  if not report:
    right.plot([], [], " ", label=f"{REPORT_LABEL}: {reported.DP_SCALING_TEXT}")
  left.plot([], [], "--", color="0.5", linewidth=1, label="performance model (fit on G <= 2)")
  devices_axes(left, right, series.cores(data), max_g)
  model, why = perf_model.calibrated(data.runs)
  finish(fig, data, f"performance model ({records.machine_label(list(data.runs.values()))}): {model.describe()}; "
                    f"calibrated on {', '.join(model.calibration)}" if model else why, more=list(others.values()))
  return fig


def pp_scaling(data: records.EntryData, others=None):
  """Seconds vs devices (left, model dashed) and speedup over one device (right), one line per stack."""
  fig, (left, right) = new(2)
  rows = series.pipeline_rows(data)
  for i, stack in enumerate(dict.fromkeys(row["stack"] for row in rows)):
    mine = [row for row in rows if row["stack"] == stack]
    gs, over = [row["devices"] for row in mine], [row["oversubscribed"] for row in mine]
    points(left, gs, [row["seconds"] for row in mine], over, COLORS[i], f"{stack} units")
    if all(row["predicted"] is not None for row in mine):
      left.plot(gs, [row["predicted"] for row in mine], "--", color=COLORS[i], alpha=0.5, linewidth=1)
    if all(row["speedup"] is not None for row in mine):
      points(right, gs, [row["speedup"] for row in mine], over, COLORS[i], f"{stack} units")
  left.plot([], [], "--", color="0.5", linewidth=1, label="performance model (FLOP rate fit on G = 1)")
  devices_axes(left, right, series.cores(data), max(row["devices"] for row in rows))
  finish(fig, data, "pipeline_parallel is not in the report; model: critical path of the ticks and the cores, at "
                    "the one-device FLOP rate")
  return fig


def dp_batch_sweep(data: records.EntryData, others=None):
  """Seconds per epoch (left) and examples per second (right) vs global batch, ours and the report's."""
  fig, (left, right) = new(2)
  pts, rep = series.sweep_points(data), reported.DP_BATCH_SWEEP
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


def _phases(ax, rows: Dict[int, Dict[str, float]], over: Dict[int, bool]) -> None:
  """Stacked bars of seconds per epoch by phase per device count, the total above each."""
  gs, bottoms = list(rows), [0.0] * len(rows)
  for phase, (label, c) in PHASES.items():
    heights = [rows[g].get(phase, 0.0) for g in gs]
    bars(ax, gs, heights, 0.6, c, label, [over.get(g, False) for g in gs], bottoms, annotate=None)
    bottoms = [b + h for b, h in zip(bottoms, heights)]
  for x, total in zip(gs, bottoms):
    ax.annotate(("{:.2f}" if max(bottoms) < 10 else "{:.1f}").format(total), (x, total), ha="center", va="bottom",
                fontsize=7)
  ax.set(xticks=gs, xlabel="devices G", ylabel="seconds per epoch")


def dp_op_profile(data: records.EntryData, others=None):
  """Stacked seconds per epoch by phase vs devices: ours (left) and the report's (right)."""
  fig, (left, right) = new(2)
  rows = tables.profile_rows(data)
  methods = sorted({re.sub(r"all \d+ replica\(s\)", "all G replicas", str((r.get("profile") or {}).get("method", "?")))
                    for r in data.runs.values()})  # One note for all device counts.
  if rows:
    _phases(left, {g: p for g, (p, _) in rows.items()}, {g: o for g, (_, o) in rows.items()})
  else:
    left.text(0.5, 0.5, "no op profile in these records", ha="center", transform=left.transAxes)
  left.set_title(f"ours (layer 1), {series.batch_label(list(data.runs.values()))}", fontsize=7)
  left.legend(fontsize=7)
  _phases(right, reported.DP_OP_PROFILE, {})
  right.set_title(f"{REPORT_LABEL} (read off dpres3.png)", fontsize=9)
  finish(fig, data, "ours: " + " / ".join(methods))
  return fig


def mp_vs_dp(data: records.EntryData, others=None):
  """Grouped bars: data parallel vs model parallel seconds; ours (left), the report's (right)."""
  fig, (left, right) = new(2)
  groups, keys = series.mp_vs_dp_groups(data), sorted(reported.MP_VS_DP)
  for j, program in enumerate((DP.name, MP.name)):
    rs = [g.get(program) for _, g in groups]
    bars(left, [i + (j - 0.5) * 0.35 for i in range(len(groups))], [r["pretrain_seconds"] if r else 0.0 for r in rs],
         0.35, color(program), series.program_name(program), [bool(r) and records.oversubscribed(r) for r in rs])
    bars(right, [i + (j - 0.5) * 0.35 for i in range(len(keys))], [reported.MP_VS_DP[k][program] for k in keys], 0.35,
         color(program), series.program_name(program))
  ours = f"ours: {series.batch_label(list(data.runs.values()))}"
  for ax, labels, title in ((left, [label for label, _ in groups], ours),
                            (right, [f"{e} epochs - Config {c[1]}" for e, c in keys],
                             f"{REPORT_LABEL}: batch 7000 (data parallel: per tower)")):
    ax.set_xticks(range(len(labels)), labels, fontsize=8)
    ax.set_title(title, fontsize=8)
    ax.set(ylabel="pretraining seconds")
    ax.legend(fontsize=8)
  configs = sorted({"-".join(map(str, r["config"]["hidden_units"])) for _, g in groups for r in g.values()},
                   key=lambda c: (len(set(c.split("-"))), c))
  finish(fig, data, f"ours: Config 1 / Config 2 = {' / '.join(configs)}; report: 2000-2000-2000-2000 / 2000-1000-500-100")
  return fig


def strategy_comparison(data: records.EntryData, others=None):
  """Bars of pretraining seconds per program with speedups over greedy; ours and the report's."""
  fig, (left, right) = new(2, width=5.5)
  rs, rep = series.strategy_records(data), reported.STRATEGY_COMPARISON
  base = rs.get(programs.baseline().run_name)
  ours = [(series.strategy(r), r["pretrain_seconds"], records.oversubscribed(r),
           tables.fmt(records.ratio(base, r), "×")[:-1] if base else "") for r in rs.values()]
  theirs = [(p, s, False, f"{rep[GREEDY.name] / s:.2f}") for p, s in rep.items()]
  for ax, shown, title in ((left, ours, "ours, single runs (speedup over greedy inside the bars)"),
                           (right, theirs, REPORT_LABEL)):
    for i, (program, s, over, speedup) in enumerate(shown):
      bars(ax, [i], [s], 0.6, color(program), series.program_name(program), [over])
      if speedup:  # readable on any bar: dark text on a white box
        ax.annotate(f"{speedup}x", (i, s / 2), ha="center", fontsize=9,
                    bbox=dict(boxstyle="round", fc="white", ec="none", alpha=0.8))
    ax.set_xticks(range(len(shown)), [series.program_name(p) for p, *_ in shown], fontsize=8)
    ax.set_title(title, fontsize=9)
    ax.set_ylabel("pretraining seconds")
  finish(fig, data, f"ours: {series.batch_label(list(rs.values()))}; report: batch 5000 (data parallel: per tower)")
  return fig


def convergence(data: records.EntryData, others=None):
  """Per layer: the compared loss after each epoch vs seconds, the fixed loss dotted, times to it in the legend."""
  rs = series.strategy_records(data)
  fig, axes = new(max(len(r["layers"]) for r in rs.values()), width=3.6, height=4.2)
  (key, targets), reach = series.convergence_loss(rs), series.times_to_target(data)
  for name, r in rs.items():
    label = series.program_name(series.strategy(r)) + ("" if name not in reach else ": not reached" if reach[name][0]
                                                       is None else f": {tables.fmt(reach[name][0])} s")
    for k, curve in enumerate(records.loss_curves(r, key)):
      points(axes[k], [t for t, _ in curve], [loss for _, loss in curve], [records.oversubscribed(r)] * len(curve),
             color(series.strategy(r)), label if k == 0 else None, marker=".")
  for k, ax in enumerate(axes):
    if targets:
      ax.axhline(targets[k], linestyle=":", color="0.3", linewidth=1)
    ax.set_title(f"layer {k + 1}", fontsize=9)
    ax.set(xlabel="seconds since pretraining began", yscale="log")
  axes[0].set_ylabel("held-out reconstruction loss (test images)" if key == "heldout_loss"
                     else "reconstruction loss (epoch mean)")
  axes[0].legend(fontsize=7, title="time to fixed loss", title_fontsize=7)
  finish(fig, data, f"fixed loss (dotted): greedy's final loss of each layer x {1 + series.LOSS_TOLERANCE}; time to "
                    "reach it = when the last layer gets there. The report has no such figure.")
  return fig


def accuracy_vs_epochs(data: records.EntryData, others=None):
  """Test accuracy vs (pretraining, finetuning) epochs, every preset with records; x = the i-th setting of each."""
  fig, (ax,) = new(1, width=8)
  shown = series.by_preset(data)
  for preset, runs in shown.items():
    positions = {e: i + 1 for i, e in enumerate(series.epoch_settings(preset))}
    for program, pts in sorted(series.accuracy_series(runs).items()):
      points(ax, [positions[e] for e, _ in pts], [a for _, a in pts], [False] * len(pts), color(program),
             f"ours ({preset}), {series.program_name(program)}", "-" if preset == data.preset else "-.",
             PRESET_MARKERS[preset])
  for program, values in reported.ACCURACY.items():
    report_series(ax, range(1, len(values) + 1), [values[e] for e in sorted(values)],
                  f"{REPORT_LABEL}, {series.program_name(program)}", color(program))
  ax.axhline(reported.MP_ACCURACY_TEXT, color="0.7", linewidth=0.8)
  ax.annotate(f"report text: model parallel ~{reported.MP_ACCURACY_TEXT:.4f}", (0.6, reported.MP_ACCURACY_TEXT),
              fontsize=7, va="bottom", color="0.4")
  settings = {p: series.epoch_settings(p) for p in shown if p != "paper"}
  labels = [f"{e}+{e}" + "".join(f"\n({p}: {s[i]}+{s[i]})" for p, s in settings.items() if i < len(s))
            for i, e in enumerate(series.epoch_settings("paper"))]
  ax.set_xticks(range(1, len(labels) + 1), labels, fontsize=8)
  ax.set(xlabel="pretraining + finetuning epochs (report's; shrunk presets in brackets)", ylabel="test accuracy")
  ax.legend(fontsize=7)
  finish(fig, data, presets_shown=list(shown))
  return fig


def dp_accuracy(data: records.EntryData, others=None):
  """Bars of test accuracy per epoch setting (both recipes, greedy, the report), one panel per preset."""
  shown = series.by_preset(data)
  fig, axes = new(len(shown), width=8 if len(shown) == 1 else 6.5)
  kinds = (("report_recipe", "ours: DP, report's recipe", DP.color), ("large_batch", "ours: DP, large-batch recipe",
           "darkgreen"), ("baseline", "ours: greedy, batch 100", GREEDY.color),
           ("report", f"{REPORT_LABEL}: DP", REPORT_COLOR))
  for ax, (preset, runs) in zip(axes, shown.items()):
    rows = series.dp_accuracy_rows(runs, preset)
    for j, (key, label, c) in enumerate(kinds):
      present = [(i + (j - 1.5) * 0.2, row[key]) for i, row in enumerate(rows) if row[key] is not None]
      bars(ax, [x for x, _ in present], [h for _, h in present], 0.2, c, label, annotate="{:.3f}")
    for i, row in ((i, row) for i, row in enumerate(rows) if row["baseline"] is not None):
      ax.hlines(row["baseline"] - series.DP_TOLERANCE, i - 0.45, i + 0.45, colors="0.2", linestyles=":")
    dp = [r for n, r in runs.items() if n.startswith("dp_")]
    ax.set_xticks(range(len(rows)), [f"{row['epochs']}+{row['epochs']} epochs" for row in rows])
    ax.set_title(f"ours: preset {preset}, DP {series.batch_label(dp) or '—'}; report: batch 5000 per tower, "
                 "30+30 / 60+60", fontsize=8)
    ax.set(xlim=(-0.6, len(rows) - 0.4), ylim=(0, 1.35), yticks=[0, 0.2, 0.4, 0.6, 0.8, 1.0], ylabel="test accuracy")
    ax.legend(fontsize=7, loc="upper left", ncol=2)
  finish(fig, data, f"dotted: greedy - {series.DP_TOLERANCE} (the data-parallel goal)", presets_shown=list(shown))
  return fig


def fashion_mnist_accuracy(data: records.EntryData, others=None):
  """Bars of test accuracy per program, each dataset of the entry side by side; the published baselines dashed."""
  fig, (ax,) = new(1, width=8)
  acc, names, e = series.dataset_accuracy(data), [p.name for p in presets.ACCURACY_COMPARED], series.most_epochs(data)
  for j, (dataset, by) in enumerate(acc.items()):
    bars(ax, [i + (j + 0.5 - len(acc) / 2) * 0.8 / len(acc) for i, n in enumerate(names) if n in by],
         [by[n] for n in names if n in by], 0.8 / len(acc), COLORS[j], f"ours, {records.dataset_label(dataset)}",
         annotate="{:.3f}")
  for k, (d, m, a) in enumerate((d, m, a) for d in acc for m, a in reported.PUBLISHED_BASELINES.get(d, {}).items()):
    ax.axhline(a, ls=("--", ":")[k % 2], color="0.3", lw=1, label=f"published, {records.dataset_label(d)}: {m} {a}")
  ax.set_xticks(range(len(names)), [series.program_name(n) for n in names], fontsize=8)
  ax.set(ylim=(min([0.85] + [a for by in acc.values() for a in by.values()]) - 0.05, 1.06), ylabel="test accuracy")
  ax.legend(fontsize=7, loc="upper center", ncol=2)
  finish(fig, data, f"{e}+{e} epochs, single runs; MNIST: accuracy_vs_epochs' runs; published baselines: other models "
                    "(the Fashion-MNIST benchmark table), not the report's numbers")
  return fig


def equal_cores(output_dir: str) -> Optional[str]:
  """<output_dir>/figures/equal_cores.png, every configuration's speedup over greedy on all cores; None: no data."""
  found, _ = series.equal_cores(output_dir)
  if not found:
    return None
  fig, axes = new(len(found), width=5.6, height=4.8)
  for ax, ((cores, batch), s) in zip(axes, found.items()):
    names = sorted(s["pretrain_seconds"], key=lambda n: s["pretrain_seconds"][n]["median"])
    spreads = [series.ratios_to_baseline(s, n) for n in names]
    colors = [color(equal_cores_bench.program_of(n)) for n in names]
    ax.barh(range(len(names)), [r["median"] for r in spreads], color=colors,
            xerr=[[r["median"] - r["min"] for r in spreads], [r["max"] - r["median"] for r in spreads]], capsize=3)
    ax.set_yticks(range(len(names)), [n.replace("_", " ") for n in names], fontsize=8)
    ax.invert_yaxis()
    ax.axvline(1.0, color="0.3", lw=0.8, ls="--")
    ax.set(xlabel="speedup over greedy on all cores\n(median, min–max over repeats)",
           title=f"batch {batch}, {cores} cores")
  fig.suptitle(f"Equal cores: 4 × 1000 units, {s['setting']['train_examples']:,} images,\n"
               f"{s['setting']['pretrain_epochs']} pretraining epochs, {s['setting']['repeats']} alternated repeats",
               fontsize=10)
  fig.tight_layout()
  path = os.path.join(output_dir, "figures", series.EQUAL_CORES)
  save(fig, path)
  return path


def straggler(output_dir: str) -> Optional[str]:
  """<output_dir>/figures/async_data_parallel.png: per batch, every configuration's seconds to greedy's final
  held-out loss (median over repeats), with and without the straggler; None without summaries."""
  found = harness.load_summaries(output_dir, async_bench.BENCHMARK)
  if not found:
    return None
  fig, axes = new(len(found), width=5.6, height=4.2)
  for ax, s in zip(axes, found.values()):
    times = {n: statistics.median(t) for n, t in s["seconds_to_greedy_heldout_loss"].items() if None not in t}
    names = list(s["seconds_to_greedy_heldout_loss"])
    program = {p.run_name: p.name for p in programs.PROGRAMS}
    ax.barh(range(len(names)), [times.get(n, 0.0) for n in names],
            color=[color(program[n.split("_")[0]]) for n in names])
    for i, n in enumerate(names):
      ax.annotate("never" if n not in times else f"{times[n]:.0f} s", (times.get(n, 0.0), i), va="center", fontsize=7)
    ax.set_yticks(range(len(names)), [n.replace("_", " ") for n in names], fontsize=8)
    ax.invert_yaxis()
    ax.set(xlabel="seconds until every layer reached greedy's final held-out loss (+1%)",
           title=f"batch {s['setting']['batch_size']}, straggler sleeps {s['setting']['slow_worker_delay']:g} s/step")
  fig.suptitle("Asynchronous vs synchronous data parallelism, with and without a straggler", fontsize=10)
  fig.tight_layout()
  path = os.path.join(output_dir, "figures", async_bench.BENCHMARK.figure)
  save(fig, path)
  return path


def make(output_dir: str, entry: str, data: records.EntryData):
  """The figure of `entry` drawn from `data` and the other machines' records in `output_dir`."""
  return load(presets.get(entry).figure)(data, records.other_machines(output_dir, entry))


def save(fig, path: str) -> None:
  """Writes the figure as PNG, creating its folder."""
  os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
  fig.savefig(path, dpi=110)


def draw(output_dir: str, entries: Optional[Sequence[str]] = None, out: Callable[[str], None] = print) -> List[str]:
  """Draws the figures of `entries` (default: all, and equal_cores) that have records; returns their paths."""
  written = []
  for entry in (e.name for e in presets.ENTRIES if e.figure and (entries is None or e.name in entries)):
    data = records.EntryData.load(output_dir, entry)
    if data is None:
      out(f"[figures] {entry}: no records yet, no figure")
      continue
    written.append(series.figure_path(output_dir, entry))
    save(make(output_dir, entry, data), written[-1])
    out(f"[figures] {entry}: {written[-1]} (preset {data.preset}, {len(data.runs)} records)")
  paths = [equal_cores(output_dir), straggler(output_dir)] if entries is None else []
  return written + [p for p in paths if p]
