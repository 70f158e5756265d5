"""The linear probe (`--linear_probe_epochs`, `common.training.linear_probe`): a softmax regression per layer on its
standardized clean codes, plain SGD, seeded; in the run record beside the held-out reconstruction, outside the
pretraining clock; it changes neither the pretrained nor the finetuned weights; kept across a resume."""

import numpy as np
import pytest

from common.artifacts import runlog
from common.settings import programs
from common.training import linear_probe
from conftest import SLICE_EXAMPLES

BASE = dict(hidden_units=(32, 24), pretrain_epochs=1, finetune_epochs=1, train_examples=SLICE_EXAMPLES,
            batch_size=50, pretrain_learning_rate=0.05, seed=3, kernels="tf")


def test_the_probe_learns_separable_codes_and_depends_only_on_its_seed():
  rng = np.random.default_rng(0)
  labels = rng.integers(0, 3, size=600)
  codes = (rng.normal(size=(600, 8)) * 0.1 + np.eye(3, 8)[labels]).astype(np.float32)
  one = linear_probe.train_probe(codes, labels, 3, epochs=5, seed=1)
  assert linear_probe.accuracy(one, codes, labels) == 1.0
  again = linear_probe.train_probe(codes, labels, 3, epochs=5, seed=1)
  np.testing.assert_array_equal(one.kernel.numpy(), again.kernel.numpy())
  other = linear_probe.train_probe(codes, labels, 3, epochs=5, seed=2)
  assert np.abs(one.kernel.numpy() - other.kernel.numpy()).max() > 0  # another order of the examples
  with pytest.raises(ValueError, match="at least 100"):
    linear_probe.train_probe(codes[:50], labels[:50], 3, epochs=1, seed=1)


def test_a_run_records_a_probe_per_layer_and_its_weights_do_not_change(tmp_path):
  greedy = programs.GREEDY

  def train(name, **kw):
    path = tmp_path / f"{name}.npz"
    config = greedy.make_config(results_dir=str(tmp_path), run_name=name, export_weights=str(path), **dict(BASE, **kw))
    return greedy.load_library().train(config), runlog.load_weights(str(path))

  probed, with_probe = train("probed", linear_probe_epochs=2)
  plain, without = train("plain")
  assert "linear_probe" not in plain
  assert [p["layer"] for p in probed["linear_probe"]] == [1, 2]
  for p in probed["linear_probe"]:
    assert 0.5 < p["validation_accuracy"] <= 1 and 0.5 < p["test_accuracy"] <= 1  # far above chance (0.1)
  assert probed["timing"]["linear_probe"] > 0
  for key in without:  # the pretrained and the finetuned weights alike
    np.testing.assert_array_equal(with_probe[key], without[key], err_msg=key)
  # Resumed after finetuning's checkpoint: the probe kept in the checkpoint is the record's, not probed again.
  model_dir = str(tmp_path / "model")
  first, _ = train("first", linear_probe_epochs=2, model_dir=model_dir)
  again, _ = train("again", linear_probe_epochs=2, model_dir=model_dir)
  assert again["resumed"] and again["linear_probe"] == first["linear_probe"]
  assert "linear_probe" not in again["timing"]
