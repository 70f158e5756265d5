"""Errors a user can cause and fix; the programs print them as one line (`print_line`) and exit non-zero."""

import sys


def print_line(text: str) -> None:
  """Writes `text` and its newline to stderr in one write, flushed. `print` writes them in two, and a log line of
  another thread (TensorFlow's coordinator logs about the same lost worker) can land between them, inside the line."""
  sys.stderr.write(text + "\n")
  sys.stderr.flush()


class UserError(Exception):
  """Base class: a problem with the command, the data or the model directory, not a bug."""


class DataUnavailableError(UserError):
  """The dataset could not be loaded (no local copy and no network)."""


class DataError(UserError):
  """The dataset cannot be trained on as given (`--dataset`): unknown, malformed, or too small for the flags."""


class TrainingDivergedError(UserError):
  """A loss became NaN or infinite; the last good checkpoint is kept."""


class ResumeMismatchError(UserError):
  """`--model_dir` holds a checkpoint written with a different training configuration."""


class OutputPathError(UserError):
  """An output location (--results_dir, --export_weights, --model_dir, ...) cannot be written."""


class ModelDirInUseError(UserError):
  """Another running process holds the lock of `--model_dir`."""


class CheckpointUnusableError(UserError):
  """`--model_dir` holds checkpoint data, but no checkpoint in it can be restored."""


class ReportedByAnotherTaskError(UserError):
  """An error every task of a cluster's job step finds alike (a Slurm task count that does not fit the program): task
  0 prints it as the job's one line, every other task exits non-zero without printing it (`common.run.cli`)."""
