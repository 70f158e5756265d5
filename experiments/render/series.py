"""What the tables and figures show, computed from the run records (`stacks`, `program_records`, ...; ratios through
`records.ratio`), the names both use (the model's error goal, the scaling studies, the figures' paths), and each
study's records gathered for the studies given (`load_all`, `others`). Programs are known by their capabilities."""

import os
from typing import Dict, List, Optional, Tuple

from common.settings import programs
from experiments import presets, records

MODEL_ERROR_GOAL = 0.15
Runs = Dict[str, dict]
SCALING = ("mp_scaling_b100", "mp_scaling_b5000", "dp_scaling")
Data = Dict[str, Optional[records.StudyRecords]]
# Which preset a study shows when several have records: paper when complete, else the first of these.
PREFERENCE = ("cpu", "paper", "full", "mid", "pretraining", "smoke")
SHRUNK = {"train_examples": "examples", "pretrain_epochs": "pretrain epochs", "finetune_epochs": "finetune epochs",
          "batch_size": "batch", "hidden_units": "hidden units", "num_devices": "devices"}  # {flag: label}


def program_of(record: dict) -> str:
  """The program that wrote a record, e.g. "model_parallel" (its key "strategy": records keep their keys)."""
  return record.get("strategy") or record["config"]["strategy"]


def cores(data: records.StudyRecords) -> int:
  """The fewest cores any run of the study could use."""
  return min(records.cores(r) for r in data.runs.values())


def stacks(data: records.StudyRecords) -> Dict[int, Dict[int, dict]]:
  """{hidden layers: {devices: record}} of a scaling study (data parallel: one stack), sorted."""
  out: Dict[int, Dict[int, dict]] = {}
  for r in data.runs.values():
    out.setdefault(len(r["config"]["hidden_units"]), {})[records.devices(r)] = r
  return {h: dict(sorted(out[h].items())) for h in sorted(out)}


def max_error(predictions: List, in_calibration: bool) -> Optional[float]:
  """The largest |relative error| of `perf_model.Prediction`s at the fit points (in_calibration) or not; None: none."""
  return max((abs(p.relative_error) for p in predictions if p.in_calibration == in_calibration), default=None)


def oversubscribed_faster(data: records.StudyRecords) -> List[Tuple[int, int, float, int, float]]:
  """[(layers, devices, seconds, best devices <= cores, its seconds)] where more devices than cores won."""
  out = []
  for h, by_g in stacks(data).items():
    fair = {g: r for g, r in by_g.items() if not records.oversubscribed(r)}
    best = min(fair, key=lambda g: fair[g]["pretrain_seconds"], default=None)
    out += [(h, g, r["pretrain_seconds"], best, fair[best]["pretrain_seconds"]) for g, r in by_g.items()
            if best and records.oversubscribed(r) and (records.ratio(fair[best], r) or 0) > 1]
  return out


def batch_label(rs: List[dict]) -> str:
  """The batch as run, "; "-joined: "global batch 5000 (2500 per device on 2)" if `splits_batch`, else "batch 100"."""
  labels = (f"batch {b}" if not programs.get(program_of(r)).splits_batch else f"global batch {b} (1 device)" if g == 1
            else f"global batch {b} ({b // g} per device on {g})"
            for r in sorted(rs, key=lambda r: (records.devices(r), r["config"]["batch_size"]))
            for b, g in [(r["config"]["batch_size"], records.devices(r))])
  return "; ".join(dict.fromkeys(labels))


def by_preset(data: records.StudyRecords) -> Dict[str, Runs]:
  """{preset: {run name: record}} of every preset with records, the study's shown preset first."""
  return {data.preset: data.runs, **{p: data.other[p] for p in presets.PRESETS if p in data.other}}


def program_name(program: str) -> str:
  """A program's registry label, e.g. "model parallel"; ValueError for an unregistered program."""
  return programs.get(program).label
def preset_note(study: presets.Study, preset: str) -> str:
  """"preset cpu: examples 5500 (paper 55000); ..." (`SHRUNK` settings changed from paper) or "preset paper (...)"."""
  def values(p: str, flag: str) -> str:
    found = sorted({getattr(r.config, flag) for r in presets.runs_of(study, p)}, key=lambda v: (str(type(v)), v))
    return ", ".join("x".join(map(str, v)) if isinstance(v, tuple) else str(v) for v in found)
  notes = [] if preset == "paper" or "paper" not in study.sizes else [
      f"{label} {a} (paper {b})" for flag, label in SHRUNK.items()
      for a, b in [(values(preset, flag), values("paper", flag))] if a != b]
  return (f"preset {preset}: " + "; ".join(notes) if notes else
          f"preset {preset}" + (" (the report's settings)" if preset == "paper" else ""))


def figure_path(output_dir: str, study: str) -> str:
  """<output_dir>/figures/<study>.png"""
  return os.path.join(output_dir, "figures", f"{study}.png")


def program_records(data: records.StudyRecords) -> Runs:
  """{run name: record} of strategy_comparison / convergence, in the order of `presets.COMPARED`."""
  return {p.run_name: data.runs[p.run_name] for p in presets.COMPARED if p.run_name in data.runs}
def load_all(output_dir: str, registry: presets.Registry) -> Data:
  """{study: its records in `output_dir` (`records.StudyRecords`), or None} of every study of `registry`: the folder's
  records globbed once into one table (`records.table`), then each study's rows picked by its runs at each preset
  (a shared run's where its home study keeps it: `presets.build`). A study shows the paper preset when all its runs
  there have records, else the first of `PREFERENCE` with records. Records of runs shared with another study alone
  count only for a study that owns no run (convergence)."""
  found = records.table(output_dir, registry.layouts)
  built = {p: presets.build(registry, p, found) for p in presets.PRESETS}
  out: Data = {}
  for study in registry.studies:
    shown, complete = {}, False
    for p in presets.PRESETS:
      specs = built[p].get(study.name, ())
      runs = {r.name: found["record"].get(presets.record_file(p, r)) for r in specs}
      own = any(runs[r.name] for r in specs if r.home == study.name) or all(r.home != study.name for r in specs)
      shown[p] = {name: r for name, r in runs.items() if r is not None and own}
      complete = complete or (p == "paper" and bool(shown[p]) and len(shown[p]) == len(runs))
    preset = "paper" if complete else next((p for p in PREFERENCE if shown[p]), None)
    if preset:
      order = {k: i for i, k in enumerate(dict.fromkeys(  # the driver's order: a shared run with the first study's
          (r.home, r.stored_name) for runs in built[preset].values() for r in runs))}
      planned = sorted(built[preset][study.name], key=lambda r: order[(r.home, r.stored_name)])
    out[study.name] = records.StudyRecords(study.name, preset, shown[preset], {
        p: r for p, r in shown.items() if r and p != preset}, output_dir, study, tuple(planned)) if preset else None
  return out


def others(output_dir: str, registry: presets.Registry) -> Dict[str, Data]:
  """{folder: `load_all` of it} of the other folders of records (`records.folders`)."""
  return {m: load_all(os.path.join(output_dir, m), registry) for m in records.folders(output_dir)}


def others_of(found: Dict[str, Data], study: str) -> Dict[str, records.StudyRecords]:
  """{folder: the study's records there} of the folders of `others` that have records of it."""
  return {m: data[study] for m, data in found.items() if data.get(study)}
