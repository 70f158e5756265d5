"""Layer-pipelined pretraining: the definition (a NumPy reference, step by step), its independence of
devices, placement and chunk size, layer 1 = greedy's layer 1, H = 1 = greedy, the stages' balance,
resume after SIGKILL with activations in flight, and refused input."""

import json
import os

import numpy as np
import pytest
import tensorflow as tf

from common.artifacts import runlog
from common.base import errors
from common.data import loader as data
from common.distribute import cluster
from common.model import autoencoder
from common.settings import config as config_lib
from common.settings import programs
from greedy import pretrain as greedy
from pipeline_parallel import config as pp_config
from common.pipeline import placement
from pipeline_parallel import pretrain as pipeline
from common.pipeline import stages as stages_lib
from conftest import SLICE_EXAMPLES, run_module
import pipeline_reference

assert len(tf.config.list_logical_devices("CPU")) >= 4

# Large enough that the weights move far from their initial values in two epochs.
LEARNING_RATE = 0.05
HIDDEN = (64, 48, 40, 32)


def _config(tmp_path, name, **kw):
  base = dict(hidden_units=HIDDEN, pretrain_epochs=2, finetune_epochs=0, train_examples=SLICE_EXAMPLES,
              batch_size=50, pretrain_learning_rate=LEARNING_RATE, seed=3, results_dir=str(tmp_path), run_name=name,
              export_weights=str(tmp_path / f"{name}.npz"))
  base.update(kw)
  return pp_config.PipelineConfig(**base)


def _weights(tmp_path, name):
  return runlog.load_weights(str(tmp_path / f"{name}.npz"))


def _assert_same(a, b, keys=None, atol=1e-5):
  keys = keys or sorted(a)
  assert set(keys) <= set(a) and set(keys) <= set(b)
  for key in keys:
    np.testing.assert_allclose(a[key], b[key], rtol=0, atol=atol, err_msg=key)


def _assert_moved(weights, hidden, seed=3):
  sizes = [784] + list(hidden)
  for i in range(len(hidden)):
    initial = autoencoder.sigmoid_glorot_uniform(sizes[i], sizes[i + 1], seed, i + 1).numpy()
    assert np.abs(weights[f"layer{i + 1}/kernel"] - initial).max() > 1e-2, i


def test_partition_minimises_the_largest_stage():
  assert placement.partition([1, 1, 1, 1], 2) == [[0, 1], [2, 3]]
  assert placement.partition([5, 1, 1, 1, 1, 1], 2) == [[0], [1, 2, 3, 4, 5]]
  assert placement.partition([1, 2, 3], 3) == [[0], [1], [2]]
  assert placement.partition([3, 1], 1) == [[0, 1]]
  # 4 x 1000 on 2 devices: {1, 2} and {3, 4}, as the FLOPs say (layer 1 is cheaper: 784 inputs).
  plan = placement.Plan((1000,) * 4, num_devices=2, total_steps=100, chunk_steps=8)
  assert plan.stages == [[0, 1], [2, 3]]
  costs = plan.stage_costs
  assert costs == [2 * (6 * 784 * 1000 + 6 * 1000 * 1000), 2 * (6 * 1000 * 1000 + 5 * 1000 * 1000)]
  assert plan.predicted_balance == pytest.approx(sum(costs) / (2 * max(costs)))
  # Chunks and ticks: 100 steps in chunks of 8 -> 13 chunks (the last of 4 steps) + 1 fill tick.
  assert (plan.num_chunks, plan.num_ticks) == (13, 14)
  assert plan.tick(0) == [(0, 8), (0, 0)] and plan.tick(1) == [(8, 8), (0, 8)]
  assert plan.tick(12) == [(96, 4), (88, 8)] and plan.tick(13) == [(0, 0), (96, 4)]
  with pytest.raises(ValueError, match="cannot split"):
    placement.partition([1, 2], 3)
  # More devices than layers: one stage per layer.
  assert placement.Plan((10, 10), num_devices=4, total_steps=5, chunk_steps=5).num_stages == 2


def test_program_equals_a_numpy_reference_of_the_definition(tmp_path):
  hidden, examples, batch = (20, 18, 16), 64, 8
  mnist = data.load_mnist(train_examples=examples)
  want = pipeline_reference.weights(mnist.train_images, hidden, epochs=2, batch=batch, seed=3, corruption=0.5, lr=0.5)
  pipeline.train(_config(tmp_path, "pp", hidden_units=hidden, train_examples=examples, batch_size=batch,
                       pretrain_learning_rate=0.5, num_devices=2, pipeline_chunk_steps=3))
  got = _weights(tmp_path, "pp")
  # float32 program against a float64 reference over 16 steps at learning rate 0.5: rounding grows with the
  # steps (largest difference 1.1e-5 on an AVX-512 AMD EPYC, below 1e-5 on the earlier machines).
  _assert_same(got, want, atol=3e-5)
  _assert_moved(got, hidden)


@pytest.fixture(scope="module")
def one_device(tmp_path_factory):
  """The 4-layer stack on one device, in chunks of 5 steps: (record, exported weights)."""
  tmp = tmp_path_factory.mktemp("pp1")
  record = pipeline.train(_config(tmp, "pp1", num_devices=1, pipeline_chunk_steps=5))
  return record, _weights(tmp, "pp1")


@pytest.mark.parametrize("devices,chunk", [(2, 1), (3, 7), (4, 3)], ids=["2_devices_chunk_1", "3_devices_chunk_7",
                                                                         "4_devices_chunk_3"])
def test_any_devices_and_chunk_size_give_the_same_weights(tmp_path, one_device, devices, chunk):
  base_record, base = one_device
  record = pipeline.train(_config(tmp_path, "pp", num_devices=devices, pipeline_chunk_steps=chunk))
  got = _weights(tmp_path, "pp")
  _assert_same(got, base)
  _assert_moved(got, HIDDEN)
  for a, b in zip(record["layers"], base_record["layers"]):
    assert [e["loss"] for e in a["epochs"]] == pytest.approx([e["loss"] for e in b["epochs"]], rel=1e-5)
  # One stage per device (H = 4 >= devices), contiguous, every layer once; stage p on device p.
  stages = record["pipeline"]["stages"]
  assert len(stages) == devices and sum(stages, []) == [1, 2, 3, 4]
  names = record["environment"]["devices"]
  for p, stage in enumerate(stages):
    for i in stage:
      assert record["layers"][i - 1]["device"] == names[p] and record["layers"][i - 1]["stage"] == p + 1
  total = (SLICE_EXAMPLES // 50) * 2
  assert record["pipeline"]["num_ticks"] == -(-total // chunk) + devices - 1
  # Op determinism (on in the tests) forbids the in-graph clock: busy time is then unknown, not zero.
  assert record["pipeline"]["busy_seconds"] is None


def test_more_devices_than_layers_and_record(tmp_path):
  hidden = (64, 32)
  one = pipeline.train(_config(tmp_path, "one", hidden_units=hidden, num_devices=1, heldout_every_epoch=True))
  four = pipeline.train(_config(tmp_path, "four", hidden_units=hidden, num_devices=4))
  _assert_same(_weights(tmp_path, "one"), _weights(tmp_path, "four"))
  assert four["pipeline"]["stages"] == [[1], [2]]  # Two stages: two of the four devices stay idle.
  on_disk = json.load(open(tmp_path / "one.json"))
  for field in runlog.REQUIRED_FIELDS + ("pipeline", "heldout_reconstruction", "pretrain_cpu_seconds"):
    assert field in on_disk, field
  assert on_disk["strategy"] == programs.PIPELINE_PARALLEL.name and on_disk["environment"]["kernels"] == "tf"
  for layer in on_disk["layers"]:
    assert len(layer["epochs"]) == 2
    for e in layer["epochs"]:
      assert e["loss"] > 0 and e["heldout_loss"] > 0 and 0 < e["elapsed_seconds"] <= on_disk["pretrain_seconds"]
  # The last epoch's held-out loss is the end-of-pretraining evaluation (same weights, same masks).
  for layer, final in zip(on_disk["layers"], on_disk["heldout_reconstruction"]):
    assert layer["epochs"][-1]["heldout_loss"] == pytest.approx(final["loss"], rel=1e-6)
  assert on_disk["pretrain_cpu_seconds"] > 0 and "heldout_eval" in on_disk["timing"]


def test_every_epoch_is_recorded_when_a_chunk_is_longer_than_an_epoch(tmp_path):
  # 2 steps per epoch, K = 8 asked: K is clamped to one epoch, so no tick ends two epochs of a layer and
  # every epoch gets its own entry with a held-out loss.
  record = pipeline.train(_config(tmp_path, "long", hidden_units=(32, 16), num_devices=2, batch_size=SLICE_EXAMPLES // 2,
                                pretrain_epochs=3, pipeline_chunk_steps=8, heldout_every_epoch=True))
  assert record["pipeline"]["chunk_steps"] == 2
  for layer in record["layers"]:
    assert len(layer["epochs"]) == 3
    assert all("heldout_loss" in e and "elapsed_seconds" in e for e in layer["epochs"])


def test_layer_one_equals_greedy_and_one_layer_equals_greedy(tmp_path):
  common = dict(hidden_units=(64, 32), pretrain_epochs=2, finetune_epochs=0, train_examples=SLICE_EXAMPLES,
                batch_size=50, pretrain_learning_rate=LEARNING_RATE, seed=3, results_dir=str(tmp_path), kernels="tf")
  greedy.train(config_lib.Config(run_name="g", export_weights=str(tmp_path / "g.npz"), **common))
  pipeline.train(pp_config.PipelineConfig(run_name="p", export_weights=str(tmp_path / "p.npz"), num_devices=2,
                                        **common))
  want, got = _weights(tmp_path, "g"), _weights(tmp_path, "p")
  _assert_same(got, want, keys=["layer1/kernel", "layer1/bias", "layer1/decoder_bias"])
  assert np.abs(got["layer2/kernel"] - want["layer2/kernel"]).max() > 1e-3  # Layer 2 learns differently.
  one = dict(common, hidden_units=(64,))
  greedy.train(config_lib.Config(run_name="g1", export_weights=str(tmp_path / "g1.npz"), **one))
  pipeline.train(pp_config.PipelineConfig(run_name="p1", export_weights=str(tmp_path / "p1.npz"), **one))
  _assert_same(_weights(tmp_path, "p1"), _weights(tmp_path, "g1"))


def test_kernel_paths_agree_to_float_rounding(tmp_path):
  """XLA-compiled and default-kernel steps compute the same mathematics; the difference stays tiny."""
  runs = {}
  for kernels in ("xla", "tf"):
    pipeline.train(_config(tmp_path, kernels, hidden_units=(64, 32), num_devices=2, kernels=kernels))
    runs[kernels] = _weights(tmp_path, kernels)
  worst = max(np.abs(runs["xla"][k] - runs["tf"][k]).max() for k in runs["xla"])
  assert worst < 1e-4, worst


@pytest.mark.parametrize("replicas", [1, 2])
def test_resume_after_sigkill_with_activations_in_flight(tmp_path, replicas):
  flags = ["--hidden_units=64,48,32", f"--num_devices={2 * replicas}", f"--replicas_per_stage={replicas}",
           "--pretrain_epochs=3", "--finetune_epochs=0",
           f"--train_examples={SLICE_EXAMPLES}", "--batch_size=50", f"--pretrain_learning_rate={LEARNING_RATE}",
           "--seed=3", "--pipeline_chunk_steps=7", "--progress=log", f"--model_dir={tmp_path / 'model'}",
           f"--results_dir={tmp_path}", "--run_name=resumed", f"--export_weights={tmp_path}/resumed.npz"]
  # 40 steps per epoch in chunks of 7: checkpoint 2 follows the tick holding step 80, when layer 1 is 4
  # steps into epoch 3 and stage 2 (layers 2, 3) a chunk behind it, with that chunk's activations in flight.
  killed = run_module(programs.PIPELINE_PARALLEL.module, *flags, env={cluster.KILL_ENV: "local:0:2"})
  assert killed.returncode == -9, killed.stderr[-3000:]
  assert not os.path.exists(tmp_path / "resumed.npz")
  final = run_module(programs.PIPELINE_PARALLEL.module, *flags)
  assert final.returncode == 0, final.stderr[-3000:]
  assert "Resuming from" in final.stderr
  pipeline.train(_config(tmp_path, "base", hidden_units=(64, 48, 32), num_devices=2, pretrain_epochs=3))
  if replicas > 1:
    assert json.load(open(tmp_path / "resumed.json"))["pipeline"]["replicas_per_stage"] == replicas
  _assert_same(_weights(tmp_path, "resumed"), _weights(tmp_path, "base"))
  resumed = json.load(open(tmp_path / "resumed.json"))
  base = json.load(open(tmp_path / "base.json"))
  assert resumed["resumed"] is True
  for a, b in zip(resumed["layers"], base["layers"]):
    assert [e["loss"] for e in a["epochs"]] == pytest.approx([e["loss"] for e in b["epochs"]], rel=1e-5)


@pytest.mark.parametrize("devices", [2, 4])
def test_replicated_stages_equal_one_replica_per_stage(tmp_path, one_device, devices, monkeypatch):
  """R = 2 replicas per stage (P = 1 on 2 devices, P = 2 on 4) give the weights of R = 1 at the same global batch;
  every replica's step saw B/R rows with the gradient divided by the global batch B (so the equality cannot come
  from each replica training the whole batch)."""
  seen = []
  original = stages_lib.Stage._layer_gradients

  def spy(layer, passes_up, global_batch):
    gradients = original(layer, passes_up, global_batch)

    def traced(inputs, target):
      seen.append((int(inputs.shape[0]), global_batch))
      return gradients(inputs, target)
    return traced
  monkeypatch.setattr(stages_lib.Stage, "_layer_gradients", staticmethod(spy))
  record = pipeline.train(_config(tmp_path, "r2", num_devices=devices, replicas_per_stage=2, pipeline_chunk_steps=3))
  assert record["pipeline"]["replicas_per_stage"] == 2 and len(record["pipeline"]["stages"]) == devices // 2
  assert seen and set(seen) == {(25, 50)}  # batch 50 over 2 replicas: 25 rows each, divided by 50
  _assert_same(_weights(tmp_path, "r2"), one_device[1])


def test_hybrid_bad_input_is_refused():
  for values, message in (({"replicas_per_stage": 0}, "--replicas_per_stage must be a positive integer"),
                          ({"replicas_per_stage": 2, "batch_size": 51}, "not divisible by --replicas_per_stage=2"),
                          ({"replicas_per_stage": 2, "num_devices": 3}, "not a multiple of --replicas_per_stage=2")):
    with pytest.raises(ValueError, match=message):
      pp_config.PipelineConfig(**values)


def test_checkpoint_of_another_program_or_other_flags_is_refused(tmp_path):
  model_dir = str(tmp_path / "model")
  greedy.train(config_lib.Config(program=programs.GREEDY.name, hidden_units=(16,), pretrain_epochs=1, finetune_epochs=0,
                               train_examples=200, batch_size=50, model_dir=model_dir))
  with pytest.raises(errors.ResumeMismatchError, match="strategy"):
    pipeline.train(_config(tmp_path, "x", hidden_units=(16,), pretrain_epochs=1, train_examples=200,
                         model_dir=model_dir))
  other = str(tmp_path / "other")
  pipeline.train(_config(tmp_path, "y", hidden_units=(16,), pretrain_epochs=1, train_examples=200, model_dir=other))
  with pytest.raises(errors.ResumeMismatchError, match="pipeline_chunk_steps"):
    pipeline.train(_config(tmp_path, "y", hidden_units=(16,), pretrain_epochs=1, train_examples=200, model_dir=other,
                         pipeline_chunk_steps=3))


def test_nan_loss_stops_with_clear_error_and_keeps_last_good_checkpoint(tmp_path):
  model_dir = str(tmp_path / "model")

  def poison_layer_2(run):
    if run.checkpoints_saved == 1:
      run.layers[1].kernel.assign(tf.fill(run.layers[1].kernel.shape, float("nan")))

  with pytest.raises(errors.TrainingDivergedError, match="layer 2 became nan"):
    pipeline.train(_config(tmp_path, "nan", hidden_units=(64, 32), num_devices=2, model_dir=model_dir),
                 on_checkpoint=poison_layer_2)
  record = pipeline.train(_config(tmp_path, "nan", hidden_units=(64, 32), num_devices=2, model_dir=model_dir))
  assert record["resumed"]
  assert all(np.isfinite(w).all() for w in _weights(tmp_path, "nan").values())


def test_bad_chunk_size_is_refused_before_any_work():
  proc = run_module(programs.PIPELINE_PARALLEL.module, "--pipeline_chunk_steps=0", "--results_dir=", timeout=600)
  assert proc.returncode != 0 and "Traceback" not in proc.stderr
  assert "--pipeline_chunk_steps=0" in proc.stderr and "positive integer" in proc.stderr
  assert "logical CPU device" not in proc.stderr
