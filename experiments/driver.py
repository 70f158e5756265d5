"""Runs the training programs of a preset as subprocesses, one record per run.

Each run is `python -m <program>.train <flags> --results_dir=<output_dir>/runs/<entry>
--run_name=<preset>_<run> --progress=log` in its own process (each needs its own device setup: G
logical CPU devices with one thread each, fixed when TensorFlow starts). A run whose record exists is
skipped (after checking its flags still match the preset); a failing run stops the driver with its
command and the end of its log, keeping every finished record. Progress: one line when a run starts
and one when it ends, with the elapsed time and an ETA (the budget estimate of the remaining runs,
scaled by measured / estimated so far). Each finished run appends a line to
<output_dir>/runs/driver_log.jsonl (wall seconds, estimate, command).
"""

import concurrent.futures
import dataclasses
import datetime
import json
import os
import subprocess
import sys
import threading
import time
from typing import Callable, Dict, List, Mapping, Optional, Sequence

from experiments import budget
from experiments import presets
from experiments import records

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
LOG_TAIL_LINES = 25


class RunFailedError(Exception):
  """A training program exited with an error; the message names the run, its command and log."""


@dataclasses.dataclass(frozen=True)
class Job:
  """One run to do: which entry listed it first, its place there, and where its outputs go."""
  entry: str
  index: int  # 1-based within the entry
  count: int  # runs of the entry
  run: presets.RunSpec
  record: str  # record path
  log: str  # stdout + stderr of the program
  model_dir: Optional[str]
  estimate: float  # seconds


def _clock(seconds: float) -> str:
  return str(datetime.timedelta(seconds=int(round(max(seconds, 0.0)))))


def plan(entries: Mapping[str, presets.Entry], preset: str, output_dir: str, work_dir: str,
         cores: int) -> List[Job]:
  """The runs of `entries` in order, each once (a run shared by two entries goes with the first)."""
  jobs, seen = [], set()
  for name, entry in entries.items():
    for i, run in enumerate(entry.runs):
      where = (run.home, run.stored_name)
      if where in seen:
        continue
      seen.add(where)
      stem = f"{preset}_{run.stored_name}"
      jobs.append(Job(name, i + 1, len(entry.runs), run, records.record_path(output_dir, preset, run),
                      os.path.join(work_dir, "logs", run.home, stem + ".log"),
                      os.path.join(work_dir, "checkpoints", run.home, stem) if run.resumable else None,
                      budget.run_seconds(run, cores)))
  return jobs


def command(job: Job, preset: str, modules: Optional[Mapping[str, str]] = None) -> List[str]:
  """The command line of a job: `python -m <module> <flags>` (module default: <program>.train)."""
  module = (modules or {}).get(job.run.program, f"{job.run.program}.train")
  args = [sys.executable, "-m", module, *job.run.arguments(),
          f"--results_dir={os.path.dirname(job.record)}", f"--run_name={preset}_{job.run.stored_name}",
          "--progress=log"]
  if job.model_dir:
    args.append(f"--model_dir={job.model_dir}")
  return args


def _environment() -> Dict[str, str]:
  env = dict(os.environ)
  env["PYTHONPATH"] = ROOT + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
  shared = os.path.join(ROOT, "..", "shared", "tensorflow_datasets")
  if "TFDS_DATA_DIR" not in env and os.path.isdir(shared):
    env["TFDS_DATA_DIR"] = os.path.abspath(shared)
  env.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
  return env


def _tail(path: str, lines: int = LOG_TAIL_LINES) -> str:
  try:
    with open(path) as f:
      return "".join(f.readlines()[-lines:])
  except OSError:
    return "(no log)"


class Driver:
  """Runs jobs and reports progress.

  Args:
    preset: the preset name (record names start with it).
    output_dir: records go to <output_dir>/runs/.
    jobs: runs at once (1 for anything timed; more only for the smoke preset).
    modules: {program: module} overriding `<program>.train` (tests use stand-ins).
    out: where progress lines go.
  """

  def __init__(self, preset: str, output_dir: str, jobs: int = 1, modules: Optional[Mapping[str, str]] = None,
               out: Callable[[str], None] = print):
    self.preset, self.output_dir, self.jobs, self.modules, self.out = preset, output_dir, jobs, modules, out
    self._lock = threading.Lock()
    self._start = time.perf_counter()
    self._measured = 0.0
    self._estimated_done = 0.0
    self._estimated_left = 0.0
    self._done = 0
    self._total = 0

  def _eta(self) -> float:
    scale = self._measured / self._estimated_done if self._estimated_done else 1.0
    return self._estimated_left * min(max(scale, 0.25), 4.0) / self.jobs

  def _line(self, job: Job, what: str) -> None:
    with self._lock:
      self.out(f"[reproduce {self.preset}] {self._done}/{self._total} {job.entry} run {job.index}/{job.count} "
               f"{job.run.stored_name}: {what} | elapsed {_clock(time.perf_counter() - self._start)} "
               f"| ETA {_clock(self._eta())}")

  def _run(self, job: Job) -> None:
    os.makedirs(os.path.dirname(job.log), exist_ok=True)
    cmd = command(job, self.preset, self.modules)
    self._line(job, f"start {job.run.summary()} (estimate {_clock(job.estimate)})")
    started = time.perf_counter()
    with open(job.log, "w") as log:
      log.write(" ".join(cmd) + "\n")
      log.flush()
      code = subprocess.call(cmd, cwd=ROOT, env=_environment(), stdout=log, stderr=subprocess.STDOUT)
    seconds = time.perf_counter() - started
    if code != 0 or not os.path.exists(job.record):
      raise RunFailedError(
          f"{job.entry}/{job.run.stored_name} failed (exit status {code}) after {seconds:.0f} s. Finished records "
          f"are kept; rerun to continue.\ncommand: {' '.join(cmd)}\nlast lines of {job.log}:\n{_tail(job.log)}")
    with self._lock:
      self._done += 1
      self._measured += seconds
      self._estimated_done += job.estimate
      self._estimated_left -= job.estimate
      with open(os.path.join(self.output_dir, "runs", "driver_log.jsonl"), "a") as f:
        f.write(json.dumps({"preset": self.preset, "entry": job.run.home, "run": job.run.stored_name,
                            "wall_seconds": round(seconds, 3), "estimated_seconds": round(job.estimate, 3),
                            "parallel_jobs": self.jobs, "command": cmd[2:],
                            "finished_utc": datetime.datetime.now(datetime.timezone.utc).isoformat(
                                timespec="seconds")}) + "\n")
    self._line(job, f"done in {_clock(seconds)} (estimate {_clock(job.estimate)})")

  def run(self, jobs: Sequence[Job]) -> int:
    """Runs every job whose record is missing; returns how many ran.

    Raises:
      RunFailedError: a program failed, or a stored record no longer matches its preset's flags.
    """
    todo = []
    for job in jobs:
      record = records.load(job.record)
      if record is None:
        todo.append(job)
        continue
      stale = records.mismatches(record, job.run)
      if stale:
        raise RunFailedError(f"{job.record} was made with other flags than the preset's: {', '.join(stale)}. "
                             "Delete it to rerun.")
    os.makedirs(os.path.join(self.output_dir, "runs"), exist_ok=True)
    self._total = len(todo)
    self._estimated_left = sum(j.estimate for j in todo)
    self.out(f"[reproduce {self.preset}] {len(jobs) - len(todo)} of {len(jobs)} records exist; running {len(todo)} "
             f"(estimate {_clock(self._eta())})")
    if self.jobs == 1:
      for job in todo:
        self._run(job)
      return len(todo)
    with concurrent.futures.ThreadPoolExecutor(self.jobs) as pool:
      futures = [pool.submit(self._run, job) for job in todo]
      failure = None
      for future in concurrent.futures.as_completed(futures):
        if future.cancelled() or future.exception() is None or failure is not None:
          continue
        failure = future.exception()
        for f in futures:
          f.cancel()  # Runs not started yet; running ones finish and keep their records.
      if failure is not None:
        raise failure
    return len(todo)
