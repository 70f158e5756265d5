"""Test setup: split the CPU into logical devices before TensorFlow initialises, deterministic ops,
MNIST from $TFDS_DATA_DIR (../shared/tensorflow_datasets when it exists), and shared helpers."""

import atexit
import functools
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_SHARED_DATA = os.path.join(ROOT, "..", "shared", "tensorflow_datasets")
if "TFDS_DATA_DIR" not in os.environ and os.path.isdir(_SHARED_DATA):
  os.environ["TFDS_DATA_DIR"] = os.path.abspath(_SHARED_DATA)
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import pytest  # noqa: E402
import tensorflow as tf  # noqa: E402

NUM_TEST_DEVICES = 4
_cpu = tf.config.list_physical_devices("CPU")[0]
tf.config.set_logical_device_configuration(
    _cpu, [tf.config.LogicalDeviceConfiguration() for _ in range(NUM_TEST_DEVICES)])
tf.config.threading.set_intra_op_parallelism_threads(1)
tf.config.threading.set_inter_op_parallelism_threads(NUM_TEST_DEVICES)
tf.config.experimental.enable_op_determinism()
# Start the runtime now, with these devices: a program run in-process first would otherwise configure (and
# start) it with only as many devices as that program asks for, and a later test that needs 4 would fail.
assert len(tf.config.list_logical_devices("CPU")) == NUM_TEST_DEVICES

if ROOT not in sys.path:
  sys.path.insert(0, ROOT)

import numpy as np  # noqa: E402

from common.data import decoded_cache  # noqa: E402
from common.data import loader as data  # noqa: E402
from common.model import autoencoder  # noqa: E402
import forkserver  # noqa: E402

# The decoded datasets are kept for the test runs in a folder of the tests' own, not the user's ~/.cache; the test
# processes share it (a file is renamed into place whole). Set before any program starts.
os.environ.setdefault(decoded_cache.CACHE_ENV, os.path.join(tempfile.gettempdir(), "sdae_pretraining_test_data"))

# A small slice of real MNIST, enough to learn from in seconds.
SLICE_EXAMPLES = 2000


@pytest.fixture(scope="module")
def output_dir(tmp_path_factory):
  """A results folder of fixture records (`tests.fixtures.make_records`): every run of the presets, every benchmark
  summary; made again for each test module, which may change it."""
  from tests.fixtures import make_records  # pylint: disable=g-import-not-at-top
  out = str(tmp_path_factory.mktemp("results") / "fixtures")
  make_records.main(out)
  return out


@pytest.fixture(scope="session")
def mnist():
  """The first SLICE_EXAMPLES training images of real MNIST, plus validation and test splits."""
  return data.load_mnist(train_examples=SLICE_EXAMPLES)


# A tiny run of the cluster tests that moves the weights far in two epochs (as tests/test_data_parallel.py: learning
# rate 0.05 at batch 50), and its command-line flags.
CLUSTER_BASE = dict(hidden_units=(48, 24), pretrain_epochs=2, finetune_epochs=1, train_examples=SLICE_EXAMPLES,
                    batch_size=50, pretrain_learning_rate=0.05, finetune_learning_rate=0.1, seed=3)


def cluster_flags(tmp_path, name, **kw):
  """The flags of a CLUSTER_BASE run (overridden by `kw`) writing <tmp_path>/<name>.json and <name>.npz."""
  values = dict(CLUSTER_BASE, **kw)
  flags = [f"--{k}={','.join(map(str, v)) if isinstance(v, tuple) else v}" for k, v in values.items()]
  return flags + ["--progress=log", f"--results_dir={tmp_path}", f"--run_name={name}", "--nopictures",
                  f"--export_weights={tmp_path / (name + '.npz')}"]


def assert_same_weights(got, want):
  """Two CLUSTER_BASE runs' exported weights agree within 1e-5, and training moved them well away from the start
  (else the comparison would mean nothing)."""
  for key in shared_keys(got, want):
    np.testing.assert_allclose(got[key], want[key], rtol=0, atol=1e-5, err_msg=key)
  for layer in autoencoder.build_stack(CLUSTER_BASE["hidden_units"], CLUSTER_BASE["seed"], 784):
    for key, value in layer.numpy_weights().items():
      assert np.max(np.abs(got[key] - value)) > 1e-2, key


def processes_of(results_dir):
  """{pid: its environment (a dict)} of the processes whose command line names `--results_dir=<results_dir>` (one
  test's own runs), read from Linux /proc. Through the fork server a run's process here is its client
  (tests/forkserver.py): the run dies with it."""
  found = {}
  for pid in filter(str.isdigit, os.listdir("/proc")):
    try:
      with open(f"/proc/{pid}/cmdline", "rb") as f:
        if f"--results_dir={results_dir}".encode() not in f.read().split(b"\0"):
          continue
      with open(f"/proc/{pid}/environ", "rb") as f:
        items = f.read().split(b"\0")
    except OSError:  # gone, or not ours to read
      continue
    found[int(pid)] = dict(i.decode(errors="replace").split("=", 1) for i in items if b"=" in i)
  return found


def watch_stderr(command, trigger, action, env, guard_seconds=None):
  """Runs `command` (from the repository root, with `env`) and calls `action(proc)` once, when a line of its stderr
  first contains `trigger`; returns (the ended Popen, its whole stderr). With `guard_seconds` the process is killed
  when it takes longer (a hang guard)."""
  proc = subprocess.Popen(command, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
  guard = threading.Timer(guard_seconds, proc.kill) if guard_seconds else None
  if guard:
    guard.start()
  reader = threading.Thread(target=proc.stdout.read, daemon=True)  # stdout is not kept, only drained
  reader.start()
  lines, fired = [], False
  try:
    for line in proc.stderr:
      lines.append(line)
      if not fired and trigger in line:
        fired = True
        action(proc)
    proc.wait()
  finally:
    if guard:
      guard.cancel()
  reader.join()
  assert fired, "".join(lines)[-3000:]
  return proc, "".join(lines)


WAIT_SECONDS = 600  # the one generous deadline of a wait on an event (a hang guard, not a timing)


def wait_for(predicate, what, deadline_seconds=WAIT_SECONDS, details=None):
  """Polls `predicate()` until it returns a true value, and returns that value: the way a test waits for an event (a
  file, a process state, a port), never for time to pass. AssertionError naming `what` (plus `details()`, when given)
  once `deadline_seconds` have passed without it; `predicate` may raise to stop waiting (e.g. the process that would
  make it true has ended)."""
  deadline = time.monotonic() + deadline_seconds
  while True:
    value = predicate()
    if value:
      return value
    if time.monotonic() > deadline:
      raise AssertionError(f"waited {deadline_seconds:.0f} s for {what}, in vain" +
                           (f"\n{details()}" if details else ""))
    time.sleep(0.05)


def act_when(command, env, ready, what, action, deadline_seconds=WAIT_SECONDS):
  """Runs `command` (from the repository root, with `env`), waits (`wait_for`, described by `what`) until `ready()`
  holds, then calls `action(proc)` once and waits for the process to end; returns (the ended Popen, its whole stderr).
  Its stderr is read meanwhile on a thread; a process that ends before `ready()` held fails the wait at once, with its
  stderr, and one still running at the deadline (counted from the start) is killed and fails the test."""
  proc = subprocess.Popen(command, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
  lines = []

  def read():
    for line in proc.stderr:
      lines.append(line)
  reader = threading.Thread(target=read, daemon=True)
  reader.start()
  start = time.monotonic()
  tail = lambda: "".join(lines)[-3000:]  # noqa: E731

  def ready_or_ended():
    if ready():
      return True
    if proc.poll() is not None and not ready():
      raise AssertionError(f"the process ended (status {proc.returncode}) before {what}:\n{tail()}")
    return False
  try:
    wait_for(ready_or_ended, what, deadline_seconds, tail)
    action(proc)
    try:
      proc.wait(timeout=max(1.0, deadline_seconds - (time.monotonic() - start)))
    except subprocess.TimeoutExpired:
      raise AssertionError(f"the process did not end within {deadline_seconds:.0f} s after {what}:\n"
                           f"{tail()}") from None
  finally:
    if proc.poll() is None:
      proc.kill()
      proc.wait()
    reader.join()
  return proc, "".join(lines)


def shared_keys(a, b):
  """The keys two exported weight files both hold, for comparing them: the pretrained keys must be the same; the
  finetuned classifier's ("finetuned/..."), written when a run finetuned, are compared where both runs have them."""
  pretrained = lambda w: sorted(k for k in w if not k.startswith("finetuned/"))  # noqa: E731
  assert pretrained(a) == pretrained(b)
  return sorted(set(a) & set(b))


_SERVER_LOCK = threading.Lock()


def python() -> str:
  """The `python` of subprocesses that run a program as a user types it: this process's own fork server
  (tests/forkserver.py: the same run without paying for `import tensorflow` again), started on first use; the
  interpreter itself where the server cannot run (it needs Linux's pidfd_open and sched_getaffinity). A test suite
  that a fork server runs (the seventh-program test's, in a copy of the repository) reuses that server. Threads that
  ask at once wait for the one server: two installs side by side could fork one while the other's client is still
  open for writing, and executing it then fails ("Text file busy")."""
  with _SERVER_LOCK:
    return _python()


@functools.lru_cache(maxsize=None)
def _python() -> str:
  if hasattr(sys, "real_python"):  # this process is a fork server's child: `sys.executable` is its client
    return sys.executable
  if not (hasattr(os, "pidfd_open") and hasattr(os, "sched_getaffinity")):
    return sys.executable
  folder = tempfile.mkdtemp(prefix="forkserver")
  atexit.register(shutil.rmtree, folder, ignore_errors=True)
  return forkserver.install(folder, env=dict(os.environ, PYTHONPATH=ROOT))


def fresh_python() -> str:
  """The interpreter itself, never a fork server's client: for tests that look at what a fresh interpreter imports
  (`sys.executable` is a fork server's client in a test suite that the server runs)."""
  return getattr(sys, "real_python", sys.executable)


def run_module(module, *flags, env=None, timeout=600):
  """Runs `python -m module flags...` from the repository root; returns the CompletedProcess."""
  full_env = dict(os.environ, PYTHONPATH=ROOT, **(env or {}))
  return subprocess.run([python(), "-m", module, *flags], cwd=ROOT, env=full_env,
                        capture_output=True, text=True, timeout=timeout)


@pytest.fixture
def fake_modules(tmp_path, monkeypatch):
  """{program: module} stand-ins that call tests.fixtures.fake_train.main(program), for every program of the
  run list and of the model-parallel benchmark."""
  from common.settings import programs
  stubs = tmp_path / "stubs"
  stubs.mkdir()
  modules = {}
  for program in sorted(p.name for p in programs.PROGRAMS):
    (stubs / f"fake_{program}.py").write_text(
        f"from tests.fixtures import fake_train\nfake_train.main({program!r})\n")
    modules[program] = f"fake_{program}"
  monkeypatch.setenv("PYTHONPATH", str(stubs))
  return modules
