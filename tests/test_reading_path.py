"""A schedule readable top-down (docs/design.md, "Reading a schedule"): from `python -m <program>.train` to the first
SGD update, the Python stack holds at most MAX_FILES of the project's files and MAX_FRAMES of its frames, and the
program's own `pretrain.py` is on it (its `train` calls the lifecycle and its schedule; no forwarder in between)."""

import json
import os
import subprocess

import pytest

from common.settings import programs
from conftest import ROOT, SLICE_EXAMPLES, python

MAX_FILES, MAX_FRAMES = 4, 10
# The programs whose path the issue measured; the others are printed by the probe for the reader.
MEASURED = (programs.MODEL_PARALLEL, programs.PIPELINE_PARALLEL, programs.GREEDY)


@pytest.mark.parametrize("program", MEASURED, ids=lambda p: p.name)
def test_the_path_from_the_command_to_the_update_is_short(tmp_path, program):
  proc = subprocess.run([python(), os.path.join(ROOT, "tests", "reading_path_probe.py"), program.module,
                         "--hidden_units=16,16", "--pretrain_epochs=1", "--finetune_epochs=0", "--batch_size=40",
                         f"--train_examples={SLICE_EXAMPLES // 5}", "--num_devices=2", "--nopictures",
                         "--progress=log", f"--results_dir={tmp_path}"], cwd=ROOT, capture_output=True, text=True,
                        env=dict(os.environ, PYTHONPATH=ROOT), timeout=600)
  assert proc.returncode == 0, proc.stderr[-3000:]
  path = json.loads(proc.stdout.strip().splitlines()[-1])
  assert path["frames"][0] == f"{program.name}/train.py:<module>", path
  assert f"{program.name}/pretrain.py:train" in path["frames"], path
  assert f"{program.name}/pretrain.py:pretrain" in path["frames"], path
  assert len(path["files"]) <= MAX_FILES and len(path["frames"]) <= MAX_FRAMES, path
  assert path["frames"][-1].startswith("common/"), path  # the update itself is shared
