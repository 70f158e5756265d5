"""Running one epoch of a compiled step loop in chunks: the progress bar moves between the chunks, Ctrl-C stops
between them, and the epoch's mean loss is checked. The greedy-order programs' pretraining (`greedy.pretrain`,
`data_parallel.pretrain`, `async_data_parallel.pretrain`) and finetuning (`common.training.finetune`) run their epochs
this way."""

import math
import time
from typing import Any, Callable, Dict

import numpy as np
import tensorflow as tf

from common.base import errors
from common.base import progress as progress_lib


def run_epoch(steps_fn: Callable[..., Any], epoch: int, steps: int, learning_rate: float, chunks: int,
              progress: progress_lib.Progress, work: float, what: str, flag: str) -> Dict[str, float]:
  """Runs one epoch of `steps_fn(epoch, first_step, num_steps, learning_rate)` in `chunks` calls.

  Args:
    steps_fn: compiled function running steps [first_step, first_step + num_steps) of `epoch`; its first output is
      the sum of those steps' mean batch losses.
    epoch: epoch index (keys shuffling and corruption).
    steps: steps per epoch.
    learning_rate: SGD learning rate.
    chunks: number of calls the epoch is split into.
    progress: advanced by `work` over the epoch.
    work: work units of this epoch.
    what: the loss named in the error message, e.g. "pretraining loss of layer 2".
    flag: the learning-rate flag the error message advises lowering.

  Returns:
    {"loss": mean batch loss, "seconds": wall-clock seconds}.

  Raises:
    TrainingDivergedError: the loss is NaN or infinite.
  """
  bounds = np.linspace(0, steps, min(chunks, steps) + 1).astype(int)
  lr = tf.constant(learning_rate, tf.float32)
  total = 0.0
  start = time.perf_counter()
  for a, b in zip(bounds, bounds[1:]):
    out = steps_fn(tf.constant(epoch), tf.constant(int(a)), tf.constant(int(b - a)), lr)
    total += float(tf.nest.flatten(out)[0])
    progress.advance(work * (b - a) / steps)
  seconds = time.perf_counter() - start
  loss = total / steps
  if not math.isfinite(loss):
    progress.close()
    raise errors.TrainingDivergedError(
        f"{what} became {loss} in epoch {epoch + 1}; lower {flag}. The last good checkpoint is kept.")
  return {"loss": loss, "seconds": seconds}
