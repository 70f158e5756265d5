"""Phase timing: wall-clock seconds per named phase, with tracing/compilation kept out of the phases.

Programs call a compiled function once before timing it (a compile step with learning rate 0, timed
under COMPILE_PHASE), so the phases hold steady-state time only. "Warm-up" in this project means the
learning-rate warm-up (`--warmup_epochs`) only; the record key of the compile phase, "warmup", predates
that rule and stays, since committed records and users' scripts read it. `time_repeated` measures a
single operation on its own, repeated, the way the report's op-level profile did; `trace` captures a
TensorFlow profiler trace for TensorBoard.
"""

import collections
import contextlib
import statistics
import time
from typing import Callable, Dict, Iterator, Optional

import tensorflow as tf

# Timer phases of the compile step (tracing and XLA compilation before the timed steps); record keys.
COMPILE_PHASE = "warmup"
FINETUNE_COMPILE_PHASE = "finetune_warmup"


class PhaseTimer:
  """Accumulates wall-clock seconds per phase name.

  Example:
    timer = PhaseTimer()
    with timer.phase("checkpoint"):
      manager.save()
    timer.as_dict()  # {"checkpoint": 0.12}
  """

  def __init__(self):
    self._seconds: Dict[str, float] = collections.defaultdict(float)

  @contextlib.contextmanager
  def phase(self, name: str) -> Iterator[None]:
    """Adds the seconds spent inside the block to phase `name`."""
    start = time.perf_counter()
    try:
      yield
    finally:
      self._seconds[name] += time.perf_counter() - start

  def add(self, name: str, seconds: float) -> None:
    """Adds `seconds` to phase `name`."""
    self._seconds[name] += seconds

  def as_dict(self) -> Dict[str, float]:
    """{phase name: seconds}, rounded to microseconds."""
    return {k: round(v, 6) for k, v in self._seconds.items()}


def time_repeated(fn: Callable[[], object], repeats: int = 5, untimed_calls: int = 1) -> Dict[str, float]:
  """Times `fn()` on its own: `untimed_calls` calls (tracing, compilation), then `repeats` timed calls.

  `fn` must return a tensor (or nest of tensors) whose values are fetched, so asynchronous work is
  finished when the clock stops.

  Returns:
    {"median": s, "min": s, "max": s, "repeats": n}, seconds per call.

  Raises:
    ValueError: `repeats` < 1.
  """
  if repeats < 1:
    raise ValueError(f"repeats must be >= 1, got {repeats}")
  for _ in range(untimed_calls):
    tf.nest.map_structure(lambda t: t.numpy() if hasattr(t, "numpy") else t, fn())
  samples = []
  for _ in range(repeats):
    start = time.perf_counter()
    tf.nest.map_structure(lambda t: t.numpy() if hasattr(t, "numpy") else t, fn())
    samples.append(time.perf_counter() - start)
  return {"median": statistics.median(samples), "min": min(samples), "max": max(samples),
          "repeats": repeats}


@contextlib.contextmanager
def trace(log_dir: Optional[str]) -> Iterator[None]:
  """Captures a TensorFlow profiler trace of the block into `log_dir` (no-op when None).

  View with `tensorboard --logdir <log_dir>` (Profile tab).
  """
  if not log_dir:
    yield
    return
  tf.profiler.experimental.start(log_dir)
  try:
    yield
  finally:
    tf.profiler.experimental.stop()
