"""Will the run fit in memory? A lower bound of what any program needs, checked before anything is built.

A run that cannot fit should stop in its first second with the numbers, not after minutes with a
ResourceExhausted traceback. The estimate counts only what every program surely holds at once, float32
(4 bytes): every layer's weights and their SGD gradients of the layer in training (`common.measure.cost`
parameter counts), the classifier's output layer, one batch of activations through the stack, and the
resident data (the training slice, the validation and test examples). The programs hold more
(frozen copies, replicas, TensorFlow's own buffers), so a refused run would surely fail; a run that
passes may still not fit.
"""

import os
from typing import Dict, Optional, Sequence

from common.data import sources as datasets
from common.measure import cost

BYTES_PER_FLOAT = 4


def estimate_bytes(hidden_units: Sequence[int], batch_size: int, train_examples: int,
                   info: datasets.Info) -> Dict[str, int]:
  """The lower bound of the memory a run on `info`'s data needs, by part, in bytes.

  Returns:
    {"weights": weights and gradients, "activations": one batch through the stack (and back),
     "data": the resident examples, "total": their sum}.
  """
  params = sum(cost.layer_params(hidden_units, info.input_units)) + int(hidden_units[-1]) * (info.num_classes or 0)
  widths = cost.sizes(hidden_units, info.input_units)
  parts = {
      "weights": 2 * params * BYTES_PER_FLOAT,
      "activations": 2 * batch_size * sum(widths) * BYTES_PER_FLOAT,
      "data": (train_examples + info.validation + info.test) * info.input_units * BYTES_PER_FLOAT,
  }
  parts["total"] = sum(parts.values())
  return parts


def physical_bytes() -> Optional[int]:
  """RAM plus swap of this machine in bytes (/proc/meminfo MemTotal + SwapTotal), else the physical pages
  (os.sysconf), None when unknown."""
  try:
    with open("/proc/meminfo") as f:
      info = {line.split(":")[0]: int(line.split()[1]) * 1024 for line in f if line.split()[1:2]}
    return info["MemTotal"] + info.get("SwapTotal", 0)
  except (OSError, KeyError, ValueError, IndexError):
    pass
  try:
    return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
  except (ValueError, OSError, AttributeError):
    return None


def _gib(n: float) -> str:
  return f"{n / 2**30:,.1f} GiB"


def check(hidden_units: Sequence[int], batch_size: int, train_examples: int, info: datasets.Info,
          available: Optional[int] = None) -> None:
  """Raises ValueError (one line with the estimate) when the run cannot fit in this machine's memory.

  Args:
    hidden_units, batch_size, train_examples: the run's flags.
    info: the data (its input size, classes and splits).
    available: bytes to compare with (default `physical_bytes()`; nothing is checked when unknown).
  """
  available = physical_bytes() if available is None else available
  if not available:
    return
  parts = estimate_bytes(hidden_units, batch_size, train_examples, info)
  if parts["total"] > available:
    raise ValueError(
        f"--hidden_units={','.join(str(u) for u in hidden_units)} with --batch_size={batch_size} needs at least "
        f"{_gib(parts['total'])} of memory (weights and gradients {_gib(parts['weights'])}, activations "
        f"{_gib(parts['activations'])}, data {_gib(parts['data'])}), more than this machine's "
        f"{_gib(available)} (RAM + swap); use fewer or smaller layers or a smaller batch.")
