"""Test helper: runs a program's library with the shared command-line flags and kills itself with
SIGKILL right after its K-th checkpoint (counted in this process), like a machine losing power.

Usage: python tests/kill_at_checkpoint.py --library=greedy.pretrain --kill_after_checkpoint=3 [flags]
"""

import importlib
import os
import signal
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from absl import app  # noqa: E402
from absl import flags  # noqa: E402

from common import flags as common_flags  # noqa: E402

_LIBRARY = flags.DEFINE_string("library", None, "Module with run(config, on_checkpoint=...).", required=True)
_KILL_AFTER = flags.DEFINE_integer("kill_after_checkpoint", 1, "Checkpoint after which to SIGKILL.")


def main(argv):
  del argv
  library = importlib.import_module(_LIBRARY.value)
  config = common_flags.config_from_flags(_LIBRARY.value.split(".")[0])

  def kill(run):
    if run.checkpoints_saved == _KILL_AFTER.value:
      os.kill(os.getpid(), signal.SIGKILL)

  library.run(config, on_checkpoint=kill)


if __name__ == "__main__":
  app.run(main)
