"""Extending the project the way docs/experiments.md says: a seventh program (its folder plus its name in
`common/settings/programs.PACKAGES`) and a new shared setting (one field of `common.settings.config.Config`), each
made in a copy of the repository and then used there as a user would: `--help`, a tiny run on real MNIST, the run
record, the registry's tests, the experiments' run lists, the figures and tables."""

import dataclasses
import json
import os
import re
import shutil
import subprocess


from common.settings import config as config_lib
from common.settings import programs

from conftest import ROOT, python

TINY = ["--hidden_units=16,16", "--train_examples=400", "--batch_size=40", "--pretrain_epochs=1", "--finetune_epochs=1",
        "--progress=log"]


def _git(root, *args):
  return subprocess.run(["git", "-c", "user.name=test", "-c", "user.email=test@example.com", *args], cwd=root,
                        capture_output=True, text=True, check=True).stdout


def _copy(tmp_path):
  """The repository's tracked and new files (not results of runs) copied under tmp_path/repo, committed in a git
  repository of its own (the registry's tests list files with git; `git status` then shows what changed)."""
  root = tmp_path / "repo"
  for path in _git(ROOT, "ls-files", "--cached", "--others", "--exclude-standard").split():
    if os.path.isfile(os.path.join(ROOT, path)):
      os.makedirs(root / os.path.dirname(path), exist_ok=True)
      shutil.copy2(os.path.join(ROOT, path), root / path)
  _git(root, "init", "-q")
  _git(root, "add", "-A")
  _git(root, "commit", "-q", "-m", "copy")
  return root


def _run(root, *args, timeout=900):
  """`python args...` in the copy `root`, through the fork server."""
  env = dict(os.environ, PYTHONPATH=str(root))
  env.pop("TF_CONFIG", None)
  return subprocess.run([python(), *args], cwd=root, env=env, capture_output=True, text=True,
                        timeout=timeout)


def test_a_seventh_program_needs_only_its_folder_and_its_name(tmp_path):
  """A toy multi-device program (model_parallel's schedule under another name), added by the documented step:
  its folder and its name appended to `common.settings.programs.PACKAGES`. In that copy: `--help` parses, a tiny run on real
  MNIST writes a complete record, the registry's tests accept it, the experiments' run lists of every
  multi-device program include it, and the figures and tables regenerate from fixtures with it present; no other
  file of the copy changed (the fixtures regenerate there)."""
  root = _copy(tmp_path)
  mp = programs.MODEL_PARALLEL
  shutil.copytree(root / mp.name, root / "toy_parallel")
  for path in (root / "toy_parallel").glob("*.py"):
    text = path.read_text().replace(f"from {mp.name} import", "from toy_parallel import")
    if path.name == "program.py":
      text = (text.replace(f'name="{mp.name}"', 'name="toy_parallel"').replace(f'run_name="{mp.run_name}"', 'run_name="toy"')
              .replace(f'label="{mp.label}"', 'label="toy parallel"').replace(f'color="{mp.color}"', 'color="tab:olive"'))
    path.write_text(text)
  registry_path = root / "common" / "settings" / "programs.py"
  registry = registry_path.read_text()
  registry_path.write_text(re.sub(r'(PACKAGES = \([^)]*)\)', r'\1, "toy_parallel")', registry, 1))

  helped = _run(root, "-m", "toy_parallel.train", "--helpshort")
  assert "--hidden_units:" in helped.stdout and "Traceback" not in helped.stderr, helped.stderr[-2000:]
  done = _run(root, "-m", "toy_parallel.train", *TINY, "--num_devices=2", f"--results_dir={tmp_path}/runs",
              "--run_name=toy")
  assert done.returncode == 0, done.stderr[-3000:]
  with open(tmp_path / "runs" / "toy.json") as f:
    record = json.load(f)
  assert record["strategy"] == "toy_parallel" and record["config"]["num_devices"] == 2
  assert len(record["layers"]) == 2 and record["finetune"]["test_accuracy"] > 0 and record["schedule"]["steps"]

  # A test suite of its own, run by this suite's fork server (its checks of what a fresh interpreter imports start
  # the interpreter itself: conftest.fresh_python).
  registry_tests = _run(root, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests/test_registry.py")
  assert registry_tests.returncode == 0, registry_tests.stdout[-3000:]
  lists = _run(root, "-c", "from experiments import presets; from experiments.reproduce import REGISTRY; "
               "print(sorted({r.program for e in presets.build(REGISTRY, 'cpu').values() for r in e})); "
               "print([p.name for p in presets.COMPARED])")
  assert lists.returncode == 0, lists.stderr[-2000:]
  every_program, compared = lists.stdout.splitlines()
  assert "toy_parallel" in every_program and "toy_parallel" in compared

  fixtures = _run(root, "-m", "tests.fixtures.make_records")
  assert fixtures.returncode == 0, fixtures.stderr[-3000:]
  drawn = _run(root, "-m", "experiments.reproduce", "--figures_only",
               f"--output_dir={root / 'tests' / 'fixtures' / 'records'}")
  assert drawn.returncode == 0, drawn.stderr[-3000:]
  assert "toy parallel" in (root / "tests" / "fixtures" / "records" / "README.md").read_text()

  changed = {line[3:] for line in _git(root, "status", "--porcelain", "--untracked-files=all").splitlines()}
  outside = {p for p in changed if not p.startswith(("toy_parallel/", "tests/fixtures/")) and "__pycache__" not in p}
  assert outside == {"common/settings/programs.py"}, sorted(outside)


NEW_STUDY = '''"""A new study: greedy's test accuracy against the batch (a test adds it, touching this file only)."""

from common.settings import programs
from experiments import records
from experiments.presets import Study, spec
from experiments.render.tables import md_table


def _runs(s):
  return [spec(f"b{b}", programs.GREEDY, s["hidden"], 1, b, 1, s["examples"], 1) for b in s["batches"]]


def table(data, others):
  rows = [[name, r["config"]["batch_size"], records.accuracy(r)] for name, r in sorted(data.runs.items())]
  return md_table(["run", "batch", "test accuracy"], rows), ["Greedy against its batch."]


BATCH_ACCURACY = Study("batch_accuracy", "Greedy's test accuracy against the batch", dict(
    smoke=dict(examples=400, hidden=(16,), batches=(40, 80))), _runs, table, kind="beyond", order=99)
STUDIES = (BATCH_ACCURACY,)
'''


NEW_BENCHMARK = '''"""A new benchmark: greedy on one device against two (a test adds it, touching this file only)."""

from common.settings import programs
from experiments import harness
from experiments import presets


def configurations(s):
  return [s.spec("one", programs.GREEDY, 1), s.spec("two", programs.GREEDY, 2)]


BENCHMARK = presets.Benchmark(
    name="greedy_devices", runs=configurations,
    summarize=lambda s, found: {"speedup": harness.ratio_spread(found, "one", "two")}, order=99)
'''


def test_a_new_study_is_one_file(tmp_path):
  """A study added the documented way, one file in experiments/studies/: in that copy the registry lists it, the smoke
  preset runs its runs (with the real program) and results/README.md has its table; no other file changed. A
  benchmark likewise is one file in experiments/benchmarks/ (its `BENCHMARK`): the registry finds it."""
  root = _copy(tmp_path)
  (root / "experiments" / "studies" / "batch_accuracy.py").write_text(NEW_STUDY)
  (root / "experiments" / "benchmarks" / "greedy_devices.py").write_text(NEW_BENCHMARK)
  found = _run(root, "-c", "from experiments.reproduce import REGISTRY; print(REGISTRY.benchmarks[-1].name)")
  assert found.stdout.split() == ["greedy_devices"], found.stderr[-2000:]
  out = tmp_path / "out"
  listed = _run(root, "-c", "from experiments import presets; from experiments.reproduce import REGISTRY; "
                "print(REGISTRY.names[-1], len(presets.build(REGISTRY, 'smoke')"
                "['batch_accuracy']))")
  assert listed.stdout.split() == ["batch_accuracy", "2"], listed.stderr[-2000:]
  done = _run(root, "-m", "experiments.reproduce", "--preset=smoke", "--only=batch_accuracy", f"--output_dir={out}")
  assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
  text = (out / "README.md").read_text()
  assert "### `batch_accuracy`: Greedy's test accuracy against the batch" in text and "| `b40` |" not in text
  assert "| b40 | 40 |" in text and "Greedy against its batch." in text
  changed = {line[3:] for line in _git(root, "status", "--porcelain", "--untracked-files=all").splitlines()}
  assert {p for p in changed if "__pycache__" not in p} == {"experiments/studies/batch_accuracy.py",
                                                             "experiments/benchmarks/greedy_devices.py"}


def test_a_new_setting_is_one_field(tmp_path):
  """A shared setting added as one `setting` field of `common.settings.config.Config` is a flag of every program (`--help`),
  is validated by its check before any work, and lands in the run record's config."""
  root = _copy(tmp_path)
  path = root / "common" / "settings" / "config.py"
  text = path.read_text()
  anchor = "  tensorboard_dir: Optional[str] = setting("
  assert anchor in text
  path.write_text(text.replace(anchor, '  extra_note: int = setting(3, "A new setting: a positive number noted in the '
                               'record.", check=checks.positive_int, training=False)\n' + anchor, 1))
  for program in programs.PROGRAMS:
    helped = _run(root, "-m", program.module, "--helpshort")
    assert "--extra_note: A new setting" in helped.stdout, (program.name, helped.stderr[-2000:])
  refused = _run(root, "-m", programs.GREEDY.module, *TINY, "--extra_note=0", "--results_dir=")
  assert refused.returncode != 0 and "--extra_note=0: must be a positive integer" in refused.stderr
  assert " epoch 1/" not in refused.stderr
  done = _run(root, "-m", programs.GREEDY.module, *TINY, "--extra_note=5", f"--results_dir={tmp_path}/runs",
              "--run_name=noted")
  assert done.returncode == 0, done.stderr[-3000:]
  with open(tmp_path / "runs" / "noted.json") as f:
    assert json.load(f)["config"]["extra_note"] == 5


def _flags(program) -> set:
  return {config_lib.flag_name(f) for f in dataclasses.fields(program.config)} - {""}


def test_docs_list_every_flag_of_every_program():
  """docs/programs.md names every flag of every program (derived from its Config class), and its flag tables name
  no flag that none has."""
  with open(os.path.join(ROOT, "docs", "programs.md")) as f:
    text = f.read()
  documented, tabled = set(re.findall(r"`--([a-z_0-9]+)", text)), set(re.findall(r"^\| `--([a-z_0-9]+)`", text, re.M))
  for program in programs.PROGRAMS:
    assert _flags(program) <= documented, (program.name, sorted(_flags(program) - documented))
  assert tabled <= set().union(*map(_flags, programs.PROGRAMS)), sorted(tabled - set().union(*map(_flags, programs.PROGRAMS)))
