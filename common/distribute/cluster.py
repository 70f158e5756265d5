"""TensorFlow's distributed runtime for the programs: TF_CONFIG, multi-worker data parallel, and the
model-parallel cluster.

A process is part of a cluster when the environment variable TF_CONFIG holds TensorFlow's usual JSON
(`tf.distribute.cluster_resolver.TFConfigClusterResolver`), e.g. on two machines

  TF_CONFIG='{"cluster": {"worker": ["host0:12345", "host1:12345"]}, "task": {"type": "worker", "index": 0}}'

Every process runs the same command; only "task" differs. Two shapes (docs/multi_host.md):

  data parallel   every task is a "worker" running the program under
                  `tf.distribute.MultiWorkerMirroredStrategy` (collective all-reduce over gRPC); worker 0
                  is the chief (it alone writes checkpoints, the run record and the exported weights).
  model parallel  the "worker" tasks only serve (`serve`: a `tf.distribute.Server` that blocks); the
                  "chief" task runs the program as a client (`connect`:
                  `tf.config.experimental_connect_to_cluster`) and places layer j of a group on worker
                  j's device, so layers train on different machines and the per-epoch weight copy goes
                  over the network.

`python -m common.launch` starts such a cluster on one machine (loopback ports) for tests; under Slurm
(`srun -n K`) `common.distribute.slurm` writes each task's TF_CONFIG from the job step.
"""

import json
import os
import signal
import sys
import time
from typing import Any, Callable, Dict, List, NoReturn, Optional, Tuple

from absl import logging
import tensorflow as tf

from common.distribute import devices as devices_lib

TF_CONFIG = "TF_CONFIG"
# Test hook: "<task type>:<task index>:<K>" makes that task ("local:0:K" outside a cluster) SIGKILL
# itself right after its K-th checkpoint (counted in the process, saved or not), like a lost machine.
# A task that writes no checkpoints (not the chief) first waits until the chief's K-th of this process
# is on disk, so the checkpoint a rerun resumes from does not depend on which task was faster.
KILL_ENV = "SDAE_TEST_KILL_AFTER_CHECKPOINT"
# Seconds the hook of a non-chief task waits for the chief's checkpoint before it kills anyway.
KILL_WAIT_SECONDS = 120.0


def tf_config() -> Optional[Dict[str, Any]]:
  """The parsed TF_CONFIG, or None when it is unset or empty (a single-process run).

  Raises:
    ValueError: one line, when TF_CONFIG is not JSON with a "cluster" holding a "worker" list and a
      "task" {"type", "index"} naming one of the cluster's tasks.
  """
  raw = os.environ.get(TF_CONFIG, "").strip()
  if not raw:
    return None
  try:
    value = json.loads(raw)
    cluster, task = value["cluster"], value["task"]
    workers = cluster["worker"]
    kind, index = task["type"], int(task["index"])
  except (ValueError, KeyError, TypeError) as e:
    raise ValueError(f"TF_CONFIG must be JSON like {{\"cluster\": {{\"worker\": [\"host:port\", ...]}}, "
                     f"\"task\": {{\"type\": \"worker\", \"index\": 0}}}}: {e!r}") from None
  if not isinstance(workers, list) or not workers:
    raise ValueError("TF_CONFIG's cluster must list at least one worker address (\"host:port\").")
  if kind not in cluster or not 0 <= index < len(cluster[kind]):
    raise ValueError(f"TF_CONFIG's task {kind}:{index} is not in its cluster {sorted(cluster)}.")
  return value


def task() -> Optional[Tuple[str, int]]:
  """(task type, task index) of this process from TF_CONFIG, or None outside a cluster."""
  config = tf_config()
  return None if config is None else (config["task"]["type"], int(config["task"]["index"]))


def _set_threads(num_devices: int, threads_per_device: int) -> None:
  """Intra-op threads per device, inter-op threads one per device but at least 2 (a step and the
  collectives it waits for run side by side); must precede any TensorFlow call."""
  tf.config.threading.set_intra_op_parallelism_threads(threads_per_device)
  tf.config.threading.set_inter_op_parallelism_threads(max(num_devices, 2))


def multi_worker_strategy(num_devices: int, threads_per_device: int
                          ) -> Tuple[tf.distribute.MultiWorkerMirroredStrategy, devices_lib.DeviceSetup]:
  """`tf.distribute.MultiWorkerMirroredStrategy` from TF_CONFIG, created before anything starts TensorFlow.

  Each worker contributes its local devices: its GPUs (the first `num_devices`), or on a machine without
  GPUs its one CPU device (MultiWorkerMirroredStrategy makes one CPU replica per worker; the CPU is not
  split into logical devices), with `threads_per_device` intra-op threads. The all-reduce is the
  strategy's collective (ring on CPU, NCCL on GPU: `CommunicationImplementation.AUTO`).

  Returns:
    (strategy, DeviceSetup naming every replica's device in the cluster, with the cluster in `cluster`).

  Raises:
    ValueError: on a CPU-only worker when num_devices != 1, or with fewer GPUs than num_devices.
  """
  config = tf_config()
  gpus = tf.config.list_physical_devices("GPU")
  if gpus:
    if num_devices > len(gpus):
      raise ValueError(f"--num_devices={num_devices} per worker but this worker has {len(gpus)} GPU(s).")
    tf.config.set_visible_devices(gpus[:num_devices], "GPU")
  elif num_devices != 1:
    raise ValueError(f"--num_devices={num_devices} per worker, but on a CPU-only machine "
                     "MultiWorkerMirroredStrategy uses one CPU replica per worker: use --num_devices=1 "
                     "(and --threads_per_device for more cores per worker).")
  _set_threads(num_devices, threads_per_device)
  strategy = tf.distribute.MultiWorkerMirroredStrategy(
      communication_options=tf.distribute.experimental.CommunicationOptions(
          implementation=tf.distribute.experimental.CommunicationImplementation.AUTO))
  names = tuple(strategy.extended.worker_devices)
  workers = config["cluster"]["worker"]
  all_names = tuple(n.replace(f"/task:{config['task']['index']}/", f"/task:{t}/")
                    for t in range(len(workers)) for n in names)
  setup = devices_lib.DeviceSetup(
      all_names, "GPU" if gpus else "CPU", tf.config.threading.get_intra_op_parallelism_threads(),
      tf.config.threading.get_inter_op_parallelism_threads(),
      cluster=dict(config["cluster"], task=dict(config["task"]), replicas=strategy.num_replicas_in_sync))
  logging.info("MultiWorkerMirroredStrategy: worker %d of %d, %d replica(s) in sync: %s",
               config["task"]["index"], len(workers), strategy.num_replicas_in_sync, ", ".join(all_names))
  return strategy, setup


def serve(num_devices: int, threads_per_device: int) -> NoReturn:
  """Runs this task's `tf.distribute.Server` with `num_devices` CPU devices (or GPUs) and blocks forever.

  The model-parallel client (`connect`) places layers, data and computation on it. Stop it with a
  signal (the launcher does so when the client has finished); under Slurm the process ends when the chief
  does (`common.distribute.slurm`: it watches the other tasks).
  """
  config = tf_config()
  kind, index = task()
  session = tf.compat.v1.ConfigProto(device_count={"CPU": num_devices},
                                     intra_op_parallelism_threads=threads_per_device,
                                     inter_op_parallelism_threads=max(num_devices, 2))
  server = tf.distribute.Server(tf.train.ClusterSpec(config["cluster"]), job_name=kind, task_index=index,
                                config=session, start=True)
  logging.info("Serving %s:%d at %s with %d device(s), %d intra-op thread(s) each; waiting for the client.",
               kind, index, server.target, num_devices, threads_per_device)
  server.join()
  sys.exit(0)  # join() does not return.


def connect(num_devices: int) -> devices_lib.DeviceSetup:
  """Connects this process (the client, task "chief") to the cluster's workers.

  `tf.config.experimental_connect_to_cluster(resolver, make_master_device_default=False)`: ops without
  a device scope stay on this process; ops under `tf.device("/job:worker/replica:0/task:t/...")` run on
  worker t.

  Args:
    num_devices: devices used on each worker (its first GPUs, else its CPU devices).

  Returns:
    DeviceSetup whose names are worker 0's devices, then worker 1's, ...: the schedule's devices.

  Raises:
    ValueError: a worker has fewer than `num_devices` devices.
  """
  config = tf_config()
  kind, index = task()
  resolver = tf.distribute.cluster_resolver.TFConfigClusterResolver()
  tf.config.experimental_connect_to_cluster(resolver, job_name=kind, task_index=index,
                                            make_master_device_default=False)
  workers = len(config["cluster"]["worker"])
  available = [d.name for d in tf.config.list_logical_devices()]
  names: List[str] = []
  for t in range(workers):
    prefix = f"/job:worker/replica:0/task:{t}/device:"
    by_index = lambda kind: sorted((n for n in available if n.startswith(prefix + kind)),  # noqa: E731
                                   key=lambda n: int(n.rsplit(":", 1)[1]))
    mine = by_index("GPU:") or by_index("CPU:")
    if len(mine) < num_devices:
      raise ValueError(f"--num_devices={num_devices} per worker but worker {t} has {len(mine)} device(s).")
    names += mine[:num_devices]
  setup = devices_lib.DeviceSetup(tuple(names), "GPU" if "GPU:" in names[0] else "CPU", -1, -1,
                                  cluster=dict(config["cluster"], task=dict(config["task"])))
  logging.info("Connected to %d worker(s): %s", workers, ", ".join(names))
  return setup


def serve_or_connect(num_devices: int, threads_per_device: int) -> devices_lib.DeviceSetup:
  """Model parallel on a cluster: a "worker" task serves (`serve`, never returns); the "chief" task
  connects (`connect`) and gets the workers' devices.

  Raises:
    ValueError: TF_CONFIG's cluster has no "chief" task (no client would drive the workers).
  """
  if "chief" not in tf_config()["cluster"]:
    raise ValueError("model_parallel on a cluster needs a \"chief\" task in TF_CONFIG's cluster, the client that "
                     "runs the schedule on the workers (docs/multi_host.md).")
  if task()[0] != "chief":
    serve(num_devices, threads_per_device)
  return connect(num_devices)


def client_device() -> str:
  """This process's own CPU device in the cluster, e.g. "/job:chief/replica:0/task:0/device:CPU:0"."""
  kind, index = task()
  return f"/job:{kind}/replica:0/task:{index}/device:CPU:0"


def fault_hook_from_environment() -> Optional[Callable[[Any], None]]:
  """The `lifecycle.start` on_checkpoint hook the KILL_ENV test hook asks for in this process, or None."""
  spec = os.environ.get(KILL_ENV)
  if not spec:
    return None
  kind, index, count = spec.split(":")
  if task() != (kind, int(index)) and not (task() is None and kind == "local"):
    return None
  calls = [0]

  def kill(run):
    calls[0] += 1
    if calls[0] == int(count):
      if not run.checkpoint.chief:
        _wait_for_chief_checkpoint(run.checkpoint, calls[0])
      logging.warning("%s: killing this process (SIGKILL) after checkpoint %d at unix time %.3f.", KILL_ENV,
                      calls[0], time.time())
      os.kill(os.getpid(), signal.SIGKILL)
  return kill


def _checkpoint_number(path: Optional[str]) -> int:
  """N of a checkpoint path ".../ckpt-N", 0 for None."""
  return int(path.rsplit("-", 1)[1]) if path else 0


def _wait_for_chief_checkpoint(checkpoint: Any, count: int) -> None:
  """Waits until TensorFlow's state file in `checkpoint.model_dir` names the chief's `count`-th checkpoint
  since the one this process restored (`checkpoint.restored_from`), or `KILL_WAIT_SECONDS` pass."""
  want = _checkpoint_number(checkpoint.restored_from) + count
  deadline = time.monotonic() + KILL_WAIT_SECONDS
  while time.monotonic() < deadline:
    state = tf.train.get_checkpoint_state(checkpoint.model_dir)
    if state is not None and _checkpoint_number(state.model_checkpoint_path) >= want:
      return
    time.sleep(0.05)
  logging.warning("%s: the chief's checkpoint %d is not in %s after %.0f s; killing anyway.", KILL_ENV, want,
                  checkpoint.model_dir, KILL_WAIT_SECONDS)
