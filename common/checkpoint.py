"""Checkpoints at epoch boundaries in `--model_dir`, with the schedule's progress inside the checkpoint.

The weights and a JSON "progress" document (where the schedule is, the per-epoch history so far, the
configuration) are saved together by `tf.train.CheckpointManager`, so a process killed at any moment,
even by SIGKILL, leaves either the previous complete checkpoint or the new one. Because shuffling and
corruption are pure functions of (seed, epoch, example), resuming at an epoch boundary ends with the
same weights as a run never interrupted.
"""

import json
import os
import time
from typing import Any, Dict, Optional

from absl import logging
import tensorflow as tf

from common import config as config_lib
from common import errors


class CheckpointState:
  """Saves and restores a run's trackables plus its progress document.

  Args:
    model_dir: checkpoint directory, or None to keep no checkpoints (then `save` only times nothing).
    config: the run's configuration; its training fields must match to resume.
    max_to_keep: checkpoints kept on disk.
    chief: False in the non-chief workers of a multi-worker run: they restore the chief's checkpoint
      from `model_dir` (which must then be shared, e.g. a network file system) but write none, as the
      variables are mirrored and saving them needs no collective.
    **trackables: objects to save (tf.Module, tf.Variable, lists of them), by name.
  """

  def __init__(self, model_dir: Optional[str], config: config_lib.Config, max_to_keep: int = 2,
               chief: bool = True, **trackables: Any):
    self.model_dir = model_dir
    self.config = config
    self.chief = chief
    with tf.device("/cpu:0"):
      self._progress = tf.Variable("", dtype=tf.string, trainable=False, name="progress")
    self._checkpoint = tf.train.Checkpoint(progress=self._progress, **trackables)
    self._manager = (tf.train.CheckpointManager(self._checkpoint, model_dir, max_to_keep=max_to_keep)
                     if model_dir else None)
    self.saves = 0

  def restore(self) -> Optional[Dict[str, Any]]:
    """Restores the latest checkpoint into the trackables, if there is one.

    Returns:
      The progress document saved with it, or None when there is no checkpoint (a fresh run).

    Raises:
      ResumeMismatchError: the checkpoint was written with different training settings (names them).
    """
    if not self._manager or not self._manager.latest_checkpoint:
      return None
    path = self._manager.latest_checkpoint
    # Check the configuration before touching any weights.
    saved = json.loads(tf.train.load_variable(path, "progress/.ATTRIBUTES/VARIABLE_VALUE").decode())
    want = self.config.training_fingerprint()
    have = saved.get("config", {})
    diff = sorted(k for k in set(want) | set(have) if want.get(k) != have.get(k))
    if diff:
      details = ", ".join(f"{k}: checkpoint {have.get(k)!r} vs now {want.get(k)!r}" for k in diff)
      raise errors.ResumeMismatchError(
          f"--model_dir={self.model_dir} holds a checkpoint of a different run ({details}); "
          "use another --model_dir or the same flags.")
    self._checkpoint.restore(path).assert_existing_objects_matched()
    logging.info("Resuming from %s", path)
    return saved

  def save(self, progress: Dict[str, Any]) -> float:
    """Writes a checkpoint of the trackables with `progress` (JSON-serialisable).

    Returns:
      Seconds spent saving (0 when there is no model_dir or this is not the chief).
    """
    if not self._manager or not self.chief:
      return 0.0
    start = time.perf_counter()
    self._progress.assign(json.dumps(dict(progress, config=self.config.training_fingerprint())))
    self._manager.save()
    self.saves += 1
    return time.perf_counter() - start
