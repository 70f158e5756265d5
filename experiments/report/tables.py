"""Per entry a markdown table beside the report's numbers with sentences: a function of (the entry's records,
{machine: records}) returning (table, [sentences]), named by `Entry.table`; and the number formats every table
uses (`fmt`, `md_table`). † marks oversubscription (more logical devices than cores), ‡ a noisy configuration."""

import types
from typing import Dict, List, Mapping, Optional, Sequence, Tuple

from common.settings import programs
from data_parallel import config as dp_config
from experiments import perf_model
from experiments import presets
from experiments import records
from experiments import reported
from experiments.benchmarks import harness
from experiments.report import series

Others = Mapping[str, records.EntryData]
# The `others` of a table drawn from another folder's records alone (`readme.entry_section`): empty, and telling a
# table that lists its entry's declared runs to leave out those the folder has no record of.
APART: Others = types.MappingProxyType({})
Table = Tuple[str, List[str]]
GREEDY, MP, DP = programs.GREEDY, programs.MODEL_PARALLEL, programs.DATA_PARALLEL
PHASES = dp_config.PROFILE_PHASES
SINGLE = "Single runs."
PUBLISHED = ("Published baselines: test accuracies of other models in the Fashion-MNIST benchmark table "
             "(`reported.PUBLISHED_BASELINES`), not the report's numbers nor ours.")
DAGGER = "† more logical devices than cores the process could use (oversubscribed)."
NOISY = (f"‡ repeats more than {harness.NOISE:.0%} apart (max / min − 1 of a configuration's pretraining seconds): "
         "shown with its spread, never in the headline; the campaign measures such a setting once more.")


def fmt(x, kind: str = "s") -> str:
  """A value as every table shows it, "—" for None: seconds ("s": 3 significant digits below 100, whole above), a
  ratio ("×": "1.31×"), an accuracy ("acc": 4 decimals) or a spread ("spread": "median (min–max)", 2 decimals)."""
  if x is None:
    return "—"
  if kind == "spread":
    return f"{x['median']:.2f} ({x['min']:.2f}–{x['max']:.2f})"
  return f"{x:.2f}×" if kind == "×" else f"{x:.4f}" if kind == "acc" else f"{x:.3g}" if x < 100 else f"{x:.0f}"


def md_table(header: Sequence[str], rows: Sequence[Sequence]) -> str:
  """A markdown table."""
  return "\n".join(["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
                   + ["| " + " | ".join(str(c) for c in row) + " |" for row in rows])


def judged_error(x: Optional[float]) -> str:
  """A relative error against the goal, e.g. "12.3% (within the 15% goal)"; "none" for None."""
  return "none" if x is None else (
      f"{x:.1%} ({'within' if x <= series.MODEL_ERROR_GOAL else 'outside'} the {series.MODEL_ERROR_GOAL:.0%} goal)")


def _seconds(r: Optional[dict]) -> str:
  return fmt(r["pretrain_seconds"]) + (" †" if records.oversubscribed(r) else "") if r else "—"


def cores_note(data: records.EntryData, others: Others) -> str:
  """What the records show beyond the core count, on this machine and the others."""
  if not any(records.oversubscribed(r) for r in data.runs.values()):
    return ""
  n, faster = series.cores(data), series.oversubscribed_faster(data)
  cases = "; ".join(f"{h} layers on {g} devices {fmt(s)} s vs {fmt(b)} s on {gb}"
                    for h, g, s, gb, b in faster)
  text = (f"This machine has {n} cores: more devices than that run as logical devices sharing the cores "
          "(oversubscribed, †), so they add no compute; " + (
              f"still, some oversubscribed runs were faster than the fastest run on at most {n} devices ({cases})."
              if faster else f"none was faster than the fastest run on at most {n} devices."))
  for machine, other in others.items():
    ends = [f"{h} layers {fmt(records.ratio(g[1], g[max(g)]), '×')} on {max(g)} devices"
            for h, g in series.stacks(other).items() if 1 in g and max(g) > 1]
    text += (f" On the {series.machine_cores(other)}-core machine (`{machine}/`; "
             f"{records.machine_label(list(other.runs.values()))}), where every device has its own core, the "
             f"speedup over 1 device reached: {', '.join(ends)} (single runs).")
  return text


def scaling(data: records.EntryData, others: Others) -> Table:
  """Seconds and speedup per (machine, layers, devices), ours beside the report's and the model's."""
  report, rows = reported.MP_SCALING.get(data.entry, {}), []
  for machine, d in [("", data)] + list(others.items()):
    model, _ = perf_model.calibrated(d.runs)
    predicted = {(len(p.hidden_units), p.devices): p for p in (perf_model.predictions(model, d.runs) if model else [])}
    for h, by_g in series.stacks(d).items():
      rep = {} if machine else report.get(h, {})  # The report's numbers once, beside this machine's.
      for g in sorted(set(by_g) | set(rep)):
        r, p = by_g.get(g), predicted.get((h, g))
        rows.append([records.machine_label([r]) if r else "—", h, g, _seconds(r),
                     fmt(records.ratio(by_g[1], r) if r and 1 in by_g else None, "×"),
                     f"{fmt(p.predicted)} ({p.relative_error:+.0%}{', fit' if p.in_calibration else ''})"
                     if p else "—", fmt(rep.get(g)), fmt(rep[1] / rep[g] if g in rep else None, "×")])
  model, _ = perf_model.calibrated(data.runs)
  dp = [f"The report calls its speedup {reported.DP_SCALING_TEXT}.",
        f"Ours: {series.batch_label(list(data.runs.values()))}; {reported.DP_BATCH_NOTE}."]
  sentences = (dp if data.entry == presets.DP_SCALING.name else []) + ["Each point is a single run."]
  if model is not None and model.slowdown > 1.0:
    sentences.append(f"The performance model's slowdown of devices side by side, rho = {model.slowdown:.2f}, is fitted "
                     f"to the 2-device runs' times (not measured); with it 2 devices can give at most "
                     f"{2 / model.slowdown:.2f}× here.")
  return md_table(["machine", "layers", "devices", "ours s", "ours speedup", "model s (error)", "report s",
                   "report speedup"], rows), sentences + [cores_note(data, others)]


def dp_batch_sweep(data: records.EntryData, others: Others) -> Table:
  """Seconds per epoch and examples per second per global batch, ours and the report's."""
  pts, g = series.sweep_points(data), sorted({records.devices(r) for r in data.runs.values()})
  rows = [[batch, "/".join(f"{batch // d}" for d in g), f"{secs:.2f}" + (" †" if over else ""), f"{rate:,.0f}",
           f"{rep}" if rep else "—", f"{55_000 / rep:,.0f}" if rep else "—"]
          for batch, secs, rate, over in pts for rep in [reported.DP_BATCH_SWEEP.get(batch // 4)]]
  best, rep_best = min(pts, key=lambda p: p[1]), min(reported.DP_BATCH_SWEEP, key=reported.DP_BATCH_SWEEP.get)
  examples = min(r["config"]["train_examples"] for r in data.runs.values())
  return md_table(["global batch", "ours per device", "ours s/epoch", "ours examples/s",
                   "report s/epoch (global/4 per GPU)", "report examples/s"], rows), [
      f"Ours on {'/'.join(map(str, g))} devices; the report's per-GPU batch on 4 GPUs is matched at global = 4 × it. "
      f"Fastest epoch: ours at global batch {best[0]}, the report's at {rep_best} per GPU (global {4 * rep_best}); both "
      "fall steeply from the smallest batch, where per-step costs (all-reduce, dispatch) dominate.",
      f"Ours ran {examples:,} examples per epoch (report: 55,000): compare examples per second. Single runs."]


def profile_rows(data: records.EntryData) -> Dict[int, Tuple[Dict[str, float], bool]]:
  """{devices: ({phase: seconds per epoch}, oversubscribed)} from data_parallel's op profiles in the records."""
  out = {records.devices(r): ({p: float(phases.get(p, 0.0)) for p in PHASES}, records.oversubscribed(r))
         for r in data.runs.values() for phases in [(r.get("profile") or {}).get("seconds_per_epoch")] if phases}
  return dict(sorted(out.items()))


def dp_op_profile(data: records.EntryData, others: Others) -> Table:
  """Seconds per epoch of each phase per device count, ours and the report's."""
  ours, rows = profile_rows(data), []
  for g in sorted(set(ours) | set(reported.DP_OP_PROFILE)):
    (phases, over), rep = ours.get(g, ({}, False)), reported.DP_OP_PROFILE.get(g)
    rows.append([g] + [f"{phases[p]:.3f}" if p in phases else "—" for p in PHASES]
                + [(f"{sum(phases.values()):.3f}" if phases else "—") + (" †" if over else ""),
                   f"{rep['forward_loss'] + rep['gradients']:.1f}" if rep else "—", f"{rep['allreduce']:.1f}" if rep
                   else "—", f"{reported.DP_OP_PROFILE_TOTAL.get(g, '—')}"])
  return md_table(["devices"] + [f"ours {p}" for p in PHASES] + [
      "ours total", "report loss+gradient", "report accumulate+average", "report total"], rows), [
          f"Ours: {series.batch_label(list(data.runs.values()))}; {reported.DP_BATCH_NOTE}.", cores_note(data, others)]


def mp_vs_dp(data: records.EntryData, others: Others) -> Table:
  """Data vs model parallel seconds per setting, ours and the report's."""
  rep, rows = [reported.MP_VS_DP[k] for k in sorted(reported.MP_VS_DP)], []
  for i, (label, g) in enumerate(series.mp_vs_dp_groups(data)):
    dp, mp, r = g.get(DP.name), g.get(MP.name), rep[i] if i < len(rep) else {}
    rows.append([label, _seconds(dp), _seconds(mp), fmt(records.ratio(mp, dp) if dp and mp else None, "×"),
                 r.get(DP.name, "—"), r.get(MP.name, "—"), fmt(r[MP.name] / r[DP.name] if r else None, "×")])
  return md_table(["setting (ours)", "ours DP s", "ours MP s", "ours MP/DP", "report DP s", "report MP s",
                   "report MP/DP"], rows), [
      f"Ours: {series.batch_label(list(data.runs.values()))}; the report: batch 7000 ({reported.DP_BATCH_NOTE}). "
      f"{SINGLE}"]


def accuracy_vs_epochs(data: records.EntryData, others: Others) -> Table:
  """Test accuracy per program and epochs, every preset present and the report's."""
  rows, sentences = [], []
  for preset, runs in series.by_preset(data).items():
    rows += [[preset, series.program_name(program), f"{e}+{e}", fmt(a, "acc")]
             for program, values in series.accuracy_series(runs).items() for e, a in values]
    # Each layer's held-out reconstruction loss at the end of pretraining against greedy's at the same epochs.
    runs, worst = runs.values(), {}
    greedy = {r["config"]["pretrain_epochs"]: r.get("heldout_reconstruction") for r in runs
              if series.strategy(r) == programs.baseline().name}
    for r in runs:
      e, program, ours = r["config"]["pretrain_epochs"], series.strategy(r), r.get("heldout_reconstruction")
      if program != programs.baseline().name and ours and greedy.get(e):
        worst[program] = max([worst.get(program, (0.0, 0))] + [
            (abs(a["loss"] / b["loss"] - 1), e) for a, b in zip(ours, greedy[e])])
    if worst:
      sentences.append(f"{preset}: held-out reconstruction loss at the end of pretraining, per layer, relative to "
                       "greedy's at the same epochs (test images through the stack below, fixed masks): " +
                       "; ".join(f"{series.program_name(p)} within {100 * w:.1f}% (largest gap at {e}+{e} epochs)"
                                 for p, (w, e) in sorted(worst.items())) + ".")
  rows += [["report", series.program_name(p), f"{e}+{e}", f"{a:.4f}"] for p in reported.ACCURACY
           for e, a in sorted(reported.ACCURACY[p].items())]
  return md_table(["preset", "program", "epochs", "test accuracy"], rows), sentences + [
      f"The report's text gives model parallel ~{reported.MP_ACCURACY_TEXT}."]


def precision_accuracy(data: records.EntryData, others: Others) -> Table:
  """Per program and precision: test accuracy and each layer's held-out reconstruction, and bfloat16's relative to
  float32's (goals: within 1% per layer, 0.3 points of accuracy)."""
  rows, f32 = [], programs.PRECISIONS[0]
  for preset, runs in series.by_preset(data).items():
    by = {(series.strategy(r), r["config"].get("precision", f32)): r for r in runs.values()}
    for (program, precision), r in sorted(by.items()):
      held, base = [h["loss"] for h in r["heldout_reconstruction"]], by.get((program, f32))
      base = base if base is not None and records.same_source([base, r]) else None  # within one machine only
      gaps = [a / b["loss"] - 1 for a, b in zip(held, base["heldout_reconstruction"])] if base and base is not r else []
      acc, base_acc = records.test_accuracy(r), records.test_accuracy(base) if base else None
      rows.append([preset, series.program_name(program), precision, fmt(acc, "acc"),
                   " / ".join(f"{x:.2f}" for x in held), " / ".join(f"{100 * g:+.2f}%" for g in gaps) or "—",
                   f"{100 * (acc - base_acc):+.2f}" if gaps and acc is not None and base_acc is not None else "—"])
  return md_table(["preset", "program", "precision", "test accuracy", "held-out reconstruction per layer",
                   "vs float32 per layer", "accuracy vs float32 (points)"], rows), [
      "Goals of mixed precision: each layer's held-out reconstruction within 1% of float32's and test accuracy "
      "within 0.3 points. Single runs; the float32 runs are accuracy_vs_epochs' at the same epochs. bfloat16 is set "
      "beside float32 only where both ran on one machine and code (— otherwise: a machine without native bfloat16 "
      "cannot make the pair)."]


def dp_accuracy(data: records.EntryData, others: Others) -> Table:
  """Data-parallel test accuracy per recipe and epochs vs greedy and the report."""
  rows = []
  for preset, runs in series.by_preset(data).items():
    dp = series.batch_label([r for n, r in runs.items() if n.startswith("dp_")])
    rows += [[preset, f"{row['epochs']}+{row['epochs']}", dp] + [fmt(x, "acc") for x in (
        row["report_recipe"], row["large_batch"], row["baseline"],
        None if row["baseline"] is None else row["baseline"] - series.DP_TOLERANCE, row["report"])]
             for row in series.dp_accuracy_rows(runs, preset)]
  rates = next((r["learning_rates"] for r in data.runs.values()
                if r.get("learning_rates") and r["run_name"].endswith("large_batch")), None)
  recipe = (f" (here: pretraining {rates['pretrain']:.3g}, finetuning {rates['finetune']:.3g}, after "
            f"{rates['warmup_epochs']:g} warm-up epochs)") if rates else ""
  return md_table(["preset", "epochs", "ours DP batch", "ours DP report recipe", "ours DP large-batch",
                   "ours greedy (batch 100)", "goal (greedy - 0.005)", "report DP (batch 5000 per tower)"], rows), [
      f"The report's recipe keeps the batch-100 learning rates at its batch 5000 (its 0.7472 / 0.8162; "
      f"{reported.DP_BATCH_NOTE}); the large-batch recipe, chosen on validation accuracy in the `large_batch` study, "
      f"scales them with the batch{recipe}. {SINGLE}"]


def strategy_comparison(data: records.EntryData, others: Others) -> Table:
  """Seconds and speedup over greedy per program, ours and the report's."""
  rs, rep = series.strategy_records(data), reported.STRATEGY_COMPARISON
  base = rs.get(programs.baseline().run_name)
  rows = [[series.program_name(p), series.batch_label([r]), _seconds(r),
           fmt(records.ratio(base, r) if base else None, "×"), rep.get(p, "—"),
           fmt(rep[GREEDY.name] / rep[p], "×") if p in rep else "—"]
          for r in rs.values() for p in [series.strategy(r)]]
  return md_table(["program", "ours batch", "ours s", "ours speedup", "report s", "report speedup"], rows), [
      "Single runs; the benchmarks in the Benchmarks section repeat the comparison with spread.",
      f"The report ran batch 5000 ({reported.DP_BATCH_NOTE}).", cores_note(data, others)]


def convergence(data: records.EntryData, others: Others) -> Table:
  """Pretraining seconds, seconds to the fixed loss (all layers and per layer) and final losses per program."""
  reach, rs = series.times_to_target(data), series.strategy_records(data)
  key, _ = series.convergence_loss(rs)
  rows = [[series.program_name(series.strategy(r)), fmt(r["pretrain_seconds"]),
           fmt(reach[s][0]) if reach.get(s, (None,))[0] is not None else "not reached",
           ", ".join(fmt(t) for t in reach.get(s, (None, []))[1]),
           ", ".join(f"{layer['epochs'][-1][key]:.2f}" for layer in r["layers"])] for s, r in rs.items()]
  what = ("held-out reconstruction loss (the 10,000 test images through the stack below, fixed masks: the "
          "same quantity for every program)" if key == "heldout_loss" else
          "training reconstruction loss (epoch mean; these records have no per-epoch held-out loss)")
  return md_table(["program", "pretraining s", "seconds to fixed loss", "per layer", "final loss per layer"], rows), [
      f"Loss: {what}. Fixed loss: greedy's final loss of each layer × {1 + series.LOSS_TOLERANCE}; a program reaches "
      "it when its last layer does (the metric of Santara et al. 2016, \"Faster learning of deep stacked autoencoders "
      "on multi-core systems using synchronized layer-wise pre-training\"). The report has no such figure. Model "
      "parallel trains lower layers for more epochs (pipeline fill) and upper layers on inputs that still change."]


def large_batch(data: records.EntryData, others: Others) -> Table:
  """The large-batch study: candidates compared on validation accuracy, test accuracy of the chosen one only."""
  rows, chosen = series.large_batch_choice(data)
  table = [[f"`{row['run']}`" + (" (chosen)" if row["run"] == chosen else ""), series.program_name(row["program"]),
            series.batch_label([row["record"]]), f"{rates.get('pretrain', c['pretrain_learning_rate']):.3g}",
            f"{c.get('finetune_optimizer', 'sgd')} {rates.get('finetune', c['finetune_learning_rate']):.3g}",
            ", ".join(f"{x:.1f}" for x in row["losses"]), fmt(row["validation"], "acc"),
            fmt(row["test"], "acc") if row["run"] == chosen or not row["candidate"] else "not used"]
           for row in rows for rates, c in [(row["record"].get("learning_rates") or {}, row["record"]["config"])]]
  return md_table(["run", "program", "batch", "pretraining rate", "finetuning", "last loss per layer",
                   "validation accuracy", "test accuracy"], table), [
      "Candidates are compared on the validation split (the first 5,000 images of MNIST's training set, never "
      "trained on); test accuracy is reported once, for the chosen candidate (and the greedy reference). " + SINGLE]


def full_size(data: records.EntryData, others: Others) -> Table:
  """Every declared full-size run (not run yet where it has no record; of another folder's, `APART`, those it has),
  each row labelled with its dataset and machine:
  test accuracy beside the report's (MNIST) or the goal and published baselines (other datasets), and time."""
  report = {GREEDY.name: f"{reported.ACCURACY[GREEDY.name][30]} (greedy 30+30, conres2.png)",
            MP.name: f"{reported.MP_ACCURACY_TEXT} (model parallel, \"around 96.62%\" in the text)",
            DP.name: f"{reported.DP_ACCURACY[30]} (data parallel, batch 5000 per tower, 30+30)"}
  rows = [[f"`{run.name}`", records.dataset_label(run.dataset), series.batch_label([r]) if r else "—",
           fmt(records.test_accuracy(r), "acc") if r else "not run yet",
           f"tuned recipe's goal ≥ {series.TUNED_GOALS[run.dataset]}" if run.name.endswith("_tuned") else
           report.get(run.program, "—") if run.dataset == presets.MNIST else series.accuracy_goal(run.dataset),
           records.machine_label([r]) if r else "—"]
          for run in presets.build(data.preset)[data.entry].runs for r in [data.runs.get(run.name)]
          if r or others is not APART]
  by_machine: Dict[str, List[str]] = {}  # minutes grouped by machine, never two machines' side by side
  for name, r in data.runs.items():
    by_machine.setdefault(records.host(r), []).append(
        f"`{name}` {r['pretrain_seconds'] / 60:.0f} + {r['finetune']['seconds'] / 60:.0f}")
  short = [f"`{name}`" for name, r in data.runs.items()
           if r.get("run_seconds", r.get("total_seconds", float("inf"))) < r["pretrain_seconds"]]
  return md_table(["run", "dataset", "batch", "test accuracy", "report, or goal and published baselines",
                   "machine, code"], rows), [
      f"{', '.join(short)}: resumed from checkpoints written before records kept the whole run's time, so each one's "
      "total_seconds (and run_seconds, where present) is the last process's only (smaller than the pretraining "
      "seconds); the minutes shown are pretraining and finetuning." if short else "",
      "Minutes of pretraining + finetuning by machine (compare within one machine only" + (
          "; the runs whose records name no commit or processor ran at low priority beside other work" if any(
              records.code(r) == "commit unknown" for r in data.runs.values()) else "") + "): " + "; ".join(
          f"{host}: {', '.join(runs)}" for host, runs in sorted(by_machine.items())) + ".",
      "The report's network, 4 × 2000 hidden units, all 55,000 training images, on 2 CPU cores; hours per run, so not "
      "in the `cpu` preset. Single runs. The large-batch recipe is the one chosen on validation accuracy in "
      "`large_batch`; `_tuned`: the tuned recipe, chosen on validation accuracy in `pretraining_sweep` "
      "(docs/pretraining.md). " + PUBLISHED]


def fashion_mnist_accuracy(data: records.EntryData, others: Others) -> Table:
  """Test accuracy per program on each dataset of the entry (MNIST's: accuracy_vs_epochs' runs), the published
  baselines beside it."""
  acc, e = series.dataset_accuracy(data), series.most_epochs(data)
  baselines = dict.fromkeys(m for d in acc for m in reported.PUBLISHED_BASELINES.get(d, {}))
  rows = [[series.program_name(p.name), f"{e}+{e}"] + [fmt(a[p.name], "acc") if p.name in a else "not run yet"
                                                      for a in acc.values()] for p in presets.ACCURACY_COMPARED]
  rows += [[f"published: {m}", "—"] + [reported.PUBLISHED_BASELINES.get(d, {}).get(m, "—") for d in acc]
           for m in baselines]
  return md_table(["program", "epochs"] + [f"{records.dataset_label(d)} test accuracy" for d in acc], rows), [
      "The strategies of `accuracy_vs_epochs` at its size and most epochs on each dataset; MNIST's runs are that "
      f"entry's (shared records). {SINGLE} {PUBLISHED}"]


def pp_scaling(data: records.EntryData, others: Others) -> Table:
  """Seconds, speedup, the pipeline model's prediction and its error, stages and cores busy per stack and devices."""
  rows, errors = [], []
  for row in series.pipeline_rows(data):
    error = None if row["predicted"] is None else (row["predicted"] - row["seconds"]) / row["seconds"]
    if error is not None and not row["oversubscribed"] and not row["in_sample"]:
      errors.append(abs(error))
    rows.append([row["stack"], f"{row['devices']}{' †' if row['oversubscribed'] else ''}", row["stages"],
                 fmt(row["seconds"]), fmt(row["speedup"], "×"), fmt(row["predicted"]),
                 "—" if error is None else f"{100 * error:+.0f}%" + (" (fit)" if row["in_sample"] else ""),
                 "—" if row["cores_busy"] is None else f"{row['cores_busy']:.2f}"])
  return md_table(["stack", "devices", "stages", "seconds", "speedup vs 1 device", "model s", "model error",
                   "cores busy"], rows), [
      "Single runs. Cores busy = process CPU seconds / wall seconds while pretraining.",
      f"Model error on the points not used for the fit, up to the core count: largest {100 * max(errors):.0f}% (the "
      "model has no co-run slowdown)." if errors else "", DAGGER]


# The tables that set other folders' records (`records.OTHER_MACHINES`) beside this machine's; any other entry's
# records in another folder get a table of their own (`readme.entry_section`).
WITH_OTHERS = (scaling,)
