"""TensorBoard scalars of a run (`--tensorboard_dir`): per-epoch losses, throughput and accuracy.

Written with `tf.summary` (the `tensorboard` package must be installed; TensorFlow 2.21 raises
TBNotInstalledError without it). View with `tensorboard --logdir <dir>`. Tags:
  pretrain/layer<n>/train_loss        mean training reconstruction loss of layer n's epoch
  pretrain/layer<n>/heldout_loss      held-out reconstruction loss (`common.model.evaluation`) after that epoch
  pretrain/layer<n>/examples_per_second
  finetune/train_loss, finetune/validation_accuracy, finetune/examples_per_second
and pictures (`common.artifacts.pictures`), after every layer-epoch:
  pretrain/filters                    layer 1's first filters, tiled (image-shaped data only)
  pretrain/reconstructions            fixed test images above their reconstructions through each trained layer
The step of a pretraining scalar is the layer's epoch number (1-based); of a finetuning scalar, the
finetuning epoch; of a picture, the layer-epochs trained so far.
"""

import os
from typing import Dict, Optional, Sequence

import numpy as np
import tensorflow as tf

from common.artifacts import pictures


class Summaries:
  """Writes a run's scalars under `<log_dir>/<run_name>`, or nothing when `log_dir` is None.

  Args:
    log_dir: the TensorBoard directory (`--tensorboard_dir`), or None.
    run_name: the run's name (one TensorBoard run per training run).
  """

  def __init__(self, log_dir: Optional[str], run_name: str):
    self._writer = tf.summary.create_file_writer(os.path.join(log_dir, run_name)) if log_dir else None

  @property
  def enabled(self) -> bool:
    """True when summaries are written (--tensorboard_dir given)."""
    return self._writer is not None

  def scalar(self, tag: str, value: Optional[float], step: int) -> None:
    """Writes one scalar (skipped when disabled or `value` is None)."""
    if self._writer is None or value is None:
      return
    with self._writer.as_default(step=step):
      tf.summary.scalar(tag, float(value))

  def pretrain_epoch(self, layer: int, epoch: int, entry: dict, examples: int) -> None:
    """The scalars of one epoch of a layer (1-based `layer` and `epoch`) from its record entry
    ({"loss", "seconds", optional "heldout_loss"}) and the examples it processed."""
    prefix = f"pretrain/layer{layer}"
    self.scalar(f"{prefix}/train_loss", entry.get("loss"), epoch)
    self.scalar(f"{prefix}/heldout_loss", entry.get("heldout_loss"), epoch)
    if entry.get("seconds"):
      self.scalar(f"{prefix}/examples_per_second", examples / entry["seconds"], epoch)

  def finetune_epoch(self, epoch: int, entry: dict, examples: int) -> None:
    """The scalars of one finetuning epoch (1-based) from its history entry."""
    self.scalar("finetune/train_loss", entry.get("loss"), epoch)
    self.scalar("finetune/validation_accuracy", entry.get("validation_accuracy"), epoch)
    if entry.get("seconds"):
      self.scalar("finetune/examples_per_second", examples / entry["seconds"], epoch)

  def pictures(self, step: int, weights: Dict[str, np.ndarray], images: np.ndarray,
               image_shape: Sequence[int]) -> None:
    """The filters and the reconstructions of `images` (float32 [n, D], the first `pictures.EXAMPLES` shown) by the
    trained layers' `weights` ({"layerN/kernel", ...}) as images at `step`; nothing when disabled."""
    if self._writer is None:
      return
    shown = images[:pictures.EXAMPLES]
    grids = {"pretrain/reconstructions": pictures.reconstruction_grid(shown, pictures.reconstructions(weights, shown),
                                                                      image_shape)}
    if len(image_shape) == 3:
      grids["pretrain/filters"] = pictures.filters(weights["layer1/kernel"], image_shape)
    with self._writer.as_default(step=step):
      for tag, grid in grids.items():
        tf.summary.image(tag, grid[None], max_outputs=1)

  def flush(self) -> None:
    """Writes the buffered events to disk (TensorBoard sees them at once)."""
    if self._writer is not None:
      self._writer.flush()
