"""Everyday mistakes and faults cost no finished run (issue 14): output paths checked up front, one writer
per --model_dir, checkpoints that fail safe, clean stops, one-line refusals, warnings for runs that learned
nothing. Faults on the command line are driven through the real command line (a subprocess); faults on
disk through the library, in tests/test_checkpoint_faults.py. Tiny configurations: each run takes seconds."""

import concurrent.futures
import json
import os
import signal
import subprocess
import sys
import threading
import time

import pytest

from common.artifacts import outputs
from common.artifacts import runlog
from common.base import progress
from common.data import sources as datasets
from common.distribute import devices
from common.measure import memory
from common.measure import provenance
from common.settings import programs

from conftest import ROOT, python, run_module

TINY = ["--hidden_units=20", "--train_examples=500", "--batch_size=50", "--pretrain_epochs=2", "--finetune_epochs=0",
        "--progress=log"]


def _one_error_line(proc) -> str:
  """The single "error: ..." line of a refused run (asserting there is exactly one and no traceback)."""
  assert proc.returncode != 0, proc.stderr[-2000:]
  assert "Traceback" not in proc.stderr, proc.stderr[-3000:]
  lines = [l for l in proc.stderr.splitlines() if l.startswith("error:") or "Flags parsing error" in l]
  assert len(lines) == 1, proc.stderr[-3000:]
  return lines[0]


def _refused_before_training(proc) -> None:
  assert " epoch 1/" not in proc.stderr, proc.stderr[-2000:]


# ---------------------------------------------------------------- refusals on the command line, concurrently

def _refusals(tmp):
  a_file = os.path.join(tmp, "a_file")
  open(a_file, "w").close()
  return {
      # item 1: output paths
      "results_dir_unwritable": (["--results_dir=/proc/x"], "--results_dir=/proc/x"),
      "export_unwritable": ([f"--results_dir={tmp}/r", "--export_weights=/proc/x/w.npz"], "--export_weights"),
      "run_name_escapes": ([f"--results_dir={tmp}/r", "--run_name=../escaped"], "--run_name"),
      # item 6: model_dir
      "model_dir_is_file": ([f"--model_dir={a_file}", "--results_dir="], "is a file"),
      "model_dir_unwritable": (["--model_dir=/proc/x", "--results_dir="], "--model_dir=/proc/x"),
      # item 7: threads bounded by the cores
      "threads_above_cores": ([f"--threads_per_device={provenance.usable_cores() + 1}", "--results_dir="],
                              f"at most {provenance.usable_cores()} (the cores this process may use)"),
      # item 8: what cannot fit or cannot end
      "hidden_units_too_large": (["--hidden_units=100000000", "--results_dir="], "GiB"),
      "epochs_huge": ([f"--pretrain_epochs={10**18}", "--results_dir="], "--pretrain_epochs"),
  }


@pytest.fixture(scope="module")
def refused(tmp_path_factory):
  tmp = str(tmp_path_factory.mktemp("refusals"))
  cases = _refusals(tmp)
  with concurrent.futures.ThreadPoolExecutor(max_workers=4) as pool:
    # TINY first: a case's own flags override it.
    futures = {case: pool.submit(run_module, programs.GREEDY.module, *TINY, *flags, timeout=600)
               for case, (flags, _) in cases.items()}
    return {case: (f.result(), cases[case][1], tmp) for case, f in futures.items()}


@pytest.mark.parametrize("case", ["results_dir_unwritable", "export_unwritable", "run_name_escapes"])
def test_bad_output_path_is_refused_before_training(refused, case):
  proc, expected, tmp = refused[case]
  line = _one_error_line(proc)
  assert expected in line, line
  _refused_before_training(proc)
  assert not os.path.exists(os.path.join(tmp, "escaped.json"))
  for name in ("sub/name", "..", ".", ""):
    with pytest.raises(ValueError, match="--run_name must be a plain file name"):
      outputs.check_run_name(name)


@pytest.mark.parametrize("case", ["model_dir_is_file", "model_dir_unwritable"])
def test_invalid_model_dir_is_one_line(refused, case):
  proc, expected, _ = refused[case]
  line = _one_error_line(proc)
  assert expected in line, line
  _refused_before_training(proc)


def test_threads_per_device_is_bounded_by_the_cores(refused):
  proc, expected, _ = refused["threads_above_cores"]
  assert expected in _one_error_line(proc)
  # Devices x threads beyond the cores stays allowed, with a warning.
  cores = provenance.usable_cores()
  assert devices.oversubscription(1, cores) is None
  warning = devices.oversubscription(cores + 1, 1)
  assert warning and "Oversubscribed" in warning and f"{cores + 1} threads on {cores} core(s)" in warning


def test_what_cannot_fit_is_refused_with_the_estimate(refused):
  proc, _, _ = refused["hidden_units_too_large"]
  line = _one_error_line(proc)
  assert "needs at least" in line and "GiB" in line and "--hidden_units=100000000" in line, line
  assert "Load dataset" not in proc.stderr  # before anything is built
  # The report's default model fits in a gigabyte; the estimate counts the resident data.
  mnist = datasets.KNOWN["mnist"]
  memory.check([2000] * 4, 100, 55_000, mnist, available=2**30)
  parts = memory.estimate_bytes([2000] * 4, 100, 55_000, mnist)
  assert parts["data"] == (55_000 + 15_000) * 784 * 4 and parts["total"] < 2**30
  with pytest.raises(ValueError, match="needs at least"):
    memory.check([100_000_000], 100, 55_000, mnist, available=2**36)


def test_huge_epochs_are_refused_and_the_eta_is_safe_for_any_value(refused):
  proc, expected, _ = refused["epochs_huge"]
  assert expected in _one_error_line(proc)
  for seconds in (1e15, 1e300, float("inf")):
    assert "years" in progress._clock(seconds)
  assert progress._clock(float("nan")) == "?" and progress._clock(3700) == "1:01:40"
  p = progress.Progress(1e30, "pretrain")
  p.advance(1.0)
  assert "years" in progress._clock(p.eta())


# ---------------------------------------------------------------- item 11: the launcher

def test_launcher_refuses_programs_that_do_not_use_several_workers():
  proc = subprocess.run([python(), "-m", "common.launch", "--workers=2", programs.GREEDY.module, *TINY,
                         "--results_dir="], cwd=ROOT, capture_output=True, text=True,
                        env=dict(os.environ, PYTHONPATH=ROOT), timeout=600)
  line = _one_error_line(proc)
  assert "greedy.train does not use several workers" in line, line
  for name in (p.module for p in programs.PROGRAMS if p.cluster != "none"):
    assert name in line
  assert "[worker" not in proc.stderr  # no process was started


# ---------------------------------------------------------------- items 9 and 12: a diverged run, weights without .npz

@pytest.fixture(scope="module")
def diverged(tmp_path_factory):
  tmp = tmp_path_factory.mktemp("diverged")
  proc = run_module(programs.GREEDY.module, "--hidden_units=20,20", "--train_examples=500", "--batch_size=50",
                    "--pretrain_epochs=3", "--finetune_epochs=1", "--pretrain_learning_rate=1e6", "--progress=log",
                    f"--results_dir={tmp}", "--run_name=diverged", f"--export_weights={tmp}/weights", timeout=600)
  return proc, tmp


def test_finite_divergence_is_flagged_and_the_run_still_succeeds(diverged):
  proc, tmp = diverged
  assert proc.returncode == 0, proc.stderr[-3000:]
  record = json.load(open(tmp / "diverged.json"))
  assert record["diverged"] is True
  assert any("Layer 1's reconstruction loss never fell below its first epoch's" in w for w in record["warnings"])
  assert any("at chance" in w for w in record["warnings"]), record["finetune"]
  assert "WARNING: Layer 1's reconstruction loss never fell" in proc.stderr
  # A healthy history raises nothing: the check can pass.
  healthy = {"layers": [{"epochs": [{"loss": 200.0}, {"loss": 150.0}]}], "finetune": {"test_accuracy": 0.9}}
  assert runlog.health_warnings(healthy) == []


def test_exported_weights_log_the_file_written(diverged):
  proc, tmp = diverged
  assert os.path.exists(tmp / "weights.npz") and not os.path.exists(tmp / "weights")
  assert f"Exported pretrained weights to {tmp}/weights.npz" in proc.stderr


# ---------------------------------------------------------------- items 2 and 10: a second run on a busy model_dir, Ctrl-C

def _as_from_a_terminal():
  """In the child before exec: SIGINT handled and unblocked, as a shell's foreground job has it. The pytest worker
  may have it blocked or ignored by then (code of earlier tests in the same process), and a child inherits both."""
  signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})
  signal.signal(signal.SIGINT, signal.SIG_DFL)


class _Watched:
  """A program started in the background whose stderr is collected line by line; Ctrl-C reaches it as it would
  from a terminal."""

  def __init__(self, *flags):
    self.lines = []
    self.proc = subprocess.Popen([sys.executable, "-m", programs.GREEDY.module, *flags], cwd=ROOT,
                                 env=dict(os.environ, PYTHONPATH=ROOT), stdout=subprocess.PIPE,
                                 stderr=subprocess.PIPE, text=True, preexec_fn=_as_from_a_terminal)
    self._reader = threading.Thread(target=lambda: self.lines.extend(iter(self.proc.stderr.readline, "")),
                                    daemon=True)
    self._reader.start()

  def wait_for(self, text, timeout=600.0):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
      if any(text in l for l in list(self.lines)):
        return
      if self.proc.poll() is not None:
        break
      time.sleep(0.1)
    raise AssertionError(f"no line with {text!r}: " + "".join(self.lines)[-3000:])

  def epochs_logged(self) -> int:
    """Progress lines of finished epochs read so far."""
    return sum(" epoch " in l and " loss " in l for l in list(self.lines))

  def stderr(self):
    self._reader.join(timeout=10)
    return "".join(self.lines)


@pytest.fixture(scope="module")
def contended(tmp_path_factory):
  """Run A trains (a bar, so an epoch is 20 calls); run B starts on the same --model_dir; A gets SIGINT."""
  tmp = tmp_path_factory.mktemp("contended")
  flags = ["--hidden_units=200", "--train_examples=5000", "--batch_size=50", "--pretrain_epochs=100000",
           "--finetune_epochs=0", "--progress=bar", f"--model_dir={tmp}/model", "--results_dir="]
  a = _Watched(*flags)
  try:
    a.wait_for(" epoch 1/")
    b = run_module(programs.GREEDY.module, *flags, timeout=600)
    a.wait_for(" epoch 2/")
    epochs_before = a.epochs_logged()
    a.proc.send_signal(signal.SIGINT)
    a.proc.wait(timeout=600)  # A guard against a hang, not a bound on speed.
  finally:
    if a.proc.poll() is None:
      a.proc.kill()
  return a, b, epochs_before, tmp


def test_second_run_on_a_busy_model_dir_is_refused_naming_the_owner(contended):
  a, b, _, _ = contended
  line = _one_error_line(b)
  assert f"is in use by process {a.proc.pid} on host" in line, line
  _refused_before_training(b)


def test_ctrl_c_stops_in_the_current_epoch_says_how_to_resume_and_exits_130(contended):
  a, _, epochs_before, tmp = contended
  text = a.stderr()
  assert a.proc.returncode == 130, text[-3000:]
  assert "Traceback" not in text and "KeyboardInterrupt" not in text, text[-3000:]
  assert "rerun the same command to resume" in text
  # It stopped in the epoch it was in (between two of its 20 calls), not 100,000 epochs later: at most the
  # epoch under way when the signal came ended after it (plus one line still in the pipe when it was sent).
  assert a.epochs_logged() <= epochs_before + 2, text[-3000:]
  # The lock was released on the way out: the file holds no owner.
  assert open(tmp / "model" / "LOCK").read() == ""


# ---------------------------------------------------------------- items 2 and 5: killed, then resumed

@pytest.fixture(scope="module")
def killed_then_resumed(tmp_path_factory):
  tmp = tmp_path_factory.mktemp("killed")
  flags = [*TINY, "--hidden_units=20,20", f"--model_dir={tmp}/model", f"--results_dir={tmp}", "--run_name=resumed"]
  killed = run_module(programs.GREEDY.module, *flags, env={"SDAE_TEST_KILL_AFTER_CHECKPOINT": "local:0:2"}, timeout=600)
  resumed = run_module(programs.GREEDY.module, *flags, timeout=600)
  return killed, resumed, tmp


def test_a_lock_left_by_a_killed_run_is_taken_over(killed_then_resumed):
  killed, resumed, _ = killed_then_resumed
  assert killed.returncode == -signal.SIGKILL, killed.stderr[-2000:]
  assert resumed.returncode == 0, resumed.stderr[-3000:]
  assert "Took over the lock of --model_dir=" in resumed.stderr and "which is no longer running" in resumed.stderr


def test_resumed_run_reports_this_process_and_the_whole_run(killed_then_resumed):
  _, resumed, tmp = killed_then_resumed
  record = json.load(open(tmp / "resumed.json"))
  assert record["resumed"] is True and record["run_processes"] == 2
  assert record["process_seconds"] == record["total_seconds"]
  # The whole run took longer than its pretraining; this process alone need not have.
  assert record["run_seconds"] >= record["pretrain_seconds"]
  assert record["run_seconds"] > record["process_seconds"]
  assert "this process" in resumed.stdout and "whole run" in resumed.stdout and "over 2 processes" in resumed.stdout


def test_cores_follow_the_cpu_affinity():
  """A process pinned to one core (`taskset`) counts one usable core: --threads_per_device=2 is refused and two
  devices are oversubscribed (every † in the records comes from the same count)."""
  if not hasattr(os, "sched_setaffinity") or provenance.usable_cores() < 2:
    pytest.skip("needs CPU affinity and at least 2 cores")
  code = ("import os; os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})\n"
          "from common.settings import checks\n"
          "from common.distribute import devices\n"
          "from common.measure import provenance\n"
          "print(provenance.usable_cores(), devices.oversubscription(2, 1) is not None)\n"
          "checks.check_threads(2)\n")
  proc = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=600,
                        env=dict(os.environ, PYTHONPATH=ROOT))
  assert proc.stdout.split() == ["1", "True"], proc.stdout + proc.stderr
  assert "--threads_per_device must be at most 1 (the cores this process may use)" in proc.stderr
