"""One core's matrix-product rate at the shapes of a pretraining step, in float32 and in bfloat16: every product of
one step of every layer (encode, decode, the hidden units' and the kernel's gradients,
`DenoisingAutoencoder.loss_and_gradients`), on 1 intra-op thread, each shape the fastest of the ways a step can run
it (`WAYS`), so that no program's step outruns it: `--iterations` products in one warm `tf.while_loop` (after an
untimed call) over 4 operand pairs that the loop rotates (so grappler cannot merge them and nothing is copied), on
TensorFlow's oneDNN kernels (`tf`) and compiled by XLA (`xla`); and the earlier way (`gather`: the loop picks its
pair with tf.gather, which copies the operands, so it measures low where the operands are large beside the product).
Prints JSON: per precision the products' FLOPs over their seconds (GFLOP/s) and per shape each way's rate and the
fastest. Run by the limit and precision benchmarks:
  python -m experiments.benchmarks.matmul_rates --hidden_units=1000,1000,1000,1000 --batch_size=1000"""

import collections
import json
import threading
import time
import timeit

from absl import app, flags

from common.settings.config import PRECISIONS  # the programs' --precision values: float32 or bfloat16 operands
from experiments import harness

WAYS = ("tf", "xla", "gather")  # the ways a shape is timed; the fastest counts


def shapes(hidden_units, batch_size):
  """[(m, k, n, transpose_a, transpose_b)] of one step's products over every layer (m x k times k x n)."""
  sizes = [784] + [int(u) for u in hidden_units]
  return [shape for n_in, n_out in zip(sizes, sizes[1:]) for shape in (
      (batch_size, n_in, n_out, False, False), (batch_size, n_out, n_in, False, True),
      (batch_size, n_in, n_out, False, False), (n_in, 2 * batch_size, n_out, True, False))]


def _loop(way: str, a, b, ta: bool, tb: bool, iterations: int):
  """A tf.function running `iterations` products of the 4 operand pairs a[j], b[j] (float32 or bfloat16 tensors,
  [4, ...]) the way `way` names; returns a float32 scalar that depends on the last product."""
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  if way == "gather":
    @tf.function
    def gathered():
      def body(i, acc):
        c = tf.matmul(tf.gather(a, i % 4), tf.gather(b, i % 4), transpose_a=ta, transpose_b=tb)
        return i + 1, acc + tf.cast(c[0, 0], tf.float32)
      return tf.while_loop(lambda i, _: i < iterations, body, (tf.constant(0), tf.constant(0.0)))[1]
    return gathered
  pairs = tuple(tf.unstack(a)) + tuple(tf.unstack(b))
  out = tf.zeros([a.shape[2] if ta else a.shape[1], b.shape[1] if tb else b.shape[2]], a.dtype)

  @tf.function(jit_compile=way == "xla")
  def rotated(out, *pairs):
    def body(i, c, a0, a1, a2, a3, b0, b1, b2, b3):  # the next product reads the next pair: no copy, no merge
      return (i + 1, tf.matmul(a0, b0, transpose_a=ta, transpose_b=tb), a1, a2, a3, a0, b1, b2, b3, b0)
    c = tf.while_loop(lambda i, *_: i < iterations, body, (tf.constant(0), out) + pairs)[1]
    return tf.cast(c[0, 0], tf.float32)
  return lambda: rotated(out, *pairs)


def rates(hidden_units, batch_size: int, iterations: int = 20, repeats: int = 3, ways=WAYS,
          precisions=PRECISIONS) -> dict:
  """{precision: {"gflops_per_second": the step's products' FLOPs over their seconds, each shape at its fastest way,
  "ways", "shapes": [per shape its m, k, n, transposes, {way: GFLOP/s} and the fastest way]}} for `precisions`, on
  one intra-op thread (set here unless TensorFlow has started already); each way's fastest of `repeats` timed loops
  of `iterations` products counts. ValueError for a way not in WAYS or a precision not in PRECISIONS."""
  tf = harness.one_thread(ways, WAYS, precisions)
  result = {}
  for name, dtype in ((p, tf.float32 if p == PRECISIONS[0] else tf.bfloat16) for p in precisions):
    per_shape, flops, seconds = [], 0.0, 0.0
    for (m, k, n, ta, tb), count in collections.Counter(shapes(hidden_units, batch_size)).items():
      a = tf.cast(tf.random.stateless_uniform([4] + ([k, m] if ta else [m, k]), (0, 1)), dtype)
      b = tf.cast(tf.random.stateless_uniform([4] + ([n, k] if tb else [k, n]), (0, 2)), dtype)
      f = 2.0 * m * k * n * iterations
      best = {}  # way: seconds of its fastest loop
      for way in ways:
        loop = _loop(way, a, b, ta, tb, iterations)
        loop().numpy()
        best[way] = min(timeit.repeat(lambda loop=loop: loop().numpy(), number=1, repeat=repeats))
      fastest = min(best, key=best.get)
      flops, seconds = flops + count * f, seconds + count * best[fastest]
      per_shape.append({"m": m, "k": k, "n": n, "transpose_a": ta, "transpose_b": tb, "fastest": fastest,
                        "gflops_per_second": f / best[fastest] / 1e9,
                        "ways": {w: f / s / 1e9 for w, s in best.items()}})
    result[name] = {"gflops_per_second": flops / seconds / 1e9, "ways": list(ways), "shapes": per_shape}
  return result


def stream_rates(hidden_units, batch_size: int, streams: int = 2, iterations: int = 20, repeats: int = 3,
                 ways=("tf",), precisions=PRECISIONS) -> dict:
  """{precision: {"gflops_per_second", "streams", "ways"}}: the step's products run by `streams` one-thread streams
  at once in this process (one Python thread each, TensorFlow on 1 intra-op and `streams` inter-op threads, each
  stream its own operands), their FLOPs over the wall seconds from the first stream's start to the last one's end,
  per shape the fastest of `repeats` and of `ways`. What `streams` cores give at once, to set beside `streams` x one
  core's `rates` (the limit benchmark's limit as the machine runs). ValueError as `rates`."""
  tf = harness.one_thread(ways, WAYS, precisions)
  try:
    tf.config.threading.set_inter_op_parallelism_threads(streams)
  except RuntimeError:  # TensorFlow already initialized (tests)
    pass
  result = {}
  for name, dtype in ((p, tf.float32 if p == PRECISIONS[0] else tf.bfloat16) for p in precisions):
    flops, seconds = 0.0, 0.0
    for (m, k, n, ta, tb), count in collections.Counter(shapes(hidden_units, batch_size)).items():
      best = float("inf")
      for way in ways:
        loops = []
        for j in range(streams):
          a = tf.cast(tf.random.stateless_uniform([4] + ([k, m] if ta else [m, k]), (j, 1)), dtype)
          b = tf.cast(tf.random.stateless_uniform([4] + ([n, k] if tb else [k, n]), (j, 2)), dtype)
          loops.append(_loop(way, a, b, ta, tb, iterations))
          loops[-1]().numpy()
        for _ in range(repeats):
          best = min(best, _together(loops))
      flops, seconds = flops + count * streams * 2.0 * m * k * n * iterations, seconds + count * best
    result[name] = {"gflops_per_second": flops / seconds / 1e9, "streams": streams, "ways": list(ways)}
  return result


def _together(loops) -> float:
  """Seconds from the start of the first of `loops` to the end of the last, each called once on a thread of its own
  (all released at once by a barrier)."""
  barrier, spans = threading.Barrier(len(loops)), []

  def run(loop):
    barrier.wait()
    start = time.perf_counter()
    loop().numpy()
    spans.append((start, time.perf_counter()))
  threads = [threading.Thread(target=run, args=(loop,)) for loop in loops]
  for t in threads:
    t.start()
  for t in threads:
    t.join()
  return max(e for _, e in spans) - min(s for s, _ in spans)


if __name__ == "__main__":
  _HIDDEN = flags.DEFINE_list("hidden_units", ["1000", "1000", "1000", "1000"], "The stack.")
  _BATCH = flags.DEFINE_integer("batch_size", 1000, "Rows B of a step.")
  _ITERATIONS = flags.DEFINE_integer("iterations", 20, "Products per timed loop.")
  _REPEATS = flags.DEFINE_integer("repeats", 3, "Timed loops per shape and way (the fastest counts).")
  _WAYS = flags.DEFINE_list("ways", list(WAYS), "Ways to time each shape (the fastest counts): " + ", ".join(WAYS))
  _PRECISIONS = flags.DEFINE_list("precisions", list(PRECISIONS), "Operand precisions: " + ", ".join(PRECISIONS))
  _STREAMS = flags.DEFINE_integer("streams", 1, "Product streams at once in this process, one thread each (1: one "
                                  "core's rates per shape and way; more: their rate together, `stream_rates`).")
  app.run(lambda argv: print(json.dumps(
      rates(_HIDDEN.value, _BATCH.value, _ITERATIONS.value, _REPEATS.value, _WAYS.value, _PRECISIONS.value)
      if _STREAMS.value == 1 else
      stream_rates(_HIDDEN.value, _BATCH.value, _STREAMS.value, _ITERATIONS.value, _REPEATS.value, _WAYS.value,
                   _PRECISIONS.value))))
