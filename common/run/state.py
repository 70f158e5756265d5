"""The state of a run that a program's schedule and `common.run.lifecycle.finish` share (`Run`): its configuration,
devices, data, layers and classifier, the checkpointed progress document, the pretraining clock, and the steps every
schedule takes around its training blocks (`Run.training`, `Run.end_epochs`, `Run.save`, `Run.end_layer_epoch`).
`common.run.lifecycle.start` builds it.
"""

import contextlib
import dataclasses
import time
from typing import Any, Callable, Dict, Iterator, List, Optional, Sequence

import tensorflow as tf

from common.artifacts import checkpoint as checkpoint_lib
from common.artifacts import lock as lock_lib
from common.artifacts import runlog
from common.artifacts import summaries as summaries_lib
from common.base import progress as progress_lib
from common.data import loader as data_lib
from common.distribute import devices as devices_lib
from common.measure import timing
from common.model import autoencoder
from common.model import evaluation
from common.model import input_drift
from common.settings import config as config_lib
from common.settings import programs
from common.training import finetune


# Calls per epoch when a progress bar is shown; without one an epoch is a single call.
BAR_CHUNKS_PER_EPOCH = 20


@dataclasses.dataclass
class Run:
  """The state of a run shared by a program's schedule and `finish`.

  Attributes:
    config: the configuration.
    program: the registered program.
    devices: the devices set up for it.
    data: the training, validation and test data in host memory.
    layers: the `DenoisingAutoencoder` stack, bottom first.
    classifier: the finetuning model (None for data without labels).
    state: the checkpointed progress document; the schedule keeps its own progress under
      state["pretrain"], finetuning under state["finetune"].
    timer: phase timer, becomes the record's "timing".
    resumed: True when a checkpoint was restored.
    started: time.perf_counter() at `start`.
    chief: True unless this is a non-chief worker of a multi-worker run, which writes no checkpoint,
      exported weights or run record (the chief does).
    finetune_device: where the classifier lives and finetunes when there is no distribution.
    layer_devices: the device of each layer (the first device under a distribution).
    distribution: the tf.distribute strategy of a mirrored program (data parallel), or the
      `ParameterServerStrategy` of a "parameter_server" program, else None.
    finetune_distribution: the strategy finetuning runs under: the run's mirrored one, or a `MirroredStrategy`
      over this process's devices when there are several (`_finetune_distribution`), else None (one device: in a
      cluster of servers, the client's or coordinator's own).
    finetune_devices: with --finetune_placement=pipelined on several devices, the device of each classifier layer
      (`common.training.finetune_pipeline`), else None.
    kernels: the kernel path of the pretraining steps, "xla" or "tf" (`autoencoder.KERNEL_PATHS`).
    evaluator: the held-out reconstruction evaluator (`common.model.evaluation`).
    drift: the input-drift measure (`common.model.input_drift`): what each layer read, epoch by epoch.
    summaries: TensorBoard scalars (`common.artifacts.summaries`; writes nothing without --tensorboard_dir).
    plan: what the program's `plan` hook decided from the devices and the data (its layout), else None.
    checkpoint_objects: the program's own objects checkpointed with the weights (its `checkpoint_objects` hook).
  """
  config: config_lib.Config
  program: programs.Program
  devices: devices_lib.DeviceSetup
  data: data_lib.Dataset
  layers: List[autoencoder.DenoisingAutoencoder]
  classifier: Optional[finetune.Classifier]
  state: Dict[str, Any]
  timer: timing.PhaseTimer
  resumed: bool
  started: float
  chief: bool
  finetune_device: str
  layer_devices: List[str]
  distribution: Optional[tf.distribute.Strategy]
  finetune_distribution: Optional[tf.distribute.Strategy]
  finetune_devices: Optional[List[str]]
  kernels: str
  evaluator: evaluation.HeldoutEvaluator
  drift: input_drift.InputDrift
  summaries: summaries_lib.Summaries
  checkpoint: checkpoint_lib.CheckpointState
  on_checkpoint: Optional[Callable[["Run"], None]] = None
  lock: Optional[lock_lib.ModelDirLock] = None
  plan: Any = None
  checkpoint_objects: Dict[str, Any] = dataclasses.field(default_factory=dict)

  @property
  def run_seconds(self) -> float:
    """Wall seconds of the whole run: this process so far plus every earlier process of the run up to
    its last checkpoint (a resumed run continues the count)."""
    return self._clock.get("earlier_processes_seconds", 0.0) + time.perf_counter() - self.started

  @property
  def checkpoints_saved(self) -> int:
    """Checkpoints written by this process so far."""
    return self.checkpoint.saves

  def save(self) -> float:
    """Checkpoints the weights with `state`; returns seconds spent (also added to timing "checkpoint")."""
    self._clock["run_seconds"] = self.run_seconds
    seconds = self.checkpoint.save(self.state)
    self.timer.add("checkpoint", seconds)
    if self.on_checkpoint is not None and self.config.model_dir:
      self.on_checkpoint(self)
    return seconds

  @property
  def pretrains(self) -> bool:
    """True unless the run pretrains nothing (--pretrain_epochs=0 or --pretrain_layers=0: `lifecycle.no_pretraining`)."""
    return bool(self.config.pretrain_epochs and self.config.pretrain_layers)

  @property
  def chunks_per_epoch(self) -> int:
    """Calls per epoch: several when a progress bar is shown, else one."""
    return BAR_CHUNKS_PER_EPOCH if self.config.show_progress else 1

  @property
  def _clock(self) -> Dict[str, float]:
    return self.state.setdefault("clock", {"pretrain_seconds": 0.0, "pretrain_cpu_seconds": 0.0})

  @property
  def pretrain_elapsed(self) -> float:
    """Steady-state pretraining seconds so far: the wall-clock seconds of every `training` block of the
    run, resumed runs included (warm-up, evaluation and checkpoints are outside the blocks)."""
    return self._clock["pretrain_seconds"]

  @property
  def pretrain_cpu_seconds(self) -> float:
    """CPU seconds of this process (all its threads) inside the `training` blocks, resumed runs included."""
    return self._clock["pretrain_cpu_seconds"]

  @contextlib.contextmanager
  def training(self, phase: Optional[str] = "pretrain_train") -> Iterator[None]:
    """Times a block of pretraining: its wall seconds go to timing phase `phase` (none when None: the
    program times its phases itself) and, with its CPU seconds, to the run's pretraining clock
    (checkpointed, so a resumed run continues it)."""
    wall, cpu = time.perf_counter(), time.process_time()
    try:
      yield
    finally:
      wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
      if phase:
        self.timer.add(phase, wall)
      self._clock["pretrain_seconds"] += wall
      self._clock["pretrain_cpu_seconds"] += cpu

  def observe_inputs(self, epochs: Dict[int, int], encoders_of: Callable[[int], Sequence[Any]]) -> None:
    """Sketches what layers read in an epoch for the input-drift measure (`common.model.input_drift`; timing phase
    "input_drift", outside the pretraining clock): {0-based layer: its 0-based epoch} and, per layer i, the
    encoders of layers 0 .. i - 1 it read (`encoders_of(i)`). Layer 0 reads the images: nothing to sketch."""
    if any(i > 0 for i in epochs):
      with self.timer.phase("input_drift"):
        for i, epoch in sorted(epochs.items()):
          self.drift.observe(self.state, i, epoch, encoders_of(i))

  def end_epochs(self, entries: Dict[int, Dict[str, Any]], examples: int, inputs_observed: bool = False) -> None:
    """Completes the record entries of layer-epochs that just ended, {0-based layer: entry}.

    Each entry ({"loss", "seconds", ...}, appended by the program to its layer's history) gets
    "elapsed_seconds" (`pretrain_elapsed` now) and, with --heldout_every_epoch, "heldout_loss": the
    layer's held-out reconstruction loss through the current stack below it (timed as "heldout_eval",
    outside the pretraining clock). Unless the program observed them itself (`inputs_observed`: its layers read
    copies, which it sketches before refreshing them), what each layer read is sketched as the current layers
    below it (`observe_inputs`). Its TensorBoard scalars are written; `examples` is the number of examples one
    epoch processes.
    """
    if not inputs_observed:
      self.observe_inputs({i: len(self.state["pretrain"]["layers"][i]) - 1 for i in entries},
                          lambda i: self.layers[:i])
    losses = []
    if self.config.heldout_every_epoch and entries:
      with self.timer.phase("heldout_eval"):
        losses = self.evaluator.losses(self.layers[:max(entries) + 1])
    for i, entry in sorted(entries.items()):
      entry["elapsed_seconds"] = self.pretrain_elapsed
      if losses:
        entry["heldout_loss"] = losses[i]
      epochs_done = len(self.state["pretrain"]["layers"][i])
      self.summaries.pretrain_epoch(i + 1, epochs_done, entry, examples)
    if self.summaries.enabled and entries:  # The trained layers so far: those with an epoch behind them.
      trained = [l for l, h in zip(self.layers, self.state["pretrain"]["layers"]) if h]
      self.summaries.pictures(sum(map(len, self.state["pretrain"]["layers"])), runlog.layer_weights(trained),
                              self.data.test_images, self.data.info.image_shape)

  def end_layer_epoch(self, index: int, result: Dict[str, Any], examples: int,
                      progress: progress_lib.Progress) -> None:
    """The bookkeeping after layer `index` (0-based) trained an epoch in the greedy order: `result` ({"loss",
    "seconds"}, `common.training.epochs.run_epoch`) appended to its history, `end_epochs` (`examples` per epoch), a
    checkpoint and a progress line."""
    history = self.state["pretrain"]["layers"][index]
    history.append(result)
    self.end_epochs({index: result}, examples)
    self.save()
    config = self.config
    progress.log(f"layer {index + 1}/{len(config.hidden_units)} epoch {len(history)}/{config.pretrain_epochs} "
                 f"loss {result['loss']:.4f}", examples, result["seconds"])
