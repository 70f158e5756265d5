"""Run records (`common/artifacts/runlog.py`) as written, whatever declared them: `load`, `table` (every record of a
results folder, found by globbing its studies' layouts), the folders of records beside the main ones (`folders`),
benchmark summaries (`load_summaries`), `StudyRecords` (a study's, picked by `experiments.render.series`),
`machine_label` (the label of machine, instruction set and code every table and figure uses), `datasets` (of the data),
and `ratio`/`same_source`, which refuse records of different machines, instruction sets or codes."""

import dataclasses
import glob
import json
import os
import re
import statistics
import string
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple

import pandas

from common.measure import provenance
from common.data import sources
from common.settings import config as config_lib

NOT_RECORDED = "not recorded"  # what a table shows for a field a record lacks (records made before the field existed)
NO_ISA = f"instruction set {NOT_RECORDED}"  # the label of a record without `environment.cpu_flags`
NOISE = 0.15  # a configuration whose repeats' pretraining seconds differ by more (max / min - 1) is noisy
DATASET_LABELS = {"mnist": "MNIST", "fashion_mnist": "Fashion-MNIST"}  # as tables and figures name them
Record = Dict[str, Any]


def load(path: str) -> Optional[Record]:
  """The record (or any JSON file) at `path` as written, or None when there is none."""
  if not os.path.exists(path):
    return None
  with open(path) as f:
    return json.load(f)


def table(output_dir: str, layouts: Mapping[str, str]) -> pandas.DataFrame:
  """Every record under `output_dir` that a study's layout ({study: layout, e.g. "runs/{study}/{preset}_{run}.json"})
  places, found by globbing (no declaration read): a row each, indexed by its file (relative to `output_dir`,
  "/"-separated: `presets.record_file`), columns study, preset ("" if the layout has none), run and record."""
  rows = []
  for study, layout in layouts.items():
    fields = {"study": re.escape(study), "preset": "(?P<preset>[^/_]+)", "run": "(?P<run>[^/]+)"}
    pattern = "".join(re.escape(text) + fields.get(name, "") for text, name, _, _ in string.Formatter().parse(layout))
    for path in sorted(glob.glob(os.path.join(output_dir, layout.format(study=study, preset="*", run="*")))):
      file = os.path.relpath(path, output_dir).replace(os.sep, "/")
      if match := re.fullmatch(pattern, file):
        rows.append({"file": file, "study": study, "preset": match.groupdict().get("preset", ""), "run": match["run"],
                     "record": load(path)})
  return pandas.DataFrame(rows, columns=["file", "study", "preset", "run", "record"]).set_index("file")


def of(found: pandas.DataFrame, study: str, preset: str) -> Dict[str, Record]:
  """{run: record} of `study`'s rows at `preset` in a `table`."""
  rows = found[(found["study"] == study) & (found["preset"] == preset)]
  return dict(zip(rows["run"], rows["record"]))


def folders(output_dir: str) -> List[str]:
  """The subfolders of `output_dir` with runs/ or benchmarks/ of their own (another machine's records), sorted."""
  return sorted(f for f in os.listdir(output_dir) if any(os.path.isdir(os.path.join(output_dir, f, sub))
                                                         for sub in ("runs", "benchmarks")))


def mismatches(record: Mapping, spec: Any) -> List[str]:
  """The training settings of `record["config"]` (and `dataset`) differing from the `presets.Run` `spec`'s by the rule
  deciding a checkpoint's resumption (`config.stale_settings`: a setting the record predates counts as its default)."""
  saved, want = dict(record.get("config", {}), dataset=dataset(record)), spec.config.training_fingerprint()
  return [f"{k}={saved.get(k)!r} (run: {want[k]!r})" for k in config_lib.stale_settings(spec.config, saved)]


@dataclasses.dataclass
class StudyRecords:
  """A study's records (`experiments.render.series.load_all`): the preset shown, its {run: record}, {preset: {run:
  record}} of the others, the folder they were loaded from, the study's declaration (`presets.Study`) and its runs
  at the preset shown (`presets.Run`s, shared runs resolved, in the order the driver runs them)."""
  study: str
  preset: str
  runs: Dict[str, Record]
  other: Dict[str, Dict[str, Record]] = dataclasses.field(default_factory=dict)
  output_dir: str = ""
  declared: Any = None
  planned: Tuple[Any, ...] = ()


def devices(record: Mapping) -> int:
  """The devices the run trained on (`config.num_devices`)."""
  return int(record["config"]["num_devices"])


def cores(record: Mapping) -> int:
  """Cores the run's process could use: `environment.usable_cores` (affinity), else `cpu_count` (older records)."""
  return int(record["environment"].get("usable_cores") or record["environment"]["cpu_count"])


def host_cores(record: Mapping) -> int:
  """Cores of the machine the run ran on (`environment.cpu_count`, else `cores`), whatever its process could use."""
  return int(record["environment"].get("cpu_count") or cores(record))


def oversubscribed(record: Mapping) -> bool:
  """True when the run had more logical CPU devices than cores it could use (marked †)."""
  return record["environment"].get("device_kind") != "GPU" and devices(record) > cores(record)


def processor(cpu_model: Optional[str]) -> str:
  """A processor's name as tables show it: trademarks, the clock and a trailing "Processor" left out ("Intel(R)
  Xeon(R) Gold 6148 CPU @ 2.40GHz" -> "Intel Xeon Gold 6148"); "processor not recorded" for None or "unknown"."""
  if not cpu_model or cpu_model == "unknown":
    return f"processor {NOT_RECORDED}"
  short = re.sub(r"\((R|TM|tm)\)|(\s+CPU)?\s*@\s*[\d.]+\s*GHz|\s+Processor\s*$", " ", cpu_model)
  return " ".join(short.split()) or cpu_model


def instruction_set(record: Mapping) -> Optional[str]:
  """The record's instruction set ("AMX", "AVX2", ...: `common.measure.provenance`), None without cpu_flags."""
  return provenance.instruction_set(record["environment"].get("cpu_flags"))


def host(record: Mapping, usable: Optional[set] = None, isa: bool = True) -> str:
  """The machine a run ran on, "<processor>, <instruction set (`isa`)>[, machine <id>], <its cores> cores" (NO_ISA for
  a record made before records kept the processor's flags); with `usable` (cores runs of it could use) fewer than
  the machine's: "<processor>, ..., 5 of 16 cores" or "5–6 of 16"."""
  total, name = host_cores(record), processor(record["environment"].get("cpu_model"))
  name += f", {instruction_set(record) or NO_ISA}" if isa else ""
  # The machine itself where the record names it (`provenance.machine_id`; a record made before: its class alone).
  name += f", machine {record['environment']['machine_id'][:6]}" if record["environment"].get("machine_id") else ""
  low, high = min(usable or {total}), max(usable or {total})
  return f"{name}, {total} cores" if low == high == total else (
      f"{name}, {low}{'' if low == high else f'–{high}'} of {total} cores")


def code(record: Mapping) -> str:
  """The code a run ran: "commit <short hash>" ("+dirty" with uncommitted changes), or "commit not recorded"."""
  commit = record["environment"].get("commit") or "unknown"
  return f"commit {NOT_RECORDED}" if commit == "unknown" else (
      f"commit {commit[:7]}" + ("+dirty" if record["environment"].get("commit_dirty") else ""))


def machine_label(rs: Sequence[Mapping]) -> str:
  """The machine and commit of records, e.g. "AMD EPYC, AVX2, 2 cores, commit 452f604" (several joined by "; ";
  commits with one code digest, which differ only in results/, docs/ and *.md, named by the one the runs started
  from: the earliest `date_utc`): the one label every table, figure and headline row names its records by."""
  labels: Dict[str, Dict[str, Dict[str, Tuple]]] = {}  # host -> code digest (or commit) -> {commit: earliest start}
  usable: Dict[str, Tuple[Mapping, set]] = {}  # host -> (a record of it, the cores its runs could use)
  for r in rs:
    by = labels.setdefault(host(r), {}).setdefault(r["environment"].get("code_digest") or code(r), {})
    start = (r["environment"].get("date_utc") or "~", code(r))  # when its run started ("~": undated, after all)
    by[code(r)] = min(by.get(code(r), start), start)
    usable.setdefault(host(r), (r, set()))[1].add(cores(r))
  return "; ".join(f"{host(*usable[h])}, " + ", ".join(  # commits of one code digest are one code
      min(c.values())[1] + (f" (+{len(c) - 1} of the same code)" if len(c) > 1 else "")
      for c in sorted(by.values(), key=lambda c: min(c.values()))) for h, by in sorted(labels.items()))


def hardware(rs: Sequence[Mapping]) -> str:
  """`machine_label` with device kind and TensorFlow version ("...; CPU-logical devices, TF 2.21.0")."""
  env = [r["environment"] for r in rs]
  return (f"{machine_label(rs)}; {'/'.join(sorted({e.get('device_kind', '?') for e in env}))} devices, TF "
          f"{'/'.join(sorted({e.get('tensorflow', '?') for e in env}))}")


def comparable(a: Mapping, b: Mapping) -> bool:
  """True for one machine (`host`; instruction sets equal where both name theirs) and one code (digest, else `code`)."""
  da, db = a["environment"].get("code_digest"), b["environment"].get("code_digest")
  return host(a, isa=False) == host(b, isa=False) and len({instruction_set(a), instruction_set(b)} - {None}) < 2 and (
      da == db if da and db else code(a) == code(b))


def same_source(rs: Sequence[Mapping]) -> bool:
  """True when every record of `rs` is `comparable` with the first."""
  return all(comparable(rs[0], r) for r in rs[1:])


def noisy(summary: Mapping[str, Any]) -> List[str]:
  """A summary's configurations whose repeats' pretraining seconds differ by more than NOISE, from its spreads."""
  return [n for n, s in summary["pretrain_seconds"].items() if s["max"] > (1 + NOISE) * s["min"]]


def setting_of(summary: Mapping[str, Any]) -> Optional[str]:
  """A short label of a summary's setting, e.g. "2 x 1000 units, batch 1000, 4 epochs, 11,000 images"."""
  s = summary.get("setting") or {}
  return (f"{len(s['hidden_units'])} x {max(s['hidden_units'])} units, batch {s['batch_size']}, "
          f"{s['pretrain_epochs']} epochs, {s['train_examples']:,} images, {s.get('repeats', '?')} repeats"
          ) if "hidden_units" in s else None


def load_summaries(output_dir: str, benchmark: str) -> Dict[str, Record]:
  """{summary file name: summary} of a benchmark's summaries under <output_dir>/benchmarks/<benchmark>/."""
  folder = os.path.join(output_dir, "benchmarks", benchmark)
  return {f: load(os.path.join(folder, f)) for f in sorted(os.listdir(folder) if os.path.isdir(folder) else [])
          if f.startswith("summary") and f.endswith(".json")}


def records_of(folder: str, summary: Mapping[str, Any]) -> Dict[str, List[Optional[Record]]]:
  """{configuration: [record per repeat, None: missing]} of a benchmark summary in `folder` (<folder>/<dir>/<file>)."""
  return {name: [load(os.path.join(folder, *path.replace(os.sep, "/").split("/")[-2:])) for path in paths]
          for name, paths in summary.get("records", {}).items()}


def flat_records(folder: str, *summaries: Mapping[str, Any]) -> List[Optional[Record]]:
  """Every record of benchmark `summaries` (in `folder`, `records_of`), as one list."""
  return [r for s in summaries for rs in records_of(folder, s).values() for r in rs]


def ratio(a: Mapping, b: Mapping) -> Optional[float]:
  """a's pretraining seconds / b's (b's speedup over a), or None unless both come from one machine and code."""
  return a["pretrain_seconds"] / b["pretrain_seconds"] if same_source([a, b]) else None


def dataset(record: Mapping) -> str:
  """The --dataset a run trained on: its record's "dataset" name (records made before it: MNIST)."""
  return (record.get("dataset") or {}).get("name") or record.get("config", {}).get("dataset") or sources.DEFAULT


def dataset_label(name: str) -> str:
  """A --dataset as labels name it, e.g. "Fashion-MNIST"."""
  return DATASET_LABELS.get(name, name)


def datasets(rs: Sequence[Mapping]) -> str:
  """The datasets of records as labels name them, MNIST first, e.g. "MNIST, Fashion-MNIST"."""
  return ", ".join(map(dataset_label, sorted({dataset(r) for r in rs}, key=lambda d: (d != sources.DEFAULT, d))))


def layer_epoch_seconds(record: Mapping) -> List[float]:
  """Median seconds of one pretraining epoch of each layer, bottom first."""
  return [statistics.median(e["seconds"] for e in layer["epochs"]) for layer in record["layers"]]


def accuracy(record: Mapping, key: str = "test_accuracy") -> Optional[float]:
  """The finetuned `key` ("test_accuracy"/"validation_accuracy", the kept epoch's) in [0, 1]; None if not finetuned."""
  return (record.get("finetune") or {}).get(key)


def has_heldout_curves(record: Mapping) -> bool:
  """True if every epoch of every layer has its held-out reconstruction loss (--heldout_every_epoch)."""
  return all("heldout_loss" in e and "elapsed_seconds" in e for layer in record["layers"] for e in layer["epochs"])


def loss_curves(record: Mapping, key: str = "loss") -> List[List[Tuple[float, float]]]:
  """Per layer, [(seconds since pretraining began, `key`: "loss", the epoch's mean, or "heldout_loss")] per epoch."""
  return [[(e["elapsed_seconds"], e[key]) for e in layer["epochs"]] for layer in record["layers"]]


def time_to_loss(curves: Sequence[Sequence[Tuple[float, float]]],
                 targets: Sequence[float]) -> Tuple[Optional[float], List[Optional[float]]]:
  """(seconds until every layer's loss reached its target, [per layer, the seconds its loss first did]); None: never."""
  per_layer = [next((t for t, loss in curve if loss <= target), None) for curve, target in zip(curves, targets)]
  return None if None in per_layer else max(per_layer, default=0.0), per_layer
