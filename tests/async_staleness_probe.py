"""Test helper: one asynchronous SGD step whose staleness is made, not waited for.

An in-process cluster of one worker and one parameter server; worker 0 is slowed by the benchmark-only delay, and
once this process (the coordinator) sees the step's function start (the `starts` counter, which it increments just
before reading the version), it waits half the step's sleep (so the step has read the version even on a loaded
machine) and, while the step sleeps between its gradient and its apply, adds STALE to the version counter, as STALE
updates of other workers would. The step must measure staleness STALE, and apply lr g (plain) or
lr g / (STALE + 1) (staleness-aware), g the gradient at the weights it read. On a loaded machine the coordinator may
see the start so late that its addition lands after the step's apply (the value the addition returns says so): that
attempt made no staleness, and the step is made again, up to ATTEMPTS times. Prints one JSON line per setting:
{"staleness_aware", "staleness", "error_vs_expected", "error_vs_other_rule", "attempts"} (max abs weight
differences).

Usage: python tests/async_staleness_probe.py
"""

import json
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

from async_data_parallel import worker_steps  # noqa: E402
from common.distribute import parameter_server  # noqa: E402
from common.model import autoencoder  # noqa: E402
from common.settings import programs  # noqa: E402

STALE = 5
DELAY_SECONDS = 8.0  # the step sleeps this long after its gradient: the coordinator acts within it, after half of it
ATTEMPTS = 3  # steps made until the coordinator's addition lands before the step's apply
DEADLINE_SECONDS = 600  # the one deadline of the wait for the function's start
LEARNING_RATE = 0.5
SEED, CORRUPTION, BATCH = 3, 0.5, 10


def _made_stale_step(strategy, coordinator, counters, images, local, reference, aware):
  """One attempt: a new layer, its function traced (learning rate 0), then one step whose staleness the coordinator
  makes. Returns (layer, its weights before the step, the reference gradients, the staleness the step measured,
  whether the coordinator's addition landed before the step's apply)."""
  with strategy.scope():
    layer = autoencoder.build_stack((16,), SEED, 784)[0]
  steps = worker_steps.LayerSteps(layer, [], images, counters, SEED, CORRUPTION, BATCH, "tf", aware, DELAY_SECONDS)
  origin = tf.constant(0, tf.int64)  # no layer warm-up: the rate is the given one whatever the origin
  coordinator.schedule(steps.function, args=(tf.constant(0), tf.constant(0), tf.constant(1), tf.constant(0.0), origin))
  coordinator.join()  # traced, copies made; learning rate 0
  before = [v.numpy() for v in layer.weights]
  for var, value in zip(local.weights, before):
    var.assign(value)
  step = tf.constant(1)
  indices = reference.batches.indices(step * BATCH + tf.range(BATCH), tf.constant(0))
  _, grads = reference.loss_and_gradients(indices, tf.constant(0), BATCH)
  version, started = counters.read()
  result = coordinator.schedule(steps.function, args=(tf.constant(0), step, tf.constant(1),
                                                      tf.constant(LEARNING_RATE), origin))
  deadline = time.monotonic() + DEADLINE_SECONDS
  while counters.read()[1] == started:  # until the function has started (and read the version right after)
    if time.monotonic() > deadline:
      raise SystemExit("the step's function never started")
  time.sleep(DELAY_SECONDS / 2)  # past the version's read, which follows the start at once; before the apply
  added = int(counters.version.assign_add(STALE, read_value=True).numpy())
  coordinator.join()
  _, staleness, _ = result.fetch()
  return layer, before, grads, staleness, added - STALE == version  # the step's apply had not yet counted


def main():
  strategy, _ = parameter_server.strategy(programs.ASYNC_DATA_PARALLEL.name, 1, 1, "per_device")
  coordinator = tf.distribute.coordinator.ClusterCoordinator(strategy)
  images_np = np.random.default_rng(0).random((40, 784), dtype=np.float32)
  with strategy.scope():
    counters = worker_steps.Counters()
  images = worker_steps.per_worker_copies(strategy, lambda: tf.Variable(images_np, trainable=False))
  local = autoencoder.build_stack((16,), SEED, 784)[0]  # the reference gradient, on this process's own device
  reference = autoencoder.LayerTrainer(local, [], tf.constant(images_np), SEED, CORRUPTION, BATCH)
  for aware in (False, True):
    for attempt in range(1, ATTEMPTS + 1):
      layer, before, grads, staleness, in_time = _made_stale_step(strategy, coordinator, counters, images, local,
                                                                  reference, aware)
      if in_time:
        break
    after = [v.numpy() for v in layer.weights]
    rates = {True: LEARNING_RATE / (STALE + 1), False: LEARNING_RATE}

    def error(rate):
      return max(float(np.max(np.abs(a - (b - rate * g.numpy())))) for a, b, g in zip(after, before, grads))

    print(json.dumps({"staleness_aware": aware, "staleness": [int(s) for s in staleness],
                      "error_vs_expected": error(rates[aware]), "error_vs_other_rule": error(rates[not aware]),
                      "attempts": attempt}),
          flush=True)


if __name__ == "__main__":
  main()
