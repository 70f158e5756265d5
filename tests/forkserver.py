"""A fork server for the test suite: `python -m <program>.train ...` without paying for `import tensorflow` each time.

A test process starts a run as users type it; each such process spends seconds of CPU importing TensorFlow (and
Keras, pandas and matplotlib, which TensorFlow imports) before it reads a flag, and the suite starts about a hundred.
This server imports those libraries once (no module of this repository, and no TensorFlow runtime: no device, no
thread pool), then forks one child per request; the child takes the request's working directory, environment, CPU
affinity, standard streams and arguments and runs the program as `python` would (`-m module`, `-c code` or a script).

The client is a small executable (`python_shim`, written by `install`) that tests use in place of `sys.executable`:
it hands its request and its standard streams to the server, forwards SIGINT, SIGTERM and SIGHUP to the child, and
exits as the child did (the same exit code, or the same signal). A child dies with its client (SIGKILL included: the
child watches the client's pid), so a test that kills or times out its subprocess stops the run. A request the
server cannot serve as a fresh interpreter would (other interpreter options, or an environment that differs in a
variable read at import, such as TF_CPP_MIN_LOG_LEVEL, or TFDS_DATA_DIR unset) runs in a fresh interpreter: the
client execs the real `python`.

What a test sees differs in two ways: the pid of its subprocess is the client's, not the program's, and the
libraries above are imported before the program starts (a check of `sys.modules` sees them); tests that look at a
run's pid, or at what a fresh interpreter imports, start the interpreter itself (`conftest.fresh_python`). A test
that finds a run's processes by their command line or environment finds its client, and the run dies with it.
"""

import json
import os
import select
import signal
import socket
import sys
import tempfile
import threading
import traceback

# Variables that may differ between a request and the server: read when a program runs, not when a library loads.
# (SDAE_TEST_KILL_AFTER_CHECKPOINT is common/distribute/cluster.py's KILL_ENV: the server imports nothing of this
# repository.)
# The shell of an sbatch script (tests/test_slurm.py) adds SHLVL, HOSTNAME and Slurm's ENVIRONMENT=BATCH, and the
# script's own settings PYTHON and MODEL_DIR (slurm/*.sbatch).
RUNTIME_VARIABLES = ("TF_CONFIG", "SDAE_TEST_KILL_AFTER_CHECKPOINT", "PYTHONPATH", "PYTHONUNBUFFERED", "PWD", "OLDPWD",
                     "_", "SHLVL", "HOSTNAME", "ENVIRONMENT", "PYTHON", "MODEL_DIR")
PRELOADED = ("tensorflow", "tensorflow_datasets", "numpy", "absl.app", "absl.flags", "absl.logging", "matplotlib",
             "tqdm")
MAX_MESSAGE = 1 << 22


def _send(conn, message, fds=()):
  data = json.dumps(message).encode() + b"\n"
  if fds:
    socket.send_fds(conn, [data], list(fds))
  else:
    conn.sendall(data)


def _receive(conn, fds=0):
  """One newline-terminated JSON message, and the file descriptors (up to `fds`) sent with its first part."""
  chunk, received, _, _ = socket.recv_fds(conn, MAX_MESSAGE, fds) if fds else (conn.recv(MAX_MESSAGE), [], 0, None)
  data = chunk
  while chunk and not data.endswith(b"\n"):
    chunk = conn.recv(MAX_MESSAGE)
    data += chunk
  if not chunk:
    raise ConnectionError("closed before a whole message")
  return json.loads(data), list(received)


# ------------------------------------------------------------------------------------------------ the client

def client(socket_path, real_python, argv):
  """The shim's body: run `python argv...` through the server at `socket_path`, or exec `real_python`."""
  servable = (len(argv) >= 2 and argv[0] in ("-m", "-c")) or (bool(argv) and argv[0].endswith(".py"))
  conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
  try:
    if not servable:
      raise ConnectionError("not servable")
    conn.connect(socket_path)
    request = {"argv": argv, "cwd": os.getcwd(), "env": dict(os.environ), "client": os.getpid(),
               "affinity": sorted(os.sched_getaffinity(0)), "shim": os.path.abspath(sys.argv[0])}
    _send(conn, request, fds=(0, 1, 2))
    reply, _ = _receive(conn)
  except (OSError, ConnectionError, ValueError):
    reply = {"fallback": True}
  if reply.get("fallback"):
    conn.close()
    os.execv(real_python, [real_python, *argv])
  child = reply["pid"]
  for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
    signal.signal(sig, lambda s, _: os.kill(child, s))
  status, _ = _receive(conn)
  if status.get("signal"):
    if status["signal"] != signal.SIGKILL:
      signal.signal(status["signal"], signal.SIG_DFL)
    os.kill(os.getpid(), status["signal"])
  os._exit(status.get("code", 1))


# ------------------------------------------------------------------------------------------------ the server

def _run_child(request, fds):
  """In the forked child: become the requested interpreter, run it, exit as it would have."""
  for fd, target in zip(fds, (0, 1, 2)):
    os.dup2(fd, target)
    os.close(fd)
  os.chdir(request["cwd"])
  os.environ.clear()
  os.environ.update(request["env"])
  os.sched_setaffinity(0, request["affinity"])
  signal.signal(signal.SIGINT, signal.default_int_handler)  # KeyboardInterrupt, as in a fresh interpreter
  for sig in (signal.SIGTERM, signal.SIGHUP, signal.SIGCHLD):
    signal.signal(sig, signal.SIG_DFL)
  try:
    watched = os.pidfd_open(request["client"])
  except ProcessLookupError:  # the client is gone already
    os._exit(1)

  def die_with_client():
    select.select([watched], [], [])
    os.kill(os.getpid(), signal.SIGKILL)
  threading.Thread(target=die_with_client, daemon=True).start()

  import atexit
  import io
  import runpy
  import types
  if request["env"].get("PYTHONUNBUFFERED") and not START_ENV.get("PYTHONUNBUFFERED"):  # what `python -u` does
    sys.stdout = io.TextIOWrapper(io.FileIO(1, "w", closefd=False), encoding=sys.stdout.encoding,
                                  errors=sys.stdout.errors, write_through=True)
  sys.real_python, sys.executable = sys.executable, request["shim"]  # the programs this one starts come here too
  argv = request["argv"]
  extra = [p for p in request["env"].get("PYTHONPATH", "").split(os.pathsep) if p]
  first = os.path.dirname(os.path.abspath(argv[0])) if argv[0].endswith(".py") else (
      "" if argv[0] == "-c" else os.getcwd())
  sys.path[:] = [first, *extra, *BASE_PATH]
  main = types.ModuleType("__main__")
  sys.modules["__main__"] = main
  code = 0
  try:
    if argv[0] == "-m":
      sys.argv = [argv[1], *argv[2:]]
      runpy._run_module_as_main(argv[1], alter_argv=True)  # what `python -m` calls
    elif argv[0] == "-c":
      sys.argv = ["-c", *argv[2:]]
      exec(compile(argv[1], "<string>", "exec"), main.__dict__)
    else:
      sys.argv = list(argv)
      runpy.run_path(argv[0], run_name="__main__")
  except SystemExit as e:
    code = 0 if e.code is None else e.code
    if not isinstance(code, int):  # sys.exit("message"): printed, status 1
      print(code, file=sys.stderr)
      code = 1
  except KeyboardInterrupt:
    traceback.print_exc()
    code = -signal.SIGINT
  except BaseException:  # noqa: what the interpreter does with an uncaught exception
    traceback.print_exc()
    code = 1
  threading._shutdown()  # as at the interpreter's exit: wait for the program's non-daemon threads, then atexit
  atexit._run_exitfuncs()
  sys.stdout.flush()
  sys.stderr.flush()
  if code < 0:
    signal.signal(-code, signal.SIG_DFL)
    os.kill(os.getpid(), -code)
  os._exit(code & 0xFF)


def _servable(request):
  env = request["env"]
  changed = {k for k in set(env) | set(START_ENV) if env.get(k) != START_ENV.get(k)}
  # tensorflow-datasets reads TFDS_DATA_DIR at import as its default, and common/data/loader.py passes it whenever set.
  # Slurm's variables (a task of `srun`) are read when a program runs (common/distribute/slurm.py); srun also sets
  # TMPDIR, which this server's tempfile already follows when it is the same folder.
  return all(k in RUNTIME_VARIABLES or k.startswith(("PYTEST_", "SLURM", "SRUN_")) or
             (k == "TFDS_DATA_DIR" and env.get(k)) or (k == "TMPDIR" and env.get(k) == tempfile.gettempdir())
             for k in changed)


def serve(socket_path, parent):
  """Import the libraries, then fork a child per request until the process `parent` exits."""
  import ctypes
  import importlib
  listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
  listener.bind(socket_path)
  listener.listen(64)  # clients queue while the libraries load
  for name in PRELOADED:
    importlib.import_module(name)
  libc = ctypes.CDLL(None)
  # TensorFlow's import queues a callback for absl's app.run that lists the GPUs for TensorFlow's own tests (and
  # logs "failed call to cuInit"): a program that imports TensorFlow in main runs it then, a command that never
  # imports TensorFlow (the launcher) never; dropped, so that no child runs it before reading its flags.
  from absl import app
  for callback in [c for c in app._init_callbacks if c.__module__ == "tensorflow.python.distribute.combinations"]:
    app._init_callbacks.remove(callback)
  parent_fd, children = os.pidfd_open(parent), {}  # {pidfd: (pid, connection)}
  while True:
    ready, _, _ = select.select([listener, parent_fd, *children], [], [])
    if parent_fd in ready:
      return
    for fd in ready:
      if fd is listener:
        conn, _ = listener.accept()
        try:
          request, fds = _receive(conn, fds=3)
        except (OSError, ConnectionError, ValueError):
          conn.close()
          continue
        if not _servable(request) or len(fds) != 3:
          _send(conn, {"fallback": True})
          conn.close()
          for f in fds:
            os.close(f)
          continue
        sys.stdout.flush()
        sys.stderr.flush()
        libc.fflush(None)  # TensorFlow's threads log into C buffers: else the child writes their lines again
        pid = os.fork()
        if pid == 0:
          listener.close()
          os.close(parent_fd)
          for f, (_, c) in children.items():
            os.close(f)
            c.close()
          conn.close()
          _run_child(request, fds)
        for f in fds:
          os.close(f)
        children[os.pidfd_open(pid)] = (pid, conn)
        _send(conn, {"pid": pid})
      elif fd in children:
        pid, conn = children.pop(fd)
        os.close(fd)
        _, status = os.waitpid(pid, 0)
        try:
          _send(conn, {"signal": os.WTERMSIG(status)} if os.WIFSIGNALED(status) else {"code": os.WEXITSTATUS(status)})
        except OSError:
          pass  # the client is gone
        conn.close()


SHIM = """#!{python} -S
import sys
sys.path.insert(0, {tests!r})
import forkserver
forkserver.client({socket!r}, {python!r}, sys.argv[1:])
"""


def install(folder, env):
  """Start a server for the calling process (environment `env`) and write its client; returns the client's path.
  The server stops when the calling process exits."""
  import subprocess
  socket_path, shim = os.path.join(folder, "forkserver.sock"), os.path.join(folder, "python_shim")
  python = getattr(sys, "real_python", sys.executable)  # a test suite run by a fork server's child has its own
  with open(shim, "w") as f:
    f.write(SHIM.format(python=python, tests=os.path.dirname(os.path.abspath(__file__)), socket=socket_path))
  os.chmod(shim, 0o755)
  subprocess.Popen([python, os.path.abspath(__file__), socket_path, str(os.getpid())], env=env,
                   stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                   start_new_session=True)
  return shim


if __name__ == "__main__":
  START_ENV = dict(os.environ)
  BASE_PATH = [p for p in sys.path[1:] if p not in os.environ.get("PYTHONPATH", "").split(os.pathsep)]
  serve(sys.argv[1], int(sys.argv[2]))
