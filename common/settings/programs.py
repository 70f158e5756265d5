"""The registry of training programs: each program is one `Program` object in its own folder (`<name>/program.py`),
registered by its folder's name in `PACKAGES`.

Everything that lists programs derives from the registry and asks a program's capabilities (one device or many, its
cluster shape, pipelined or not, what crosses between its devices, its batch rule, its kernels and thread pools, its
performance model, whether it is the report's baseline); none names a program, except where a thing is about given
programs (a benchmark of them, the report's numbers). This module imports no TensorFlow, and neither does a
`program.py`: flags are parsed before TensorFlow loads. A program's library (`Program.library`: its `train` and its
schedule) is imported only when it runs.

Adding a program (docs/experiments.md, "Adding a program"): its folder `<name>/` with `program.py`, `train.py` and
`pretrain.py`, and its name appended to `PACKAGES`.
"""

import dataclasses
import functools
import importlib
from typing import Mapping, Optional, Tuple, Type

from common.settings import config as config_lib
from common.settings import processor_defaults

# The registered programs, by folder, in the order every figure and table lists them.
PACKAGES = ("greedy", "sync_layerwise", "model_parallel", "data_parallel", "pipeline_parallel", "async_data_parallel")

# How a program uses several processes when TF_CONFIG describes a cluster (`common.distribute.cluster`):
#   "none"           it does not: TF_CONFIG is ignored, the devices are this process's.
#   "client_server"  the "worker" tasks serve their devices, the "chief" task runs the program on them.
#   "multi_worker"   every task runs the program under MultiWorkerMirroredStrategy.
#   "parameter_server" the "ps" tasks hold the variables, the "worker" tasks run the functions the "chief" task
#                    schedules (ParameterServerStrategy, `common.distribute.parameter_server`); without TF_CONFIG the
#                    program starts such a cluster inside its own process.
CLUSTER_SHAPES = ("none", "client_server", "multi_worker", "parameter_server")
# What crosses between a program's devices while it pretrains (`common.measure.cost.network_bytes`):
#   "none", "gradients" (every step, the layer in training's, all-reduced), "weight_copies" (every epoch-step, each
#   layer's weights to the frozen copies above it), "activations" (every chunk, the encodings between stages).
NETWORK = ("none", "gradients", "weight_copies", "activations")
PRECISIONS = config_lib.PRECISIONS


@dataclasses.dataclass(frozen=True)
class Program:
  """One training program, `python -m <name>.train`, declared once in `<name>/program.py`.

  Attributes:
    name: the program's package, e.g. "model_parallel"; also the run record's "strategy".
    run_name: its short name in the experiments' run names (e.g. "mp" in results/runs/.../cpu_mp.json).
    label: its name in figures and tables, e.g. "model parallel".
    color: its matplotlib colour in every figure.
    config: its `common.settings.config.Config` subclass (its own settings; the base class when it has none).
    one_device: True when it trains on one device whatever --num_devices says (greedy, sync_layerwise).
    cluster: one of `CLUSTER_SHAPES`: how it runs on several processes (`common.launch`).
    pipelined: True when a layer trains on the encodings the layer below emitted instead of recomputing the stack
      below (`common.measure.cost.pretraining_flops`).
    network: one of `NETWORK`: what crosses between its devices.
    splits_batch: True when every global batch is split over the devices (each takes an equal share, so the batch
      must be a multiple of the devices).
    kernels: {precision: kernel path of its pretraining steps with --kernels=auto}, "tf" or "xla", where the
      kernels benchmark measured no class of processor (`processor_defaults`; docs/kernels_and_threads.md).
    thread_pool: {precision: intra-op pool of its logical CPU devices with --thread_pool=auto}, "per_device"
      or "shared", where no benchmark measured a class of processor (`processor_defaults`).
    kernel_paths: the kernel paths it can run (--kernels), of "xla" and "tf".
    thread_pools: the intra-op pools worth comparing for it on several devices (the equal-cores benchmark).
    timing_settings: settings every timed run of it takes ((field, value) pairs, e.g. no op profile timed with it).
    baseline: True for the report's baseline, which every speedup divides (exactly one program).
    library: the module of its library entry (default "<name>.pretrain"): `train(config, on_checkpoint=None) ->
      record`, which starts the run (`common.run.lifecycle.started`), runs its schedule `pretrain(run)` and finishes
      the run (`common.run.lifecycle.finish`).
  """
  name: str
  run_name: str
  label: str
  color: str
  config: Type[config_lib.Config] = config_lib.Config
  one_device: bool = False
  cluster: str = "none"
  pipelined: bool = False
  network: str = "none"
  splits_batch: bool = False
  kernels: Mapping[str, str] = dataclasses.field(default_factory=lambda: dict.fromkeys(PRECISIONS, "tf"))
  thread_pool: Mapping[str, str] = dataclasses.field(default_factory=lambda: dict.fromkeys(PRECISIONS, "per_device"))
  kernel_paths: Tuple[str, ...] = ("xla", "tf")
  thread_pools: Tuple[str, ...] = ("per_device",)
  timing_settings: Tuple[Tuple[str, object], ...] = ()
  baseline: bool = False
  library: str = ""

  def __post_init__(self):
    if self.cluster not in CLUSTER_SHAPES:
      raise ValueError(f"{self.name}: cluster must be one of {CLUSTER_SHAPES}, got {self.cluster!r}")
    if self.network not in NETWORK:
      raise ValueError(f"{self.name}: network must be one of {NETWORK}, got {self.network!r}")
    for field in ("kernels", "thread_pool"):
      if isinstance(getattr(self, field), str):  # One value for every precision.
        object.__setattr__(self, field, dict.fromkeys(PRECISIONS, getattr(self, field)))
      if set(getattr(self, field)) != set(PRECISIONS):
        raise ValueError(f"{self.name}: {field} needs one value per precision {PRECISIONS}")
    object.__setattr__(self, "library", self.library or f"{self.name}.pretrain")

  def __hash__(self) -> int:  # The per-precision mappings are dicts: a program is known by its name.
    return hash(self.name)

  @property
  def module(self) -> str:
    """The entry point, e.g. "model_parallel.train" (`python -m <module>`)."""
    return f"{self.name}.train"

  def default_kernels(self, precision: str = PRECISIONS[0]) -> str:
    """The kernel path of --kernels=auto at `precision`: this processor class's row of
    `processor_defaults.TABLE` (or the nearest measured class's), else the declared `kernels`."""
    return processor_defaults.choice("kernels", precision, self.name)[0] or self.kernels[precision]

  def default_thread_pool(self, precision: str = PRECISIONS[0]) -> str:
    """The thread pool of --thread_pool=auto at `precision`: as `default_kernels`, from the table or `thread_pool`."""
    return processor_defaults.choice("thread_pool", precision, self.name)[0] or self.thread_pool[precision]

  def devices_for(self, devices: int) -> int:
    """The devices it trains on when given `devices`: 1 for a one-device program."""
    return 1 if self.one_device else devices

  def make_config(self, **values) -> config_lib.Config:
    """Its `Config` for `values` ({field: value}), naming it as the program (ValueError for a bad value)."""
    return self.config(program=self.name, **values)

  def load_library(self):
    """The module of its `train(config)` (imports TensorFlow)."""
    return importlib.import_module(self.library)


@functools.lru_cache(maxsize=None)
def _registered() -> Tuple[Program, ...]:
  found = tuple(importlib.import_module(f"{package}.program").PROGRAM for package in PACKAGES)
  for package, program in zip(PACKAGES, found):
    if program.name != package:
      raise ValueError(f"{package}/program.py declares a program named {program.name!r}, not {package!r}")
  if sum(p.baseline for p in found) != 1:
    raise ValueError("exactly one registered program must be the baseline (baseline=True)")
  return found


def __getattr__(attribute: str):
  """PROGRAMS (every registered program, in order), NAMES (their names), and each program by its name in capitals
  (programs.GREEDY): loaded on first use, so a `program.py` may import this module."""
  if attribute == "PROGRAMS":
    return _registered()
  if attribute == "NAMES":
    return tuple(p.name for p in _registered())
  if attribute.isupper() and attribute.lower() in PACKAGES:
    return get(attribute.lower())
  raise AttributeError(f"module {__name__!r} has no attribute {attribute!r}")


def get(name: str) -> Program:
  """The program called `name` (its package, e.g. "greedy").

  Raises:
    ValueError: no registered program has that name.
  """
  for program in _registered():
    if program.name == name:
      return program
  raise ValueError(f"unknown program {name!r}; the programs are {', '.join(p.name for p in _registered())}")


def baseline() -> Program:
  """The report's baseline, which every speedup divides (greedy layer-wise)."""
  return next(p for p in _registered() if p.baseline)


def with_cluster(shape: str) -> Tuple[Program, ...]:
  """The programs that run on a cluster in `shape` (one of `CLUSTER_SHAPES`)."""
  return tuple(p for p in _registered() if p.cluster == shape)


def find(module: Optional[str]) -> Optional[Program]:
  """The program whose entry point is `module` (e.g. "greedy.train"), or None."""
  return next((p for p in _registered() if p.module == module), None)
