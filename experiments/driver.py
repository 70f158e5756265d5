"""The one runner: every run of an experiment or a benchmark is `python -m <program module> <flags>
--results_dir=... --run_name=... --progress=log` in its own process, from the repository root, through `run`: a run
whose record exists is skipped (if its flags still match), a failing one stops the driver with its command and log
tail (finished records are kept); progress lines with an ETA (`experiments.budget`); one driver-log line per run.
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

from common import programs
from experiments import ROOT
from experiments import budget
from experiments import presets
from experiments import records

LOG_TAIL_LINES = 25


class RunFailedError(Exception):
  """A training program exited with an error, or a stored record no longer matches its run."""


@dataclasses.dataclass(frozen=True)
class Job:
  """One run to do: its group (entry or benchmark), 1-based place among the group's `count` runs, run, record, log,
  checkpoints (resumable runs, else None), estimated wall seconds (`budget.run_seconds`), preset (None: benchmark)."""
  group: str
  index: int
  count: int
  run: presets.RunSpec
  record: str
  log: str
  model_dir: Optional[str]
  estimate: float
  preset: Optional[str] = None

  @property
  def run_name(self) -> str:
    """The record's file name without .json (the program's --run_name)."""
    return os.path.splitext(os.path.basename(self.record))[0]


def job(group: str, index: int, count: int, run: presets.RunSpec, record: str, work_dir: str,
        rates: budget.Rates, preset: Optional[str] = None) -> Job:
  """A Job whose log (and checkpoints, if resumable) go under `work_dir`/<logs|checkpoints>/<group>/."""
  stem = os.path.splitext(os.path.basename(record))[0]
  return Job(group, index, count, run, record, os.path.join(work_dir, "logs", group, stem + ".log"),
             os.path.join(work_dir, "checkpoints", group, stem) if run.resumable else None,
             budget.run_seconds(run, rates), preset)


def plan(entries: Mapping[str, presets.EntryRuns], preset: str, output_dir: str, work_dir: str,
         rates: Optional[budget.Rates] = None) -> List[Job]:
  """The runs of a preset's entries in order, each once (a shared run goes with the first); `budget` estimates."""
  rates, jobs, seen = rates or budget.fit(output_dir), [], set()
  for entry in entries.values():
    for i, r in enumerate(entry.runs):
      if (r.home, r.stored_name) not in seen:
        seen.add((r.home, r.stored_name))
        jobs.append(job(r.home, i + 1, len(entry.runs), r, records.record_path(output_dir, preset, r), work_dir,
                        rates, preset))
  return jobs


def command(j: Job, modules: Optional[Mapping[str, str]] = None) -> List[str]:
  """`python -m [launcher] <module> <flags>` of a job; `modules` ({program: module}) replaces programs' modules."""
  module = (modules or {}).get(j.run.program) or programs.get(j.run.program).module
  return [sys.executable, "-m", *j.run.launcher, module, *j.run.arguments(),
          f"--results_dir={os.path.dirname(j.record)}", f"--run_name={j.run_name}", "--progress=log",
          *([f"--model_dir={j.model_dir}"] if j.model_dir else [])]


def _environment() -> Dict[str, str]:
  """The programs' environment: the repository on PYTHONPATH, the offline MNIST copy, no TF_CONFIG."""
  env = dict(os.environ)
  env.pop("TF_CONFIG", None)
  env["PYTHONPATH"] = ROOT + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
  shared = os.path.join(ROOT, "..", "shared", "tensorflow_datasets")
  if "TFDS_DATA_DIR" not in env and os.path.isdir(shared):
    env["TFDS_DATA_DIR"] = os.path.abspath(shared)
  env.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
  return env


def _clock(seconds: float) -> str:
  return str(datetime.timedelta(seconds=int(round(max(seconds, 0.0)))))


def run(jobs: Sequence[Job], title: str, driver_log: Optional[str] = None, parallel: int = 1,
        modules: Optional[Mapping[str, str]] = None, out: Callable[[str], None] = print) -> int:
  """Runs every job without a record, `parallel` at a time (1 for anything timed); returns how many ran. `modules`
  replaces programs' modules (tests); RunFailedError when a program fails or a record no longer matches its run."""
  todo = []
  for j in jobs:
    record = records.load(j.record)
    stale = records.mismatches(record, j.run) if record is not None else []
    if stale:
      raise RunFailedError(f"{j.record} was made with other flags than its run: {', '.join(stale)}. Delete it to rerun.")
    todo += [j] if record is None else []
  lock, started = threading.Lock(), time.perf_counter()
  done = {"runs": 0, "measured": 0.0, "estimated": 0.0, "left": sum(j.estimate for j in todo)}

  def eta() -> float:  # the estimate of the runs left, scaled by measured / estimated so far
    scale = done["measured"] / done["estimated"] if done["estimated"] else 1.0
    return done["left"] * min(max(scale, 0.25), 4.0) / parallel

  def progress(j: Job, what: str) -> None:
    with lock:
      out(f"[{title}] {done['runs']}/{len(todo)} {j.group} run {j.index}/{j.count} {j.run_name}: {what} "
          f"| elapsed {_clock(time.perf_counter() - started)} | ETA {_clock(eta())}")

  def start(j: Job) -> None:
    os.makedirs(os.path.dirname(j.log), exist_ok=True)
    os.makedirs(os.path.dirname(j.record), exist_ok=True)
    cmd = command(j, modules)
    progress(j, f"start {j.run.summary()} (estimate {_clock(j.estimate)})")
    t0 = time.perf_counter()
    with open(j.log, "w") as log:
      log.write(" ".join(cmd) + "\n")
      log.flush()
      code = subprocess.call(cmd, cwd=ROOT, env=_environment(), stdout=log, stderr=subprocess.STDOUT)
    seconds, record = time.perf_counter() - t0, records.load(j.record)
    if code != 0 or record is None:
      with open(j.log) as log:
        tail = "".join(log.readlines()[-LOG_TAIL_LINES:])
      raise RunFailedError(
          f"{j.group}/{j.run.stored_name if j.preset else j.run_name} failed (exit status {code}) after {seconds:.0f} "
          f"s. Finished records are kept; rerun to continue.\ncommand: {' '.join(cmd)}\nlast lines of {j.log}:\n{tail}")
    with lock:
      done.update(runs=done["runs"] + 1, measured=done["measured"] + seconds, estimated=done["estimated"] + j.estimate,
                  left=done["left"] - j.estimate)
      if driver_log:
        with open(driver_log, "a") as f:
          f.write(json.dumps({"preset": j.preset, "entry": j.group, "run": j.run.stored_name,
                              "wall_seconds": round(seconds, 3), "estimated_seconds": round(j.estimate, 3),
                              "parallel_jobs": parallel, "command": cmd[2:], "finished_utc": datetime.datetime.now(
                                  datetime.timezone.utc).isoformat(timespec="seconds")}) + "\n")
    progress(j, f"done in {_clock(seconds)} (estimate {_clock(j.estimate)}), pretraining "
                f"{record['pretrain_seconds']:.2f} s")

  out(f"[{title}] {len(jobs) - len(todo)} of {len(jobs)} records exist; running {len(todo)} (estimate {_clock(eta())})")
  if driver_log:
    os.makedirs(os.path.dirname(driver_log), exist_ok=True)
  with concurrent.futures.ThreadPoolExecutor(parallel) as pool:
    futures = [pool.submit(start, j) for j in todo] if parallel > 1 else []
    for j in todo if parallel == 1 else ():
      start(j)
    for future in concurrent.futures.as_completed(futures):
      if future.exception() is not None:
        for f in futures:
          f.cancel()  # Runs not started yet; running ones finish and keep their records.
        raise future.exception()
  return len(todo)
