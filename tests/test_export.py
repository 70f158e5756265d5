"""A model out (`--export_model`, `common.model.export`; `common.predict`): a SavedModel loadable without this repository
that gives the run's test accuracy, follows the equivalences of the weights, survives a SIGKILL and a resume, holds
float32 variables after bfloat16 training, and a command for new data that refuses bad input in one line."""

import concurrent.futures
import json
import os
import subprocess
import sys

import numpy as np
import pytest
import tensorflow as tf

from common.artifacts import runlog
from common.model import autoencoder
from common.model import export
from common.model import precision
from common.settings import programs
from common.training import finetune

from conftest import SLICE_EXAMPLES, python, run_module

BASE = dict(hidden_units=(48, 24), pretrain_epochs=2, finetune_epochs=2, train_examples=SLICE_EXAMPLES, batch_size=50,
            pretrain_learning_rate=0.05, finetune_learning_rate=0.1, seed=3)


def _train(program, tmp_path, name, **kw):
  config = program.make_config(**dict(BASE, results_dir=str(tmp_path), run_name=name,
                                      export_model=str(tmp_path / f"{name}_model"),
                                      export_weights=str(tmp_path / f"{name}.npz"), **kw))
  return program.load_library().train(config)


def _variables(path):
  return {v.name: v.numpy() for v in tf.saved_model.load(str(path)).variables}


def _max_difference(a, b):
  assert sorted(a) == sorted(b)
  return max(float(np.max(np.abs(a[k] - b[k]))) for k in a)


@pytest.fixture(scope="module")
def greedy_run(tmp_path_factory):
  tmp = tmp_path_factory.mktemp("export")
  return tmp, _train(programs.GREEDY, tmp, "g")


_OUTSIDE = """
import json, sys
import numpy as np, tensorflow as tf, keras
assert not any("common" == m.split(".")[0] for m in sys.modules)
model_dir, images_path, out_path = sys.argv[1:]
tf.config.threading.set_intra_op_parallelism_threads(1)  # as the test process computes its reference
images, labels = np.load(images_path)["x"], np.load(images_path)["y"]
model = tf.saved_model.load(model_dir)
assert all(v.dtype == tf.float32 for v in model.variables) and model.variables
meta = {k: v.numpy().decode() if v.dtype == tf.string else v.numpy().tolist()
        for k, v in model.signatures["metadata"]().items()}
outputs = {}
for name in ("encode", "reconstruct", "predict"):
  parts = [model.signatures[name](inputs=tf.constant(images[s:s + 5000])) for s in range(0, len(images), 5000)]
  outputs.update({f"{name}/{k}": np.concatenate([p[k].numpy() for p in parts]) for k in parts[0]})
layer = keras.layers.TFSMLayer(model_dir, call_endpoint="predict")
keras_classes = np.concatenate([np.asarray(layer(images[s:s + 5000])["classes"]) for s in range(0, len(images), 5000)])
accuracy = float(np.mean(outputs["predict/classes"] == labels))
np.savez(out_path, **outputs)
print(json.dumps({"accuracy": accuracy, "keras_accuracy": float(np.mean(keras_classes == labels)),
                  "serving": sorted(model.signatures), "meta": meta}))
"""


def test_the_saved_model_loads_without_this_repository_and_gives_the_runs_accuracy(greedy_run, mnist, tmp_path):
  tmp, record = greedy_run
  np.savez(tmp_path / "test.npz", x=mnist.test_images, y=mnist.test_labels)
  outside = tmp_path / "elsewhere"
  outside.mkdir()
  env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
  proc = subprocess.run([python(), "-c", _OUTSIDE, str(tmp / "g_model"), str(tmp_path / "test.npz"),
                         str(tmp_path / "outputs.npz")], cwd=outside, env=env, capture_output=True, text=True,
                        timeout=300)
  assert proc.returncode == 0, proc.stderr[-3000:]
  result = json.loads(proc.stdout.strip().splitlines()[-1])
  assert result["accuracy"] == result["keras_accuracy"] == record["finetune"]["test_accuracy"]
  assert result["serving"] == ["encode", "metadata", "predict", "reconstruct", "serving_default"]
  assert result["meta"] == {"input_units": 784, "num_classes": 10, "hidden_units": [48, 24], "dataset": "mnist",
                            "program": programs.GREEDY.name}
  # The same outputs as the project's own model, in this process, from the exported weights.
  weights = runlog.load_weights(str(tmp / "g.npz"))
  layers = autoencoder.build_stack(BASE["hidden_units"], 0, 784)
  classifier = finetune.Classifier(BASE["hidden_units"], 0, 784, 10)
  for i, layer in enumerate(layers):
    for var, key in zip(layer.weights, ("kernel", "bias", "decoder_bias")):
      var.assign(weights[f"layer{i + 1}/{key}"])
    classifier.kernels[i].assign(weights[f"finetuned/layer{i + 1}/kernel"])
    classifier.biases[i].assign(weights[f"finetuned/layer{i + 1}/bias"])
  classifier.output_kernel.assign(weights["finetuned/output/kernel"])
  classifier.output_bias.assign(weights["finetuned/output/bias"])
  want = {}
  for start in range(0, len(mnist.test_images), 5000):  # The batches the other process used.
    x = tf.constant(mnist.test_images[start:start + 5000])
    codes = [x]
    for layer in layers:
      codes.append(layer.encode(codes[-1]))
    back = codes[-1]
    for layer in reversed(layers):
      back = tf.sigmoid(layer.decoder_logits(back))
    for key, value in (("encode/codes", codes[-1]), ("encode/codes_1", codes[1]), ("encode/codes_2", codes[2]),
                       ("reconstruct/reconstruction", back), ("predict/probabilities",
                                                              tf.nn.softmax(classifier.logits(x))),
                       ("predict/classes", classifier.predict(x))):
      want.setdefault(key, []).append(value.numpy())
  got = np.load(tmp_path / "outputs.npz")
  for key, parts in want.items():
    np.testing.assert_allclose(got[key], np.concatenate(parts), rtol=0, atol=1e-6, err_msg=key)
  assert record["export_model"]["bytes"] > 4 * sum(w.size for w in weights.values())


def test_exports_follow_the_equivalences(greedy_run, tmp_path):
  tmp, _ = greedy_run
  greedy = _variables(tmp / "g_model")
  _train(programs.DATA_PARALLEL, tmp_path, "dp", num_devices=2, profile_steps=0)
  _train(programs.MODEL_PARALLEL, tmp_path, "mp", num_devices=1)
  for name in ("dp", "mp"):
    assert _max_difference(greedy, _variables(tmp_path / f"{name}_model")) <= 1e-5, name
  _train(programs.PIPELINE_PARALLEL, tmp_path, "pp1")
  _train(programs.PIPELINE_PARALLEL, tmp_path, "pp2", num_devices=2)
  assert _max_difference(_variables(tmp_path / "pp1_model"), _variables(tmp_path / "pp2_model")) <= 1e-5
  # Pretraining only: no predict, and serving_default is encode.
  _train(programs.GREEDY, tmp_path, "pre", finetune_epochs=0)
  loaded = tf.saved_model.load(str(tmp_path / "pre_model"))
  assert sorted(loaded.signatures) == ["encode", "metadata", "reconstruct", "serving_default"]
  assert sorted(loaded.signatures["serving_default"].structured_outputs) == ["codes", "codes_1", "codes_2"]


def test_a_model_exported_after_a_sigkill_and_resume_equals_the_uninterrupted_one(tmp_path):
  flags = ["--hidden_units=32,16", "--pretrain_epochs=2", "--finetune_epochs=2", "--train_examples=600",
           "--batch_size=50", "--pretrain_learning_rate=0.05", "--progress=log", "--nopictures"]
  base = run_module(programs.GREEDY.module, *flags, f"--results_dir={tmp_path}", "--run_name=base",
                    f"--export_model={tmp_path}/base_model")
  assert base.returncode == 0, base.stderr[-2000:]
  resumable = [*flags, f"--results_dir={tmp_path}", "--run_name=resumed", f"--model_dir={tmp_path}/model",
               f"--export_model={tmp_path}/resumed_model"]
  killed = run_module("tests.kill_at_checkpoint", "--library=greedy.pretrain", "--kill_after_checkpoint=5", *resumable)
  assert killed.returncode == -9 and not (tmp_path / "resumed_model" / "saved_model.pb").exists()
  resumed = run_module(programs.GREEDY.module, *resumable)
  assert resumed.returncode == 0, resumed.stderr[-2000:]
  assert _max_difference(_variables(tmp_path / "base_model"), _variables(tmp_path / "resumed_model")) == 0.0


def test_a_bfloat16_model_exports_float32_variables(tmp_path, mnist):
  """The layers and classifier of a mixed_bfloat16 run hold float32 variables and compute their products in
  bfloat16; the export copies the variables, so the SavedModel predicts in float32 on any processor."""
  layers = autoencoder.build_stack((32, 16), 5, 784, precision=precision.MIXED_BFLOAT16)
  classifier = finetune.Classifier((32, 16), 5, 784, 10, precision=precision.MIXED_BFLOAT16)
  weights = dict(runlog.layer_weights(layers), **export.classifier_weights(classifier))
  export.save(str(tmp_path / "bf16"), weights, {"dataset": "mnist", "program": programs.GREEDY.name})
  loaded = tf.saved_model.load(str(tmp_path / "bf16"))
  assert loaded.variables and all(v.dtype == tf.float32 for v in loaded.variables)
  out = loaded.signatures["predict"](inputs=tf.constant(mnist.test_images[:100]))
  assert out["probabilities"].dtype == tf.float32 and out["classes"].dtype == tf.int64
  np.testing.assert_array_equal(out["classes"].numpy(), classifier.predict(tf.constant(mnist.test_images[:100])))


_NATIVE = precision.native_cpu_bfloat16(*precision.read_cpu_flags())


@pytest.mark.skipif(not _NATIVE, reason="this processor has no native bfloat16: --precision=mixed_bfloat16 is refused")
def test_a_bfloat16_runs_saved_model_predicts_with_float32_variables(tmp_path, mnist):
  record = _train(programs.GREEDY, tmp_path, "bf16", precision=precision.MIXED_BFLOAT16)
  loaded = tf.saved_model.load(str(tmp_path / "bf16_model"))
  assert all(v.dtype == tf.float32 for v in loaded.variables)
  classes = loaded.signatures["predict"](inputs=tf.constant(mnist.test_images))["classes"].numpy()
  assert abs(np.mean(classes == mnist.test_labels) - record["finetune"]["test_accuracy"]) <= 0.01


def test_the_command_for_new_data_classifies_and_refuses_bad_input(greedy_run, tmp_path):
  tmp, record = greedy_run
  model = f"--model={tmp / 'g_model'}"
  rng = np.random.default_rng(0)
  np.save(tmp_path / "narrow.npy", rng.random((5, 100)).astype(np.float32))
  np.save(tmp_path / "bright.npy", rng.random((5, 784)).astype(np.float32) * 2)
  np.save(tmp_path / "nan.npy", np.full((5, 784), np.nan, np.float32))
  np.savez(tmp_path / "images.npz", x=rng.integers(0, 256, (7, 28, 28), dtype=np.uint8))
  cases = {
      "classify": ([model, "--signature=predict", "--dataset=mnist", "--split=test", f"--output={tmp_path}/p.npy"],
                   None),
      "encode": ([model, "--signature=encode", f"--input={tmp_path}/images.npz", f"--output={tmp_path}/c.npz"], None),
      "missing_model": ([f"--model={tmp_path}/nothing", f"--input={tmp_path}/images.npz", f"--output={tmp_path}/x.npy"],
                        "holds no SavedModel"),
      "width": ([model, f"--input={tmp_path}/narrow.npy", f"--output={tmp_path}/x.npy"],
                "100 values per example, the model takes 784"),
      "range": ([model, f"--input={tmp_path}/bright.npy", f"--output={tmp_path}/x.npy"], "must be in [0, 1]"),
      "nan": ([model, f"--input={tmp_path}/nan.npy", f"--output={tmp_path}/x.npy"], "NaN or infinite"),
      "signature": ([model, "--signature=classify", f"--input={tmp_path}/images.npz", f"--output={tmp_path}/x.npy"],
                    "--signature"),
  }
  with concurrent.futures.ThreadPoolExecutor(max_workers=4) as pool:
    procs = {k: pool.submit(run_module, "common.predict", *flags, timeout=300) for k, (flags, _) in cases.items()}
  for case, (_, words) in cases.items():
    proc = procs[case].result()
    if words is None:
      assert proc.returncode == 0, (case, proc.stderr[-2000:])
      continue
    lines = [l for l in proc.stderr.splitlines() if l.startswith("error:") or "Flags parsing error" in l]
    assert proc.returncode != 0 and len(lines) == 1 and words in lines[0], (case, proc.stderr[-2000:])
    assert "Traceback" not in proc.stderr and not os.path.exists(tmp_path / "x.npy"), case
  assert f"accuracy {record['finetune']['test_accuracy']:.4f}" in procs["classify"].result().stdout
  assert np.load(tmp_path / "p.npy").shape == (10_000, 10)
  with np.load(tmp_path / "c.npz") as codes:
    assert codes["codes"].shape == (7, 24) and codes["codes_1"].shape == (7, 48)
