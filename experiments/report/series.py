"""What the tables and figures show, computed from the run records (`stacks`, `sweep_points`, `pipeline_rows`, ...;
a ratio of two records through `records.ratio`), and the names both use: the model's error goal, the tolerances,
the scaling studies, the figures' paths, `load_all`. Programs are known by their capabilities and the baseline."""

import os
from typing import Dict, List, Optional, Tuple

from common.settings import programs
from experiments import perf_model
from experiments import presets
from experiments import records

MODEL_ERROR_GOAL = 0.15
Runs = Dict[str, dict]
SCALING = ("mp_scaling_b100", "mp_scaling_b5000", "dp_scaling")
Data = Dict[str, Optional[records.StudyRecords]]


def program_of(record: dict) -> str:
  """The program that wrote a record, e.g. "model_parallel" (its key "strategy": records keep their keys)."""
  return record.get("strategy") or record["config"]["strategy"]


def cores(data: records.StudyRecords) -> int:
  """The fewest cores any run of the study could use."""
  return min(records.cores(r) for r in data.runs.values())


def machine_cores(data: records.StudyRecords) -> int:
  """The cores of the machine the study's runs ran on (`records.host_cores`; the most, should they differ)."""
  return max(records.host_cores(r) for r in data.runs.values())


def stacks(data: records.StudyRecords) -> Dict[int, Dict[int, dict]]:
  """{hidden layers: {devices: record}} of a scaling study (data parallel: one stack), sorted."""
  out: Dict[int, Dict[int, dict]] = {}
  for r in data.runs.values():
    out.setdefault(len(r["config"]["hidden_units"]), {})[records.devices(r)] = r
  return {h: dict(sorted(out[h].items())) for h in sorted(out)}


def max_error(predictions: List[perf_model.Prediction], in_calibration: bool) -> Optional[float]:
  """The largest |relative error| over the fit points (in_calibration) or the predicted ones; None if none."""
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
  """The batch as run, "; "-joined: "global batch 5000 (2500 per device on 2)" for a program that splits it over its
  devices (`Program.splits_batch`), else "batch 100"."""
  labels = []
  for r in sorted(rs, key=lambda r: (records.devices(r), r["config"]["batch_size"])):
    b, g = r["config"]["batch_size"], records.devices(r)
    labels.append(f"batch {b}" if not programs.get(program_of(r)).splits_batch else f"global batch {b} (1 device)"
                  if g == 1 else f"global batch {b} ({b // g} per device on {g})")
  return "; ".join(dict.fromkeys(labels))


def by_preset(data: records.StudyRecords) -> Dict[str, Runs]:
  """{preset: {run name: record}} of every preset with records, the study's shown preset first."""
  return {data.preset: data.runs, **{p: data.other[p] for p in presets.PRESETS if p in data.other}}


def program_name(program: str) -> str:
  """A program's registry label, e.g. "model parallel"; ValueError for an unregistered program."""
  return programs.get(program).label


def preset_note(study: str, preset: str) -> str:
  """"preset cpu: examples 5500 (paper 55000); ..." or "preset paper (the report's settings)"."""
  notes = presets.shrink_notes(study, preset)
  return (f"preset {preset}: " + "; ".join(notes) if notes else
          f"preset {preset}" + (" (the report's settings)" if preset == "paper" else ""))


def figure_path(output_dir: str, study: str) -> str:
  """<output_dir>/figures/<study>.png"""
  return os.path.join(output_dir, "figures", f"{study}.png")


def load_all(output_dir: str) -> Data:
  """{study: its records in `output_dir`, or None}."""
  return {name: records.StudyRecords.load(output_dir, name) for name in presets.NAMES}
