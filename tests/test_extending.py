"""Extending the project the way docs/experiments.md says: a seventh program built from the shared pipeline parts (its
folder, its name in `common/settings/programs.PACKAGES` and its docs line) and a new shared setting (one field of `common.settings.config.Config`), each
made in a copy of the repository and then used there as a user would: `--help`, a tiny run on real MNIST, the run
record, the registry's tests, the experiments' run lists, the figures and tables."""

import dataclasses
import json
import os
import re
import shutil
import subprocess


import numpy as np

from common.settings import config as config_lib
from common.settings import programs
from conftest import ROOT, python
import import_contracts

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


# A seventh program, a real schedule built from the pipeline's shared parts (common/pipeline/): every layer starts one
# epoch after the layer below and trains its epochs on the codes the layer below hands up as it trains (a staggered
# pipeline), on contiguous stages placed by cost, one per device. Its three files, as a user writes them.
TOY = "toy_pipeline"
TOY_FILES = {
    "program.py": '''"""A staggered pipeline built from the shared pipeline parts: its registry entry."""

from common.settings import programs

PROGRAM = programs.Program(name="toy_pipeline", run_name="toy", label="toy pipeline", color="tab:olive",
                           pipelined=True, network="activations")
''',
    # Its entry point reads as every program's: greedy's, with its own name.
    "train.py": open(os.path.join(ROOT, programs.GREEDY.name, "train.py")).read().replace(
        f"from {programs.GREEDY.name} import", "from toy_pipeline import"),
    "pretrain.py": '''"""A staggered pipeline: layer n starts STAGGER_EPOCHS after layer n - 1 and trains its epochs on the codes the layer
below hands up while it trains; contiguous stages placed by cost, one per device; made of common/pipeline/."""

import tensorflow as tf

from common.pipeline import placement
from common.pipeline import schedule as schedule_lib
from common.pipeline import stages as stages_lib
from common.run import lifecycle
from toy_pipeline import program

STAGGER_EPOCHS = 1.0
CHUNK_STEPS = 4


def _schedule(config, steps_per_epoch):
  return schedule_lib.LayerSchedule(len(config.hidden_units), steps_per_epoch, config.pretrain_epochs,
                                    stagger_epochs=STAGGER_EPOCHS)


def plan(config, setup, dataset):
  schedule = _schedule(config, config.train_examples // config.batch_size)
  return placement.plan_for(config.hidden_units, len(setup.names), config.train_examples, config.batch_size,
                            config.pretrain_epochs, CHUNK_STEPS, input_units=dataset.input_units,
                            extra_steps=schedule.total_steps - schedule.layer_steps)


def place(plan_, setup):
  devices = plan_.stage_devices(setup.names)
  return [devices[p][0] for p, stage in enumerate(plan_.stages) for _ in stage]


def train(config, on_checkpoint=None):
  with lifecycle.started(program.PROGRAM, config, on_checkpoint, plan=plan, place=place) as run:
    return lifecycle.finish(run, pretrain(run) if run.pretrains else lifecycle.no_pretraining(run))


def pretrain(run):
  config, plan_ = run.config, run.plan
  devices, steps_per_epoch = plan_.stage_devices(run.devices.names), run.data.num_train // config.batch_size
  schedule = _schedule(config, steps_per_epoch)
  with tf.device(devices[0][0]):
    images = [tf.constant(run.data.train_images)]
  pipeline = stages_lib.Pipeline([
      stages_lib.Stage(replicas=[[run.layers[i] for i in stage]], devices=devices[p],
                       emits=p < plan_.num_stages - 1, images=images if p == 0 else None, seed=config.seed,
                       corruption=config.corruption, batch_size=config.batch_size, kernels=run.kernels,
                       schedule=schedule, first_layer=stage[0])
      for p, stage in enumerate(plan_.stages)])
  histories = run.state.setdefault("pretrain", {"layers": [[] for _ in config.hidden_units]})["layers"]
  partial = [{"loss_sum": 0.0, "steps": 0, "since": 0.0} for _ in config.hidden_units]
  inputs, rate = pipeline.empty_inputs(), tf.constant(config.pretrain_learning_rate)
  for k in range(plan_.num_ticks):
    work = plan_.tick(k)
    with run.training():
      losses, inputs, _, _ = pipeline.tick(tf.constant([f for f, _ in work]), tf.constant([c for _, c in work]),
                                           rate, *inputs)
    ended = schedule_lib.account_tick(schedule, plan_, [l.numpy() for l in losses], work, partial, histories,
                                      run.pretrain_elapsed)
    run.end_epochs(ended, steps_per_epoch * config.batch_size)
  return {"layers": [{"index": i + 1, "units": u, "device": run.layer_devices[i], "epochs": histories[i]}
                     for i, u in enumerate(config.hidden_units)], "pretrain_seconds": run.pretrain_elapsed}
''',
}
# Its line in the README's table of programs.
TOY_DOCS_LINE = "| `toy_pipeline` | a staggered pipeline built from common/pipeline/ (a test's) |"


def test_a_seventh_program_built_from_the_pipeline_parts_needs_only_its_folder_its_name_and_its_docs_line(tmp_path):
  """A real schedule (not a stand-in: the staggered pipeline of TOY_FILES) added by the documented steps: its folder,
  its name appended to `common.settings.programs.PACKAGES` and its line in the README's table of programs. In that
  copy: `--help`
  parses; a tiny run on real MNIST on 2 devices writes a complete record and the weights pipeline_parallel computes
  with the same stagger (`--stagger_epochs=1`); the registry's tests accept it; import-linter's contracts check it
  (tests/import_contracts.py, .importlinter unedited); the experiments' run lists of every multi-device program
  include it; the figures and tables regenerate from fixtures with it present; no other file of the copy changed."""
  root = _copy(tmp_path)
  os.makedirs(root / TOY)
  for name, text in TOY_FILES.items():
    (root / TOY / name).write_text(text)
  (root / TOY / "__init__.py").write_text("")
  registry_path = root / "common" / "settings" / "programs.py"
  registry_path.write_text(re.sub(r'(PACKAGES = \([^)]*)\)', rf'\1, "{TOY}")', registry_path.read_text(), 1))
  readme = root / "README.md"
  text = readme.read_text()
  rows = [line for line in text.splitlines() if any(line.startswith(f"| `{p.name}` |") for p in programs.PROGRAMS)]
  end = text.index("\n", text.index(rows[-1]))  # after the table's last row
  readme.write_text(text[:end + 1] + TOY_DOCS_LINE + "\n" + text[end + 1:])

  helped = _run(root, "-m", f"{TOY}.train", "--helpshort")
  assert "--hidden_units:" in helped.stdout and "Traceback" not in helped.stderr, helped.stderr[-2000:]
  runs = tmp_path / "runs"
  done = _run(root, "-m", f"{TOY}.train", *TINY, "--num_devices=2", f"--results_dir={runs}", "--run_name=toy",
              f"--export_weights={runs}/toy.npz")
  assert done.returncode == 0, done.stderr[-3000:]
  with open(runs / "toy.json") as f:
    record = json.load(f)
  assert record["strategy"] == TOY and record["config"]["num_devices"] == 2
  assert [len(layer["epochs"]) for layer in record["layers"]] == [1, 1] and record["finetune"]["test_accuracy"] > 0
  same = _run(root, "-m", programs.PIPELINE_PARALLEL.module, *TINY, "--num_devices=2", "--stagger_epochs=1",
              f"--results_dir={runs}", "--run_name=pp", f"--export_weights={runs}/pp.npz")
  assert same.returncode == 0, same.stderr[-3000:]
  toy, pp = np.load(runs / "toy.npz"), np.load(runs / "pp.npz")
  for key in (k for k in pp.files if not k.startswith("finetuned/")):
    np.testing.assert_allclose(toy[key], pp[key], rtol=0, atol=1e-5, err_msg=key)

  # A test suite of its own, run by this suite's fork server (its checks of what a fresh interpreter imports start
  # the interpreter itself: conftest.fresh_python).
  registry_tests = _run(root, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests/test_registry.py")
  assert registry_tests.returncode == 0, registry_tests.stdout[-3000:]
  linted = import_contracts.lint(str(root))
  assert linted.returncode == 0 and TOY in import_contracts.contracts(str(root)), linted.stdout[-3000:]
  lists = _run(root, "-c", "from experiments import presets; from experiments.reproduce import REGISTRY; "
               "print(sorted({r.program for e in presets.build(REGISTRY, 'cpu').values() for r in e})); "
               "print([p.name for p in presets.COMPARED])")
  assert lists.returncode == 0, lists.stderr[-2000:]
  every_program, compared = lists.stdout.splitlines()
  assert TOY in every_program and TOY in compared

  fixtures = _run(root, "-m", "tests.fixtures.make_records")
  assert fixtures.returncode == 0, fixtures.stderr[-3000:]
  drawn = _run(root, "-m", "experiments.reproduce", "--figures_only",
               f"--output_dir={root / 'tests' / 'fixtures' / 'records'}")
  assert drawn.returncode == 0, drawn.stderr[-3000:]
  assert "toy pipeline" in (root / "tests" / "fixtures" / "records" / "README.md").read_text()

  changed = {line[3:] for line in _git(root, "status", "--porcelain", "--untracked-files=all").splitlines()}
  outside = {p for p in changed if not p.startswith((f"{TOY}/", "tests/fixtures/")) and "__pycache__" not in p}
  assert outside == {"common/settings/programs.py", "README.md"}, sorted(outside)


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
