"""The registry of training programs: each program declared once, here.

Everything that lists programs derives from `PROGRAMS`: the launcher's cluster shapes (`common.launch`), each
program's default kernel path and thread pool (`common.lifecycle.start`), the experiments' run lists, the
benchmarks, the figures' labels and colours, and the tests. This module imports no TensorFlow, so flag parsing
and the report import it freely; it imports nothing from `experiments/` either: a program's performance model
is named by a dotted path that `experiments.perf_model.resolve` imports.

Adding a program (docs/experiments.md, "Adding a program"): its folder `<name>/` with `train.py` (flags and
one call of `common.cli.main`) and `pretrain.py` (`run(config)`), its tests, one entry in `PROGRAMS`, its docs.
"""

import dataclasses
from typing import Mapping, Tuple

# How a program uses several processes when TF_CONFIG describes a cluster (`common.cluster`):
#   "none"           it does not: TF_CONFIG is ignored, the devices are this process's.
#   "client_server"  the "worker" tasks serve their devices, the "chief" task runs the program on them.
#   "multi_worker"   every task runs the program under MultiWorkerMirroredStrategy.
#   "parameter_server" the "ps" tasks hold the variables, the "worker" tasks run the functions the "chief" task
#                    schedules (ParameterServerStrategy, `common.parameter_server`); without TF_CONFIG the
#                    program starts such a cluster inside its own process.
CLUSTER_SHAPES = ("none", "client_server", "multi_worker", "parameter_server")
# Numerical precisions of the matrix products (`--precision`).
PRECISIONS = ("float32", "mixed_bfloat16")


@dataclasses.dataclass(frozen=True)
class Program:
  """One training program, `python -m <name>.train`.

  Attributes:
    name: the program's package, e.g. "model_parallel"; also the run record's "strategy".
    run_name: its short name in the experiments' run names (e.g. "mp" in results/runs/.../cpu_mp.json).
    label: its name in figures and tables, e.g. "model parallel".
    color: its matplotlib colour in every figure.
    one_device: True when it trains on one device whatever --num_devices says (greedy, sync_layerwise).
    cluster: one of `CLUSTER_SHAPES`: how it runs on several processes (`common.launch`).
    kernels: {precision: kernel path of its pretraining steps with --kernels=auto}, "tf" or "xla", chosen by
      the kernels benchmark (docs/kernels_and_threads.md).
    thread_pool: {precision: intra-op pool of its logical CPU devices with --thread_pool=auto}, "per_device"
      or "shared" (docs/kernels_and_threads.md).
    perf_model: dotted path of its performance model in `experiments.perf_model` (a class), or "none".
    kernel_paths: the kernel paths it can run (--kernels), of "xla" and "tf".
  """
  name: str
  run_name: str
  label: str
  color: str
  one_device: bool
  cluster: str
  kernels: Mapping[str, str]
  thread_pool: Mapping[str, str]
  perf_model: str
  kernel_paths: Tuple[str, ...] = ("xla", "tf")

  def __post_init__(self):
    if self.cluster not in CLUSTER_SHAPES:
      raise ValueError(f"{self.name}: cluster must be one of {CLUSTER_SHAPES}, got {self.cluster!r}")
    for field in ("kernels", "thread_pool"):
      if set(getattr(self, field)) != set(PRECISIONS):
        raise ValueError(f"{self.name}: {field} needs one value per precision {PRECISIONS}")

  def __hash__(self) -> int:  # The per-precision mappings are dicts: a program is known by its name.
    return hash(self.name)

  @property
  def module(self) -> str:
    """The entry point, e.g. "model_parallel.train" (`python -m <module>`)."""
    return f"{self.name}.train"

  @property
  def library(self) -> str:
    """The module holding `run(config)`, e.g. "model_parallel.pretrain"."""
    return f"{self.name}.pretrain"

  def default_kernels(self, precision: str = "float32") -> str:
    """The kernel path of --kernels=auto at `precision`."""
    return self.kernels[precision]

  def default_thread_pool(self, precision: str = "float32") -> str:
    """The thread pool of --thread_pool=auto at `precision`."""
    return self.thread_pool[precision]


def _program(name: str, run_name: str, label: str, color: str, perf_model: str, one_device: bool = False,
             cluster: str = "none", kernels: str = "tf", thread_pool: str = "per_device",
             kernel_paths: Tuple[str, ...] = ("xla", "tf")) -> Program:
  """A `Program` whose kernel path and thread pool are the same at every precision."""
  return Program(name, run_name, label, color, one_device, cluster, {p: kernels for p in PRECISIONS},
                 {p: thread_pool for p in PRECISIONS}, perf_model, kernel_paths)


GREEDY = _program("greedy", "greedy", "greedy layer-wise", "tab:blue", "experiments.perf_model.Greedy",
                  one_device=True)
SYNC_LAYERWISE = _program("sync_layerwise", "sync", "synchronized layer-wise", "tab:purple",
                          "experiments.perf_model.SyncLayerwise", one_device=True)
MODEL_PARALLEL = _program("model_parallel", "mp", "model parallel", "tab:orange",
                          "experiments.perf_model.ModelParallel", cluster="client_server", thread_pool="shared")
DATA_PARALLEL = _program("data_parallel", "dp", "data parallel", "tab:green", "experiments.perf_model.DataParallel",
                         cluster="multi_worker")
PIPELINE_PARALLEL = _program("pipeline_parallel", "pp", "pipeline parallel", "tab:red",
                             "experiments.perf_model.Pipeline", cluster="client_server")
ASYNC_DATA_PARALLEL = _program("async_data_parallel", "adp", "asynchronous data parallel", "tab:brown", "none",
                               cluster="parameter_server", kernel_paths=("tf",))

PROGRAMS: Tuple[Program, ...] = (GREEDY, SYNC_LAYERWISE, MODEL_PARALLEL, DATA_PARALLEL, PIPELINE_PARALLEL,
                                 ASYNC_DATA_PARALLEL)
NAMES: Tuple[str, ...] = tuple(p.name for p in PROGRAMS)


def get(name: str) -> Program:
  """The program called `name` (its package, e.g. "greedy").

  Raises:
    ValueError: no registered program has that name.
  """
  for program in PROGRAMS:
    if program.name == name:
      return program
  raise ValueError(f"unknown program {name!r}; the programs are {', '.join(NAMES)}")


def with_cluster(shape: str) -> Tuple[Program, ...]:
  """The programs that run on a cluster in `shape` (one of `CLUSTER_SHAPES`)."""
  return tuple(p for p in PROGRAMS if p.cluster == shape)
