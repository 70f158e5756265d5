"""A launcher for the limit benchmark's interference measure: `python -m experiments.beside <module> <flags>` runs
`python -m <module> <flags>` as usual (its record, its exit status) while a second copy of it runs beside it, started
first, with twice the pretraining epochs (so that it outlasts the first's pretraining), writing nothing (no record,
checkpoints or exports) and stopped when the first ends: each on its own core of two, so the first's seconds are one
core's with a neighbour as busy as itself (`experiments.benchmarks.limit`)."""

import os
import signal
import subprocess
import sys

# Flags of the copy beside: it writes nothing.
_QUIET = ("--results_dir=", "--nopictures", "--progress=log")
_DROPPED = ("--results_dir", "--run_name", "--model_dir", "--export_weights", "--export_model", "--tensorboard_dir",
            "--profile_dir")


def main(argv) -> int:
  """Runs argv[0] as a module with argv[1:] beside a quiet copy; returns its exit status."""
  module, flags = argv[0], argv[1:]
  quiet = [f"--pretrain_epochs={2 * int(f.split('=', 1)[1])}" if f.startswith("--pretrain_epochs=") else f
           for f in flags if not f.startswith(_DROPPED)] + list(_QUIET)
  neighbour = subprocess.Popen([sys.executable, "-m", module, *quiet], stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL, start_new_session=True)
  try:
    return subprocess.run([sys.executable, "-m", module, *flags]).returncode
  finally:
    if neighbour.poll() is None:
      os.killpg(neighbour.pid, signal.SIGTERM)
    neighbour.wait()


if __name__ == "__main__":
  sys.exit(main(sys.argv[1:]))
