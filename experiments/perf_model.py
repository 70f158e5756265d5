"""Performance models of layer-wise pretraining, one per program (`resolve`): `calibrate(runs)`, `predict(config,
devices)` (pretraining seconds) and `describe()`; their inputs and formulas: docs/performance_model.md."""

import dataclasses
import statistics
from typing import Callable, List, Mapping, NamedTuple, Optional, Sequence, Tuple

import numpy

from common.layerwise import schedule as schedule_lib
from common.measure import cost
from common.settings import programs
from experiments import records as records_lib
from pipeline_parallel import config as pp_config
from common.pipeline import placement

MAX_PREDICTED_DEVICES = 8  # devices the model's lines are drawn for
# rho is fitted in [1, MAX_SLOWDOWN]: two jobs side by side each slowed 2x or more would be no faster
# than one after the other, which a work-conserving runtime does not do; a larger fit is noise.
MAX_SLOWDOWN = 2.0
Records = Mapping[str, Mapping]


def resolve(program: programs.Program) -> Optional[type]:
  """The model class of `program` (`MODELS`), or None for a program without one."""
  return MODELS.get(program.name)


def processor_sharing_makespan(work: Sequence[float], cores: int, slowdown: float = 1.0) -> float:
  """Seconds until jobs of `work` seconds (alone on a core) all finish sharing `cores` cores fairly, each slowed by
  `slowdown` while two or more run; ValueError for cores < 1, slowdown < 1 or a negative job."""
  if cores < 1 or slowdown < 1.0 or any(w < 0 for w in work):
    raise ValueError(f"need cores >= 1, slowdown >= 1 and jobs >= 0, got {cores}, {slowdown} and {list(work)}")
  elapsed, done, jobs = 0.0, 0.0, sorted(work)  # Every unfinished job has received the same service `done`.
  for i, w in enumerate(jobs):
    active = len(jobs) - i
    elapsed, done = elapsed + (w - done) / (min(1.0, cores / active) / (slowdown if active > 1 else 1.0)), w
  return elapsed


def copied_params(members: Sequence[int], params: Sequence[int]) -> int:
  """Parameters copied per step of a group: position p of m layers goes to the m - 1 - p frozen copies above."""
  return sum((len(members) - 1 - p) * params[k] for p, k in enumerate(members))


def fit_scalar(predict: Callable[[float], Sequence[float]], measured: Sequence[float],
               low: float = 1.0, high: float = 4.0) -> float:
  """The x in [low, high] minimising the squared relative errors of predict(x), a prediction affine in x (as the
  models' are in rho): the least-squares x in closed form, clipped to [low, high] (`low`: no data)."""
  if not measured:
    return low
  m = numpy.asarray(measured, dtype=float)
  at_low = numpy.asarray(predict(low), dtype=float)
  # Each relative error is (at_low + slope_i (x - low) - m_i) / m_i: linear in x, so least squares in one step.
  slope = (numpy.asarray(predict(high), dtype=float) - at_low) / (high - low) / m
  if not slope.any():
    return low
  return float(numpy.clip(low + slope @ ((m - at_low) / m) / (slope @ slope), low, high))


def epoch_seconds_of(record: Mapping) -> List[float]:
  """t_k of a one-device run: median seconds of layer k's epochs (model parallel: its steps alone)."""
  if steps := (record.get("schedule") or {}).get("steps"):
    return [statistics.median(s["wall_seconds"] for s in steps if s["active_layers"] == [k + 1])
            for k in range(len(record["layers"]))]
  return records_lib.layer_epoch_seconds(record)


def _depth(record: Mapping) -> int:
  return len(record["config"]["hidden_units"])


def _devices(runs: Records, g: int) -> Records:
  return {n: r for n, r in runs.items() if records_lib.devices(r) == g}


@dataclasses.dataclass(frozen=True)
class LayerModel:
  """Greedy's model (E * sum t_k) and the layer-wise ones' base: t_k, seconds per epoch of layer k alone on one device
  (of the deepest one-device run, and per depth), C cores, the side-by-side slowdown rho, the calibration runs."""
  epoch_seconds: Tuple[float, ...]
  cores: int
  epoch_seconds_by_depth: Tuple[Tuple[int, Tuple[float, ...]], ...] = ()
  slowdown: float = 1.0
  calibration: Tuple[str, ...] = ()

  def predict(self, config: Mapping, devices: int) -> float:
    """Pretraining seconds of `config` on `devices` devices (t_k of its depth); ValueError: deeper than calibrated."""
    depth = len(config["hidden_units"])
    if depth > len(self.epoch_seconds):
      raise ValueError(f"calibrated for {len(self.epoch_seconds)} layers, asked for {depth}")
    t = dict(self.epoch_seconds_by_depth).get(depth, self.epoch_seconds[:depth])
    return self._seconds(list(t), config, devices)

  def _seconds(self, t: List[float], config: Mapping, devices: int) -> float:
    return config["pretrain_epochs"] * sum(t)

  def describe(self) -> str:
    """The fitted parameters in one line, for the tables."""
    return (f"t_k = {', '.join(f'{t:.3g}' for t in self.epoch_seconds)} s; C = {self.cores}; "
            f"fitted rho = {self.slowdown:.3f}")

  @classmethod
  def calibrate(cls, runs: Records) -> "LayerModel":
    """t_k from the one-device runs, then `_fit` from the 2-device runs; ValueError without a one-device run."""
    if not (singles := _devices(runs, 1)):
      raise ValueError("the model needs a run with one device")
    base = max(singles, key=lambda n: _depth(singles[n]))
    by_depth = tuple(sorted((_depth(r), tuple(epoch_seconds_of(r))) for r in singles.values()))
    model = cls(tuple(epoch_seconds_of(singles[base])), min(records_lib.cores(r) for r in runs.values()), by_depth,
                calibration=tuple(sorted(singles)))
    return model._fit(runs, _devices(runs, 2))

  def _fit(self, runs: Records, pairs: Records) -> "LayerModel":  # what a subclass fits beyond t_k
    return self

  def _fit_slowdown(self, pairs: Records, **fields) -> "LayerModel":
    """This model with `fields` set and rho fitted to the pretraining seconds of `pairs` (joining calibration)."""
    model = dataclasses.replace(self, calibration=tuple(dict.fromkeys(self.calibration + tuple(sorted(pairs)))),
                                **fields)
    rho = fit_scalar(lambda x: [dataclasses.replace(model, slowdown=x).predict(r["config"], records_lib.devices(r))
                                for r in pairs.values()], [r["pretrain_seconds"] for r in pairs.values()],
                     high=MAX_SLOWDOWN)
    return dataclasses.replace(model, slowdown=rho)
class SyncLayerwise(LayerModel):
  """sync_layerwise: every step of `Schedule(H, H, E)`, its active layers one after another on one core."""

  def _seconds(self, t, config, devices):
    return schedule_lib.Schedule(len(t), len(t), config["pretrain_epochs"]).critical_path(t, concurrent=False)


@dataclasses.dataclass(frozen=True)
class ModelParallel(LayerModel):
  """model_parallel: `Schedule(H, G, E)`'s steps, each its layers' makespan plus kappa seconds per copied param."""
  copy_seconds_per_param: float = 0.0

  def _seconds(self, t, config, devices):
    schedule = schedule_lib.Schedule(len(t), devices, config["pretrain_epochs"])
    params = cost.layer_params(config["hidden_units"])
    return sum(processor_sharing_makespan([t[k] for k in step.active], self.cores, self.slowdown)
               + self.copy_seconds_per_param * copied_params(schedule.groups[step.group], params)
               for step in schedule.all_steps())

  def describe(self):
    """The fitted parameters in one line, for the tables."""
    return super().describe() + f"; kappa = {self.copy_seconds_per_param * 1e9:.3g} ns/param"

  def _fit(self, runs, pairs):
    seconds, copied = 0.0, 0
    for r in pairs.values():
      c = r["config"]
      params = cost.layer_params(c["hidden_units"])
      schedule = schedule_lib.Schedule(len(params), c["num_devices"], c["pretrain_epochs"])
      for step in (r.get("schedule") or {}).get("steps", []):
        seconds += float(step.get("copy_seconds") or 0.0)
        copied += copied_params(schedule.groups[schedule.group_of(step["active_layers"][0] - 1)], params)
    return self._fit_slowdown(pairs, copy_seconds_per_param=seconds / copied if copied else 0.0)


@dataclasses.dataclass(frozen=True)
class DataParallel(LayerModel):
  """data_parallel: the part f of t_k split over min(G, C) cores (x rho for G >= 2) plus S (G - 1) P_k gamma seconds
  of all-reduce per epoch; f and gamma from the 1- and 2-replica op profiles (1 and 0 without), S shown."""
  parallel_fraction: float = 1.0
  allreduce_seconds_per_param: float = 0.0
  steps_per_epoch: int = 0

  def _seconds(self, t, config, devices):
    f, rho, gamma = self.parallel_fraction, self.slowdown if devices > 1 else 1.0, self.allreduce_seconds_per_param
    steps = config["train_examples"] // config["batch_size"]
    return config["pretrain_epochs"] * sum(
        x * f * rho / min(devices, self.cores) + x * (1.0 - f) + steps * (devices - 1) * p * gamma
        for x, p in zip(t, cost.layer_params(config["hidden_units"])))

  def describe(self):
    """The fitted parameters in one line, for the tables."""
    return super().describe() + (f"; f = {self.parallel_fraction:.3f}; gamma = "
                                 f"{self.allreduce_seconds_per_param * 1e9:.3g} ns/param; S = {self.steps_per_epoch}")

  def _fit(self, runs, pairs):
    fraction, gamma, used = 1.0, 0.0, []
    for name, r in sorted(runs.items()):
      phases, g, c = (r.get("profile") or {}).get("seconds_per_epoch"), records_lib.devices(r), r["config"]
      if phases and g == 1 and fraction == 1.0:
        fraction = (phases["forward_loss"] + phases["gradients"]) / sum(phases.values())
        used.append(name)
      if phases and g == 2 and gamma == 0.0:
        gamma = phases["allreduce"] / (c["train_examples"] // c["batch_size"] * cost.layer_params(c["hidden_units"])[0])
        used.append(name)
    name, base = next((n, r["config"]) for n, r in runs.items()
                      if records_lib.devices(r) == 1 and _depth(r) == len(self.epoch_seconds))
    model = dataclasses.replace(self, calibration=tuple(dict.fromkeys((name, *used))))
    return model._fit_slowdown(pairs, parallel_fraction=fraction, allreduce_seconds_per_param=gamma,
                               steps_per_epoch=base["train_examples"] // base["batch_size"])


def pipeline_plan(config: Mapping, devices: int) -> placement.Plan:
  """The pipeline's plan (stages, replicas, chunks, ticks) of a run's config on `devices` devices."""
  k = config.get("pipeline_chunk_steps") or pp_config.DEFAULT_CHUNK_STEPS
  return placement.plan_for(tuple(config["hidden_units"]), devices, config["train_examples"], config["batch_size"],
                            config["pretrain_epochs"], int(k), int(config.get("replicas_per_stage") or 1))


@dataclasses.dataclass(frozen=True)
class Pipeline:
  """pipeline_parallel: the longer of the critical path (`Plan.critical_path_flops`; R replicas per stage: 1/R each,
  all-reduce not counted) and all FLOPs over min(G, C) cores, at the one-device FLOP rate; no co-run slowdown."""
  rate: float
  cores: int
  calibration: Tuple[str, ...]

  def predict(self, config: Mapping, devices: int) -> float:
    """Predicted pretraining seconds of `config` on `devices` devices: the critical path's FLOPs, or the whole
    work over min(devices, cores) if that is more, at the fitted rate (FLOP/s per device)."""
    work = pipeline_plan(dict(config, replicas_per_stage=1), 1).critical_path_flops(config["batch_size"])
    path = pipeline_plan(config, devices).critical_path_flops(config["batch_size"])  # R replicas: 1/R each
    return max(path, work / min(devices, self.cores)) / self.rate

  def describe(self) -> str:
    """The fitted parameters in one line, for the tables."""
    return f"rate = {self.rate / 1e9:.3g} GFLOP/s per device; C = {self.cores}"

  @classmethod
  def calibrate(cls, runs: Records) -> "Pipeline":
    """Fitted on the first one-device run of `runs` (one stack); ValueError without one."""
    name, r = next(iter(_devices(runs, 1).items()), (None, None))
    if r is None:
      raise ValueError("no one-device run to fit the FLOP rate on")
    flops = pipeline_plan(r["config"], 1).critical_path_flops(r["config"]["batch_size"])
    return cls(flops / r["pretrain_seconds"], records_lib.cores(r), (name,))


# The performance model of each program that has one, registered here (the programs know nothing of experiments/).
MODELS = {programs.GREEDY.name: LayerModel, programs.SYNC_LAYERWISE.name: SyncLayerwise,
          programs.MODEL_PARALLEL.name: ModelParallel, programs.DATA_PARALLEL.name: DataParallel,
          programs.PIPELINE_PARALLEL.name: Pipeline}
Greedy = LayerModel  # greedy's model is the layer-wise models' base


class Prediction(NamedTuple):
  """The prediction at one measured run, whether calibration used it, its error (predicted - measured) / measured."""
  name: str
  hidden_units: Tuple[int, ...]
  devices: int
  measured: float
  predicted: float
  in_calibration: bool
  relative_error: float


def predictions(model, runs: Records) -> List[Prediction]:
  """The model's prediction at every run of `runs` ({name: record}), sorted by layers then devices."""
  out = [Prediction(name, tuple(r["config"]["hidden_units"]), records_lib.devices(r), r["pretrain_seconds"], p,
                    name in model.calibration, (p - r["pretrain_seconds"]) / r["pretrain_seconds"])
         for name, r in runs.items() for p in [model.predict(r["config"], records_lib.devices(r))]]
  return sorted(out, key=lambda p: (len(p.hidden_units), p.devices, p.name))


def calibrated(runs: Records) -> Tuple[Optional[object], str]:
  """The model of the program that made `runs`, calibrated on them, or (None, why not)."""
  names = {r.get("strategy") or r["config"]["strategy"] for r in runs.values()}
  if len(names) != 1:
    return None, f"no performance model: the records come from {len(names)} programs"
  if not records_lib.same_source(list(runs.values())):
    return None, f"no performance model: the records come from {records_lib.machine_label(list(runs.values()))}"
  if (model := resolve(programs.get(names.pop()))) is None:
    return None, "no performance model for this program"
  try:
    return model.calibrate(runs), ""
  except (ValueError, KeyError) as e:
    return None, f"no performance model: {e}"

