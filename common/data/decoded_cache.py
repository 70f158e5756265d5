"""The decoded splits of tensorflow-datasets kept between runs: tensorflow-datasets decodes every image (a PNG) on
each load, a second or more per run on 2 cores, so `common.data.loader` keeps the decoded train and test splits of
a dataset in one `.npz` in `cache_dir()` and reads them there the next time.

A cache file is named by the dataset's prepared files (`path_for`), written whole and renamed into place (`write`),
and read only whole (`read`); of the runs that start together one decodes while the others wait (`one_at_a_time`).
Anything that goes wrong with the cache (no folder, a truncated file, no locks) only means decoding again.
"""

import contextlib
import hashlib
import json
import os
import tempfile
from typing import Optional, Tuple

try:
  import fcntl  # POSIX: the lock of `one_at_a_time`
except ImportError:  # elsewhere the runs that start together each decode
  fcntl = None

import numpy as np

# The variable that names the cache's folder (`cache_dir`).
CACHE_ENV = "SDAE_DATA_CACHE"
# The arrays of a cache file, as tensorflow-datasets gives them: images uint8 [N, H, W, C], labels int64 [N].
ARRAYS = ("train_images", "train_labels", "test_images", "test_labels")


def cache_dir() -> Optional[str]:
  """The folder of decoded tfds splits: $SDAE_DATA_CACHE, else $XDG_CACHE_HOME/sdae_pretraining, else
  ~/.cache/sdae_pretraining; None (no cache) when $SDAE_DATA_CACHE is set to "" or "off"."""
  chosen = os.environ.get(CACHE_ENV)
  if chosen is not None:
    return None if chosen in ("", "off") else chosen
  return os.path.join(os.environ.get("XDG_CACHE_HOME") or os.path.expanduser(os.path.join("~", ".cache")),
                      "sdae_pretraining")


def path_for(dataset: str, folder: str) -> Optional[str]:
  """The cache file of the dataset prepared in `folder`, named by its files' names, sizes and modification times (a
  dataset prepared again is decoded again); None without a cache."""
  cache = cache_dir()
  if not cache:
    return None
  files = sorted((e.name, e.stat().st_size, e.stat().st_mtime_ns) for e in os.scandir(folder))
  key = hashlib.sha256(json.dumps([dataset, os.path.abspath(folder), files]).encode()).hexdigest()[:20]
  return os.path.join(cache, f"{dataset.replace('/', '_')}_{key}.npz")


@contextlib.contextmanager
def one_at_a_time(path: Optional[str]):
  """Holds an exclusive lock on <path>.lock while the block runs, so that of the runs that start together one decodes
  and the others then read its file; no lock without a cache or where none can be taken."""
  lock = None
  if path and fcntl is not None:
    try:
      os.makedirs(os.path.dirname(path), exist_ok=True)
      lock = open(path + ".lock", "a")
      fcntl.flock(lock, fcntl.LOCK_EX)
    except OSError:  # e.g. a file system without locks
      if lock:
        lock.close()
      lock = None
  try:
    yield
  finally:
    if lock:
      lock.close()  # the lock goes with the file (and with the process, if it dies)


def read(path: Optional[str]) -> Optional[Tuple[np.ndarray, ...]]:
  """The arrays kept at `path` (`ARRAYS`, in that order), or None when there is no cache, no file yet, or one that
  cannot be read (a truncated file, ...); never raises."""
  if not path:
    return None
  try:
    with np.load(path) as kept:
      return tuple(kept[k] for k in ARRAYS)
  except Exception:  # no file yet, or an unreadable one: decode
    return None


def write(path: Optional[str], arrays: Tuple[np.ndarray, ...]) -> None:
  """Keeps `arrays` (`ARRAYS`, in that order) at `path`, written whole under another name and then renamed, so a reader
  never sees a part; a cache that cannot be written is left out (the next run decodes again); never raises OSError."""
  if not path:
    return
  partial = None
  try:
    os.makedirs(os.path.dirname(path), exist_ok=True)
    fd, partial = tempfile.mkstemp(suffix=".partial", dir=os.path.dirname(path))
    with os.fdopen(fd, "wb") as f:
      np.savez(f, **dict(zip(ARRAYS, arrays)))
    os.replace(partial, path)
  except OSError:
    if partial and os.path.exists(partial):
      os.remove(partial)
