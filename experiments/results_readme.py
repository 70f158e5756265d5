"""Writes <output_dir>/README.md from the records: a headline table, the cpu preset's time budget
(estimated vs measured), the performance model's errors, and one section per entry with its figure, our
numbers next to the report's, the exact commands and what agrees or differs."""

import os
from typing import Dict, List, Optional

from experiments import budget
from experiments import driver
from experiments import figures
from experiments import full_size
from experiments import perf_model
from experiments import plot_accuracy
from experiments import plot_comparison
from experiments import plot_scaling
from experiments import plot_style
from experiments import presets
from experiments import records
from experiments import reported
from experiments import results_tables

DAGGER = "† more logical devices than cores (oversubscribed)."


def _rel(path: str) -> str:
  rel = os.path.relpath(os.path.abspath(path), driver.ROOT)
  return path if rel.startswith("..") else rel


def _speedup(data: Optional[plot_style.EntryData], layers: Optional[int], devices: int) -> Optional[str]:
  if data is None:
    return None
  if layers is None:
    by_g = {records.devices(r): r for r in data.runs.values()}
  else:
    by_g = plot_scaling.mp_layers(data).get(layers, {})
  if 1 not in by_g or devices not in by_g:
    return None
  r = by_g[devices]
  return f"{by_g[1]['pretrain_seconds'] / r['pretrain_seconds']:.2f}×{' †' if records.oversubscribed(r) else ''} ({data.preset})"


def _accuracy(data: Optional[plot_style.EntryData], strategy: str) -> Optional[str]:
  """The accuracy at the largest epoch setting of the largest preset present."""
  if data is None:
    return None
  for preset in ("paper", "cpu", "smoke"):
    if preset == data.preset or preset in data.other:
      series = plot_accuracy.accuracy_series(data, preset).get(strategy)
      if series:
        e, a = series[-1]
        return f"{a:.4f} ({preset}, {e}+{e})"
  return None


def headline(data: Dict[str, Optional[plot_style.EntryData]]) -> str:
  """The table linked from the top README: the report's key numbers and ours."""
  def or_dash(v):
    return v or "not run yet"
  rows = [
      ["Model parallel speedup, 4 layers, batch 100 (`mp_scaling_b100`)", "1.29× on 4 GPUs",
       or_dash(_speedup(data["mp_scaling_b100"], 4, 2)) + " on 2 devices; " + or_dash(_speedup(data["mp_scaling_b100"], 4, 4)) + " on 4"],
      ["Model parallel speedup, 4 layers, batch 5000 (`mp_scaling_b5000`)", "2.10× on 4 GPUs",
       or_dash(_speedup(data["mp_scaling_b5000"], 4, 2)) + " on 2 devices; " + or_dash(_speedup(data["mp_scaling_b5000"], 4, 4)) + " on 4"],
      ["Data parallel speedup, batch 5000 (`dp_scaling`)", "near linear",
       or_dash(_speedup(data["dp_scaling"], None, 2)) + " on 2 devices; " + or_dash(_speedup(data["dp_scaling"], None, 4)) + " on 4"],
      ["Greedy test accuracy (`accuracy_vs_epochs`)", f"{reported.ACCURACY['greedy'][60]} (60+60)",
       or_dash(_accuracy(data["accuracy_vs_epochs"], "greedy"))],
      ["Model parallel test accuracy (`accuracy_vs_epochs`)", f"~{reported.MP_ACCURACY_TEXT}",
       or_dash(_accuracy(data["accuracy_vs_epochs"], "mp"))],
  ]
  dp = data["dp_accuracy"]
  if dp is not None:
    best = None
    for preset in ("paper", "cpu", "smoke"):
      if preset == dp.preset or preset in dp.other:
        got = plot_accuracy.dp_accuracy_rows(dp, preset)[-1]
        best = (f"report recipe {plot_style.fmt_accuracy(got['report_recipe'])}, large-batch "
                f"{plot_style.fmt_accuracy(got['large_batch'])} ({preset}, {got['epochs']}+{got['epochs']})")
        break
    rows.append(["Data parallel test accuracy, batch 5000 (`dp_accuracy`)", f"{reported.DP_ACCURACY[60]} (60+60)", best])
  sc = data["strategy_comparison"]
  if sc is not None:
    rs = plot_comparison.strategy_records(sc)
    if "greedy" in rs:
      ours = ", ".join(f"{plot_style.STRATEGY_NAMES[s]} {rs['greedy']['pretrain_seconds'] / rs[s]['pretrain_seconds']:.2f}×"
                       for s in ("mp", "dp") if s in rs)
      g = max(records.devices(rs[s]) for s in ("mp", "dp") if s in rs)
      rows.append(["Speedup over greedy, batch 5000 (`strategy_comparison`)",
                   "model parallel 1.57×, data parallel 1.10× (4 GPUs)", f"{ours} ({sc.preset}, {g} devices)"])
  return results_tables.md_table(["result", "report (4× GRID K520)", "ours"], rows) + "\n\n" + DAGGER


def budget_table(output_dir: str) -> str:
  """Estimated vs measured minutes per entry of the cpu preset."""
  entries = presets.build("cpu")
  estimated = budget.entry_seconds(entries, 2)
  measured: Dict[str, float] = {}
  for line in records.driver_log(output_dir):
    if line["preset"] == "cpu":
      measured[line["entry"]] = measured.get(line["entry"], 0.0) + line["wall_seconds"]
  rows = []
  for name, entry in entries.items():
    own = sum(1 for r in entry.runs if r.home == name)
    rows.append([f"`{name}`", f"{own} (+{len(entry.runs) - own} shared)" if own < len(entry.runs) else own,
                 budget.minutes(estimated[name]), budget.minutes(measured[name]) if name in measured else "—",
                 "; ".join(presets.shrink_notes(name, "cpu"))])
  rows.append(["**total**", sum(1 for e in entries.values() for r in e.runs if r.home == e.name),
               budget.minutes(sum(estimated.values())),
               budget.minutes(sum(measured.values())) if measured else "—", ""])
  return (results_tables.md_table(["entry", "runs", "estimated", "measured", "shrunk from the report (paper preset)"],
                                  rows)
          + f"\n\nEstimate: `experiments/budget.py` (FLOPs at {budget.CORE_FLOPS_PER_SECOND / 1e9:.0f} GFLOP/s per "
          f"core through the performance model, {budget.STARTUP_SECONDS:.0f} s start-up per run); measured: wall-clock "
          "seconds of each program in `runs/driver_log.jsonl`. A run shared by two entries counts for the first.")


def _noise_note(model: perf_model.Model, errors: List[perf_model.Error], work: Dict[str, float]) -> str:
  """Sentences on the oversubscribed points and on how much one-device layer times vary between runs."""
  text = []
  over = [e for e in errors if e.oversubscribed]
  if over:
    measured = [work[e.name] / e.measured for e in over]
    assumed = [work[e.name] / e.predicted for e in over]
    text.append(f"With more devices than cores the runs kept {min(measured):.2f}–{max(measured):.2f} cores' worth of "
                f"work going, the model {min(assumed):.2f}–{max(assumed):.2f}: it gives each of n > C devices C/n of a "
                "core, slowed by rho as measured with 2 devices.")
  singles = [t for _, t in model.epoch_seconds_by_depth]
  spreads = []  # Per layer k: how far apart its epoch times are across the one-device runs that have it.
  for k in range(max(map(len, singles), default=0)):
    times = [t[k] for t in singles if len(t) > k]
    if len(times) > 1:
      spreads.append(max(times) / min(times) - 1)
  if spreads:
    noisy = max(spreads) > results_tables.MODEL_ERROR_GOAL
    text.append(f"Between the one-device runs the same layer's epoch time differed by up to {max(spreads):.0%}"
                + (", so a single run per point is noisy on the scale of the goal." if noisy else "."))
  return "\n\n" + " ".join(text) if text else ""


def model_section(data: Dict[str, Optional[plot_style.EntryData]]) -> str:
  """The performance model's calibration and relative error at every measured point."""
  parts = []
  for name in ("mp_scaling_b100", "mp_scaling_b5000", "dp_scaling"):
    d = data[name]
    if d is None:
      parts.append(f"`{name}`: no records yet.")
      continue
    model, why = plot_scaling.model_for(d)
    errors = plot_scaling.model_errors(d)
    if model is None:
      parts.append(f"`{name}`: {why}.")
      continue
    out_of_sample = [abs(e.relative) for e in errors if not e.in_calibration]
    everywhere = max(abs(e.relative) for e in errors)
    points = {n: perf_model.Point.of(r, n) for n, r in d.runs.items()}
    work = {e.name: model.work_seconds(e.hidden_units, points[e.name].epochs, e.devices) for e in errors}
    rows = [["x".join(map(str, e.hidden_units)), e.devices, plot_style.fmt_seconds(e.measured) + (" †" if e.oversubscribed else ""),
             plot_style.fmt_seconds(e.predicted), f"{e.relative:+.1%}", "fit" if e.in_calibration else "predicted",
             f"{work[e.name] / e.measured:.2f} / {work[e.name] / e.predicted:.2f}"]
            for e in errors]
    worst = max(out_of_sample) if out_of_sample else None
    goal = results_tables.MODEL_ERROR_GOAL

    def judged(x):
      return f"{x:.1%} ({'within' if x <= goal else 'outside'} the {goal:.0%} goal)"
    verdict = (f"largest error {judged(everywhere)}; at predicted points "
               + ("none (every run was used for the calibration)" if worst is None else judged(worst)))
    parts.append(f"**`{name}`** ({d.preset}): {model.describe()}; calibrated on {', '.join(model.calibration)}; "
                 f"{verdict}.\n\n" + results_tables.md_table(
                     ["hidden units", "devices", "measured s", "predicted s", "error", "point",
                      "cores' worth of work, measured / model"], rows) + _noise_note(model, errors, work))
  return "\n\n".join(parts)


def entry_section(output_dir: str, name: str, data: Optional[plot_style.EntryData]) -> str:
  """One entry: figure, preset, commands, table, sentences."""
  title = presets.build("paper")[name].title
  lines = [f"### `{name}`: {title}", ""]
  if data is None:
    lines += ["No records yet: run `python -m experiments.reproduce --preset=cpu --only=" + name + "`.", ""]
    return "\n".join(lines)
  rel_fig = os.path.relpath(figures.figure_path(output_dir, name), output_dir)
  lines += [f"![{name}]({rel_fig})", "", f"*{plot_style.preset_note(name, data.preset)}; {records.hardware(list(data.runs.values()))}.*", ""]
  table, sentences = results_tables.TABLES[name](data)
  lines += [table, "", " ".join(x for x in sentences if x), ""]
  jobs = driver.plan(presets.build(data.preset), data.preset, _rel(output_dir), "scratch/reproduce", 2)
  mine = [j for j in jobs if any(j.run.home == r.home and j.run.stored_name == r.stored_name
                                 for r in presets.build(data.preset)[name].runs)]
  lines += [f"Command: `python -m experiments.reproduce --preset={data.preset} --only={name} "
            f"--output_dir={_rel(output_dir)}` (skips records that exist). Each run:", "", "<details><summary>"
            f"{len(mine)} program commands</summary>", "", "```"]
  lines += ["python " + " ".join(driver.command(j, data.preset)[1:]) for j in mine]
  lines += ["```", "</details>", ""]
  return "\n".join(lines)


def write(output_dir: str) -> str:
  """Writes <output_dir>/README.md; returns its path."""
  data = {name: plot_style.EntryData.load(output_dir, name) for name in presets.ENTRIES}
  text = [
      "# Results: the report's figures and tables, regenerated",
      "",
      "Generated by `python -m experiments.reproduce` (`experiments/results_readme.py`) from the run records in "
      "`runs/`; do not edit by hand. Figures are drawn from the records alone. The report's numbers are from "
      "`../shared/reference/original_implementation.md` and read off its figures (approximate).",
      "",
      "Presets: `paper` = the report's settings; `cpu` = the same experiments shrunk to about an hour on 2 cores "
      "(each figure and section says what was shrunk); `smoke` = seconds, for CI. Device counts above the core "
      "count run as logical devices sharing the cores and are marked oversubscribed (hollow markers, hatched "
      "bars, †).",
      "",
      "## Headline",
      "",
      headline(data),
      "",
      "## Full-size accuracy",
      "",
      "The report's network, 4 × 2000 hidden units, all 55,000 training images, on this machine's 2 CPU cores "
      "(`experiments/full_size.py`; hours per run, so not in the `cpu` preset; times are not benchmarks: these "
      "ran at low priority beside other work).",
      "",
      full_size.table(os.path.join(output_dir, "full_size")),
      "",
      "## Reproduce",
      "",
      "```",
      "make reproduce                                   # = python -m experiments.reproduce --preset=cpu",
      "python -m experiments.reproduce --preset=paper --only=dp_accuracy   # one entry at the report's size",
      "python -m experiments.reproduce --preset=cpu --only=mp_scaling_b100/h4_g2   # one run",
      "python -m experiments.reproduce --preset=cpu --dry_run   # the plan with estimated minutes",
      "```",
      "",
      "Budget of the `cpu` preset on 2 cores:",
      "",
      budget_table(output_dir),
      "",
      "## Performance model",
      "",
      "`experiments/perf_model.py` predicts pretraining seconds for 1-8 devices from per-layer epoch seconds "
      "measured on one device, the schedule of each strategy, and a contention factor and copy/all-reduce costs "
      "measured on 2 devices; CPU contention: devices share the cores fairly, so at most min(G, cores) run at "
      "once. Points marked *fit* were used for the calibration (in-sample); *predicted* points were not. Goal: "
      f"error within {results_tables.MODEL_ERROR_GOAL:.0%} at every point. The last column divides the run's work "
      "(its layer epochs at one-device speed, one after another) by the measured and by the predicted seconds: "
      "the cores' worth of work the run kept going on average, and what the model assumed.",
      "",
      model_section(data),
      "",
      "## Entries",
      "",
  ]
  for name in presets.ENTRIES:
    text.append(entry_section(output_dir, name, data[name]))
  path = os.path.join(output_dir, "README.md")
  with open(path, "w") as f:
    f.write("\n".join(text).rstrip() + "\n")
  return path
