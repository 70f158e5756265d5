"""Data parallel on a small slice of real MNIST: the same weights as greedy at the same global batch
(as tf-keras' ctl_correctness_test checks a strategy against one device), resume, the op profile and
run record, the large-batch learning-rate recipe, and the refusal of a batch the replicas cannot split."""

import json

import numpy as np
import pytest
import tensorflow as tf

from common.artifacts import runlog
from common.distribute import replica_steps
from common.model import autoencoder
from common.model import optimizers
from common.settings import config as common_config
from common.settings import programs
from data_parallel import config as config_lib
from data_parallel import pretrain
from data_parallel import profile as profile_lib
from data_parallel import replicas
from greedy import pretrain as greedy
from conftest import SLICE_EXAMPLES, run_module, shared_keys

# Start the runtime now with conftest's logical devices: a program's `devices.setup` called first would
# otherwise configure (and start) it with only as many devices as that program asks for.
assert len(tf.config.list_logical_devices("CPU")) >= 2

# Learning rate 0.05 at batch 50: the weights move far from their initial values in two epochs.
BASE = dict(hidden_units=(48, 24), pretrain_epochs=2, finetune_epochs=1, train_examples=SLICE_EXAMPLES,
            batch_size=50, pretrain_learning_rate=0.05, finetune_learning_rate=0.1, seed=3)


def _dp(tmp_path, name, **kw):
  values = dict(BASE, num_devices=2, results_dir=str(tmp_path), run_name=name,
                export_weights=str(tmp_path / f"{name}.npz"), profile_steps=3, profile_repeats=2)
  values.update(kw)
  return config_lib.DataParallelConfig(**values)


@pytest.fixture(scope="module")
def greedy_run(tmp_path_factory):
  """Greedy at the same global batch: (record, exported weights)."""
  tmp = tmp_path_factory.mktemp(programs.GREEDY.name)
  config = common_config.Config(program=programs.GREEDY.name, results_dir=str(tmp), run_name=programs.GREEDY.name,
                                export_weights=str(tmp / "greedy.npz"), **BASE)
  record = greedy.train(config)
  return record, runlog.load_weights(str(tmp / "greedy.npz"))


def _assert_same_weights(got, want):
  for key in shared_keys(got, want):
    np.testing.assert_allclose(got[key], want[key], rtol=0, atol=1e-5, err_msg=key)


def test_two_replicas_export_the_weights_greedy_exports(tmp_path, greedy_run):
  greedy_record, want = greedy_run
  record = pretrain.train(_dp(tmp_path, "dp"))
  got = runlog.load_weights(str(tmp_path / "dp.npz"))
  _assert_same_weights(got, want)
  # The weights moved far from their initial values, so the comparison is not trivially true.
  start = autoencoder.build_stack(BASE["hidden_units"], BASE["seed"], 784)
  for layer in start:
    for key, value in layer.numpy_weights().items():
      assert np.max(np.abs(got[key] - value)) > 1e-2, key
  # Same losses per epoch; finetuning (data parallel too) ends with the same loss and accuracy.
  for a, b in zip(record["layers"], greedy_record["layers"]):
    assert [e["loss"] for e in a["epochs"]] == pytest.approx([e["loss"] for e in b["epochs"]], rel=1e-5)
  assert record["finetune"]["history"][0]["loss"] == pytest.approx(greedy_record["finetune"]["history"][0]["loss"],
                                                                   rel=1e-5)
  assert abs(record["finetune"]["test_accuracy"] - greedy_record["finetune"]["test_accuracy"]) <= 2e-4

  # The run record: the contract fields, every replica named, the op profile in "profile" and "timing".
  on_disk = json.load(open(tmp_path / "dp.json"))
  for field in runlog.REQUIRED_FIELDS:
    assert field in on_disk, field
  assert on_disk["strategy"] == programs.DATA_PARALLEL.name and on_disk["config"]["num_devices"] == 2
  assert on_disk["layers"][0]["device"].count(",") == 1
  assert on_disk["pretrain_seconds"] == pytest.approx(sum(e["seconds"] for l in on_disk["layers"] for e in l["epochs"]))
  profile = on_disk["profile"]
  assert set(profile["seconds_per_epoch"]) == set(profile_lib.PHASES)
  assert all(profile["seconds_per_epoch"][p] >= 0 for p in profile_lib.PHASES)
  assert profile["seconds_per_epoch"]["forward_loss"] > 0 and profile["seconds_per_epoch"]["allreduce"] > 0
  assert profile["total_seconds_per_epoch"] == pytest.approx(sum(profile["seconds_per_epoch"].values()))
  assert profile["repeats"] == 2 and profile["method"]
  for p in profile_lib.PHASES:
    assert on_disk["timing"][f"profile/{p}"] == profile["seconds_per_epoch"][p]
  assert {"compile", "profile", "pretrain_train", "finetune_train"} <= set(on_disk["timing"])


def test_resume_after_a_crash_ends_with_greedys_weights(tmp_path, greedy_run):
  _, want = greedy_run
  model_dir = str(tmp_path / "model")

  class Crash(Exception):
    pass

  def crash_inside_layer_2(run):
    if run.checkpoints_saved == 3:
      raise Crash()

  with pytest.raises(Crash):
    pretrain.train(_dp(tmp_path, "dp", model_dir=model_dir, finetune_epochs=0), on_checkpoint=crash_inside_layer_2)
  # Resumed with --profile_dir: the first epoch trained (layer 2's second) is traced for TensorBoard.
  record = pretrain.train(_dp(tmp_path, "dp", model_dir=model_dir, finetune_epochs=0, profile_repeats=1,
                            profile_dir=str(tmp_path / "trace")))
  assert record["resumed"] and [len(l["epochs"]) for l in record["layers"]] == [2, 2]
  assert record["profile"]["repeats"] == 2  # measured before the crash, kept in the checkpoint
  _assert_same_weights(runlog.load_weights(str(tmp_path / "dp.npz")), want)
  assert list((tmp_path / "trace").glob("plugins/profile/*/*.xplane.pb"))


def test_batch_not_divisible_by_replicas_is_refused(tmp_path):
  with pytest.raises(ValueError, match=r"--batch_size=51 \(the global batch\) is not divisible by the 2 replicas"):
    _dp(tmp_path, "odd", batch_size=51)
  with pytest.raises(ValueError, match="--finetune_batch_size=99"):
    _dp(tmp_path, "odd", finetune_batch_size=99)
  proc = run_module(programs.DATA_PARALLEL.module, "--num_devices=2", "--batch_size=51", "--train_examples=2000",
                    "--results_dir=")
  assert proc.returncode != 0 and "Traceback" not in proc.stderr
  assert "is not divisible by the 2 replicas" in proc.stderr, proc.stderr[-2000:]


def test_the_profiles_timed_gradient_step_needs_every_gradient():
  # The op profile times forward, loss and gradients in a loop whose output must need the backward pass:
  # TensorFlow's graph optimizer prunes what no output needs, and a loop returning the loss alone timed the
  # forward pass twice on TensorFlow's kernels (the gradients phase came out near 0 s).
  layer = autoencoder.build_stack((24,), seed=3, input_units=784)[0]
  images = tf.random.stateless_uniform([100, 784], seed=[1, 2])
  trainer = autoencoder.LayerTrainer(layer, [], images, seed=3, corruption=0.3, batch_size=50)
  phases = profile_lib.Phases(trainer)
  corrupted, clean = phases.prepare(tf.range(50), tf.constant(0))
  with tf.GradientTape() as tape:
    loss = phases.loss(corrupted, clean)
  grads = tape.gradient(loss, list(layer.weights))
  firsts = float(profile_lib.needs_every(grads))
  assert abs(firsts) > 1e-3  # The gradients' part of the timed value is not lost in the loss's rounding.
  timed = float(phases.timed_forward_loss_gradients(corrupted, clean))
  assert timed - float(loss) == pytest.approx(firsts, rel=1e-3)


def test_large_batch_learning_rates_and_warmup():
  c = config_lib.DataParallelConfig(batch_size=5000, pretrain_lr_scaling="linear", finetune_lr_scaling="sqrt",
                                    lr_warmup_epochs=2, pretrain_learning_rate=1e-4, finetune_learning_rate=0.1)
  assert c.pretrain_learning_rate_after_warmup() == pytest.approx(5e-3)
  assert c.finetune_learning_rate_after_warmup() == pytest.approx(0.1 * 50 ** 0.5)
  default = config_lib.DataParallelConfig(batch_size=5000)  # The report's recipe: rates unchanged.
  assert default.pretrain_learning_rate_after_warmup() == 1e-4 and default.finetune_learning_rate_after_warmup() == 0.1
  multiplier = config_lib.lr_warmup(50.0, 2, steps_per_epoch=11)
  got = [float(multiplier(tf.constant(s))) for s in (0, 11, 22, 100)]
  # Starts at the reference rate (1/50 of the scaled one), linear in the step, 1 after two epochs.
  assert got == pytest.approx([1 / 50, 1 / 50 + (1 - 1 / 50) / 2, 1.0, 1.0])
  assert config_lib.lr_warmup(50.0, 0, 11) is None and config_lib.lr_warmup(1.0, 5, 11) is None
  with pytest.raises(ValueError, match="--pretrain_lr_scaling must be one of"):
    config_lib.DataParallelConfig(pretrain_lr_scaling="cubic")
  with pytest.raises(ValueError, match=r"--finetune_momentum must be in \[0, 1\)"):
    config_lib.DataParallelConfig(finetune_momentum=1.0)
  # With momentum m the effective step is lr / (1 - m): the warm-up starts at the reference rate.
  m = config_lib.DataParallelConfig(batch_size=5000, finetune_lr_scaling="sqrt", finetune_momentum=0.9,
                                    finetune_learning_rate=0.1, lr_warmup_epochs=2)
  assert m.finetune_warmup_factor() == pytest.approx(50 ** 0.5 / 0.1)
  assert m.finetune_update_rule().describe() == {"name": "momentum", "momentum": 0.9}
  adam = config_lib.DataParallelConfig(batch_size=5000, finetune_lr_scaling="sqrt", finetune_optimizer="adam",
                                       finetune_learning_rate=4e-4, lr_warmup_epochs=2)
  assert adam.finetune_learning_rate_after_warmup() == pytest.approx(4e-4 * 50 ** 0.5)
  assert adam.finetune_warmup_factor() == pytest.approx(50 ** 0.5)
  assert adam.finetune_update_rule().name == "adam"
  assert config_lib.DataParallelConfig().finetune_update_rule().name == "sgd"
  with pytest.raises(ValueError, match="--finetune_momentum applies to --finetune_optimizer=sgd only"):
    config_lib.DataParallelConfig(finetune_optimizer="adam", finetune_momentum=0.9)


def _two_replica_steps(rule, steps=2):
  """Runs `steps` updates under 2 replicas where replica 0 sees gradient g and replica 1 sees 2g (sum 3g);
  returns (variable, slots) as numpy values of every copy."""
  strategy = tf.distribute.MirroredStrategy(["/device:CPU:0", "/device:CPU:1"])
  with strategy.scope():
    variable = tf.Variable([1.0, 2.0])
    slots = [[tf.Variable([0.0, 0.0]) for _ in range(rule.num_slots)]]
  g = tf.constant([1.0, -1.0])

  @tf.function
  def step(index):
    def replica_step():
      replica = tf.distribute.get_replica_context().replica_id_in_sync_group
      gradient = g * tf.cast(replica + 1, tf.float32)
      optimizers.apply_update([variable], [gradient], tf.constant(0.1), rule, slots, index)
    strategy.run(replica_step)

  for i in range(steps):
    step(tf.constant(i))
  return [c.numpy() for c in variable.values], [[c.numpy() for c in s.values] for s in slots[0]]


def test_momentum_update_sums_replica_gradients_and_applies_heavy_ball_once():
  copies, (velocity,) = _two_replica_steps(optimizers.UpdateRule("momentum", 0.9))
  # v1 = 3g, x1 = x0 - 0.1 * 3g; v2 = 0.9 * 3g + 3g = 5.7g, x2 = x1 - 0.1 * 5.7g = x0 - 0.87g.
  for copy in copies:
    np.testing.assert_allclose(copy, [1.0 - 0.87, 2.0 + 0.87], rtol=1e-6)
  for copy in velocity:
    np.testing.assert_allclose(copy, [5.7, -5.7], rtol=1e-6)


def test_adam_update_follows_kingma_and_ba_on_every_copy():
  rule = optimizers.UpdateRule("adam")
  copies, (m_copies, v_copies) = _two_replica_steps(rule, steps=3)
  # Algorithm 1 of Kingma & Ba 2015 (epsilon added to sqrt(v) before the bias correction of the rate).
  x, m, v = np.array([1.0, 2.0]), np.zeros(2), np.zeros(2)
  grad = 3 * np.array([1.0, -1.0])
  for t in (1, 2, 3):
    m = rule.beta_1 * m + (1 - rule.beta_1) * grad
    v = rule.beta_2 * v + (1 - rule.beta_2) * grad ** 2
    rate = 0.1 * np.sqrt(1 - rule.beta_2 ** t) / (1 - rule.beta_1 ** t)
    x = x - rate * m / (np.sqrt(v) + rule.epsilon)
  for copy in copies:
    np.testing.assert_allclose(copy, x, rtol=1e-5)
  for got_m, got_v in zip(m_copies, v_copies):
    np.testing.assert_allclose(got_m, m, rtol=1e-5)
    np.testing.assert_allclose(got_v, v, rtol=1e-4)  # float32 squares of 3.
  with pytest.raises(ValueError, match="unknown update rule"):
    optimizers.UpdateRule("rmsprop")


def test_the_benchmark_only_straggler_delays_but_changes_nothing(tmp_path, greedy_run):
  """--benchmark_slow_worker_delay_seconds: replica 0 sleeps in every step before the all-reduce; every replica waits
  for it (synchronous SGD), the weights are greedy's, and the record names the benchmark-only setting."""
  _, want = greedy_run
  record = pretrain.train(_dp(tmp_path, "slow", profile_steps=0, finetune_epochs=0,
                            benchmark_slow_worker_delay_seconds=0.002))
  _assert_same_weights(runlog.load_weights(str(tmp_path / "slow.npz")), want)
  assert record["benchmark_only"]["slow_worker_delay_seconds"] == 0.002 and record["benchmark_only"]["slow_worker"] == 0
  steps = sum(len(layer["epochs"]) for layer in record["layers"]) * (SLICE_EXAMPLES // BASE["batch_size"])
  assert record["pretrain_seconds"] >= 0.002 * steps  # every step waited for the sleeping replica


def _op_types(concrete_function) -> set:
  """Every op type of a traced function, its loop bodies and nested functions included."""
  graph_def = concrete_function.graph.as_graph_def()
  types = {node.op for node in graph_def.node}
  for function in graph_def.library.function:
    types.update(node.op for node in function.node_def)
  return types


def test_data_parallel_reads_no_input_iterator(mnist, tmp_path, monkeypatch):
  """More devices than cores (issue 14, item 14): with a distributed input iterator per layer, creating
  layer 2's while layer 1's was alive or being freed sat idle for minutes (204 s of a 284 s run at 8 devices
  on 2 cores, docs/data_parallel.md). Every replica now computes its example indices in the step: a whole run
  (pretraining and finetuning) on the 4 logical devices of conftest (2x the cores of CI) creates no
  distributed dataset, and no iterator op appears in its steps."""
  made = []
  for method in ("distribute_datasets_from_function", "experimental_distribute_dataset"):
    original = getattr(tf.distribute.MirroredStrategy, method)

    def recorded(self, *args, _method=method, _original=original, **kwargs):
      made.append(_method)
      return _original(self, *args, **kwargs)
    monkeypatch.setattr(tf.distribute.MirroredStrategy, method, recorded)
  config = config_lib.DataParallelConfig(
      hidden_units=(16, 8), pretrain_epochs=1, finetune_epochs=1, train_examples=400, batch_size=40,
      num_devices=4, results_dir=str(tmp_path), run_name="dp4", model_dir=str(tmp_path / "model"))
  record = pretrain.train(config)
  assert made == []
  assert [len(layer["epochs"]) for layer in record["layers"]] == [1, 1]
  assert len(record["layers"][0]["device"].split(",")) == 4

  strategy = replica_steps.make_strategy([d.name for d in tf.config.list_logical_devices("CPU")[:4]])
  images = replica_steps.replica_resident(strategy, mnist.train_images)
  with strategy.scope():
    layers = [autoencoder.DenoisingAutoencoder(784, 16, 1, 0), autoencoder.DenoisingAutoencoder(16, 8, 2, 0)]
  dp = replicas.DataParallelTrainer(strategy, autoencoder.LayerTrainer(layers[1], layers[:1], images, 0, 0.3, 40))
  types = _op_types(dp._compiled.get_concrete_function(tf.constant(0), tf.constant(0), tf.constant(2),
                                                       tf.constant(0.0)))
  assert [t for t in types if "IndexShuffle" in t], sorted(types)  # the indices are computed in the step
  assert not [t for t in types if "Iterator" in t], sorted(t for t in types if "Iterator" in t)
