"""--pretrain_layers=K (every program): only the first K layers pretrain, those above keep their initial weights
into finetuning; K = 0 trains like --pretrain_epochs=0; the default is every layer, recorded as their number; a K
above the layers is refused in one line before any work."""

import numpy as np
import pytest

from common.artifacts import runlog
from common.model import autoencoder
from common.settings import programs
from conftest import SLICE_EXAMPLES, run_module

BASE = dict(hidden_units=(32, 24, 16), pretrain_epochs=2, finetune_epochs=0, train_examples=SLICE_EXAMPLES,
            batch_size=50, pretrain_learning_rate=0.05, seed=3, kernels="tf")


def _train(tmp_path, program, name, **kw):
  path = tmp_path / f"{name}.npz"
  config = program.make_config(results_dir=str(tmp_path), run_name=name, export_weights=str(path), **dict(BASE, **kw))
  return program.load_library().train(config), runlog.load_weights(str(path))


def _initial(layer, hidden=BASE["hidden_units"], seed=BASE["seed"]):
  sizes = [784] + list(hidden)
  return autoencoder.sigmoid_glorot_uniform(sizes[layer - 1], sizes[layer], seed, layer).numpy()


@pytest.mark.parametrize("program, devices", [(programs.GREEDY, 1), (programs.MODEL_PARALLEL, 2),
                                              (programs.PIPELINE_PARALLEL, 2), (programs.DATA_PARALLEL, 2)],
                         ids=lambda v: getattr(v, "name", str(v)))
def test_the_first_k_layers_pretrain_and_the_rest_keep_their_initial_weights(tmp_path, program, devices):
  record, got = _train(tmp_path, program, "k2", num_devices=devices, pretrain_layers=2)
  # The first two layers: what the same program computes on a stack of those two layers alone.
  alone, two = _train(tmp_path, program, "two", num_devices=devices, hidden_units=BASE["hidden_units"][:2])
  for key, value in two.items():
    np.testing.assert_allclose(got[key], value, rtol=0, atol=1e-5, err_msg=key)
  np.testing.assert_array_equal(got["layer3/kernel"], _initial(3))
  np.testing.assert_array_equal(got["layer3/bias"], np.zeros(16, np.float32))
  assert [len(layer["epochs"]) for layer in record["layers"]] == [len(l["epochs"]) for l in alone["layers"]] + [0]
  assert record["config"]["pretrain_layers"] == 2 and len(record["heldout_reconstruction"]) == 3


def test_zero_layers_trains_like_no_pretraining_and_the_default_is_every_layer(tmp_path):
  greedy = programs.GREEDY
  record, none = _train(tmp_path, greedy, "k0", pretrain_layers=0, finetune_epochs=1)
  _, epochs0 = _train(tmp_path, greedy, "e0", pretrain_epochs=0, finetune_epochs=1)
  assert sorted(none) == sorted(epochs0)
  for key in none:
    np.testing.assert_array_equal(none[key], epochs0[key], err_msg=key)
  assert record["pretrained"] is False and record["pretrain_seconds"] == 0.0
  assert greedy.make_config(**BASE).pretrain_layers == 3  # the default: every layer, recorded as their number


def test_more_layers_than_the_stack_are_refused_in_one_line_before_any_work(tmp_path):
  with pytest.raises(ValueError, match=r"--pretrain_layers must be in 0\.\.3"):
    programs.GREEDY.make_config(**dict(BASE, pretrain_layers=4))
  proc = run_module(programs.GREEDY.module, "--hidden_units=16,16", "--pretrain_layers=3",
                    f"--results_dir={tmp_path}")
  assert proc.returncode != 0 and "--pretrain_layers must be in 0..2" in proc.stderr
  assert not list(tmp_path.glob("*.json"))
