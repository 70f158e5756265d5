"""Asynchronous data parallel (`async_data_parallel`, ParameterServerStrategy) on a small slice of real MNIST.

Every cluster runs in processes of its own (TensorFlow's servers cannot be stopped, and this test process has op
determinism on): the program's in-process cluster (no TF_CONFIG), the launcher's local cluster, or tasks started
here with their TF_CONFIG. What is checked: one worker exports greedy's weights (float32 and mixed_bfloat16) and
resumes to them after a SIGKILL; two workers reach greedy's held-out reconstruction within 5% and record every
update's staleness; a straggler makes stale updates; a made staleness is measured exactly and scales the
staleness-aware learning rate; a killed worker's function is rerun and the run finishes; no worker left ends the
run after --worker_recovery_seconds; a killed parameter server ends the run with one line, and the same command
resumes; bad input is refused with one line before training.
"""

import concurrent.futures
import json
import os
import signal
import subprocess

import numpy as np
import pytest

from async_data_parallel import worker_steps
from common.artifacts import runlog
from common.base import errors
from common.base import ports
from common.distribute import cluster
from common import launch
from common.model import precision as precision_lib
from common.settings import config as config_lib
from common.settings import programs
from greedy import pretrain as greedy
from conftest import (ROOT, SLICE_EXAMPLES, act_when, processes_of, python, run_module, shared_keys,
                      wait_for, watch_stderr)

PROGRAM = programs.ASYNC_DATA_PARALLEL
# As tests/test_data_parallel.py: learning rate 0.05 at batch 50 moves the weights far in two epochs.
BASE = dict(hidden_units=(48, 24), pretrain_epochs=2, finetune_epochs=1, train_examples=SLICE_EXAMPLES,
            batch_size=50, pretrain_learning_rate=0.05, finetune_learning_rate=0.1, seed=3)
STEPS_PER_EPOCH = SLICE_EXAMPLES // BASE["batch_size"]
# Hang guard of every cluster run (the runs take seconds to a minute).
GUARD_SECONDS = 600


def _flags(tmp_path, name, **kw):
  values = dict(BASE, **kw)
  flags = [f"--{k}={','.join(map(str, v)) if isinstance(v, tuple) else v}" for k, v in values.items()]
  return flags + ["--progress=log", f"--results_dir={tmp_path}", f"--run_name={name}",
                  f"--export_weights={tmp_path / (name + '.npz')}"]


def _env(**extra):
  env = dict(os.environ, PYTHONPATH=ROOT, **extra)
  if cluster.TF_CONFIG not in extra:
    env.pop(cluster.TF_CONFIG, None)
  return env


def _run(tmp_path, name, env=None, **kw):
  """The program in its own process with its in-process cluster; returns (CompletedProcess, record or None)."""
  proc = subprocess.run([python(), "-m", PROGRAM.module, *_flags(tmp_path, name, **kw)], cwd=ROOT,
                        env=_env(**(env or {})), capture_output=True, text=True, timeout=GUARD_SECONDS)
  path = tmp_path / f"{name}.json"
  return proc, json.load(open(path)) if path.exists() else None


def _greedy(tmp_path, name, **kw):
  config = config_lib.Config(program=programs.GREEDY.name, results_dir=str(tmp_path), run_name=name,
                             export_weights=str(tmp_path / f"{name}.npz"), **dict(BASE, **kw))
  return greedy.train(config), runlog.load_weights(str(tmp_path / f"{name}.npz"))


@pytest.fixture(scope="module")
def greedy_run(tmp_path_factory):
  """Greedy at the same batch, in this process: (record, exported weights)."""
  return _greedy(tmp_path_factory.mktemp(programs.GREEDY.name), programs.GREEDY.name)


def _assert_same_weights(got, want, atol=1e-5):
  for key in shared_keys(got, want):
    np.testing.assert_allclose(got[key], want[key], rtol=0, atol=atol, err_msg=key)
    assert np.max(np.abs(want[key])) > 1e-2, key  # trained weights, not zeros


def _error_lines(stderr):
  return [line for line in stderr.splitlines() if line.startswith("error:")]


# ------------------------------------------------------------------ one worker: plain sequential SGD = greedy

def test_one_worker_exports_greedys_weights_and_a_full_record(tmp_path, greedy_run):
  greedy_record, want = greedy_run
  proc, record = _run(tmp_path, "w1", num_devices=1, tensorboard_dir=tmp_path / "tb")
  assert proc.returncode == 0, proc.stderr[-3000:]
  _assert_same_weights(runlog.load_weights(str(tmp_path / "w1.npz")), want)
  for a, b in zip(record["layers"], greedy_record["layers"]):
    assert [e["loss"] for e in a["epochs"]] == pytest.approx([e["loss"] for e in b["epochs"]], rel=1e-6)
  assert [h["loss"] for h in record["heldout_reconstruction"]] == pytest.approx(
      [h["loss"] for h in greedy_record["heldout_reconstruction"]], rel=1e-6)
  # Finetuning (synchronous, on the coordinator) starts from the same weights as greedy's.
  assert record["finetune"]["test_accuracy"] == pytest.approx(greedy_record["finetune"]["test_accuracy"], abs=1e-3)
  # Everything lifecycle.finish writes, with provenance and the CPU seconds.
  for field in runlog.REQUIRED_FIELDS + ("heldout_reconstruction", "pretrain_cpu_seconds", "run_seconds"):
    assert field in record, field
  assert record["strategy"] == PROGRAM.name and record["pretrain_cpu_seconds"] > 0
  assert "code_digest" in record["environment"] and record["environment"]["kernels"] == "tf"
  assert record["environment"]["cluster"]["in_process"] is True and len(record["environment"]["cluster"]["ps"]) == 1
  assert all(l["device"] == "/job:ps/replica:0/task:0/device:CPU:0" for l in record["layers"])
  assert record["async"]["workers"] == 1 and record["async"]["deterministic"] is True
  assert "coordinator" in record["async"]["finetuning"]
  # One worker: every update sees the weights of the update before it.
  staleness, faults = record["staleness"], record["faults"]
  assert staleness["max"] == 0 and staleness["updates"] == 2 * 2 * STEPS_PER_EPOCH
  for layer in staleness["layers"]:
    assert [e["epoch"] for e in layer["epochs"]] == [1, 2]
    assert all(e["histogram"] == [[0, STEPS_PER_EPOCH]] for e in layer["epochs"])
  assert faults["rescheduled_functions"] == 0 and faults["duplicate_updates"] == 0
  assert faults["updates_applied"] == faults["steps"] == 2 * 2 * STEPS_PER_EPOCH
  k = record["config"]["steps_per_function"]
  assert faults["functions_scheduled"] == 2 * 2 * -(-STEPS_PER_EPOCH // k)  # ceil: an epoch in one chunk
  assert "benchmark_only" not in record
  # Progress lines with an ETA, and TensorBoard scalars including the staleness.
  assert "layer 2/2 epoch 2/2" in proc.stderr and "ETA" in proc.stderr
  import tensorflow as tf  # noqa: E402  (already started by conftest)
  tags = {v.tag for f in (tmp_path / "tb" / "w1").iterdir() for e in tf.compat.v1.train.summary_iterator(str(f))
          for v in e.summary.value}
  assert {"pretrain/layer1/staleness_mean", "pretrain/layer2/train_loss"} <= tags


def test_one_worker_equals_greedy_in_mixed_bfloat16(tmp_path):
  try:
    precision_lib.check_supported(programs.PRECISIONS[1])
  except errors.UserError as e:
    pytest.skip(str(e))
  _, want = _greedy(tmp_path, "greedy_bf16", precision=programs.PRECISIONS[1])
  proc, record = _run(tmp_path, "w1_bf16", num_devices=1, precision=programs.PRECISIONS[1])
  assert proc.returncode == 0, proc.stderr[-3000:]
  assert record["environment"]["precision"] == programs.PRECISIONS[1]
  # Greedy applies the kernel's bfloat16 gradient in XLA's one pass (rate x gradient subtracted with one rounding),
  # async_data_parallel the float32 gradient with TensorFlow's update (two roundings): last-bit differences, which
  # the next steps' bfloat16 operands grow; so the weights agree to bfloat16's resolution (max |dw| <= 2^-8 max |w|,
  # as data parallel's do: tests/test_precision.py), not to 1e-5.
  largest = max(float(np.max(np.abs(w))) for w in want.values())
  _assert_same_weights(runlog.load_weights(str(tmp_path / "w1_bf16.npz")), want, atol=2 ** -8 * largest)


def test_one_worker_killed_resumes_to_greedys_weights(tmp_path, greedy_run):
  _, want = greedy_run
  model_dir = tmp_path / "model"
  # SIGKILL right after the 3rd checkpoint (layer 2's first epoch), like a machine losing power.
  killed, _ = _run(tmp_path, "resumed", num_devices=1, model_dir=model_dir, finetune_epochs=0,
                   env={cluster.KILL_ENV: "local:0:3"})
  assert killed.returncode == -signal.SIGKILL, killed.stderr[-2000:]
  proc, record = _run(tmp_path, "resumed", num_devices=1, model_dir=model_dir, finetune_epochs=0)
  assert proc.returncode == 0, proc.stderr[-3000:]
  assert record["resumed"] and record["run_processes"] == 2
  assert "layer 1/2 epoch" not in proc.stderr  # layer 1 was not trained again
  got = runlog.load_weights(str(tmp_path / "resumed.npz"))
  _assert_same_weights(got, want)
  # The record covers the whole run: the first process's epochs come from the checkpoint.
  assert [[e["epoch"] for e in l["epochs"]] for l in record["staleness"]["layers"]] == [[1, 2], [1, 2]]


# ------------------------------------------------------------------ two workers: asynchronous

def test_two_workers_reach_greedys_heldout_loss_and_record_staleness(tmp_path, greedy_run):
  greedy_record, _ = greedy_run
  proc, record = _run(tmp_path, "w2", num_devices=2)
  assert proc.returncode == 0, proc.stderr[-3000:]
  for got, want in zip(record["heldout_reconstruction"], greedy_record["heldout_reconstruction"]):
    assert abs(got["loss"] - want["loss"]) <= 0.05 * want["loss"], (got, want)
  assert record["async"]["workers"] == 2 and record["async"]["deterministic"] is False
  staleness = record["staleness"]
  for layer in staleness["layers"]:
    for epoch in layer["epochs"]:
      assert epoch["updates"] == STEPS_PER_EPOCH == sum(c for _, c in epoch["histogram"])
      assert epoch["mean"] == pytest.approx(sum(s * c for s, c in epoch["histogram"]) / STEPS_PER_EPOCH)
  assert staleness["updates"] == 2 * 2 * STEPS_PER_EPOCH
  per_worker = np.sum([e["functions_per_worker"] for l in record["faults"]["layers"] for e in l["epochs"]], axis=0)
  assert per_worker.sum() == record["faults"]["functions_scheduled"] and all(per_worker > 0), per_worker


def test_a_function_holds_at_most_a_workers_share_of_an_epoch(tmp_path):
  """Two steps an epoch and two workers: functions of one step each (not --steps_per_function=8), so the workers run
  side by side and updates land concurrently (the staleness of some is 1 or more, straggler or not)."""
  proc, record = _run(tmp_path, "share", num_devices=2, batch_size=SLICE_EXAMPLES // 2, pretrain_epochs=6,
                      finetune_epochs=0, steps_per_function=8, benchmark_slow_worker_delay_seconds=0.01)
  assert proc.returncode == 0, proc.stderr[-3000:]
  assert record["async"]["steps_per_function"] == 1 and record["async"]["steps_per_function_requested"] == 8
  assert "a function holds at most a worker's share of it" in proc.stderr
  per_worker = np.sum([e["functions_per_worker"] for l in record["faults"]["layers"] for e in l["epochs"]], axis=0)
  assert all(per_worker > 0) and record["staleness"]["max"] >= 1, (per_worker, record["staleness"])


def test_a_slow_worker_makes_stale_updates(tmp_path):
  proc, record = _run(tmp_path, "slow", num_devices=2, benchmark_slow_worker_delay_seconds=0.02,
                      staleness_aware_lr=True, finetune_epochs=0)
  assert proc.returncode == 0, proc.stderr[-3000:]
  assert record["staleness"]["max"] >= 1, record["staleness"]
  assert record["staleness"]["staleness_aware_lr"] is True
  assert record["benchmark_only"]["slow_worker_delay_seconds"] == 0.02 and record["benchmark_only"]["slow_worker"] == 0


def test_made_staleness_is_measured_and_scales_the_staleness_aware_rate():
  proc = subprocess.run([python(), os.path.join(ROOT, "tests", "async_staleness_probe.py")], cwd=ROOT,
                        env=_env(), capture_output=True, text=True, timeout=GUARD_SECONDS)
  assert proc.returncode == 0, proc.stderr[-3000:]
  results = [json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{")]
  assert [r["staleness_aware"] for r in results] == [False, True]
  for r in results:
    assert r["staleness"] == [5], r
    assert r["error_vs_expected"] < 1e-6 < 1e-3 < r["error_vs_other_rule"], r


# ------------------------------------------------------------------ faults

def _tasks_of(results_dir):
  """{(task type, index): pid} of the tasks whose command names `results_dir` (one test's own), from their TF_CONFIG
  (`conftest.processes_of`: through the fork server a task's process here is its client, with which it dies)."""
  found = {}
  for pid, environment in processes_of(results_dir).items():
    if cluster.TF_CONFIG in environment:
      task = json.loads(environment[cluster.TF_CONFIG])["task"]
      found[(task["type"], task["index"])] = pid
  return found


def _watch(command, trigger, action, env=None):
  """Runs `command`, calls `action(proc)` once a stderr line contains `trigger`; returns (proc, stderr)."""
  return watch_stderr(command, trigger, action, env or _env(), GUARD_SECONDS)


def _launch_command(tmp_path, name, workers=2, **kw):
  return [python(), "-m", "common.launch", f"--workers={workers}", "--ps=1", PROGRAM.module,
          *_flags(tmp_path, name, num_devices=1, **kw)]


def _hold_worker_0(tmp_path):
  """(the environment of a run whose worker 0 holds its function, right after its first update past layer 1's first
  epoch, until it is killed: the `worker_steps.HOLD_ENV` test hook; the file that says it holds)."""
  held = tmp_path / "worker_0_holds"
  # Updates before layer 1's second epoch: the compile phase's one step, then the first epoch's.
  return _env(**{worker_steps.HOLD_ENV: f"0:{1 + STEPS_PER_EPOCH}:{held}"}), held


def test_killed_worker_is_survived_and_its_function_rerun(tmp_path):
  # Worker 0 holds its function after an update of its own (in layer 1's second epoch or later), until it is killed:
  # killed once it holds, it is in the middle of a function whose updates so far are applied.
  env, held = _hold_worker_0(tmp_path)

  def kill_worker_0(proc):
    os.kill(_tasks_of(tmp_path)[("worker", 0)], signal.SIGKILL)

  proc, stderr = act_when(_launch_command(tmp_path, "killed", steps_per_function=20), env, held.exists,
                          f"worker 0 to hold its function ({held} written)", kill_worker_0, GUARD_SECONDS)
  assert proc.returncode == 0, stderr[-3000:]
  own = [l for l in stderr.splitlines() if not l.startswith("[")]  # the launcher's own lines
  assert own == ["note: worker 0 was killed by SIGKILL; the other 1 worker(s) go on (the coordinator reruns its "
                 "functions on them)."], stderr[-3000:]
  record = json.load(open(tmp_path / "killed.json"))
  faults = record["faults"]
  assert faults["rescheduled_functions"] >= 1 and faults["duplicate_updates"] >= 1, faults
  assert faults["workers_alive_at_end"] == 1 and "applied twice" in faults["note"]
  assert record["layers"][1]["epochs"][-1]["loss"] > 0 and record["finetune"]["test_accuracy"] > 0.1
  assert faults["layers"][1]["epochs"][-1]["functions_per_worker"][0] == 0  # worker 0 is gone


def test_no_worker_left_ends_the_run_after_the_recovery_seconds(tmp_path):
  # Both workers killed while worker 0 holds a function: the run cannot have finished before the kill.
  env, held = _hold_worker_0(tmp_path)

  def kill_workers(proc):
    for task, pid in _tasks_of(tmp_path).items():
      if task[0] == "worker":
        os.kill(pid, signal.SIGKILL)

  proc, stderr = act_when(_launch_command(tmp_path, "lost", worker_recovery_seconds=3), env, held.exists,
                          f"worker 0 to hold its function ({held} written)", kill_workers, GUARD_SECONDS)
  assert proc.returncode != 0 and "Traceback" not in stderr
  chief = [l for l in stderr.splitlines() if l.startswith("[chief] error:")]
  assert len(chief) == 1 and "has accepted a connection for 3 s (--worker_recovery_seconds)" in chief[0], stderr[-3000:]
  assert not (tmp_path / "lost.json").exists()


def test_killed_parameter_server_ends_the_run_with_one_line_and_the_same_command_resumes(tmp_path):
  # Tasks started here with their TF_CONFIG, as on separate machines (no launcher to stop anything).
  flags = _flags(tmp_path, "ps_lost", num_devices=1, pretrain_epochs=3, model_dir=tmp_path / "model",
                 benchmark_slow_worker_delay_seconds=0.02)
  tasks = dict(launch.cluster_tasks(2, True, ps=1))
  command = [python(), "-m", PROGRAM.module, *flags]
  servers = {name: subprocess.Popen(command, cwd=ROOT, env=_env(TF_CONFIG=json.dumps(tf_config)),
                                    stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
             for name, tf_config in tasks.items() if name != "chief"}
  try:
    spec = tasks["chief"]["cluster"]

    def listening():
      ended = {name: s.returncode for name, s in servers.items() if s.poll() is not None}
      assert not ended, f"servers ended before they listened: {ended}"
      return all(map(ports.listening, spec["worker"] + spec["ps"]))
    wait_for(listening, "the workers' and the parameter server's TensorFlow servers to accept connections",
             GUARD_SECONDS)
    proc, stderr = _watch(command, "layer 1/2 epoch 1/3", lambda _: servers["ps 0"].kill(),
                          env=_env(TF_CONFIG=json.dumps(tasks["chief"])))
  finally:
    for server in servers.values():
      server.kill()
  assert proc.returncode == 1 and "Traceback" not in stderr, stderr[-3000:]
  lines = _error_lines(stderr)
  assert len(lines) == 1 and "/job:ps/replica:0/task:0" in lines[0] and "--model_dir" in lines[0], stderr[-3000:]
  assert not (tmp_path / "ps_lost.json").exists()

  # The same command (a new local cluster) resumes from the last checkpoint and finishes.
  resumed = subprocess.run(_launch_command(tmp_path, "ps_lost", pretrain_epochs=3, model_dir=tmp_path / "model",
                                           benchmark_slow_worker_delay_seconds=0.02),
                           cwd=ROOT, env=_env(), capture_output=True, text=True, timeout=GUARD_SECONDS)
  assert resumed.returncode == 0, resumed.stderr[-3000:]
  assert "Resuming from" in resumed.stderr
  record = json.load(open(tmp_path / "ps_lost.json"))
  assert record["resumed"] and record["run_processes"] == 2 and record["finetune"]["test_accuracy"] > 0.1
  assert [len(l["epochs"]) for l in record["layers"]] == [3, 3]
  assert [[e["epoch"] for e in l["epochs"]] for l in record["staleness"]["layers"]] == [[1, 2, 3], [1, 2, 3]]


# ------------------------------------------------------------------ bad input: one line, before training

def _tf_config(cluster_spec, kind="chief"):
  return {cluster.TF_CONFIG: json.dumps({"cluster": cluster_spec, "task": {"type": kind, "index": 0}})}


BAD = {
    "function_size_zero": (["--steps_per_function=0"], None, "--steps_per_function=0: must be a positive integer"),
    "function_size_negative": (["--steps_per_function=-4"], None, "must be a positive integer"),
    "recovery_zero": (["--worker_recovery_seconds=0"], None, "--worker_recovery_seconds=0"),
    "delay_negative": (["--benchmark_slow_worker_delay_seconds=-1"], None, "--benchmark_slow_worker_delay_seconds"),
    "xla": (["--kernels=xla"], None, "TensorFlow's default kernels only"),
    "no_ps_chief": ([], _tf_config({"worker": ["127.0.0.1:1"], "chief": ["127.0.0.1:2"]}),
                    "needs at least one \"ps\" task"),
    "no_ps_worker": ([], _tf_config({"worker": ["127.0.0.1:1"], "chief": ["127.0.0.1:2"]}, "worker"),
                     "needs at least one \"ps\" task"),
    "no_chief": ([], _tf_config({"worker": ["127.0.0.1:1"], "ps": ["127.0.0.1:2"]}, "worker"),
                 "needs exactly one \"chief\" task"),
    "devices_in_cluster": (["--num_devices=2"], _tf_config({"worker": ["127.0.0.1:1"], "ps": ["127.0.0.1:2"],
                                                            "chief": ["127.0.0.1:3"]}), "use --num_devices=1"),
}


def test_bad_input_is_one_line_before_training():
  with concurrent.futures.ThreadPoolExecutor(max_workers=3) as pool:
    runs = {case: pool.submit(run_module, PROGRAM.module, *flags, "--hidden_units=8", "--train_examples=100",
                              "--results_dir=", env=env, timeout=GUARD_SECONDS)
            for case, (flags, env, _) in BAD.items()}
    launches = {ps: pool.submit(subprocess.run, [python(), "-m", "common.launch", "--workers=2", f"--ps={ps}",
                                                 PROGRAM.module], cwd=ROOT, env=_env(), capture_output=True,
                                text=True, timeout=GUARD_SECONDS) for ps in (0, -1)}
  for case, future in runs.items():
    proc, expected = future.result(), BAD[case][2]
    assert proc.returncode != 0 and "Traceback" not in proc.stderr, (case, proc.stderr[-2000:])
    assert expected in proc.stderr, (case, proc.stderr[-2000:])
    assert "Load dataset info" not in proc.stderr and "layer 1/" not in proc.stderr, case  # before any work
    if BAD[case][1]:  # refused by the program (after the flags): exactly one error line
      assert len(_error_lines(proc.stderr)) == 1, (case, proc.stderr[-2000:])
  for ps, future in launches.items():
    proc = future.result()
    lines = [l for l in proc.stderr.splitlines() if l.strip()]
    assert proc.returncode == 2 and len(lines) == 1, proc.stderr
    assert lines[0] == (f"error: --ps={ps}: {PROGRAM.module} keeps its variables on parameter-server tasks; give "
                        "--ps=1 or more."), lines


def test_help_states_the_nondeterminism():
  proc = run_module(PROGRAM.module, "--helpshort", timeout=GUARD_SECONDS)
  assert "the run is NOT deterministic" in proc.stdout and "op determinism" in proc.stdout, proc.stdout[:3000]
  for flag in ("--steps_per_function", "--staleness_aware_lr", "--worker_recovery_seconds",
               "--benchmark_slow_worker_delay_seconds: BENCHMARK ONLY"):
    assert flag in proc.stdout, flag
