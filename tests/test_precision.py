"""Mixed precision (`--precision=mixed_bfloat16`): every equality that holds in float32 holds within bfloat16,
a bfloat16 run learns what a float32 run learns, the traced step multiplies bfloat16 operands while every variable
stays float32, a processor without native bfloat16 is refused; and finetuning on every device equals one device."""

import functools

import numpy as np
import pytest
import tensorflow as tf

from common.artifacts import runlog
from common.base import errors
from common.distribute import replica_steps
from common.model import autoencoder
from common.model import precision
from common.settings import config as config_lib
from common.settings import programs
from data_parallel import config as dp_config
from data_parallel import pretrain as data_parallel
from data_parallel import replicas
from greedy import pretrain as greedy
from model_parallel import pretrain as model_parallel
from pipeline_parallel import config as pp_config
from pipeline_parallel import pretrain as pipeline
from sync_layerwise import pretrain as sync_layerwise
from conftest import SLICE_EXAMPLES, shared_keys

assert len(tf.config.list_logical_devices("CPU")) >= 3

BF16 = precision.MIXED_BFLOAT16
# A bfloat16 run needs native bfloat16 (the programs refuse it elsewhere): its tests skip on such a processor.
_NATIVE = precision.native_cpu_bfloat16(*precision.read_cpu_flags()) or tf.config.list_physical_devices("GPU")
native_bfloat16 = pytest.mark.skipif(not _NATIVE, reason="this processor has no native bfloat16 (avx512_bf16, "
                                     "amx_bf16 or aarch64 bf16): --precision=mixed_bfloat16 is refused here")
BASE = dict(hidden_units=(64, 32), pretrain_epochs=2, finetune_epochs=0, train_examples=SLICE_EXAMPLES, batch_size=50,
            pretrain_learning_rate=0.05, seed=3)


def _run(module, config_cls, tmp_path, name, **kw):
  config = config_cls(**dict(BASE, results_dir=str(tmp_path), run_name=name, export_weights=str(tmp_path / name),
                             **kw))
  return module.train(config), runlog.load_weights(str(tmp_path / f"{name}.npz"))


def _max_difference(a, b):
  keys = shared_keys(a, b)
  return max(float(np.max(np.abs(a[k] - b[k]))) for k in keys)


def _assert_moved(weights, hidden):
  for i, layer in enumerate(autoencoder.build_stack(hidden, BASE["seed"], 784)):
    assert np.abs(weights[f"layer{i + 1}/kernel"] - layer.kernel.numpy()).max() > 1e-2, i


@native_bfloat16
def test_bfloat16_model_parallel_equals_greedy_and_sync_layerwise(tmp_path):
  _, g = _run(greedy, config_lib.Config, tmp_path, "g", precision=BF16)
  record, mp1 = _run(model_parallel, config_lib.Config, tmp_path, "mp1", precision=BF16, num_devices=1,
                     program=programs.MODEL_PARALLEL.name)
  assert record["config"]["precision"] == record["environment"]["precision"] == BF16
  assert _max_difference(g, mp1) <= 1e-5
  _assert_moved(g, BASE["hidden_units"])
  _, sync = _run(sync_layerwise, config_lib.Config, tmp_path, "sync", precision=BF16,
                 program=programs.SYNC_LAYERWISE.name)
  _, mp2 = _run(model_parallel, config_lib.Config, tmp_path, "mp2", precision=BF16, num_devices=2,
                program=programs.MODEL_PARALLEL.name)
  assert _max_difference(sync, mp2) <= 1e-5
  # The bfloat16 products are not the float32 ones: the comparisons above are within one precision.
  _, g32 = _run(greedy, config_lib.Config, tmp_path, "g32")
  assert _max_difference(g, g32) > 1e-5


@native_bfloat16
def test_bfloat16_pipeline_is_the_same_on_one_two_and_three_devices(tmp_path):
  hidden = (64, 48, 32)
  _, one = _run(pipeline, pp_config.PipelineConfig, tmp_path, "pp1", precision=BF16, hidden_units=hidden)
  _assert_moved(one, hidden)
  for g in (2, 3):
    _, many = _run(pipeline, pp_config.PipelineConfig, tmp_path, f"pp{g}", precision=BF16, hidden_units=hidden,
                   num_devices=g, pipeline_chunk_steps=3)
    assert _max_difference(one, many) <= 1e-5, g


@native_bfloat16
def test_bfloat16_data_parallel_is_close_to_greedy(tmp_path):
  """Two replicas multiply half batches: other bfloat16 roundings than greedy's whole batch, so the weights agree
  to bfloat16's resolution (max |dw| <= 2^-8 max |w|), not to 1e-5."""
  _, g = _run(greedy, config_lib.Config, tmp_path, "g", precision=BF16)
  _, dp = _run(data_parallel, dp_config.DataParallelConfig, tmp_path, "dp", precision=BF16, num_devices=2,
               profile_steps=0)
  largest = max(float(np.max(np.abs(w))) for w in g.values())
  assert _max_difference(g, dp) <= 2 ** -8 * largest


@native_bfloat16
def test_a_bfloat16_run_learns_what_a_float32_run_learns(tmp_path):
  f32, _ = _run(greedy, config_lib.Config, tmp_path, "f32")
  bf16, _ = _run(greedy, config_lib.Config, tmp_path, "bf16", precision=BF16)
  assert bf16["environment"]["precision"] == BF16 and f32["environment"]["precision"] == precision.FLOAT32
  for a, b in zip(f32["heldout_reconstruction"], bf16["heldout_reconstruction"]):
    assert abs(b["loss"] - a["loss"]) <= 0.02 * a["loss"], (a, b)
  # Both learned: every layer's held-out loss is below its first epoch's training loss.
  for layer, held in zip(bf16["layers"], bf16["heldout_reconstruction"]):
    assert held["loss"] < layer["epochs"][0]["loss"]


def _ops(concrete):
  graphs = [concrete.graph] + [f.graph for f in concrete.graph._functions.values() if hasattr(f, "graph")]
  return [op for g in graphs for op in g.get_operations()]


def test_traced_step_multiplies_bfloat16_operands_and_keeps_float32_variables(mnist):
  layers = autoencoder.build_stack((32, 16), seed=0, input_units=784, precision=BF16)
  trainer = autoencoder.LayerTrainer(layers[1], layers[:1], tf.constant(mnist.train_images[:200]), 0, 0.3, 20)
  concrete = trainer.train_step.get_concrete_function(tf.zeros([20], tf.int32), tf.constant(0), tf.constant(0.1))
  ops = _ops(concrete)
  products = [op for op in ops if op.type in ("MatMul", "BatchMatMulV2", "_MklMatMul")]
  assert products and all(op.inputs[0].dtype == tf.bfloat16 and op.inputs[1].dtype == tf.bfloat16
                          for op in products), [(op.type, op.inputs[0].dtype) for op in products]
  assert all(v.dtype == tf.float32 for layer in layers for v in layer.weights)
  variables = [op for op in ops if op.type in ("VarHandleOp", "ReadVariableOp")]
  assert not [op for op in variables if op.get_attr("dtype") == tf.bfloat16]
  # float32: no bfloat16 anywhere in the same step.
  layers32 = autoencoder.build_stack((32, 16), seed=0, input_units=784)
  trainer32 = autoencoder.LayerTrainer(layers32[1], layers32[:1], tf.constant(mnist.train_images[:200]), 0, 0.3, 20)
  concrete32 = trainer32.train_step.get_concrete_function(tf.zeros([20], tf.int32), tf.constant(0), tf.constant(0.1))
  assert not [op for op in _ops(concrete32) if any(t.dtype == tf.bfloat16 for t in op.outputs)]


def test_each_bfloat16_operand_is_cast_once_and_the_step_is_what_casting_the_stacks_gives():
  # The step's tensors that two products read (the input, the hidden units, the logits' gradient) are cast to
  # bfloat16 once, and the stacked operands of the kernel's gradient are made of those: 5 casts to bfloat16 (the
  # kernel, x, h, dz, the pre-activation's gradient), and the loss and the kernel's gradient of the formula that casts
  # each stack (written out below, its element-wise work under XLA as the step's), bit for bit.
  layer = autoencoder.DenoisingAutoencoder(24, 16, 1, 0, BF16)
  x = tf.random.stateless_uniform([8, 24], (1, 2))
  target = tf.random.stateless_uniform([8, 24], (3, 4))
  step = tf.function(lambda x, t: layer.loss_and_gradients(x, t, tf.constant(8)))
  graph = step.get_concrete_function(x, target).graph.as_graph_def()  # the step and the fused kernels it calls
  nodes = list(graph.node) + [node for function in graph.library.function for node in function.node_def]
  casts = [node.name for node in nodes if node.op == "Cast" and node.attr["DstT"].type == tf.bfloat16.as_datatype_enum]
  assert len(casts) == 5, casts
  loss, hidden, grads = step(x, target)

  def product(a, b, **kw):
    return tf.cast(tf.matmul(tf.cast(a, tf.bfloat16), tf.cast(b, tf.bfloat16), **kw), tf.float32)
  xla = functools.partial(tf.function, jit_compile=True)  # the step's element-wise work runs under XLA
  h = xla(tf.sigmoid)(product(x, layer.kernel) + layer.bias)
  z = product(h, layer.kernel, transpose_b=True) + layer.decoder_bias
  dz = xla(lambda z: (tf.sigmoid(z) - target) / 8.0)(z)
  d_pre = xla(lambda p: p * h * (1.0 - h))(product(dz, layer.kernel))
  np.testing.assert_array_equal(hidden.numpy(), h.numpy())
  np.testing.assert_array_equal(loss.numpy(), xla(lambda z: tf.reduce_sum(
      tf.nn.sigmoid_cross_entropy_with_logits(labels=target, logits=z)) / 8.0)(z).numpy())
  np.testing.assert_array_equal(
      grads[0].numpy(), product(tf.concat([x, dz], 0), tf.concat([d_pre, h], 0), transpose_a=True).numpy())
  # The biases' gradients are sums the fused kernels reduce in their own order: equal to float32's rounding.
  for got, expected in zip(grads[1:], [tf.reduce_sum(d_pre, 0), tf.reduce_sum(dz, 0)]):
    np.testing.assert_allclose(got.numpy(), expected.numpy(), rtol=1e-6, atol=1e-7)


@native_bfloat16
def test_a_bfloat16_step_applies_the_kernels_bfloat16_gradient_in_one_pass():
  # sgd_step's XLA pass: kernel -= rate * float32(the kernel's bfloat16 gradient product), what the float32 gradient
  # loss_and_gradients returns gives (to the last bit of an FMA); the biases by TensorFlow's update, bit for bit.
  x = tf.random.stateless_uniform([8, 24], (1, 2))
  target = tf.random.stateless_uniform([8, 24], (3, 4))
  layer = autoencoder.DenoisingAutoencoder(24, 16, 1, 0, BF16)
  _, _, grads = layer.loss_and_gradients(x, target, tf.constant(8))
  assert all(g.dtype == tf.float32 for g in grads)
  before = [w.numpy() for w in layer.weights]
  tf.function(lambda: layer.sgd_step(x, target, tf.constant(0.5)))()
  np.testing.assert_allclose(layer.kernel.numpy(), before[0] - 0.5 * grads[0].numpy(), rtol=0, atol=1e-7)
  assert np.abs(layer.kernel.numpy() - before[0]).max() > 1e-3
  for w, b, g in zip(layer.weights[1:], before[1:], grads[1:]):
    np.testing.assert_array_equal(w.numpy(), (tf.constant(b) - 0.5 * g).numpy())


@native_bfloat16
def test_the_frozen_layers_bfloat16_operands_made_once_per_loop_give_the_steps_that_cast_them(mnist):
  # LayerTrainer.run_steps casts the frozen kernels once before its loop; steps that cast them each time give the
  # same weights, bit for bit.
  images = tf.constant(mnist.train_images[:200])
  weights = []
  for per_loop in (True, False):
    layers = autoencoder.build_stack((32, 16), seed=0, input_units=784, precision=BF16)
    trainer = autoencoder.LayerTrainer(layers[1], layers[:1], images, 0, 0.3, 20)
    if per_loop:
      tf.function(lambda: trainer.run_steps(tf.constant(0), tf.constant(0), tf.constant(4), tf.constant(0.1)))()
    else:
      for step in range(4):
        trainer.train_step(trainer.batches.indices(tf.range(step * 20, step * 20 + 20), tf.constant(0)),
                           tf.constant(0), tf.constant(0.1))
    weights.append([w.numpy() for w in layers[1].weights])
  assert np.abs(weights[0][0] - autoencoder.build_stack((32, 16), 0, 784)[1].kernel.numpy()).max() > 1e-3
  for a, b in zip(*weights):
    np.testing.assert_array_equal(a, b)


@native_bfloat16
def test_data_parallels_frozen_operands_made_once_per_loop_give_steps_that_make_them_each_step(mnist):
  # DataParallelTrainer makes each replica's frozen bfloat16 kernels once per loop of steps (`loop_constants`): one
  # loop of 4 steps gives the weights of 4 loops of one step each, bit for bit.
  strategy = replica_steps.make_strategy([d.name for d in tf.config.list_logical_devices("CPU")[:2]])
  images = replica_steps.replica_resident(strategy, mnist.train_images[:200])
  weights = []
  for loops in (((0, 4),), ((0, 1), (1, 1), (2, 1), (3, 1))):
    with strategy.scope():
      layers = autoencoder.build_stack((32, 16), seed=0, input_units=784, precision=BF16)
    dp = replicas.DataParallelTrainer(strategy, autoencoder.LayerTrainer(layers[1], layers[:1], images, 0, 0.3, 20))
    run = dp.steps_function()
    for first, num in loops:
      run(tf.constant(0), tf.constant(first), tf.constant(num), tf.constant(0.1))
    weights.append([w.numpy() for w in layers[1].weights])
  assert np.abs(weights[0][0] - autoencoder.build_stack((32, 16), 0, 784)[1].kernel.numpy()).max() > 1e-3
  for a, b in zip(*weights):
    np.testing.assert_array_equal(a, b)


def test_mixed_bfloat16_is_refused_without_native_bfloat16():
  no_gpus = lambda: []  # noqa: E731
  epyc = lambda: ("x86_64", ["fpu", "avx512f", "avx512_bf16"])  # noqa: E731
  old = lambda: ("x86_64", ["fpu", "avx2", "avx512f"])  # noqa: E731
  graviton = lambda: ("aarch64", ["fp", "asimd", "bf16"])  # noqa: E731
  precision.check_supported(BF16, epyc, no_gpus)
  precision.check_supported(BF16, graviton, no_gpus)
  precision.check_supported(precision.FLOAT32, old, no_gpus)
  with pytest.raises(errors.UserError, match="avx512_bf16 or amx_bf16 among its CPU flags"):
    precision.check_supported(BF16, old, no_gpus)
  with pytest.raises(errors.UserError, match="compute capability >= 8.0"):
    precision.check_supported(BF16, epyc, lambda: [(7, 5)])
  precision.check_supported(BF16, old, lambda: [(8, 0)])
  machine, flags = precision.read_cpu_flags()  # This machine's flags are readable, and name its bfloat16 or none.
  assert machine and flags and precision.native_cpu_bfloat16(machine, flags) in (None, *precision.X86_FLAGS,
                                                                                precision.ARM_FEATURE)


def test_finetuning_on_two_devices_equals_one_device(tmp_path):
  """Finetuning runs under a MirroredStrategy over every device of the run: each replica an equal share of the
  global batch, the summed gradient the one-device gradient, so the finetuned classifier is the same."""
  weights = {}
  for g in (1, 2):
    config = config_lib.Config(**dict(BASE, pretrain_epochs=1, finetune_epochs=2, finetune_learning_rate=0.1,
                                      num_devices=g, results_dir=str(tmp_path), run_name=f"g{g}",
                                      model_dir=str(tmp_path / f"model{g}")))
    record = greedy.train(config)
    assert record["finetune"]["replicas"] == g
    reader = tf.train.load_checkpoint(str(tmp_path / f"model{g}"))
    weights[g] = {k: reader.get_tensor(k) for k in reader.get_variable_to_shape_map() if k.startswith("classifier/")
                  and "OPTIMIZER" not in k}
  assert len(weights[1]) == 6 and sorted(weights[1]) == sorted(weights[2])  # 2 hidden + output, kernels and biases
  assert np.abs(weights[1]["classifier/output_bias/.ATTRIBUTES/VARIABLE_VALUE"]).max() > 1e-3  # finetuning moved it
  assert _max_difference(weights[1], weights[2]) <= 1e-5
