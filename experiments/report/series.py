"""What the tables and figures show, computed from the run records (`stacks`, `sweep_points`, `pipeline_rows`, ...;
a ratio of two records through `records.ratio`), and the names both use: the model's error goal, the tolerances,
the scaling entries, the figures' paths, `load_all`. Programs are known by their capabilities and the baseline."""

import os
from typing import Dict, List, Optional, Tuple

from common.settings import programs
from experiments import perf_model
from experiments import presets
from experiments import records
from experiments import reported
from experiments.benchmarks import equal_cores as equal_cores_bench
from experiments.benchmarks import harness

MODEL_ERROR_GOAL = 0.15
# dp_accuracy's acceptance rule: data parallel at the large batch reaches at least the baseline - this.
DP_TOLERANCE = 0.005
# convergence: the fixed loss of layer k is the baseline's final loss of layer k times (1 + this).
LOSS_TOLERANCE = harness.LOSS_TOLERANCE
# The full-size runs' test accuracy goal on a dataset other than MNIST (MNIST's: the report's numbers).
ACCURACY_GOALS = {presets.FASHION: 0.89}
# The full-size runs' goals with the tuned recipe (docs/pretraining.md), per dataset.
TUNED_GOALS = {presets.MNIST: 0.985, presets.FASHION: 0.90}
Runs = Dict[str, dict]
SCALING = ("mp_scaling_b100", "mp_scaling_b5000", "dp_scaling")
EQUAL_CORES = "equal_cores.png"
Data = Dict[str, Optional[records.EntryData]]


def strategy(record: dict) -> str:
  """The program that wrote a record, e.g. "model_parallel"."""
  return record.get("strategy") or record["config"]["strategy"]


def cores(data: records.EntryData) -> int:
  """The fewest cores any run of the entry could use."""
  return min(records.cores(r) for r in data.runs.values())


def machine_cores(data: records.EntryData) -> int:
  """The cores of the machine the entry's runs ran on (`records.host_cores`; the most, should they differ)."""
  return max(records.host_cores(r) for r in data.runs.values())


def stacks(data: records.EntryData) -> Dict[int, Dict[int, dict]]:
  """{hidden layers: {devices: record}} of a scaling entry (data parallel: one stack), sorted."""
  out: Dict[int, Dict[int, dict]] = {}
  for r in data.runs.values():
    out.setdefault(len(r["config"]["hidden_units"]), {})[records.devices(r)] = r
  return {h: dict(sorted(out[h].items())) for h in sorted(out)}


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
  """The batch as run, "; "-joined: "global batch 5000 (2500 per device on 2)" for a program that splits it over its
  devices (`Program.splits_batch`), else "batch 100"."""
  labels = []
  for r in sorted(rs, key=lambda r: (records.devices(r), r["config"]["batch_size"])):
    b, g = r["config"]["batch_size"], records.devices(r)
    labels.append(f"batch {b}" if not programs.get(strategy(r)).splits_batch else f"global batch {b} (1 device)"
                  if g == 1 else f"global batch {b} ({b // g} per device on {g})")
  return "; ".join(dict.fromkeys(labels))


def sweep_points(data: records.EntryData) -> List[Tuple[int, float, float, bool]]:
  """[(global batch, median seconds per epoch, examples per second, oversubscribed)] sorted by batch."""
  return sorted((b, s, (r["config"]["train_examples"] // b) * b / s, records.oversubscribed(r))
                for r in data.runs.values() for b, s in [(r["config"]["batch_size"], records.median_epoch_seconds(r))])


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


def dataset_accuracy(data: records.EntryData) -> Dict[str, Dict[str, float]]:
  """{dataset: {program: test accuracy}} of `fashion_mnist_accuracy`'s shown preset, in the entry's order of datasets
  and of programs (`presets.ACCURACY_COMPARED`); a program without a record (or accuracy) is left out."""
  found = {(records.dataset(r), strategy(r)): records.test_accuracy(r) for r in data.runs.values()}
  return {d: {p.name: found[(d, p.name)] for p in presets.ACCURACY_COMPARED if found.get((d, p.name)) is not None}
          for d in presets.get(data.entry).sizes[data.preset]["datasets"]}


def most_epochs(data: records.EntryData) -> int:
  """The most pretraining epochs of an entry at its shown preset."""
  return max(presets.get(data.entry).sizes[data.preset]["epochs"])


def accuracy_goal(dataset: str) -> str:
  """"goal ≥ 0.89; published: MLP 256-128-100 0.8833, ..." for a dataset of `ACCURACY_GOALS`, else "—"."""
  published = ", ".join(f"{m} {a}" for m, a in reported.PUBLISHED_BASELINES.get(dataset, {}).items())
  return f"goal ≥ {ACCURACY_GOALS[dataset]}; published: {published}" if dataset in ACCURACY_GOALS else "—"


def dp_accuracy_rows(runs: Runs, preset: str) -> List[Dict[str, Optional[float]]]:
  """Per epoch setting {"epochs", "report_recipe", "large_batch", "baseline", "report"}: test accuracies, None where
  missing ("report": the report's at the matching paper setting)."""
  paper, base = epoch_settings("paper", "dp_accuracy"), programs.baseline().run_name

  def acc(name):
    return records.test_accuracy(runs[name]) if name in runs else None
  return [{"epochs": e, "report_recipe": acc(f"dp_e{e}_report"), "large_batch": acc(f"dp_e{e}_large_batch"),
           "baseline": acc(f"{base}_e{e}"), "report": reported.DP_ACCURACY.get(paper[i]) if i < len(paper) else None}
          for i, e in enumerate(epoch_settings(preset, "dp_accuracy"))]


def large_batch_choice(data: records.EntryData) -> Tuple[List[dict], Optional[str]]:
  """Per run {"run", "record", "program", "candidate" (not the baseline's reference run), "batch", "validation",
  "test", "losses"}, and the candidate with the highest validation accuracy (test plays no part)."""
  rows = [{"run": name, "record": r, "program": strategy(r), "candidate": strategy(r) != programs.baseline().name,
           "batch": r["config"]["batch_size"], "validation": (r.get("finetune") or {}).get("validation_accuracy"),
           "test": records.test_accuracy(r), "losses": [layer["epochs"][-1]["loss"] for layer in r["layers"]]}
          for name, r in data.runs.items()]
  candidates = [row for row in rows if row["candidate"] and row["validation"] is not None]
  return rows, max(candidates, key=lambda row: row["validation"])["run"] if candidates else None


def strategy_records(data: records.EntryData) -> Runs:
  """{run name: record} of strategy_comparison / convergence, in the order of `presets.COMPARED`."""
  return {p.run_name: data.runs[p.run_name] for p in presets.COMPARED if p.run_name in data.runs}


def convergence_loss(rs: Runs) -> Tuple[str, Optional[List[float]]]:
  """(the loss compared: "heldout_loss" when every record has it after every epoch, else "loss"; each layer's fixed
  loss, the baseline's final x (1 + LOSS_TOLERANCE), None without the baseline)."""
  base = programs.baseline().run_name
  key = "heldout_loss" if rs and all(records.has_heldout_curves(r) for r in rs.values()) else "loss"
  return key, [layer["epochs"][-1][key] * (1 + LOSS_TOLERANCE) for layer in rs[base]["layers"]] if base in rs else None


def times_to_target(data: records.EntryData) -> Dict[str, Tuple[Optional[float], List[Optional[float]]]]:
  """{run name: (seconds until every layer reached its fixed loss, the seconds of each layer)} (None: never)."""
  rs = strategy_records(data)
  key, targets = convergence_loss(rs)
  return {s: records.time_to_loss(records.loss_curves(r, key), targets) for s, r in rs.items()} if targets else {}


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
  """Spread over repeats of the baseline-on-all-cores seconds / this configuration's seconds (same repeat)."""
  seconds = summary["pretrain_seconds"]
  return harness.spread([b / m for b, m in zip(seconds[summary["baseline"]]["values"], seconds[name]["values"])])


def program_name(program: str) -> str:
  """A program's registry label, e.g. "model parallel"; ValueError for an unregistered program."""
  return programs.get(program).label


def preset_note(entry: str, preset: str) -> str:
  """"preset cpu: examples 5500 (paper 55000); ..." or "preset paper (the report's settings)"."""
  notes = presets.shrink_notes(entry, preset)
  return (f"preset {preset}: " + "; ".join(notes) if notes else
          f"preset {preset}" + (" (the report's settings)" if preset == "paper" else ""))


def figure_path(output_dir: str, entry: str) -> str:
  """<output_dir>/figures/<entry>.png"""
  return os.path.join(output_dir, "figures", f"{entry}.png")


def load_all(output_dir: str) -> Data:
  """{entry: its records in `output_dir`, or None}."""
  return {name: records.EntryData.load(output_dir, name) for name in presets.NAMES}
