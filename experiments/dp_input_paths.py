"""Data parallel: the program's input path and all-reduce against the alternatives, side by side in one run.

One process, 2 logical CPU devices with 1 intra-op thread each, one 784 -> 2000 layer, the same global
batch; every variant runs the same data-parallel SGD steps (`data_parallel.replicas`), rounds
interleaved so machine drifts hit all alike. Variants:
  program            distributed tf.data pipeline of example indices (`common.sgd.distributed_indices`,
                     prefetched to the replicas' devices), images held once per replica device
                     (mirrored variable), gather + corruption inside each replica's XLA step, all-reduce
                     `ReductionToOneDevice` (the data_parallel program)
  indices_on_host    the same with the indices left on the host (`experimental_fetch_to_device=False`)
  replica_positions  no tf.data: each replica computes its positions and indices itself
  host_images        a tf.data pipeline that gathers the global batch's images on the host and is split
                     over the replicas by `experimental_distribute_dataset`; the replicas corrupt them
  shared_images      the program's path, but one host tensor of images read by every replica
  ring_allreduce     the program's path with TensorFlow's default collective (ring) all-reduce
plus `program` on 1 replica for reference.

Usage (timings are reported: exclusive CPU lock):
  flock -x /work/cpu.lock .venv/bin/python -m experiments.dp_input_paths --batch_size=100
Writes <output_dir>/input_paths_b<batch>.json.
"""

import json
import os
import sys
import time

from absl import app
from absl import flags
from absl import logging
import tensorflow as tf

from common import autoencoder
from common import data
from common import devices
from common import sgd
from data_parallel import profile
from data_parallel import replicas
from experiments import dp_common
from experiments.dp_common import spread

_BATCH = flags.DEFINE_integer("batch_size", 100, "Global batch size.")
_UNITS = flags.DEFINE_integer("units", 2000, "Hidden units of the layer.")
_EXAMPLES = flags.DEFINE_integer("train_examples", 55_000, "Training images.")
_STEPS = flags.DEFINE_integer("steps", 0, "Steps timed per round (0: one epoch).")
_ROUNDS = flags.DEFINE_integer("rounds", 3, "Timed rounds per variant (interleaved).")
_OUTPUT = flags.DEFINE_string("output_dir", "results/benchmarks/data_parallel", "Where the summary goes.")

VARIANTS = ("program", "indices_on_host", "replica_positions", "host_images", "shared_images", "ring_allreduce",
            "program_1_replica")


class ReplicaPositions(replicas.DataParallelTrainer):
  """Every replica computes its own positions and indices (`common.sgd.replica_positions`): no tf.data."""

  def inputs(self, first_epoch, num_epochs):
    return None

  def _steps(self, iterator, epoch, first_step, num_steps, learning_rate):
    t = self.trainer

    def replica_step(step):
      indices = data.epoch_indices(sgd.replica_positions(step, t.batch_size), t.seed, epoch, t.num_examples)
      loss, grads = t.loss_and_gradients(indices, epoch, t.batch_size)
      sgd.apply_sgd(t.layer.weights, grads, learning_rate)
      return loss

    return sgd.distributed_steps(self.strategy, replica_step, first_step, num_steps)


class HostImages(replicas.DataParallelTrainer):
  """tf.data gathers each global batch's images on the host; the strategy splits the batch over replicas."""

  def __init__(self, strategy, trainer, host_images):
    super().__init__(strategy, trainer)
    self.host_images = host_images
    self.phases = profile.Phases(trainer)

    @tf.function(jit_compile=True)
    def loss_and_gradients(clean, indices, epoch):
      corrupted = data.corrupt(clean, indices, trainer.seed, epoch, trainer.corruption)
      with tf.GradientTape() as tape:
        loss = self.phases.loss(corrupted, clean)
      return loss, tape.gradient(loss, trainer.layer.weights)
    self.loss_and_gradients = loss_and_gradients

  def inputs(self, first_epoch, num_epochs):
    t = self.trainer
    steps, b = t.steps_per_epoch, t.batch_size

    def batch(positions):
      positions = tf.cast(positions, tf.int32)
      epoch = positions[0] // (steps * b)
      indices = data.epoch_indices(positions - epoch * steps * b, t.seed, epoch, t.num_examples)
      return {"images": tf.gather(self.host_images, indices), "indices": indices}

    dataset = (tf.data.Dataset.range(first_epoch * steps * b, (first_epoch + num_epochs) * steps * b)
               .batch(b, drop_remainder=True).map(batch).prefetch(2))
    return iter(self.strategy.experimental_distribute_dataset(dataset))

  def _steps(self, iterator, epoch, first_step, num_steps, learning_rate):
    def replica_step(step, element):
      loss, grads = self.loss_and_gradients(element["images"], element["indices"], epoch)
      sgd.apply_sgd(self.trainer.layer.weights, grads, learning_rate)
      return loss

    return sgd.distributed_steps(self.strategy, replica_step, first_step, num_steps, iterator)


def _build(variant: str, names, mnist, batch: int) -> replicas.DataParallelTrainer:
  g = 1 if variant == "program_1_replica" else 2
  strategy = (tf.distribute.MirroredStrategy(list(names[:g])) if variant == "ring_allreduce"
              else replicas.make_strategy(names[:g]))
  with tf.device(names[0]):
    host = tf.constant(mnist.train_images)
  images = host if variant in ("shared_images", "host_images") else sgd.replica_resident(strategy, mnist.train_images)
  with strategy.scope():
    layer = autoencoder.build_stack([_UNITS.value], seed=0)[0]
  trainer = autoencoder.LayerTrainer(layer, [], images, 0, 0.5, batch)
  if variant == "replica_positions":
    return ReplicaPositions(strategy, trainer)
  if variant == "host_images":
    return HostImages(strategy, trainer, host)
  return replicas.DataParallelTrainer(strategy, trainer, fetch_to_device=variant != "indices_on_host")


def main(argv):
  del argv
  logging.set_verbosity(logging.WARNING)
  setup = devices.setup(2, 1)
  mnist = data.load_mnist(None, _EXAMPLES.value)
  batch = _BATCH.value
  trainers = {v: _build(v, setup.names, mnist, batch) for v in VARIANTS}
  per_epoch = _EXAMPLES.value // batch
  steps = min(_STEPS.value or per_epoch, per_epoch)
  for dp in trainers.values():
    dp.warm_up()
  load = dp_common.MachineLoad()
  samples = {v: [] for v in VARIANTS}
  for r in range(_ROUNDS.value):
    for k in range(len(VARIANTS)):
      v = VARIANTS[(k + r) % len(VARIANTS)]
      fn = trainers[v].epoch_function(r, 1)  # Round r times the first `steps` steps of epoch r.
      start = time.perf_counter()
      fn(tf.constant(r), tf.constant(0), tf.constant(steps), tf.constant(1e-4))[0].numpy()
      samples[v].append((time.perf_counter() - start) * per_epoch / steps)
  machine = load.report()
  base = spread(samples["program"])["median"]
  summary = {
      "command": "python -m experiments.dp_input_paths " + " ".join(sys.argv[1:]),
      "setting": {"units": _UNITS.value, "batch_size": batch, "train_examples": _EXAMPLES.value,
                  "steps_timed_per_round": steps, "steps_per_epoch": per_epoch, "rounds": _ROUNDS.value,
                  "replicas": 2, "threads_per_device": 1, "device_kind": setup.kind, "cpu_count": os.cpu_count()},
      "machine_load": machine,
      "seconds_per_epoch": {v: spread(s) for v, s in samples.items()},
      "relative_to_program": {v: spread(s)["median"] / base for v, s in samples.items()},
  }
  os.makedirs(_OUTPUT.value, exist_ok=True)
  path = os.path.join(_OUTPUT.value, f"input_paths_b{batch}.json")
  with open(path, "w") as f:
    json.dump(summary, f, indent=1)
  for v in VARIANTS:
    s = summary["seconds_per_epoch"][v]
    print(f"{v:18s} {s['median']:8.3f} s/epoch (min {s['min']:.3f}, max {s['max']:.3f}) "
          f"x{summary['relative_to_program'][v]:.3f}")
  print(f"Other processes used {machine['other_processes_cores']:.2f} cores on average during the timing.")
  print(f"Summary: {path}")


if __name__ == "__main__":
  app.run(main)
