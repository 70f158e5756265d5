"""The cluster programs under a real Slurm: `srun -n K python -m <program>.train ...` builds the cluster from Slurm
(common/distribute/slurm.py) and gives the weights of the in-process references, as the launcher's cluster does
(tests/test_multiworker.py, tests/test_async_data_parallel.py).

The module starts a one-node Slurm of its own (Debian's slurm-wlm and munge): munged on a private socket, slurmctld
-D and slurmd -D on localhost, with a configuration written to a temporary folder, 4 CPUs declared on any machine
(SlurmdParameters=config_overrides) so that 4 tasks fit; every test of the module shares it, and its daemons are
stopped by their process ids at the end, whatever the tests did. It is skipped, with the reason, only where the
Slurm and munge commands are missing (`.ci/run` installs them) or this process is not root (SlurmUser=root).
What is checked: data_parallel on 2 tasks exports greedy's weights, also from slurm/data_parallel.sbatch; model_parallel on 3 (the chief and 2 workers)
sync_layerwise's; pipeline_parallel on 3 its one-device weights; async_data_parallel on 4 (chief, ps, 2 workers)
reaches greedy's held-out loss within 5% (it is not deterministic); the servers exit when the chief ends (srun
returns); a SIGKILLed worker ends the job step with one error line, and the same command resumes to greedy's weights
on other ports; a lost async worker is one note and the run goes on; a task count that does not fit is refused in one
line before any work; one task runs as a plain run. Without Slurm (the layout, the ports, the watch of the tasks):
tests/test_slurm_layout.py.
"""

import json
import os
import re
import shutil
import signal
import socket
import subprocess
import tempfile

import pytest
import tensorflow as tf

from async_data_parallel import worker_steps
from common.artifacts import runlog
from common.base import ports
from common.distribute import cluster
from common.settings import config as config_lib
from common.settings import programs
from greedy import pretrain as greedy
from pipeline_parallel import config as pp_config
from pipeline_parallel import pretrain as pipeline
from sync_layerwise import pretrain as sync_layerwise
from conftest import (CLUSTER_BASE, ROOT, WAIT_SECONDS, act_when, assert_same_weights, cluster_flags, processes_of,
                      python, wait_for)

# Start this process's runtime with conftest's logical devices (the reference runs happen in-process).
assert len(tf.config.list_logical_devices("CPU")) >= 2

GREEDY, SYNC, PIPELINE = programs.GREEDY.name, programs.SYNC_LAYERWISE.name, programs.PIPELINE_PARALLEL.name
COMMANDS = ("munged", "slurmctld", "slurmd", "srun", "sbatch", "sinfo", "scontrol")
HOST = socket.gethostname().split(".")[0]  # hostname -s: Slurm's name of this node
SLURM_CONF = """\
ClusterName=sdaetest
SlurmctldHost={host}
SlurmctldPort={ctld_port}
SlurmdPort={d_port}
SlurmUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket={folder}/munge.sock
MpiDefault=none
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
SlurmdParameters=config_overrides
ReturnToService=2
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
StateSaveLocation={folder}/state
SlurmdSpoolDir={folder}/spool
SlurmctldPidFile={folder}/slurmctld.pid
SlurmdPidFile={folder}/slurmd.pid
SlurmctldLogFile={folder}/slurmctld.log
SlurmdLogFile={folder}/slurmd.log
NodeName={host} CPUs=4 State=UNKNOWN
PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP
"""


def _found(command):
  return shutil.which(command, path=os.pathsep.join((os.environ.get("PATH", ""), "/usr/sbin", "/sbin")))


def _tail(path, lines=20):
  try:
    with open(path) as f:
      return "".join(f.readlines()[-lines:])
  except OSError as e:
    return repr(e)


@pytest.fixture(scope="module")
def slurm_env():
  """A one-node Slurm started here; yields the environment of its client commands (SLURM_CONF). Its daemons are
  stopped by their pids (slurmd, slurmctld, then munged) when the module's tests are done, whatever they did."""
  missing = [c for c in COMMANDS if _found(c) is None]
  if missing:
    pytest.skip(f"Slurm is not installed here ({', '.join(missing)} not found): apt-get install -y slurm-wlm munge "
                "(.ci/run does) to run the Slurm tests")
  if os.geteuid() != 0:
    pytest.skip("the one-node Slurm of these tests runs its daemons as root (SlurmUser=root); this process is not root")
  folder = tempfile.mkdtemp(prefix="sdae_slurm_")
  os.chmod(folder, 0o711)  # munged refuses a socket folder that others may write to
  for sub in ("state", "spool"):
    os.mkdir(os.path.join(folder, sub))
  key = os.open(os.path.join(folder, "munge.key"), os.O_WRONLY | os.O_CREAT, 0o600)
  os.write(key, os.urandom(1024))
  os.close(key)
  ctld_port, d_port = ports.free_ports(2)
  conf = os.path.join(folder, "slurm.conf")
  with open(conf, "w") as f:
    f.write(SLURM_CONF.format(host=HOST, folder=folder, ctld_port=ctld_port, d_port=d_port))
  env = dict(os.environ, SLURM_CONF=conf)
  daemons = []

  def start(name, *args):
    out = open(os.path.join(folder, f"{name}.out"), "w")
    daemons.append((name, subprocess.Popen([_found(name), *args], env=env, stdout=out, stderr=subprocess.STDOUT,
                                           stdin=subprocess.DEVNULL, start_new_session=True)))

  def dead():
    return [f"{name} exited with status {p.returncode}: {_tail(os.path.join(folder, name + '.out'))}"
            for name, p in daemons if p.poll() is not None]

  try:
    start("munged", "-F", "-S", os.path.join(folder, "munge.sock"), f"--key-file={folder}/munge.key",
          f"--pid-file={folder}/munged.pid", f"--log-file={folder}/munged.log", f"--seed-file={folder}/munge.seed")

    def alive():
      assert not dead(), dead()
      return True
    wait_for(lambda: alive() and os.path.exists(os.path.join(folder, "munge.sock")), "munged to open its socket")
    start("slurmctld", "-D", "-f", conf)
    start("slurmd", "-D", "-f", conf)

    def idle():  # The node registers with the controller once both daemons have started.
      alive()
      state = subprocess.run([_found("sinfo"), "-h", "-o", "%T"], env=env, capture_output=True, text=True).stdout.strip()
      assert not state.startswith(("down", "drain", "fail")), (state, _tail(os.path.join(folder, "slurmd.log")))
      return state == "idle"
    wait_for(idle, "the node to register with slurmctld (sinfo: idle)",
             details=lambda: _tail(os.path.join(folder, "slurmctld.log")) + _tail(os.path.join(folder, "slurmd.log")))
    yield env
  finally:
    for name, proc in reversed(daemons):  # slurmd, slurmctld, munged last
      if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
          proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
          proc.kill()
          proc.wait()
    shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture(scope="module")
def references(tmp_path_factory):
  """The in-process runs the cluster programs must equal, by program: greedy, sync_layerwise and pipeline_parallel on
  one device: {name: (record, weights)}."""
  tmp = tmp_path_factory.mktemp("references")
  runs = {GREEDY: (greedy.train, config_lib.Config), SYNC: (sync_layerwise.train, config_lib.Config),
          PIPELINE: (pipeline.train, pp_config.PipelineConfig)}
  found = {}
  for name, (train, config_cls) in runs.items():
    record = train(config_cls(program=name, results_dir=str(tmp), run_name=name, export_weights=str(tmp / f"{name}.npz"),
                              **CLUSTER_BASE))
    found[name] = record, runlog.load_weights(str(tmp / f"{name}.npz"))
  return found


def _srun_command(env, tasks, program, flags, extra_env=None):
  """(command, environment) of `srun -n tasks python -m program flags...`, the tasks' python the tests' fork
  server."""
  full = dict(env, PYTHONPATH=ROOT, **(extra_env or {}))
  full.pop(cluster.TF_CONFIG, None)
  return [_found("srun"), f"--ntasks={tasks}", python(), "-m", program, *flags], full


def _srun(env, tasks, program, flags, extra_env=None):
  """Runs `_srun_command`'s command; returns the CompletedProcess (subprocess.TimeoutExpired, naming the command,
  when it has not ended within WAIT_SECONDS: a hang guard)."""
  command, full = _srun_command(env, tasks, program, flags, extra_env)
  return subprocess.run(command, cwd=ROOT, env=full, capture_output=True, text=True, timeout=WAIT_SECONDS)


def _errors(stderr):
  """The programs' own error lines (Slurm's own start with "srun:" or "slurmstepd:")."""
  return [line for line in stderr.splitlines() if line.startswith("error:")]


def _clusters(stderr):
  """The cluster every task logged it built from Slurm, in the order logged."""
  return [json.loads(m) for m in re.findall(r"; the cluster: (\{.*\})$", stderr, re.M)]


def _record(tmp_path, name):
  with open(tmp_path / f"{name}.json") as f:
    return json.load(f)


def _assert_slurm_record(record, kinds):
  """The record names Slurm and every task's host (this node), task by task in Slurm's order."""
  manager = record["environment"]["cluster_manager"]
  assert manager["name"] == "slurm" and manager["version"].split()[-1][:2].isdigit(), manager
  assert [(t["type"], t["slurm_task"], t["host"]) for t in manager["tasks"]] == [
      (kind, rank, HOST) for rank, kind in enumerate(kinds)], manager
  assert int(manager["job_id"]) >= 1 and manager["step_id"].isdigit()


def test_data_parallel_on_two_slurm_tasks_exports_greedys_weights(slurm_env, references, tmp_path):
  proc = _srun(slurm_env, 2, programs.DATA_PARALLEL.module,
               cluster_flags(tmp_path, "dp", num_devices=1, profile_steps=0))
  assert proc.returncode == 0, proc.stderr[-3000:]
  assert_same_weights(runlog.load_weights(str(tmp_path / "dp.npz")), references[GREEDY][1])
  assert proc.stdout.count("data_parallel: pretraining") == 2, proc.stdout  # both workers trained
  record = _record(tmp_path, "dp")
  assert record["environment"]["cluster"]["replicas"] == 2
  assert record["environment"]["cluster"]["task"] == {"type": "worker", "index": 0}
  _assert_slurm_record(record, ["worker", "worker"])
  for a, b in zip(record["layers"], references[GREEDY][0]["layers"]):
    assert [e["loss"] for e in a["epochs"]] == pytest.approx([e["loss"] for e in b["epochs"]], rel=1e-5)


def test_the_data_parallel_sbatch_script_runs_as_submitted(slurm_env, references, tmp_path):
  """slurm/data_parallel.sbatch as a user submits it, on this one node (2 tasks, 1 core each) at the tests' size."""
  command = [_found("sbatch"), "--parsable", "--nodes=1", "--ntasks-per-node=2", "--cpus-per-task=1",
             f"--output={tmp_path / 'job.out'}", os.path.join("slurm", "data_parallel.sbatch"), "--recipe=report",
             *cluster_flags(tmp_path, "sbatch", profile_steps=0)]
  env = dict(slurm_env, PYTHON=python(), MODEL_DIR=str(tmp_path / "model"), PYTHONPATH=ROOT)
  env.pop(cluster.TF_CONFIG, None)
  job = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, check=True,
                       timeout=WAIT_SECONDS).stdout.strip()

  def ended():  # sbatch --wait polls only every few seconds
    shown = subprocess.run([_found("scontrol"), "show", "job", "-o", job], env=env, capture_output=True, text=True)
    state = re.search(r"JobState=(\w+)", shown.stdout).group(1)
    return None if state in ("PENDING", "CONFIGURING", "RUNNING", "COMPLETING") else (state, shown)
  state, shown = wait_for(ended, f"sbatch job {job} to end",
                          details=lambda: _tail(str(tmp_path / "job.out")))
  output = (tmp_path / "job.out").read_text()
  assert state == "COMPLETED" and "ExitCode=0:0" in shown.stdout, (shown.stdout, output[-3000:])
  assert_same_weights(runlog.load_weights(str(tmp_path / "sbatch.npz")), references[GREEDY][1])
  record = _record(tmp_path, "sbatch")
  _assert_slurm_record(record, ["worker", "worker"])
  assert record["config"]["model_dir"] == str(tmp_path / "model") and record["config"]["threads_per_device"] == 1


def test_model_parallel_on_three_slurm_tasks_exports_sync_layerwises_weights(slurm_env, references, tmp_path):
  proc = _srun(slurm_env, 3, programs.MODEL_PARALLEL.module, cluster_flags(tmp_path, "mp", num_devices=1))
  assert proc.returncode == 0, proc.stderr[-3000:]
  assert_same_weights(runlog.load_weights(str(tmp_path / "mp.npz")), references[SYNC][1])
  record = _record(tmp_path, "mp")
  _assert_slurm_record(record, ["chief", "worker", "worker"])
  assert [l["device"] for l in record["layers"]] == [f"/job:worker/replica:0/task:{j}/device:CPU:0" for j in (0, 1)]
  # srun returned: both servers stopped when the chief had finished, with status 0.
  assert proc.stderr.count("The chief has finished;") == 2, proc.stderr[-3000:]


def test_pipeline_parallel_on_three_slurm_tasks_exports_the_one_device_weights(slurm_env, references, tmp_path):
  proc = _srun(slurm_env, 3, programs.PIPELINE_PARALLEL.module,
               cluster_flags(tmp_path, "pp", num_devices=1, pipeline_chunk_steps=5))
  assert proc.returncode == 0, proc.stderr[-3000:]
  assert_same_weights(runlog.load_weights(str(tmp_path / "pp.npz")), references[PIPELINE][1])
  record = _record(tmp_path, "pp")
  assert record["pipeline"]["stages"] == [[1], [2]]
  _assert_slurm_record(record, ["chief", "worker", "worker"])


def test_async_data_parallel_on_four_slurm_tasks_reaches_greedys_heldout_loss(slurm_env, references, tmp_path):
  proc = _srun(slurm_env, 4, programs.ASYNC_DATA_PARALLEL.module, cluster_flags(tmp_path, "adp", num_devices=1))
  assert proc.returncode == 0, proc.stderr[-3000:]
  record = _record(tmp_path, "adp")
  for got, want in zip(record["heldout_reconstruction"], references[GREEDY][0]["heldout_reconstruction"]):
    assert abs(got["loss"] - want["loss"]) <= 0.05 * want["loss"], (got, want)
  assert record["async"]["workers"] == 2 and not record["environment"]["cluster"]["in_process"]
  _assert_slurm_record(record, ["chief", "ps", "worker", "worker"])
  per_worker = [sum(e["functions_per_worker"][w] for l in record["faults"]["layers"] for e in l["epochs"])
                for w in (0, 1)]
  assert all(n > 0 for n in per_worker), per_worker  # both workers ran functions


def test_killed_worker_ends_the_step_with_one_line_and_the_same_command_resumes(slurm_env, references, tmp_path):
  flags = cluster_flags(tmp_path, "resumed", num_devices=1, profile_steps=0, model_dir=tmp_path / "model")
  # Worker 1 SIGKILLs itself right after its 2nd checkpoint (layer 1's last epoch; once the chief's is on disk):
  # worker 0 waits in layer 2's first all-reduce for a peer that is gone, until it learns that the peer was lost.
  killed = _srun(slurm_env, 2, programs.DATA_PARALLEL.module, flags, {cluster.KILL_ENV: "worker:1:2"})
  assert killed.returncode != 0
  assert "killing this process (SIGKILL) after checkpoint 2" in killed.stderr, killed.stderr[-3000:]
  assert "layer 2/2 epoch" not in killed.stderr, killed.stderr[-3000:]
  lines = _errors(killed.stderr)
  assert len(lines) == 1 and lines[0].startswith("error: worker 1 (Slurm task 1 on") and "was lost" in lines[0] \
      and "--model_dir" in lines[0], killed.stderr[-3000:]
  assert not (tmp_path / "resumed.json").exists() and not (tmp_path / "resumed.npz").exists()

  final = _srun(slurm_env, 2, programs.DATA_PARALLEL.module, flags)
  assert final.returncode == 0, final.stderr[-3000:]
  assert "Resuming from" in final.stderr and "layer 1/2 epoch" not in final.stderr
  record = _record(tmp_path, "resumed")
  assert record["resumed"] is True and record["run_processes"] == 2
  assert_same_weights(runlog.load_weights(str(tmp_path / "resumed.npz")), references[GREEDY][1])
  # The resumed job step listens on other ports than the killed one.
  used = [{a.rsplit(":", 1)[1] for a in c["worker"]} for c in (_clusters(killed.stderr)[0], _clusters(final.stderr)[0])]
  assert not used[0] & used[1], used


def test_a_lost_async_worker_is_one_note_and_the_run_goes_on(slurm_env, tmp_path):
  # Worker 0 (Slurm task 2) holds its function after an update of its own in layer 1's second epoch or later, until it
  # is killed (the `worker_steps.HOLD_ENV` test hook): killed once it holds, it is in the middle of a function, which
  # the coordinator reruns on worker 1.
  held, killed = tmp_path / "worker_0_holds", []
  steps_per_epoch = CLUSTER_BASE["train_examples"] // CLUSTER_BASE["batch_size"]

  def kill_worker_0(_):
    killed.extend(pid for pid, environment in processes_of(tmp_path).items()
                  if environment.get("SLURM_PROCID") == "2")  # worker 0's (through the fork server: its client)
    for pid in killed:
      os.kill(pid, signal.SIGKILL)

  command, env = _srun_command(slurm_env, 4, programs.ASYNC_DATA_PARALLEL.module,
                               cluster_flags(tmp_path, "lost", num_devices=1, steps_per_function=20),
                               {worker_steps.HOLD_ENV: f"0:{1 + steps_per_epoch}:{held}"})
  _, stderr = act_when(command, env, held.exists, f"worker 0 (Slurm task 2) to hold its function ({held} written)",
                       kill_worker_0)
  assert killed, stderr[-3000:]
  record = _record(tmp_path, "lost")  # the run finished
  assert record["faults"]["workers_alive_at_end"] == 1 and record["faults"]["rescheduled_functions"] >= 1
  notes = [l for l in stderr.splitlines() if l.startswith("note:")]
  assert notes == ["note: worker 0 (Slurm task 2 on " + HOST + ") was lost (its process ended without finishing: "
                   "killed, crashed, or its node failed); the other 1 worker(s) go on (the coordinator reruns its "
                   "functions on them)."], (notes, stderr[-3000:])
  assert not _errors(stderr), stderr[-3000:]


def test_a_task_count_that_does_not_fit_is_one_line_before_any_work(slurm_env, tmp_path):
  proc = _srun(slurm_env, 2, programs.ASYNC_DATA_PARALLEL.module, cluster_flags(tmp_path, "few", num_devices=1))
  assert proc.returncode != 0 and "Traceback" not in proc.stderr
  assert _errors(proc.stderr) == [
      "error: async_data_parallel under Slurm runs task 0 as the chief, the next --ps=1 task(s) as parameter servers "
      "and the rest as workers: it needs at least 3 tasks, and this job step has 2 (srun -n 3 or more)."], proc.stderr
  assert "Load dataset info" not in proc.stderr and not os.listdir(tmp_path)


def test_one_slurm_task_is_a_plain_run(slurm_env, references, tmp_path):
  """A plain run inside an sbatch script: no cluster; model_parallel on 2 devices of its own equals sync_layerwise."""
  proc = _srun(slurm_env, 1, programs.MODEL_PARALLEL.module, cluster_flags(tmp_path, "one", num_devices=2))
  assert proc.returncode == 0, proc.stderr[-3000:]
  assert_same_weights(runlog.load_weights(str(tmp_path / "one.npz")), references[SYNC][1])
  environment = _record(tmp_path, "one")["environment"]
  assert "cluster" not in environment and "cluster_manager" not in environment
