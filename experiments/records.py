"""Reading the run records of the experiments (the record each program writes, `common/runlog.py`).

Records live where `presets.record_file` puts them, normally <output_dir>/runs/<entry>/<preset>_<run>.json
(a run shared by two entries lives in the first one's directory, see `presets.build`). `EntryData` is what
a figure or table of an entry is computed from. Records of other machines live in subdirectories of the
output directory laid out the same way (`OTHER_MACHINES`).
"""

import dataclasses
import json
import os
import statistics
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple

from experiments import presets

# Subdirectories of an output directory that hold another machine's records, in the same layout.
OTHER_MACHINES = ("xeon16",)

# Config fields compared between a stored record and the run that would make it.
_COMPARED = ("hidden_units", "pretrain_epochs", "finetune_epochs", "batch_size", "num_devices",
             "threads_per_device", "train_examples", "seed", "pretrain_learning_rate", "finetune_learning_rate",
             "pretrain_lr_scaling", "finetune_lr_scaling", "warmup_epochs", "reference_batch_size")


def record_path(output_dir: str, preset: str, run: presets.RunSpec) -> str:
  """Where the record of `run` at `preset` is written."""
  return os.path.join(output_dir, presets.record_file(preset, run))


def load(path: str) -> Optional[Dict[str, Any]]:
  """The record at `path`, or None when there is none."""
  if not os.path.exists(path):
    return None
  with open(path) as f:
    return json.load(f)


def mismatches(record: Mapping, run: presets.RunSpec) -> List[str]:
  """Flags whose value in `record["config"]` differs from `run` (e.g. after a preset was edited)."""
  config = record.get("config", {})
  wanted = dict(run.flags)
  for flag in run.extra_flags:
    name, _, value = flag.lstrip("-").partition("=")
    wanted[name] = value
  out = []
  for name, value in wanted.items():
    if name not in config or name not in _COMPARED:
      continue
    have = config[name]
    if name == "hidden_units":
      same = list(have) == list(value)
    elif isinstance(have, (int, float)) and not isinstance(have, bool):
      same = float(have) == float(value)
    else:
      same = str(have) == str(value)
    if not same:
      out.append(f"{name}={have} (preset: {value})")
  return out


def entry_records(output_dir: str, entry: str, preset: str) -> Dict[str, Dict[str, Any]]:
  """{run name: record} of the runs of `entry` at `preset` that exist (none if the preset lacks the entry)."""
  out = {}
  entries = presets.build(preset)
  for run in entries[entry].runs if entry in entries else ():
    record = load(record_path(output_dir, preset, run))
    if record is not None:
      out[run.name] = record
  return out


# Which preset an entry shows when several have records: the largest first.
_PREFERENCE = ("cpu", "paper", "full", "mid", "smoke")


def primary_preset(output_dir: str, entry: str) -> Optional[str]:
  """The preset an entry's figure and table show: paper when all its paper runs exist, else the
  largest preset with any record (cpu, paper, full, mid, then smoke); None when there is none."""
  runs = {p: entry_records(output_dir, entry, p) for p in presets.PRESETS}
  paper = presets.build("paper")
  if runs["paper"] and len(runs["paper"]) == len(paper[entry].runs):
    return "paper"
  for preset in _PREFERENCE:
    if runs[preset]:
      return preset
  return None


@dataclasses.dataclass
class EntryData:
  """The records a figure or table is drawn from.

  Attributes:
    entry: the entry name.
    preset: the preset shown (see `primary_preset`).
    runs: {run name: record} of `preset`.
    other: {preset: {run name: record}} of the other presets that have records (accuracy figures
      show them too).
  """
  entry: str
  preset: str
  runs: Dict[str, Dict[str, Any]]
  other: Dict[str, Dict[str, Dict[str, Any]]] = dataclasses.field(default_factory=dict)

  @staticmethod
  def load(output_dir: str, entry: str) -> Optional["EntryData"]:
    """The entry's records in `output_dir`, or None when it has none."""
    preset = primary_preset(output_dir, entry)
    if preset is None:
      return None
    other = {p: r for p in presets.PRESETS if p != preset
             for r in [entry_records(output_dir, entry, p)] if r}
    return EntryData(entry, preset, entry_records(output_dir, entry, preset), other)

  def all_records(self) -> list:
    """Records of every preset present."""
    return list(self.runs.values()) + [r for runs in self.other.values() for r in runs.values()]


def other_machines(output_dir: str, entry: str) -> Dict[str, EntryData]:
  """{machine directory: the entry's records there} for the other machines that have records of it."""
  out = {}
  for machine in OTHER_MACHINES:
    data = EntryData.load(os.path.join(output_dir, machine), entry)
    if data is not None:
      out[machine] = data
  return out


def devices(record: Mapping) -> int:
  """Devices (G) the run used."""
  return int(record["config"]["num_devices"])


def cores(record: Mapping) -> int:
  """Cores the run's process could use: `environment.usable_cores` (its CPU affinity), else the machine's
  `cpu_count` (records made before the field)."""
  env = record["environment"]
  return int(env.get("usable_cores") or env["cpu_count"])


def oversubscribed(record: Mapping) -> bool:
  """True when the run had more logical CPU devices than cores it could use (marked †)."""
  return record["environment"].get("device_kind") != "GPU" and devices(record) > cores(record)


def machine(record: Mapping) -> str:
  """The machine a run ran on: "<processor>, <usable cores> cores" ("unknown processor" for records made
  before `environment.cpu_model`)."""
  return f"{record['environment'].get('cpu_model') or 'unknown processor'}, {cores(record)} cores"


def code(record: Mapping) -> str:
  """The code a run ran: its commit's short hash ("+dirty" when the tree had changes), or "commit unknown"."""
  env = record["environment"]
  commit = env.get("commit")
  if not commit or commit == "unknown":
    return "commit unknown"
  return f"commit {commit[:7]}" + ("+dirty" if env.get("commit_dirty") else "")


def same_code(a: Mapping, b: Mapping) -> bool:
  """True when two records ran the same code: equal code digests, else equal commits (unknown = unknown)."""
  ea, eb = a["environment"], b["environment"]
  if ea.get("code_digest") and eb.get("code_digest"):
    return ea["code_digest"] == eb["code_digest"]
  return code(a) == code(b)


def machine_label(rs: Sequence[Mapping]) -> str:
  """The machine(s) of records, e.g. "2 cores"."""
  return "/".join(map(str, sorted({cores(r) for r in rs}))) + " cores"


def hardware(rs: Sequence[Mapping]) -> str:
  """One line naming the hardware the records ran on, e.g. "CPU-logical devices, 2 cores, TF 2.21.0 (vm)";
  the processor follows the host ("(vm, AMD EPYC)") when the records name one."""
  env = [r["environment"] for r in rs]
  kinds = sorted({e.get("device_kind", "?") for e in env})
  hosts = sorted({e.get("hostname", "?") for e in env}) + sorted({e["cpu_model"] for e in env if e.get("cpu_model")})
  return (f"{'/'.join(kinds)} devices, {machine_label(rs)}, TF {'/'.join(sorted({e.get('tensorflow', '?') for e in env}))} "
          f"({', '.join(hosts)})")


def median_epoch_seconds(record: Mapping, layer: int = 0) -> float:
  """Median seconds of one pretraining epoch of layer `layer` (0-based)."""
  return statistics.median(e["seconds"] for e in record["layers"][layer]["epochs"])


def layer_epoch_seconds(record: Mapping) -> List[float]:
  """Median seconds of one pretraining epoch of each layer, bottom first."""
  return [median_epoch_seconds(record, k) for k in range(len(record["layers"]))]


def test_accuracy(record: Mapping) -> Optional[float]:
  """The finetuned test accuracy in [0, 1], or None when the run did not finetune."""
  fine = record.get("finetune")
  return fine["test_accuracy"] if fine else None


def validation_accuracy(record: Mapping) -> Optional[float]:
  """The finetuned accuracy on the validation split (5,000 images held out of training), or None."""
  fine = record.get("finetune")
  return fine.get("validation_accuracy") if fine else None


def _step_end_times(record: Mapping) -> Dict[Tuple[int, int], float]:
  """{(group, step): seconds since pretraining began} at the end of each model-parallel step.

  Steps run in (group, step) order; each lasts its wall seconds plus its weight copy when the copy
  is not already inside the wall seconds (the record's pretrain_seconds says which).
  """
  steps = sorted(record["schedule"]["steps"], key=lambda s: (s["group"], s["step"]))
  walls = [float(s["wall_seconds"]) for s in steps]
  copies = [float(s.get("copy_seconds") or 0.0) for s in steps]
  with_copies = abs(sum(walls) + sum(copies) - record["pretrain_seconds"]) < abs(sum(walls) - record["pretrain_seconds"])
  out, clock = {}, 0.0
  for s, w, c in zip(steps, walls, copies):
    clock += w + (c if with_copies else 0.0)
    out[(s["group"], s["step"])] = clock
  return out


def has_heldout_curves(record: Mapping) -> bool:
  """True if every epoch of every layer has its held-out reconstruction loss (--heldout_every_epoch)."""
  return all("heldout_loss" in e and "elapsed_seconds" in e for layer in record["layers"] for e in layer["epochs"])


def loss_curves(record: Mapping, key: str = "loss") -> List[List[Tuple[float, float]]]:
  """Per layer, [(seconds since pretraining began, loss)] at the end of each epoch.

  `key` is "loss" (the epoch's mean training reconstruction loss) or "heldout_loss" (the held-out
  reconstruction loss after the epoch, `has_heldout_curves`). Seconds are steady-state training seconds
  (warm-up, checkpoints and evaluation excluded), as in `pretrain_seconds`: the epoch's `elapsed_seconds`
  where the record has it; else, for model parallel, the end of the epoch's step (`schedule.steps`), and
  for the programs that run the layers one after another, the sum of the epochs' seconds.
  """
  if all("elapsed_seconds" in e for layer in record["layers"] for e in layer["epochs"]):
    return [[(e["elapsed_seconds"], e[key]) for e in layer["epochs"]] for layer in record["layers"]]
  if record.get("schedule") and record["schedule"].get("steps"):
    ends = _step_end_times(record)
    return [[(ends[(layer.get("group", 0), e["step"])], e[key]) for e in layer["epochs"]]
            for layer in record["layers"]]
  curves, clock = [], 0.0
  for layer in record["layers"]:
    curve = []
    for e in layer["epochs"]:
      clock += e["seconds"]
      curve.append((clock, e[key]))
    curves.append(curve)
  return curves


def time_to_loss_per_layer(curves: Sequence[Sequence[Tuple[float, float]]],
                           targets: Sequence[float]) -> List[Optional[float]]:
  """Per layer, the seconds at which its loss first reached its target (loss <= target), None if never."""
  return [next((t for t, loss in curve if loss <= target), None) for curve, target in zip(curves, targets)]


def time_to_loss(curves: Sequence[Sequence[Tuple[float, float]]], targets: Sequence[float]) -> Optional[float]:
  """Seconds until every layer's loss has reached its target (layer k: loss <= targets[k]);
  None when some layer never does."""
  per_layer = time_to_loss_per_layer(curves, targets)
  return None if any(t is None for t in per_layer) else max(per_layer, default=0.0)


def driver_log(output_dir: str) -> List[Dict[str, Any]]:
  """The lines of <output_dir>/runs/driver_log.jsonl: one per run the driver finished."""
  path = os.path.join(output_dir, "runs", "driver_log.jsonl")
  if not os.path.exists(path):
    return []
  with open(path) as f:
    return [json.loads(line) for line in f if line.strip()]
