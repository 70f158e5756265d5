"""Model-parallel pretraining on a small slice of real MNIST: the schedule, the equivalences
(G = 1 equals greedy, G = H equals sync_layerwise), more layers than devices, the run record, resume
after SIGKILL, and the divergence guard."""

import json
import os

import numpy as np
import pytest
import tensorflow as tf

from common.artifacts import runlog
from common.base import errors
from common.model import autoencoder
from common.settings import config as config_lib
from greedy import pretrain as greedy
from model_parallel import pretrain as model_parallel
from common.layerwise import schedule as schedule_lib
from common.settings import programs
from sync_layerwise import pretrain as sync_layerwise
from conftest import SLICE_EXAMPLES, run_module, shared_keys

# Start the runtime now with conftest's logical devices: a program's `devices.setup` called before the
# runtime is initialised would otherwise replace them with its own --num_devices.
assert len(tf.config.list_logical_devices("CPU")) >= 3

# A learning rate large enough that the weights move far from their initial values in a few epochs.
LEARNING_RATE = 0.05


def _config(tmp_path, name, **kw):
  base = dict(program=programs.MODEL_PARALLEL.name, hidden_units=(64, 32), pretrain_epochs=2, finetune_epochs=0,
              train_examples=SLICE_EXAMPLES, batch_size=50, pretrain_learning_rate=LEARNING_RATE, seed=3,
              results_dir=str(tmp_path), run_name=name, export_weights=str(tmp_path / f"{name}.npz"))
  base.update(kw)
  return config_lib.Config(**base)


def _assert_same_weights(a, b, hidden_units, seed=3):
  wa, wb = runlog.load_weights(a), runlog.load_weights(b)
  keys = shared_keys(wa, wb)
  assert [k for k in keys if not k.startswith("finetuned/")] == sorted(
      f"layer{i}/{v}" for i in range(1, len(hidden_units) + 1) for v in ("kernel", "bias", "decoder_bias"))
  for key in keys:
    np.testing.assert_allclose(wa[key], wb[key], rtol=0, atol=1e-5, err_msg=key)
  # The comparison means something only if training moved every layer well away from its initialisation.
  sizes = [784] + list(hidden_units)
  for i in range(len(hidden_units)):
    initial = autoencoder.sigmoid_glorot_uniform(sizes[i], sizes[i + 1], seed, i + 1).numpy()
    assert np.abs(wa[f"layer{i + 1}/kernel"] - initial).max() > 1e-2, i


def test_schedule_groups_steps_and_epochs():
  s = schedule_lib.Schedule(num_layers=4, num_devices=2, epochs=3)
  assert s.groups == [[0, 1], [2, 3]]
  assert [s.epochs_of(i) for i in range(4)] == [4, 3, 4, 3]
  assert [(st.group, st.step, st.active) for st in s.steps(1)] == [(1, 0, (2,)), (1, 1, (2, 3)), (1, 2, (2, 3)),
                                                                    (1, 3, (2, 3))]
  odd = schedule_lib.Schedule(num_layers=3, num_devices=2, epochs=3)
  assert odd.groups == [[0, 1], [2]] and [odd.epochs_of(i) for i in range(3)] == [4, 3, 3]
  greedy_like = schedule_lib.Schedule(num_layers=3, num_devices=1, epochs=2)
  assert [(st.group, st.step, st.active) for st in greedy_like.all_steps()] == [
      (0, 0, (0,)), (0, 1, (0,)), (1, 0, (1,)), (1, 1, (1,)), (2, 0, (2,)), (2, 1, (2,))]
  sync_like = schedule_lib.Schedule(num_layers=3, num_devices=3, epochs=2)
  assert [st.active for st in sync_like.all_steps()] == [(0,), (0, 1), (0, 1, 2), (0, 1, 2)]
  # Per-layer epoch times 1 s and 2 s, E = 3: greedy 9 s; model parallel 1 + 3 * 2 = 7 s; sync 1 + 3 * 3 = 10 s.
  two = schedule_lib.Schedule(num_layers=2, num_devices=2, epochs=3)
  assert two.critical_path([1.0, 2.0]) == 7.0 and two.critical_path([1.0, 2.0], concurrent=False) == 10.0
  with pytest.raises(ValueError, match="num_devices"):
    schedule_lib.Schedule(num_layers=2, num_devices=0, epochs=3)


def test_one_device_equals_greedy(tmp_path):
  greedy.train(_config(tmp_path, programs.GREEDY.name, program=programs.GREEDY.name))
  record = model_parallel.train(_config(tmp_path, "mp1", num_devices=1))
  _assert_same_weights(str(tmp_path / "greedy.npz"), str(tmp_path / "mp1.npz"), (64, 32))
  assert [len(l["epochs"]) for l in record["layers"]] == [2, 2]
  assert record["schedule"]["groups"] == [[1], [2]]


def test_one_device_per_layer_equals_sync_layerwise_and_record_is_complete(tmp_path):
  hidden = (64, 48, 32)
  sync = sync_layerwise.train(_config(tmp_path, "sync", program=programs.SYNC_LAYERWISE.name, hidden_units=hidden))
  record = model_parallel.train(_config(tmp_path, "mp3", hidden_units=hidden, num_devices=3))
  _assert_same_weights(str(tmp_path / "sync.npz"), str(tmp_path / "mp3.npz"), hidden)
  for a, b in zip(record["layers"], sync["layers"]):
    assert [e["loss"] for e in a["epochs"]] == pytest.approx([e["loss"] for e in b["epochs"]], abs=1e-4)

  on_disk = json.load(open(tmp_path / "mp3.json"))
  for field in runlog.REQUIRED_FIELDS + ("schedule",):
    assert field in on_disk, field
  assert on_disk["strategy"] == programs.MODEL_PARALLEL.name
  devices = on_disk["environment"]["devices"]
  assert len(devices) == 3
  # Layer j on device j, trained E + G - 1 - j epochs from step j on.
  for j, layer in enumerate(on_disk["layers"]):
    assert (layer["index"], layer["units"], layer["device"], layer["group"]) == (j + 1, hidden[j], devices[j], 0)
    assert [e["step"] for e in layer["epochs"]] == list(range(j, 4))
    assert all(e["loss"] > 0 and e["seconds"] > 0 for e in layer["epochs"])
  schedule = on_disk["schedule"]
  assert schedule["num_devices"] == 3 and schedule["groups"] == [[1, 2, 3]]
  assert [s["active_layers"] for s in schedule["steps"]] == [[1], [1, 2], [1, 2, 3], [1, 2, 3]]
  for s in schedule["steps"]:
    assert set(s["busy_seconds"]) == set(devices)
    assert s["wall_seconds"] > 0 and s["copy_seconds"] > 0
    assert s["idle_seconds"] == pytest.approx(sum(s["wall_seconds"] - b for b in s["busy_seconds"].values()))
  timing = on_disk["timing"]
  assert {"compile", "pretrain_train", "weight_copy", "idle", "checkpoint"} <= set(timing)
  assert timing["pretrain_train"] == pytest.approx(sum(s["wall_seconds"] for s in schedule["steps"]))
  assert timing["weight_copy"] == pytest.approx(sum(s["copy_seconds"] for s in schedule["steps"]))
  assert on_disk["pretrain_seconds"] == pytest.approx(timing["pretrain_train"] + timing["weight_copy"])
  # The first step has only layer 1 busy: the two other devices idle for the whole step.
  first = schedule["steps"][0]
  assert first["busy_seconds"][devices[1]] == first["busy_seconds"][devices[2]] == 0.0
  assert first["idle_seconds"] >= 2 * first["wall_seconds"] - 1e-9


@pytest.mark.parametrize("hidden", [(64, 48, 32), (64, 48, 40, 32)], ids=["3_layers", "4_layers"])
def test_more_layers_than_devices_runs_group_after_group(tmp_path, hidden):
  epochs = 2
  record = model_parallel.train(_config(tmp_path, "mp", hidden_units=hidden, num_devices=2, pretrain_epochs=epochs))
  devices = record["environment"]["devices"]
  h = len(hidden)
  groups = [[1, 2], [3]] if h == 3 else [[1, 2], [3, 4]]
  assert record["schedule"]["groups"] == groups
  for i, layer in enumerate(record["layers"]):
    group, position = divmod(i, 2)
    size = len(groups[group])
    assert layer["group"] == group and layer["device"] == devices[position]
    # Position j of a group of g layers: steps j .. E + g - 2, i.e. E + g - 1 - j epochs; the top layer E.
    assert [e["step"] for e in layer["epochs"]] == list(range(position, epochs + size - 1)), i
  assert len(record["layers"][h - 1]["epochs"]) == epochs
  steps = record["schedule"]["steps"]
  assert [(s["group"], s["step"]) for s in steps] == [
      (g, s) for g, members in enumerate(groups) for s in range(epochs + len(members) - 1)]
  # The next group starts only after the previous one has ended.
  assert all(a["group"] <= b["group"] for a, b in zip(steps, steps[1:]))
  if h == 3:  # The lone third layer: the second device idles for its whole group.
    assert all(s["busy_seconds"][devices[1]] == 0.0 for s in steps if s["group"] == 1)
  weights = runlog.load_weights(str(tmp_path / "mp.npz"))
  assert all(np.isfinite(w).all() for w in weights.values())
  assert weights[f"layer{h}/kernel"].shape == (hidden[-2], hidden[-1])


def test_resume_after_sigkill_equals_uninterrupted_run(tmp_path):
  hidden = (64, 48, 32)
  flags = ["--hidden_units=64,48,32", "--num_devices=2", "--pretrain_epochs=2", "--finetune_epochs=1",
           f"--train_examples={SLICE_EXAMPLES}", "--batch_size=50", f"--pretrain_learning_rate={LEARNING_RATE}",
           "--seed=3", "--progress=log", f"--model_dir={tmp_path / 'model'}", f"--results_dir={tmp_path}",
           "--run_name=resumed", f"--export_weights={tmp_path}/resumed.npz"]
  # Checkpoints: steps 1-3 of group 1 ([1, 2]), steps 1-2 of group 2 ([3]), finetune epoch 1. Killed
  # after the 2nd, inside group 1, where the frozen copy of layer 1 on the second device must come back
  # as it was at the end of step 2; then resumed to the end with the ordinary command.
  killed = run_module("tests.kill_at_checkpoint", "--library=model_parallel.pretrain", "--kill_after_checkpoint=2",
                      *flags)
  assert killed.returncode == -9, killed.stderr[-3000:]
  assert not os.path.exists(tmp_path / "resumed.npz")
  final = run_module(programs.MODEL_PARALLEL.module, *flags)
  assert final.returncode == 0, final.stderr[-3000:]
  assert "group 1/2 step 2/3" not in final.stderr and "group 1/2 step 3/3: layer 1@CPU:0" in final.stderr
  base = model_parallel.train(_config(tmp_path, "base", hidden_units=hidden, num_devices=2, finetune_epochs=1))
  _assert_same_weights(str(tmp_path / "base.npz"), str(tmp_path / "resumed.npz"), hidden)
  resumed = json.load(open(tmp_path / "resumed.json"))
  assert resumed["resumed"] is True
  assert [len(l["epochs"]) for l in resumed["layers"]] == [3, 2, 2]
  assert len(resumed["schedule"]["steps"]) == 5
  for a, b in zip(base["layers"], resumed["layers"]):
    assert [e["loss"] for e in a["epochs"]] == pytest.approx([e["loss"] for e in b["epochs"]], abs=1e-4)
  assert resumed["finetune"]["test_accuracy"] == pytest.approx(base["finetune"]["test_accuracy"], abs=1e-3)


def test_nan_loss_stops_with_clear_error_and_keeps_last_good_checkpoint(tmp_path):
  model_dir = str(tmp_path / "model")

  def poison_layer_2_after_second_step(run):
    if run.checkpoints_saved == 2:
      run.layers[1].kernel.assign(tf.fill(run.layers[1].kernel.shape, float("nan")))

  with pytest.raises(errors.TrainingDivergedError, match="layer 2 became nan in step 3 of group 1"):
    model_parallel.train(_config(tmp_path, "nan", num_devices=2, model_dir=model_dir),
                       on_checkpoint=poison_layer_2_after_second_step)
  record = model_parallel.train(_config(tmp_path, "nan", num_devices=2, model_dir=model_dir))
  assert record["resumed"]
  assert all(np.isfinite(w).all() for w in runlog.load_weights(str(tmp_path / "nan.npz")).values())


@pytest.mark.parametrize("kernels", ["xla", "tf"])
def test_shared_thread_pool_gives_the_same_weights(tmp_path, kernels):
  """The cost-balanced placement on CPU (one intra-op pool of G x threads shared by the devices, the default)
  changes where the work runs, not what is computed: the same weights as one thread per device, per kernel path."""
  flags = ["--hidden_units=64,48", "--num_devices=2", "--pretrain_epochs=2", "--finetune_epochs=0",
           f"--train_examples={SLICE_EXAMPLES}", "--batch_size=50", f"--pretrain_learning_rate={LEARNING_RATE}",
           "--seed=3", "--progress=log", f"--results_dir={tmp_path}", f"--kernels={kernels}"]
  for pool in ("per_device", "shared"):
    proc = run_module(programs.MODEL_PARALLEL.module, *flags, f"--thread_pool={pool}", f"--run_name={pool}",
                      f"--export_weights={tmp_path / pool}.npz")
    assert proc.returncode == 0, proc.stderr[-3000:]
  _assert_same_weights(str(tmp_path / "per_device.npz"), str(tmp_path / "shared.npz"), (64, 48))
  env = {pool: json.load(open(tmp_path / f"{pool}.json"))["environment"] for pool in ("per_device", "shared")}
  # The cause of the difference: the size of the one intra-op pool the devices share.
  assert (env["per_device"]["thread_pool"], env["per_device"]["intra_op_threads"]) == ("per_device", 1)
  assert (env["shared"]["thread_pool"], env["shared"]["intra_op_threads"]) == ("shared", 2)
