"""Chooses model_parallel's concurrency mechanism by measurement.

Two layers of a stack (784 -> U -> U), each trained by its `common.autoencoder.LayerTrainer` on its own
logical CPU device (1 intra-op thread each, 2 inter-op threads), one epoch of N images. Times, per epoch:
  alone_layer1, alone_layer2  each layer's epoch on its own (one tf.function each)
  graph                       one tf.function holding both layers' epoch loops (`run_steps`, with the
                              in-graph timestamps), each under its own tf.device
  graph_nested                the same, but each layer's `run_steps` is its own (nested) tf.function
  graph_no_timestamps         the same without the timestamp ops, to see whether they serialise the
                              devices through automatic control dependencies
  threads                     one Python thread per device, each calling its own layer's tf.function
The ideal is max(alone) for the concurrent variants. Writes a JSON summary.

Usage (exclusive CPU lock, timings are reported):
  flock -x /work/cpu.lock .venv/bin/python -m experiments.mp_concurrency --batch_size=1000
"""

import json
import os
import statistics
import threading
import time

from absl import app
from absl import flags

_UNITS = flags.DEFINE_integer("hidden_units", 1000, "Hidden units of each of the two layers.")
_BATCH = flags.DEFINE_integer("batch_size", 1000, "Batch size.")
_EXAMPLES = flags.DEFINE_integer("train_examples", 11_000, "Training images per epoch.")
_REPEATS = flags.DEFINE_integer("repeats", 5, "Timed epochs per variant (interleaved).")
_OUT = flags.DEFINE_string("output", "results/benchmarks/model_parallel/concurrency_b{batch}.json",
                           "Where the JSON summary goes ({batch} is replaced).")


def main(argv):
  del argv
  from common import devices
  setup = devices.setup(2, threads_per_device=1)
  import tensorflow as tf
  from common import autoencoder
  from common import data

  mnist = data.load_mnist(train_examples=_EXAMPLES.value)
  names = setup.names
  layers = autoencoder.build_stack([_UNITS.value] * 2, seed=0, devices=names)
  trainers = []
  for i, layer in enumerate(layers):
    with tf.device(names[i]):
      images = tf.constant(mnist.train_images)
      frozen = [autoencoder.FrozenEncoder(l) for l in layers[:i]]
    trainers.append(autoencoder.LayerTrainer(layer, frozen, images, 0, 0.5, _BATCH.value, names[i]))
  steps = trainers[0].steps_per_epoch

  def loop_without_timestamps(trainer, epoch, num_steps, lr):
    with tf.device(trainer.device):
      offsets = tf.range(trainer.batch_size)

      def body(step, total):
        indices = data.epoch_indices(step * trainer.batch_size + offsets, trainer.seed, epoch, trainer.num_examples)
        return step + 1, total + trainer.train_step(indices, epoch, lr)

      return tf.while_loop(lambda s, _: s < num_steps, body, (tf.constant(0), tf.constant(0.0)))[1]

  alone = [tf.function(lambda e, n, lr, t=t: t.run_steps(e, tf.constant(0), n, lr)) for t in trainers]
  graph = tf.function(lambda e, n, lr: [t.run_steps(e, tf.constant(0), n, lr) for t in trainers])
  nested = [tf.function(t.run_steps) for t in trainers]
  graph_nested = tf.function(lambda e, n, lr: [f(e, tf.constant(0), n, lr) for f in nested])
  graph_no_ts = tf.function(lambda e, n, lr: [loop_without_timestamps(t, e, n, lr) for t in trainers])

  def threads(e, n, lr):
    out = [None, None]

    def work(i):
      out[i] = alone[i](e, n, lr)[0].numpy()
    ts = [threading.Thread(target=work, args=(i,)) for i in range(2)]
    for t in ts:
      t.start()
    for t in ts:
      t.join()
    return out

  def fetch(x):
    return tf.nest.map_structure(lambda t: t.numpy() if hasattr(t, "numpy") else t, x)

  variants = {
      "alone_layer1": lambda e, n, lr: fetch(alone[0](e, n, lr)),
      "alone_layer2": lambda e, n, lr: fetch(alone[1](e, n, lr)),
      "graph": lambda e, n, lr: fetch(graph(e, n, lr)),
      "graph_nested": lambda e, n, lr: fetch(graph_nested(e, n, lr)),
      "graph_no_timestamps": lambda e, n, lr: fetch(graph_no_ts(e, n, lr)),
      "threads": threads,
  }
  lr = tf.constant(1e-4)
  for fn in variants.values():  # Warm-up: tracing and XLA compilation.
    fn(tf.constant(0), tf.constant(1), tf.constant(0.0))
  samples = {k: [] for k in variants}
  overlap = {"graph": [], "graph_nested": []}
  busy = {"graph": [], "graph_nested": []}  # Each layer's own epoch time inside the joint function.
  for r in range(_REPEATS.value):
    for name, fn in variants.items():
      start = time.perf_counter()
      out = fn(tf.constant(r), tf.constant(steps), lr)
      samples[name].append(time.perf_counter() - start)
      if name in ("graph", "graph_nested"):
        (_, s1, e1), (_, s2, e2) = out
        overlap[name].append(max(0.0, min(e1, e2) - max(s1, s2)))
        busy[name].append([e1 - s1, e2 - s2])
  med = {k: statistics.median(v) for k, v in samples.items()}
  ideal = max(med["alone_layer1"], med["alone_layer2"])
  summary = {
      "hidden_units": _UNITS.value, "batch_size": _BATCH.value, "train_examples": _EXAMPLES.value,
      "steps_per_epoch": steps, "repeats": _REPEATS.value, "devices": list(names),
      "intra_op_threads": setup.intra_op_threads, "inter_op_threads": setup.inter_op_threads,
      "seconds_per_epoch": {k: {"median": med[k], "min": min(v), "max": max(v)} for k, v in samples.items()},
      "ideal_concurrent_seconds": ideal,
      "fraction_of_ideal": {k: ideal / med[k] for k in ("graph", "graph_nested", "graph_no_timestamps", "threads")},
      "layers_overlap_seconds_median": {k: statistics.median(v) for k, v in overlap.items()},
      "layer_busy_seconds_median": {k: [statistics.median(b[j] for b in v) for j in range(2)] for k, v in busy.items()},
  }
  path = _OUT.value.format(batch=_BATCH.value)
  os.makedirs(os.path.dirname(path), exist_ok=True)
  with open(path, "w") as f:
    json.dump(summary, f, indent=1)
  print(json.dumps(summary, indent=1))


if __name__ == "__main__":
  app.run(main)
