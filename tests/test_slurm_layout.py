"""The Slurm cluster without Slurm (common/distribute/slurm.py, common/base/peers.py): the jobs of each cluster shape
and the refusal of a task count that does not fit, the tasks laid out in Slurm's order, the ports of the next job,
restart and step apart, TF_CONFIG winning, and the tasks learning how each other ended. The programs under a real
Slurm: tests/test_slurm.py."""

import json
import os
import re
import subprocess
import sys
import types

import pytest
import tensorflow as tf

from common.base import peers
from common.base import ports
from common.distribute import cluster
from common.distribute import slurm
from conftest import ROOT, WAIT_SECONDS, wait_for


def _step(monkeypatch, nodes, per_node, rank, node=None, local=None, job=7, step=0, restart=None):
  """This process's environment as a task of a Slurm job step."""
  for name in [k for k in os.environ if k.startswith("SLURM")] + [cluster.TF_CONFIG]:
    monkeypatch.delenv(name, raising=False)
  tasks = sum(int(m.group(1)) * int(m.group(3) or 1) for m in re.finditer(r"(\d+)(\(x(\d+)\))?", per_node))
  values = dict(SLURM_STEP_NUM_TASKS=tasks, SLURM_STEP_NODELIST=nodes, SLURM_STEP_TASKS_PER_NODE=per_node,
                SLURM_PROCID=rank, SLURM_JOB_ID=job, SLURM_STEP_ID=step, SLURMD_NODENAME=node, SLURM_LOCALID=local,
                SLURM_RESTART_COUNT=restart)
  for name, value in values.items():
    if value is not None:
      monkeypatch.setenv(name, str(value))


def test_the_jobs_of_each_shape_and_the_refusal():
  assert slurm.jobs("multi_worker", 3, 1, "p") == {"worker": 3}
  assert slurm.jobs("client_server", 3, 1, "p") == {"chief": 1, "worker": 2}
  assert slurm.jobs("parameter_server", 5, 2, "p") == {"chief": 1, "ps": 2, "worker": 2}
  with pytest.raises(ValueError, match=r"needs at least 4 tasks, and this job step has 3 \(srun -n 4 or more, or "
                                       r"--ps=1\)\.$"):
    slurm.jobs("parameter_server", 3, 2, "p")


def test_the_tasks_are_laid_out_in_slurms_order(monkeypatch):
  # One node: TensorFlow's resolver; task 0 the chief, then the workers, on consecutive ports.
  _step(monkeypatch, "n1", "3", rank=2, node="n1", local=2)
  base = slurm.port_base()
  spec, task = slurm.resolve({"chief": 1, "worker": 2}, base)
  assert spec == {"chief": [f"n1:{base}"], "worker": [f"n1:{base + 1}", f"n1:{base + 2}"]} and task == ("worker", 1)
  # "node9" sorts after "node10" as text: Slurm's order (node9 first, as srun places the tasks) is kept.
  _step(monkeypatch, "node[9-10]", "2(x2)", rank=2, node="node10", local=0)
  base = slurm.port_base()
  spec, task = slurm.resolve({"chief": 1, "ps": 1, "worker": 2}, base)
  assert spec == {"chief": [f"node9:{base}"], "ps": [f"node9:{base + 1}"],
                  "worker": [f"node10:{base}", f"node10:{base + 1}"]} and task == ("worker", 0)
  # A task that is not where srun's block distribution puts it is refused.
  _step(monkeypatch, "node[9-10]", "2(x2)", rank=1, node="node10", local=0)
  with pytest.raises(ValueError, match="Slurm task 1 runs on node10 as its task 0, not on node9 as its task 1"):
    slurm.resolve({"worker": 4}, slurm.port_base())


def test_the_ports_of_the_next_job_restart_and_step_differ(monkeypatch):
  bases = {}
  for key, kw in {"first": {}, "next job": {"job": 8}, "requeued": {"restart": 1}, "next step": {"step": 1}}.items():
    _step(monkeypatch, "n[1-2]", "3(x2)", rank=0, **kw)
    bases[key] = slurm.port_base()
  for key, base in bases.items():
    assert slurm.PORT_LOW <= base and base + 6 <= slurm.PORT_HIGH and (base - slurm.PORT_LOW) % 6 == 0, (key, base)
    others = [b for k, b in bases.items() if k != key]
    assert all(abs(base - b) >= 6 for b in others), bases  # the 6 ports of a node never overlap


def test_tf_config_wins_and_one_task_or_a_one_device_program_makes_no_cluster(monkeypatch):
  _step(monkeypatch, "n1", "2", rank=0, node="n1", local=0)
  assert slurm.start("p", "none") is None and cluster.TF_CONFIG not in os.environ
  given = json.dumps({"cluster": {"worker": ["a:1", "b:2"]}, "task": {"type": "worker", "index": 1}})
  monkeypatch.setenv(cluster.TF_CONFIG, given)
  assert slurm.start("p", "multi_worker") is None and os.environ[cluster.TF_CONFIG] == given
  _step(monkeypatch, "n1", "1", rank=0, node="n1", local=0)
  assert slurm.start("p", "multi_worker") is None and cluster.TF_CONFIG not in os.environ
  assert slurm.ACTIVE is None


@pytest.mark.parametrize("error, waits", [(ValueError("bad flag"), False), (tf.errors.UnavailableError(
    None, None, "Collective ops is aborted by: recvmsg:Connection reset by peer"), True)])
def test_a_task_whose_run_failed_in_tensorflow_waits_for_a_lost_peers_report_before_its_own(monkeypatch, error, waits):
  # A killed peer resets the collective's connections at once: the run's UnavailableError must not be reported (and
  # the others told "failed") before the watch has had its grace to report the lost peer and end the process.
  events = []

  class Watch:
    def end(self, how):
      events.append(("told the others", how))

  monkeypatch.setattr(slurm, "start", lambda *args: slurm.Job("multi_worker", 0, [], [], "7", "0", peers=Watch()))
  monkeypatch.setattr(slurm, "time", types.SimpleNamespace(sleep=lambda seconds: events.append(("waited", seconds))))
  with pytest.raises(type(error)):
    with slurm.task_of_step("p", "multi_worker"):
      raise error
  assert events == [("waited", slurm.LOST_GRACE_SECONDS)] * waits + [("told the others", peers.FAILED)]


PEER = """
import pathlib, sys
from common.base import peers
rank, addresses, listening = int(sys.argv[1]), sys.argv[2].split(","), pathlib.Path(sys.argv[3])
watch = peers.Peers(rank, addresses, lambda r, how: None, 600)
watch.start()
listening.write_text("listening")  # its watch accepts connections from here on
word = sys.stdin.readline().strip()  # what to say before exiting: done, failed, or nothing (killed meanwhile)
watch.end(word)
"""
# How long rank 0 gives the others to accept its connections. Ranks 1-3 listen before rank 0 starts (the test waits for
# their files), so only rank 4's absence, reported when these seconds have passed, depends on it.
START_SECONDS = 1


def test_the_tasks_learn_how_each_other_ended(tmp_path):
  """Rank 0 here; ranks 1, 2 and 3 other processes that end done, killed, failed; rank 4 never starts."""
  addresses = [f"{ports.LOOPBACK}:{p}" for p in ports.free_ports(5)]
  seen = []
  others = {rank: subprocess.Popen([sys.executable, "-c", PEER, str(rank), ",".join(addresses),
                                    str(tmp_path / f"listening{rank}")], cwd=ROOT,
                                   env=dict(os.environ, PYTHONPATH=ROOT), stdin=subprocess.PIPE, text=True)
            for rank in (1, 2, 3)}
  watch = None
  try:
    def listening():
      ended = {rank: proc.returncode for rank, proc in others.items() if proc.poll() is not None}
      assert not ended, f"peer processes ended before they listened: {ended}"
      return all((tmp_path / f"listening{rank}").exists() for rank in others)
    wait_for(listening, "ranks 1, 2 and 3 to listen on their watch addresses")
    watch = peers.Peers(0, addresses, lambda rank, how: seen.append((rank, how)), start_seconds=START_SECONDS)
    watch.start()
    # Each must be watched before it ends to tell how it ended.
    wait_for(lambda: {1, 2, 3} <= watch.watching, "rank 0 to connect to ranks 1, 2 and 3",
             details=lambda: f"watching {sorted(watch.watching)}, seen {seen}")
    for rank, how in ((1, "done"), (2, None), (3, "failed")):
      if how:
        others[rank].stdin.write(how + "\n")
        others[rank].stdin.flush()
      else:
        others[rank].kill()
      others[rank].wait(timeout=WAIT_SECONDS)
      wait_for(lambda: rank in dict(seen), f"rank 0 to learn how rank {rank} ended ({how or 'killed'})",
               details=lambda: f"seen {seen}")
    wait_for(lambda: len(seen) == 4, "rank 0 to learn that rank 4 never started", details=lambda: f"seen {seen}")
    assert dict(seen) == {1: peers.DONE, 2: peers.LOST, 3: peers.FAILED, 4: peers.ABSENT} == watch.ended, seen
  finally:
    if watch is not None:
      watch.end(peers.DONE)
    for proc in others.values():
      proc.kill()
      proc.wait()
