"""What the tables and figures show, from run records and benchmark summaries alone: the values (stacks, points,
speedups, model predictions, accuracies, the large-batch choice, convergence, the pipeline's model per stack, the
equal-cores summaries), the names and number formats every table and figure shares, and per entry a markdown table
of our numbers beside the report's (`experiments.reported`) with sentences on what agrees and differs: a function
of (data, others), the entry's records and {machine: records} of the other machines, returning (table,
[sentences]). Ratios of two records go through `records.ratio`; † marks more logical devices than cores."""

import os
from typing import Dict, List, Mapping, Optional, Sequence, Tuple

from common import programs
from data_parallel import config as dp_config
from experiments import perf_model
from experiments import presets
from experiments import records
from experiments import reported
from experiments.benchmarks import equal_cores as equal_cores_bench
from experiments.benchmarks import harness

MODEL_ERROR_GOAL = 0.15
Others = Mapping[str, records.EntryData]
Table = Tuple[str, List[str]]
GREEDY, MP, DP = programs.GREEDY, programs.MODEL_PARALLEL, programs.DATA_PARALLEL
# dp_accuracy's acceptance rule: data parallel at the large batch reaches at least greedy - this.
DP_TOLERANCE = 0.005
# convergence: the fixed loss of layer k is greedy's final loss of layer k times (1 + this).
LOSS_TOLERANCE = 0.01
PHASES = dp_config.PROFILE_PHASES
Runs = Dict[str, dict]
SINGLE = "Single runs."
REPORT_LABEL = reported.HARDWARE
DAGGER = "† more logical devices than cores the process could use (oversubscribed)."


def strategy(record: dict) -> str:
  """The program that wrote a record, e.g. "model_parallel"."""
  return record.get("strategy") or record["config"]["strategy"]


def cores(data: records.EntryData) -> int:
  """The fewest cores any run of the entry could use."""
  return min(records.cores(r) for r in data.runs.values())


def stacks(data: records.EntryData) -> Dict[int, Dict[int, dict]]:
  """{hidden layers: {devices: record}} of a scaling entry (data parallel: one stack), sorted."""
  out: Dict[int, Dict[int, dict]] = {}
  for r in data.runs.values():
    out.setdefault(len(r["config"]["hidden_units"]), {})[records.devices(r)] = r
  return {h: dict(sorted(out[h].items())) for h in sorted(out)}


def model_predictions(data: records.EntryData) -> List[perf_model.Prediction]:
  """The performance model's prediction at every measured run of the entry ([] without a model)."""
  model, _ = perf_model.calibrated(data.runs)
  return perf_model.predictions(model, data.runs) if model else []


def max_error(predictions: List[perf_model.Prediction], in_calibration: bool) -> Optional[float]:
  """The largest |relative error| over the fit points (in_calibration) or the predicted ones; None if none."""
  return max((abs(p.relative_error) for p in predictions if p.in_calibration == in_calibration), default=None)


def oversubscribed_faster(data: records.EntryData) -> List[Tuple[int, int, float, int, float]]:
  """[(layers, devices, seconds, best devices <= cores, its seconds)] where more devices than cores won."""
  out = []
  for h, by_g in stacks(data).items():
    fair = {g: r for g, r in by_g.items() if not records.oversubscribed(r)}
    best = min(fair, key=lambda g: fair[g]["pretrain_seconds"], default=None)
    out += [(h, g, r["pretrain_seconds"], best, fair[best]["pretrain_seconds"]) for g, r in by_g.items()
            if best and records.oversubscribed(r) and (records.ratio(fair[best], r) or 0) > 1]
  return out


def batch_label(rs: List[dict]) -> str:
  """The batch as run: data parallel "global batch 5000 (2500 per device on 2)", else "batch 100"; "; "-joined."""
  labels = []
  for r in sorted(rs, key=lambda r: (records.devices(r), r["config"]["batch_size"])):
    b, g = r["config"]["batch_size"], records.devices(r)
    labels.append(f"batch {b}" if strategy(r) != DP.name else f"global batch {b} (1 device)" if g == 1 else
                  f"global batch {b} ({b // g} per device on {g})")
  return "; ".join(dict.fromkeys(labels))


def sweep_points(data: records.EntryData) -> List[Tuple[int, float, float, bool]]:
  """[(global batch, median seconds per epoch, examples per second, oversubscribed)] sorted by batch."""
  return sorted((b, s, (r["config"]["train_examples"] // b) * b / s, records.oversubscribed(r))
                for r in data.runs.values() for b, s in [(r["config"]["batch_size"], records.median_epoch_seconds(r))])


def profile_rows(data: records.EntryData) -> Dict[int, Tuple[Dict[str, float], bool]]:
  """{devices: ({phase: seconds per epoch}, oversubscribed)} from the records' op profiles."""
  out = {records.devices(r): ({p: float(phases.get(p, 0.0)) for p in PHASES}, records.oversubscribed(r))
         for r in data.runs.values() for phases in [(r.get("profile") or {}).get("seconds_per_epoch")] if phases}
  return dict(sorted(out.items()))


def mp_vs_dp_groups(data: records.EntryData) -> List[Tuple[str, Runs]]:
  """[(group label "E epochs - Config n", {program: record})] in the report's order."""
  groups: Dict[Tuple[int, str], Runs] = {}
  for name, r in data.runs.items():
    config, epochs, _ = name.split("_")
    groups.setdefault((int(epochs[1:]), config), {})[strategy(r)] = r
  return [(f"{e} epochs - Config {c[1]}", groups[(e, c)]) for e, c in sorted(groups)]


def by_preset(data: records.EntryData) -> Dict[str, Runs]:
  """{preset: {run name: record}} of every preset with records, the entry's shown preset first."""
  return {data.preset: data.runs, **{p: data.other[p] for p in presets.PRESETS if p in data.other}}


def epoch_settings(preset: str, entry: str = "accuracy_vs_epochs") -> List[int]:
  """The pretraining epoch counts an accuracy entry runs at `preset`."""
  return sorted({r.flag("pretrain_epochs") for r in presets.build(preset)[entry].runs})


def accuracy_series(runs: Runs) -> Dict[str, List[Tuple[int, float]]]:
  """{program: [(epochs, test accuracy)]} of one preset's records."""
  out: Dict[str, List[Tuple[int, float]]] = {}
  for r in runs.values():
    if records.test_accuracy(r) is not None:
      out.setdefault(strategy(r), []).append((r["config"]["pretrain_epochs"], records.test_accuracy(r)))
  return {k: sorted(v) for k, v in out.items()}


def dp_accuracy_rows(runs: Runs, preset: str) -> List[Dict[str, Optional[float]]]:
  """Per epoch setting {"epochs", "report_recipe", "large_batch", "baseline" (greedy), "report"}: test accuracies,
  None where missing ("report": the report's at the matching paper setting)."""
  paper = epoch_settings("paper", "dp_accuracy")

  def acc(name):
    return records.test_accuracy(runs[name]) if name in runs else None
  return [{"epochs": e, "report_recipe": acc(f"dp_e{e}_report"), "large_batch": acc(f"dp_e{e}_large_batch"),
           "baseline": acc(f"{GREEDY.run_name}_e{e}"),
           "report": reported.DP_ACCURACY.get(paper[i]) if i < len(paper) else None}
          for i, e in enumerate(epoch_settings(preset, "dp_accuracy"))]


def large_batch_choice(data: records.EntryData) -> Tuple[List[dict], Optional[str]]:
  """Per run {"run", "record", "program", "batch", "validation", "test", "losses"}, and the data-parallel candidate
  with the highest validation accuracy (test plays no part)."""
  rows = [{"run": name, "record": r, "program": strategy(r), "batch": r["config"]["batch_size"],
           "validation": (r.get("finetune") or {}).get("validation_accuracy"), "test": records.test_accuracy(r),
           "losses": [layer["epochs"][-1]["loss"] for layer in r["layers"]]} for name, r in data.runs.items()]
  candidates = [row for row in rows if row["program"] == DP.name and row["validation"] is not None]
  return rows, max(candidates, key=lambda row: row["validation"])["run"] if candidates else None


def strategy_records(data: records.EntryData) -> Runs:
  """{run name: record} of strategy_comparison / convergence, in the order of `presets.COMPARED`."""
  return {p.run_name: data.runs[p.run_name] for p in presets.COMPARED if p.run_name in data.runs}


def convergence_loss(rs: Runs) -> Tuple[str, Optional[List[float]]]:
  """(the loss compared: "heldout_loss" when every record has it after every epoch, else "loss"; each layer's fixed
  loss, greedy's final x (1 + LOSS_TOLERANCE), None without greedy)."""
  key = "heldout_loss" if rs and all(records.has_heldout_curves(r) for r in rs.values()) else "loss"
  return key, [layer["epochs"][-1][key] * (1 + LOSS_TOLERANCE) for layer in rs[GREEDY.run_name]["layers"]
               ] if GREEDY.run_name in rs else None


def times_to_target(data: records.EntryData) -> Dict[str, Tuple[Optional[float], List[Optional[float]]]]:
  """{run name: (seconds until every layer reached its fixed loss, the seconds of each layer)} (None: never)."""
  rs = strategy_records(data)
  key, targets = convergence_loss(rs)
  per_layer = {s: records.time_to_loss_per_layer(records.loss_curves(r, key), targets) for s, r in rs.items()
               } if targets else {}
  return {s: (None if None in t else max(t, default=0.0), t) for s, t in per_layer.items()}


def pipeline_rows(data: records.EntryData) -> List[dict]:
  """pp_scaling per run: "stack", "devices", "seconds", "predicted" (`perf_model.Pipeline` fitted per stack on its
  one-device run), "speedup", "stages", "cores_busy", "in_sample", "oversubscribed"."""
  by_stack: Dict[str, Dict[int, dict]] = {}
  for r in data.runs.values():
    h = r["config"]["hidden_units"]
    by_stack.setdefault(f"{len(h)} x {h[0]}", {})[records.devices(r)] = r
  out = []
  for stack, by_g in by_stack.items():
    by_g = dict(sorted(by_g.items()))
    try:
      model = perf_model.Pipeline.calibrate({str(g): r for g, r in by_g.items()}) if records.same_source(
          list(by_g.values())) else None
    except ValueError:
      model = None
    out += [{"stack": stack, "devices": g, "seconds": r["pretrain_seconds"],
             "predicted": model.predict(r["config"], g) if model else None,
             "speedup": records.ratio(by_g[1], r) if 1 in by_g else None,
             "stages": len((r.get("pipeline") or {}).get("stages", [])) or min(g, len(r["config"]["hidden_units"])),
             "cores_busy": r["pretrain_cpu_seconds"] / r["pretrain_seconds"] if "pretrain_cpu_seconds" in r else None,
             "in_sample": g == 1, "oversubscribed": records.oversubscribed(r)} for g, r in by_g.items()]
  return out


def equal_cores(output_dir: str) -> Tuple[Dict[Tuple[int, int], dict], List[dict]]:
  """({(cores, batch size): summary} of this machine's equal-cores summaries, sorted; their records)."""
  found = harness.load_summaries(output_dir, equal_cores_bench.BENCHMARK)
  by_key = {(s["cores"], s["setting"]["batch_size"]): s for s in found.values()}
  folder = os.path.join(output_dir, "benchmarks", equal_cores_bench.BENCHMARK.name)
  return dict(sorted(by_key.items())), harness.flat_records(folder, *found.values())


def ratios_to_baseline(summary: dict, name: str) -> dict:
  """Spread over repeats of greedy-on-all-cores seconds / this configuration's seconds (same repeat)."""
  seconds = summary["pretrain_seconds"]
  return harness.spread([b / m for b, m in zip(seconds[summary["baseline"]]["values"], seconds[name]["values"])])


def program_name(program: str) -> str:
  """A program's registry label, e.g. "model parallel"; ValueError for an unregistered program."""
  return programs.get(program).label


def dagger(record: Optional[dict]) -> str:
  """" †" for an oversubscribed run, else ""."""
  return " †" if record and records.oversubscribed(record) else ""


def machine_label(data: records.EntryData) -> str:
  """The machine and code of the entry's records (`records.machine_label`)."""
  return records.machine_label(list(data.runs.values()))


def preset_note(entry: str, preset: str) -> str:
  """"preset cpu: examples 5500 (paper 55000); ..." or "preset paper (the report's settings)"."""
  notes = presets.shrink_notes(entry, preset)
  return (f"preset {preset}: " + "; ".join(notes) if notes else
          f"preset {preset}" + (" (the report's settings)" if preset == "paper" else ""))


def fmt_seconds(seconds: Optional[float]) -> str:
  """Seconds with 3 significant digits below 100, whole seconds above ("—" for None)."""
  return "—" if seconds is None else f"{seconds:.3g}" if seconds < 100 else f"{seconds:.0f}"


def fmt_ratio(ratio: Optional[float]) -> str:
  """A speedup or ratio, e.g. "1.31×" ("—" for None)."""
  return "—" if ratio is None else f"{ratio:.2f}×"


def fmt_accuracy(a: Optional[float]) -> str:
  """An accuracy in [0, 1] with 4 decimals ("—" for None)."""
  return "—" if a is None else f"{a:.4f}"


def fmt_spread(s: Optional[dict], fmt: str = "{:.2f}") -> str:
  """A spread {"min", "median", "max"} as "median (min–max)" ("—" for None)."""
  return f"{fmt.format(s['median'])} ({fmt.format(s['min'])}–{fmt.format(s['max'])})" if s else "—"


def md_table(header: Sequence[str], rows: Sequence[Sequence]) -> str:
  """A markdown table."""
  return "\n".join(["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
                   + ["| " + " | ".join(str(c) for c in row) + " |" for row in rows])


def judged_error(x: Optional[float]) -> str:
  """A relative error against the goal, e.g. "12.3% (within the 15% goal)"; "none" for None."""
  return "none" if x is None else (
      f"{x:.1%} ({'within' if x <= MODEL_ERROR_GOAL else 'outside'} the {MODEL_ERROR_GOAL:.0%} goal)")


def _seconds(r: Optional[dict]) -> str:
  return fmt_seconds(r["pretrain_seconds"]) + dagger(r) if r else "—"


def _batches(data: records.EntryData) -> str:
  return batch_label(list(data.runs.values()))


def cores_note(data: records.EntryData, others: Others) -> str:
  """What the records show beyond the core count, on this machine and the others."""
  if not any(records.oversubscribed(r) for r in data.runs.values()):
    return ""
  n, faster = cores(data), oversubscribed_faster(data)
  cases = "; ".join(f"{h} layers on {g} devices {fmt_seconds(s)} s vs {fmt_seconds(b)} s on {gb}"
                    for h, g, s, gb, b in faster)
  text = (f"This machine has {n} cores: more devices than that run as logical devices sharing the cores "
          "(oversubscribed, †), so they add no compute; " + (
              f"still, some oversubscribed runs were faster than the fastest run on at most {n} devices ({cases})."
              if faster else f"none was faster than the fastest run on at most {n} devices."))
  for machine, other in others.items():
    ends = [f"{h} layers {fmt_ratio(records.ratio(g[1], g[max(g)]))} on {max(g)} devices"
            for h, g in stacks(other).items() if 1 in g and max(g) > 1]
    text += (f" On the {cores(other)}-core machine (`{machine}/`), where every device has its own core, the "
             f"speedup over 1 device reached: {', '.join(ends)} (single runs).")
  return text


def scaling(data: records.EntryData, others: Others) -> Table:
  """Seconds and speedup per (machine, layers, devices), ours beside the report's and the model's."""
  report, rows = reported.MP_SCALING.get(data.entry, {}), []
  for machine, d in [("", data)] + list(others.items()):
    predicted = {(len(p.hidden_units), p.devices): p for p in model_predictions(d)}
    for h, by_g in stacks(d).items():
      rep = {} if machine else report.get(h, {})  # The report's numbers once, beside this machine's.
      for g in sorted(set(by_g) | set(rep)):
        r, p = by_g.get(g), predicted.get((h, g))
        rows.append([records.machine_label([r]) if r else "—", h, g, _seconds(r),
                     fmt_ratio(records.ratio(by_g[1], r) if r and 1 in by_g else None),
                     f"{fmt_seconds(p.predicted)} ({p.relative_error:+.0%}{', fit' if p.in_calibration else ''})"
                     if p else "—", fmt_seconds(rep.get(g)), fmt_ratio(rep[1] / rep[g] if g in rep else None)])
  model, _ = perf_model.calibrated(data.runs)
  sentences = [f"The report calls its speedup {reported.DP_SCALING_TEXT}.", f"Ours: {_batches(data)}; "
               f"{reported.DP_BATCH_NOTE}."] if data.entry == presets.DP_SCALING.name else []
  sentences.append("Each point is a single run.")
  if model is not None and model.slowdown > 1.0:
    sentences.append(f"The performance model's slowdown of devices side by side, rho = {model.slowdown:.2f}, is fitted "
                     f"to the 2-device runs' times (not measured); with it 2 devices can give at most "
                     f"{2 / model.slowdown:.2f}× here.")
  return md_table(["machine", "layers", "devices", "ours s", "ours speedup", "model s (error)", "report s",
                         "report speedup"], rows), sentences + [cores_note(data, others)]


def dp_batch_sweep(data: records.EntryData, others: Others) -> Table:
  """Seconds per epoch and examples per second per global batch, ours and the report's."""
  pts, g = sweep_points(data), sorted({records.devices(r) for r in data.runs.values()})
  rows = [[batch, "/".join(f"{batch // d}" for d in g), f"{secs:.2f}" + (" †" if over else ""), f"{rate:,.0f}",
           f"{rep}" if rep else "—", f"{55_000 / rep:,.0f}" if rep else "—"]
          for batch, secs, rate, over in pts for rep in [reported.DP_BATCH_SWEEP.get(batch // 4)]]
  best, rep_best = min(pts, key=lambda p: p[1]), min(reported.DP_BATCH_SWEEP, key=reported.DP_BATCH_SWEEP.get)
  examples = min(r["config"]["train_examples"] for r in data.runs.values())
  return md_table(["global batch", "ours per device", "ours s/epoch", "ours examples/s",
                         "report s/epoch (global/4 per GPU)", "report examples/s"], rows), [
      f"Ours on {'/'.join(map(str, g))} devices, the report on 4 GPUs with a per-GPU batch: its rows are matched at "
      f"global = 4 × its batch. Fastest epoch: ours at global batch {best[0]}, the report at {rep_best} per GPU "
      f"(global {4 * rep_best}). Both fall steeply from the smallest batch, where per-step costs (all-reduce, "
      "dispatch) dominate.",
      f"Ours ran {examples:,} examples per epoch (report: 55,000): compare examples per second, not seconds. Each "
      "point is a single run."]


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
          f"Ours: {_batches(data)}; {reported.DP_BATCH_NOTE}.", cores_note(data, others)]


def mp_vs_dp(data: records.EntryData, others: Others) -> Table:
  """Data vs model parallel seconds per setting, ours and the report's."""
  rep, rows = [reported.MP_VS_DP[k] for k in sorted(reported.MP_VS_DP)], []
  for i, (label, g) in enumerate(mp_vs_dp_groups(data)):
    dp, mp, r = g.get(DP.name), g.get(MP.name), rep[i] if i < len(rep) else {}
    rows.append([label, _seconds(dp), _seconds(mp), fmt_ratio(records.ratio(mp, dp) if dp and mp else None),
                 r.get(DP.name, "—"), r.get(MP.name, "—"), fmt_ratio(r[MP.name] / r[DP.name] if r else None)])
  return md_table(["setting (ours)", "ours DP s", "ours MP s", "ours MP/DP", "report DP s", "report MP s",
                         "report MP/DP"], rows), [
      f"Ours: {_batches(data)}; the report: batch 7000 ({reported.DP_BATCH_NOTE}). {SINGLE}"]


def accuracy_vs_epochs(data: records.EntryData, others: Others) -> Table:
  """Test accuracy per program and epochs, every preset present and the report's."""
  rows, sentences = [], []
  for preset, runs in by_preset(data).items():
    rows += [[preset, program_name(program), f"{e}+{e}", fmt_accuracy(a)]
             for program, values in accuracy_series(runs).items() for e, a in values]
    # Each layer's held-out reconstruction loss at the end of pretraining against greedy's at the same epochs.
    runs, worst = runs.values(), {}
    greedy = {r["config"]["pretrain_epochs"]: r.get("heldout_reconstruction") for r in runs
              if strategy(r) == GREEDY.name}
    for r in runs:
      e, program, ours = r["config"]["pretrain_epochs"], strategy(r), r.get("heldout_reconstruction")
      if program != GREEDY.name and ours and greedy.get(e):
        worst[program] = max([worst.get(program, (0.0, 0))] + [
            (abs(a["loss"] / b["loss"] - 1), e) for a, b in zip(ours, greedy[e])])
    if worst:
      sentences.append(f"{preset}: held-out reconstruction loss at the end of pretraining, per layer, relative to "
                       "greedy's at the same epochs (test images through the stack below, fixed masks): " +
                       "; ".join(f"{program_name(p)} within {100 * w:.1f}% (largest gap at {e}+{e} epochs)"
                                 for p, (w, e) in sorted(worst.items())) + ".")
  rows += [["report", program_name(p), f"{e}+{e}", f"{a:.4f}"] for p in reported.ACCURACY
           for e, a in sorted(reported.ACCURACY[p].items())]
  return md_table(["preset", "program", "epochs", "test accuracy"], rows), sentences + [
      f"The report's text gives model parallel ~{reported.MP_ACCURACY_TEXT}."]


def dp_accuracy(data: records.EntryData, others: Others) -> Table:
  """Data-parallel test accuracy per recipe and epochs vs greedy and the report."""
  rows = []
  for preset, runs in by_preset(data).items():
    dp = batch_label([r for n, r in runs.items() if n.startswith("dp_")])
    rows += [[preset, f"{row['epochs']}+{row['epochs']}", dp] + [fmt_accuracy(x) for x in (
        row["report_recipe"], row["large_batch"], row["baseline"],
        None if row["baseline"] is None else row["baseline"] - DP_TOLERANCE, row["report"])]
             for row in dp_accuracy_rows(runs, preset)]
  rates = next((r["learning_rates"] for r in data.runs.values()
                if r.get("learning_rates") and r["run_name"].endswith("large_batch")), None)
  recipe = (f" (here: pretraining {rates['pretrain']:.3g}, finetuning {rates['finetune']:.3g}, after "
            f"{rates['warmup_epochs']:g} warm-up epochs)") if rates else ""
  return md_table(["preset", "epochs", "ours DP batch", "ours DP report recipe", "ours DP large-batch",
                         "ours greedy (batch 100)", "goal (greedy - 0.005)", "report DP (batch 5000 per tower)"],
                        rows), [
      f"The report's recipe keeps the batch-100 learning rates at its batch 5000 (its 0.7472 / 0.8162; "
      f"{reported.DP_BATCH_NOTE}); the large-batch recipe, chosen on validation accuracy in the `large_batch` study, "
      f"scales them with the batch{recipe}. {SINGLE}"]


def strategy_comparison(data: records.EntryData, others: Others) -> Table:
  """Seconds and speedup over greedy per program, ours and the report's."""
  rs, rep = strategy_records(data), reported.STRATEGY_COMPARISON
  base = rs.get(GREEDY.run_name)
  rows = [[program_name(p), batch_label([r]), _seconds(r),
           fmt_ratio(records.ratio(base, r) if base else None), rep.get(p, "—"),
           fmt_ratio(rep[GREEDY.name] / rep[p]) if p in rep else "—"]
          for r in rs.values() for p in [strategy(r)]]
  return md_table(["program", "ours batch", "ours s", "ours speedup", "report s", "report speedup"], rows), [
      "Single runs; the benchmarks in the Benchmarks section repeat the comparison with spread.",
      f"The report ran batch 5000 ({reported.DP_BATCH_NOTE}).", cores_note(data, others)]


def convergence(data: records.EntryData, others: Others) -> Table:
  """Pretraining seconds, seconds to the fixed loss (all layers and per layer) and final losses per program."""
  reach, rs = times_to_target(data), strategy_records(data)
  key, _ = convergence_loss(rs)
  rows = [[program_name(strategy(r)), fmt_seconds(r["pretrain_seconds"]),
           fmt_seconds(reach[s][0]) if reach.get(s, (None,))[0] is not None else "not reached",
           ", ".join(fmt_seconds(t) for t in reach.get(s, (None, []))[1]),
           ", ".join(f"{layer['epochs'][-1][key]:.2f}" for layer in r["layers"])] for s, r in rs.items()]
  what = ("held-out reconstruction loss (the 10,000 test images through the stack below, fixed masks: the "
          "same quantity for every program)" if key == "heldout_loss" else
          "training reconstruction loss (epoch mean; these records have no per-epoch held-out loss)")
  return md_table(["program", "pretraining s", "seconds to fixed loss", "per layer", "final loss per layer"],
                        rows), [
      f"Loss: {what}. Fixed loss: greedy's final loss of each layer × {1 + LOSS_TOLERANCE}; a program reaches "
      "it when its last layer does (the metric of Santara et al. 2016, \"Faster learning of deep stacked autoencoders "
      "on multi-core systems using synchronized layer-wise pre-training\"). The report has no such figure. Model "
      "parallel trains lower layers for more epochs (pipeline fill) and upper layers on inputs that still change."]


def large_batch(data: records.EntryData, others: Others) -> Table:
  """The large-batch study: candidates compared on validation accuracy, test accuracy of the chosen one only."""
  rows, chosen = large_batch_choice(data)
  table = []
  for row in rows:
    r = row["record"]
    rates, c = r.get("learning_rates") or {}, r["config"]
    table.append([f"`{row['run']}`" + (" (chosen)" if row["run"] == chosen else ""), program_name(row["program"]),
                  batch_label([r]), f"{rates.get('pretrain', c['pretrain_learning_rate']):.3g}",
                  f"{c.get('finetune_optimizer', 'sgd')} {rates.get('finetune', c['finetune_learning_rate']):.3g}",
                  ", ".join(f"{x:.1f}" for x in row["losses"]), fmt_accuracy(row["validation"]),
                  fmt_accuracy(row["test"]) if row["run"] == chosen or row["program"] != DP.name
                  else "not used"])
  return md_table(["run", "program", "batch", "pretraining rate", "finetuning", "last loss per layer",
                         "validation accuracy", "test accuracy"], table), [
      "Candidates are compared on the validation split (the first 5,000 images of MNIST's training set, never "
      "trained on); test accuracy is reported once, for the chosen candidate (and the greedy reference). " + SINGLE]


def full_size(data: records.EntryData, others: Others) -> Table:
  """The full-size runs: test accuracy beside the report's at the same epochs, and time."""
  report = {GREEDY.name: f"{reported.ACCURACY[GREEDY.name][30]} (greedy 30+30, conres2.png)",
            MP.name: f"{reported.MP_ACCURACY_TEXT} (model parallel, \"around 96.62%\" in the text)",
            DP.name: f"{reported.DP_ACCURACY[30]} (data parallel, batch 5000 per tower, 30+30)"}
  rows = [[f"`{name}`", batch_label([r]), fmt_accuracy(records.test_accuracy(r)),
           report.get(strategy(r), "—"),
           f"{r['pretrain_seconds'] / 60:.0f} + {r['finetune']['seconds'] / 60:.0f} min"] for name, r in data.runs.items()]
  short = [f"`{name}`" for name, r in data.runs.items()
           if r.get("run_seconds", r.get("total_seconds", float("inf"))) < r["pretrain_seconds"]]
  return md_table(["run", "batch", "test accuracy", "report", "pretraining + finetuning"], rows), [
      f"{', '.join(short)}: resumed from checkpoints written before records kept the whole run's time, so their "
      "total_seconds (and run_seconds, where present) are the last process's only (smaller than the pretraining "
      "seconds); the minutes shown are pretraining and finetuning." if short else "",
      "The report's network, 4 × 2000 hidden units, all 55,000 training images, on 2 CPU cores; hours per run, so not "
      "in the `cpu` preset. Times are not benchmarks (these ran at low priority beside other work). Single runs. The "
      "large-batch recipe is the one chosen on validation accuracy in `large_batch`."]


def pp_scaling(data: records.EntryData, others: Others) -> Table:
  """Seconds, speedup, the pipeline model's prediction and its error, stages and cores busy per stack and devices."""
  rows, errors = [], []
  for row in pipeline_rows(data):
    error = None if row["predicted"] is None else (row["predicted"] - row["seconds"]) / row["seconds"]
    if error is not None and not row["oversubscribed"] and not row["in_sample"]:
      errors.append(abs(error))
    rows.append([row["stack"], f"{row['devices']}{' †' if row['oversubscribed'] else ''}", row["stages"],
                 fmt_seconds(row["seconds"]), fmt_ratio(row["speedup"]), fmt_seconds(row["predicted"]),
                 "—" if error is None else f"{100 * error:+.0f}%" + (" (fit)" if row["in_sample"] else ""),
                 "—" if row["cores_busy"] is None else f"{row['cores_busy']:.2f}"])
  return md_table(["stack", "devices", "stages", "seconds", "speedup vs 1 device", "model s", "model error",
                         "cores busy"], rows), [
      "Single runs. Cores busy = process CPU seconds / wall seconds while pretraining.",
      f"Model error on the points not used for the fit, up to the core count: largest {100 * max(errors):.0f}% (the "
      "model has no co-run slowdown)." if errors else "", DAGGER]
