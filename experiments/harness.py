"""One harness for every benchmark (a `presets.Benchmark`): its command line (`Setting`, `main`) -> named
configurations (its `runs`) run through `experiments.driver` alternately, repeat after repeat (rotated) -> a summary
of their records (setting, command, provenance of one machine and code, load averages, spreads, noisy configurations,
measures). What several benchmarks measure alike lives here (`spread`, `ratio_spread`, `flops`, `phases`, ...)."""

import dataclasses
import json
import os
import statistics
import sys
import time
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence, Tuple

from absl import app, flags

from common.measure import cost
from common.measure import provenance as provenance_lib
from common.settings import processor_defaults, programs
from experiments import driver, presets, records

Records = Dict[str, List[dict]]  # {configuration: [record of repeat 0, 1, ...]}
PROVENANCE = ("commit", "commit_dirty", "code_digest", "cpu_model", "cpu_flags", "usable_cores", "machine_id")
PER_CONFIGURATION = ("kernels", "thread_pool", "precision")
# The shared flags, {flag: (default, help)} (a benchmark's `defaults` override the defaults), and where records and
# program logs go by default (<dir>/<benchmark name>, relative to the repository root).
SHARED_FLAGS = {
    "hidden_units": ("1000,1000,1000,1000", "Hidden units."), "batch_size": (1000, "Global batch of every run."),
    "pretrain_epochs": (2, "Pretraining epochs E of every run."), "train_examples": (22_000, "Training images."),
    "num_devices": (2, "Devices of the parallel configurations."),
    "repeats": (3, "Runs of each configuration (alternated).")}
OUTPUT_DIR, WORK_DIR = os.path.join("results", "benchmarks"), os.path.join("scratch", "benchmarks")
LOSS_TOLERANCE = 0.01  # a held-out loss counts as reached at its reference's final one times 1 + this


@dataclasses.dataclass(frozen=True)
class Setting:
  """A benchmark's command line: the runs' shared flags, the parallel configurations' devices, the repeats, options."""
  hidden_units: Tuple[int, ...]
  batch_size: int
  pretrain_epochs: int
  train_examples: int
  num_devices: int
  repeats: int
  options: Mapping[str, Any] = dataclasses.field(default_factory=dict)

  def spec(self, name: str, program: programs.Program, devices: int, settings: Mapping[str, Any] = presets.NONE,
           launcher: Sequence[str] = (), threads: int = 1) -> presets.Run:
    """A configuration: `program` at this setting's sizes on `devices` devices, pretraining only, `settings` on top."""
    return presets.spec(name, program, self.hidden_units, self.pretrain_epochs, self.batch_size, devices,
                        self.train_examples, settings=settings, launcher=launcher, threads=threads)


def machine_class() -> str:
  """This processor's instruction-set class as a folder name ("avx512_bf16"), so each class's records sit apart."""
  return (processor_defaults.this_class() or "unknown").lower().replace("-", "").replace(" ", "_")


def summary_file(benchmark: presets.Benchmark, setting: Setting) -> str:
  """The file name of a setting's summary: summary_<folder>.json, or summary.json for the fixed folder "records"."""
  return "summary.json" if (folder := benchmark.folder(setting)) == "records" else f"summary_{folder}.json"


def spread(values: Sequence[float]) -> Dict[str, object]:
  """{"min", "median", "max", "values"} of `values` (seconds, ratios, ...)."""
  return {"min": min(values), "median": statistics.median(values), "max": max(values), "values": list(values)}


def ratio_spread(found: Records, numerator: str, denominator: str) -> Dict[str, object]:
  """Spread over repeats of numerator seconds / denominator seconds (runs of the same repeat)."""
  return spread([a["pretrain_seconds"] / b["pretrain_seconds"] for a, b in zip(found[numerator], found[denominator])])


def speedups(found: Records, base: str) -> Dict[str, Dict[str, object]]:
  """{configuration: `ratio_spread` of `base` over it} for every configuration but `base`."""
  return {name: ratio_spread(found, base, name) for name in found if name != base}


def cores_busy(rs: Sequence[Mapping[str, Any]]) -> Optional[Dict[str, object]]:
  """Spread of process CPU seconds / wall seconds while pretraining; None for records older than the field."""
  return spread([r["pretrain_cpu_seconds"] / r["pretrain_seconds"] for r in rs]) if all(
      "pretrain_cpu_seconds" in r for r in rs) else None


def seconds_to_loss_of(record: Mapping[str, Any], reference: Mapping[str, Any]) -> Optional[float]:
  """Seconds until every layer of `record` reached `reference`'s final held-out loss (+ LOSS_TOLERANCE); None if one
  never did or `record` has no held-out loss after every epoch (--heldout_every_epoch)."""
  if not records.has_heldout_curves(record):
    return None
  targets = [layer["epochs"][-1]["heldout_loss"] * (1 + LOSS_TOLERANCE) for layer in reference["layers"]]
  return records.time_to_loss(records.loss_curves(record, "heldout_loss"), targets)[0]


def flops(record: dict) -> float:
  """FLOPs of a record's pretraining: every layer-epoch it trained at its schedule's cost (`common.measure.cost`)."""
  c = record["config"]
  per_epoch = cost.pipeline_layer_epoch_flops if programs.get(record["strategy"]).pipelined else cost.layer_epoch_flops
  examples = (c["train_examples"] // c["batch_size"]) * c["batch_size"]
  return sum(len(layer["epochs"]) * per_epoch(c["hidden_units"], i + 1, examples)
             for i, layer in enumerate(record["layers"]))


def one_thread(ways: Sequence[str], known: Sequence[str], precisions: Sequence[str]):
  """TensorFlow on 1 intra-op and 1 inter-op thread (unless it has started already: tests), for the one-core helpers
  (`matmul_rates`, `update_floor`); returns the tensorflow module. ValueError: a way not in `known` or a precision
  not in PRECISIONS, or none."""
  if set(ways) - set(known) or not ways:
    raise ValueError(f"ways {list(ways)}: choose among {', '.join(known)}")
  if set(precisions) - set(programs.PRECISIONS) or not precisions:
    raise ValueError(f"precisions {list(precisions)}: choose among {', '.join(programs.PRECISIONS)}")
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  try:
    tf.config.threading.set_intra_op_parallelism_threads(1)
    tf.config.threading.set_inter_op_parallelism_threads(1)
  except RuntimeError:  # TensorFlow already initialized in this process (tests): its threads stay as they are
    pass
  return tf


def _one_core(module: str, s: Setting, *arguments: str) -> Dict:
  """The JSON that experiments/benchmarks/<module>.py prints, run in its own process (one thread) with `arguments`,
  the setting's hidden units and --precisions (else both); RuntimeError: it failed."""
  done = driver.call([sys.executable, "-m", f"experiments.benchmarks.{module}", *arguments,
                      f"--hidden_units={','.join(map(str, s.hidden_units))}",
                      *([f"--precisions={','.join(s.options['precisions'])}"] if "precisions" in s.options else [])],
                     capture=True)
  if done.returncode:
    raise RuntimeError(f"{module} failed (exit status {done.returncode}):\n{done.stderr[-3000:]}")
  return json.loads(done.stdout.strip().splitlines()[-1])


def matmul_rates(s: Setting) -> Dict:
  """{precision: {"gflops_per_second", "ways", "shapes"}} at the step's shapes, one core
  (`experiments.benchmarks.matmul_rates`); RuntimeError: failed."""
  return _one_core("matmul_rates", s, f"--batch_size={s.batch_size}")


def two_stream_rates(s: Setting, streams: int = 2) -> Dict:
  """{precision: {"threads", "processes", "gflops_per_second"}}: the step's products on `streams` one-thread streams at
  once (`experiments.benchmarks.matmul_rates`): as threads of one process, and as `streams` processes of one thread
  started together (their rates summed); GFLOP/s each, and the higher of the two, the limit as the machine runs.
  RuntimeError: a run failed."""
  threads = _one_core("matmul_rates", s, f"--batch_size={s.batch_size}", f"--streams={streams}")
  command = [sys.executable, "-m", "experiments.benchmarks.matmul_rates", f"--batch_size={s.batch_size}",
             f"--hidden_units={','.join(map(str, s.hidden_units))}",
             *([f"--precisions={','.join(s.options['precisions'])}"] if "precisions" in s.options else [])]
  alone = driver.start_all([command] * streams)  # started together, each one thread
  out = {}
  for p, together in threads.items():
    summed = sum(r[p]["gflops_per_second"] for r in alone)
    out[p] = {"threads": together["gflops_per_second"], "processes": summed,
              "gflops_per_second": max(together["gflops_per_second"], summed)}
  return out


def update_floor(s: Setting) -> Dict:
  """{precision: {"seconds_per_step", "ways", "layers"}}: one core's passes over the kernels per step of every layer
  (`experiments.benchmarks.update_floor`); RuntimeError: failed."""
  return _one_core("update_floor", s)


def floor_seconds(record: dict, floor: Dict) -> float:
  """One core's seconds of a record's pretraining in the passes over the kernels: per layer its steps (epochs x
  steps per epoch) times its seconds per step in `floor` (one precision's `update_floor`)."""
  c = record["config"]
  steps = c["train_examples"] // c["batch_size"]
  return sum(len(layer["epochs"]) * steps * measured["seconds"]
             for layer, measured in zip(record["layers"], floor["layers"]))


def phases(record: dict) -> dict:
  """Where a model_parallel run's seconds went (steps, copies, idle, busy, overhead) and its concurrency."""
  steps = record["schedule"]["steps"]
  both = [s for s in steps if len(s["active_layers"]) > 1]
  return {
      "pretrain_seconds": record["pretrain_seconds"], "step_wall_seconds": record["timing"]["pretrain_train"],
      "weight_copy_seconds": record["timing"]["weight_copy"], "idle_device_seconds": record["timing"].get("idle"),
      "busy_seconds_per_device": {d: sum(s["busy_seconds"][d] for s in steps) for d in steps[0]["busy_seconds"]},
      "overhead_seconds": sum(s["wall_seconds"] - max(s["busy_seconds"].values()) for s in steps),
      "concurrency_in_full_steps": (sum(sum(s["busy_seconds"].values()) for s in both) /
                                    sum(s["wall_seconds"] for s in both)) if both else None,
      "layer_epoch_seconds": records.layer_epoch_seconds(record), "devices": record["environment"]["devices"]}


def plan(benchmark: presets.Benchmark, setting: Setting, output_dir: str, work_dir: str) -> List[driver.Job]:
  """The runs in alternation order (repeat r rotates the configurations by r); logs and checkpoints per setting."""
  configurations = benchmark.runs(setting)
  folder, n = benchmark.folder(setting), len(configurations)
  return [driver.job(benchmark.name, r * n + k + 1, setting.repeats * n, c,
                     os.path.join(output_dir, folder, f"{c.name}_r{r}.json"), os.path.join(work_dir, folder))
          for r in range(setting.repeats) for k in range(n) for c in [configurations[(k + r) % n]]]


def provenance(found: Records) -> Dict[str, Any]:
  """The records' common provenance (None where they predate a field; dirty if any was; "commits": every commit, one
  code digest allowing several, differing only in results/, docs/ and *.md) and each configuration's kernels, thread
  pool and precision; ValueError when they disagree on machine or code."""
  envs, out = [r["environment"] for rs in found.values() for r in rs], {}
  same_code = len({e.get("code_digest") for e in envs}) == 1 and envs[0].get("code_digest")
  out["commits"] = sorted({str(e.get("commit")) for e in envs})
  for field in PROVENANCE:
    values = {tuple(v) if isinstance(v, list) else v for v in (e.get(field) for e in envs)}
    if len(values) > 1 and field != "commit_dirty" and not (field == "commit" and same_code):
      raise ValueError(f"the records disagree on {field} ({', '.join(sorted(map(str, values)))}): not one machine "
                       "and one code; summarize each apart")
    value = max(values, key=bool)
    out[field] = list(value) if isinstance(value, tuple) else value
  out["configurations"] = {name: {f: rs[0]["environment"].get(f) for f in PER_CONFIGURATION}
                           for name, rs in found.items()}
  return out


def summarize(benchmark: presets.Benchmark, setting: Setting, jobs: Sequence[driver.Job], command: str,
              machine_load: Optional[Mapping[str, Any]] = None) -> Dict[str, Any]:
  """The summary of `jobs`' records in alternation order, noisy ones flagged; ValueError: several machines or codes."""
  configurations, ordered = benchmark.runs(setting), sorted(jobs, key=lambda j: int(j.run_name.rsplit("_r", 1)[1]))
  found: Records = {c.name: [records.load(j.record) for j in ordered if j.spec.name == c.name] for c in configurations}
  first = next(iter(found.values()))[0]["environment"]
  seconds = {name: spread([r["pretrain_seconds"] for r in rs]) for name, rs in found.items()}
  return {
      "benchmark": benchmark.name, "command": command,
      "setting": {**{k: v for k, v in dataclasses.asdict(setting).items() if k != "options"}, **setting.options,
                  "device_kind": first.get("device_kind"), "cpu_count": first.get("cpu_count")},
      "provenance": provenance(found),
      "configurations": {c.name: [*c.launcher, programs.get(c.program).module, *c.arguments()] for c in configurations},
      "order": [j.run_name for j in jobs], "machine_load": machine_load,
      "pretrain_seconds": seconds, "noisy": records.noisy({"pretrain_seconds": seconds}),
      **benchmark.summarize(setting, found),
      "records": {name: [j.record for j in ordered if j.spec.name == name] for name in found}}


# What a benchmark's existing record must share with this process to be reused: one machine and one code.
SAME_SOURCE = ("cpu_model", "cpu_flags", "usable_cores", "machine_id", "code_digest")


def foreign_record(jobs: Sequence[driver.Job], here: Mapping[str, Any]) -> Optional[str]:
  """The first existing record of `jobs` made on another machine or code than `here` (`provenance.fields()` of this
  process), as "<path> (<field>: <its value>, here <ours>)", comparing SAME_SOURCE (a field either lacks is not
  compared); None when every existing record is this machine's and code's."""
  for j in jobs:
    env = (records.load(j.record) or {}).get("environment") or {}
    for field in SAME_SOURCE:
      theirs, ours = env.get(field), here.get(field)
      if theirs is not None and ours is not None and theirs != ours:
        return f"{j.record} ({field}: {theirs}, here {ours})"
  return None


def run(benchmark: presets.Benchmark, setting: Setting, output_dir: str, work_dir: str, command: str,
        out: Callable[[str], None] = print, modules: Optional[Mapping[str, str]] = None,
        here: Optional[Mapping[str, Any]] = None) -> Tuple[str, Dict[str, Any]]:
  """Runs the missing records, writes the summary unless nothing ran and one exists; returns (path, summary).
  `modules` replaces programs' modules and `here` this process's provenance (tests); driver.RunFailedError, or
  ValueError (several machines or codes; before any run, an existing record of another machine or code)."""
  jobs, start, load = plan(benchmark, setting, output_dir, work_dir), time.perf_counter(), os.getloadavg()
  if other := foreign_record(jobs, provenance_lib.fields() if here is None else here):
    raise ValueError(f"{other} was made on another machine or code than this one: its runs and this one's would "
                     "not be one measurement; pass --output_dir=DIR to measure this machine apart, or delete "
                     f"{os.path.join(output_dir, benchmark.folder(setting))} to measure it again")
  ran = driver.run(jobs, f"benchmark {benchmark.name}", os.path.join(output_dir, benchmark.folder(setting),
                                                                      "driver_log.jsonl"), modules=modules, out=out)
  # How busy the machine was while the runs ran: the wall seconds and the load averages before and after.
  machine_load = {"wall_seconds": time.perf_counter() - start, "load_average_start": list(load),
                  "load_average_end": list(os.getloadavg())}
  summary = summarize(benchmark, setting, jobs, command, machine_load if ran else None)
  path = os.path.join(output_dir, summary_file(benchmark, setting))
  if ran or not os.path.exists(path):
    with open(path, "w") as f:
      json.dump(summary, f, indent=1)
  else:
    out(f"[benchmark {benchmark.name}] every record exists; {path} left as it was")
  for measure, label in ((m, l) for m, l in benchmark.columns if m in summary):
    out(f"{label}: median {summary[measure]['median']:.3f} (min {summary[measure]['min']:.3f}, "
        f"max {summary[measure]['max']:.3f})")
  return path, summary


def defaults(benchmark: presets.Benchmark) -> Dict[str, Any]:
  """Every flag of `benchmark` with its default: the shared flags (its `defaults` over SHARED_FLAGS'), its options."""
  return {**{name: d for name, (d, _) in {**SHARED_FLAGS, **benchmark.options}.items()}, **benchmark.defaults}


def _parsed(name: str, default: Any, value: Any) -> Any:
  """`value` as flag `name` holds it: a list of str (from a list or "a,b") for a list flag, else the default's type."""
  if isinstance(default, (list, tuple)) or name == "hidden_units":
    return value.split(",") if isinstance(value, str) else [str(v) for v in value]
  return type(default)(value)


def setting(benchmark: presets.Benchmark, overrides: Mapping[str, Any]) -> Setting:
  """The Setting of `benchmark`'s command line with `overrides` ({flag: value}, as the flag holds it or as the
  command line spells it: lists as lists or "a,b") over its defaults; ValueError for a flag it does not have."""
  d = defaults(benchmark)
  if unknown := sorted(set(overrides) - set(d)):
    raise ValueError(f"benchmark {benchmark.name} has no flag {', '.join(unknown)}; its flags: {', '.join(d)}")
  v = {name: _parsed(name, d[name], value) for name, value in {**d, **overrides}.items()}
  return Setting(tuple(int(u) for u in v.pop("hidden_units")),
                 **{name: v.pop(name) for name in SHARED_FLAGS if name != "hidden_units"}, options=v)


def main(benchmark: presets.Benchmark) -> None:
  """The command line of a benchmark module: the shared flags (with the benchmark's defaults) and its options."""
  helps = {name: text for name, (_, text) in {**SHARED_FLAGS, **benchmark.options}.items()}
  define = {list: flags.DEFINE_list, tuple: flags.DEFINE_list, str: flags.DEFINE_string, float: flags.DEFINE_float}
  holders = {name: define.get(list if name == "hidden_units" else type(default), flags.DEFINE_integer)(
      name, list(default) if isinstance(default, tuple) else default, helps[name])
             for name, default in defaults(benchmark).items()}
  output = flags.DEFINE_string("output_dir", os.path.join(OUTPUT_DIR, benchmark.name), "Where records and summary go.")
  work = flags.DEFINE_string("work_dir", os.path.join(WORK_DIR, benchmark.name), "Program logs.")
  for holder in (*holders.values(), output, work):
    flags.FLAGS.register_key_flag_for_module(sys.argv[0], flags.FLAGS[holder.name])  # shown by --help

  def _main(argv):
    if len(argv) > 1:
      raise app.UsageError(f"Unexpected positional arguments: {' '.join(argv[1:])}")
    chosen = setting(benchmark, {name: holder.value for name, holder in holders.items()})
    try:
      path, _ = run(benchmark, chosen, output.value, work.value,
                    " ".join(["python", "-m", f"experiments.benchmarks.{benchmark.name}", *sys.argv[1:]]))
    except (driver.RunFailedError, ValueError) as e:
      sys.exit(f"error: {e}")  # status 1, the message on stderr
    print(f"Summary: {path}")

  app.run(_main)
