"""Per entry: a markdown table of our numbers next to the report's and sentences on what agrees and differs,
from the records (`report.series`) and `experiments.reported`. Every table function takes (data, others): the
entry's records and {machine: records} of the other machines. Ratios of records go through `records.ratio`."""

from typing import List, Mapping, Optional, Tuple

from common import programs
from experiments import records
from experiments import reported
from experiments.report import series
from experiments.report import style

MODEL_ERROR_GOAL = 0.15
Others = Mapping[str, records.EntryData]
GREEDY, MP, DP = programs.GREEDY, programs.MODEL_PARALLEL, programs.DATA_PARALLEL


def judged_error(x: Optional[float]) -> str:
  """A relative error against the goal, e.g. "12.3% (within the 15% goal)"; "none" for None."""
  if x is None:
    return "none"
  return f"{x:.1%} ({'within' if x <= MODEL_ERROR_GOAL else 'outside'} the {MODEL_ERROR_GOAL:.0%} goal)"


def _over(record: dict) -> str:
  return " †" if records.oversubscribed(record) else ""


def _cores(data: records.EntryData) -> int:
  return min(records.cores(r) for r in data.runs.values())


def _seconds(r: Optional[dict]) -> str:
  return style.fmt_seconds(series.seconds(r)) + _over(r) if r else "—"


def scaling_report(entry: str) -> Mapping[int, Mapping[int, float]]:
  """The report's {layers: {GPUs: seconds}} of a model-parallel scaling entry ({} for another entry)."""
  return {"mp_scaling_b100": reported.MP_SCALING_B100, "mp_scaling_b5000": reported.MP_SCALING_B5000}.get(entry, {})


def contention_note(data: records.EntryData) -> str:
  """What the fitted slowdown of the performance model implies for 2 devices on this machine."""
  model, _ = series.model_for(data)
  if model is None or model.slowdown <= 1.0:
    return ""
  return (f"The performance model's slowdown of devices side by side, rho = {model.slowdown:.2f}, is fitted to the "
          f"2-device runs' times (not measured); with it 2 devices can give at most {2 / model.slowdown:.2f}× here.")


def cores_note(data: records.EntryData, others: Others) -> str:
  """What the records show beyond the core count, on this machine and the others."""
  cores = _cores(data)
  if not any(records.oversubscribed(r) for r in data.runs.values()):
    return ""
  faster = series.oversubscribed_faster(data)
  text = (f"This machine has {cores} cores: more devices than that run as logical devices sharing the cores "
          "(oversubscribed, †), so they add no compute; ")
  if faster:
    cases = "; ".join(f"{h} layers on {g} devices {style.fmt_seconds(s)} s vs {style.fmt_seconds(b)} s on {gb}"
                      for h, g, s, gb, b in faster)
    text += (f"still, some oversubscribed runs were faster than the fastest run on at most {cores} devices ({cases}); "
             "the Performance model section shows how many cores' worth of work each run kept going.")
  else:
    text += f"none was faster than the fastest run on at most {cores} devices."
  for machine, other in others.items():
    ends = [f"{h} layers {style.fmt_ratio(records.ratio(g[1], g[max(g)]))} on {max(g)} devices"
            for h, g in series.stacks(other).items() if 1 in g and max(g) > 1]
    text += (f" On the {_cores(other)}-core machine (`{machine}/`), where every device has its own core, the speedup "
             f"over 1 device reached: {', '.join(ends)} (single runs).")
  return text


def _model_cell(p) -> str:
  if p is None:
    return "—"
  return f"{style.fmt_seconds(p.predicted)} ({p.relative_error:+.0%}{', fit' if p.in_calibration else ''})"


def scaling(data: records.EntryData, others: Others) -> Tuple[str, List[str]]:
  """Seconds and speedup per (machine, layers, devices), ours beside the report's and the model's."""
  report = scaling_report(data.entry)
  rows, sentences = [], []
  for machine, d in [("", data)] + list(others.items()):
    predicted = {(len(p.hidden_units), p.devices): p for p in series.model_predictions(d)}
    for h, by_g in series.stacks(d).items():
      rep = report.get(h, {}) if not machine else {}  # The report's numbers once, beside this machine's.
      for g in sorted(set(by_g) | set(rep)):
        r = by_g.get(g)
        rows.append([records.machine_label([r]) if r else "—", h, g, _seconds(r),
                     style.fmt_ratio(records.ratio(by_g[1], r) if r and 1 in by_g else None),
                     _model_cell(predicted.get((h, g))), style.fmt_seconds(rep.get(g)),
                     style.fmt_ratio(rep[1] / rep[g] if g in rep else None)])
      rep, top = report.get(h), max(by_g)
      if rep and 1 in by_g and not machine:
        sentences.append(f"{h} layers: the report went {rep[1]} → {rep[max(rep)]} s ({rep[1] / rep[max(rep)]:.2f}×) "
                         f"from 1 to {max(rep)} GPUs; ours {style.fmt_seconds(series.seconds(by_g[1]))} → "
                         f"{style.fmt_seconds(series.seconds(by_g[top]))} s "
                         f"({style.fmt_ratio(records.ratio(by_g[1], by_g[top]))}) from 1 to {top} devices.")
  if data.entry == "dp_scaling":
    sentences.append(f"The report calls its speedup {reported.DP_SCALING_TEXT}.")
  sentences += [f"Ours: {series.batch_label(list(data.runs.values()))}; {reported.DP_BATCH_NOTE}."
                if data.entry == "dp_scaling" else "",
                "Each point is a single run.", contention_note(data), cores_note(data, others)]
  return style.md_table(["machine", "layers", "devices", "ours s", "ours speedup", "model s (error)", "report s",
                         "report speedup"], rows), sentences


def dp_batch_sweep(data: records.EntryData, others: Others) -> Tuple[str, List[str]]:
  """Seconds per epoch and examples per second per global batch, ours and the report's."""
  pts = series.sweep_points(data)
  g = sorted({records.devices(r) for r in data.runs.values()})
  rows = []
  for batch, secs, rate, over in pts:
    per_gpu = batch // 4
    rep = reported.DP_BATCH_SWEEP.get(per_gpu)
    rows.append([batch, "/".join(f"{batch // d}" for d in g), f"{secs:.2f}" + (" †" if over else ""), f"{rate:,.0f}",
                 f"{rep}" if rep else "—", f"{55_000 / rep:,.0f}" if rep else "—"])
  best = min(pts, key=lambda p: p[1])
  rep_best = min(reported.DP_BATCH_SWEEP, key=reported.DP_BATCH_SWEEP.get)
  sentences = [f"Ours on {'/'.join(map(str, g))} devices, the report on 4 GPUs with a per-GPU batch: its rows are matched "
               f"at global = 4 × its batch. Fastest epoch: ours at global batch {best[0]}, the report at {rep_best} per "
               f"GPU (global {4 * rep_best}). Both fall steeply from the smallest batch, where per-step costs "
               "(all-reduce, dispatch) dominate.",
               f"Ours ran {sorted({r['config']['train_examples'] for r in data.runs.values()})[0]:,} examples per epoch "
               "(report: 55,000): compare examples per second, not seconds. Each point is a single run."]
  return style.md_table(["global batch", "ours per device", "ours s/epoch", "ours examples/s",
                         "report s/epoch (global/4 per GPU)", "report examples/s"], rows), sentences


def dp_op_profile(data: records.EntryData, others: Others) -> Tuple[str, List[str]]:
  """Seconds per epoch of each phase per device count, ours and the report's."""
  rows_ours = series.profile_rows(data)
  rows = []
  for g in sorted(set(rows_ours) | set(reported.DP_OP_PROFILE)):
    phases, over = rows_ours.get(g, ({}, False))
    rep = reported.DP_OP_PROFILE.get(g, {})
    cells = [g] + [f"{phases[p]:.3f}" if p in phases else "—" for p in series.PHASES]
    cells.append((f"{sum(phases.values()):.3f}" if phases else "—") + (" †" if over else ""))
    cells += [f"{rep.get('forward_loss', 0) + rep.get('gradients', 0):.1f}" if rep else "—",
              f"{rep['allreduce']:.1f}" if rep else "—", f"{reported.DP_OP_PROFILE_TOTAL.get(g, '—')}"]
    rows.append(cells)
  sentences = [f"Ours: {series.batch_label(list(data.runs.values()))}; {reported.DP_BATCH_NOTE}."]
  if 1 in rows_ours and max(rows_ours) > 1:
    g = max(rows_ours)
    one, many = rows_ours[1][0], rows_ours[g][0]
    compute = lambda p: p["forward_loss"] + p["gradients"]  # noqa: E731
    sentences.append(f"Ours: loss + gradient compute {compute(one):.3f} → {compute(many):.3f} s per epoch from 1 to {g} "
                     f"devices, all-reduce {one['allreduce']:.3f} → {many['allreduce']:.3f} s; the report: compute "
                     "68 → 12.7 s, all-reduce ~10-14 s at every GPU count.")
  sentences.append(cores_note(data, others))
  header = ["devices"] + [f"ours {p}" for p in series.PHASES] + [
      "ours total", "report loss+gradient", "report accumulate+average", "report total"]
  return style.md_table(header, rows), sentences


def mp_vs_dp(data: records.EntryData, others: Others) -> Tuple[str, List[str]]:
  """Data vs model parallel seconds per setting, ours and the report's."""
  rows, ratios = [], []
  rep = [reported.MP_VS_DP[k] for k in sorted(reported.MP_VS_DP)]
  for i, (label, g) in enumerate(series.mp_vs_dp_groups(data)):
    dp, mp = g.get(DP.name), g.get(MP.name)
    ratio = records.ratio(mp, dp) if dp and mp else None
    ratios.append(ratio)
    r = rep[i] if i < len(rep) else {}
    rows.append([label, _seconds(dp), _seconds(mp), style.fmt_ratio(ratio),
                 r.get(DP.name, "—"), r.get(MP.name, "—"), style.fmt_ratio(r[MP.name] / r[DP.name] if r else None)])
  known = [f for f in ratios if f is not None]
  sentences = [f"Ours: {series.batch_label(list(data.runs.values()))}; the report: batch 7000 "
               f"({reported.DP_BATCH_NOTE}). Single runs."]
  if known:
    sentences.append(f"Report: data parallel faster in all four settings (model/data time 1.33-1.65×). Ours: data "
                     f"parallel faster in {sum(f > 1 for f in known)} of {len(known)} (ratios "
                     f"{', '.join(f'{f:.2f}×' for f in known)}).")
  header = ["setting (ours)", "ours DP s", "ours MP s", "ours MP/DP", "report DP s", "report MP s", "report MP/DP"]
  return style.md_table(header, rows), sentences


def accuracy_vs_epochs(data: records.EntryData, others: Others) -> Tuple[str, List[str]]:
  """Test accuracy per program and epochs, every preset present and the report's."""
  rows, sentences = [], []
  for preset in series.presets_shown(data):
    points = series.accuracy_series(data, preset)
    for program, values in points.items():
      rows += [[preset, style.program_name(program), f"{e}+{e}", style.fmt_accuracy(a)] for e, a in values]
    ratios = series.heldout_vs_greedy(data, preset)
    if ratios:
      worst = {}
      for (program, e), per_layer in ratios.items():
        worst[program] = max(worst.get(program, (0.0, 0)), max((abs(x - 1), e) for x in per_layer))
      sentences.append(f"{preset}: held-out reconstruction loss at the end of pretraining, per layer, relative to "
                       "greedy's at the same epochs (test images through the stack below, fixed masks): " +
                       "; ".join(f"{style.program_name(p)} within {100 * w:.1f}% (largest gap at {e}+{e} epochs)"
                                 for p, (w, e) in sorted(worst.items())) + ".")
    if points.get(GREEDY.name) and points.get(MP.name):
      g, m = points[GREEDY.name][-1], points[MP.name][-1]
      sentences.append(f"{preset}: at {g[0]}+{g[0]} epochs greedy {g[1]:.4f}, model parallel {m[1]:.4f} "
                       f"(report at 60+60: greedy {reported.ACCURACY[GREEDY.name][60]}, model parallel "
                       f"{reported.ACCURACY[MP.name][60]}, text ~{reported.MP_ACCURACY_TEXT}).")
  rows += [["report", style.program_name(p), f"{e}+{e}", f"{a:.4f}"] for p in reported.ACCURACY
           for e, a in sorted(reported.ACCURACY[p].items())]
  return style.md_table(["preset", "program", "epochs", "test accuracy"], rows), sentences


def dp_accuracy(data: records.EntryData, others: Others) -> Tuple[str, List[str]]:
  """Data-parallel test accuracy per recipe and epochs vs greedy and the report."""
  rows, sentences = [], []
  for preset in series.presets_shown(data):
    dp = [r for n, r in series.runs_of(data, preset).items() if n.startswith("dp_")]
    for row in series.dp_accuracy_rows(data, preset):
      goal = row["baseline"] - series.DP_TOLERANCE if row["baseline"] is not None else None
      rows.append([preset, f"{row['epochs']}+{row['epochs']}", series.batch_label(dp),
                   style.fmt_accuracy(row["report_recipe"]), style.fmt_accuracy(row["large_batch"]),
                   style.fmt_accuracy(row["baseline"]), style.fmt_accuracy(goal), style.fmt_accuracy(row["report"])])
      if row["large_batch"] is not None and goal is not None:
        sentences.append(f"{preset}, {row['epochs']}+{row['epochs']}: the large-batch recipe "
                         f"{'reaches' if row['large_batch'] >= goal else 'misses'} greedy - {series.DP_TOLERANCE} "
                         f"({row['large_batch']:.4f} vs {goal:.4f}).")
  recipe = ""
  for r in data.runs.values():
    rates = r.get("learning_rates")
    if rates and r["run_name"].endswith("large_batch"):
      recipe = (f" (here: pretraining {rates['pretrain']:.3g}, finetuning {rates['finetune']:.3g}, after "
                f"{rates['warmup_epochs']:g} warm-up epochs)")
      break
  sentences.append(f"The report's recipe keeps the batch-100 learning rates at its batch 5000 (its 0.7472 / 0.8162; "
                   f"{reported.DP_BATCH_NOTE}); the large-batch recipe, chosen on validation accuracy in the "
                   f"`large_batch` study, scales them with the batch{recipe}. Single runs.")
  return style.md_table(["preset", "epochs", "ours DP batch", "ours DP report recipe", "ours DP large-batch",
                         "ours greedy (batch 100)", "goal (greedy - 0.005)", "report DP (batch 5000 per tower)"],
                        rows), sentences


def strategy_comparison(data: records.EntryData, others: Others) -> Tuple[str, List[str]]:
  """Seconds and speedup over greedy per program, ours and the report's."""
  rs = series.strategy_records(data)
  rep = reported.STRATEGY_COMPARISON
  base = rs.get(GREEDY.run_name)
  rows = []
  for r in rs.values():
    program = series.strategy(r)
    rows.append([style.program_name(program), series.batch_label([r]), _seconds(r),
                 style.fmt_ratio(records.ratio(base, r) if base else None), rep.get(program, "—"),
                 style.fmt_ratio(rep[GREEDY.name] / rep[program]) if program in rep else "—"])
  sentences = ["Single runs; the benchmarks in the Benchmarks section repeat the comparison with spread.",
               f"The report ran batch 5000 ({reported.DP_BATCH_NOTE}).", cores_note(data, others)]
  return style.md_table(["program", "ours batch", "ours s", "ours speedup", "report s", "report speedup"],
                        rows), sentences


def convergence(data: records.EntryData, others: Others) -> Tuple[str, List[str]]:
  """Pretraining seconds, seconds to the fixed loss (all layers and per layer) and final losses per program."""
  reach = series.times_to_target(data)
  per_layer = series.layer_times_to_target(data)
  rs = series.strategy_records(data)
  key = series.convergence_key(rs)
  rows = [[style.program_name(series.strategy(r)), style.fmt_seconds(series.seconds(r)),
           style.fmt_seconds(reach.get(s)) if reach.get(s) is not None else "not reached",
           ", ".join(style.fmt_seconds(t) if t is not None else "—" for t in per_layer.get(s, [])),
           ", ".join(f"{layer['epochs'][-1][key]:.2f}" for layer in r["layers"])] for s, r in rs.items()]
  what = ("held-out reconstruction loss (the 10,000 test images through the stack below, fixed masks: the "
          "same quantity for every program)" if key == "heldout_loss" else
          "training reconstruction loss (epoch mean; these records have no per-epoch held-out loss)")
  sentences = [f"Loss: {what}. Fixed loss: greedy's final loss of each layer × {1 + series.LOSS_TOLERANCE}; a "
               "program reaches it when its last layer does (the metric of Santara et al. 2016, \"Faster learning "
               "of deep stacked autoencoders on multi-core systems using synchronized layer-wise pre-training\"). "
               "The report has no such figure. Model parallel trains lower layers for more epochs (pipeline fill) "
               "and upper layers on inputs that still change."]
  return style.md_table(["program", "pretraining s", "seconds to fixed loss", "per layer", "final loss per layer"],
                        rows), sentences


def large_batch(data: records.EntryData, others: Others) -> Tuple[str, List[str]]:
  """The large-batch study: candidates compared on validation accuracy, test accuracy of the chosen one only."""
  rows, chosen = series.large_batch_choice(data)
  greedy = [row for row in rows if row["program"] == GREEDY.name]
  table = []
  for row in rows:
    r = row["record"]
    rates = r.get("learning_rates") or {}
    finetune = r["config"].get("finetune_optimizer", "sgd")
    table.append([f"`{row['run']}`" + (" (chosen)" if row["run"] == chosen else ""), style.program_name(row["program"]),
                  series.batch_label([r]), f"{rates.get('pretrain', r['config']['pretrain_learning_rate']):.3g}",
                  f"{finetune} {rates.get('finetune', r['config']['finetune_learning_rate']):.3g}",
                  ", ".join(f"{x:.1f}" for x in row["losses"]), style.fmt_accuracy(row["validation"]),
                  style.fmt_accuracy(row["test"]) if row["run"] == chosen or row["program"] != DP.name
                  else "not used"])
  sentences = ["Candidates are compared on the validation split (the first 5,000 images of MNIST's training set, "
               "never trained on); test accuracy is reported once, for the chosen candidate (and the greedy "
               "reference)."]
  if chosen and greedy:
    c = next(row for row in rows if row["run"] == chosen)
    g = greedy[0]
    sentences.append(f"Chosen: `{chosen}`, validation {c['validation']:.4f} vs greedy at batch {g['batch']} "
                     f"{g['validation']:.4f}; test {c['test']:.4f} vs {g['test']:.4f}. Single runs.")
  return style.md_table(["run", "program", "batch", "pretraining rate", "finetuning", "last loss per layer",
                         "validation accuracy", "test accuracy"], table), sentences


def full_size(data: records.EntryData, others: Others) -> Tuple[str, List[str]]:
  """The full-size runs: test accuracy beside the report's at the same epochs, and time."""
  report = {GREEDY.name: (reported.ACCURACY[GREEDY.name][30], "greedy 30+30, conres2.png"),
            MP.name: (reported.MP_ACCURACY_TEXT, "model parallel, \"around 96.62%\" in the text"),
            DP.name: (reported.DP_ACCURACY[30], "data parallel, batch 5000 per tower, 30+30")}
  rows = []
  for name, r in data.runs.items():
    rep = report.get(series.strategy(r))
    accuracy = records.test_accuracy(r)
    rows.append([f"`{name}`", series.batch_label([r]), style.fmt_accuracy(accuracy),
                 f"{rep[0]} ({rep[1]})" if rep else "—",
                 f"{series.seconds(r) / 60:.0f} + {r['finetune']['seconds'] / 60:.0f} min"])
  short = [f"`{name}`" for name, r in data.runs.items()
           if r.get("run_seconds", r.get("total_seconds", float("inf"))) < r["pretrain_seconds"]]
  sentences = [f"{', '.join(short)}: resumed from checkpoints written before records kept the whole run's time, so "
               "their total_seconds (and run_seconds, where present) are the last process's only (smaller than the "
               "pretraining seconds); the minutes shown are pretraining and finetuning." if short else ""]
  sentences += ["The report's network, 4 × 2000 hidden units, all 55,000 training images, on 2 CPU cores; hours per "
               "run, so not in the `cpu` preset. Times are not benchmarks (these ran at low priority beside other "
               "work). Single runs. The large-batch recipe is the one chosen on validation accuracy in `large_batch`."]
  return style.md_table(["run", "batch", "test accuracy", "report", "pretraining + finetuning"], rows), sentences
