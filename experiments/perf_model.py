"""A performance model of layer-wise pretraining: predicts pretraining seconds for G = 1..8 devices.

Inputs are quantities measured at small G (1 and 2 devices) and the schedule of each strategy (the
report's section on the schedules; the model-parallel one is `common.layerwise_schedule.Schedule`):

  * t_k: seconds of one epoch of layer k alone on one device (one core): the median epoch of a G = 1
    run (greedy, or model_parallel/data_parallel with one device). Layer k's epoch includes the
    forward passes of the frozen layers below it.
  * The machine: C cores. Concurrent work is shared fairly over the cores (processor sharing): with n
    busy devices each progresses at min(1, C/n) of a core, times 1/rho when n >= 2, where rho >= 1 is
    the slowdown of running side by side (memory bandwidth, caches). On a 2-core machine, G > 2
    devices are oversubscribed: they cannot run faster than 2 devices, only share the cores.
  * model_parallel: the steps of `Schedule(H, G, E)` (groups of G layers; in a group of m layers, steps
    s = 0..E+m-2, layer j of the group active from step j on: pipeline fill). A step lasts the
    processor-sharing makespan of its active layers' epochs, plus the weight copies at its end: kappa
    seconds per copied parameter, for every copy of a layer into the frozen copies of the layers above
    it in its group. Groups run one after another. sync_layerwise: the same steps on one core, the
    active layers one after another.
  * data_parallel: greedy order; an epoch of layer k splits the fraction f of t_k that is per-example
    compute over G replicas (processor sharing again: f t_k / min(G, C), times rho for G >= 2), keeps
    the rest (input gather, SGD apply, step overhead) serial, and adds the all-reduce. All-reduce cost
    model: reduce to one device and broadcast back, i.e. G - 1 transfers of the layer's P_k
    parameters per step: S_k (G - 1) P_k gamma seconds per epoch (S_k steps per epoch).
  * greedy: sum of E t_k (G does not change it).
  * pipeline_parallel (`PipelineModel`): a FLOP rate fitted on its one-device run, through the critical path
    of the pipeline's ticks on G devices and the machine's cores.

Calibration (`calibrate_model_parallel`, `calibrate_data_parallel`) reads t_k, kappa and the all-reduce
cost from run records and fits rho (it is a fit, not a measurement); `predictions` compares the model with
every measured point and says which points the calibration used (their error is in-sample) and which it
did not (a real prediction).
"""

import dataclasses
import statistics
from typing import Callable, Dict, Iterable, List, Mapping, Optional, Sequence, Tuple

from common import cost
from common import layerwise_schedule as schedule_lib
from pipeline_parallel import config as pp_config
from pipeline_parallel import placement


# Devices the model's lines are drawn for.
MAX_PREDICTED_DEVICES = 8
# rho is fitted in [1, MAX_SLOWDOWN]: two jobs side by side each slowed 2x or more would be no faster
# than one after the other, which a work-conserving runtime does not do; a larger fit is noise.
MAX_SLOWDOWN = 2.0


def processor_sharing_makespan(work: Sequence[float], cores: int, slowdown: float = 1.0) -> float:
  """Seconds until all jobs finish when they share `cores` cores fairly.

  Args:
    work: seconds each job needs alone on one core (a job uses at most one core).
    cores: C >= 1.
    slowdown: rho >= 1, the factor by which every job runs slower while at least two run at once.

  Returns:
    The makespan in seconds (0 for no jobs). With n <= C jobs and rho = 1 this is max(work); with
    n > C it is at least sum(work) / C.

  Raises:
    ValueError: cores < 1, slowdown < 1 or a negative job.
  """
  if cores < 1 or slowdown < 1.0:
    raise ValueError(f"cores must be >= 1 and slowdown >= 1, got {cores} and {slowdown}")
  if any(w < 0 for w in work):
    raise ValueError(f"job durations must be >= 0, got {list(work)}")
  jobs = sorted(work)
  elapsed, done = 0.0, 0.0  # All unfinished jobs have received the same service `done` so far.
  for i, w in enumerate(jobs):
    active = len(jobs) - i
    rate = min(1.0, cores / active) / (slowdown if active > 1 else 1.0)
    elapsed += (w - done) / rate
    done = w
  return elapsed


def copied_params(members: Sequence[int], params: Sequence[int]) -> int:
  """Parameters copied at the end of every step of a group: each layer's device holds a frozen copy of
  every lower layer of its group, refreshed from the live layer (`common/layerwise_training.py`), so the
  layer at position p of a group of m layers is copied m - 1 - p times."""
  m = len(members)
  return sum((m - 1 - p) * params[k] for p, k in enumerate(members))


def predict_greedy(epoch_seconds: Sequence[float], epochs: int) -> float:
  """Seconds of greedy pretraining: sum over layers of epochs * t_k."""
  return epochs * sum(epoch_seconds)


def predict_model_parallel(epoch_seconds: Sequence[float], epochs: int, devices: int, cores: int,
                           slowdown: float = 1.0, copy_seconds_per_param: float = 0.0,
                           params: Optional[Sequence[int]] = None) -> float:
  """Seconds of model-parallel pretraining on `devices` devices (see the module docstring).

  Args:
    epoch_seconds: t_k, seconds per epoch of each layer alone on one core, bottom first (H layers).
    epochs: E, epochs of the last layer of each group.
    devices: G >= 1 (G > H behaves as G = H).
    cores: C, cores of the machine.
    slowdown: rho, see `processor_sharing_makespan`.
    copy_seconds_per_param: kappa, seconds per parameter copied between devices.
    params: parameters per layer (needed when kappa > 0).
  """
  total = 0.0
  schedule = schedule_lib.Schedule(len(epoch_seconds), devices, epochs)
  for step in schedule.all_steps():
    total += processor_sharing_makespan([epoch_seconds[k] for k in step.active], cores, slowdown)
    if copy_seconds_per_param:
      total += copy_seconds_per_param * copied_params(schedule.groups[step.group], params)
  return total


def predict_sync_layerwise(epoch_seconds: Sequence[float], epochs: int) -> float:
  """Seconds of synchronized layer-wise pretraining: every step of `Schedule(H, H, E)`, its active layers
  one after another on one core."""
  return schedule_lib.Schedule(len(epoch_seconds), len(epoch_seconds), epochs).critical_path(
      epoch_seconds, concurrent=False)


def predict_data_parallel(epoch_seconds: Sequence[float], epochs: int, devices: int, cores: int,
                          parallel_fraction: float = 1.0, slowdown: float = 1.0,
                          allreduce_seconds_per_param: float = 0.0, params: Optional[Sequence[int]] = None,
                          steps_per_epoch: int = 0) -> float:
  """Seconds of data-parallel pretraining on `devices` replicas (see the module docstring).

  Args:
    epoch_seconds: t_k at G = 1, bottom first.
    epochs: E per layer.
    devices: G replicas.
    cores: C.
    parallel_fraction: f in [0, 1], the part of t_k split over the replicas.
    slowdown: rho for G >= 2.
    allreduce_seconds_per_param: gamma, seconds per parameter per transfer of the all-reduce.
    params: P_k per layer (needed when gamma > 0).
    steps_per_epoch: S (same for every layer: one global batch).
  """
  if not 0.0 <= parallel_fraction <= 1.0:
    raise ValueError(f"parallel_fraction must be in [0, 1], got {parallel_fraction}")
  rho = slowdown if devices > 1 else 1.0
  total = 0.0
  for k, t in enumerate(epoch_seconds):
    epoch = t * parallel_fraction * rho / min(devices, cores) + t * (1.0 - parallel_fraction)
    if allreduce_seconds_per_param:
      epoch += steps_per_epoch * (devices - 1) * params[k] * allreduce_seconds_per_param
    total += epochs * epoch
  return total


# ---------------------------------------------------------------------------------------------
# Calibration from run records.

def epoch_seconds_of(record: Mapping) -> List[float]:
  """t_k of a one-device run record: the median wall seconds of layer k's epochs.

  A model-parallel record times each step's wall clock (`schedule.steps[].wall_seconds`, what its
  pretrain_seconds adds up) besides each layer's in-graph busy time; the steps where layer k trains
  alone are its epochs. Other records time each epoch's wall clock in `layers[k].epochs[].seconds`.
  """
  steps = (record.get("schedule") or {}).get("steps")
  if steps:
    return [statistics.median(s["wall_seconds"] for s in steps if s["active_layers"] == [k + 1])
            for k in range(len(record["layers"]))]
  return [statistics.median(e["seconds"] for e in layer["epochs"]) for layer in record["layers"]]


def fit_scalar(predict: Callable[[float], Sequence[float]], measured: Sequence[float],
               low: float = 1.0, high: float = 4.0, iterations: int = 80) -> float:
  """The x in [low, high] minimising the sum of squared relative errors of predict(x) vs measured.

  Golden-section search: exact (to ~1e-16 of the interval) when the loss is unimodal on [low, high],
  which holds when every prediction is monotone and smooth in x (as rho is in this model).
  Returns `low` when there is nothing to fit.
  """
  if not measured:
    return low

  def loss(x):
    return sum(((p - m) / m) ** 2 for p, m in zip(predict(x), measured))

  ratio = (5 ** 0.5 - 1) / 2
  a, b = low, high
  c, d = b - ratio * (b - a), a + ratio * (b - a)
  fc, fd = loss(c), loss(d)
  for _ in range(iterations):
    if fc <= fd:
      b, d, fd = d, c, fc
      c = b - ratio * (b - a)
      fc = loss(c)
    else:
      a, c, fc = c, d, fd
      d = a + ratio * (b - a)
      fd = loss(d)
  return (a + b) / 2


@dataclasses.dataclass(frozen=True)
class Point:
  """One measured run: its layers, epochs, devices and measured pretraining seconds."""
  hidden_units: Tuple[int, ...]
  epochs: int
  devices: int
  batch_size: int
  train_examples: int
  seconds: float
  name: str = ""

  @staticmethod
  def of(record: Mapping, name: str = "") -> "Point":
    """The point of a run record."""
    c = record["config"]
    return Point(tuple(c["hidden_units"]), c["pretrain_epochs"], c["num_devices"], c["batch_size"],
                 c["train_examples"], record["pretrain_seconds"], name or record.get("run_name", ""))


@dataclasses.dataclass(frozen=True)
class Model:
  """A calibrated model of one strategy.

  Attributes:
    strategy: "model_parallel", "data_parallel", "sync_layerwise" or "greedy".
    epoch_seconds: t_k for the deepest stack measured (a shallower stack uses its first layers).
    epoch_seconds_by_depth: ((H, t_k of an H-layer stack), ...) from each depth's own one-device run,
      used for that depth instead of `epoch_seconds` (runs of one experiment differ by a few percent
      to tens of percent from process to process on a shared virtual machine).
    cores: C.
    slowdown: rho.
    copy_seconds_per_param: kappa (model parallel).
    parallel_fraction: f (data parallel).
    allreduce_seconds_per_param: gamma (data parallel).
    steps_per_epoch: S (data parallel).
    calibration: names of the runs the parameters were taken or fitted from.
  """
  strategy: str
  epoch_seconds: Tuple[float, ...]
  cores: int
  epoch_seconds_by_depth: Tuple[Tuple[int, Tuple[float, ...]], ...] = ()
  slowdown: float = 1.0
  copy_seconds_per_param: float = 0.0
  parallel_fraction: float = 1.0
  allreduce_seconds_per_param: float = 0.0
  steps_per_epoch: int = 0
  calibration: Tuple[str, ...] = ()

  def _layer_seconds(self, depth: int) -> List[float]:
    """t_k of the first `depth` layers: that depth's own one-device run if there is one.

    Raises:
      ValueError: the stack is deeper than the calibration run's.
    """
    if depth > len(self.epoch_seconds):
      raise ValueError(f"calibrated for {len(self.epoch_seconds)} layers, asked for {depth}")
    return list(dict(self.epoch_seconds_by_depth).get(depth, self.epoch_seconds[:depth]))

  def predict(self, hidden_units: Sequence[int], epochs: int, devices: int) -> float:
    """Predicted pretraining seconds of the first len(hidden_units) layers on `devices` devices.

    Raises:
      ValueError: the stack is deeper than the calibration run's.
    """
    t = self._layer_seconds(len(hidden_units))
    params = cost.layer_params(hidden_units)
    if self.strategy == "model_parallel":
      return predict_model_parallel(t, epochs, devices, self.cores, self.slowdown, self.copy_seconds_per_param,
                                    params)
    if self.strategy == "data_parallel":
      return predict_data_parallel(t, epochs, devices, self.cores, self.parallel_fraction, self.slowdown,
                                   self.allreduce_seconds_per_param, params, self.steps_per_epoch)
    if self.strategy == "sync_layerwise":
      return predict_sync_layerwise(t, epochs)
    return predict_greedy(t, epochs)

  def work_seconds(self, hidden_units: Sequence[int], epochs: int, devices: int) -> float:
    """Seconds the run's layer epochs would take one after another on one core (sum of t_k per epoch).

    Dividing it by a run's seconds gives the cores' worth of work the run kept going on average: what
    the model assumes (over the predicted seconds) or what happened (over the measured seconds).

    Raises:
      ValueError: the stack is deeper than the calibration run's.
    """
    t = self._layer_seconds(len(hidden_units))
    if self.strategy in ("model_parallel", "sync_layerwise"):
      g = devices if self.strategy == "model_parallel" else len(t)
      return schedule_lib.Schedule(len(t), g, epochs).critical_path(t, concurrent=False)
    return epochs * sum(t)

  def curve(self, hidden_units: Sequence[int], epochs: int,
            max_devices: int = MAX_PREDICTED_DEVICES) -> Dict[int, float]:
    """{G: predicted seconds} for G = 1..max_devices."""
    return {g: self.predict(hidden_units, epochs, g) for g in range(1, max_devices + 1)}

  def describe(self) -> str:
    """The calibrated parameters in one line (for figures and results/README.md)."""
    parts = [f"t_k = {', '.join(f'{t:.3g}' for t in self.epoch_seconds)} s", f"C = {self.cores}",
             f"fitted rho = {self.slowdown:.3f}"]
    if self.strategy == "model_parallel":
      parts.append(f"kappa = {self.copy_seconds_per_param * 1e9:.3g} ns/param")
    if self.strategy == "data_parallel":
      parts += [f"f = {self.parallel_fraction:.3f}", f"gamma = {self.allreduce_seconds_per_param * 1e9:.3g} ns/param",
                f"S = {self.steps_per_epoch}"]
    return "; ".join(parts)


def _cores(records: Iterable[Mapping]) -> int:
  return min(int(r["environment"]["cpu_count"]) for r in records)


def _copy_seconds_per_param(records: Iterable[Mapping]) -> float:
  """kappa = measured copy seconds / copied parameters, over every step of model-parallel schedules."""
  seconds, copied = 0.0, 0
  for r in records:
    hidden = r["config"]["hidden_units"]
    params = cost.layer_params(hidden)
    schedule = schedule_lib.Schedule(len(hidden), r["config"]["num_devices"], r["config"]["pretrain_epochs"])
    for step in (r.get("schedule") or {}).get("steps", []):
      seconds += float(step.get("copy_seconds") or 0.0)
      copied += copied_params(schedule.groups[schedule.group_of(step["active_layers"][0] - 1)], params)
  return seconds / copied if copied else 0.0


def calibrate_model_parallel(records: Mapping[str, Mapping]) -> Model:
  """Calibrates the model-parallel model on runs with G <= 2.

  t_k: each depth's G = 1 run (the deepest for depths without one). kappa: measured weight-copy
  seconds of the G = 2 runs.
  rho: fitted to the G = 2 runs' pretraining seconds (least squares of relative errors).

  Args:
    records: {run name: model-parallel run record}, all with the same batch, examples and layer sizes.

  Raises:
    ValueError: there is no G = 1 run.
  """
  singles = {n: r for n, r in records.items() if r["config"]["num_devices"] == 1}
  if not singles:
    raise ValueError("the model needs a run with one device")
  base_name = max(singles, key=lambda n: len(singles[n]["config"]["hidden_units"]))
  by_depth = tuple(sorted((len(r["config"]["hidden_units"]), tuple(epoch_seconds_of(r))) for r in singles.values()))
  pairs = {n: r for n, r in records.items() if r["config"]["num_devices"] == 2}
  model = Model("model_parallel", tuple(epoch_seconds_of(singles[base_name])), _cores(records.values()),
                epoch_seconds_by_depth=by_depth, copy_seconds_per_param=_copy_seconds_per_param(pairs.values()),
                calibration=tuple(sorted(singles)) + tuple(sorted(pairs)))
  return _fit_slowdown(model, pairs)


def _fit_slowdown(model: "Model", records: Mapping[str, Mapping]) -> "Model":
  """`model` with rho fitted to the pretraining seconds of `records` (least squares of relative errors)."""
  points = [Point.of(r) for r in records.values()]
  rho = fit_scalar(lambda x: [dataclasses.replace(model, slowdown=x).predict(p.hidden_units, p.epochs, p.devices)
                              for p in points], [p.seconds for p in points], high=MAX_SLOWDOWN)
  return dataclasses.replace(model, slowdown=rho)


def _profile_phases(record: Mapping) -> Optional[Mapping[str, float]]:
  profile = record.get("profile") or {}
  return profile.get("seconds_per_epoch")


def calibrate_data_parallel(records: Mapping[str, Mapping],
                            profiles: Optional[Mapping[str, Mapping]] = None) -> Model:
  """Calibrates the data-parallel model on runs with G <= 2.

  t_k: the G = 1 run. f: (forward_loss + gradients) / total of a G = 1 op profile (1 without one).
  gamma: all-reduce seconds per epoch of a G = 2 op profile / (S_p P_p), where S_p and P_p are the
  profiled run's steps per epoch and first-layer parameters (0 without one). rho: fitted to the
  G = 2 runs' pretraining seconds.

  Args:
    records: {run name: data-parallel run record} of one experiment (same batch and examples).
    profiles: {run name: record with a "profile"}; defaults to the profiled runs among `records`.

  Raises:
    ValueError: there is no G = 1 run.
  """
  profiles = dict(profiles if profiles is not None else records)
  singles = {n: r for n, r in records.items() if r["config"]["num_devices"] == 1}
  if not singles:
    raise ValueError("the model needs a run with one device")
  base_name = max(singles, key=lambda n: len(singles[n]["config"]["hidden_units"]))
  base = singles[base_name]
  fraction, gamma, used = 1.0, 0.0, [base_name]
  for name, r in sorted(profiles.items()):
    phases = _profile_phases(r)
    if not phases:
      continue
    g = r["config"]["num_devices"]
    if g == 1 and fraction == 1.0:
      fraction = (phases["forward_loss"] + phases["gradients"]) / sum(phases.values())
      used.append(name)
    if g == 2 and gamma == 0.0:
      steps = r["config"]["train_examples"] // r["config"]["batch_size"]
      gamma = phases["allreduce"] / (steps * cost.layer_params(r["config"]["hidden_units"])[0])
      used.append(name)
  config = base["config"]
  pairs = {n: r for n, r in records.items() if r["config"]["num_devices"] == 2}
  model = Model("data_parallel", tuple(epoch_seconds_of(base)), _cores(records.values()),
                parallel_fraction=fraction, allreduce_seconds_per_param=gamma,
                steps_per_epoch=config["train_examples"] // config["batch_size"],
                calibration=tuple(dict.fromkeys(used + sorted(pairs))))
  return _fit_slowdown(model, pairs)


@dataclasses.dataclass(frozen=True)
class Prediction:
  """The model's prediction at one measured point, beside the measurement.

  Attributes:
    name: the run's name.
    hidden_units, devices: the point.
    measured, predicted: pretraining seconds.
    in_calibration: the run was used to calibrate the model (its error is in-sample).
    oversubscribed: more devices than the machine's cores.
  """
  name: str
  hidden_units: Tuple[int, ...]
  devices: int
  measured: float
  predicted: float
  in_calibration: bool
  oversubscribed: bool

  @property
  def relative_error(self) -> float:
    """(predicted - measured) / measured."""
    return (self.predicted - self.measured) / self.measured


def predictions(model: Model, records: Mapping[str, Mapping]) -> List[Prediction]:
  """The model's prediction at every measured run of `records`, sorted by layers then devices."""
  out = []
  for name, r in records.items():
    p = Point.of(r, name)
    out.append(Prediction(name, p.hidden_units, p.devices, p.seconds, model.predict(p.hidden_units, p.epochs, p.devices),
                          name in model.calibration, p.devices > model.cores))
  return sorted(out, key=lambda e: (len(e.hidden_units), e.devices, e.name))


# ---- pipeline_parallel ---------------------------------------------------------------------------

def pipeline_plan(config: Mapping, devices: int) -> "placement.Plan":
  """The pipeline's plan (stages, chunks, ticks) of a run's config on `devices` devices."""
  hidden = tuple(config["hidden_units"])
  k = config.get("pipeline_chunk_steps") or pp_config.DEFAULT_CHUNK_STEPS
  return placement.plan_for(hidden, devices, config["train_examples"], config["batch_size"],
                            config["pretrain_epochs"], int(k))


@dataclasses.dataclass(frozen=True)
class PipelineModel:
  """Pretraining seconds of `pipeline_parallel` on G devices from one measured one-device run.

  A device computes rate FLOPs per second (fitted: the one-device run's FLOPs / its seconds). On G devices a
  run lasts the longer of (1) its critical path, every tick as long as its costliest active stage, fill and
  drain included (`placement.Plan.critical_path_flops`), and (2) all its FLOPs shared by min(G, C) cores,
  divided by the rate. No co-run slowdown: the G > 1 points measure how far from it the machine is.

  Attributes:
    rate: FLOPs per second of one device (float).
    cores: C, the machine's cores.
    calibration: name of the one-device run the rate comes from.
  """
  rate: float
  cores: int
  calibration: str

  def predict(self, config: Mapping, devices: int) -> float:
    """Predicted pretraining seconds of a run with `config` on `devices` devices."""
    plan = pipeline_plan(config, devices)
    work = pipeline_plan(config, 1).critical_path_flops(config["batch_size"])
    return max(plan.critical_path_flops(config["batch_size"]), work / min(devices, self.cores)) / self.rate


def calibrate_pipeline(runs: Mapping[str, Mapping]) -> PipelineModel:
  """The model fitted on the one-device run among `runs` ({name: record}, one stack).

  Raises:
    ValueError: no one-device run.
  """
  ones = [(name, r) for name, r in runs.items() if int(r["config"]["num_devices"]) == 1]
  if not ones:
    raise ValueError("no one-device run to fit the FLOP rate on")
  name, r = ones[0]
  flops = pipeline_plan(r["config"], 1).critical_path_flops(r["config"]["batch_size"])
  return PipelineModel(flops / r["pretrain_seconds"], int(r["environment"]["cpu_count"]), name)
