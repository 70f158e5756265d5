"""Finetuning with the classifier's layers pipelined over the devices (`--finetune_placement=pipelined`).

The hidden layers and the output layer form contiguous stages of least maximal cost (`common.cost.partition` of
their FLOPs), one per device. Each step's global batch is cut into M micro-batches; each micro-batch runs forward
through the stages and back, its gradient written out (the same mathematics as `tf.GradientTape` on the one-device
classifier: sigmoid hidden layers, softmax cross-entropy summed over the batch and divided by B), every op on its
layer's device; the micro-batches' gradients are summed and applied once per step. Nothing waits for a whole batch,
so while stage 2 computes micro-batch m, stage 1 computes micro-batch m + 1 (TensorFlow's executor runs every op whose
inputs are ready, one device each). The weights are those of one-device finetuning up to float rounding (tested,
1e-5). GPipe: Huang et al. 2019, "GPipe: Efficient Training of Giant Neural Networks using Pipeline Parallelism",
section 2.2 (micro-batches, gradients accumulated and applied once per mini-batch).
"""

from typing import Callable, List, Optional, Sequence

import tensorflow as tf

from common import cost
from common import data
from common import optimizers
from common import precision as precision_lib

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
  """Plain SGD of a `common.finetune.Classifier` whose layers live on several devices (module docstring).

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

  def _gradients(self, x: tf.Tensor, y: tf.Tensor):
    """(summed loss / B, [d kernel_1 .. d kernel_L], [d bias_1 ..], d output kernel, d output bias) of a micro-batch
    x float32 [b, D], y int32 [b], written out layer by layer on the layers' devices."""
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
      d_out = precision_lib.matmul(hs[-1], dz, p, transpose_a=True), tf.reduce_sum(dz, 0)
      dh = precision_lib.matmul(dz, c.output_kernel, p, transpose_b=True)
    d_kernels, d_biases = [None] * len(c.kernels), [None] * len(c.kernels)
    for k in reversed(range(len(c.kernels))):
      with tf.device(dev[k]):
        da = dh * hs[k + 1] * (1.0 - hs[k + 1])
        d_kernels[k] = precision_lib.matmul(hs[k], da, p, transpose_a=True)
        d_biases[k] = tf.reduce_sum(da, 0)
        if k:
          dh = precision_lib.matmul(da, c.kernels[k], p, transpose_b=True)
    return loss, d_kernels, d_biases, d_out

  def _step(self, indices: tf.Tensor, learning_rate: tf.Tensor) -> tf.Tensor:
    """One SGD step on int32 [B] example indices: M micro-batches, their gradients summed, applied once."""
    with tf.device(self.devices[0]):
      images = tf.gather(self.images, indices)
    with tf.device(self.devices[-1]):
      labels = tf.gather(self.labels, indices)
    b, total, summed = self.batch_size // self.micro, tf.constant(0.0), None
    for m in range(self.micro):
      loss, dk, db, (dv, dd) = self._gradients(images[m * b:(m + 1) * b], labels[m * b:(m + 1) * b])
      grads = dk + db + [dv, dd]
      total += loss
      summed = grads if summed is None else [a + g for a, g in zip(summed, grads)]
    for var, grad in zip(self.classifier.weights, summed):  # kernels, biases, output kernel, output bias
      with tf.device(var.device):
        var.assign_sub(learning_rate * grad)
    return total

  def run_steps(self, epoch, first_step, num_steps, learning_rate, strategy=None,
                lr_multiplier: Optional[Callable[[tf.Tensor], tf.Tensor]] = None) -> tf.Tensor:
    """Runs a range of an epoch's steps (graph code); returns the sum of the batch mean losses (the interface of
    `common.finetune.Finetuner.run_steps`; `strategy` must be None)."""
    offsets = tf.range(self.batch_size)

    def body(step, total):
      indices = data.epoch_indices(step * self.batch_size + offsets, self.seed, epoch, self.num_examples,
                                   data.FINETUNE_STREAM)
      rate = optimizers.learning_rate_at(learning_rate, lr_multiplier, epoch * self.steps_per_epoch + step)
      return step + 1, total + self._step(indices, rate)

    stop = first_step + num_steps
    return tf.while_loop(lambda s, _: s < stop, body, (first_step, tf.constant(0.0)))[1]
