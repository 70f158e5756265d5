"""pipeline_parallel's schedule settings (`common.pipeline.schedule`: cosine rate, layer warm-up, staggered start,
polish): each default gives the original schedule's weights (those of the code before the settings existed,
tests/fixtures/schedules_before.npz); each setting equals its NumPy definition, is independent of devices, chunks and
replicas per stage, resumes after SIGKILL to the same weights, is checked when a checkpoint is resumed, and refuses
bad values in one line."""

import json
import os

import numpy as np
import pytest

from common.artifacts import runlog
from common.base import errors
from common.data import loader as data
from common.distribute import cluster
from common.settings import config as config_lib
from common.settings import programs
from model_parallel import pretrain as model_parallel
from pipeline_parallel import config as pp_config
from pipeline_parallel import pretrain as pipeline
from common.pipeline import schedule as schedule_lib
from conftest import ROOT, SLICE_EXAMPLES, run_module
import pipeline_reference

# One value of each setting (beside the others at their defaults), as the tests below run it.
SETTINGS = {"cosine": {"pretrain_lr_schedule": "cosine"}, "warmup": {"layer_warmup_epochs": 0.5},
            "stagger": {"stagger_epochs": 0.5}, "polish": {"polish_epochs": 1}}
DEFAULTS = {"pretrain_lr_schedule": "constant", "layer_warmup_epochs": 0.0, "stagger_epochs": 0.0, "polish_epochs": 0}
# The sizes the fixture was made at (by the code of commit bd48155, before these settings existed; 2 devices,
# chunks of 3 steps for the pipeline), and the tests' own.
BEFORE = dict(hidden_units=(32, 24, 16), pretrain_epochs=2, finetune_epochs=0, train_examples=SLICE_EXAMPLES,
              batch_size=50, pretrain_learning_rate=0.05, seed=3, kernels="tf", num_devices=2)
SIZES = dict(BEFORE, hidden_units=(48, 40, 32, 24), pretrain_learning_rate=0.3)


def _train(tmp_path, name, **kw):
  values = dict(SIZES, results_dir=str(tmp_path), run_name=name, export_weights=str(tmp_path / f"{name}.npz"))
  values.update(kw)
  record = pipeline.train(pp_config.PipelineConfig(**values))
  return record, runlog.load_weights(str(tmp_path / f"{name}.npz"))


def _assert_same(a, b, atol=1e-5):
  assert sorted(a) == sorted(b)
  for key in a:
    np.testing.assert_allclose(a[key], b[key], rtol=0, atol=atol, err_msg=key)


def test_the_layer_schedule():
  s = schedule_lib.LayerSchedule(num_layers=3, steps_per_epoch=10, epochs=2, lr_schedule="cosine", warmup_epochs=0.5,
                                 stagger_epochs=1.5)
  assert [s.start(i) for i in range(3)] == [0, 15, 30] and s.total_steps == 50 and s.layer_steps == 20
  assert [s.warmup_steps(i) for i in range(3)] == [0, 5, 10]
  assert not s.trains(1, 14) and s.trains(1, 15) and s.trains(1, 34) and not s.trains(1, 35)
  assert s.multiplier(0, 0) == 1.0 and s.multiplier(0, 10) == pytest.approx(0.5)  # cosine halfway
  assert s.multiplier(1, 15) == pytest.approx(1 / 5) and s.multiplier(1, 19) == pytest.approx(0.5 * (1 + np.cos(0.2 * np.pi)))
  assert s.multiplier(2, 29) == 0.0 and s.multiplier(2, 50) == 0.0
  for layer in range(3):
    for step in (0, 5, 14, 15, 16, 29, 30, 34, 49, 50):
      assert float(s.multiplier_tensor(layer, np.int32(step))) == pytest.approx(s.multiplier(layer, step), abs=1e-6)
      assert bool(s.trains_tensor(layer, np.int32(step))) == s.trains(layer, step)
  assert schedule_lib.LayerSchedule(3, 10, 2).is_original and not s.is_original
  assert schedule_lib.LayerSchedule(3, 10, 2, warmup_epochs=0.01).is_original  # rounds to no step of warm-up
  assert s.describe()["layer_start_steps"] == [0, 15, 30]


def test_the_defaults_give_the_original_schedules_weights(tmp_path):
  """The weights the code before the settings computed, to the equality tolerance (1e-5; bit for bit on the
  processor that made them); each setting named at its default computes the same, bit for bit; model_parallel too."""
  before = np.load(os.path.join(ROOT, "tests", "fixtures", "schedules_before.npz"))
  of = lambda program: {k.split("/", 1)[1]: before[k] for k in before.files if k.startswith(program + "/")}  # noqa
  _, got = _train(tmp_path, "default", **BEFORE, pipeline_chunk_steps=3)
  _assert_same(got, of("pp"))
  for name, value in DEFAULTS.items():
    _, named = _train(tmp_path, name, **BEFORE, pipeline_chunk_steps=3, **{name: value})
    _assert_same(named, got, atol=0)
  model_parallel.train(config_lib.Config(program=programs.MODEL_PARALLEL.name, results_dir=str(tmp_path), run_name="mp",
                                         export_weights=str(tmp_path / "mp.npz"), **BEFORE))
  _assert_same(runlog.load_weights(str(tmp_path / "mp.npz")), of("mp"))


@pytest.mark.parametrize("setting", sorted(SETTINGS))
def test_each_setting_equals_its_definition(tmp_path, setting):
  hidden, examples, batch = (20, 18, 16), 64, 8
  mnist = data.load_mnist(train_examples=examples)
  values = SETTINGS[setting]
  config = pp_config.PipelineConfig(hidden_units=hidden, pretrain_epochs=2, train_examples=examples, batch_size=batch,
                                    **values)
  want = pipeline_reference.weights(mnist.train_images, hidden, 2, batch, 3, 0.5, 0.5,
                                    schedule_lib.LayerSchedule.of(config, examples // batch),
                                    values.get("polish_epochs", 0))
  record, got = _train(tmp_path, setting, hidden_units=hidden, train_examples=examples, batch_size=batch,
                       pretrain_learning_rate=0.5, corruption=0.5, pipeline_chunk_steps=3, **values)
  _assert_same(got, want, atol=3e-5)  # float32 against float64, as the original schedule's reference test
  original = pipeline_reference.weights(mnist.train_images, hidden, 2, batch, 3, 0.5, 0.5)
  assert np.abs(want["layer3/kernel"] - original["layer3/kernel"]).max() > 1e-3  # the setting changes the weights
  assert all(len(l["epochs"]) == 2 for l in record["layers"])  # every layer trains its E epochs
  assert record["pipeline"]["schedule"]["polish_epochs"] == values.get("polish_epochs", 0)
  if "polish_epochs" in values:
    assert [len(l.get("polish", [])) for l in record["layers"]] == [0, 1, 1]


@pytest.mark.parametrize("setting", sorted(SETTINGS))
def test_each_setting_is_independent_of_devices_chunks_and_replicas(tmp_path, setting):
  _, one = _train(tmp_path, "one", num_devices=1, pipeline_chunk_steps=5, **SETTINGS[setting])
  for devices, chunk, replicas in ((3, 7, 1), (4, 2, 2)):
    record, got = _train(tmp_path, f"g{devices}", num_devices=devices, pipeline_chunk_steps=chunk,
                         replicas_per_stage=replicas, **SETTINGS[setting])
    assert len(record["pipeline"]["stages"]) == devices // replicas
    _assert_same(got, one)


def test_resume_after_sigkill_in_the_polish_with_every_setting(tmp_path):
  """Stagger, warm-up, cosine and polish together, killed at the first checkpoint of the polish (after the 4 of the
  pipelined steps: the stagger makes them 3 epochs of the data, and one more at the end), resumed by the same command:
  the weights of a run never interrupted."""
  settings = dict(pretrain_lr_schedule="cosine", layer_warmup_epochs=0.5, stagger_epochs=0.5, polish_epochs=2)
  flags = [f"--{k}={v}" for k, v in dict(
      hidden_units="48,40,32", num_devices=2, pretrain_epochs=2, finetune_epochs=0, train_examples=SLICE_EXAMPLES,
      batch_size=50, pretrain_learning_rate=0.3, seed=3, kernels="tf", pipeline_chunk_steps=7, progress="log",
      model_dir=tmp_path / "model", results_dir=tmp_path, run_name="resumed",
      export_weights=tmp_path / "resumed.npz", **settings).items()]
  killed = run_module(programs.PIPELINE_PARALLEL.module, *flags, env={cluster.KILL_ENV: "local:0:5"})
  assert killed.returncode == -9, killed.stderr[-3000:]
  assert "polish epoch" not in killed.stderr  # killed at the checkpoint of layer 2's first, before its line
  final = run_module(programs.PIPELINE_PARALLEL.module, *flags)
  assert final.returncode == 0, final.stderr[-3000:]
  assert "Resuming from" in final.stderr and "ckpt-5" in final.stderr
  assert "layer 2 polish epoch 1/2" not in final.stderr and "layer 2 polish epoch 2/2" in final.stderr
  _, want = _train(tmp_path, "base", hidden_units=(48, 40, 32), pipeline_chunk_steps=7, **settings)
  _assert_same(runlog.load_weights(str(tmp_path / "resumed.npz")), want)
  resumed = json.load(open(tmp_path / "resumed.json"))
  assert resumed["resumed"] and [len(l.get("polish", [])) for l in resumed["layers"]] == [0, 2, 2]


@pytest.mark.parametrize("setting", sorted(SETTINGS))
def test_a_checkpoint_of_another_schedule_is_refused(tmp_path, setting):
  model_dir = str(tmp_path / "model")
  small = dict(hidden_units=(16, 8), pretrain_epochs=1, train_examples=200, model_dir=model_dir)
  _train(tmp_path, "x", **small)
  name = next(iter(SETTINGS[setting]))
  with pytest.raises(errors.ResumeMismatchError, match=name):
    _train(tmp_path, "x", **small, **SETTINGS[setting])


def test_bad_schedule_values_are_refused_in_one_line():
  for flag, message in (("--pretrain_lr_schedule=linear", "should be one of <constant|cosine>"),
                        ("--layer_warmup_epochs=-1", "must be in [0, 1000] epochs"),
                        ("--stagger_epochs=nan", "must be in [0, 1000] epochs"),
                        ("--polish_epochs=-2", "must be a non-negative integer")):
    proc = run_module(programs.PIPELINE_PARALLEL.module, flag, "--results_dir=", timeout=600)
    assert proc.returncode != 0 and "Traceback" not in proc.stderr, proc.stderr[-2000:]
    lines = [l for l in proc.stderr.splitlines() if message in l and flag in l]
    assert len(lines) == 1, proc.stderr[-2000:]
    assert "logical CPU device" not in proc.stderr  # before any work
  for values, message in (({"stagger_epochs": -0.5}, "--stagger_epochs"), ({"polish_epochs": 1.5}, "--polish_epochs"),
                          ({"pretrain_lr_schedule": "step"}, "--pretrain_lr_schedule")):
    with pytest.raises(ValueError, match=message):
      pp_config.PipelineConfig(**values)
