"""One writer per --model_dir: an advisory lock file naming its owner.

Two runs writing the same checkpoints would overwrite each other's progress, so the process that writes
a model directory's checkpoints (the chief of a multi-worker run, or the only process) holds
`<model_dir>/LOCK`: an exclusive `fcntl.flock` on it, and the owner's pid, host and start time in it.
The operating system drops the flock when the process ends, however it ends, so a lock is never stuck;
a lock file left with an owner by a process that was killed (its flock is gone) is taken over with a
message. The lock is released, and the file emptied, when the process exits. flock works on local file
systems and on NFSv4; the workers of a multi-worker run do not lock (they only read the chief's
checkpoints).
"""

import atexit
import datetime
import fcntl
import json
import os
import socket
from typing import Any, Dict, Optional

from absl import logging

from common.base import errors

LOCK_FILE = "LOCK"

# The locks this process holds, by lock file path: a second run in the same process (a test, a notebook)
# reuses its lock, since flock would refuse a second open file of the same process.
_HELD: Dict[str, "ModelDirLock"] = {}


def _read_owner(f) -> Optional[Dict[str, Any]]:
  f.seek(0)
  text = f.read().strip()
  if not text:
    return None
  try:
    return json.loads(text)
  except ValueError:
    return {"pid": "?", "host": "?", "raw": text[:80]}


def _describe(owner: Optional[Dict[str, Any]]) -> str:
  if not owner:
    return "another process"
  return f"process {owner.get('pid', '?')} on host {owner.get('host', '?')} (since {owner.get('since', '?')})"


class ModelDirLock:
  """The lock of one model directory, held from `acquire` until `release` or the end of the process.

  Args:
    model_dir: the directory (must exist).
  """

  def __init__(self, model_dir: str):
    self.path = os.path.join(model_dir, LOCK_FILE)
    self._file = None

  def acquire(self) -> None:
    """Takes the lock, or raises.

    Raises:
      ModelDirInUseError: another live process holds it (the message names its pid and host).
    """
    key = os.path.realpath(self.path)
    f = open(self.path, "a+")
    try:
      fcntl.flock(f.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
      owner = _read_owner(f)
      f.close()
      raise errors.ModelDirInUseError(
          f"--model_dir={os.path.dirname(self.path)} is in use by {_describe(owner)}; wait for that run to end "
          f"or give another --model_dir (two runs on one directory would overwrite each other's checkpoints).") \
          from None
    stale = _read_owner(f)
    if stale:
      logging.warning("Took over the lock of --model_dir=%s left by %s, which is no longer running.",
                      os.path.dirname(self.path), _describe(stale))
    f.seek(0)
    f.truncate()
    f.write(json.dumps({"pid": os.getpid(), "host": socket.gethostname(),
                        "since": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")}) + "\n")
    f.flush()
    self._file = f
    _HELD[key] = self
    atexit.register(self.release)

  def release(self) -> None:
    """Empties the lock file and drops the lock (idempotent)."""
    if self._file is None:
      return
    _HELD.pop(os.path.realpath(self.path), None)
    try:
      self._file.seek(0)
      self._file.truncate()
      self._file.flush()
    except OSError:
      pass
    fcntl.flock(self._file.fileno(), fcntl.LOCK_UN)
    self._file.close()
    self._file = None


def acquire(model_dir: str) -> ModelDirLock:
  """The lock of `model_dir`, taken now, or the one this process already holds.

  Raises:
    ModelDirInUseError: another live process holds it.
  """
  held = _HELD.get(os.path.realpath(os.path.join(model_dir, LOCK_FILE)))
  if held is not None:
    return held
  lock = ModelDirLock(model_dir)
  lock.acquire()
  return lock
