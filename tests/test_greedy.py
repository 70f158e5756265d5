"""Greedy pretraining + finetuning on a small slice of real MNIST: learning, the run record,
resume after SIGKILL, and the divergence guard."""

import json
import os

import numpy as np
import pytest
import tensorflow as tf

from common.artifacts import runlog
from common.base import errors
from common.settings import config as config_lib
from common.settings import programs
from greedy import pretrain
from conftest import SLICE_EXAMPLES, run_module, shared_keys

SMALL = ["--hidden_units=64,32", "--pretrain_epochs=2", "--finetune_epochs=2", f"--train_examples={SLICE_EXAMPLES}",
         "--batch_size=50", "--pretrain_learning_rate=0.01", "--seed=1", "--progress=log"]


def _config(tmp_path, **kw):
  base = dict(program=programs.GREEDY.name, hidden_units=(64, 32), pretrain_epochs=2, finetune_epochs=0,
              train_examples=SLICE_EXAMPLES, batch_size=50, pretrain_learning_rate=0.01, seed=1,
              results_dir=str(tmp_path / "runs"), run_name="run")
  base.update(kw)
  return config_lib.Config(**base)


def test_finetuning_beats_chance_by_far_and_record_is_complete(tmp_path):
  config = _config(tmp_path, hidden_units=(256,), pretrain_epochs=3, finetune_epochs=5, train_examples=5000,
                   export_weights=str(tmp_path / "w.npz"))
  record = pretrain.train(config)
  assert record["finetune"]["test_accuracy"] > 0.85  # chance is 0.10
  # The reconstruction loss falls from epoch to epoch.
  losses = [e["loss"] for e in record["layers"][0]["epochs"]]
  assert losses[-1] < losses[0]
  # Every field of the run record (common/artifacts/runlog.py), in the file on disk.
  on_disk = json.load(open(tmp_path / "runs" / "run.json"))
  for field in runlog.REQUIRED_FIELDS:
    assert field in on_disk, field
  assert on_disk["strategy"] == programs.GREEDY.name
  for field in ("hidden_units", "pretrain_epochs", "finetune_epochs", "batch_size", "num_devices",
                "threads_per_device", "corruption", "pretrain_learning_rate", "finetune_learning_rate",
                "train_examples", "seed", "data_dir", "model_dir", "results_dir", "run_name", "export_weights"):
    assert field in on_disk["config"], field
  for field in ("tensorflow", "device_kind", "devices", "cpu_count", "cpu_model", "hostname"):
    assert field in on_disk["environment"], field
  assert on_disk["environment"]["device_kind"] == "CPU-logical"
  layer = on_disk["layers"][0]
  assert layer["index"] == 1 and layer["units"] == 256 and layer["device"]
  assert len(layer["epochs"]) == 3 and all(e["seconds"] > 0 and e["loss"] > 0 for e in layer["epochs"])
  assert on_disk["pretrain_seconds"] == pytest.approx(sum(e["seconds"] for e in layer["epochs"]))
  for field in ("epochs", "seconds", "validation_accuracy", "test_accuracy"):
    assert field in on_disk["finetune"], field
  assert {"compile", "pretrain_train", "finetune_train"} <= set(on_disk["timing"])
  weights = runlog.load_weights(str(tmp_path / "w.npz"))
  assert sorted(weights) == ["finetuned/layer1/bias", "finetuned/layer1/kernel", "finetuned/output/bias",
                             "finetuned/output/kernel", "layer1/bias", "layer1/decoder_bias", "layer1/kernel"]
  assert weights["finetuned/output/kernel"].shape == (256, 10)
  np.testing.assert_array_equal(weights["layer1/kernel"].shape, weights["finetuned/layer1/kernel"].shape)
  assert np.abs(weights["layer1/kernel"] - weights["finetuned/layer1/kernel"]).max() > 0  # finetuning moved it
  assert weights["layer1/kernel"].shape == (784, 256) and weights["layer1/kernel"].dtype == np.float32


def test_same_seed_same_weights_and_seed_matters(tmp_path):
  a = pretrain.train(_config(tmp_path, export_weights=str(tmp_path / "a.npz"), pretrain_epochs=1))
  b = pretrain.train(_config(tmp_path, export_weights=str(tmp_path / "b.npz"), pretrain_epochs=1))
  c = pretrain.train(_config(tmp_path, export_weights=str(tmp_path / "c.npz"), pretrain_epochs=1, seed=2))
  wa, wb, wc = (runlog.load_weights(str(tmp_path / f"{n}.npz")) for n in "abc")
  for key in wa:
    np.testing.assert_array_equal(wa[key], wb[key])
  assert not np.allclose(wa["layer2/kernel"], wc["layer2/kernel"])
  assert a["layers"][1]["epochs"][0]["loss"] == b["layers"][1]["epochs"][0]["loss"]


def test_resume_after_sigkill_equals_uninterrupted_run(tmp_path):
  base = run_module(programs.GREEDY.module, *SMALL, f"--export_weights={tmp_path}/base.npz",
                    f"--results_dir={tmp_path}", "--run_name=base")
  assert base.returncode == 0, base.stderr[-3000:]
  model_dir = tmp_path / "model"
  resumable = SMALL + [f"--model_dir={model_dir}", f"--export_weights={tmp_path}/resumed.npz",
                       f"--results_dir={tmp_path}", "--run_name=resumed"]
  # Checkpoints: layer 1 epochs 1-2, layer 2 epochs 1-2, finetune epochs 1-2.
  # Killed after the 3rd (inside layer 2's pretraining), then after the 2nd of the resumed
  # process (inside finetuning), then resumed to the end with the ordinary command.
  for kill_after in (3, 2):
    killed = run_module("tests.kill_at_checkpoint", "--library=greedy.pretrain",
                        f"--kill_after_checkpoint={kill_after}", *resumable)
    assert killed.returncode == -9, killed.stderr[-3000:]
    assert not os.path.exists(tmp_path / "resumed.npz")
  final = run_module(programs.GREEDY.module, *resumable)
  assert final.returncode == 0, final.stderr[-3000:]
  want = runlog.load_weights(str(tmp_path / "base.npz"))
  got = runlog.load_weights(str(tmp_path / "resumed.npz"))
  for key in shared_keys(want, got):
    np.testing.assert_allclose(got[key], want[key], rtol=0, atol=1e-6, err_msg=key)
  base_record = json.load(open(tmp_path / "base.json"))
  resumed_record = json.load(open(tmp_path / "resumed.json"))
  assert resumed_record["resumed"] is True
  assert resumed_record["finetune"]["test_accuracy"] == base_record["finetune"]["test_accuracy"]
  assert [len(l["epochs"]) for l in resumed_record["layers"]] == [2, 2]
  for a, b in zip(base_record["layers"], resumed_record["layers"]):
    assert [e["loss"] for e in a["epochs"]] == pytest.approx([e["loss"] for e in b["epochs"]], abs=1e-5)


def test_resume_refuses_a_different_configuration(tmp_path):
  model_dir = str(tmp_path / "model")
  pretrain.train(_config(tmp_path, model_dir=model_dir, pretrain_epochs=1))
  with pytest.raises(errors.ResumeMismatchError, match="pretrain_learning_rate"):
    pretrain.train(_config(tmp_path, model_dir=model_dir, pretrain_epochs=1, pretrain_learning_rate=0.02))


def test_nan_loss_stops_with_clear_error_and_keeps_last_good_checkpoint(tmp_path):
  model_dir = str(tmp_path / "model")

  def poison_after_first_epoch(run):
    if run.checkpoints_saved == 1:
      run.layers[0].kernel.assign(tf.fill(run.layers[0].kernel.shape, float("nan")))

  with pytest.raises(errors.TrainingDivergedError, match="layer 1 became nan in epoch 2"):
    pretrain.train(_config(tmp_path, model_dir=model_dir), on_checkpoint=poison_after_first_epoch)
  # The checkpoint on disk is the good one after epoch 1: resuming finishes with finite weights.
  record = pretrain.train(_config(tmp_path, model_dir=model_dir, export_weights=str(tmp_path / "w.npz")))
  assert record["resumed"]
  assert all(np.isfinite(w).all() for w in runlog.load_weights(str(tmp_path / "w.npz")).values())


@pytest.mark.parametrize("kernels", ["xla", "tf"])
def test_profile_dir_traces_one_epoch(tmp_path, kernels):
  """--profile_dir captures one profiler trace (of the first epoch trained, not of every epoch), on either kernel
  path, and the run records the path it took."""
  record = pretrain.train(_config(tmp_path, hidden_units=(64,), profile_dir=str(tmp_path / "trace"), kernels=kernels))
  traces = list((tmp_path / "trace").glob("plugins/profile/*/*.xplane.pb"))
  assert len(traces) == 1 and traces[0].stat().st_size > 0
  assert record["environment"]["kernels"] == kernels and len(record["layers"][0]["epochs"]) == 2
