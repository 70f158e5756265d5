"""The Slurm cluster without Slurm (common/distribute/slurm.py, common/base/peers.py): the jobs of each cluster shape
and the refusal of a task count that does not fit, the tasks laid out in Slurm's order, the ports of the next job,
restart and step apart, TF_CONFIG winning, and the tasks learning how each other ended. The programs under a real
Slurm: tests/test_slurm.py."""

import json
import os
import re
import subprocess
import sys
import threading
import time

import pytest

from common.base import peers
from common.base import ports
from common.distribute import cluster
from common.distribute import slurm
from conftest import ROOT


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


PEER = """
import sys
from common.base import peers
rank, addresses = int(sys.argv[1]), sys.argv[2].split(",")
watch = peers.Peers(rank, addresses, lambda r, how: None, 600)
watch.start()
word = sys.stdin.readline().strip()  # what to say before exiting: done, failed, or nothing (killed meanwhile)
watch.end(word)
"""


def test_the_tasks_learn_how_each_other_ended(tmp_path):
  """Rank 0 here; ranks 1, 2 and 3 other processes that end done, killed, failed; rank 4 never starts."""
  addresses = [f"{ports.LOOPBACK}:{p}" for p in ports.free_ports(5)]
  seen, lock = [], threading.Condition()

  def on_end(rank, how):
    with lock:
      seen.append((rank, how))
      lock.notify_all()

  others = {rank: subprocess.Popen([sys.executable, "-c", PEER, str(rank), ",".join(addresses)], cwd=ROOT,
                                   env=dict(os.environ, PYTHONPATH=ROOT), stdin=subprocess.PIPE, text=True)
            for rank in (1, 2, 3)}
  watch = peers.Peers(0, addresses, on_end, start_seconds=3)
  watch.start()
  try:
    while not {1, 2, 3} <= watch.watching:  # each must be watched before it ends to tell how it ended
      time.sleep(0.05)
    for rank, how in ((1, "done"), (2, None), (3, "failed")):
      if how:
        others[rank].stdin.write(how + "\n")
        others[rank].stdin.flush()
      else:
        others[rank].kill()
      others[rank].wait()
      with lock:
        lock.wait_for(lambda: rank in dict(seen))
    with lock:
      lock.wait_for(lambda: len(seen) == 4)
    assert dict(seen) == {1: peers.DONE, 2: peers.LOST, 3: peers.FAILED, 4: peers.ABSENT} == watch.ended, seen
  finally:
    watch.end(peers.DONE)
    for proc in others.values():
      proc.kill()
      proc.wait()
