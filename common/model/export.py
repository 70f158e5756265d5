"""The model a run hands out (`--export_model=DIR`): a TensorFlow SavedModel that encodes, reconstructs and
classifies new data, loadable by any TensorFlow or Keras user without this repository (`tf.saved_model.load(DIR)`,
`keras.layers.TFSMLayer(DIR, call_endpoint="predict")`, TF Serving).

Signatures, each on float32 inputs [None, D] in [0, 1] (D the run's data's inputs), with fixed output names:
  encode        "codes": float32 [None, h_L], the top layer's codes, and "codes_1" ... "codes_L", each layer's
                (h_k = sigmoid(h_{k-1} W_k + b_k), h_0 the inputs), with the pretrained weights;
  reconstruct   "reconstruction": float32 [None, D], the codes of the top layer decoded back through every layer
                (x = sigmoid(h W_k^T + c_k), k = L .. 1), with the pretrained weights;
  predict       (a run that finetuned) "probabilities": float32 [None, K], the softmax of the finetuned classifier's
                logits, and "classes": int64 [None], their argmax;
  serving_default  predict when the run finetuned, else encode;
  metadata      (no inputs) "input_units", "num_classes" (0 without labels), "hidden_units" int64, "dataset" and
                "program" strings.
Every variable is a fresh float32 copy of the run's weights (`loaded.variables`), whatever --precision was and
wherever the strategy kept them, so a model trained in bfloat16 runs on any processor.
"""

import os
import time
from typing import Any, Dict, List, Optional

import numpy as np
import tensorflow as tf

from common.model import graph

SIGNATURES = ("encode", "reconstruct", "predict")
FINETUNED_PREFIX = "finetuned/"


def classifier_weights(classifier) -> Dict[str, np.ndarray]:
  """The finetuned classifier as float32 arrays under `FINETUNED_PREFIX` keys: "finetuned/layerN/kernel" [in, out],
  "finetuned/layerN/bias" [out] for each hidden layer, "finetuned/output/kernel" [h_L, K], "finetuned/output/bias"
  [K] (the `--export_weights` file holds them beside the pretrained "layerN/..." keys)."""
  out = {}
  for i, (kernel, bias) in enumerate(zip(classifier.kernels, classifier.biases)):
    out[f"{FINETUNED_PREFIX}layer{i + 1}/kernel"] = kernel.numpy()
    out[f"{FINETUNED_PREFIX}layer{i + 1}/bias"] = bias.numpy()
  out[f"{FINETUNED_PREFIX}output/kernel"] = classifier.output_kernel.numpy()
  out[f"{FINETUNED_PREFIX}output/bias"] = classifier.output_bias.numpy()
  return out


def classify(kernels: List, biases: List, output_kernel, output_bias, inputs: tf.Tensor) -> tf.Tensor:
  """float32 [b, D] -> float32 [b, K] logits of the classifier (sigmoid hidden layers, linear output), float32
  products: the one computation of the run's test accuracy (`common.training.finetune.Classifier.predict`) and of the
  exported `predict`, so both agree to the example."""
  h = inputs
  for kernel, bias in zip(kernels, biases):
    h = tf.sigmoid(tf.matmul(h, kernel) + bias)
  return tf.matmul(h, output_kernel) + output_bias


class ExportedModel(tf.Module):
  """The SavedModel's object (module docstring).

  Args:
    weights: {"layerN/kernel", "layerN/bias", "layerN/decoder_bias"} float32 arrays of the pretrained stack, and
      when the run finetuned the `classifier_weights` keys.
    metadata: {"dataset": str, "program": str}.
  """
  variables = None  # A tracked list (not tf.Module's property), so that the loaded object has `.variables`.

  def __init__(self, weights: Dict[str, np.ndarray], metadata: Dict[str, str]):
    super().__init__(name="stacked_denoising_autoencoder")
    layers = sum(1 for k in weights if k.startswith("layer") and k.endswith("/kernel"))
    variable = lambda key: tf.Variable(np.asarray(weights[key], np.float32), trainable=False,  # noqa: E731
                                       name=key.replace("/", "_"))
    with self.name_scope:
      self.pretrained = [[variable(f"layer{k}/{n}") for n in ("kernel", "bias", "decoder_bias")]
                         for k in range(1, layers + 1)]
      self.finetuned = None
      if f"{FINETUNED_PREFIX}output/kernel" in weights:
        self.finetuned = [[variable(f"{FINETUNED_PREFIX}layer{k}/{n}") for n in ("kernel", "bias")]
                          for k in range(1, layers + 1)] + [[variable(f"{FINETUNED_PREFIX}output/{n}")
                                                             for n in ("kernel", "bias")]]
    self.variables = [v for group in self.pretrained + (self.finetuned or []) for v in group]
    inputs = [tf.TensorSpec([None, int(weights["layer1/kernel"].shape[0])], tf.float32, name="inputs")]
    hidden = [int(weights[f"layer{k}/kernel"].shape[1]) for k in range(1, layers + 1)]
    classes = int(weights[f"{FINETUNED_PREFIX}output/kernel"].shape[1]) if self.finetuned else 0
    self.encode = graph.function(self._encode, input_signature=inputs)
    self.reconstruct = graph.function(self._reconstruct, input_signature=inputs)
    self.predict = graph.function(self._predict, input_signature=inputs, jit_compile=True) if self.finetuned else None
    self.metadata = graph.function(lambda: {
        "input_units": tf.constant(inputs[0].shape[1], tf.int64), "num_classes": tf.constant(classes, tf.int64),
        "hidden_units": tf.constant(hidden, tf.int64), "dataset": tf.constant(metadata["dataset"]),
        "program": tf.constant(metadata["program"])}, input_signature=[])

  def _codes(self, inputs: tf.Tensor) -> List[tf.Tensor]:
    codes = [inputs]
    for kernel, bias, _ in self.pretrained:
      codes.append(tf.sigmoid(tf.matmul(codes[-1], kernel) + bias))
    return codes[1:]

  def _encode(self, inputs: tf.Tensor) -> Dict[str, tf.Tensor]:
    codes = self._codes(inputs)
    return {"codes": codes[-1], **{f"codes_{k + 1}": c for k, c in enumerate(codes)}}

  def _reconstruct(self, inputs: tf.Tensor) -> Dict[str, tf.Tensor]:
    x = self._codes(inputs)[-1]
    for kernel, _, decoder_bias in reversed(self.pretrained):
      x = tf.sigmoid(tf.matmul(x, kernel, transpose_b=True) + decoder_bias)
    return {"reconstruction": x}

  def _predict(self, inputs: tf.Tensor) -> Dict[str, tf.Tensor]:
    hidden, (output_kernel, output_bias) = self.finetuned[:-1], self.finetuned[-1]
    logits = classify([k for k, _ in hidden], [b for _, b in hidden], output_kernel, output_bias, inputs)
    return {"probabilities": tf.nn.softmax(logits), "classes": tf.argmax(logits, axis=1, output_type=tf.int64)}

  def signatures(self) -> Dict[str, Any]:
    """{name: concrete function} of every signature (module docstring)."""
    out = {name: getattr(self, name).get_concrete_function() for name in SIGNATURES if getattr(self, name)}
    out["metadata"] = self.metadata.get_concrete_function()
    out["serving_default"] = out["predict" if self.finetuned else "encode"]
    return out


def save(path: str, weights: Dict[str, np.ndarray], metadata: Dict[str, str]) -> Dict[str, Any]:
  """Writes the SavedModel of `weights` (see `ExportedModel`) to the directory `path`.

  Returns:
    The run record's "export_model": {"path", "signatures", "seconds" (to build and write it), "bytes" (on disk)}.

  Raises:
    OSError: the directory cannot be written.
  """
  start = time.perf_counter()
  with tf.device("/cpu:0"):
    model = ExportedModel(weights, metadata)
  signatures = model.signatures()
  tf.saved_model.save(model, path, signatures=signatures)
  size = sum(os.path.getsize(os.path.join(folder, f)) for folder, _, files in os.walk(path) for f in files)
  return {"path": os.path.abspath(path), "signatures": sorted(signatures), "seconds": time.perf_counter() - start,
          "bytes": size}


def load_metadata(path: str) -> Optional[Dict[str, Any]]:
  """The `metadata` signature's values of the SavedModel at `path` as Python values, or None when `path` holds no
  SavedModel."""
  if not os.path.exists(os.path.join(path, "saved_model.pb")):
    return None
  values = tf.saved_model.load(path).signatures["metadata"]()
  return {k: (v.numpy().decode() if v.dtype == tf.string else v.numpy().tolist()) for k, v in values.items()}
