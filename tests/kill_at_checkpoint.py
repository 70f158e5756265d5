"""Test helper: runs a program's library with its command-line flags and kills itself with SIGKILL right after its
K-th checkpoint (counted in this process), like a machine losing power.

Usage: python tests/kill_at_checkpoint.py --library=greedy.pretrain --kill_after_checkpoint=3 [flags]
"""

import importlib
import os
import signal
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from absl import app  # noqa: E402
from absl import flags  # noqa: E402

from common.settings import flags as common_flags  # noqa: E402
from common.settings import programs  # noqa: E402

_LIBRARY = flags.DEFINE_string("library", None, "Module with train(config, on_checkpoint=...).", required=True)
_KILL_AFTER = flags.DEFINE_integer("kill_after_checkpoint", 1, "Checkpoint after which to SIGKILL.")
# The program's flags are known once its library is: read --library before absl parses the command line.
_PROGRAM = programs.get(next(a.split("=", 1)[1] for a in sys.argv if a.startswith("--library=")).split(".")[0])
common_flags.define(_PROGRAM.config)


def main(argv):
  del argv

  def kill(run):
    if run.checkpoints_saved == _KILL_AFTER.value:
      os.kill(os.getpid(), signal.SIGKILL)

  importlib.import_module(_LIBRARY.value).train(common_flags.config_from_flags(_PROGRAM), on_checkpoint=kill)


if __name__ == "__main__":
  app.run(main)
