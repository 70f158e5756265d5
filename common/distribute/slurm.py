"""Clusters built from Slurm: `srun -n K python -m <program>.train [flags]` runs the program as the K tasks of a
TensorFlow cluster, every task the same command, with no TF_CONFIG to write (docs/multi_host.md, "Under Slurm").

When (`start`): inside a Slurm job step of at least 2 tasks (`SLURM_STEP_NUM_TASKS` >= 2), for a program with a cluster
shape (`common.settings.programs.CLUSTER_SHAPES`), when TF_CONFIG is not set: TF_CONFIG, when set, wins; one task (a
plain run in an sbatch script) runs as it does anywhere else. The tasks, by Slurm's task rank (`SLURM_PROCID`):

  multi_worker      every task a "worker" (worker 0, task 0, is the chief);
  client_server     task 0 the "chief" (the client), tasks 1..K-1 the "worker"s (servers);
  parameter_server  task 0 the "chief" (the coordinator), tasks 1..P the "ps" tasks (P = --ps), the rest the
                    "worker"s; fewer than P + 2 tasks is refused in one line before any training.

How: TensorFlow's own `tf.distribute.cluster_resolver.SlurmClusterResolver` reads `SLURM_PROCID` and the step's
`SLURM_STEP_NUM_TASKS`, `SLURM_STEP_NODELIST` (expanding Slurm's host-list syntax, e.g. "node[01-04,07]") and
`SLURM_STEP_TASKS_PER_NODE` ("3(x2),2"), and splits the tasks into the jobs above in rank order; the library does
this, so this module does not parse Slurm's syntax again. Its defaults do not work on machines without GPUs (it runs
`nvidia-smi`; with 0 GPUs per node `cluster_spec()` divides by zero: tensorflow/tensorflow#56894), and GPUs are not
its to hand out here, so it is given gpus_per_node=<most tasks on a node>, gpus_per_task=1 and auto_set_gpu=False:
each task keeps the GPUs Slurm gave it (`--gpus-per-task`). The resolver numbers tasks host by host in the sorted
order of the host names, which is Slurm's own order (and so its block distribution, srun's default) unless names
sort differently as text than as Slurm lists them ("node9" before "node10"): the resolver's addresses are checked
against Slurm's order and, where they differ, the same jobs are laid out in Slurm's order instead. A task that is
not where that layout puts it (srun --distribution=cyclic with several tasks on a node) is refused in one line.
The cluster becomes this process's TF_CONFIG, which every part of the programs already reads
(`common.distribute.cluster`, `common.distribute.parameter_server`).

Ports: task t of a node listens on base + t (TensorFlow's server) and base + n + t (the watch below; n the most
tasks on a node), with base = 12000 + ((job id x 31 + restart count x 7 + step id) mod S) x 2n, S the slots of 2n
ports in 12000..31999 (below Linux's ephemeral ports): a job resumed on the same nodes (the next job id, a requeued
job's next restart count, the next step of the same job) does not reuse the ports of the run before it, while
some of its processes may still be ending (S > 31 slots: up to 312 tasks on a node). A task whose port another process listens on is refused in one line.

What the local launcher (`common.launch`) handles holds here too, through `common.base.peers` (every task watches
every other over TCP): the chief waits until every server accepts connections (`wait_for_servers`; srun starts all
tasks at once); servers exit when the chief ends (status 0 when it finished); a lost task (killed, crashed, its
node failed) stops every other task of the step with one "error: ..." line, printed by the lowest-ranked survivor;
a task that failed with its own error line makes the others exit without another. The exception, as under the
launcher: a lost "worker" of a parameter_server program is one "note: ..." line of the chief, and the run goes on
(the coordinator reruns its functions on the other workers); the loss of a "ps" task the program reports itself.
"""

import contextlib
import dataclasses
import json
import os
import subprocess
import sys
import threading
import time
from typing import Any, Dict, Iterator, List, Optional, Tuple

from absl import logging
import tensorflow as tf
# The host-list and tasks-per-node parsers of TensorFlow's Slurm resolver, to lay the jobs out in Slurm's order too.
from tensorflow.python.distribute.cluster_resolver import slurm_cluster_resolver as tf_slurm

from common.base import errors
from common.base import peers as peers_lib
from common.base import ports
from common.distribute import cluster

# Seconds every task may take to start, from another task's start: to accept connections to its watch and, for a
# server, to its TensorFlow server (srun starts the tasks at once; importing TensorFlow takes seconds).
START_SECONDS = 300.0
PORT_LOW, PORT_HIGH = 12000, 32000
MANAGER = "slurm"
# The cluster shapes (`common.settings.programs.CLUSTER_SHAPES`) a Slurm job step is made into.
SHAPES = ("multi_worker", "client_server", "parameter_server")
# Seconds a task waits, when another says it failed, for a lost task to be reported too: a task that stops because
# a third was lost says "failed", and the lost one's report must not be missed for it.
FAILED_GRACE_SECONDS = 1.0
# Seconds a task whose run failed with a TensorFlow runtime error waits, before it reports that error, for the watch
# to report a lost task: a killed peer resets the collective's connections at once, and the error this task's run
# raises from that must not win the race against the one "error: ... was lost" line (the watch ends the process).
LOST_GRACE_SECONDS = 5.0


def step_tasks() -> int:
  """The tasks of this process's Slurm job step (`SLURM_STEP_NUM_TASKS`), 0 outside a step."""
  try:
    return int(os.environ.get("SLURM_STEP_NUM_TASKS") or 0)
  except ValueError:
    return 0


def jobs(shape: str, tasks: int, ps: int, program: str) -> Dict[str, int]:
  """{job name: tasks} of a program of cluster `shape` on `tasks` Slurm tasks (the module docstring's layout).

  Args:
    shape: "multi_worker", "client_server" or "parameter_server".
    tasks: the step's tasks, at least 2.
    ps: parameter-server tasks (--ps), for "parameter_server".
    program: the program's name, for the message.

  Raises:
    ValueError: one line, when `tasks` do not fit `shape` (fewer than ps + 2 for "parameter_server").
  """
  if shape == "multi_worker":
    return {"worker": tasks}
  if shape == "client_server":
    return {"chief": 1, "worker": tasks - 1}
  if tasks < ps + 2:
    other = f", or --ps={tasks - 2}" if tasks >= 3 else ""
    raise ValueError(f"{program} under Slurm runs task 0 as the chief, the next --ps={ps} task(s) as parameter "
                     f"servers and the rest as workers: it needs at least {ps + 2} tasks, and this job step has "
                     f"{tasks} (srun -n {ps + 2} or more{other}).")
  return {"chief": 1, "ps": ps, "worker": tasks - 1 - ps}


def _slurm_layout() -> List[Tuple[str, int]]:
  """(host, task of that host) of every task in rank order, as Slurm places them by default (block distribution:
  the step's hosts in Slurm's order, each with its tasks)."""
  hosts = tf_slurm.expand_hostlist(os.environ.get("SLURM_STEP_NODELIST", ""))
  counts = tf_slurm.expand_tasks_per_node(os.environ.get("SLURM_STEP_TASKS_PER_NODE", ""))
  if len(hosts) != len(counts):
    raise ValueError(f"SLURM_STEP_NODELIST names {len(hosts)} host(s) but SLURM_STEP_TASKS_PER_NODE {len(counts)}.")
  return [(host, t) for host, count in zip(hosts, counts) for t in range(count)]


def _step_id() -> str:
  return os.environ.get("SLURM_STEP_ID", os.environ.get("SLURM_STEPID", "0"))


def _most_per_node() -> int:
  """The most tasks of the step on one node."""
  return max(tf_slurm.expand_tasks_per_node(os.environ.get("SLURM_STEP_TASKS_PER_NODE", "")))


def port_base() -> int:
  """The first port of this job step on every node (the module docstring's formula), from `SLURM_JOB_ID`,
  `SLURM_RESTART_COUNT` (0 when unset), `SLURM_STEP_ID` and `SLURM_STEP_TASKS_PER_NODE`."""
  stride = 2 * _most_per_node()
  slots = (PORT_HIGH - PORT_LOW) // stride
  key = (int(os.environ.get("SLURM_JOB_ID") or 0) * 31 + int(os.environ.get("SLURM_RESTART_COUNT") or 0) * 7 +
         int(_step_id()))
  return PORT_LOW + (key % slots) * stride


def resolve(job_sizes: Dict[str, int], base: int) -> Tuple[Dict[str, List[str]], Tuple[str, int]]:
  """The cluster of this job step and this task in it, from the Slurm variables (the module docstring's "How").

  Args:
    job_sizes: {job name: tasks} (`jobs`).
    base: the step's first port on every node (`port_base`).

  Returns:
    ({job name: ["host:port", ...]}, (this task's job name, its index in the job)).

  Raises:
    ValueError: one line, when this task is not on the host or at the place on it that the layout gives it.
  """
  resolver = tf.distribute.cluster_resolver.SlurmClusterResolver(
      jobs=dict(job_sizes), port_base=base, gpus_per_node=_most_per_node(), gpus_per_task=1, auto_set_gpu=False)
  spec = {k: list(v) for k, v in resolver.cluster_spec().as_dict().items()}
  task = resolver.get_task_info()
  layout = _slurm_layout()
  in_slurm_order = [f"{host}:{base + t}" for host, t in layout]
  names = sorted(job_sizes)  # The resolver's order of the jobs.
  rank = int(os.environ["SLURM_PROCID"])
  if [a for name in names for a in spec[name]] != in_slurm_order:
    logging.info("The Slurm hosts' names sort differently as text than in Slurm's order (%s): the tasks are laid "
                 "out in Slurm's order.", os.environ.get("SLURM_STEP_NODELIST"))
    spec, first = {}, 0
    for name in names:
      spec[name] = in_slurm_order[first:first + job_sizes[name]]
      if first <= rank < first + job_sizes[name]:
        task = (name, rank - first)
      first += job_sizes[name]
  host, local = layout[rank]
  node, local_id = os.environ.get("SLURMD_NODENAME"), os.environ.get("SLURM_LOCALID")
  if (node is not None and node != host) or (local_id is not None and int(local_id) != local):
    raise ValueError(f"Slurm task {rank} runs on {node} as its task {local_id}, not on {host} as its task {local}: "
                     "the cluster is laid out in srun's default block distribution; drop --distribution "
                     "(or give --distribution=block).")
  return spec, (task[0], int(task[1]))


@dataclasses.dataclass
class Job:
  """This task of a Slurm job step run as a TensorFlow cluster (`start`).

  Attributes:
    shape: the program's cluster shape.
    rank: this task's Slurm rank (`SLURM_PROCID`).
    tasks: (job name, index) of every task, by rank.
    addresses: the TensorFlow server address "host:port" of every task, by rank.
    job_id, step_id: Slurm's.
    peers: the watch of the other tasks (`common.base.peers`).
  """
  shape: str
  rank: int
  tasks: List[Tuple[str, int]]
  addresses: List[str]
  job_id: str
  step_id: str
  peers: Optional[peers_lib.Peers] = None
  _exiting: threading.Lock = dataclasses.field(default_factory=threading.Lock, repr=False)

  @property
  def task(self) -> Tuple[str, int]:
    """(job name, index) of this task."""
    return self.tasks[self.rank]

  @property
  def serves(self) -> bool:
    """True for a task that only serves (every task but the chief of a client_server or parameter_server program)."""
    return self.shape != "multi_worker" and self.rank != 0

  def name(self, rank: int) -> str:
    """A task as the messages name it: "worker 1 (Slurm task 2 on node03)"."""
    kind, index = self.tasks[rank]
    return f"{kind} {index} (Slurm task {rank} on {self.addresses[rank].rsplit(':', 1)[0]})"

  def server_addresses(self) -> List[str]:
    """The TensorFlow servers the chief of a client_server or parameter_server program connects to."""
    return [a for (kind, _), a in zip(self.tasks, self.addresses) if kind != "chief"]

  def on_end(self, rank: int, how: str) -> None:
    """What this task does when task `rank` ends `how` (`common.base.peers`; the module docstring's rules)."""
    kind = self.tasks[rank][0]
    if how == peers_lib.DONE:
      if self.serves and rank == 0:  # The chief finished: nothing is left to serve.
        self._exit(0, None, f"The chief has finished; {self.name(self.rank)} stops serving.")
      return
    if self.shape == "parameter_server" and kind == "ps":
      return  # The coordinator's remote calls fail, and the program reports the lost parameter server itself.
    if self.shape == "parameter_server" and kind == "worker":
      if not self.serves:
        left = sum(1 for r, (k, _) in enumerate(self.tasks) if k == "worker" and r not in self.peers.ended)
        then = (f"the other {left} worker(s) go on (the coordinator reruns its functions on them)" if left else
                "no worker is left: the coordinator waits for one to come back (--worker_recovery_seconds)")
        errors.print_line(f"note: {self.name(rank)} {_describe(how)}; {then}.")
      return
    if how == peers_lib.FAILED:  # It printed its own error line, or it stopped because another task was lost.
      time.sleep(FAILED_GRACE_SECONDS)
      self._exit(1, None, f"{self.name(rank)} failed; {self.name(self.rank)} stops too.")
    survivors = [r for r in range(len(self.tasks)) if r not in self.peers.ended]
    message = None
    if min(survivors) == self.rank:
      message = (f"{self.name(rank)} {_describe(how)}; the job step's {len(survivors)} other task(s) stop. Rerun "
                 "the same command with the same --model_dir to resume from the last checkpoint.")
    self._exit(1, message, f"{self.name(rank)} {_describe(how)}; {self.name(self.rank)} stops.")

  def _exit(self, code: int, message: Optional[str], note: str) -> None:
    """Ends this process at once (TensorFlow's servers cannot be stopped, and a collective may be waiting for the
    task that is gone), `message` as its one "error: ..." line when given, else `note` logged; once, whichever
    watcher thread comes first."""
    if not self._exiting.acquire(blocking=False):
      threading.Event().wait()  # Another thread is ending the process.
    if message:
      errors.print_line(f"error: {message}")
    else:
      logging.info("%s", note)
    self.peers.end(peers_lib.DONE if code == 0 else peers_lib.FAILED)
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)  # pylint: disable=protected-access


def _describe(how: str) -> str:
  if how == peers_lib.ABSENT:
    return f"did not start within {START_SECONDS:.0f} s"
  if how == peers_lib.FAILED:
    return "failed"
  return "was lost (its process ended without finishing: killed, crashed, or its node failed)"


# This process's Slurm task, once `start` has made it; None outside Slurm.
ACTIVE: Optional[Job] = None


def start(program: str, shape: str, ps: int = 1) -> Optional[Job]:
  """Makes this process a task of the cluster its Slurm job step describes, when it does (the module docstring's
  "When"): sets TF_CONFIG, starts watching the other tasks, and returns the `Job` (also kept as `ACTIVE`); else None.

  Args:
    program: the program's name (messages).
    shape: its cluster shape (`common.settings.programs.CLUSTER_SHAPES`); "none" never makes a cluster.
    ps: parameter-server tasks, for a "parameter_server" program (its --ps).

  Raises:
    errors.ReportedByAnotherTaskError: the task count does not fit `shape`, in a task other than task 0 (task 0 raises the
      ValueError: the job's one line).
    ValueError: one line: the task count does not fit `shape` (task 0), this task is not where the layout puts it,
      or another process listens on one of this task's ports.
  """
  global ACTIVE
  tasks = step_tasks()
  if shape not in SHAPES or tasks < 2 or (os.environ.get(cluster.TF_CONFIG) or "").strip():
    return None
  rank = int(os.environ["SLURM_PROCID"])
  try:
    sizes = jobs(shape, tasks, ps, program)
  except ValueError as e:
    if rank:
      raise errors.ReportedByAnotherTaskError(str(e)) from None
    raise
  base = port_base()
  spec, task = resolve(sizes, base)
  ordered = [(name, i) for name in sorted(sizes) for i in range(sizes[name])]
  addresses = [spec[name][i] for name, i in ordered]
  per_node = _most_per_node()
  watch = [f"{a.rsplit(':', 1)[0]}:{int(a.rsplit(':', 1)[1]) + per_node}" for a in addresses]
  job = Job(shape=shape, rank=rank, tasks=ordered, addresses=addresses, job_id=os.environ.get("SLURM_JOB_ID", "?"),
            step_id=_step_id())
  assert job.task == task, (job.task, task)
  host, port = addresses[rank].rsplit(":", 1)
  taken = (f"port {{}} of {host} is taken by another process (this Slurm job step's ports start at {base}); end "
           "that process, or rerun as a new job step.")
  if not ports.bindable(int(port)):
    raise ValueError(taken.format(port))
  job.peers = peers_lib.Peers(rank, watch, job.on_end, START_SECONDS)
  try:
    job.peers.start()
  except OSError:
    raise ValueError(taken.format(watch[rank].rsplit(":", 1)[1])) from None
  os.environ[cluster.TF_CONFIG] = json.dumps({"cluster": spec, "task": {"type": task[0], "index": task[1]}})
  ACTIVE = job
  logging.info("Slurm job %s step %s: %d task(s), this one (Slurm task %d) is %s %d; the cluster: %s", job.job_id,
               job.step_id, tasks, rank, task[0], task[1], json.dumps(spec))
  return job


@contextlib.contextmanager
def task_of_step(program: str, shape: str, ps: int = 1) -> Iterator[Optional[Job]]:
  """`start`, then the body (the run), then this task's end told to the others: "done" when the body returned,
  "failed" when it raised (it reports its own error; a TensorFlow runtime error after `LOST_GRACE_SECONDS`, in which
  the watch of a lost task ends the process with its own line). Outside a Slurm cluster it only runs the body.

  Raises:
    As `start`, and whatever the body raises.
  """
  job = start(program, shape, ps)
  try:
    yield job
  except BaseException as e:
    if job is not None:
      if isinstance(e, tf.errors.OpError):  # Perhaps a peer was lost: its watch reports it, and ends the process.
        time.sleep(LOST_GRACE_SECONDS)
      job.peers.end(peers_lib.FAILED)
    raise
  if job is not None:
    job.peers.end(peers_lib.DONE)


def wait_for_servers() -> None:
  """In the chief of a Slurm cluster of servers (client_server, parameter_server): returns once every server accepts
  connections; at once in any other process (outside Slurm the servers are started first, docs/multi_host.md;
  MultiWorkerMirroredStrategy waits for its workers itself).

  Raises:
    ValueError: one line, when a server does not listen within START_SECONDS.
  """
  if ACTIVE is None or ACTIVE.serves or ACTIVE.shape == "multi_worker":
    return
  failure = ports.wait_listening(ACTIVE.server_addresses(), START_SECONDS)
  if failure:
    raise ValueError(f"{failure} Check the Slurm job's other tasks' output.")


def _slurm_version() -> Optional[str]:
  try:
    return subprocess.run(["scontrol", "--version"], capture_output=True, text=True, check=True,
                          timeout=30).stdout.strip() or None
  except (OSError, subprocess.SubprocessError):
    return None


def manager(spec: Dict[str, Any]) -> Dict[str, Any]:
  """The run record's `environment.cluster_manager` of a run on the cluster `spec` ({job name: [addresses], ...}):
  {"name": "slurm", "version", "job_id", "step_id", "tasks": [{"type", "index", "slurm_task", "host"}, ...]} under
  Slurm; {"name": "in_process"} for a cluster a program started in its own process; else {"name": "TF_CONFIG"}, with
  "tasks" [{"type", "index", "host"}, ...] read from `spec`."""
  if ACTIVE is not None:
    return {"name": MANAGER, "version": _slurm_version(), "job_id": ACTIVE.job_id, "step_id": ACTIVE.step_id,
            "tasks": [{"type": kind, "index": index, "slurm_task": rank, "host": address.rsplit(":", 1)[0]}
                      for rank, ((kind, index), address) in enumerate(zip(ACTIVE.tasks, ACTIVE.addresses))]}
  jobs_ = {k: v for k, v in spec.items() if isinstance(v, list)}
  return {"name": "in_process" if spec.get("in_process") else cluster.TF_CONFIG,
          "tasks": [{"type": kind, "index": i, "host": address.rsplit(":", 1)[0]}
                    for kind in sorted(jobs_) for i, address in enumerate(jobs_[kind])]}
