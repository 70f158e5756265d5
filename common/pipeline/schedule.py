"""When each layer of a layer-pipelined schedule trains, and at which rate: the schedule settings of pipeline_parallel.

The original pipeline trains every layer from the first step to the last at the constant rate. Layer n > 1 then
learns on the codes of layers that are still moving (input drift: docs/pretraining.md). Each setting below
changes only when a layer trains and at which rate; the mathematics of a step is the original one. Their
defaults give the original schedule. With S steps per epoch and E epochs, layer n (1-based) has its own steps
tau = t - start_n, for global steps t in [start_n, start_n + E S):

  * stagger (`--stagger_epochs` d): start_n = round((n - 1) d S) (the original: 0); the run has
    E S + start_H steps. Outside its window a layer does not train; a finished layer still encodes for the
    layers above (a staggered start: Bengio et al. 2007, "Greedy layer-wise training of deep networks", is the
    limit d = E).
  * warm-up (`--layer_warmup_epochs` w, a setting of every program: `common.model.layer_warmup`): the rate of
    layer n is multiplied by min(1, (tau + 1) / W_n) with W_n = round((n - 1) w S) steps (none when W_n = 0).
  * rate schedule (`--pretrain_lr_schedule`): constant, or cosine, multiplied by (1 + cos(pi tau / (E S))) / 2
    (Loshchilov and Hutter 2017, "SGDR", without restarts), so the lower layers settle while the upper ones train.

A polish (`--polish_epochs`) is not a step schedule: it runs after the pipelined steps (`pipeline_parallel.pretrain`).
"""

import dataclasses
import math
from typing import Any, Dict, List, Sequence, Tuple

import numpy as np
import tensorflow as tf

from common.base import errors
from common.model import layer_warmup


@dataclasses.dataclass(frozen=True)
class LayerSchedule:
  """The window and rate multiplier of every layer in the pipelined steps.

  Attributes:
    num_layers: H.
    steps_per_epoch: S.
    epochs: E, the epochs every layer trains.
    lr_schedule: "constant" or "cosine".
    warmup_epochs: w (epochs, may be fractional); layer n warms up over (n - 1) w epochs.
    stagger_epochs: d (epochs, may be fractional); layer n starts (n - 1) d epochs after layer 1.
  """
  num_layers: int
  steps_per_epoch: int
  epochs: int
  lr_schedule: str = "constant"
  warmup_epochs: float = 0.0
  stagger_epochs: float = 0.0

  @classmethod
  def of(cls, config, steps_per_epoch: int) -> "LayerSchedule":
    """The schedule of a run's `config` with S = `steps_per_epoch`, of the layers that train (--pretrain_layers): its
    layer warm-up (every program's setting) and, where its program has them (pipeline_parallel's `PipelineConfig`),
    its rate schedule and staggered start; the original schedule's values otherwise."""
    return cls(config.pretrain_layers or len(config.hidden_units), steps_per_epoch, config.pretrain_epochs,
               getattr(config, "pretrain_lr_schedule", "constant"), config.layer_warmup_epochs,
               getattr(config, "stagger_epochs", 0.0))

  @property
  def is_original(self) -> bool:
    """True for the original schedule: every layer at the constant rate on every step."""
    return self.lr_schedule == "constant" and self.warmup_steps(self.num_layers - 1) == 0 and not self.staggered

  @property
  def staggered(self) -> bool:
    """True when some layer starts after the first step."""
    return self.start(self.num_layers - 1) > 0

  @property
  def layer_steps(self) -> int:
    """E S, the steps every layer trains."""
    return self.epochs * self.steps_per_epoch

  def start(self, layer: int) -> int:
    """The first global step of 0-based `layer`."""
    return int(round(layer * self.stagger_epochs * self.steps_per_epoch))

  def warmup_steps(self, layer: int) -> int:
    """W of 0-based `layer`: the steps over which its rate rises (0: none)."""
    return layer_warmup.warmup_steps(layer, self.warmup_epochs, self.steps_per_epoch)

  @property
  def total_steps(self) -> int:
    """The global steps of the pipelined phase: E S + the top layer's start."""
    return self.layer_steps + self.start(self.num_layers - 1)

  def trains(self, layer: int, step: int) -> bool:
    """Whether 0-based `layer` trains at global `step`."""
    return 0 <= step - self.start(layer) < self.layer_steps

  def multiplier(self, layer: int, step: int) -> float:
    """The rate multiplier of 0-based `layer` at global `step` (Python; 0 outside its window)."""
    tau = step - self.start(layer)
    if not 0 <= tau < self.layer_steps:
      return 0.0
    m = layer_warmup.multiplier(tau, self.warmup_steps(layer))
    return m * (0.5 * (1.0 + math.cos(math.pi * tau / self.layer_steps)) if self.lr_schedule == "cosine" else 1.0)

  def multiplier_tensor(self, layer: int, step: tf.Tensor) -> tf.Tensor:
    """`multiplier` in graph code: float32 scalar of int32 scalar `step`."""
    tau = tf.cast(step - self.start(layer), tf.float32)
    inside = tf.logical_and(tau >= 0.0, tau < float(self.layer_steps))
    m = layer_warmup.multiplier_tensor(tau, self.warmup_steps(layer))
    if self.lr_schedule == "cosine":
      m = m * 0.5 * (1.0 + tf.cos(math.pi * tau / float(self.layer_steps)))
    return tf.where(inside, m, 0.0)

  def trains_tensor(self, layer: int, step: tf.Tensor) -> tf.Tensor:
    """`trains` in graph code: bool scalar of int32 scalar `step`."""
    tau = step - self.start(layer)
    return tf.logical_and(tau >= 0, tau < self.layer_steps)

  def describe(self) -> dict:
    """The schedule for the run record: settings and each layer's first step and warm-up steps."""
    return {"lr_schedule": self.lr_schedule, "layer_warmup_epochs": self.warmup_epochs,
            "stagger_epochs": self.stagger_epochs, "layer_start_steps": [self.start(i) for i in range(self.num_layers)],
            "layer_warmup_steps": [self.warmup_steps(i) for i in range(self.num_layers)],
            "layer_steps": self.layer_steps, "total_steps": self.total_steps}


def account_tick(schedule: LayerSchedule, plan, losses: Sequence[np.ndarray], work: Sequence[Tuple[int, int]],
                 partial: List[Dict[str, float]], histories: List[List[Dict[str, Any]]],
                 elapsed: float) -> Dict[int, Dict[str, Any]]:
  """Adds a tick's per-step losses to each layer's running epoch (the steps of its own window, `schedule`); returns
  {layer: entry} of the epochs that ended in this tick (appended to `histories`).

  Args:
    schedule: the layer schedule.
    plan: the `common.pipeline.placement.Plan` (its `stage_of` each layer).
    losses: per stage, float32 [steps of its chunk, layers of the stage] (`Pipeline.tick`'s losses).
    work: per stage, (first step, steps) of its chunk in the tick (`Plan.tick`).
    partial: per layer, its running epoch {"loss_sum", "steps", "since" (elapsed seconds at its previous epoch's end)}.
    histories: per layer, its epochs' entries {"loss", "seconds"}.
    elapsed: the run's pretraining seconds now.

  Raises:
    TrainingDivergedError: a loss is NaN or infinite.
  """
  ended, steps_per_epoch = {}, schedule.steps_per_epoch
  for i, (p, m) in sorted(plan.stage_of.items()):
    first, count = work[p]
    start = schedule.start(i)
    for j in range(count):
      tau = first + j - start  # the layer's own step
      if not 0 <= tau < schedule.layer_steps:
        continue
      loss = float(losses[p][j, m])
      if not math.isfinite(loss):
        raise errors.TrainingDivergedError(
            f"pretraining loss of layer {i + 1} became {loss} in epoch {tau // steps_per_epoch + 1}; lower "
            "--pretrain_learning_rate. The last good checkpoint is kept.")
      partial[i]["loss_sum"] += loss
      partial[i]["steps"] += 1
      if (tau + 1) % steps_per_epoch == 0:
        entry = {"loss": partial[i]["loss_sum"] / partial[i]["steps"], "seconds": elapsed - partial[i]["since"]}
        histories[i].append(entry)
        ended[i] = entry
        partial[i].update(loss_sum=0.0, steps=0, since=elapsed)
  return ended
