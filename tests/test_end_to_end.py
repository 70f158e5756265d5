"""The smoke preset end to end: `python -m experiments.reproduce --preset=smoke` runs the real programs, writes their
records, tables, figures and README into a directory of its own, and nothing into the committed results (the longest
test: a file of its own)."""

import os
import subprocess

from common.settings import programs
from experiments import presets
from experiments.reproduce import REGISTRY
from experiments import records
from conftest import ROOT, python

RESULTS = os.path.join(ROOT, "results")


# What the end-to-end smoke run takes (`--only`, studies or STUDY/RUN): between them every registered program
# (R = 1 and 2), both datasets, a resumable run, a sweep's run that may fail, and a timed scaling study with its
# figure; each run a process of its own. Every other study's
# runs are checked as command lines (tests/test_reproduce.py), and every table and figure on fixture records
# (tests/test_plots.py).
SMOKE_ONLY = ("pretraining_programs", "mp_scaling_b100", "fashion_mnist_accuracy/fashion_mnist_greedy_e2",
              "pretraining_sweep/coarse_mnist_report_s0")
SMOKE_STUDIES = tuple(dict.fromkeys(item.partition("/")[0] for item in SMOKE_ONLY))


def _smoke_runs():
  """({study: its runs that the end-to-end smoke run takes}, the studies among them taken whole)."""
  built = presets.build(REGISTRY, "smoke")
  chosen = presets.select(built, SMOKE_ONLY)
  return chosen, {name for name, runs in chosen.items() if len(runs) == len(built[name])}


def test_smoke_selection_covers_every_program_and_dataset():
  chosen, whole = _smoke_runs()
  runs = [r for rs in chosen.values() for r in rs]
  assert list(chosen) == sorted(SMOKE_STUDIES, key=REGISTRY.names.index)
  # Every run of the studies named whole, one run for each STUDY/RUN named.
  assert len(runs) == sum(len(chosen[s]) for s in whole) + sum("/" in item for item in SMOKE_ONLY)
  assert {r.program for r in runs} == {p.name for p in programs.PROGRAMS}
  assert {r.config.dataset for r in runs} == {"mnist", "fashion_mnist"}
  assert any(r.resumable for r in runs) and any(r.may_fail for r in runs)
  assert any(REGISTRY.get(name).timed and REGISTRY.get(name).figure for name in whole)


def test_smoke_preset_end_to_end_with_the_real_programs(tmp_path):
  out = tmp_path / "out"
  env = dict(os.environ, PYTHONPATH=ROOT)
  before = {os.path.join(d, f): os.path.getmtime(os.path.join(d, f)) for d, _, files in os.walk(RESULTS) for f in files}
  done = subprocess.run([python(), "-m", "experiments.reproduce", "--preset=smoke", f"--output_dir={out}",
                         f"--work_dir={tmp_path / 'work'}", "--jobs=2", f"--only={','.join(SMOKE_ONLY)}"], cwd=ROOT,
                        env=env, capture_output=True, text=True)
  assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
  after = {os.path.join(d, f): os.path.getmtime(os.path.join(d, f)) for d, _, files in os.walk(RESULTS) for f in files}
  assert after == before  # Nothing written into the committed results.
  chosen, whole = _smoke_runs()
  drawn = {f"{name}.png" for name in whole if REGISTRY.get(name).figure}
  assert drawn and drawn <= set(os.listdir(out / "figures"))
  for name, runs in chosen.items():
    for run in runs:
      record = records.load(presets.record_path(str(out), "smoke", run))
      assert record is not None and records.mismatches(record, run) == [], (name, run.name)
  text = (out / "README.md").read_text()
  assert text.count("preset smoke") >= len(SMOKE_STUDIES)
