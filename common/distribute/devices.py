"""Device setup: G physical GPUs, or G logical CPU devices when there is no GPU.

On a CPU-only machine the one physical CPU is split into G logical devices
(`tf.config.set_logical_device_configuration`) and TensorFlow's inter-op pool gets G threads. TensorFlow
has one intra-op pool per process, shared by all devices, so per-device thread counts do not exist; the
thread pool setting chooses its size:
  "per_device"  `threads_per_device` threads: with 1, each logical device runs its ops on its one inter-op
                thread, single-threaded, so "1 device vs G devices" means "1 worker vs G workers" (the
                report's question, G GPUs vs 1);
  "shared"      G x `threads_per_device` threads that every device's ops draw from, so a device whose
                work is done lends its cores to the others (all cores serve the busy devices).
This must happen before anything initialises the TensorFlow runtime; if it already has been (a test
process, a notebook), the existing logical devices are reused when there are enough of them.
"""

import dataclasses
from typing import Any, Dict, Optional, Tuple

from absl import logging
import tensorflow as tf

from common.measure import provenance
from common.settings import config as config_lib


@dataclasses.dataclass(frozen=True)
class DeviceSetup:
  """The devices a run uses.

  Attributes:
    names: full device names, e.g. ("/job:localhost/replica:0/task:0/device:CPU:0", ...), one per device.
    kind: "GPU" for physical GPUs, "CPU-logical" for logical CPU devices, "CPU" for the CPU devices of
      the workers of a cluster (`common.distribute.cluster`).
    intra_op_threads: TensorFlow's intra-op pool size (shared by all logical CPU devices; -1: unknown).
    thread_pool: "per_device" or "shared" (see the module docstring).
    inter_op_threads: TensorFlow's inter-op pool size (-1: unknown).
    cluster: None in one process; in a cluster, TF_CONFIG's "cluster" plus this process's "task".
  """
  names: Tuple[str, ...]
  kind: str
  intra_op_threads: int
  inter_op_threads: int
  cluster: Optional[Dict[str, Any]] = None
  thread_pool: str = "per_device"

  def to_record(self) -> dict:
    """The fields the run record's `environment` stores about devices (and "cluster" in a cluster)."""
    record = {"device_kind": self.kind, "devices": list(self.names), "thread_pool": self.thread_pool,
              "intra_op_threads": self.intra_op_threads, "inter_op_threads": self.inter_op_threads}
    if self.cluster is not None:
      record["cluster"] = self.cluster
    return record


def check_available(num_devices: int) -> None:
  """Raises ValueError if `num_devices` devices cannot be made on this machine.

  With GPUs present, at most their number; without, at most `config.MAX_LOGICAL_CPU_DEVICES`
  logical CPU devices. Does not initialise the TensorFlow runtime.
  """
  if num_devices < 1:
    raise ValueError(f"--num_devices must be at least 1, got {num_devices}.")
  gpus = tf.config.list_physical_devices("GPU")
  if gpus and num_devices > len(gpus):
    raise ValueError(f"--num_devices={num_devices} but this machine has {len(gpus)} GPU(s).")
  if num_devices > config_lib.MAX_LOGICAL_CPU_DEVICES:
    raise ValueError(f"--num_devices must be at most {config_lib.MAX_LOGICAL_CPU_DEVICES}, got {num_devices}.")


def oversubscription(num_devices: int, threads_per_device: int, cores: Optional[int] = None) -> Optional[str]:
  """The warning for a run whose devices x threads exceed the cores, or None.

  Such runs are allowed (the project measures them, marked oversubscribed): the devices share the cores,
  so their times are not those of separate devices.
  """
  cores = cores or provenance.usable_cores()
  threads = num_devices * threads_per_device
  if threads <= cores:
    return None
  return (f"Oversubscribed: {num_devices} device(s) x {threads_per_device} thread(s) = {threads} threads on "
          f"{cores} core(s); the devices share the cores, so times are not those of {num_devices} separate "
          "devices (records mark such runs oversubscribed).")


THREAD_POOLS = ("per_device", "shared")


def intra_op_threads(num_devices: int, threads_per_device: int, thread_pool: str) -> int:
  """The intra-op pool size of a thread pool setting: threads_per_device, or G x that when shared.

  Raises:
    ValueError: an unknown thread pool setting.
  """
  if thread_pool not in THREAD_POOLS:
    raise ValueError(f"unknown thread pool {thread_pool!r}; one of {', '.join(THREAD_POOLS)}")
  return threads_per_device * (num_devices if thread_pool == "shared" else 1)


def setup(num_devices: int, threads_per_device: int = 1, thread_pool: str = "per_device") -> DeviceSetup:
  """Makes `num_devices` devices available and returns them.

  Args:
    num_devices: G >= 1.
    threads_per_device: intra-op threads per logical CPU device (ignored on GPUs).
    thread_pool: "per_device" or "shared": the intra-op pool size (see the module docstring).

  Returns:
    The `DeviceSetup` with exactly `num_devices` device names.

  Raises:
    ValueError: when the devices cannot be made (too few GPUs, or the runtime was already initialised
      with fewer logical CPU devices).
  """
  check_available(num_devices)
  gpus = tf.config.list_physical_devices("GPU")
  if gpus:
    logical = tf.config.list_logical_devices("GPU")
    names = tuple(d.name for d in logical[:num_devices])
    return DeviceSetup(names, "GPU", tf.config.threading.get_intra_op_parallelism_threads(),
                       tf.config.threading.get_inter_op_parallelism_threads())
  cpu = tf.config.list_physical_devices("CPU")[0]
  want = intra_op_threads(num_devices, threads_per_device, thread_pool)
  try:
    tf.config.set_logical_device_configuration(
        cpu, [tf.config.LogicalDeviceConfiguration() for _ in range(num_devices)])
    tf.config.threading.set_intra_op_parallelism_threads(want)
    tf.config.threading.set_inter_op_parallelism_threads(num_devices)
  except RuntimeError:
    pass  # Already initialised: reuse what exists, checked below.
  logical = tf.config.list_logical_devices("CPU")
  if len(logical) < num_devices:
    raise ValueError(
        f"--num_devices={num_devices} but TensorFlow was already initialised with {len(logical)} CPU "
        "device(s); set devices up before any other TensorFlow call.")
  intra = tf.config.threading.get_intra_op_parallelism_threads()
  inter = tf.config.threading.get_inter_op_parallelism_threads()
  if intra != want:
    logging.warning("Intra-op threads are %d (set before this run), not the requested %d.", intra, want)
  setup_ = DeviceSetup(tuple(d.name for d in logical[:num_devices]), "CPU-logical", intra, inter,
                       thread_pool=thread_pool)
  warning = oversubscription(num_devices, threads_per_device)
  if warning:
    logging.warning("%s", warning)
  logging.info("Using %d logical CPU device(s), %d intra-op thread(s) (%s pool), on %d core(s): %s",
               num_devices, intra, thread_pool.replace("_", " "), provenance.usable_cores(), ", ".join(setup_.names))
  return setup_


def short_name(device: str) -> str:
  """A device name for log lines: "/job:localhost/replica:0/task:0/device:CPU:1" -> "CPU:1"; a cluster worker's
  "/job:worker/replica:0/task:1/device:CPU:0" -> "task:1/CPU:0"."""
  short = device.rsplit("device:", 1)[-1]
  return short if "/job:worker/" not in device else f"task:{tf.DeviceSpec.from_string(device).task}/{short}"
