"""How much slower one layer's epoch gets when another runs beside it in a separate process.

The gap between model_parallel and its bound (`bench_model_parallel.py`) is the slowdown of each
layer's epoch while the other device is busy. This script measures the same slowdown with no
TensorFlow runtime shared at all: `--copies` independent processes (1 intra-op thread each) each train
layer `--layer` of a 2-layer stack for `--epochs` timed epochs at the same moment. Run with copies 1 and
2, interleaved; if two processes slow each other as much as model_parallel's devices slow each other,
the gap is the machine (shared caches, memory bandwidth, clock), not the program.

Usage (timings are reported: exclusive CPU lock):
  flock -x /work/cpu.lock .venv/bin/python -m experiments.mp_corun --batch_size=1000
"""

import json
import os
import statistics
import subprocess
import sys
import time

from absl import app
from absl import flags

from experiments.dp_common import spread

_UNITS = flags.DEFINE_integer("hidden_units", 1000, "Hidden units of each layer of the 2-layer stack.")
_BATCH = flags.DEFINE_integer("batch_size", 1000, "Batch size.")
_EXAMPLES = flags.DEFINE_integer("train_examples", 11_000, "Training images per epoch.")
_LAYER = flags.DEFINE_integer("layer", 2, "Which layer (1 or 2) every process trains.")
_EPOCHS = flags.DEFINE_integer("epochs", 4, "Timed epochs per process.")
_REPEATS = flags.DEFINE_integer("repeats", 3, "Rounds of (alone, side by side).")
_WORKER = flags.DEFINE_float("worker_start_at", 0.0, "Internal: run as a worker, start timing at this time.time().")
_OUT = flags.DEFINE_string("output", "results/benchmarks/model_parallel/corun_b{batch}.json",
                           "Where the JSON summary goes ({batch} is replaced).")
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _worker() -> None:
  """Trains the layer and prints {"epoch_seconds": [...]} as the last line."""
  from common import devices
  devices.setup(1, threads_per_device=1)
  import tensorflow as tf
  from common import autoencoder
  from common import data
  images = tf.constant(data.load_mnist(train_examples=_EXAMPLES.value).train_images)
  layers = autoencoder.build_stack([_UNITS.value] * 2, seed=0)
  i = _LAYER.value - 1
  trainer = autoencoder.LayerTrainer(layers[i], layers[:i], images, 0, 0.5, _BATCH.value)
  epoch = tf.function(trainer.run_steps)
  steps = tf.constant(trainer.steps_per_epoch)
  epoch(tf.constant(0), tf.constant(0), tf.constant(1), tf.constant(0.0))[0].numpy()
  time.sleep(max(0.0, _WORKER.value - time.time()))  # All copies start together.
  seconds = []
  for e in range(_EPOCHS.value):
    start = time.perf_counter()
    epoch(tf.constant(e), tf.constant(0), steps, tf.constant(1e-4))[0].numpy()
    seconds.append(time.perf_counter() - start)
  print(json.dumps({"epoch_seconds": seconds}))


def _round(copies: int) -> list:
  """Runs `copies` workers at once; returns each one's median epoch seconds."""
  start_at = time.time() + 25.0  # Time for every worker to start TensorFlow and compile.
  command = [sys.executable, "-m", "experiments.mp_corun", f"--worker_start_at={start_at}",
             f"--hidden_units={_UNITS.value}", f"--batch_size={_BATCH.value}", f"--train_examples={_EXAMPLES.value}",
             f"--layer={_LAYER.value}", f"--epochs={_EPOCHS.value}"]
  env = dict(os.environ, PYTHONPATH=ROOT, TF_CPP_MIN_LOG_LEVEL="2")
  procs = [subprocess.Popen(command, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
           for _ in range(copies)]
  results = []
  for p in procs:
    out, _ = p.communicate()
    if p.returncode != 0:
      raise RuntimeError(f"worker failed with exit code {p.returncode}")
    results.append(statistics.median(json.loads(out.strip().splitlines()[-1])["epoch_seconds"]))
  return results


def main(argv):
  del argv
  if _WORKER.value:
    _worker()
    return
  alone, together = [], []
  for _ in range(_REPEATS.value):
    alone += _round(1)
    together += _round(2)
  summary = {
      "hidden_units": _UNITS.value, "batch_size": _BATCH.value, "train_examples": _EXAMPLES.value,
      "layer": _LAYER.value, "epochs_per_process": _EPOCHS.value, "repeats": _REPEATS.value,
      "epoch_seconds_alone": spread(alone), "epoch_seconds_two_processes": spread(together),
      "slowdown_side_by_side": statistics.median(together) / statistics.median(alone),
  }
  path = _OUT.value.format(batch=_BATCH.value)
  os.makedirs(os.path.dirname(path), exist_ok=True)
  with open(path, "w") as f:
    json.dump(summary, f, indent=1)
  print(json.dumps(summary, indent=1))


if __name__ == "__main__":
  app.run(main)
