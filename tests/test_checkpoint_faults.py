"""Faults on disk cost no finished run (issue 14, items 1, 3 and 4), through the library: outputs that cannot be
written at the end go to the working directory; a missing or garbled checkpoint state file recovers from the
checkpoint files; a corrupt newest checkpoint falls back to the older one, and nothing readable is refused with what
to do. Tiny configurations: each run takes seconds. The command-line refusals: tests/test_misuse.py."""

import dataclasses
import json
import os
import shutil

import numpy as np
import pytest

from common.artifacts import runlog
from common.base import errors
from common.settings import config as config_lib
from greedy import pretrain as greedy


def _config(tmp_path, **overrides):
  base = dict(hidden_units=(20, 20), pretrain_epochs=2, finetune_epochs=0, batch_size=50, train_examples=500,
              results_dir=str(tmp_path / "runs"), run_name="run", model_dir=str(tmp_path / "model"))
  base.update(overrides)
  return config_lib.Config(**base)


def test_outputs_that_fail_at_the_end_go_to_the_working_directory(tmp_path, monkeypatch):
  work = tmp_path / "work"
  work.mkdir()
  monkeypatch.chdir(work)
  results, weights = tmp_path / "runs", tmp_path / "weights"

  def break_outputs(_):  # After the checks passed: both output directories become files.
    for path in (results, weights):
      shutil.rmtree(path, ignore_errors=True)
      path.write_text("not a directory")

  config = _config(tmp_path, export_weights=str(weights / "w.npz"))
  record = greedy.train(config, on_checkpoint=break_outputs)
  assert record["layers"][0]["epochs"]
  assert json.load(open(work / "run.json"))["run_name"] == "run"
  assert set(runlog.load_weights(str(work / "w.npz"))) >= {"layer1/kernel", "layer2/kernel"}


@pytest.fixture
def trained(tmp_path):
  """A finished tiny run with checkpoints ckpt-1 and ckpt-2 (one per epoch of each layer; max 2 kept)."""
  config = _config(tmp_path, pretrain_epochs=1, export_weights=str(tmp_path / "first.npz"))
  record = greedy.train(config)
  return config, record, tmp_path


def test_missing_or_garbled_state_file_recovers_from_the_checkpoint_files(trained):
  config, first, tmp = trained
  model = tmp / "model"
  for damage in ("missing", "garbled"):
    if damage == "missing":
      os.remove(model / "checkpoint")
    else:
      (model / "checkpoint").write_text("garbage {{{")
    record = greedy.train(dataclasses.replace(config, export_weights=str(tmp / f"{damage}.npz")))
    assert record["resumed"] is True and record["resumed_from"].endswith("ckpt-2"), damage
    np.testing.assert_array_equal(runlog.load_weights(str(tmp / f"{damage}.npz"))["layer2/kernel"],
                                  runlog.load_weights(str(tmp / "first.npz"))["layer2/kernel"])
  # The flag-mismatch refusal still applies when the state file is gone.
  os.remove(model / "checkpoint")
  with pytest.raises(errors.ResumeMismatchError, match="seed"):
    greedy.train(dataclasses.replace(config, seed=3))


def test_corrupt_newest_checkpoint_falls_back_to_the_older_one(trained):
  config, first, tmp = trained
  model = tmp / "model"
  assert os.path.exists(model / "ckpt-1.index") and os.path.exists(model / "ckpt-2.index")
  (model / "ckpt-2.data-00000-of-00001").write_bytes(b"corrupt")
  record = greedy.train(dataclasses.replace(config, export_weights=str(tmp / "again.npz")))
  assert record["resumed_from"].endswith("ckpt-1")
  assert [os.path.basename(s["path"]) for s in record["skipped_checkpoints"]] == ["ckpt-2"]
  assert record["skipped_checkpoints"][0]["reason"]
  # Resuming from the older checkpoint retrains layer 2 exactly.
  np.testing.assert_array_equal(runlog.load_weights(str(tmp / "again.npz"))["layer2/kernel"],
                                runlog.load_weights(str(tmp / "first.npz"))["layer2/kernel"])
  # Nothing readable: refuse, say what to do, overwrite nothing.
  for name in os.listdir(model):
    if name.startswith("ckpt-") and name.endswith(".index"):
      (model / name).write_bytes(b"x")
  with pytest.raises(errors.CheckpointUnusableError, match="move them away"):
    greedy.train(config)
