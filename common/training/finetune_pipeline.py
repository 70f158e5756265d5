"""Finetuning with the classifier's layers pipelined over the devices (`--finetune_placement=pipelined`).

The hidden layers and the output layer form contiguous stages of least maximal cost (`common.measure.cost.partition` of
their FLOPs), one per device. Each step's global batch is cut into M micro-batches; each micro-batch runs forward
through the stages and back, its gradient written out (the same mathematics as `tf.GradientTape` on the one-device
classifier: sigmoid hidden layers, softmax cross-entropy summed over the batch and divided by B), every op on its
layer's device; each layer's weight gradient is then one product over the whole batch (the micro-batches' sum),
applied once per step. Nothing waits for a whole batch,
so while stage 2 computes micro-batch m, stage 1 computes micro-batch m + 1 (TensorFlow's executor runs every op whose
inputs are ready, one device each). The weights are those of one-device finetuning up to float rounding (tested,
1e-5). GPipe: Huang et al. 2019, "GPipe: Efficient Training of Giant Neural Networks using Pipeline Parallelism",
section 2.2 (micro-batches, gradients accumulated and applied once per mini-batch).
"""

from typing import Callable, List, Optional, Sequence

import tensorflow as tf

from common.data import loader as data
from common.measure import cost
from common.model import optimizers
from common.model import precision as precision_lib

# Micro-batches per step (at most; the largest count up to this that divides the batch): GPipe finds M >= 4 P keeps
# the fill and drain small (section 2.3); 4 for P = 2 devices at batch 100 leaves micro-batches of 25.
MICRO_BATCHES = 4


def layer_devices(hidden_units: Sequence[int], input_units: int, num_classes: int,
                  devices: Sequence[str]) -> List[str]:
  """The device of each classifier layer, hidden ones then the output layer: contiguous stages of least maximal
  FLOPs (`cost.partition`) over min(len(devices), layers) devices."""
  sizes = cost.sizes(hidden_units, input_units) + [num_classes]
  costs = [a * b for a, b in zip(sizes, sizes[1:])]
  stages = cost.partition(costs, min(len(devices), len(costs)))
  return [devices[p] for p, stage in enumerate(stages) for _ in stage]


def micro_batches(batch_size: int, limit: int = MICRO_BATCHES) -> int:
  """M: the largest count up to `limit` that divides the batch."""
  return max(m for m in range(1, limit + 1) if batch_size % m == 0)


class PipelinedFinetuner(tf.Module):
  """Plain SGD of a `common.training.finetune.Classifier` whose layers live on several devices (module docstring).

  Args:
    classifier: the model, each layer's variables on its device (`layer_devices`).
    devices: the device of each layer, hidden ones then the output layer.
    images: float32 [N, D] training images in [0, 1], on the first device; labels: int32 [N].
    seed: keys the shuffling order (the finetuning stream, as one device).
    batch_size: the global batch B; an epoch is N // B steps.
  """

  def __init__(self, classifier, devices: Sequence[str], images: tf.Tensor, labels: tf.Tensor, seed: int,
               batch_size: int):
    super().__init__(name="pipelined_finetuner")
    self.classifier, self.devices = classifier, list(devices)
    self.images, self.labels, self.seed, self.batch_size = images, labels, seed, batch_size
    self.num_examples = int(images.shape[0])
    self.steps_per_epoch = self.num_examples // batch_size
    self.micro = micro_batches(batch_size)

  def _backward(self, x: tf.Tensor, y: tf.Tensor):
    """Forward and backward of a micro-batch x float32 [b, D], y int32 [b], on the layers' devices: (summed loss / B,
    each layer's input [b, n_in], each layer's pre-activation gradient [b, n_out]; hidden layers then the output
    layer, whose gradient is the logits' dz [b, K]), written out (sigmoid hidden layers, softmax cross-entropy)."""
    c, p, dev = self.classifier, self.classifier.precision, self.devices
    hs = [x]
    for k, (kernel, bias) in enumerate(zip(c.kernels, c.biases)):
      with tf.device(dev[k]):
        hs.append(tf.sigmoid(precision_lib.matmul(hs[-1], kernel, p) + bias))
    scale = 1.0 / self.batch_size
    with tf.device(dev[-1]):
      logits = precision_lib.matmul(hs[-1], c.output_kernel, p) + c.output_bias
      loss = tf.reduce_sum(tf.nn.sparse_softmax_cross_entropy_with_logits(labels=y, logits=logits)) * scale
      dz = (tf.nn.softmax(logits) - tf.one_hot(y, tf.shape(logits)[1])) * scale
      dh = precision_lib.matmul(dz, c.output_kernel, p, transpose_b=True)
    deltas = [None] * len(c.kernels) + [dz]
    for k in reversed(range(len(c.kernels))):
      with tf.device(dev[k]):
        deltas[k] = dh * hs[k + 1] * (1.0 - hs[k + 1])
        if k:
          dh = precision_lib.matmul(deltas[k], c.kernels[k], p, transpose_b=True)
    return loss, hs, deltas

  def _step(self, indices: tf.Tensor, learning_rate: tf.Tensor) -> tf.Tensor:
    """One SGD step on int32 [B] example indices: M micro-batches forward and back through the stages, then each
    layer's weight gradient in one product over the whole batch (its micro-batches' inputs and gradients joined in
    order: the sum of their products, without M products of depth B / M each), applied once."""
    with tf.device(self.devices[0]):
      images = tf.gather(self.images, indices)
    with tf.device(self.devices[-1]):
      labels = tf.gather(self.labels, indices)
    b, total, parts = self.batch_size // self.micro, tf.constant(0.0), []
    for m in range(self.micro):
      loss, hs, deltas = self._backward(images[m * b:(m + 1) * b], labels[m * b:(m + 1) * b])
      total += loss
      parts.append((hs, deltas))
    kernel_grads, bias_grads = [], []
    for k, device in enumerate(self.devices):  # the hidden layers, then the output layer
      with tf.device(device):
        inputs = tf.concat([hs[k] for hs, _ in parts], 0)
        delta = tf.concat([deltas[k] for _, deltas in parts], 0)
        kernel_grads.append(precision_lib.matmul(inputs, delta, self.classifier.precision, transpose_a=True))
        bias_grads.append(tf.reduce_sum(delta, 0))
    # In `Classifier.weights` order: kernels, biases, output kernel, output bias.
    grads = kernel_grads[:-1] + bias_grads[:-1] + [kernel_grads[-1], bias_grads[-1]]
    for var, grad in zip(self.classifier.weights, grads):
      with tf.device(var.device):
        optimizers.SGD.apply(var, grad, learning_rate, ())
    return total

  def run_steps(self, epoch, first_step, num_steps, learning_rate, strategy=None,
                lr_multiplier: Optional[Callable[[tf.Tensor], tf.Tensor]] = None) -> tf.Tensor:
    """Runs a range of an epoch's steps (graph code); returns the sum of the batch mean losses (the interface of
    `common.training.finetune.Finetuner.run_steps`; `strategy` must be None)."""
    offsets = tf.range(self.batch_size)

    def body(step, total):
      indices = data.epoch_indices(step * self.batch_size + offsets, self.seed, epoch, self.num_examples,
                                   data.FINETUNE_STREAM)
      rate = optimizers.learning_rate_at(learning_rate, lr_multiplier, epoch * self.steps_per_epoch + step)
      return step + 1, total + self._step(indices, rate)

    stop = first_step + num_steps
    return tf.while_loop(lambda s, _: s < stop, body, (first_step, tf.constant(0.0)))[1]
