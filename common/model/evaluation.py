"""Held-out reconstruction: the yardstick every pretraining schedule is compared on.

The loss a layer reports while it trains is measured on its own moving input (in the pipelined and
model-parallel schedules the layers below change while it trains), so it cannot compare schedules. This
evaluates every layer the same way: the 10,000 test images, corrupted with masks of a fixed seed that does
not depend on the run, are passed through the current stack below layer n (corrupted path) next to the
clean images (target path), and layer n's mean reconstruction loss (cross-entropy summed over its input
units, mean over the images) is reported. This is the quantity whose time-to-target Santara et al. 2016
("Faster learning of deep stacked autoencoders on multi-core systems using synchronized layer-wise
pre-training", section 4) compare between schedules.
"""

from typing import List, Optional, Sequence

import numpy as np
import tensorflow as tf

from common.data import loader as data
from common.model import graph
from common.model import precision

# Seed of the test corruption masks: fixed, so that runs with any --seed are evaluated on the same masks.
HELDOUT_MASK_SEED = 20160707
# Test images per evaluation batch (bounds the memory of the largest activation, [batch, units]).
EVAL_BATCH = 2000


class HeldoutEvaluator:
  """Computes each layer's mean reconstruction loss on held-out images.

  Args:
    images: float32 [n, 784] in [0, 1], the held-out (test) images.
    corruption: the masking-noise fraction of the run, in [0, 1).
    device: where the evaluation runs (it reads every layer's weights, wherever they live).
  """

  def __init__(self, images: np.ndarray, corruption: float, device: Optional[str] = None):
    self.device = device
    self.num_examples = int(images.shape[0])
    with tf.device(device):
      self._images = tf.constant(images)
    self._corruption = corruption
    self._functions = {}

  def _function(self, layers: Sequence):
    key = tuple(id(layer) for layer in layers)
    if key not in self._functions:
      def losses_of_batch(start):
        with tf.device(self.device):
          size = tf.minimum(EVAL_BATCH, self.num_examples - start)
          indices = start + tf.range(size)
          clean = tf.gather(self._images, indices)
          corrupted = data.corrupt(clean, indices, HELDOUT_MASK_SEED, tf.constant(0), self._corruption)
          sums = []
          for layer in layers:  # In float32 whatever the run's precision: the weights are measured, not the run.
            hidden = layer.encode(corrupted, precision.FLOAT32)
            sums.append(tf.reduce_sum(layer.reconstruction_loss(hidden, clean, precision.FLOAT32)))
            corrupted, clean = hidden, layer.encode(clean, precision.FLOAT32)
          return tf.stack(sums)
      self._functions[key] = graph.function(losses_of_batch)
    return self._functions[key]

  def losses(self, layers: Sequence) -> List[float]:
    """Mean held-out reconstruction loss of each of `layers` (bottom first, `DenoisingAutoencoder`s),
    each through the current weights of the layers below it; a list of floats (nats summed over the
    layer's input units), one per layer."""
    if not layers:
      return []
    fn = self._function(list(layers))
    total = np.zeros(len(layers), np.float64)
    for start in range(0, self.num_examples, EVAL_BATCH):
      total += fn(tf.constant(start)).numpy()
    return [float(t / self.num_examples) for t in total]
