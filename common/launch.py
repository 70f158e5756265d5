"""Runs a training program as a TensorFlow cluster of local processes (loopback gRPC), for tests and trials.

Usage: python -m common.launch [--workers=N] [--ps=P] <program>.train [the program's flags...]

Only the programs that use several workers are accepted (`PROGRAMS`: those whose registry entry,
`common.settings.programs`, has a cluster shape); any other would run once per worker, every copy doing the same work.

  python -m common.launch --workers=2 data_parallel.train --batch_size=200 --model_dir=/tmp/dp
  python -m common.launch --workers=2 model_parallel.train --hidden_units=1000,1000
  python -m common.launch --workers=2 --ps=1 async_data_parallel.train --num_devices=1

Every process runs the same command with its own TF_CONFIG (`common.distribute.cluster`), exactly as on real
machines (docs/multi_host.md): data_parallel gets N "worker" tasks running
`tf.distribute.MultiWorkerMirroredStrategy`; model_parallel gets N "worker" tasks that serve
(`tf.distribute.Server`) plus one "chief" task, the client that runs the schedule on them, started
once every server accepts connections; a parameter-server program (async_data_parallel) gets N "worker" and P
"ps" tasks that serve plus the "chief", its coordinator. The launcher picks free loopback ports, streams every
process's output prefixed with its task ("[worker 1] ..."), and returns the program's exit status (0 when every process succeeded). When any
process dies (or a server exits before the client has finished) the launcher stops all the others
(SIGTERM, then SIGKILL after a grace period) and exits non-zero with one "error: ..." line, so a lost
worker never leaves the others hanging in a collective. The exception is a parameter-server program's worker:
its death is reported in one line and the others go on (the coordinator reruns its functions on them). Rerunning
the same command with the same --model_dir resumes from the chief's last checkpoint.
"""

import ctypes
import importlib.util
import json
import os
import signal
import subprocess
import sys
import threading
import time
from typing import Dict, List, Optional, Sequence, Tuple

from absl import app
from absl import flags

from common.base import ports
from common.settings import programs

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# Programs whose workers only serve while one client process (task "chief") runs the program.
CLIENT_SERVER_PROGRAMS = frozenset(p.module for p in programs.with_cluster("client_server"))
# Programs whose every task runs the program under MultiWorkerMirroredStrategy.
MULTI_WORKER_PROGRAMS = frozenset(p.module for p in programs.with_cluster("multi_worker"))
# Programs whose "worker" and "ps" tasks serve while the "chief" coordinates (ParameterServerStrategy).
PARAMETER_SERVER_PROGRAMS = frozenset(p.module for p in programs.with_cluster("parameter_server"))
# The only programs that use several workers: any other would run once per worker, each doing the same work.
PROGRAMS = CLIENT_SERVER_PROGRAMS | MULTI_WORKER_PROGRAMS | PARAMETER_SERVER_PROGRAMS
MODES = ("auto", "workers", "client_server")
# Seconds between SIGTERM and SIGKILL when stopping processes.
GRACE_SECONDS = 5.0
# Seconds the model-parallel servers may take to start listening before the client is started.
SERVER_START_SECONDS = 300.0
POLL_SECONDS = 0.1

_WORKERS = flags.DEFINE_integer(
    "workers", 2, "Worker processes to start on this machine, each a task of the cluster on a free loopback port.")
_MODE = flags.DEFINE_enum(
    "mode", "auto", MODES,
    "Cluster shape: every task runs the program (workers), N servers plus one client task (client_server), "
    f"or chosen by the program (auto: client_server for {' and '.join(sorted(CLIENT_SERVER_PROGRAMS))}; "
    f"{' and '.join(sorted(PARAMETER_SERVER_PROGRAMS))} always get N workers, --ps servers and a coordinator).")
_PS = flags.DEFINE_integer(
    "ps", None, "Parameter-server tasks of a parameter-server program (default 1; at least 1). Only for "
    f"{' and '.join(sorted(PARAMETER_SERVER_PROGRAMS))}.")
flags.register_validator("workers", lambda n: n is not None and 1 <= n <= 64,
                         "must be an integer in 1..64 (worker processes on this machine)")


class LaunchError(Exception):
  """A problem with the launcher's command line (printed as one line)."""


def cluster_tasks(workers: int, client_server: bool, host: str = "127.0.0.1", ps: int = 0
                  ) -> List[Tuple[str, Dict]]:
  """The tasks to start: [(name, TF_CONFIG dict)]: the workers, then `ps` "ps" tasks, then the client ("chief")
  when `client_server`."""
  picked = ports.free_ports(workers + ps + int(client_server), host)
  cluster = {"worker": [f"{host}:{p}" for p in picked[:workers]]}
  if ps:
    cluster["ps"] = [f"{host}:{p}" for p in picked[workers:workers + ps]]
  if client_server:
    cluster["chief"] = [f"{host}:{picked[-1]}"]
  tasks = [(f"worker {i}", {"cluster": cluster, "task": {"type": "worker", "index": i}}) for i in range(workers)]
  tasks += [(f"ps {i}", {"cluster": cluster, "task": {"type": "ps", "index": i}}) for i in range(ps)]
  if client_server:
    tasks.append(("chief", {"cluster": cluster, "task": {"type": "chief", "index": 0}}))
  return tasks


try:
  _PRCTL = ctypes.CDLL(None).prctl  # Looked up before any fork: the child only calls it.
except (OSError, AttributeError):
  _PRCTL = None


def _die_with_parent() -> None:
  """In the child before exec: SIGKILL it if the launcher dies (Linux prctl PR_SET_PDEATHSIG = 1)."""
  if _PRCTL is not None:
    _PRCTL(1, signal.SIGKILL)


def _describe(code: int) -> str:
  if code < 0:
    try:
      return f"was killed by {signal.Signals(-code).name}"
    except ValueError:
      return f"was killed by signal {-code}"
  return f"exited with status {code}"


class Cluster:
  """The launched processes, their output streams and their shutdown.

  Args:
    program, args: the command every task runs.
    client_server: the tasks other than "chief" only serve.
    workers_may_die: a "worker" task's death is not a failure (a parameter-server program goes on without it).
  """

  def __init__(self, program: str, args: Sequence[str], client_server: bool, workers_may_die: bool = False):
    self.command = [sys.executable, "-m", program, *args]
    self.client_server = client_server
    self.workers_may_die = workers_may_die
    self.lost: List[str] = []  # Workers whose death was tolerated.
    self.names: List[str] = []
    self.procs: List[subprocess.Popen] = []
    self.threads: List[threading.Thread] = []
    self._lock = threading.Lock()
    self._env = dict(os.environ, PYTHONUNBUFFERED="1")
    self._env["PYTHONPATH"] = os.pathsep.join(p for p in (ROOT, self._env.get("PYTHONPATH")) if p)

  def start(self, name: str, tf_config: Dict) -> None:
    """Starts one task of the program with its TF_CONFIG, its output copied with the prefix "[name] "."""
    proc = subprocess.Popen(self.command, env=dict(self._env, TF_CONFIG=json.dumps(tf_config)),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL,
                            start_new_session=True, preexec_fn=_die_with_parent)
    self.names.append(name)
    self.procs.append(proc)
    for stream, out in ((proc.stdout, sys.stdout), (proc.stderr, sys.stderr)):
      thread = threading.Thread(target=self._copy, args=(stream, out, f"[{name}] "), daemon=True)
      thread.start()
      self.threads.append(thread)

  def _copy(self, stream, out, prefix: str) -> None:
    for line in iter(stream.readline, b""):
      text = line.decode(errors="replace").rstrip("\n")
      with self._lock:
        out.write(prefix + text + "\n")
        out.flush()

  def _failure(self) -> Optional[Tuple[int, str]]:
    """(status, message) once a process has failed (or a server has exited at all), else None. A process killed by a
    signal is named before one that exited with an error: when a worker is killed, a peer's collective fails at once
    and it may have exited too by the time both are seen."""
    codes = [p.poll() for p in self.procs]
    for name, code in sorted(zip(self.names, codes), key=lambda task: (task[1] or 0) >= 0):
      server = self.client_server and name != "chief"
      if code is not None and self.workers_may_die and name.startswith("worker"):
        if name not in self.lost:
          self.lost.append(name)
          left = sum(c is None for n, c in zip(self.names, codes) if n.startswith("worker"))
          then = (f"the other {left} worker(s) go on (the coordinator reruns its functions on them)" if left else
                  "no worker is left: the coordinator waits for one to come back (--worker_recovery_seconds)")
          with self._lock:
            print(f"note: {name} {_describe(code)}; {then}.", file=sys.stderr, flush=True)
        continue
      if code is not None and (code != 0 or server):
        running = sum(c is None for c in codes)
        what = "the program" if name == "chief" else name
        return code if code > 0 else 1, f"{what} {_describe(code)}; stopped the other {running} process(es) of the cluster."
    return None

  def wait_listening(self, addresses: Sequence[str]) -> Optional[Tuple[int, str]]:
    """Waits until every "host:port" accepts connections (the servers are up); returns a failure or None."""
    result = ports.wait_listening(addresses, SERVER_START_SECONDS, self._failure, POLL_SECONDS)
    return (1, result) if isinstance(result, str) else result

  def wait(self) -> Tuple[int, Optional[str]]:
    """Waits for the program to end; returns (exit status, None) or (non-zero status, error message)."""
    while True:
      failure = self._failure()
      if failure:
        return failure
      codes = [p.poll() for p in self.procs]
      if all(c == 0 for c in codes) or (self.client_server and codes[-1] == 0):
        return 0, None
      time.sleep(POLL_SECONDS)

  def stop(self) -> None:
    """SIGTERM to every process still running (its whole session), SIGKILL after GRACE_SECONDS."""
    for sig, deadline in ((signal.SIGTERM, GRACE_SECONDS), (signal.SIGKILL, GRACE_SECONDS)):
      alive = [p for p in self.procs if p.poll() is None]
      for p in alive:
        try:
          os.killpg(p.pid, sig)
        except ProcessLookupError:
          pass
      end = time.monotonic() + deadline
      while any(p.poll() is None for p in alive) and time.monotonic() < end:
        time.sleep(POLL_SECONDS)
    for thread in self.threads:
      thread.join(timeout=2.0)


def launch(program: str, args: Sequence[str], workers: int, mode: str = "auto", ps: Optional[int] = None) -> int:
  """Runs `python -m program args...` as a local cluster of `workers` tasks (plus `ps` parameter-server tasks and
  a coordinator for a parameter-server program); returns the exit status.

  Raises:
    LaunchError: `program` is not an importable module, or not one of `PROGRAMS` (the programs that use
      several workers); `ps` below 1 for a parameter-server program, given for another, or a `mode` other
      than auto for a parameter-server program.
  """
  try:
    found = importlib.util.find_spec(program)
  except (ImportError, ValueError):
    found = None
  if found is None:
    raise LaunchError(f"no program module {program!r}; give one like data_parallel.train or model_parallel.train.")
  if program not in PROGRAMS:
    raise LaunchError(f"{program} does not use several workers (each would do the same work); the launcher "
                      f"runs {', '.join(sorted(PROGRAMS))}. Run {program} directly: python -m {program} [flags].")
  parameter_server = program in PARAMETER_SERVER_PROGRAMS
  if parameter_server:
    ps = 1 if ps is None else ps
    if ps < 1:
      raise LaunchError(f"--ps={ps}: {program} keeps its variables on parameter-server tasks; give --ps=1 or more.")
    if mode != "auto":
      raise LaunchError(f"--mode={mode}: {program} always runs as workers, parameter servers and a coordinator.")
  elif ps is not None:
    raise LaunchError(f"--ps is for the parameter-server programs ({', '.join(sorted(PARAMETER_SERVER_PROGRAMS))}), "
                      f"not {program}.")
  client_server = parameter_server or mode == "client_server" or (mode == "auto" and program in CLIENT_SERVER_PROGRAMS)
  tasks = cluster_tasks(workers, client_server, ps=ps or 0)
  cluster = Cluster(program, args, client_server, workers_may_die=parameter_server)

  def on_signal(signum, _):
    raise KeyboardInterrupt(signal.Signals(signum).name)

  previous = signal.signal(signal.SIGTERM, on_signal)
  try:
    servers = [(name, tf_config) for name, tf_config in tasks if name != "chief"]
    for name, tf_config in servers:
      cluster.start(name, tf_config)
    # The client connects only once every server listens.
    spec = tasks[0][1]["cluster"]
    failure = cluster.wait_listening(spec["worker"] + spec.get("ps", [])) if client_server else None
    if not failure:
      for name, tf_config in tasks[len(servers):]:
        cluster.start(name, tf_config)
    code, message = failure or cluster.wait()
  except KeyboardInterrupt as e:
    code, message = 130, f"interrupted ({e or 'SIGINT'}); stopped all processes of the cluster."
  finally:
    cluster.stop()
    signal.signal(signal.SIGTERM, previous)
  if message:
    print(f"error: {message}", file=sys.stderr, flush=True)
  return code


def main(argv: Sequence[str]) -> None:
  if len(argv) < 2:
    print("error: give the program to run, e.g. python -m common.launch --workers=2 data_parallel.train "
          "[flags...]", file=sys.stderr)
    sys.exit(2)
  try:
    sys.exit(launch(argv[1], argv[2:], _WORKERS.value, _MODE.value, _PS.value))
  except LaunchError as e:
    print(f"error: {e}", file=sys.stderr)
    sys.exit(2)


def _parse(argv: Sequence[str]) -> List[str]:
  """The launcher's own flags come before the program name; everything after it is the program's."""
  flags.FLAGS.set_gnu_getopt(False)
  try:
    return flags.FLAGS(argv)
  except flags.Error as e:
    print(f"error: {e}", file=sys.stderr)
    sys.exit(2)


if __name__ == "__main__":
  app.run(main, flags_parser=_parse)
