"""The tied-weight denoising autoencoder layer, its frozen copy, and the compiled training of one layer.

Model (Vincent et al. 2008, "Extracting and composing robust features with denoising autoencoders";
as in the report's original implementation):
  h = sigmoid(x W + b)                     encoder, W float32 [n_in, n_hidden]
  r = sigmoid(h W^T + c)                   decoder with tied weights and its own bias c [n_in]
  loss = mean over batch of sum over units of binary cross-entropy(target, r)
Layer n is trained on corrupted image -> frozen copies of layers 1..n-1 -> layer n, with target
clean image -> the same frozen copies. The cross-entropy is computed from the logits
(`tf.nn.sigmoid_cross_entropy_with_logits`), the stable form of the original's clipped log.

`LayerTrainer.run_steps` is the hot path every speedup is measured against: a `tf.while_loop` over
steps whose body gathers the batch from a device-resident copy of the images and runs one step
(corruption mask, frozen forward passes, loss, gradient and SGD update), compiled by XLA into one fused
computation or run on TensorFlow's default (oneDNN) kernels: the kernel path (`KERNEL_PATHS`), one
setting of every program (`--kernels`).
"""

import math
from typing import Any, Dict, List, Optional, Sequence, Tuple

import numpy as np
import tensorflow as tf
from tensorflow.python.framework import config  # is_op_determinism_enabled has no public alias.

from common.data import loader as data
from common.model import graph
from common.model import layer_warmup
from common.model import precision as precision_lib

# Kernel paths of the pretraining steps: "xla" compiles each step with XLA (`jit_compile=True`), "tf" runs
# TensorFlow's default kernels (oneDNN on CPU). The mathematics is the same; float rounding differs.
KERNEL_PATHS = ("xla", "tf")


def compile_step(fn, kernels: str):
  """`fn` as a `tf.function` compiled by XLA (kernels "xla") or on TensorFlow's default kernels ("tf").

  Raises:
    ValueError: an unknown kernel path.
  """
  if kernels not in KERNEL_PATHS:
    raise ValueError(f"unknown kernel path {kernels!r}; one of {', '.join(KERNEL_PATHS)}")
  return graph.function(fn, jit_compile=kernels == "xla")


@graph.function(jit_compile=True)
def xla_sgd_update(kernel: tf.Variable, learning_rate: tf.Tensor, gradient: tf.Tensor) -> None:
  """kernel -= learning_rate * float32(gradient) in one pass over the kernel compiled by XLA: the SGD update of a
  bfloat16 gradient (TensorFlow's kernels take two passes, its cast to float32 and the update).

  Args:
    kernel: float32 [input_units, hidden_units] variable.
    learning_rate: float32 scalar.
    gradient: [input_units, hidden_units], bfloat16 (the kernel's gradient as its bfloat16 product returned it) or
      float32.
  """
  kernel.assign_sub(learning_rate * tf.cast(gradient, tf.float32))


# The element-wise work between a pretraining step's products, in three kernels fused by XLA; the products stay on
# the kernel path's own kernels (oneDNN under "tf"). Each takes a product as it returned it (bfloat16 from bfloat16
# operands, else float32), computes in float32 and returns what the next product reads already cast to that product's
# dtype: one pass over each [b, units] tensor where TensorFlow's kernels take one per op (about twenty in a step).
# They take tensors, not variables (XLA reads no variable of another device), so callers read the biases first.


@graph.function(jit_compile=True)
def activation(product: tf.Tensor, bias: tf.Tensor) -> Tuple[tf.Tensor, tf.Tensor]:
  """h = sigmoid(float32(product) + bias), the encoder's activation, and h as the next product's operand.

  Args:
    product: [b, hidden_units] = x W, bfloat16 (from bfloat16 operands) or float32.
    bias: float32 [hidden_units].

  Returns:
    (h float32 [b, hidden_units] in (0, 1), h cast to `product`'s dtype).
  """
  hidden = tf.sigmoid(tf.cast(product, tf.float32) + bias)
  return hidden, tf.cast(hidden, product.dtype)


@graph.function(jit_compile=True)
def decoder_error(product: tf.Tensor, decoder_bias: tf.Tensor, target: tf.Tensor, scale: tf.Tensor,
                  x: tf.Tensor) -> Tuple[tf.Tensor, tf.Tensor, tf.Tensor, tf.Tensor]:
  """The loss and the decoder's error from its logits z = float32(product) + c (`loss_and_gradients`' dz).

  Args:
    product: [b, input_units] = h W^T, bfloat16 or float32.
    decoder_bias: float32 [input_units], c.
    target: float32 [b, input_units] in [0, 1].
    scale: float32 scalar, 1 / the loss's divisor.
    x: the step's input as the products' operand, [b, input_units] in `product`'s dtype.

  Returns:
    (loss: float32 scalar, the cross-entropy of sigmoid(z) against `target` summed over the batch times `scale`;
    dz = (sigmoid(z) - target) * scale cast to `product`'s dtype, [b, input_units]; [x; dz] stacked along the batch,
    [2b, input_units], the first operand of the kernel's gradient; d c = the sum of dz over the batch, float32
    [input_units]).
  """
  logits = tf.cast(product, tf.float32) + decoder_bias
  loss = tf.reduce_sum(tf.nn.sigmoid_cross_entropy_with_logits(labels=target, logits=logits)) * scale
  d_logits = (tf.sigmoid(logits) - target) * scale
  dz = tf.cast(d_logits, product.dtype)
  return loss, dz, tf.concat([x, dz], 0), tf.reduce_sum(d_logits, 0)


@graph.function(jit_compile=True)
def encoder_error(product: tf.Tensor, hidden: tf.Tensor, h: tf.Tensor) -> Tuple[tf.Tensor, tf.Tensor]:
  """The encoder's error da = float32(product) h (1 - h) (`loss_and_gradients`' da), from product = dz W.

  Args:
    product: [b, hidden_units] = dz W, bfloat16 or float32.
    hidden: float32 [b, hidden_units], h.
    h: h as the products' operand, in `product`'s dtype.

  Returns:
    ([da; h] stacked along the batch in `product`'s dtype, [2b, hidden_units], the second operand of the kernel's
    gradient; d b = the sum of da over the batch, float32 [hidden_units]).
  """
  d_pre = tf.cast(product, tf.float32) * hidden * (1.0 - hidden)
  return tf.concat([tf.cast(d_pre, product.dtype), h], 0), tf.reduce_sum(d_pre, 0)


def encode_with(x: tf.Tensor, kernel: tf.Tensor, bias: tf.Tensor, precision: str) -> tf.Tensor:
  """h = sigmoid(x W + b), float32 [b, hidden_units] in (0, 1), from x float32 [b, input_units] (or already the
  product's operand), W [input_units, hidden_units] (the float32 variable or its operand, `kernel_operand`) and b
  float32 [hidden_units] (a variable or a tensor): the product at `precision`, the rest in `activation`."""
  product = tf.matmul(precision_lib.operand(x, precision), precision_lib.operand(kernel, precision))
  return activation(product, tf.convert_to_tensor(bias))[0]


def sigmoid_glorot_uniform(fan_in: int, fan_out: int, seed: int, layer_index: int) -> tf.Tensor:
  """float32 [fan_in, fan_out] uniform in +-4 sqrt(6 / (fan_in + fan_out)), the sigmoid Glorot range.

  Glorot & Bengio 2010 (the factor 4 is their recommendation for sigmoid units). Stateless: a pure
  function of (seed, layer_index), so every device and program draws the same initial weights.
  """
  limit = 4.0 * math.sqrt(6.0 / (fan_in + fan_out))
  return tf.random.stateless_uniform([fan_in, fan_out], seed=[seed, 7919 + layer_index],
                                     minval=-limit, maxval=limit, dtype=tf.float32)


class DenoisingAutoencoder(tf.Module):
  """One tied-weight sigmoid denoising autoencoder layer.

  Attributes:
    index: 1-based position in the stack.
    kernel: float32 [input_units, hidden_units] variable, shared by encoder and decoder.
    bias: float32 [hidden_units] encoder bias.
    decoder_bias: float32 [input_units] decoder bias.
    precision: of the matrix products (`common.model.precision`): "float32", or "mixed_bfloat16" (bfloat16 operands,
      everything else float32).
  """

  def __init__(self, input_units: int, hidden_units: int, index: int, seed: int,
               precision: str = precision_lib.FLOAT32):
    super().__init__(name=f"layer{index}")
    self.index = index
    self.input_units = input_units
    self.hidden_units = hidden_units
    self.precision = precision
    with self.name_scope:
      self.kernel = tf.Variable(sigmoid_glorot_uniform(input_units, hidden_units, seed, index), name="kernel")
      self.bias = tf.Variable(tf.zeros([hidden_units]), name="bias")
      self.decoder_bias = tf.Variable(tf.zeros([input_units]), name="decoder_bias")

  @property
  def weights(self) -> List[tf.Variable]:
    """[kernel, bias, decoder_bias], the order of every gradient list."""
    return [self.kernel, self.bias, self.decoder_bias]

  def encode(self, x: tf.Tensor, precision: Optional[str] = None, kernel: Optional[tf.Tensor] = None) -> tf.Tensor:
    """float32 [b, input_units] -> float32 [b, hidden_units] in (0, 1), the products at `precision` (default:
    the layer's); `kernel`: W already as the product operand (`kernel_operand`), else the variable's."""
    p, w = precision or self.precision, self.kernel if kernel is None else kernel
    return encode_with(x, w, self.bias, p)

  def kernel_operand(self) -> tf.Tensor:
    """W as the products' operand: bfloat16 [input_units, hidden_units] cast from the variable under mixed_bfloat16,
    else the float32 variable itself. A loop that does not change W makes it once, not once per step."""
    return precision_lib.operand(self.kernel, self.precision)

  def per_example_loss(self, corrupted: tf.Tensor, target: tf.Tensor, precision: Optional[str] = None) -> tf.Tensor:
    """Reconstruction loss of each example: float32 [b], cross-entropy summed over the input units.

    Args:
      corrupted: float32 [b, input_units], the corrupted input after the frozen layers below.
      target: float32 [b, input_units] in [0, 1], the clean input after the same frozen layers.
      precision: of the products (default: the layer's).
    """
    return self.reconstruction_loss(self.encode(corrupted, precision), target, precision)

  def decoder_logits(self, hidden: tf.Tensor, precision: Optional[str] = None) -> tf.Tensor:
    """float32 [b, hidden_units] -> the decoder's logits hidden W^T + c, float32 [b, input_units], the product at
    `precision` (default: the layer's). (The training step computes them inside `decoder_error`.)"""
    return precision_lib.matmul(hidden, self.kernel, precision or self.precision, transpose_b=True) + self.decoder_bias

  def reconstruction_loss(self, hidden: tf.Tensor, target: tf.Tensor, precision: Optional[str] = None) -> tf.Tensor:
    """float32 [b]: cross-entropy between `target` [b, input_units] and the decoding of `hidden`
    [b, hidden_units] (sigmoid(hidden W^T + c)), summed over the input units, from the float32 logits."""
    return tf.reduce_sum(tf.nn.sigmoid_cross_entropy_with_logits(
        labels=target, logits=self.decoder_logits(hidden, precision)), axis=1)

  def sgd_step(self, inputs: tf.Tensor, target: tf.Tensor, learning_rate: tf.Tensor,
               also_encode: Optional[tf.Tensor] = None) -> Tuple[tf.Tensor, ...]:
    """One SGD step on a batch; returns (mean loss float32, encoding of `inputs` before the update) and, with
    `also_encode`, its encoding too.

    Every weight's update is one pass over it: TensorFlow's fused `ResourceApplyGradientDescent` (assign_sub(
    learning_rate * grad) makes two), except the kernel's under mixed_bfloat16, whose bfloat16 gradient is cast and
    applied in one pass compiled by XLA (`xla_sgd_update`; TensorFlow's kernels take two).

    Args:
      inputs: float32 [b, input_units], the corrupted input (after the layers below).
      target: float32 [b, input_units] in [0, 1], the clean input (after the same layers).
      learning_rate: float32 scalar.
      also_encode: None, or float32 [b', input_units] to encode with the weights as they were at the start of the
        step, from the step's own product operand (under mixed_bfloat16 the kernel is cast once per step, not once
        more for this; the layer-pipelined schedule passes its clean path up this way).

    Returns:
      (the batch's mean reconstruction loss, float32 [b, hidden_units] = sigmoid(inputs W + b) with the
      weights as they were at the start of the step: the forward pass of the step, reused by the
      layer-pipelined schedule as the corrupted path it passes up) and, with `also_encode`, float32
      [b', hidden_units] = sigmoid(also_encode W + b) with the same weights.
    """
    loss, hidden, (d_kernel, d_bias, d_decoder_bias), encoded = self._loss_and_product_gradients(
        inputs, target, tf.shape(inputs)[0], also_encode=also_encode)
    if self.precision == precision_lib.MIXED_BFLOAT16:
      xla_sgd_update(self.kernel, learning_rate, d_kernel)
    else:
      tf.raw_ops.ResourceApplyGradientDescent(var=self.kernel.handle, alpha=learning_rate, delta=d_kernel)
    for var, grad in ((self.bias, d_bias), (self.decoder_bias, d_decoder_bias)):
      tf.raw_ops.ResourceApplyGradientDescent(var=var.handle, alpha=learning_rate, delta=grad)
    return (loss, hidden) if encoded is None else (loss, hidden, encoded)

  def loss_and_gradients(self, inputs: tf.Tensor, target: tf.Tensor, divisor: tf.Tensor,
                         weights: Optional[Sequence[tf.Tensor]] = None,
                         also_encode: Optional[tf.Tensor] = None) -> Tuple[Any, ...]:
    """The reconstruction loss summed over the batch / `divisor`, and its gradients, written out.

    With h = sigmoid(x W + b), logits z = h W^T + c and the cross-entropy from the logits, d loss / d z =
    (sigmoid(z) - target) / divisor =: dz, d loss / d(x W + b) = (dz W) h (1 - h) =: da, and the tied kernel
    collects both uses: d W = x^T da + dz^T h. That sum is computed as one matrix product,
    [x; dz]^T [da; h] (the two stacked along the batch), instead of two products and their sum (what
    `tf.GradientTape` builds): one pass over the [input_units, hidden_units] result instead of three, which is
    most of a step's per-step cost at small batches (docs/design.md, "Why the gradient is written out"). The same
    mathematics; float rounding differs from the tape's. Under mixed_bfloat16 the four products take bfloat16
    operands (the kernel cast once) and return float32; the sigmoids, the loss and the sums stay float32.

    Args:
      inputs: float32 [b, input_units], the corrupted input (after the layers below).
      target: float32 [b, input_units] in [0, 1], the clean input (after the same layers).
      divisor: int32 scalar: b for a whole batch, the global batch for one replica's share of it.
      weights: None to use the variables, or their values (kernel, bias, decoder_bias) read once: each
        variable is then read exactly once per step, as asynchronous SGD needs when they live on a parameter
        server that other workers update meanwhile (`async_data_parallel`).
      also_encode: None, or float32 [b', input_units] to encode with the same weights and product operand.

    Returns:
      (loss float32 scalar, hidden float32 [b, hidden_units] = h, [d kernel, d bias, d decoder_bias] float32 with
      the weights' shapes) and, with `also_encode`, its encoding float32 [b', hidden_units].
    """
    loss, hidden, (d_kernel, d_bias, d_decoder_bias), encoded = self._loss_and_product_gradients(
        inputs, target, divisor, weights=weights, also_encode=also_encode)
    grads = [tf.cast(d_kernel, tf.float32), d_bias, d_decoder_bias]
    return (loss, hidden, grads) if encoded is None else (loss, hidden, grads, encoded)

  def _loss_and_product_gradients(self, inputs, target, divisor, weights=None, also_encode=None):
    """`loss_and_gradients` with the kernel's gradient as its product returned it (bfloat16 under mixed_bfloat16),
    the encoding of `also_encode` or None last."""
    p, cast = self.precision, precision_lib.operand
    kernel, bias, decoder_bias = self.weights if weights is None else weights
    bias, decoder_bias = tf.convert_to_tensor(bias), tf.convert_to_tensor(decoder_bias)  # XLA reads tensors here
    # Each tensor that two products read is cast to their operand once (x, h, dz: the stacked operands of d W are
    # made of the cast ones), the same values as casting the stacks. The products run on the kernel path's kernels;
    # the element-wise work between them in three fused kernels (`activation`, `decoder_error`, `encoder_error`).
    w, x = cast(kernel, p), cast(inputs, p)
    hidden, h = activation(tf.matmul(x, w), bias)
    scale = 1.0 / tf.cast(divisor, tf.float32)
    loss, dz, x_dz, d_decoder_bias = decoder_error(tf.matmul(h, w, transpose_b=True), decoder_bias, target, scale, x)
    da_h, d_bias = encoder_error(tf.matmul(dz, w), hidden, h)
    grads = [tf.matmul(x_dz, da_h, transpose_a=True), d_bias, d_decoder_bias]
    encoded = None if also_encode is None else activation(tf.matmul(cast(also_encode, p), w), bias)[0]
    return loss, hidden, grads, encoded

  def numpy_weights(self) -> Dict[str, np.ndarray]:
    """{"layerN/kernel": [in, hidden], "layerN/bias": [hidden], "layerN/decoder_bias": [in]}, float32."""
    p = f"layer{self.index}"
    return {f"{p}/kernel": self.kernel.numpy(), f"{p}/bias": self.bias.numpy(),
            f"{p}/decoder_bias": self.decoder_bias.numpy()}


class FrozenEncoder(tf.Module):
  """A non-trainable copy of a layer's encoder (kernel, bias), kept on the device that reads it.

  Model-parallel and synchronized layer-wise pretraining refresh it from the live layer at the end of
  every epoch-step (`assign_from`); greedy uses the trained layers themselves instead.
  """

  def __init__(self, layer: DenoisingAutoencoder):
    super().__init__(name=f"frozen_layer{layer.index}")
    self.index = layer.index
    self.precision = layer.precision
    with self.name_scope:
      self.kernel = tf.Variable(layer.kernel, trainable=False, name="kernel")
      self.bias = tf.Variable(layer.bias, trainable=False, name="bias")

  def assign_from(self, layer: DenoisingAutoencoder) -> None:
    """Copies the layer's current kernel and bias into this copy (a cross-device copy if placed apart)."""
    self.kernel.assign(layer.kernel)
    self.bias.assign(layer.bias)

  def encode(self, x: tf.Tensor, kernel: Optional[tf.Tensor] = None) -> tf.Tensor:
    """float32 [b, input_units] -> float32 [b, hidden_units] in (0, 1), the product at the layer's precision;
    `kernel`: the kernel already as the product operand (`kernel_operand`), else the variable's."""
    p, w = self.precision, self.kernel if kernel is None else kernel
    return encode_with(x, w, self.bias, p)

  def kernel_operand(self) -> tf.Tensor:
    """The kernel as the product's operand (`DenoisingAutoencoder.kernel_operand`)."""
    return precision_lib.operand(self.kernel, self.precision)


def build_stack(hidden_units: Sequence[int], seed: int, input_units: int, devices: Optional[Sequence[str]] = None,
                precision: str = precision_lib.FLOAT32) -> List[DenoisingAutoencoder]:
  """Creates the layers of the stack on `input_units` inputs (D, the data's), layer n on devices[n-1] (all on the
  default device if None), their products at `precision`."""
  layers, n_in = [], input_units
  for i, units in enumerate(hidden_units):
    with tf.device(devices[i] if devices else None):
      layers.append(DenoisingAutoencoder(n_in, units, i + 1, seed, precision))
    n_in = units
  return layers


class LayerTrainer(tf.Module):
  """Trains one layer on top of frozen encoders, on one device, with SGD.

  Args:
    layer: the layer being trained.
    frozen: the encoders of layers 1..n-1, bottom first, on the same device (layers or FrozenEncoders).
    images: float32 [N, D] in [0, 1], the training images, already on `device`.
    seed: the run's seed (shuffling order and corruption masks).
    corruption: masking-noise fraction in [0, 1).
    batch_size: examples per step B; an epoch is N // B steps (the remainder is dropped, differently
      each epoch since the order changes).
    device: device name the trainer's ops run on, or None for the default.
    kernels: the kernel path of `train_step` and `loss_and_gradients`, one of `KERNEL_PATHS`.
    warmup_steps: W, the layer warm-up's steps (`common.model.layer_warmup`; 0: none): `run_steps` scales the rate of
      the layer's own step tau = (epoch - first_epoch) x steps_per_epoch + step by min(1, (tau + 1) / W).
    first_epoch: the epoch index of the layer's first epoch (model_parallel's layer j of a group starts at step j).
  """

  def __init__(self, layer: DenoisingAutoencoder, frozen: Sequence, images: tf.Tensor, seed: int,
               corruption: float, batch_size: int, device: Optional[str] = None, kernels: str = "tf",
               warmup_steps: int = 0, first_epoch: int = 0):
    super().__init__(name=f"trainer{layer.index}")
    self.layer = layer
    self.frozen = list(frozen)
    self.batches = data.Batches(images, seed, corruption, batch_size)
    self.seed, self.batch_size, self.device, self.kernels = seed, batch_size, device, kernels
    self.warmup_steps, self.first_epoch = warmup_steps, first_epoch
    self.num_examples, self.steps_per_epoch = self.batches.num_examples, self.batches.steps_per_epoch
    self.train_step = compile_step(self._train_step, kernels)
    self.loss_and_gradients = compile_step(self._loss_and_gradients, kernels)

  def corrupted_batch(self, example_indices: tf.Tensor, epoch: tf.Tensor) -> Tuple[tf.Tensor, tf.Tensor]:
    """(corrupted, clean): float32 [b, D] images of int32 [b] `example_indices`, masked as in `epoch`."""
    return self.batches.corrupted(example_indices, epoch)

  def through_frozen(self, corrupted: tf.Tensor, clean: tf.Tensor,
                     kernels: Optional[Sequence[tf.Tensor]] = None) -> Tuple[tf.Tensor, tf.Tensor]:
    """Both batches through the frozen layers below: the layer's (input, target), float32 [b, input_units];
    `kernels`: the frozen layers' product operands (`kernel_operand`) made once for many steps, else each
    layer's own."""
    if not self.frozen:
      return corrupted, clean
    b = tf.shape(clean)[0]
    both = tf.concat([corrupted, clean], axis=0)
    for encoder, kernel in zip(self.frozen, kernels or [None] * len(self.frozen)):
      both = encoder.encode(both, kernel=kernel)
    return both[:b], both[b:]

  def _loss_and_gradients(self, example_indices: tf.Tensor, epoch: tf.Tensor, global_batch_size: tf.Tensor,
                          frozen_kernels: Optional[Sequence[tf.Tensor]] = None) -> Tuple[tf.Tensor, List[tf.Tensor]]:
    """Loss and gradients of a (replica's share of a) batch, without updating the weights
    (`loss_and_gradients` is this function compiled on the trainer's kernel path).

    Args:
      example_indices: int32 [b], the examples of this batch (or of this replica's slice of it).
      epoch: int32 scalar, keys the corruption masks.
      global_batch_size: int32 scalar, the divisor of the summed per-example losses (b for one
        device; the global batch when b is one replica's share, as in `tf.nn.compute_average_loss`).
      frozen_kernels: the frozen layers' product operands made once for many steps (`kernel_operand`), or None.

    Returns:
      (loss float32 scalar, [d kernel, d bias, d decoder_bias] with the layer's weight shapes).
    """
    corrupted, clean = self.through_frozen(*self.corrupted_batch(example_indices, epoch), frozen_kernels)
    loss, _, grads = self.layer.loss_and_gradients(corrupted, clean, global_batch_size)
    return loss, grads

  def _train_step(self, example_indices: tf.Tensor, epoch: tf.Tensor, learning_rate: tf.Tensor,
                  frozen_kernels: Optional[Sequence[tf.Tensor]] = None) -> tf.Tensor:
    """One SGD step on the batch `example_indices` (int32 [B]); returns the batch's mean loss (float32).
    `frozen_kernels`: the frozen layers' product operands made once for many steps (`kernel_operand`), or None.
    (`train_step` is this function compiled on the trainer's kernel path.)"""
    corrupted, clean = self.corrupted_batch(example_indices, epoch)
    loss, _ = self.layer.sgd_step(*self.through_frozen(corrupted, clean, frozen_kernels), learning_rate)
    return loss

  def run_steps(self, epoch: tf.Tensor, first_step: tf.Tensor, num_steps: tf.Tensor,
                learning_rate: tf.Tensor) -> Tuple[tf.Tensor, tf.Tensor, tf.Tensor]:
    """Runs steps first_step .. first_step + num_steps - 1 of an epoch (graph code: call it in a tf.function).

    Args:
      epoch: int32 scalar, selects the epoch's order and masks (the step index s for model parallel).
      first_step, num_steps: int32 scalars, a range of steps within 0..steps_per_epoch-1.
      learning_rate: float32 scalar, the layer's full rate (scaled by the layer warm-up on its first `warmup_steps`
        steps); 0 leaves the weights unchanged (used in the compile phase).

    Returns:
      (sum of the steps' mean batch losses float32, start and end float64 wall-clock seconds
      (`tf.timestamp`) of the loop on this trainer's device; both -1 when op determinism is enabled,
      which forbids `tf.timestamp`).
    """
    with tf.device(self.device):
      start = timestamp()
      with tf.control_dependencies([start]):
        first_step = tf.identity(first_step)
      stop = first_step + num_steps
      offsets = tf.range(self.batch_size)

      # The frozen layers do not change in the loop: their product operands (under mixed_bfloat16 the kernels'
      # bfloat16 casts) are made once, not once per step.
      frozen_kernels = [encoder.kernel_operand() for encoder in self.frozen]

      def body(step, total):
        indices = self.batches.indices(step * self.batch_size + offsets, epoch)
        tau = (epoch - self.first_epoch) * self.steps_per_epoch + step  # the layer's own step
        rate = layer_warmup.scaled_rate(learning_rate, tau, self.warmup_steps)
        return step + 1, total + self.train_step(indices, epoch, rate, frozen_kernels)

      _, total = tf.while_loop(lambda step, _: step < stop, body, (first_step, tf.constant(0.0)))
      with tf.control_dependencies([total]):
        end = timestamp()
    return total, start, end


def timestamp() -> tf.Tensor:
  """float64 wall-clock seconds when the op runs, or -1 when op determinism forbids reading the clock."""
  if config.is_op_determinism_enabled():
    return tf.constant(-1.0, tf.float64)
  return tf.timestamp()
