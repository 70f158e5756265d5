"""Any data in (`--dataset`, `common.data.sources`): Fashion-MNIST through every program, an equivalence on it, your own
arrays giving MNIST's weights when they hold MNIST, the record naming its data, the pictures, and every bad dataset
refused in one line before any training with nothing written."""

import concurrent.futures
import json
import os

import numpy as np
import pytest
import tensorflow as tf

from common.artifacts import runlog
from common.base import errors
from common.data import loader as data
from common.data import sources as datasets
from common.settings import programs

from conftest import run_module, shared_keys

TINY = dict(hidden_units=(24, 16), pretrain_epochs=2, finetune_epochs=1, train_examples=400, batch_size=40,
            pretrain_learning_rate=0.05, seed=2)


def _config(program, tmp_path, name, **kw):
  return program.make_config(**dict(TINY, results_dir=str(tmp_path), run_name=name,
                                    export_weights=str(tmp_path / f"{name}.npz"), **kw))


def _max_difference(a, b):
  keys = shared_keys(a, b)
  return max(float(np.max(np.abs(a[k] - b[k]))) for k in keys)


def test_every_program_trains_fashion_mnist_end_to_end(tmp_path):
  """Each program as a user types it (a process of its own: the asynchronous program's in-process cluster cannot be
  stopped), with its record naming the data and its two pictures beside it."""
  flags = ["--dataset=fashion_mnist", "--hidden_units=24,16", "--pretrain_epochs=2", "--finetune_epochs=1",
           "--train_examples=400", "--batch_size=40", "--pretrain_learning_rate=0.05", "--progress=log",
           f"--results_dir={tmp_path}"]
  with concurrent.futures.ThreadPoolExecutor(max_workers=3) as pool:
    procs = {p.name: pool.submit(run_module, p.module, *flags, f"--run_name={p.name}",
                                 f"--num_devices={p.devices_for(2)}", timeout=600) for p in programs.PROGRAMS}
  for name, future in procs.items():
    proc = future.result()
    assert proc.returncode == 0, (name, proc.stderr[-3000:])
    with open(tmp_path / f"{name}.json") as f:
      record = json.load(f)
    assert record["dataset"] == {"name": "fashion_mnist", "tfds": "fashion_mnist", "version": "3.0.1",
                                 "input_units": 784, "image_shape": [28, 28, 1], "classes": 10,
                                 "examples": {"train": 400, "validation": 5000, "test": 10000}}, name
    assert record["config"]["dataset"] == "fashion_mnist" and 0 < record["finetune"]["test_accuracy"] <= 1, name
    assert record["pictures"] == [f"{name}_filters.png", f"{name}_reconstructions.png"], name
    for picture in record["pictures"]:
      assert 1000 < os.path.getsize(tmp_path / picture) <= 300_000, picture


def test_pipeline_on_fashion_mnist_is_the_same_on_one_and_two_devices(tmp_path):
  pp = programs.PIPELINE_PARALLEL
  library = pp.load_library()
  library.train(_config(pp, tmp_path, "one", dataset="fashion_mnist", finetune_epochs=0))
  library.train(_config(pp, tmp_path, "two", dataset="fashion_mnist", finetune_epochs=0, num_devices=2,
                      pipeline_chunk_steps=3))
  one, two = (runlog.load_weights(str(tmp_path / f"{n}.npz")) for n in ("one", "two"))
  assert _max_difference(one, two) <= 1e-5
  library.train(_config(pp, tmp_path, "m", finetune_epochs=0))
  assert _max_difference(one, runlog.load_weights(str(tmp_path / "m.npz"))) > 1e-3  # other data, other weights


def _mnist_as_npz(path, n):
  """MNIST's first n training examples (after its 5,000 validation ones), its validation and test splits, as uint8
  [N, 28, 28] arrays: the splits given explicitly."""
  full = data.load_mnist()
  as_bytes = lambda x: np.rint(x * 255).astype(np.uint8).reshape(-1, 28, 28)  # noqa: E731
  np.savez(path, x=as_bytes(full.train_images[:n]), y=full.train_labels[:n], x_validation=as_bytes(
      full.validation_images), y_validation=full.validation_labels, x_test=as_bytes(full.test_images),
           y_test=full.test_labels)


def test_your_own_arrays_holding_mnist_give_mnists_weights(tmp_path):
  _mnist_as_npz(tmp_path / "mine.npz", 400)
  greedy = programs.GREEDY.load_library()
  mnist = greedy.train(_config(programs.GREEDY, tmp_path, "mnist"))
  mine = greedy.train(_config(programs.GREEDY, tmp_path, "mine", dataset=f"npz:{tmp_path}/mine.npz"))
  assert _max_difference(runlog.load_weights(str(tmp_path / "mnist.npz")),
                         runlog.load_weights(str(tmp_path / "mine.npz"))) == 0.0
  assert mine["finetune"]["test_accuracy"] == mnist["finetune"]["test_accuracy"]
  assert mine["dataset"]["file"] == str(tmp_path / "mine.npz") and len(mine["dataset"]["sha256"]) == 64
  assert mine["dataset"]["examples"] == {"train": 400, "validation": 5000, "test": 10000}


def test_npz_split_and_class_rules(tmp_path):
  rng = np.random.default_rng(0)
  x, y = rng.random((700, 12)).astype(np.float32), np.arange(700) % 3
  np.savez(tmp_path / "flat.npz", x=x, y=y)
  info, arrays = datasets.load_npz(f"npz:{tmp_path}/flat.npz")
  # 700 examples: the last 100 (a seventh) are the test set, the first 60 of the other 600 (a tenth) validation.
  assert (info.train, info.validation, info.test, info.num_classes, info.image_shape) == (540, 60, 100, 3, (12,))
  np.testing.assert_array_equal(arrays["test_images"], x[600:])
  np.testing.assert_array_equal(arrays["validation_images"], x[:60])
  np.testing.assert_array_equal(arrays["train_labels"], y[60:600])
  np.savez(tmp_path / "unlabelled.npz", x=(x * 255).astype(np.uint8).reshape(700, 3, 4))
  info, arrays = datasets.load_npz(f"npz:{tmp_path}/unlabelled.npz")
  assert info.num_classes is None and arrays["train_labels"] is None and info.image_shape == (3, 4, 1)
  assert datasets.chance_accuracy(10) == pytest.approx(0.12)


def test_flat_data_pretrains_without_labels_and_skips_the_filter_picture(tmp_path):
  rng = np.random.default_rng(1)
  np.savez(tmp_path / "flat.npz", x=rng.random((600, 30)).astype(np.float32))
  p = programs.MODEL_PARALLEL
  record = p.load_library().train(_config(p, tmp_path, "flat", dataset=f"npz:{tmp_path}/flat.npz", finetune_epochs=0,
                                        num_devices=2, pictures=True, batch_size=20, train_examples=None))
  assert record["finetune"] is None and record["dataset"]["classes"] is None
  assert record["dataset"]["examples"]["train"] == record["config"]["train_examples"] == 600 - 85 - 51
  assert record["pictures"] == ["flat_reconstructions.png"]


def test_a_dataset_without_a_test_split_or_features_is_refused(monkeypatch):
  import tensorflow_datasets as tfds

  class Builder:
    def __init__(self, features, splits):
      self.info = type("Info", (), {"features": features, "splits": splits, "version": "1.0.0"})()

    def is_prepared(self):
      return True

  image = type("Image", (), {"shape": (8, 8, 1)})()
  label = type("Label", (), {"num_classes": 4})()
  split = type("Split", (), {"num_examples": 100})()
  monkeypatch.setattr(tfds, "builder", lambda name, data_dir=None: Builder({"image": image, "label": label},
                                                                          {"train": split}))
  with pytest.raises(errors.DataError, match="no train and test split"):
    data.describe("fake_no_test")
  monkeypatch.setattr(tfds, "builder", lambda name, data_dir=None: Builder({"text": image}, {"train": split}))
  with pytest.raises(errors.DataError, match="no \"image\" and \"label\" features"):
    data.describe("fake_text")
  big = datasets.Info("big", (4096, 1024), 10, 1_100_000, 5000, 100, {})
  with pytest.raises(errors.DataError, match="more than the masking noise can index"):
    datasets.check_fits(big, big.train)
  datasets.check_fits(big, 1000)  # --train_examples makes it fit


def _bad_npz(tmp):
  """{case: (file contents as np.savez keyword arrays or raw bytes, flags, words the one error line holds)}."""
  rng = np.random.default_rng(3)
  x = rng.integers(0, 256, (300, 6, 6), dtype=np.uint8)
  y = np.arange(300) % 4
  return {
      "missing_file": (None, [], "no such file"),
      "unreadable": (b"not a zip file", [], "not a readable .npz file"),
      "no_x": ({"images": x}, [], "holds no array x"),
      "x_rank": ({"x": x.reshape(-1)}, [], "x must be [N, D], [N, H, W] or [N, H, W, C]"),
      "x_dtype": ({"x": x.astype(np.int32), "y": y}, [], "must be uint8 (scaled by 1/255) or float in [0, 1], got int32"),
      "varying_size": ({"x": x, "y": y, "x_test": x[:, :5, :5], "y_test": y}, [], "every example must have one shape"),
      "out_of_range": ({"x": x.astype(np.float32), "y": y}, [], "found values from 0 to 255"),
      "nan": ({"x": np.where(x > 250, np.nan, x / 255.0).astype(np.float32), "y": y}, [], "NaN or infinite"),
      "y_length": ({"x": x, "y": y[:-1]}, [], "one class id per example of x (300)"),
      "y_outside": ({"x": x, "y": y, "num_classes": np.int64(3)}, [], "class ids in 0..2, found 0 to 3"),
      "class_missing": ({"x": x, "y": np.where(y == 2, 3, y)}, [], "class 2 does not"),
      "no_labels_finetune": ({"x": x}, ["--finetune_epochs=1"], "has no labels (no y)"),
      "batch_above_data": ({"x": x[:60], "y": y[:60]}, ["--batch_size=100"], "larger than the training data"),
      "train_examples_above": ({"x": x, "y": y}, ["--train_examples=5000"], "--train_examples must be in 1.."),
  }


def test_every_bad_dataset_is_refused_in_one_line_before_training_with_nothing_written(tmp_path):
  cases = _bad_npz(tmp_path)
  runs = {}
  with concurrent.futures.ThreadPoolExecutor(max_workers=4) as pool:
    for case, (contents, flags, _) in cases.items():
      path = tmp_path / f"{case}.npz"
      if isinstance(contents, bytes):
        path.write_bytes(contents)
      elif contents is not None:
        np.savez(path, **contents)
      out = tmp_path / case
      runs[case] = pool.submit(run_module, programs.GREEDY.module, f"--dataset=npz:{path}", "--hidden_units=8",
                               "--pretrain_epochs=1", "--finetune_epochs=0", "--batch_size=10", "--progress=log",
                               f"--results_dir={out}/runs", f"--model_dir={out}/model", f"--export_weights={out}/w.npz",
                               *flags, timeout=300)
    for name, flags, words in (("unknown_tfds", ["--dataset=no_such_dataset_here"], "has no dataset of that name"),
                               ("not_prepared", ["--dataset=kmnist"], "there is no network to download it")):
      out = tmp_path / name
      runs[name] = pool.submit(run_module, programs.GREEDY.module, *flags, "--hidden_units=8", "--pretrain_epochs=1",
                               "--finetune_epochs=0", f"--results_dir={out}/runs", f"--model_dir={out}/model",
                               timeout=300)
      cases[name] = (None, flags, words)
  online = data._online(timeout=2.0)
  for case, future in runs.items():
    if case == "not_prepared" and online:
      continue  # With a network tfds would download it.
    proc = future.result()
    assert proc.returncode != 0, (case, proc.stderr[-2000:])
    assert "Traceback" not in proc.stderr, (case, proc.stderr[-3000:])
    lines = [l for l in proc.stderr.splitlines() if l.startswith("error:") or "Flags parsing error" in l]
    assert len(lines) == 1 and cases[case][2] in lines[0], (case, proc.stderr[-2000:])
    assert " epoch 1/" not in proc.stderr and "Available datasets" not in proc.stderr, case
    assert not os.path.exists(tmp_path / case), (case, list(os.walk(tmp_path / case)))


def test_a_checkpoint_of_other_data_is_not_resumed(tmp_path):
  greedy = programs.GREEDY.load_library()
  model = str(tmp_path / "model")
  greedy.train(_config(programs.GREEDY, tmp_path, "m", finetune_epochs=0, model_dir=model))
  with pytest.raises(errors.ResumeMismatchError, match="dataset: checkpoint 'mnist' vs now 'fashion_mnist'"):
    greedy.train(_config(programs.GREEDY, tmp_path, "f", finetune_epochs=0, model_dir=model, dataset="fashion_mnist"))
  assert not (tmp_path / "f.json").exists() and not (tmp_path / "f.npz").exists()
  # Your own arrays are known by their content: other arrays at the same path are other data.
  rng = np.random.default_rng(4)
  path, model = tmp_path / "own.npz", str(tmp_path / "own_model")
  np.savez(path, x=rng.random((700, 10)).astype(np.float32))
  greedy.train(_config(programs.GREEDY, tmp_path, "a", finetune_epochs=0, model_dir=model, dataset=f"npz:{path}"))
  np.savez(path, x=rng.random((700, 10)).astype(np.float32))
  with pytest.raises(errors.ResumeMismatchError, match="dataset_sha256"):
    greedy.train(_config(programs.GREEDY, tmp_path, "b", finetune_epochs=0, model_dir=model, dataset=f"npz:{path}"))


def test_tensorboard_gets_the_filters_and_reconstructions(tmp_path):
  p = programs.GREEDY
  p.load_library().train(_config(p, tmp_path, "tb", finetune_epochs=0, tensorboard_dir=str(tmp_path / "tb")))
  tags = set()
  for event_file in (tmp_path / "tb" / "tb").iterdir():
    for event in tf.compat.v1.train.summary_iterator(str(event_file)):
      tags |= {v.tag for v in event.summary.value}
  assert {"pretrain/filters", "pretrain/reconstructions", "pretrain/layer1/train_loss"} <= tags
