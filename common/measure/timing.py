"""Phase timing: wall-clock seconds per named phase, with tracing/compilation kept out of the phases.

Programs call a compiled function once before timing it (a compile step with learning rate 0, timed under
COMPILE_PHASE, the compile phase), so the phases hold steady-state time only. A "warm-up" in this project is a
learning rate's (`--layer_warmup_epochs`, `--lr_warmup_epochs`), never the compile phase; records made before the
phase had its name keep it under "warmup" and "finetune_warmup" (`compile_seconds` reads either). `time_repeated`
measures a single operation on its own, repeated, the way the report's op-level profile did; `trace` captures a
TensorFlow profiler trace for TensorBoard.
"""

import collections
import contextlib
import math
import statistics
import time
from typing import Callable, Dict, Iterator, List, Optional, Sequence

import tensorflow as tf

# Timer phases of the compile step (tracing and XLA compilation before the timed steps); record keys.
COMPILE_PHASE = "compile"
FINETUNE_COMPILE_PHASE = "finetune_compile"
# The keys older records hold them under.
OLD_COMPILE_PHASES = {COMPILE_PHASE: "warmup", FINETUNE_COMPILE_PHASE: "finetune_warmup"}


def compile_seconds(timing: Dict[str, float], phase: str = COMPILE_PHASE) -> Optional[float]:
  """The seconds of a compile `phase` in a run record's "timing", under its name or an older record's; None without
  it."""
  return timing.get(phase, timing.get(OLD_COMPILE_PHASES[phase]))


def tail_summary(seconds: Sequence[float]) -> Optional[Dict[str, float]]:
  """{"count", "mean", "median", "p90", "p99", "max"} of durations `seconds` (nearest-rank percentiles), or None for
  none: the step-time tails of a pipeline's full ticks (`pipeline.tick_seconds` of its run record)."""
  if not seconds:
    return None
  ordered = sorted(seconds)
  n = len(ordered)
  return {"count": n, "mean": statistics.fmean(ordered), "median": statistics.median(ordered),
          "p90": ordered[max(0, math.ceil(0.9 * n) - 1)], "p99": ordered[max(0, math.ceil(0.99 * n) - 1)],
          "max": ordered[-1]}


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


# The benchmark-only straggler (`--benchmark_slow_worker_delay_seconds` of data_parallel and async_data_parallel):
# worker (replica) 0 sleeps in every step, between its gradient and its update.
SLOW_WORKER = 0


def sleep(seconds: float) -> tf.Tensor:
  """Graph code: sleeps `seconds` on the device that runs it, without using a core (tf.data's SleepDataset sleeps
  before producing each element; Take(1) stops before it would sleep again for the end of the data)."""
  spec = dict(output_types=[tf.int64], output_shapes=[[]])
  one = tf.raw_ops.TensorDataset(components=[tf.constant(0, tf.int64)], output_shapes=[[]])
  slept = tf.raw_ops.SleepDataset(input_dataset=one, sleep_microseconds=tf.constant(int(seconds * 1e6), tf.int64),
                                  **spec)
  return tf.raw_ops.DatasetToSingleElement(
      dataset=tf.raw_ops.TakeDataset(input_dataset=slept, count=tf.constant(1, tf.int64), **spec), **spec)[0]


def straggle(worker: tf.Tensor, tensors: Sequence[tf.Tensor], seconds: float) -> List[tf.Tensor]:
  """Graph code: `tensors` (a step's gradients), held back `seconds` when `worker` (int32 scalar, the worker or
  replica index) is `SLOW_WORKER`: the benchmark-only straggler. Unchanged, with nothing added, when seconds is 0."""
  if not seconds:
    return list(tensors)
  with tf.control_dependencies(list(tensors)):
    slept = tf.cond(tf.equal(worker, SLOW_WORKER), lambda: sleep(seconds), lambda: tf.constant(0, tf.int64))
  with tf.control_dependencies([slept]):
    return [tf.identity(x) for x in tensors]


def straggler_record(seconds: float) -> Dict[str, object]:
  """The run record's "benchmark_only" field of a run with the straggler."""
  return {"slow_worker_delay_seconds": seconds, "slow_worker": SLOW_WORKER,
          "note": "a benchmark-only straggler: this worker sleeps this long in every step between its gradient "
                  "and its update"}
