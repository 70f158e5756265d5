"""Glue shared by the `*/train.py` entry points: stray-argument check, error reporting, summary."""

import sys
from typing import Any, Callable, Dict, Sequence

from absl import app

from common import errors


def reject_extra_args(argv: Sequence[str]) -> None:
  """Raises app.UsageError when positional arguments follow the program name."""
  if len(argv) > 1:
    raise app.UsageError(f"Unexpected positional arguments: {' '.join(argv[1:])}")


def run_program(run: Callable[..., Dict[str, Any]], config: Any) -> Dict[str, Any]:
  """Calls `run(config)`; a UserError or ValueError becomes one "error: ..." line and exit status 1.

  Returns:
    The run record. Logs the headline numbers.
  """
  try:
    record = run(config)
  except (errors.UserError, ValueError) as e:
    print(f"error: {e}", file=sys.stderr)
    sys.exit(1)
  summary = f"pretraining {record['pretrain_seconds']:.1f} s"
  if record.get("finetune"):
    f = record["finetune"]
    summary += f", finetuning {f['seconds']:.1f} s, test accuracy {f['test_accuracy']:.4f}"
  print(f"{config.strategy}: {summary} (total {record['total_seconds']:.1f} s)")
  return record
