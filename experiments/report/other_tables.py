"""Tables of records outside the run list's entries: the benchmarks' summaries, the records of the removed
devices_beyond_cores benchmark, another machine's single runs (with the performance model fitted on its G <= 2
runs), and the finetuning sweeps kept as history."""

import os
from typing import Dict, List

from experiments import perf_model
from experiments import records
from experiments.benchmarks import catalog
from experiments.benchmarks import harness
from experiments.report import series
from experiments.report import style
from experiments.report import tables


def _folder_records(folder: str) -> Dict[str, dict]:
  return {f[:-len(".json")]: records.load(os.path.join(folder, f)) for f in sorted(os.listdir(folder))
          if f.endswith(".json")}


def machine_section(output_dir: str, machine: str) -> str:
  """The other machine's records outside the run list and the benchmarks: one table per folder, with the
  speedup over its one-device run, the test accuracy, and the performance model fitted on its G <= 2 runs
  predicting the rest when the folder has both."""
  root = os.path.join(output_dir, machine)
  parts = []
  for folder in sorted(os.listdir(root)):
    path = os.path.join(root, folder)
    if folder in ("runs", "benchmarks") or not os.path.isdir(path):
      continue
    rs = _folder_records(path)
    base = {len(r["config"]["hidden_units"]): r for r in rs.values() if records.devices(r) == 1}
    d = records.EntryData(folder, "", rs)
    predicted = {}
    if any(records.devices(r) == 2 for r in rs.values()) and base:
      predicted = {p.name: p for p in series.model_predictions(d)}
    rows = []
    for name, r in rs.items():
      one = base.get(len(r["config"]["hidden_units"]))
      p = predicted.get(name)
      rows.append([f"`{name}`", style.program_name(series.strategy(r)), "x".join(map(str, r["config"]["hidden_units"])),
                   series.batch_label([r]), r["config"]["pretrain_epochs"], records.devices(r),
                   style.fmt_seconds(series.seconds(r)),
                   style.fmt_ratio(records.ratio(one, r) if one else None),
                   f"{style.fmt_seconds(p.predicted)} ({p.relative_error:+.1%}, {'fit' if p.in_calibration else 'predicted'})"
                   if p else "—", style.fmt_accuracy(records.test_accuracy(r))])
    model = ""
    if predicted:
      m, _ = series.model_for(d)
      model = (f" Performance model fitted on the G <= 2 runs ({m.describe()}); out-of-sample error at the "
               f"predicted points: largest {tables.judged_error(series.max_error(list(predicted.values()), False))}.")
      if isinstance(m, perf_model.DataParallel) and m.parallel_fraction == 1.0 and not m.allreduce_seconds_per_param:
        model += (" These runs have no op profile, so the model takes all of an epoch to split over the replicas "
                  "(f = 1) and the all-reduce to be free (gamma = 0).")
    parts.append(f"**`{machine}/{folder}/`** ({records.hardware(list(rs.values()))}; command in "
                 f"[`{machine}/README.md`]({machine}/README.md)).{model}\n\n" + style.md_table(
                     ["run", "program", "hidden units", "batch", "epochs", "devices", "pretraining s",
                      "speedup over 1 device", "model s (error)", "test accuracy"], rows))
  return "\n\n".join(parts)


def benchmark_section(output_dir: str) -> str:
  """Every benchmark summary of this machine and the others: each configuration's seconds and the measures."""
  parts = []
  for benchmark in catalog.BENCHMARKS:
    rows = []
    for where in [output_dir] + [os.path.join(output_dir, m) for m in records.OTHER_MACHINES]:
      for file, summary in harness.load_summaries(where, benchmark).items():
        seconds = "; ".join(f"{n} {style.fmt_spread(s)}" for n, s in summary["pretrain_seconds"].items())
        measures = [style.fmt_spread(summary.get(key)) for key, _ in benchmark.columns]
        folder = os.path.join(where, "benchmarks", benchmark.name)
        link = os.path.relpath(os.path.join(folder, file), output_dir)
        rows.append([records.machine_label(harness.flat_records(folder, summary)), harness.setting_of(summary), seconds, *measures, f"[`{link}`]({link})"])
    if not rows:
      continue
    parts.append(f"**`{benchmark.name}`** (`python -m experiments.benchmarks.{benchmark.name}`; each summary's "
                 "`command` field has its flags; summaries made before the benchmarks moved to "
                 f"`experiments/benchmarks/` name the module `experiments.bench_{benchmark.name}`, same flags and "
                 "configurations):\n\n"
                 + style.md_table(
                     ["machine, code", "setting", "pretraining s per configuration"] + [label for _, label in benchmark.columns]
                     + ["summary"], rows))
  return "\n\n".join(parts) if parts else "No benchmark records yet."


# The removed benchmark of more devices than cores (docs/data_parallel.md, "More devices than cores"): its
# records stay in results/benchmarks/devices_beyond_cores/; its module was last in the tree at this commit.
_BEYOND_CORES = "devices_beyond_cores"
_BEYOND_CORES_COMMIT = "452f604"


def devices_beyond_cores(output_dir: str) -> str:
  """The devices_beyond_cores records: per code (before and after the fix) and configuration, seconds per
  layer-epoch, its growth over the run on as many devices as cores, warm-up and whole-run seconds."""
  folder = os.path.join(output_dir, "benchmarks", _BEYOND_CORES)
  summaries = {f: records.load(os.path.join(folder, f)) for f in sorted(os.listdir(folder))
               if f.startswith("summary")} if os.path.isdir(folder) else {}
  rows, commits = [], []
  for file, summary in summaries.items():
    code = summary["setting"]["code"][0]
    commits.append(f"{code} ran commit {summary['code_commit'][:7]}" if summary.get("code_commit") else
                   f"{code}: commit not recorded")
    found = harness.records_of(folder, summary)
    for name, m in summary["per_configuration"].items():
      r = found[name][0]
      rows.append([code, style.program_name(series.strategy(r)), f"{m['devices']}{' †' if records.oversubscribed(r) else ''}",
                   f"{m['epoch_seconds']:.3f}", "—" if m["epoch_growth_vs_cores"] is None else
                   f"{m['epoch_growth_vs_cores']:.2f}" + (f" (≤ {m['allowed_growth']:g})" if m["oversubscription"] > 1
                                                          else ""), f"{m['warmup_seconds']:.1f}",
                   f"{m['outside_phases_seconds']:.1f}", f"{m['run_seconds']:.1f}", f"{m['cores_busy_training']:.2f}"])
  if not rows:
    return ""
  return (f"**`{_BEYOND_CORES}`** ({records.hardware(harness.flat_records(folder, *summaries.values()))}): "
          "data_parallel and model_parallel on more logical devices than cores, before and after the fix of "
          "docs/data_parallel.md (\"More devices than cores\"), one run per configuration. Its module is no longer in the "
          f"tree (`git show {_BEYOND_CORES_COMMIT}:experiments/benchmarks/{_BEYOND_CORES}.py`); "
          f"{'; '.join(commits)} (each summary's `code_commit`). Growth: seconds per layer-epoch over those on as many "
          "devices as cores (at most devices / cores is expected).\n\n" + style.md_table(
              ["code", "program", "devices", "s per layer-epoch", "growth vs devices = cores", "warm-up s",
               "outside every timed phase s", "run s", "cores busy"], rows) + "\n\n" + style.DAGGER)


# The probe that made the finetuning-only sweeps of the large-batch study (removed since).
_SWEEP_PROBE = "experiments/dp_finetune_sweep.py"
_SWEEP_PROBE_COMMIT = "c7ce2f6"


def finetune_sweeps(folder: str) -> List[str]:
  """Lines on the finetuning-only sweeps kept beside the large-batch study's records (history)."""
  files = sorted(f for f in os.listdir(folder) if f.startswith("finetune_sweep")) if os.path.isdir(folder) else []
  if not files:
    return []
  rows = []
  for file in files:
    sweep = records.load(os.path.join(folder, file))
    for v in sweep["variants"]:
      rows.append([f"`{file}`", v["name"], f"{v['learning_rate']:g}", f"{v['warmup_epochs']:g}",
                   style.fmt_accuracy(v["validation_accuracy"])])
  return ["History: before the recipe was fixed, finetuning alone was swept from one set of pretrained weights "
          f"(plain SGD and SGD with momentum 0.9 at batch 5000, 10 epochs) by a probe since removed (`{_SWEEP_PROBE}`, "
          f"`git show {_SWEEP_PROBE_COMMIT}:{_SWEEP_PROBE}`); each file's `command` field is the command that made it. "
          "Validation accuracy (machine and code not recorded in these files):", "",
          style.md_table(["record", "variant", "learning rate", "warm-up epochs", "validation accuracy"], rows), ""]
