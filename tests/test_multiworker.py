"""Past one machine, on TensorFlow's distributed runtime: `python -m common.launch` runs 2 local worker
processes with TF_CONFIG. Multi-worker data parallel (MultiWorkerMirroredStrategy, one replica per
worker) exports greedy's weights; model parallel on a cluster (layer j on worker j's tf.distribute.Server,
driven by a client) exports sync_layerwise's; pipeline parallel on a cluster (stage p on worker p) exports
its one-device weights; a worker killed mid-run makes the launcher stop everything
with one error line, and the same command resumes from the chief's checkpoint to the same weights."""

import json
import os
import re
import subprocess
import sys
import threading
import types

import pytest
import tensorflow as tf

from common import launch
from common.artifacts import runlog
from common.distribute import cluster
from common.settings import config as config_lib
from common.settings import programs
from greedy import pretrain as greedy
from pipeline_parallel import config as pp_config
from pipeline_parallel import pretrain as pipeline
from sync_layerwise import pretrain as sync_layerwise
from conftest import CLUSTER_BASE, ROOT, assert_same_weights, cluster_flags, python

# Start this process's runtime with conftest's logical devices (the reference runs happen in-process).
assert len(tf.config.list_logical_devices("CPU")) >= 2

def _launch(program, flags, env=None, timeout=600, interpreter=None):
  """Runs the launcher with 2 workers (through the fork server unless `interpreter` is given); returns the
  CompletedProcess."""
  full_env = dict(os.environ, PYTHONPATH=ROOT, **(env or {}))
  full_env.pop(cluster.TF_CONFIG, None)
  return subprocess.run([interpreter or python(), "-m", "common.launch", "--workers=2", program, *flags], cwd=ROOT,
                        env=full_env, capture_output=True, text=True, timeout=timeout)


@pytest.fixture(scope="module")
def greedy_run(tmp_path_factory):
  """Greedy in this process at the same global batch: (record, exported weights)."""
  tmp = tmp_path_factory.mktemp(programs.GREEDY.name)
  record = greedy.train(config_lib.Config(results_dir=str(tmp), run_name=programs.GREEDY.name,
                                        export_weights=str(tmp / "greedy.npz"), **CLUSTER_BASE))
  return record, runlog.load_weights(str(tmp / "greedy.npz"))


def _dp_flags(tmp_path, name, **kw):
  return cluster_flags(tmp_path, name, num_devices=1, profile_steps=0, **kw)


def test_two_workers_data_parallel_exports_greedys_weights(tmp_path, greedy_run):
  greedy_record, want = greedy_run
  proc = _launch(programs.DATA_PARALLEL.module, _dp_flags(tmp_path, "dp"))
  assert proc.returncode == 0, proc.stderr[-3000:]
  assert_same_weights(runlog.load_weights(str(tmp_path / "dp.npz")), want)
  # Both workers trained (each prints the program's summary); the chief alone wrote the record.
  for worker in (0, 1):
    assert f"[worker {worker}] data_parallel: pretraining" in proc.stdout, proc.stdout[-2000:]
  assert sorted(os.listdir(tmp_path)) == ["dp.json", "dp.npz"]
  record = json.load(open(tmp_path / "dp.json"))
  env = record["environment"]
  assert env["cluster"]["task"] == {"type": "worker", "index": 0} and len(env["cluster"]["worker"]) == 2
  assert env["cluster"]["replicas"] == 2
  assert [d.split("/device:")[0] for d in env["devices"]] == [
      "/job:worker/replica:0/task:0", "/job:worker/replica:0/task:1"]
  for a, b in zip(record["layers"], greedy_record["layers"]):
    assert [e["loss"] for e in a["epochs"]] == pytest.approx([e["loss"] for e in b["epochs"]], rel=1e-5)
  # Finetuning runs on both workers too, with the same result as greedy's single device.
  assert record["finetune"]["history"][0]["loss"] == pytest.approx(greedy_record["finetune"]["history"][0]["loss"],
                                                                   rel=1e-5)
  assert abs(record["finetune"]["test_accuracy"] - greedy_record["finetune"]["test_accuracy"]) <= 2e-4


def test_cluster_model_parallel_exports_sync_layerwise_weights(tmp_path):
  sync = sync_layerwise.train(config_lib.Config(program=programs.SYNC_LAYERWISE.name, results_dir=str(tmp_path),
                                              run_name="sync", export_weights=str(tmp_path / "sync.npz"), **CLUSTER_BASE))
  proc = _launch(programs.MODEL_PARALLEL.module, cluster_flags(tmp_path, "mp", num_devices=1))
  assert proc.returncode == 0, proc.stderr[-3000:]
  assert_same_weights(runlog.load_weights(str(tmp_path / "mp.npz")), runlog.load_weights(str(tmp_path / "sync.npz")))
  # Two servers and one client (the chief), which ran the schedule with layer j on worker j.
  assert "[worker 0]" in proc.stderr and "[worker 1]" in proc.stderr
  assert "[chief] model_parallel: pretraining" in proc.stdout, proc.stdout[-2000:]
  record = json.load(open(tmp_path / "mp.json"))
  assert record["environment"]["cluster"]["task"] == {"type": "chief", "index": 0}
  assert [l["device"] for l in record["layers"]] == [
      f"/job:worker/replica:0/task:{j}/device:CPU:0" for j in (0, 1)]
  steps = record["schedule"]["steps"]
  assert [s["active_layers"] for s in steps] == [[1], [1, 2], [1, 2]]
  assert all(s["copy_seconds"] > 0 for s in steps)  # The per-epoch weight copy, task 0 -> task 1.
  for a, b in zip(record["layers"], sync["layers"]):
    assert [e["loss"] for e in a["epochs"]] == pytest.approx([e["loss"] for e in b["epochs"]], abs=1e-4)
  # Finetuning ran on the client, as sync_layerwise's on its one device.
  assert record["finetune"]["test_accuracy"] == pytest.approx(sync["finetune"]["test_accuracy"], abs=1e-3)


def test_cluster_pipeline_parallel_exports_the_one_device_weights(tmp_path):
  local = pipeline.train(pp_config.PipelineConfig(results_dir=str(tmp_path), run_name="local",
                                                export_weights=str(tmp_path / "local.npz"), **CLUSTER_BASE))
  proc = _launch(programs.PIPELINE_PARALLEL.module, cluster_flags(tmp_path, "pp", num_devices=1, pipeline_chunk_steps=5))
  assert proc.returncode == 0, proc.stderr[-3000:]
  assert_same_weights(runlog.load_weights(str(tmp_path / "pp.npz")), runlog.load_weights(str(tmp_path / "local.npz")))
  assert "[chief] pipeline_parallel: pretraining" in proc.stdout, proc.stdout[-2000:]
  record = json.load(open(tmp_path / "pp.json"))
  assert record["environment"]["cluster"]["task"] == {"type": "chief", "index": 0}
  # Stage p (layer p + 1) on worker p: the activations crossed from task 0 to task 1 over gRPC.
  assert record["pipeline"]["stages"] == [[1], [2]]
  assert [l["device"] for l in record["layers"]] == [
      f"/job:worker/replica:0/task:{j}/device:CPU:0" for j in (0, 1)]
  assert record["finetune"]["test_accuracy"] == pytest.approx(local["finetune"]["test_accuracy"], abs=1e-3)


def test_cluster_pipeline_with_a_stage_replicated_on_two_workers_equals_one_process(tmp_path):
  """--replicas_per_stage=2 on 2 workers of one device each: one stage, its two replicas on the two workers, the
  gradients all-reduced between them by TensorFlow's collectives over gRPC; the weights of one process."""
  local = pipeline.train(pp_config.PipelineConfig(results_dir=str(tmp_path), run_name="local",
                                                export_weights=str(tmp_path / "local.npz"), **CLUSTER_BASE))
  proc = _launch(programs.PIPELINE_PARALLEL.module,
                 cluster_flags(tmp_path, "pp", num_devices=1, pipeline_chunk_steps=5, replicas_per_stage=2))
  assert proc.returncode == 0, proc.stderr[-3000:]
  assert_same_weights(runlog.load_weights(str(tmp_path / "pp.npz")), runlog.load_weights(str(tmp_path / "local.npz")))
  record = json.load(open(tmp_path / "pp.json"))
  assert record["pipeline"]["stages"] == [[1, 2]] and record["pipeline"]["replicas_per_stage"] == 2
  assert [d.split("/device:")[0] for d in record["pipeline"]["devices"][0]] == [
      "/job:worker/replica:0/task:0", "/job:worker/replica:0/task:1"]
  for a, b in zip(record["layers"], local["layers"]):
    assert [e["loss"] for e in a["epochs"]] == pytest.approx([e["loss"] for e in b["epochs"]], rel=1e-5)


def test_killed_worker_stops_the_cluster_and_the_same_command_resumes(tmp_path, greedy_run):
  _, want = greedy_run
  flags = _dp_flags(tmp_path, "resumed", model_dir=tmp_path / "model")
  # Worker 1 (not the chief) loses power right after its 2nd checkpoint (layer 1's last epoch): the
  # chief then waits in layer 2's first all-reduce for a peer that is gone, until the launcher stops it.
  # Fresh interpreters: through the fork server a worker's death reaches the launcher a step later (the server
  # reports it to the worker's client), so the chief's own failure may be seen first.
  killed = _launch(programs.DATA_PARALLEL.module, flags, env={cluster.KILL_ENV: "worker:1:2"},
                   interpreter=sys.executable)
  assert killed.returncode != 0
  death = re.search(r"\[worker 1\] .*killing this process \(SIGKILL\) after checkpoint 2 at unix time", killed.stderr)
  assert death, killed.stderr[-3000:]
  # The chief trained no step after its peer died: no epoch of layer 2 ended (it waited in layer 2's first
  # all-reduce until the launcher stopped it).
  assert "[worker 0]" in killed.stderr and "layer 2/2 epoch" not in killed.stderr, killed.stderr[-3000:]
  own = [l for l in killed.stderr.splitlines() if not l.startswith("[")]  # The launcher's own lines.
  assert own == ["error: worker 1 was killed by SIGKILL; stopped the other 1 process(es) of the cluster."], \
      killed.stderr[-3000:]
  assert not os.path.exists(tmp_path / "resumed.npz") and not os.path.exists(tmp_path / "resumed.json")

  final = _launch(programs.DATA_PARALLEL.module, flags)
  assert final.returncode == 0, final.stderr[-3000:]
  assert "[worker 0]" in final.stderr and "Resuming from" in final.stderr
  record = json.load(open(tmp_path / "resumed.json"))
  assert record["resumed"] is True and [len(l["epochs"]) for l in record["layers"]] == [2, 2]
  # Layer 1 was not trained again: only layer 2's and finetuning's epochs were logged by the resumed run.
  assert "[worker 0] I" in final.stderr and "layer 1/2 epoch" not in final.stderr
  assert_same_weights(runlog.load_weights(str(tmp_path / "resumed.npz")), want)


def test_bad_launcher_input_is_one_clear_line():
  for args, message in ((["--workers=0", programs.DATA_PARALLEL.module], "--workers"),
                        (["--workers=2", "no_such_program.train"], "no program module 'no_such_program.train'"),
                        (["--workers=2"], "give the program to run")):
    proc = subprocess.run([python(), "-m", "common.launch", *args], cwd=ROOT, capture_output=True, text=True,
                          env=dict(os.environ, PYTHONPATH=ROOT), timeout=600)
    assert proc.returncode != 0 and "Traceback" not in proc.stderr, proc.stderr
    lines = [l for l in proc.stderr.splitlines() if l.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: ") and message in lines[0], proc.stderr


def test_the_killed_worker_is_named_when_its_peer_has_failed_too_by_the_time_both_are_seen():
  # A killed worker's peer fails at once in its collective (UnavailableError) and may have exited by the launcher's
  # next poll: the line names the killed one, the cause, whatever the order of the tasks.
  class Ended:
    def __init__(self, code):
      self.code = code

    def poll(self):
      return self.code

  for codes in ((1, -9), (-9, 1)):
    launched = launch.Cluster(programs.DATA_PARALLEL.module, [], client_server=False)
    launched.names, launched.procs = ["worker 0", "worker 1"], [Ended(c) for c in codes]
    killed = launched.names[codes.index(-9)]
    assert launched._failure() == (1, f"{killed} was killed by SIGKILL; stopped the other 0 process(es) of the "
                                      "cluster.")


def test_a_killed_non_chief_first_waits_for_the_chiefs_checkpoint(monkeypatch, tmp_path):
  # The KILL_ENV hook of a task that writes no checkpoints kills only once the chief's checkpoint of the same count
  # is on disk, so the rerun resumes from it however slow the chief's write was (a loaded machine).
  monkeypatch.setenv(cluster.TF_CONFIG, json.dumps({"cluster": {"worker": ["a:1", "b:2"]},
                                                    "task": {"type": "worker", "index": 1}}))
  monkeypatch.setenv(cluster.KILL_ENV, "worker:1:2")
  killed_when = []
  monkeypatch.setattr(os, "kill", lambda pid, sig: killed_when.append(
      tf.train.get_checkpoint_state(str(tmp_path)).model_checkpoint_path))
  manager = tf.train.CheckpointManager(tf.train.Checkpoint(v=tf.Variable(1.0)), str(tmp_path), max_to_keep=3)
  hook = cluster.fault_hook_from_environment()
  run = types.SimpleNamespace(checkpoint=types.SimpleNamespace(chief=False, model_dir=str(tmp_path),
                                                               restored_from=None))
  manager.save()
  hook(run)  # Its 1st checkpoint: no kill.
  chief = threading.Timer(1.0, manager.save)  # The chief's 2nd checkpoint lands a second after the hook's call.
  chief.start()
  hook(run)
  chief.join()
  assert killed_when == [os.path.join(str(tmp_path), "ckpt-2")]


def test_tf_config_is_checked(monkeypatch):
  monkeypatch.delenv(cluster.TF_CONFIG, raising=False)
  assert cluster.task() is None
  monkeypatch.setenv(cluster.TF_CONFIG, json.dumps({"cluster": {"worker": ["a:1", "b:2"]},
                                                    "task": {"type": "worker", "index": 1}}))
  assert cluster.task() == ("worker", 1)
  monkeypatch.setenv(cluster.TF_CONFIG, "{not json")
  with pytest.raises(ValueError, match="TF_CONFIG must be JSON"):
    cluster.task()
  monkeypatch.setenv(cluster.TF_CONFIG, json.dumps({"cluster": {"worker": ["a:1"]}, "task": {"type": "worker",
                                                                                           "index": 3}}))
  with pytest.raises(ValueError, match="task worker:3 is not in its cluster"):
    cluster.task()
  # Model parallel needs a client: a cluster of workers only would serve forever.
  monkeypatch.setenv(cluster.TF_CONFIG, json.dumps({"cluster": {"worker": ["a:1"]}, "task": {"type": "worker",
                                                                                           "index": 0}}))
  with pytest.raises(ValueError, match="needs a \"chief\" task"):
    cluster.serve_or_connect(1, 1)
