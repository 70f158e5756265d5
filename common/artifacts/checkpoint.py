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
import re
from typing import Any, Dict, List, Optional

from absl import logging
import tensorflow as tf

from common.base import errors
from common.settings import config as config_lib


PROGRESS_KEY = "progress/.ATTRIBUTES/VARIABLE_VALUE"
_INDEX_FILE = re.compile(r"^(ckpt-(\d+))\.index$")


def checkpoint_candidates(model_dir: str, state=None) -> List[str]:
  """Checkpoint prefixes of `model_dir`, newest (highest number) first: those the state file `state`
  (a `CheckpointState` proto or None) names plus every ckpt-N.index file present."""
  numbers = {}
  listed = list(state.all_model_checkpoint_paths) + [state.model_checkpoint_path] if state else []
  for path in listed:
    m = re.match(r"^ckpt-(\d+)$", os.path.basename(path))
    if m:
      numbers[int(m.group(1))] = os.path.join(model_dir, os.path.basename(path))
  if os.path.isdir(model_dir):
    for name in os.listdir(model_dir):
      m = _INDEX_FILE.match(name)
      if m:
        numbers[int(m.group(2))] = os.path.join(model_dir, m.group(1))
  return [numbers[n] for n in sorted(numbers, reverse=True)]


def read_progress(path: str) -> Dict[str, Any]:
  """Reads every tensor of the checkpoint `path` (so a truncated or corrupt file fails here, before any
  weight is restored) and returns its progress document.

  Raises:
    Any error of reading the files: tf.errors.OpError (missing or corrupt index), IndexError or
    tf.errors.DataLossError (truncated or corrupt data), ValueError (a progress document that is not JSON).
  """
  reader = tf.train.load_checkpoint(path)
  for name in reader.get_variable_to_shape_map():
    reader.get_tensor(name)
  return json.loads(reader.get_tensor(PROGRESS_KEY).decode())


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
               chief: bool = True, data_fingerprint: Optional[Dict[str, Any]] = None, **trackables: Any):
    self.model_dir = model_dir
    self.config = config
    # What the configuration does not say of the data (your own arrays' sha256): None values are left out, and a
    # checkpoint from before a key compares as None.
    self.data_fingerprint = {k: v for k, v in (data_fingerprint or {}).items() if v is not None}
    self.chief = chief
    with tf.device("/cpu:0"):
      self._progress = tf.Variable("", dtype=tf.string, trainable=False, name="progress")
    self._checkpoint = tf.train.Checkpoint(progress=self._progress, **trackables)
    self._manager = (tf.train.CheckpointManager(self._checkpoint, model_dir, max_to_keep=max_to_keep)
                     if model_dir else None)
    self._max_to_keep = max_to_keep
    self.saves = 0
    # The checkpoint `restore` used, and the newer ones it skipped: [{"path", "reason"}].
    self.restored_from: Optional[str] = None
    self.skipped: List[Dict[str, str]] = []

  def restore(self) -> Optional[Dict[str, Any]]:
    """Restores the newest checkpoint of `model_dir` that is intact into the trackables, if there is one.

    The candidates are the checkpoints named by TensorFlow's state file ("checkpoint") and every
    ckpt-N.index file in the directory, newest first, so a missing or garbled state file loses nothing.
    Each is read in full before any weight is touched; one that cannot be read (a truncated or corrupt
    .index or .data file) is skipped with a warning naming it and the reason (`skipped`), and the next
    older one is tried. The chief then rewrites the state file to name the checkpoint used, so the next
    save continues from it.

    Returns:
      The progress document saved with it, or None when the directory holds no checkpoint (a fresh run).

    Raises:
      ResumeMismatchError: the newest intact checkpoint was written with different training settings
        (names them).
      CheckpointUnusableError: the directory holds checkpoint files but none can be read.
    """
    if not self._manager:
      return None
    state = tf.train.get_checkpoint_state(self.model_dir)  # None when missing or unreadable.
    candidates = checkpoint_candidates(self.model_dir, state)
    if not candidates:
      return None
    if state is None or not state.model_checkpoint_path:
      logging.warning("--model_dir=%s holds checkpoint files but TensorFlow's state file %r there is missing or "
                      "unreadable; recovering from the newest intact checkpoint file instead of starting afresh.",
                      self.model_dir, os.path.join(self.model_dir, "checkpoint"))
    for k, path in enumerate(candidates):
      try:
        saved = read_progress(path)
      except Exception as e:  # pylint: disable=broad-except  # Any failure to read means: try an older one.
        reason = f"{type(e).__name__}: {str(e).strip().splitlines()[0] if str(e).strip() else 'unreadable'}"
        self.skipped.append({"path": path, "reason": reason})
        logging.warning("Skipped checkpoint %s, which cannot be read (%s); trying an older one.", path, reason)
        continue
      # Check the configuration before touching any weights.
      want = dict(self.config.training_fingerprint(), **self.data_fingerprint)
      have = saved.get("config", {})
      # A setting added since the checkpoint was made compares by its default; one since removed is ignored.
      diff = config_lib.stale_settings(self.config, have) + sorted(
          key for key in {"dataset_sha256"} & (set(want) | set(have)) if want.get(key) != have.get(key))
      if diff:
        details = ", ".join(f"{key}: checkpoint {have.get(key)!r} vs now {want.get(key)!r}" for key in diff)
        raise errors.ResumeMismatchError(
            f"--model_dir={self.model_dir} holds a checkpoint of a different run ({details}); "
            "use another --model_dir or the same flags.")
      self._checkpoint.restore(path).assert_existing_objects_matched()
      self.restored_from = path
      if self.chief and (state is None or os.path.basename(state.model_checkpoint_path) != os.path.basename(path)):
        # Name the checkpoint used (and the older ones, for deletion in turn) in the state file.
        tf.compat.v1.train.update_checkpoint_state(self.model_dir, path,
                                                   all_model_checkpoint_paths=list(reversed(candidates[k:])))
        self._manager = tf.train.CheckpointManager(self._checkpoint, self.model_dir, max_to_keep=self._max_to_keep)
        logging.info("The state file of --model_dir=%s now names %s.", self.model_dir, path)
      logging.info("Resuming from %s", path)
      return saved
    details = "; ".join(f"{os.path.basename(s['path'])}: {s['reason']}" for s in self.skipped)
    raise errors.CheckpointUnusableError(
        f"--model_dir={self.model_dir} holds checkpoint files but none can be read ({details}); move them "
        "away to start afresh, or give another --model_dir.")

  def save(self, progress: Dict[str, Any]) -> float:
    """Writes a checkpoint of the trackables with `progress` (JSON-serialisable).

    Returns:
      Seconds spent saving (0 when there is no model_dir or this is not the chief).
    """
    if not self._manager or not self.chief:
      return 0.0
    start = time.perf_counter()
    self._progress.assign(json.dumps(dict(progress, config=dict(self.config.training_fingerprint(),
                                                               **self.data_fingerprint))))
    self._manager.save()
    self.saves += 1
    return time.perf_counter() - start
