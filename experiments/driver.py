"""The one runner: `call` is the one place a subprocess starts; `run` starts each program through it, skips recorded
runs whose flags match, stops on a failure keeping finished records, prints progress and logs each run; `listing`
is --dry_run's list of the runs, with the seconds and machine of those that have a record."""

import concurrent.futures
import dataclasses
import datetime
import json
import os
import subprocess
import sys
import threading
import time
from typing import IO, Callable, Dict, List, Mapping, Optional, Sequence

from common.measure import provenance
from common.settings import programs
from experiments import ROOT, presets, records

LOG_TAIL_LINES = 25
# The offline MNIST copy beside the repository (the programs' TFDS_DATA_DIR unless set).
SHARED_DATA = os.path.abspath(os.path.join(ROOT, "..", "shared", "tensorflow_datasets"))


def call(command: Sequence[str], log: Optional[IO] = None, capture: bool = False) -> subprocess.CompletedProcess:
  """Runs `command` from the repository root with the repository on PYTHONPATH, the offline MNIST copy and no
  TF_CONFIG (a local run), its output into the file `log`, captured (`capture`) or streamed; returns the process."""
  env = {k: v for k, v in os.environ.items() if k != "TF_CONFIG"}
  env["PYTHONPATH"] = os.pathsep.join(p for p in (ROOT, env.get("PYTHONPATH")) if p)
  if os.path.isdir(SHARED_DATA):
    env.setdefault("TFDS_DATA_DIR", SHARED_DATA)
  env.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
  pipe = subprocess.PIPE if capture else None
  return subprocess.run(list(command), cwd=ROOT, env=env, text=True, stdout=log or pipe,
                        stderr=subprocess.STDOUT if log else pipe)


def start_all(commands: Sequence[Sequence[str]]) -> List[Dict]:
  """Runs `commands` at once (started one right after another, as `call` runs one) and returns the JSON each printed
  last; RuntimeError naming the first that failed."""
  env = {k: v for k, v in os.environ.items() if k != "TF_CONFIG"}
  env["PYTHONPATH"] = os.pathsep.join(p for p in (ROOT, env.get("PYTHONPATH")) if p)
  env.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
  procs = [subprocess.Popen(list(c), cwd=ROOT, env=env, text=True, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
           for c in commands]
  out = []
  for command, proc in zip(commands, procs):
    stdout, stderr = proc.communicate()
    if proc.returncode:
      raise RuntimeError(f"{' '.join(command)} failed (exit status {proc.returncode}):\n{stderr[-3000:]}")
    out.append(json.loads(stdout.strip().splitlines()[-1]))
  return out


def runnable_here(jobs: Sequence["Job"], out: Callable[[str], None] = print) -> List["Job"]:
  """`jobs` but, on a CPU without native bfloat16, the mixed_bfloat16 ones lacking a record (left out, named)."""
  native = provenance.native_cpu_bfloat16(*provenance.read_cpu_flags()) is not None
  left = [j for j in jobs if not native and j.spec.config.precision == programs.PRECISIONS[1]
          and records.load(j.record) is None]
  if left:
    out(f"[driver] leaving out {len(left)} bfloat16 run(s) without a record ({', '.join(j.run_name for j in left)}): "
        "this processor has no native bfloat16, which the programs need for them")
  return [j for j in jobs if j not in left]


class RunFailedError(Exception):
  """A training program exited with an error, or a stored record no longer matches its run."""


@dataclasses.dataclass(frozen=True)
class Job:
  """One run to do: group (study, benchmark), place among `count`, spec, record, log, checkpoints, preset."""
  group: str
  index: int
  count: int
  spec: presets.Run
  record: str
  log: str
  model_dir: Optional[str]
  preset: Optional[str] = None

  @property
  def run_name(self) -> str:
    """The record's file name without .json: the program's --run_name."""
    return os.path.splitext(os.path.basename(self.record))[0]


def job(group: str, index: int, count: int, spec: presets.Run, record: str, work_dir: str,
        preset: Optional[str] = None) -> Job:
  """A Job whose log (and checkpoints, if resumable) go under `work_dir`/<logs|checkpoints>/<group>/."""
  stem = os.path.splitext(os.path.basename(record))[0]
  return Job(group, index, count, spec, record, os.path.join(work_dir, "logs", group, stem + ".log"),
             os.path.join(work_dir, "checkpoints", group, stem) if spec.resumable else None, preset)


def plan(studies: presets.StudyRuns, preset: str, output_dir: str, work_dir: str) -> List[Job]:
  """The runs of a preset's studies in order, each once: a run shared by studies goes with the first listing it."""
  jobs, seen = [], set()
  for name, runs in studies.items():
    for i, r in enumerate(runs):
      if (r.home, r.stored_name) not in seen:
        seen.add((r.home, r.stored_name))
        jobs.append(job(name, i + 1, len(runs), r, presets.record_path(output_dir, preset, r), work_dir, preset))
  return jobs


def command(j: Job, modules: Optional[Mapping[str, str]] = None) -> List[str]:
  """`python -m [launcher] <module> <arguments>` of a job (and its record, log, checkpoints); `modules` override."""
  module = (modules or {}).get(j.spec.program) or programs.get(j.spec.program).module
  return [sys.executable, "-m", *j.spec.launcher, module, *j.spec.arguments(),
          f"--results_dir={os.path.dirname(j.record)}", f"--run_name={j.run_name}", "--progress=log",
          *([f"--model_dir={j.model_dir}"] if j.model_dir else [])]


def failure_record(j: Job, cmd: Sequence[str], code: int) -> Dict:
  """Writes and returns the record of a run allowed to fail (`Run.may_fail`: a sweep's candidate that diverged) that
  exited with status `code`: its program, flags, machine and its log's error line, a result the driver goes on from."""
  with open(j.log) as log:
    errors = [line.strip() for line in log if line.startswith("error: ")]
  record = {"strategy": j.spec.program, "run_name": j.run_name, "failed": errors[-1][7:] if errors else
            f"exit status {code}", "exit_status": code, "command": list(cmd[2:]),
            "config": j.spec.config.to_dict(), "environment": provenance.fields()}
  with open(j.record, "w") as f:
    json.dump(record, f, indent=1)
  return record


def _clock(seconds: float) -> str:
  return str(datetime.timedelta(seconds=int(round(max(seconds, 0.0)))))


def run(jobs: Sequence[Job], title: str, driver_log: Optional[str] = None, parallel: int = 1,
        modules: Optional[Mapping[str, str]] = None, out: Callable[[str], None] = print) -> int:
  """Runs every job without a record, `parallel` at a time (1 for anything timed); returns how many ran. `modules`
  replaces programs' modules (tests); RunFailedError when a program fails (unless its run `may_fail`: then its failure
  record) or a record no longer matches its run."""
  todo = [j for j in jobs if records.load(j.record) is None]
  for j in (j for j in jobs if j not in todo):
    if stale := records.mismatches(records.load(j.record), j.spec):
      raise RunFailedError(f"{j.record} was made with other flags than its run: {', '.join(stale)}. "
                           "Delete it to rerun.")
  lock, started, done = threading.Lock(), time.perf_counter(), {"runs": 0}
  # This machine in the driver log, in `records.host`'s words ("AMD EPYC, AVX2, 2 cores": the cores this process has).
  isa = provenance.instruction_set(provenance.cpu_flags()) or records.NO_ISA
  here = f"{records.processor(provenance.cpu_model())}, {isa}, {provenance.usable_cores()} cores"

  def progress(j: Job, what: str) -> None:
    with lock:
      out(f"[{title}] {done['runs']}/{len(todo)} {j.group} run {j.index}/{j.count} {j.run_name}: {what} "
          f"| elapsed {_clock(time.perf_counter() - started)}")

  def start(j: Job) -> None:
    os.makedirs(os.path.dirname(j.log), exist_ok=True)
    os.makedirs(os.path.dirname(j.record), exist_ok=True)
    cmd, t0 = command(j, modules), time.perf_counter()
    progress(j, f"start {j.spec.summary()}")
    with open(j.log, "w") as log:
      print(" ".join(cmd), file=log, flush=True)
      code = call(cmd, log).returncode
    seconds, record = time.perf_counter() - t0, records.load(j.record)
    if (code != 0 or record is None) and j.spec.may_fail:
      record = failure_record(j, cmd, code)  # a result the driver goes on from, not a failure of the driver
    elif code != 0 or record is None:
      with open(j.log) as log:
        tail = "".join(log.readlines()[-LOG_TAIL_LINES:])
      raise RunFailedError(
          f"{j.group}/{j.spec.stored_name if j.preset else j.run_name} failed (exit status {code}) after {seconds:.0f} "
          f"s. Finished records are kept; rerun to continue.\ncommand: {' '.join(cmd)}\nlast lines of {j.log}:\n{tail}")
    with lock:
      done["runs"] += 1
      if driver_log:
        finished = datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")
        with open(driver_log, "a") as f:
          print(json.dumps({"preset": j.preset, "entry": j.group, "run": j.spec.stored_name, "machine": here,
                            "wall_seconds": round(seconds, 3), "parallel_jobs": parallel, "command": cmd[2:],
                            "finished_utc": finished}), file=f)
    progress(j, f"failed: {record['failed']}" if record.get("failed") else
             f"done in {_clock(seconds)}, pretraining {record['pretrain_seconds']:.2f} s")

  out(f"[{title}] {len(jobs) - len(todo)} of {len(jobs)} records exist; running {len(todo)}")
  if driver_log:
    os.makedirs(os.path.dirname(driver_log), exist_ok=True)
  with concurrent.futures.ThreadPoolExecutor(parallel) as pool:
    futures = [pool.submit(start, j) for j in todo] if parallel > 1 else []
    for j in todo if parallel == 1 else ():
      start(j)
    for future in concurrent.futures.as_completed(futures):
      if future.exception() is not None:  # runs not started yet are cancelled; running ones finish, keep their records
        pool.shutdown(wait=False, cancel_futures=True)
        raise future.exception()
  return len(todo)


def listing(jobs: Sequence[Job]) -> List[str]:
  """--dry_run's lines: per group its runs (those recorded and those to run), then each run, its summary and record,
  and for a recorded one its seconds (`total_seconds`, else pretraining's) and machine (`records.host`)."""
  lines = []
  for group in dict.fromkeys(j.group for j in jobs):
    mine = [(j, records.load(j.record)) for j in jobs if j.group == group]
    recorded = sum(r is not None for _, r in mine)
    lines.append(f"{group}: {len(mine)} runs, {recorded} recorded, {len(mine) - recorded} to run")
    lines += [f"  {j.spec.stored_name or j.run_name}: {j.spec.summary()} -> {j.record}" + (
        "" if r is None else f" (recorded: {r.get('total_seconds') or r.get('pretrain_seconds', 0):.0f} s on "
        f"{records.host(r)})") for j, r in mine]
  return lines
