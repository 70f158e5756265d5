"""What every training program does around its pretraining schedule.

`start` sets up devices, loads MNIST, builds the layers and the classifier, and restores the latest
checkpoint of `--model_dir`; the program then runs its schedule, and `finish` finetunes, exports the
weights and writes the run record. `run_epoch` runs one epoch of a compiled epoch function in chunks
(for the progress bar) and checks the loss.
"""

import dataclasses
import math
import time
from typing import Any, Callable, Dict, List, Optional, Sequence

from absl import logging
import numpy as np
import tensorflow as tf

from common import autoencoder
from common import checkpoint
from common import cluster
from common import config as config_lib
from common import data
from common import devices as devices_lib
from common import errors
from common import finetune
from common import progress as progress_lib
from common import runlog
from common import timing

# Calls per epoch when a progress bar is shown; without one an epoch is a single call.
BAR_CHUNKS_PER_EPOCH = 20


@dataclasses.dataclass
class Run:
  """The state of a run shared by a program's schedule and `finish`.

  Attributes:
    config: the configuration.
    devices: the devices set up for it.
    mnist: the data in host memory.
    layers: the `DenoisingAutoencoder` stack, bottom first.
    classifier: the finetuning model.
    state: the checkpointed progress document; the schedule keeps its own progress under
      state["pretrain"], finetuning under state["finetune"].
    timer: phase timer, becomes the record's "timing".
    resumed: True when a checkpoint was restored.
    started: time.perf_counter() at `start`.
    chief: True unless this is a non-chief worker of a multi-worker run, which writes no checkpoint,
      exported weights or run record (the chief does).
    finetune_device: where the classifier lives and finetunes when there is no strategy.
  """
  config: config_lib.Config
  devices: devices_lib.DeviceSetup
  mnist: data.Mnist
  layers: List[autoencoder.DenoisingAutoencoder]
  classifier: finetune.Classifier
  state: Dict[str, Any]
  timer: timing.PhaseTimer
  resumed: bool
  started: float
  chief: bool
  finetune_device: str
  _checkpoint: checkpoint.CheckpointState
  _on_checkpoint: Optional[Callable[["Run"], None]]

  @property
  def checkpoints_saved(self) -> int:
    """Checkpoints written by this process so far."""
    return self._checkpoint.saves

  def save(self) -> float:
    """Checkpoints the weights with `state`; returns seconds spent (also added to timing "checkpoint")."""
    seconds = self._checkpoint.save(self.state)
    self.timer.add("checkpoint", seconds)
    if self._on_checkpoint is not None and self.config.model_dir:
      self._on_checkpoint(self)
    return seconds

  @property
  def chunks_per_epoch(self) -> int:
    """Calls per epoch: several when a progress bar is shown, else one."""
    return BAR_CHUNKS_PER_EPOCH if self.config.show_progress else 1


def start(config: config_lib.Config, layer_devices: Optional[Sequence[str]] = None,
          strategy: Optional[tf.distribute.Strategy] = None, device_setup: Optional[devices_lib.DeviceSetup] = None,
          on_checkpoint: Optional[Callable[[Run], None]] = None, finetune_device: Optional[str] = None) -> Run:
  """Sets up a run: devices, data, model, and the latest checkpoint of `config.model_dir`.

  Args:
    config: the configuration (already validated).
    layer_devices: device of each layer (default: the first device for all).
    strategy: create the variables under `strategy.scope()` (data parallel).
    device_setup: devices already set up by the caller (else set up here from the config).
    on_checkpoint: called with the `Run` after each checkpoint is written (tests use it to kill the
      process or inject a fault at a chosen point; `Run.checkpoints_saved` counts them). Default: the
      `common.cluster.KILL_ENV` test hook when that variable names this process, else none.
    finetune_device: device of the classifier and of finetuning without a strategy (default: the
      first device).

  Raises:
    ValueError: devices cannot be made. DataUnavailableError: MNIST missing.
    ResumeMismatchError: `model_dir` holds a checkpoint of a different configuration.
  """
  started = time.perf_counter()
  device_setup = device_setup or devices_lib.setup(config.num_devices, config.threads_per_device)
  mnist = data.load_mnist(config.data_dir, config.train_examples)
  first = device_setup.names[0]
  layer_devices = list(layer_devices or [first] * len(config.hidden_units))
  finetune_device = finetune_device or first
  with strategy.scope() if strategy is not None else tf.device(first):
    layers = autoencoder.build_stack(config.hidden_units, config.seed, devices=None if strategy else layer_devices)
  with strategy.scope() if strategy is not None else tf.device(finetune_device):
    classifier = finetune.Classifier(config.hidden_units, config.seed)
  chief = strategy is None or strategy.extended.should_checkpoint
  ckpt = checkpoint.CheckpointState(config.model_dir, config, chief=chief, layers=layers, classifier=classifier)
  state = ckpt.restore()
  resumed = state is not None
  state = state or {}
  state.pop("config", None)
  return Run(config, device_setup, mnist, layers, classifier, state, timing.PhaseTimer(), resumed, started,
             chief, finetune_device, ckpt, on_checkpoint or cluster.fault_hook_from_environment())


def run_epoch(epoch_fn: Callable[..., Any], epoch: int, steps: int, learning_rate: float, chunks: int,
              progress: progress_lib.Progress, work: float, what: str) -> Dict[str, float]:
  """Runs one epoch of `epoch_fn(epoch, first_step, num_steps, learning_rate)` in `chunks` calls.

  Args:
    epoch_fn: compiled function returning the sum of the steps' mean batch losses (first output).
    epoch: epoch index (keys shuffling and corruption).
    steps: steps per epoch.
    learning_rate: SGD learning rate.
    chunks: number of calls the epoch is split into.
    progress: advanced by `work` over the epoch.
    work: work units of this epoch.
    what: names the layer in the error message, e.g. "layer 2".

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
    out = epoch_fn(tf.constant(epoch), tf.constant(int(a)), tf.constant(int(b - a)), lr)
    total += float(tf.nest.flatten(out)[0])
    progress.advance(work * (b - a) / steps)
  seconds = time.perf_counter() - start
  loss = total / steps
  if not math.isfinite(loss):
    progress.close()
    raise errors.TrainingDivergedError(
        f"pretraining loss of {what} became {loss} in epoch {epoch + 1}; lower --pretrain_learning_rate. "
        "The last good checkpoint is kept.")
  return {"loss": loss, "seconds": seconds}


def finish(run: Run, record: Dict[str, Any], strategy: Optional[tf.distribute.Strategy] = None,
           device: Optional[str] = None, finetune_options: Optional[Dict[str, Any]] = None) -> Dict[str, Any]:
  """Finetunes (unless finetune_epochs is 0), exports weights, writes and returns the run record.

  Args:
    run: the run.
    record: the program's record with "strategy", "layers", "pretrain_seconds" and its own "timing"
      entries filled in; "config", "environment", "finetune", "timing" and "total_seconds" are
      completed here.
    strategy, device: where finetuning runs (default: `run.finetune_device`).
    finetune_options: more keyword arguments of `finetune.run_finetuning`: a program's own recipe
      (learning_rate, schedule, rule); None: plain SGD at config.finetune_learning_rate.
  """
  config = run.config
  if config.finetune_epochs > 0:
    record["finetune"] = finetune.run_finetuning(
        run.classifier, run.layers, run.mnist, config, run.state, lambda _: run.save(), run.timer,
        device=device or run.finetune_device, strategy=strategy, chunks_per_epoch=run.chunks_per_epoch,
        **(finetune_options or {}))
    logging.info("Finetuned %d epochs: validation accuracy %.4f, test accuracy %.4f",
                 config.finetune_epochs, record["finetune"]["validation_accuracy"],
                 record["finetune"]["test_accuracy"])
  if config.export_weights and run.chief:
    runlog.export_weights(config.export_weights, run.layers)
    logging.info("Exported pretrained weights to %s", config.export_weights)
  full = runlog.new_record(config, run.devices)
  full.update(record)
  full["timing"] = dict(record.get("timing", {}), **run.timer.as_dict())
  full["resumed"] = run.resumed
  full["total_seconds"] = time.perf_counter() - run.started
  full["run_name"] = config.effective_run_name
  path = runlog.write_record(full, config) if run.chief else None
  if path:
    logging.info("Run record: %s", path)
  return full
