"""The cluster of a "parameter_server" program: `tf.distribute.ParameterServerStrategy` and its tasks.

Three kinds of task (Dean et al. 2012, "Large scale distributed deep networks", section 4.1, as TensorFlow
implements it): "ps" tasks hold the variables, "worker" tasks run the functions that the coordinator (task
"chief") schedules on whichever worker is free (`tf.distribute.coordinator.ClusterCoordinator`). The worker and
ps tasks only serve (`tf.distribute.Server`); the chief runs the program.

  With TF_CONFIG (`python -m common.launch --workers=W --ps=P <program>`, or real machines:
  docs/multi_host.md) every task runs the same command; the cluster must have a "chief" and at least one "ps"
  task. Without TF_CONFIG the program starts the cluster in its own process (`in_process_cluster`): W =
  --num_devices worker servers and one ps server on loopback ports the kernel picks (port 0), this process
  the chief. TensorFlow's servers have no `stop()`: they live until the process ends.
"""

import os
from typing import Any, Dict, List, Tuple

from absl import logging
import tensorflow as tf

from common.base import ports
from common.distribute import cluster
from common.distribute import devices as devices_lib

# The coordinator's own device in either kind of cluster: finetuning and evaluation run there.
COORDINATOR_DEVICE = "/job:chief/replica:0/task:0/device:CPU:0"
# The in-process servers, referenced for the process's lifetime (TensorFlow offers no way to stop them).
_SERVERS: List[tf.distribute.Server] = []


def worker_device(index: int) -> str:
  """The CPU device of worker task `index`, e.g. "/job:worker/replica:0/task:1/device:CPU:0"."""
  return f"/job:worker/replica:0/task:{index}/device:CPU:0"


def _session(intra_op_threads: int, inter_op_threads: int) -> tf.compat.v1.ConfigProto:
  return tf.compat.v1.ConfigProto(intra_op_parallelism_threads=intra_op_threads,
                                  inter_op_parallelism_threads=inter_op_threads)


def in_process_cluster(workers: int, ps: int, intra_op_threads: int) -> Dict[str, List[str]]:
  """Starts `workers` worker servers and `ps` ps servers in this process on loopback ports the kernel picks.

  Each server gets `intra_op_threads` intra-op threads and workers + 1 inter-op threads (with 1 inter-op
  thread the coordinator's functions hang in TensorFlow 2.21; workers + 1 does not).

  Returns:
    The cluster spec {"worker": ["127.0.0.1:port", ...], "ps": [...], "chief": ["127.0.0.1:port"]}. The servers
    bind port 0 and report the port they got; the chief (this process) listens when the strategy connects, on a
    port free now (`common.base.ports.free_ports`): the other tasks must know it, as a checkpoint's save on a
    parameter server reads the file name from the chief.
  """
  session = _session(intra_op_threads, max(workers + 1, 2))
  spec: Dict[str, List[str]] = {"worker": [], "ps": []}
  for job, count in (("worker", workers), ("ps", ps)):
    for index in range(count):
      server = tf.distribute.Server(tf.train.ClusterSpec({job: {index: f"{ports.LOOPBACK}:0"}}), job_name=job,
                                    task_index=index, protocol="grpc", config=session, start=True)
      _SERVERS.append(server)
      spec[job].append(server.target.split("://", 1)[-1])
  spec["chief"] = [f"{ports.LOOPBACK}:{ports.free_ports(1)[0]}"]
  return spec


def check_tf_config(config: Dict[str, Any], program: str, num_devices: int) -> None:
  """Raises ValueError (one line) unless TF_CONFIG's cluster can run a parameter-server program.

  Args:
    config: the parsed TF_CONFIG (`common.distribute.cluster.tf_config`).
    program: the program's name, for the message.
    num_devices: --num_devices: 1 in a TF_CONFIG cluster (a worker contributes its CPU device).
  """
  spec = config["cluster"]
  if not spec.get("ps"):
    raise ValueError(f"{program} keeps its variables on parameter servers: TF_CONFIG's cluster needs at least one "
                     "\"ps\" task (e.g. \"ps\": [\"host2:12345\"]; docs/multi_host.md).")
  if len(spec.get("chief", ())) != 1:
    raise ValueError(f"{program} needs exactly one \"chief\" task in TF_CONFIG's cluster, the coordinator that "
                     "schedules the workers' functions (docs/multi_host.md).")
  kind = config["task"]["type"]
  if kind not in ("chief", "worker", "ps"):
    raise ValueError(f"{program} has no task of type {kind!r}: TF_CONFIG's task must be chief, worker or ps.")
  if num_devices != 1:
    raise ValueError(f"--num_devices={num_devices}: in a TF_CONFIG cluster each worker task is one worker on its "
                     "CPU device; use --num_devices=1 (add worker tasks for more workers, --threads_per_device for "
                     "more cores per worker).")


def strategy(program: str, num_devices: int, threads_per_device: int, thread_pool: str
             ) -> Tuple[tf.distribute.ParameterServerStrategy, devices_lib.DeviceSetup]:
  """The parameter-server strategy of this process, the chief; a worker or ps task serves and never returns.

  Without TF_CONFIG the cluster is started here (`in_process_cluster`) with W = `num_devices` workers and one
  ps task, the intra-op pool of each server `threads_per_device` threads ("per_device") or W x that ("shared").

  Args:
    program: the program's name (messages).
    num_devices: W without TF_CONFIG; must be 1 with it.
    threads_per_device: intra-op threads of each worker.
    thread_pool: "per_device" or "shared" (`common.distribute.devices.THREAD_POOLS`).

  Returns:
    (strategy, DeviceSetup naming the workers' devices, its `cluster` the cluster spec plus this task and
    "in_process").

  Raises:
    ValueError: a TF_CONFIG this program cannot run on (`check_tf_config`).
  """
  os.environ.setdefault("GRPC_FAIL_FAST", "use_caller")  # TensorFlow's advice for every task of such a cluster.
  config = cluster.tf_config()
  in_process = config is None
  if not in_process:
    check_tf_config(config, program, num_devices)
    if config["task"]["type"] != "chief":
      cluster.serve(1, threads_per_device)
  intra = threads_per_device
  if in_process:
    intra = devices_lib.intra_op_threads(num_devices, threads_per_device, thread_pool)
  try:  # This process's own pool (finetuning, evaluation); fails only when TensorFlow has already started.
    tf.config.threading.set_intra_op_parallelism_threads(intra)
  except RuntimeError:
    pass
  spec = in_process_cluster(num_devices, 1, intra) if in_process else config["cluster"]
  resolver = tf.distribute.cluster_resolver.SimpleClusterResolver(
      tf.train.ClusterSpec(spec), task_type="chief", task_id=0, rpc_layer="grpc")
  ps_strategy = tf.distribute.ParameterServerStrategy(resolver)
  workers = len(spec["worker"])
  # The servers of a TF_CONFIG cluster are other processes: their inter-op pools are unknown here (-1).
  setup = devices_lib.DeviceSetup(
      tuple(worker_device(i) for i in range(workers)), "CPU", intra, max(workers + 1, 2) if in_process else -1,
      cluster=dict(spec, task={"type": "chief", "index": 0}, in_process=in_process), thread_pool=thread_pool)
  logging.info("ParameterServerStrategy%s: %d worker(s) %s, %d ps task(s) %s; this process coordinates.",
               " (in-process cluster on loopback)" if in_process else "", workers, ", ".join(spec["worker"]),
               len(spec["ps"]), ", ".join(spec["ps"]))
  return ps_strategy, setup
