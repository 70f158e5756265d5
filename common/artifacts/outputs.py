"""Where a run writes, checked before any work, and a fallback when writing still fails at the end.

A run writes its checkpoints (--model_dir), its run record (<--results_dir>/<--run_name>.json), its
exported weights (--export_weights) and model (--export_model), TensorBoard scalars (--tensorboard_dir) and a profiler trace
(--profile_dir). `check` creates each directory and proves it writable with a probe file before the
devices, the data or the model exist, so a typo costs seconds, not a training run. Should a write still
fail at the end (the disk filled up, the directory was removed), `write_with_fallback` writes to the
working directory instead and says where.
"""

import os
import tempfile
from typing import Callable, Optional, TypeVar

from absl import logging

from common.base import errors
from common.settings import config as config_lib

T = TypeVar("T")

WEIGHTS_SUFFIX = ".npz"


def weights_file(path: str) -> str:
  """The file `numpy.savez` writes for `path`: `path` itself when it ends in .npz, else path + ".npz"."""
  return path if path.endswith(WEIGHTS_SUFFIX) else path + WEIGHTS_SUFFIX


def check_run_name(name: Optional[str]) -> None:
  """Raises ValueError when --run_name would put the record outside --results_dir (a path separator,
  "." or "..") or is empty."""
  if name is None:
    return
  if not name.strip() or name in (".", "..") or "/" in name or (os.sep != "/" and os.sep in name):
    raise ValueError(f"--run_name must be a plain file name (no '/', not '.' or '..'), got {name!r}; "
                     "choose the directory with --results_dir.")


def _writable_directory(flag: str, directory: str) -> None:
  """Creates `directory` and writes and removes a probe file in it; raises OutputPathError otherwise."""
  if os.path.exists(directory) and not os.path.isdir(directory):
    raise errors.OutputPathError(f"--{flag}={directory} is a file, not a directory; give a directory.")
  try:
    os.makedirs(directory, exist_ok=True)
    with tempfile.NamedTemporaryFile(dir=directory, prefix=".write_probe_"):
      pass
  except OSError as e:
    raise errors.OutputPathError(
        f"--{flag}={directory} is not a writable directory ({e.strerror or e}); choose another.") from None


def check(config: config_lib.Config, chief: bool = True) -> None:
  """Checks every output location of `config` before any work: creates the directories and proves
  them writable.

  Args:
    config: the run's configuration.
    chief: False in the non-chief workers of a multi-worker run, which write only --model_dir's
      directory (shared with the chief) and nothing else.

  Raises:
    OutputPathError: one line naming the flag, for the first location that cannot be written.
  """
  try:
    check_run_name(config.run_name)
  except ValueError as e:
    raise errors.OutputPathError(str(e)) from None
  locations = [("model_dir", config.model_dir)]
  if chief:
    locations += [("results_dir", config.results_dir), ("tensorboard_dir", config.tensorboard_dir),
                  ("profile_dir", config.profile_dir)]
    if config.export_weights:
      if os.path.isdir(config.export_weights):
        raise errors.OutputPathError(
            f"--export_weights={config.export_weights} is a directory; give a file name such as weights.npz.")
      locations.append(("export_weights", os.path.dirname(os.path.abspath(config.export_weights))))
    if config.export_model:
      if os.path.isfile(config.export_model):
        raise errors.OutputPathError(f"--export_model={config.export_model} is a file; give a directory for the "
                                     "SavedModel.")
      locations.append(("export_model", config.export_model))
  for flag, directory in locations:
    if directory:
      _writable_directory(flag, directory)


def write_with_fallback(write: Callable[[str], T], path: str, what: str) -> T:
  """Calls `write(path)`; when that raises OSError, calls `write(<working directory>/<file name>)`.

  Args:
    write: writes the output to the path it is given and returns what it returns.
    path: where the output should go.
    what: names the output in the messages, e.g. "run record".

  Returns:
    What `write` returned.

  Raises:
    OSError: the fallback location failed as well.
  """
  try:
    return write(path)
  except OSError as e:
    fallback = os.path.join(os.getcwd(), os.path.basename(path))
    if os.path.abspath(fallback) == os.path.abspath(path):
      raise
    logging.error("Could not write the %s to %s (%s); writing it to %s instead.", what, path, e, fallback)
    result = write(fallback)
    logging.warning("The %s is in %s (not %s).", what, fallback, path)
    return result
