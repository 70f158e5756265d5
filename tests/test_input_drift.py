"""The input-drift measure (`common.model.input_drift`): greedy reads the final codes (exactly 0); model_parallel's
numbers are those of its frozen copies (layer 1 after s epochs while layer 2 trains step s + 1), sync_layerwise's
equal them; the pipeline's are the mean over an epoch of codes that move, checked against the weights of shorter
runs; the sketch keeps distances."""

import numpy as np
import pytest
import tensorflow as tf

from common.artifacts import runlog
from common.data import loader as data
from common.model import autoencoder
from common.model import input_drift
from common.settings import config as config_lib
from common.settings import programs
from greedy import pretrain as greedy
from model_parallel import pretrain as model_parallel
from pipeline_parallel import config as pp_config
from pipeline_parallel import pretrain as pipeline
from sync_layerwise import pretrain as sync_layerwise
from conftest import SLICE_EXAMPLES

HIDDEN = (40, 24)
SIZES = dict(finetune_epochs=0, train_examples=SLICE_EXAMPLES, batch_size=50, pretrain_learning_rate=0.3, seed=3,
             kernels="tf")


def _config(tmp_path, name, cls=config_lib.Config, **kw):
  values = dict(SIZES, hidden_units=HIDDEN, pretrain_epochs=2, results_dir=str(tmp_path), run_name=name,
                export_weights=str(tmp_path / f"{name}.npz"))
  values.update(kw)
  return cls(**values)


class _Encoder:
  """An encoder of exported weights, as `InputDrift.sketch` reads them."""

  def __init__(self, weights, index):
    self.kernel = tf.constant(weights[f"layer{index}/kernel"])
    self.bias = tf.constant(weights[f"layer{index}/bias"])


def _layer_one_after(tmp_path, epochs):
  """Layer 1 after `epochs` epochs: greedy's layer 1 (the same in every schedule), 0 epochs = its initialization."""
  if epochs == 0:
    init = autoencoder.sigmoid_glorot_uniform(784, HIDDEN[0], SIZES["seed"], 1).numpy()
    return {"layer1/kernel": init, "layer1/bias": np.zeros(HIDDEN[0], np.float32)}
  greedy.train(_config(tmp_path, f"l1_{epochs}", program=programs.GREEDY.name, hidden_units=HIDDEN[:1], pretrain_epochs=epochs))
  return runlog.load_weights(str(tmp_path / f"l1_{epochs}.npz"))


@pytest.fixture(scope="module")
def drift(mnist):
  return input_drift.InputDrift(mnist.validation_images, HIDDEN)


def _distance(drift, a, b, final):
  """The measure's distance between the sketches of two weights of layer 1, relative to the final codes' spread
  (sketches rounded as the record keeps them)."""
  sketch = lambda w: input_drift._unpack(input_drift._pack(drift.sketch([_Encoder(w, 1)])))  # noqa: E731
  za, zb, zf = sketch(a), sketch(b), sketch(final)
  return float(np.linalg.norm(za - zb) / np.linalg.norm(zf - zf.mean(axis=0)))


def test_greedy_reads_the_final_codes(tmp_path):
  record = greedy.train(_config(tmp_path, "g", program=programs.GREEDY.name, hidden_units=(40, 24, 16)))
  layers = record["input_drift"]["layers"]
  assert [l["layer"] for l in layers] == [2, 3] and all(l["reads"] == "fixed" for l in layers)
  for layer in layers:
    assert [e["epoch"] for e in layer["epochs"]] == [1, 2]
    assert all(e["distance_to_final"] == 0.0 for e in layer["epochs"])
    assert layer["epochs"][0]["change"] is None and layer["epochs"][1]["change"] == 0.0
  assert record["input_drift"]["probe_examples"] == input_drift.PROBE_EXAMPLES
  assert record["timing"]["input_drift"] > 0


def test_model_parallel_drift_is_that_of_its_frozen_copies(tmp_path, drift):
  """G = H = 2, E = 2: layer 2 trains in steps 1 and 2 on the copy of layer 1 made after steps 0 and 1 (layer 1
  after 1 and 2 epochs); layer 1's final weights are those after 3 epochs. sync_layerwise runs the same schedule on
  one device: the same numbers."""
  mp = model_parallel.train(_config(tmp_path, "mp", program=programs.MODEL_PARALLEL.name, num_devices=2))
  sl = sync_layerwise.train(_config(tmp_path, "sl", program=programs.SYNC_LAYERWISE.name))
  after = {k: _layer_one_after(tmp_path, k) for k in (1, 2, 3)}
  want = [_distance(drift, after[1], after[3], after[3]), _distance(drift, after[2], after[3], after[3])]
  change = _distance(drift, after[2], after[1], after[3])
  layer = mp["input_drift"]["layers"][0]
  assert layer["reads"] == "fixed" and [e["epoch"] for e in layer["epochs"]] == [1, 2]
  assert [e["distance_to_final"] for e in layer["epochs"]] == pytest.approx(want, rel=1e-4)
  assert layer["epochs"][0]["change"] is None and layer["epochs"][1]["change"] == pytest.approx(change, rel=1e-4)
  assert min(want) > 0.01  # the copies really moved
  values = lambda r: [(e["distance_to_final"], e["change"] or 0.0) for e in r["input_drift"]["layers"][0]["epochs"]]  # noqa: E731
  assert np.allclose(values(sl), values(mp), rtol=1e-5, atol=0)


def test_pipeline_drift_is_the_mean_over_each_epoch_of_moving_codes(tmp_path, drift):
  """On one device, with chunks that divide an epoch (8 of its 40 steps), every layer ends an epoch at the end of a
  tick, so the sketch at the end of epoch e is of layer 1 after e epochs (greedy's), and the epoch's distance is the
  mean of its start's and end's. (A chunk that does not divide the epoch sketches up to K - 1 steps later.)"""
  record = pipeline.train(_config(tmp_path, "pp", pp_config.PipelineConfig, pipeline_chunk_steps=8))
  after = {k: _layer_one_after(tmp_path, k) for k in (0, 1, 2)}
  d = [_distance(drift, after[k], after[2], after[2]) for k in (0, 1, 2)]
  layer = record["input_drift"]["layers"][0]
  assert layer["reads"] == "moving"
  assert [e["distance_to_final"] for e in layer["epochs"]] == pytest.approx([(d[0] + d[1]) / 2, d[1] / 2], rel=1e-4)
  assert [e["change"] for e in layer["epochs"]] == pytest.approx(
      [_distance(drift, after[1], after[0], after[2]), _distance(drift, after[2], after[1], after[2])], rel=1e-4)
  assert d[2] == 0.0 and d[0] > d[1] > 0.01


def test_the_sketch_keeps_distances():
  """64 dimensions keep the distance between two sets of codes of 500 units to a few percent, and the projections are
  a pure function of (units, boundary): every run and seed is measured alike."""
  rng = np.random.default_rng(0)
  a, b = rng.random((256, 500), np.float32), rng.random((256, 500), np.float32)
  p = input_drift.projection(500, 2).numpy()
  np.testing.assert_array_equal(p, input_drift.projection(500, 2).numpy())
  assert np.linalg.norm((a - b) @ p) == pytest.approx(np.linalg.norm(a - b), rel=0.05)
  assert not np.allclose(p, input_drift.projection(500, 3).numpy())


def test_a_run_resumed_from_a_checkpoint_without_sketches_leaves_out_its_epochs(mnist):
  drift = input_drift.InputDrift(mnist.validation_images, HIDDEN)
  layers = autoencoder.build_stack(HIDDEN, 3, 784)
  state = {}
  drift.observe(state, 1, 1, layers[:1])  # epoch 2 only, as a run resumed after epoch 1 from an older checkpoint
  summary = drift.summary(state, layers)
  assert summary["layers"] == [{"layer": 2, "reads": "fixed", "epochs": [
      {"epoch": 2, "distance_to_final": 0.0, "change": None}]}]
  assert data.load_mnist(train_examples=SLICE_EXAMPLES).validation_images.shape[0] >= input_drift.PROBE_EXAMPLES
