"""Finetuning placed on the devices three ways (`--finetune_placement`): replicas splitting every batch, the first
device alone, and the classifier's layers pipelined over the devices with micro-batches (GPipe). Each keeps the
mathematics of one-device finetuning: from the same pretrained weights, the finetuned weights agree to 1e-5."""

import numpy as np
import pytest

from common.artifacts import runlog
from common.measure import cost
from common.settings import programs
from common.settings import processor_defaults
from common.training import finetune
from common.training import finetune_pipeline

from conftest import SLICE_EXAMPLES

BASE = dict(hidden_units=(48, 24), pretrain_epochs=1, finetune_epochs=2, train_examples=SLICE_EXAMPLES, batch_size=100,
            pretrain_learning_rate=0.05, finetune_learning_rate=0.2, seed=4)


def _finetuned(tmp_path, name, **kw):
  """The finetuned weights of a greedy run (it pretrains on the first device whatever the devices)."""
  greedy = programs.GREEDY
  record = greedy.load_library().train(greedy.make_config(**dict(
      BASE, results_dir=str(tmp_path), run_name=name, export_weights=str(tmp_path / f"{name}.npz"), **kw)))
  weights = runlog.load_weights(str(tmp_path / f"{name}.npz"))
  return record["finetune"], {k: v for k, v in weights.items() if k.startswith("finetuned/")}


@pytest.mark.parametrize("placement,devices", [("replicas", 2), ("one_device", 2), ("pipelined", 2),
                                               ("pipelined", 3)])
def test_every_placement_finetunes_what_one_device_finetunes(tmp_path, placement, devices):
  _, one = _finetuned(tmp_path, "one", num_devices=1)
  fine, got = _finetuned(tmp_path, "got", num_devices=devices, finetune_placement=placement)
  assert fine["placement"] == placement and fine["replicas"] == (devices if placement == "replicas" else 1)
  assert sorted(got) == sorted(one) and len(one) == 6
  assert max(float(np.abs(got[k] - one[k]).max()) for k in one) <= 1e-5
  start = _finetuned(tmp_path, "none", num_devices=1, finetune_epochs=0)  # finetuning moved the weights
  assert start[1] == {}


@pytest.mark.parametrize("precision", ["float32", "mixed_bfloat16"])
def test_either_kernel_path_finetunes_what_the_other_finetunes(tmp_path, precision):
  """--finetune_kernels: XLA and TensorFlow's kernels give the same weights to float rounding in either precision
  (bfloat16's products round alike on both paths: the tolerance is bfloat16's)."""
  runs = {k: _finetuned(tmp_path, k, num_devices=1, precision=precision, finetune_kernels=k)[1] for k in ("xla", "tf")}
  assert sorted(runs["xla"]) == sorted(runs["tf"]) and len(runs["tf"]) == 6
  tolerance = 1e-5 if precision == "float32" else 2e-2
  assert max(float(np.abs(runs["xla"][k] - runs["tf"][k]).max()) for k in runs["tf"]) <= tolerance


def test_pipelined_stages_balance_the_classifiers_layers():
  names = ["/device:CPU:0", "/device:CPU:1", "/device:CPU:2"]
  # 784x2000, 2000x2000 x 3, 2000x10: the first two layers on one device, the next ones on the other.
  assert finetune_pipeline.layer_devices((2000,) * 4, 784, 10, names[:2]) == [names[0]] * 2 + [names[1]] * 3
  assert finetune_pipeline.layer_devices((48, 24), 784, 10, names) == names
  assert finetune_pipeline.micro_batches(100) == 4 and finetune_pipeline.micro_batches(30) == 3
  assert cost.partition([1, 1, 1, 1], 2) == [[0, 1], [2, 3]]


def test_auto_is_the_benchmarks_choice_where_its_threads_are_there(tmp_path):
  for precision in programs.PRECISIONS:
    chosen = processor_defaults.choice("finetune_placement", precision)[0] or finetune.DEFAULT_PLACEMENT
    assert chosen in finetune.PLACEMENTS
    assert finetune.auto_placement(precision, "shared", 2) == chosen
    assert finetune.auto_placement(precision, "per_device", 1) == chosen
    # One device of a per-device pool has one device's threads: not what the benchmark measured as one_device.
    assert finetune.auto_placement(precision, "per_device", 2) == ("replicas" if chosen == "one_device" else chosen)
  for pool in ("per_device", "shared"):
    fine, _ = _finetuned(tmp_path, pool, num_devices=2, thread_pool=pool)
    assert fine["placement"] == finetune.auto_placement(programs.PRECISIONS[0], pool, 2)
