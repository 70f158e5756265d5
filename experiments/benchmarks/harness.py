"""One harness for every benchmark: named configurations (program + flags) timed side by side.

A benchmark is a `Benchmark`: a function from the `Setting` (the command line) to its named
configurations (`presets.RunSpec`s), and a function that summarizes their records. The harness runs
the configurations alternately, repeat after repeat (the order rotates every repeat, so drifts of a shared
machine hit them alike), each as its own training program through `experiments.driver.run` (a record
that exists is not run again: rerunning a finished benchmark only rewrites a missing summary); then it
writes a summary record: the setting, the command, how busy the rest of the machine was, the spread
(min/median/max over repeats) of every configuration's pretraining seconds, and the benchmark's own
measures.

Records go to <output_dir>/<folder>/<configuration>_r<repeat>.json, the summary to
<output_dir>/<summary file>. `main(benchmark)` is the command line of every benchmark module.
"""

import dataclasses
import json
import os
import resource
import statistics
import sys
import time
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence, Tuple

from absl import app
from absl import flags

from common import programs
from experiments import budget
from experiments import driver
from experiments import presets
from experiments import records


@dataclasses.dataclass(frozen=True)
class Setting:
  """What a benchmark's command line asks for.

  Attributes:
    hidden_units, batch_size, pretrain_epochs, train_examples: the shared training flags of every run.
    num_devices: devices of the parallel configurations.
    repeats: runs of each configuration.
    options: the benchmark's own options ({name: value}, see `Benchmark.options`).
  """
  hidden_units: Tuple[int, ...]
  batch_size: int
  pretrain_epochs: int
  train_examples: int
  num_devices: int
  repeats: int
  options: Mapping[str, Any] = dataclasses.field(default_factory=dict)

  def run(self, name: str, program: programs.Program, devices: int, extra: Sequence[str] = (),
          launcher: Sequence[str] = (), threads: int = 1) -> presets.RunSpec:
    """A configuration: `program` with this setting's flags on `devices` devices, pretraining only."""
    return presets.run(name, program, self.hidden_units, self.pretrain_epochs, self.batch_size, devices,
                       self.train_examples, extra=extra, launcher=launcher, threads=threads)


Records = Dict[str, List[dict]]  # {configuration: [record of repeat 0, 1, ...]}


@dataclasses.dataclass(frozen=True)
class Benchmark:
  """A benchmark: named configurations and a summary of their records.

  Attributes:
    name: the module name; records default to results/benchmarks/<name>/.
    configurations: Setting -> the configurations (RunSpec.name is the configuration's name).
    summarize: (Setting, Records) -> {measure: value}; spreads via `spread`.
    defaults: flag defaults of the shared flags, e.g. {"batch_size": 1000}.
    options: the benchmark's own flags, {name: (default, help)} (a float, an int, or a list of strings);
      their values are in Setting.options.
    folder: Setting -> the records' folder under the output directory.
    summary_file: Setting -> the summary's file name under the output directory.
    columns: (measure, label) of the spreads results/README.md shows, besides every configuration's seconds.
  """
  name: str
  configurations: Callable[[Setting], List[presets.RunSpec]]
  summarize: Callable[[Setting, Records], Dict[str, Any]]
  defaults: Mapping[str, Any] = dataclasses.field(default_factory=dict)
  options: Mapping[str, Tuple[Any, str]] = dataclasses.field(default_factory=dict)
  folder: Callable[[Setting], str] = lambda s: f"b{s.batch_size}"
  summary_file: Callable[[Setting], str] = lambda s: f"summary_b{s.batch_size}.json"
  columns: Sequence[Tuple[str, str]] = ()


def spread(values: Sequence[float]) -> Dict[str, object]:
  """{"min", "median", "max", "values"} of `values` (seconds, ratios, ...)."""
  return {"min": min(values), "median": statistics.median(values), "max": max(values), "values": list(values)}


def seconds_per_layer_epoch(record: Mapping[str, Any]) -> float:
  """Steady-state pretraining seconds of a record divided by its layer-epochs."""
  return record["pretrain_seconds"] / sum(len(layer["epochs"]) for layer in record["layers"])


def ratio_spread(records_: Records, numerator: str, denominator: str) -> Dict[str, object]:
  """Spread over repeats of numerator seconds / denominator seconds (runs of the same repeat)."""
  return spread([a["pretrain_seconds"] / b["pretrain_seconds"] for a, b in zip(records_[numerator],
                                                                               records_[denominator])])


def _busy_cpu_seconds() -> float:
  """CPU seconds the whole machine has spent busy since boot (/proc/stat: all but idle and iowait)."""
  with open("/proc/stat") as f:
    fields = [float(x) for x in f.readline().split()[1:]]
  return (sum(fields) - fields[3] - fields[4]) / os.sysconf("SC_CLK_TCK")


def _own_cpu_seconds() -> float:
  """CPU seconds of this process and its finished children."""
  own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
  return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


class MachineLoad:
  """Measures how busy the rest of the machine was while a benchmark ran (others' CPU use skews timings).

  Usage: load = MachineLoad(); ...benchmark...; load.report() -> {"wall_seconds", "other_processes_cores",
  "load_average_start", "load_average_end"}, where other_processes_cores is the CPU time used by every
  process but this one and its children, divided by the wall time (0: the machine was ours alone).
  """

  def __init__(self):
    self._start = (time.perf_counter(), _busy_cpu_seconds(), _own_cpu_seconds(), os.getloadavg())

  def report(self) -> Dict[str, object]:
    wall0, busy0, own0, load0 = self._start
    wall = time.perf_counter() - wall0
    others = (_busy_cpu_seconds() - busy0) - (_own_cpu_seconds() - own0)
    return {"wall_seconds": wall, "other_processes_cores": max(others, 0.0) / wall,
            "load_average_start": list(load0), "load_average_end": list(os.getloadavg())}


def plan(benchmark: Benchmark, setting: Setting, output_dir: str, work_dir: str,
         rates: Optional[budget.Rates] = None) -> List[driver.Job]:
  """The runs in alternation order: repeat r runs the configurations rotated by r (estimates from `rates`,
  default `budget.fit(output_dir)`)."""
  rates = rates or budget.fit(output_dir)
  configurations = benchmark.configurations(setting)
  folder = os.path.join(output_dir, benchmark.folder(setting))
  jobs = []
  for r in range(setting.repeats):
    for k in range(len(configurations)):
      c = configurations[(k + r) % len(configurations)]
      record = os.path.join(folder, f"{c.name}_r{r}.json")
      # Logs and checkpoints per setting: another batch size must not resume this one's checkpoints.
      jobs.append(driver.job(benchmark.name, len(jobs) + 1, setting.repeats * len(configurations), c, record,
                             os.path.join(work_dir, benchmark.folder(setting)), rates))
  return jobs


def run(benchmark: Benchmark, setting: Setting, output_dir: str, work_dir: str, command: str,
        out: Callable[[str], None] = print, modules: Optional[Mapping[str, str]] = None) -> Tuple[str, Dict[str, Any]]:
  """Runs the benchmark's missing records, then writes its summary unless nothing ran and one exists.

  Args:
    benchmark, setting: what to run.
    output_dir, work_dir: where records and summary go; where program logs go.
    command: the command line, stored in the summary.
    out: where progress lines go.
    modules: {program: module} replacing `<program>.train` (tests use stand-ins).

  Returns:
    (summary path, summary).

  Raises:
    driver.RunFailedError: a run failed or a stored record does not match its configuration.
    ValueError: the records come from several machines or versions of the code.
  """
  jobs = plan(benchmark, setting, output_dir, work_dir)
  load = MachineLoad()
  ran = driver.run(jobs, f"benchmark {benchmark.name}", os.path.join(output_dir, benchmark.folder(setting),
                                                                      "driver_log.jsonl"), modules=modules, out=out)
  summary = summarize(benchmark, setting, jobs, command, load.report() if ran else None)
  path = os.path.join(output_dir, benchmark.summary_file(setting))
  if ran or not os.path.exists(path):
    with open(path, "w") as f:
      json.dump(summary, f, indent=1)
  else:
    out(f"[benchmark {benchmark.name}] every record exists; {path} left as it was")
  for measure, label in ((m, l) for m, l in benchmark.columns if m in summary):
    s = summary[measure]
    out(f"{label}: median {s['median']:.3f} (min {s['min']:.3f}, max {s['max']:.3f})")
  return path, summary


PROVENANCE = ("commit", "commit_dirty", "code_digest", "cpu_model", "usable_cores")
PER_CONFIGURATION = ("kernels", "thread_pool", "precision")


def provenance(found: Records) -> Dict[str, Any]:
  """The records' common provenance (`common.provenance.fields`, None where records predate a field), and per
  configuration its kernels, thread pool and precision.

  Raises:
    ValueError: the records disagree on the machine (processor, usable cores) or the code (commit, digest).
  """
  envs = [r["environment"] for rs in found.values() for r in rs]
  out = {}
  for field in PROVENANCE:
    values = {e.get(field) for e in envs}
    if len(values) > 1 and field != "commit_dirty":
      raise ValueError(f"the records disagree on {field} ({', '.join(sorted(map(str, values)))}): "
                       "not one machine and one code; summarize each apart")
    out[field] = max(values, key=bool) if field == "commit_dirty" else values.pop()
  out["configurations"] = {name: {f: rs[0]["environment"].get(f) for f in PER_CONFIGURATION}
                           for name, rs in found.items()}
  return out


def summarize(benchmark: Benchmark, setting: Setting, jobs: Sequence[driver.Job], command: str,
              machine_load: Optional[Mapping[str, Any]] = None) -> Dict[str, Any]:
  """The summary of a benchmark's records (`jobs`, in alternation order): setting, command, provenance, machine
  load, every configuration's spread of pretraining seconds, the benchmark's measures, the records' paths.

  Raises:
    ValueError: the records come from several machines or versions of the code (`provenance`).
  """
  found: Records = {c.name: [] for c in benchmark.configurations(setting)}
  for j in sorted(jobs, key=lambda j: int(j.run_name.rsplit("_r", 1)[1])):  # repeat 0, 1, ...
    found[j.run.name].append(records.load(j.record))
  first = next(iter(found.values()))[0]["environment"]
  return {
      "benchmark": benchmark.name, "command": command,
      "setting": {**{k: v for k, v in dataclasses.asdict(setting).items() if k != "options"}, **setting.options,
                  "device_kind": first.get("device_kind"), "cpu_count": first.get("cpu_count")},
      "provenance": provenance(found),
      "configurations": {c.name: [*c.launcher, programs.get(c.program).module, *c.arguments()]
                         for c in benchmark.configurations(setting)},
      "order": [j.run_name for j in jobs],
      "machine_load": machine_load,
      "pretrain_seconds": {name: spread([r["pretrain_seconds"] for r in rs]) for name, rs in found.items()},
      **benchmark.summarize(setting, found),
      "records": {name: [j.record for j in sorted((j for j in jobs if j.run.name == name),
                                                  key=lambda j: int(j.run_name.rsplit("_r", 1)[1]))] for name in found},
  }


def main(benchmark: Benchmark) -> None:
  """The command line of a benchmark module: defines the shared flags (with the benchmark's defaults) and
  its options, then runs it (`run`)."""
  d = {"hidden_units": "1000,1000", "batch_size": 1000, "pretrain_epochs": 4, "train_examples": 11_000,
       "num_devices": 2, "repeats": 3, **benchmark.defaults}
  hidden = flags.DEFINE_list("hidden_units", str(d["hidden_units"]).split(","), "Hidden units per layer.")
  batch = flags.DEFINE_integer("batch_size", d["batch_size"], "Global batch of every run.")
  epochs = flags.DEFINE_integer("pretrain_epochs", d["pretrain_epochs"], "Pretraining epochs E of every run.")
  examples = flags.DEFINE_integer("train_examples", d["train_examples"], "Training images.")
  devices = flags.DEFINE_integer("num_devices", d["num_devices"], "Devices of the parallel configurations.")
  repeats = flags.DEFINE_integer("repeats", d["repeats"], "Runs of each configuration (alternated).")
  output = flags.DEFINE_string("output_dir", f"results/benchmarks/{benchmark.name}", "Where records and summary go.")
  work = flags.DEFINE_string("work_dir", f"scratch/benchmarks/{benchmark.name}", "Program logs.")
  options = {}
  for name, (default, help_text) in benchmark.options.items():
    if isinstance(default, (list, tuple)):
      options[name] = flags.DEFINE_list(name, [str(v) for v in default], help_text)
      continue
    define = flags.DEFINE_float if isinstance(default, float) else flags.DEFINE_integer
    options[name] = define(name, default, help_text)
  for holder in (hidden, batch, epochs, examples, devices, repeats, output, work, *options.values()):
    flags.FLAGS.register_key_flag_for_module(sys.argv[0], flags.FLAGS[holder.name])  # shown by --help

  def _main(argv):
    if len(argv) > 1:
      raise app.UsageError(f"Unexpected positional arguments: {' '.join(argv[1:])}")
    setting = Setting(tuple(int(u) for u in hidden.value), batch.value, epochs.value, examples.value, devices.value,
                      repeats.value, {name: holder.value for name, holder in options.items()})
    command = f"python -m experiments.benchmarks.{benchmark.name} " + " ".join(sys.argv[1:])
    try:
      path, _ = run(benchmark, setting, output.value, work.value, command.strip())
    except (driver.RunFailedError, ValueError) as e:
      print(f"error: {e}", file=sys.stderr)
      sys.exit(1)
    print(f"Summary: {path}")

  app.run(_main)


def load_summaries(output_dir: str, benchmark: Benchmark) -> Dict[str, Dict[str, Any]]:
  """{summary file name: summary} of a benchmark's summaries under <output_dir>/benchmarks/<name>/."""
  folder = os.path.join(output_dir, "benchmarks", benchmark.name)
  if not os.path.isdir(folder):
    return {}
  out = {}
  for name in sorted(os.listdir(folder)):
    if name.startswith("summary") and name.endswith(".json"):
      out[name] = records.load(os.path.join(folder, name))
  return out


def records_of(folder: str, summary: Mapping[str, Any]) -> Dict[str, List[dict]]:
  """{configuration: [record of each repeat]} of a summary in `folder` (its records' paths, written relative to
  the directory the benchmark ran in, taken as <folder>/<records folder>/<file>)."""
  return {name: [records.load(os.path.join(folder, *path.replace(os.sep, "/").split("/")[-2:])) for path in paths]
          for name, paths in summary["records"].items()}


def setting_of(summary: Mapping[str, Any]) -> Optional[str]:
  """A short label of a summary's setting, e.g. "2 x 1000 units, batch 1000, 4 epochs, 11,000 images"."""
  s = summary.get("setting") or {}
  if "hidden_units" not in s:
    return None
  return (f"{len(s['hidden_units'])} x {max(s['hidden_units'])} units, batch {s['batch_size']}, "
          f"{s['pretrain_epochs']} epochs, {s['train_examples']:,} images, {s.get('repeats', '?')} repeats")
