"""Runs an exported model (`--export_model`, `common.model.export`) on new data: encode, reconstruct or classify it.

  python -m common.predict --model=models/mnist --signature=predict --dataset=mnist --split=test --output=classes.npy
  python -m common.predict --model=models/mnist --signature=encode --input=my_images.npy --output=codes.npy

The input is `--input` (a .npy array, or a .npz holding `x`: [N, D], [N, H, W] or [N, H, W, C], uint8 scaled by
1/255 or float in [0, 1]), or a dataset and split named like the programs' `--dataset` (`--split` train, validation
or test; labels come with it). `--output` gets the signature's main output as a .npy (encode: the top codes,
reconstruct: the reconstructions, predict: the class probabilities), or every output by name as a .npz. With labels
and `--signature=predict` it prints the accuracy. Refused in one line before any work: a missing model, an input of
another width than the model's, values outside [0, 1], NaN, or a signature the model does not have.
"""

import os
import sys
from typing import Optional, Tuple

from absl import app
from absl import flags

import numpy as np

from common.base import errors
from common.data import sources as datasets

MAIN_OUTPUT = {"encode": "codes", "reconstruct": "reconstruction", "predict": "probabilities"}
SPLITS = ("train", "validation", "test")

_MODEL = flags.DEFINE_string("model", None, "The SavedModel directory a run wrote (--export_model).")
_SIGNATURE = flags.DEFINE_enum("signature", "predict", list(MAIN_OUTPUT), "The signature to run.")
_INPUT = flags.DEFINE_string("input", None, "A .npy of inputs, or a .npz holding x (and optionally y).")
_DATASET = flags.DEFINE_string("dataset", None, "Instead of --input: a dataset as the programs' --dataset names it.")
_SPLIT = flags.DEFINE_enum("split", "test", list(SPLITS), "The split of --dataset.")
_DATA_DIR = flags.DEFINE_string("data_dir", None, "TFDS data directory (default $TFDS_DATA_DIR).")
_OUTPUT = flags.DEFINE_string("output", None, "Where the outputs go: FILE.npy (the main one) or FILE.npz (all).")
_BATCH = flags.DEFINE_integer("batch_size", 5000, "Examples per call of the model.", lower_bound=1)


def read_inputs(path: Optional[str], dataset: Optional[str], split: str,
                data_dir: Optional[str] = None) -> Tuple[np.ndarray, Optional[np.ndarray]]:
  """(float32 [N, D] in [0, 1], int labels [N] or None) of `--input` or `--dataset`/`--split`.

  Raises:
    errors.DataError: missing or unreadable file, another rank or dtype, values outside [0, 1], NaN (one line).
  """
  if dataset:
    from common.data import loader as data  # noqa: imports TensorFlow
    d = data.load(dataset, data_dir, train_examples=None if split == "train" else 1)  # the split asked for only
    return getattr(d, f"{split}_images"), getattr(d, f"{split}_labels")
  if not path or not os.path.isfile(path):
    raise errors.DataError(f"--input={path}: no such file (give a .npy, or a .npz holding x).")
  try:
    with np.load(path, allow_pickle=False) as f:
      x, y = (f["x"], f["y"] if "y" in f.files else None) if hasattr(f, "files") else (f, None)
  except TypeError:  # A .npy is an array, not a context manager.
    x, y = np.load(path, allow_pickle=False), None
  except Exception as e:  # noqa: an unreadable file, or a .npz without x
    raise errors.DataError(f"--input={path} is not a readable .npy, or a .npz holding x ({type(e).__name__}: {e}).")
  return datasets.as_inputs(f"--input={path}", "x", np.asarray(x)), y


def run(model_dir: str, signature: str, x: np.ndarray, batch_size: int = 5000) -> dict:
  """{output name: array} of `signature` of the SavedModel at `model_dir` on `x` (float32 [N, D]), in batches.

  Raises:
    errors.UserError: no SavedModel there, no such signature, or inputs of another width (one line).
  """
  import tensorflow as tf  # noqa: only once the arguments are known to be good
  if not os.path.exists(os.path.join(model_dir, "saved_model.pb")):
    raise errors.UserError(f"--model={model_dir} holds no SavedModel (write one with --export_model=DIR).")
  model = tf.saved_model.load(model_dir)
  if signature not in model.signatures:
    raise errors.UserError(f"--signature={signature}: the model has {', '.join(sorted(model.signatures))} "
                           "(predict needs a run that finetuned).")
  width = int(model.signatures["metadata"]()["input_units"])
  if x.shape[1] != width:
    raise errors.UserError(f"the inputs have {x.shape[1]} values per example, the model takes {width}.")
  fn, parts = model.signatures[signature], []
  for start in range(0, len(x), batch_size):
    parts.append({k: v.numpy() for k, v in fn(inputs=tf.constant(x[start:start + batch_size])).items()})
  return {k: np.concatenate([p[k] for p in parts]) for k in parts[0]} if parts else {}


def main(argv) -> None:
  if len(argv) > 1:
    raise app.UsageError(f"Unexpected positional arguments: {' '.join(argv[1:])}")
  try:
    if bool(_INPUT.value) == bool(_DATASET.value):
      raise errors.UserError("give exactly one of --input=FILE and --dataset=NAME.")
    if not _MODEL.value:
      raise errors.UserError("--model=DIR is required: the directory of a run's --export_model.")
    if not _OUTPUT.value or not _OUTPUT.value.endswith((".npy", ".npz")):
      raise errors.UserError(f"--output={_OUTPUT.value}: give a file ending in .npy or .npz.")
    if not os.path.exists(os.path.join(_MODEL.value, "saved_model.pb")):
      raise errors.UserError(f"--model={_MODEL.value} holds no SavedModel (write one with --export_model=DIR).")
    x, y = read_inputs(_INPUT.value, _DATASET.value, _SPLIT.value, _DATA_DIR.value)
    outputs = run(_MODEL.value, _SIGNATURE.value, x, _BATCH.value)
  except (errors.UserError, ValueError) as e:
    print(f"error: {e}", file=sys.stderr)
    sys.exit(1)
  os.makedirs(os.path.dirname(os.path.abspath(_OUTPUT.value)), exist_ok=True)
  if _OUTPUT.value.endswith(".npz"):
    np.savez(_OUTPUT.value, **outputs)
  else:
    np.save(_OUTPUT.value, outputs[MAIN_OUTPUT[_SIGNATURE.value]])
  print(f"{_SIGNATURE.value}: {len(x)} examples -> {_OUTPUT.value} "
        f"({', '.join(f'{k} {list(v.shape)}' for k, v in sorted(outputs.items()))})")
  if y is not None and _SIGNATURE.value == "predict":
    print(f"accuracy {np.mean(outputs['classes'] == y):.4f} ({int(np.sum(outputs['classes'] == y))} of {len(y)})")


if __name__ == "__main__":
  app.run(main)
