"""The layer warm-up (`--layer_warmup_epochs`, `common.model.layer_warmup`), a setting of every program: its
multiplier; every program's default computes the weights of the code before the setting existed
(tests/fixtures/programs_before.npz); greedy with a warm-up equals its NumPy definition; the equivalences between
the programs hold with a warm-up on; a checkpoint of another warm-up is refused."""

import os

import numpy as np
import pytest
import tensorflow as tf

from common.artifacts import runlog
from common.base import errors
from common.data import loader as data
from common.model import layer_warmup
from common.settings import programs
from conftest import ROOT, SLICE_EXAMPLES, run_module
import pipeline_reference

# The sizes the fixture was made at (2 devices; one worker for async_data_parallel), and the warm-up the
# equivalences run with: half an epoch per layer, so layer 3 warms up over its whole first epoch.
BEFORE = dict(hidden_units=(32, 24, 16), pretrain_epochs=2, finetune_epochs=0, train_examples=SLICE_EXAMPLES,
              batch_size=50, pretrain_learning_rate=0.05, seed=3, kernels="tf", num_devices=2)
WARMUP = 0.5
ASYNC = programs.ASYNC_DATA_PARALLEL


def _train(tmp_path, program, name, **kw):
  """`program` at BEFORE (overridden by `kw`): its exported weights. async_data_parallel runs in a process of its own
  (its in-process cluster's servers cannot run beside this process's op determinism)."""
  values = dict(BEFORE, **kw)
  path = tmp_path / f"{name}.npz"
  if program is ASYNC:
    flags = [f"--{k}={','.join(map(str, v)) if isinstance(v, tuple) else v}" for k, v in values.items()]
    proc = run_module(program.module, *flags, f"--results_dir={tmp_path}", f"--run_name={name}",
                      f"--export_weights={path}", "--progress=log")
    assert proc.returncode == 0, proc.stderr[-3000:]
  else:
    config = program.make_config(results_dir=str(tmp_path), run_name=name, export_weights=str(path), **values)
    program.load_library().train(config)
  return runlog.load_weights(str(path))


def _assert_same(got, want, atol=1e-5):
  assert sorted(got) == sorted(want)
  for key in want:
    np.testing.assert_allclose(got[key], want[key], rtol=0, atol=atol, err_msg=key)


def test_the_multiplier():
  assert [layer_warmup.warmup_steps(n, 0.5, 40) for n in range(4)] == [0, 20, 40, 60]
  assert layer_warmup.warmup_steps(1, 0.01, 10) == 0  # rounds to no step: no warm-up
  assert [layer_warmup.multiplier(tau, 4) for tau in (0, 1, 3, 10)] == [0.25, 0.5, 1.0, 1.0]
  assert layer_warmup.multiplier(0, 0) == 1.0
  for tau in (0, 7, 19, 20, 100):
    assert float(layer_warmup.multiplier_tensor(tf.constant(tau), 20)) == pytest.approx(
        layer_warmup.multiplier(tau, 20), abs=1e-7)
  rate = tf.constant(0.3)
  assert layer_warmup.scaled_rate(rate, tf.constant(5), 0) is rate  # no warm-up: the rate itself, no op added
  assert float(layer_warmup.scaled_rate(rate, tf.constant(4), 10)) == pytest.approx(0.15)


@pytest.mark.parametrize("program", programs.PROGRAMS, ids=lambda p: p.name)
def test_the_default_gives_the_weights_of_the_code_before_the_setting(tmp_path, program):
  """To the equality tolerance (1e-5; bit for bit on the processor that made the fixture); the default named
  explicitly computes the same, bit for bit."""
  before = np.load(os.path.join(ROOT, "tests", "fixtures", "programs_before.npz"))
  want = {k.split("/", 1)[1]: before[k] for k in before.files if k.startswith(program.run_name + "/")}
  devices = {"num_devices": 1} if program is ASYNC else {}
  got = _train(tmp_path, program, "default", **devices)
  _assert_same(got, want)
  _assert_same(_train(tmp_path, program, "named", layer_warmup_epochs=0.0, **devices), got, atol=0)


def test_greedy_with_a_warmup_equals_its_definition(tmp_path):
  hidden, examples, batch = (20, 18, 16), 64, 8
  mnist = data.load_mnist(train_examples=examples)
  want = pipeline_reference.greedy_weights(mnist.train_images, hidden, 2, batch, 3, 0.5, 0.5, warmup_epochs=WARMUP)
  got = _train(tmp_path, programs.GREEDY, "warmed", hidden_units=hidden, train_examples=examples, batch_size=batch,
               pretrain_learning_rate=0.5, corruption=0.5, layer_warmup_epochs=WARMUP)
  _assert_same(got, want, atol=3e-5)  # float32 against float64
  without = pipeline_reference.greedy_weights(mnist.train_images, hidden, 2, batch, 3, 0.5, 0.5)
  np.testing.assert_array_equal(want["layer1/kernel"], without["layer1/kernel"])  # layer 1 never warms up
  assert np.abs(want["layer3/kernel"] - without["layer3/kernel"]).max() > 1e-3  # the warm-up changes the upper layers


# (program, its devices) that must equal (the other program, its devices), both with the same warm-up.
EQUIVALENT = (
    ((programs.MODEL_PARALLEL, 1), (programs.GREEDY, 1)),
    ((programs.MODEL_PARALLEL, 3), (programs.SYNC_LAYERWISE, 1)),
    ((programs.DATA_PARALLEL, 2), (programs.GREEDY, 1)),
    ((ASYNC, 1), (programs.GREEDY, 1)),
    ((programs.PIPELINE_PARALLEL, 3), (programs.PIPELINE_PARALLEL, 1)),
)


@pytest.mark.parametrize("pair", EQUIVALENT, ids=lambda p: f"{p[0][0].run_name}{p[0][1]}={p[1][0].run_name}{p[1][1]}")
def test_the_equivalences_hold_with_a_warmup(tmp_path, pair):
  (program, devices), (other, other_devices) = pair
  got = _train(tmp_path, program, "got", num_devices=devices, layer_warmup_epochs=WARMUP)
  want = _train(tmp_path, other, "want", num_devices=other_devices, layer_warmup_epochs=WARMUP)
  _assert_same(got, want)
  plain = _train(tmp_path, other, "plain", num_devices=other_devices)
  assert np.abs(want["layer3/kernel"] - plain["layer3/kernel"]).max() > 1e-3  # the warm-up was on


def test_a_checkpoint_of_another_warmup_is_refused(tmp_path):
  model_dir = str(tmp_path / "model")
  _train(tmp_path, programs.GREEDY, "first", model_dir=model_dir, pretrain_epochs=1, layer_warmup_epochs=WARMUP)
  with pytest.raises(errors.ResumeMismatchError, match="layer_warmup_epochs"):
    _train(tmp_path, programs.GREEDY, "second", model_dir=model_dir, pretrain_epochs=1)
