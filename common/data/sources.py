"""Which data a run trains on (`--dataset`), what it is before anything is loaded, and the rules that split it and
refuse it. TensorFlow-free: the flags are checked against `KNOWN` before TensorFlow loads; `common.data.loader` loads.

  --dataset=mnist            (default) tensorflow-datasets' MNIST: validation train[:5000], training train[5000:],
                             test the test split: the report's splits, exactly.
  --dataset=<tfds name>      any tensorflow-datasets name with an "image" and a "label" feature (fashion_mnist,
                             kmnist, emnist/digits, cifar10, ...): images flattened to H*W*C inputs scaled by 1/255;
                             validation the first `validation_size(N)` of its train split, training the rest, test
                             its test split.
  --dataset=npz:PATH         your own arrays (docs/programs.md, "Your own data"): `x` [N, D], [N, H, W] or
                             [N, H, W, C], uint8 (scaled by 1/255) or float in [0, 1]; optional `y` int [N] class ids,
                             `num_classes`, `x_validation`/`y_validation`, `x_test`/`y_test`. Without `x_test` the last
                             `test_size(N)` examples of `x` are the test set; without `x_validation` the first
                             `validation_size` of the rest are the validation set.
"""

import dataclasses
import functools
import hashlib
import os
from typing import Any, Dict, Optional, Tuple

import numpy as np

from common.base import errors

DEFAULT = "mnist"
NPZ_PREFIX = "npz:"
# Validation examples held out of a train split: 5,000 (the report's, for MNIST), at most a tenth of small sets.
VALIDATION_EXAMPLES = 5_000
# The masking-noise counter (`common.data.loader.keep_mask`) numbers every input of every example in 32 bits.
MASK_COUNTER_LIMIT = 2 ** 32
# A finetuned test accuracy at most this far above chance (1 / classes) flags a run that learned nothing.
CHANCE_MARGIN = 0.02


@dataclasses.dataclass(frozen=True)
class Info:
  """A dataset as the flags, the cost model and the run record know it.

  Attributes:
    name: the --dataset value ("mnist", "fashion_mnist", "npz:PATH").
    image_shape: the shape of one example: (H, W, C) for images, (D,) for flat data.
    num_classes: K, the classes of its labels, or None when it has no labels (pretraining only).
    train, validation, test: examples in each split (train: all of them, before --train_examples).
    source: where it comes from: {"tfds": name, "version": "3.0.1"} or {"file": path, "sha256": hex}.
  """
  name: str
  image_shape: Tuple[int, ...]
  num_classes: Optional[int]
  train: int
  validation: int
  test: int
  source: Dict[str, Any]

  @property
  def input_units(self) -> int:
    """D, the inputs of layer 1: the example's H * W * C values."""
    return int(np.prod(self.image_shape))

  @property
  def is_image(self) -> bool:
    """True for image-shaped examples (filters can be drawn as pictures)."""
    return len(self.image_shape) in (2, 3)

  def describe(self, train_examples: Optional[int] = None) -> Dict[str, Any]:
    """The run record's "dataset": name, source, input size, image shape, classes, examples per split."""
    return {"name": self.name, **self.source, "input_units": self.input_units, "image_shape": list(self.image_shape),
            "classes": self.num_classes, "examples": {"train": train_examples or self.train,
                                                      "validation": self.validation, "test": self.test}}


def validation_size(examples: int) -> int:
  """Examples a train split of `examples` holds out for validation: 5,000, or a tenth of a smaller set."""
  return min(VALIDATION_EXAMPLES, examples // 10)


def test_size(examples: int) -> int:
  """Examples an `.npz` without `x_test` holds out (its last ones) for testing: a seventh, as MNIST's 10,000 of 70,000."""
  return max(1, examples // 7)


def _tfds(name: str, train: int, test: int, version: str = "3.0.1", shape=(28, 28, 1), classes=10) -> Info:
  validation = validation_size(train)
  return Info(name, shape, classes, train - validation, validation, test, {"tfds": name, "version": version})


# The prepared datasets whose sizes are known without reading anything: flags are checked against them before
# TensorFlow loads (any other dataset is checked once its metadata is read, before any training).
KNOWN = {d.name: d for d in (_tfds("mnist", 60_000, 10_000), _tfds("fashion_mnist", 60_000, 10_000))}


def check_name(name: str, value: Any) -> None:
  """The --dataset check before anything is read: a tfds name or npz:PATH (ValueError, one line)."""
  if not isinstance(value, str) or not value.strip():
    raise ValueError(f"--{name} must be a tensorflow-datasets name (e.g. mnist, fashion_mnist) or npz:PATH, "
                     f"got {value!r}.")
  if value.startswith(NPZ_PREFIX) and not value[len(NPZ_PREFIX):]:
    raise ValueError(f"--{name}=npz: needs a file, e.g. --{name}=npz:my_data.npz.")


def known(name: Optional[str]) -> Optional[Info]:
  """The `Info` of a dataset known without reading anything (`KNOWN`), else None."""
  return KNOWN.get(name or DEFAULT)


def chance_accuracy(num_classes: int) -> float:
  """The test accuracy at or below which a finetuned classifier learned nothing: 1 / K + `CHANCE_MARGIN`."""
  return 1.0 / num_classes + CHANCE_MARGIN


def check_fits(info: Info, train_examples: int) -> None:
  """Refuses data the masking-noise counter cannot index (examples x inputs beyond 2^32), one line."""
  for split, n in (("training", train_examples), ("test", info.test)):
    if n * info.input_units >= MASK_COUNTER_LIMIT:
      raise errors.DataError(
          f"--dataset={info.name}: {n:,} {split} examples x {info.input_units:,} inputs is more than the masking "
          f"noise can index ({MASK_COUNTER_LIMIT:,}); use --train_examples to train on fewer examples.")


# ------------------------------------------------------------------ your own arrays: npz:PATH

def as_inputs(where: str, key: str, x: np.ndarray) -> np.ndarray:
  """float32 [N, D] in [0, 1] of an array of examples ([N, D], [N, H, W] or [N, H, W, C]; uint8 scaled by 1/255, or
  float in [0, 1]); DataError, one line starting with `where` (e.g. "--dataset=npz:x.npz"), naming what is wrong."""
  if x.ndim not in (2, 3, 4):
    raise errors.DataError(f"{where}: {key} must be [N, D], [N, H, W] or [N, H, W, C], got shape "
                           f"{list(x.shape)}.")
  if x.dtype == np.uint8:
    return x.reshape(len(x), -1).astype(np.float32) / np.float32(255.0)
  if not np.issubdtype(x.dtype, np.floating):
    raise errors.DataError(f"{where}: {key} must be uint8 (scaled by 1/255) or float in [0, 1], got "
                           f"{x.dtype}.")
  flat = x.reshape(len(x), -1).astype(np.float32)
  if flat.size and not np.isfinite(flat).all():
    raise errors.DataError(f"{where}: {key} holds NaN or infinite values.")
  if flat.size and (flat.min() < 0 or flat.max() > 1):
    raise errors.DataError(f"{where}: {key} must be in [0, 1] (float) or uint8; found values from "
                           f"{flat.min():g} to {flat.max():g}.")
  return flat


def _labels(name: str, key: str, y: np.ndarray, n: int, classes: Optional[int]) -> np.ndarray:
  if y.shape != (n,) or not np.issubdtype(y.dtype, np.integer):
    raise errors.DataError(f"--dataset={name}: {key} must be integer class ids of shape [{n}], got {y.dtype} "
                           f"{list(y.shape)}.")
  if classes is not None and n and (y.min() < 0 or y.max() >= classes):
    raise errors.DataError(f"--dataset={name}: {key} must be class ids in 0..{classes - 1}, found {y.min()} to "
                           f"{y.max()}.")
  return y.astype(np.int32)


def load_npz(spec: str) -> Tuple[Info, Dict[str, Optional[np.ndarray]]]:
  """`_read_npz`, read once per version of the file (its size and modification time): a program checks the file
  before TensorFlow starts (`common.run.cli.check_npz`) and loads it after, from this cache.

  Raises:
    errors.DataError: one line, as `_read_npz` says.
  """
  try:
    stat = os.stat(spec[len(NPZ_PREFIX):])
  except OSError:
    return _read_npz(spec)  # Missing or unreadable: its one-line error.
  return _read_npz_version(spec, stat.st_size, stat.st_mtime_ns)


@functools.lru_cache(maxsize=2)
def _read_npz_version(spec: str, size: int, mtime: int) -> Tuple[Info, Dict[str, Optional[np.ndarray]]]:
  del size, mtime  # The cache key only.
  return _read_npz(spec)


def _read_npz(spec: str) -> Tuple[Info, Dict[str, Optional[np.ndarray]]]:
  """Reads and checks `npz:PATH`; returns its `Info` and {"train_images", "train_labels", "validation_images", ...}
  (float32 [n, D] in [0, 1], int32 [n] or None), split as the module docstring says.

  Raises:
    errors.DataError: one line naming the file and what is wrong (missing, unreadable, rank, dtype, range, NaN,
      labels of another length or outside 0..K-1, a class missing among the training labels, image shapes that
      differ between the splits).
  """
  path = spec[len(NPZ_PREFIX):]
  name = spec
  if not os.path.isfile(path):
    raise errors.DataError(f"--dataset={name}: no such file {path}.")
  try:
    with np.load(path, allow_pickle=False) as f:
      arrays = {k: f[k] for k in f.files}
  except Exception as e:  # zipfile.BadZipFile, ValueError, OSError, ...
    raise errors.DataError(f"--dataset={name}: {path} is not a readable .npz file ({type(e).__name__}: {e}).") from None
  if "x" not in arrays:
    raise errors.DataError(f"--dataset={name}: the file holds no array x (it has {', '.join(arrays) or 'none'}).")
  with open(path, "rb") as f:
    sha256 = hashlib.sha256(f.read()).hexdigest()
  x = arrays["x"]
  labelled = "y" in arrays
  classes = None
  if "num_classes" in arrays:
    classes = int(arrays["num_classes"])
    if classes < 2:
      raise errors.DataError(f"--dataset={name}: num_classes must be at least 2, got {classes}.")
  parts = {}
  for split in ("validation", "test"):
    if f"x_{split}" in arrays:
      if arrays[f"x_{split}"].shape[1:] != x.shape[1:]:
        raise errors.DataError(f"--dataset={name}: x_{split} examples are {list(arrays[f'x_{split}'].shape[1:])}, "
                               f"x's are {list(x.shape[1:])}: every example must have one shape.")
      if labelled != (f"y_{split}" in arrays):
        raise errors.DataError(f"--dataset={name}: y and y_{split} must be given together (labels for every split "
                               "or none).")
      parts[split] = (arrays[f"x_{split}"], arrays.get(f"y_{split}"))
  y = arrays.get("y")
  if y is not None and (y.ndim != 1 or len(y) != len(x)):
    raise errors.DataError(f"--dataset={name}: y must have one class id per example of x ({len(x)}), got shape "
                           f"{list(y.shape)}.")
  if "test" not in parts:
    k = test_size(len(x))
    parts["test"], x, y = (x[-k:], None if y is None else y[-k:]), x[:-k], None if y is None else y[:-k]
  if "validation" not in parts:
    k = validation_size(len(x))
    parts["validation"], x, y = (x[:k], None if y is None else y[:k]), x[k:], None if y is None else y[k:]
  if len(x) < 1:
    raise errors.DataError(f"--dataset={name}: no training examples are left after the validation and test splits.")
  if labelled and classes is None:
    classes = int(y.max()) + 1 if len(y) else 0
    missing = sorted(set(range(classes)) - set(np.unique(y).tolist()))
    if y.min() < 0 or missing or classes < 2:
      raise errors.DataError(f"--dataset={name}: without num_classes the classes are 0..max(y) and each must occur "
                             f"among the training labels; " + (f"class {missing[0]} does not" if missing else
                                                                f"found {y.min()} to {y.max()}") + ".")
  out = {"train_images": as_inputs(f"--dataset={name}", "x", x),
         "train_labels": _labels(name, "y", y, len(x), classes) if labelled else None}
  for split, (xs, ys) in parts.items():
    out[f"{split}_images"] = as_inputs(f"--dataset={name}", f"x_{split}", xs)
    out[f"{split}_labels"] = _labels(name, f"y_{split}", ys, len(xs), classes) if labelled else None
  shape = tuple(int(d) for d in x.shape[1:])
  info = Info(name, shape if len(shape) != 2 else shape + (1,), classes, len(x), len(parts["validation"][0]),
              len(parts["test"][0]), {"file": os.path.abspath(path), "sha256": sha256})
  return info, out
