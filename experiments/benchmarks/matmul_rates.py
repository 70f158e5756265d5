"""One core's matrix-product rate at the shapes of a pretraining step, in float32 and in bfloat16: every product of
one step of every layer (encode, decode, the hidden units' and the kernel's gradients,
`DenoisingAutoencoder.loss_and_gradients`), each `--iterations` times in one `tf.while_loop` on 1 intra-op thread over
4 operand pairs (so grappler cannot merge them), after an untimed call. Prints JSON: per precision the products'
FLOPs over their seconds (GFLOP/s), and per shape its own rate. Run by the precision benchmark:
  python -m experiments.benchmarks.matmul_rates --hidden_units=1000,1000,1000,1000 --batch_size=1000"""

import json
import timeit

from absl import app, flags

def shapes(hidden_units, batch_size):
  """[(m, k, n, transpose_a, transpose_b)] of one step's products over every layer (m x k times k x n)."""
  sizes = [784] + [int(u) for u in hidden_units]
  return [shape for n_in, n_out in zip(sizes, sizes[1:]) for shape in (
      (batch_size, n_in, n_out, False, False), (batch_size, n_out, n_in, False, True),
      (batch_size, n_in, n_out, False, False), (n_in, 2 * batch_size, n_out, True, False))]


def rates(hidden_units, batch_size: int, iterations: int = 20, repeats: int = 3) -> dict:
  """{precision: {"gflops_per_second": the step's products' FLOPs over their seconds, "shapes": [per shape its m, k,
  n, transposes and GFLOP/s]}} on one intra-op thread (this process's TensorFlow threads are set to 1); each shape's
  fastest of `repeats` timed loops of `iterations` products counts."""
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  tf.config.threading.set_intra_op_parallelism_threads(1)
  tf.config.threading.set_inter_op_parallelism_threads(1)
  result = {}
  for name, dtype in (("float32", tf.float32), ("mixed_bfloat16", tf.bfloat16)):
    per_shape, flops, seconds = [], 0.0, 0.0
    for m, k, n, ta, tb in dict.fromkeys(shapes(hidden_units, batch_size)):
      a = tf.cast(tf.random.uniform([4] + ([k, m] if ta else [m, k])), dtype)
      b = tf.cast(tf.random.uniform([4] + ([n, k] if tb else [k, n])), dtype)
      @tf.function
      def loop(a=a, b=b, ta=ta, tb=tb):
        def body(i, acc):
          c = tf.matmul(tf.gather(a, i % 4), tf.gather(b, i % 4), transpose_a=ta, transpose_b=tb)
          return i + 1, acc + tf.cast(c[0, 0], tf.float32)
        return tf.while_loop(lambda i, _: i < iterations, body, (tf.constant(0), tf.constant(0.0)))[1]
      loop().numpy()
      best = min(timeit.repeat(lambda: loop().numpy(), number=1, repeat=repeats))  # seconds of the fastest loop
      f, count = 2.0 * m * k * n * iterations, shapes(hidden_units, batch_size).count((m, k, n, ta, tb))
      flops, seconds = flops + count * f, seconds + count * best
      per_shape.append({"m": m, "k": k, "n": n, "transpose_a": ta, "transpose_b": tb,
                        "gflops_per_second": f / best / 1e9})
    result[name] = {"gflops_per_second": flops / seconds / 1e9, "shapes": per_shape}
  return result


if __name__ == "__main__":
  _HIDDEN = flags.DEFINE_list("hidden_units", ["1000", "1000", "1000", "1000"], "The stack.")
  _BATCH = flags.DEFINE_integer("batch_size", 1000, "Rows B of a step.")
  _ITERATIONS = flags.DEFINE_integer("iterations", 20, "Products per timed loop.")
  _REPEATS = flags.DEFINE_integer("repeats", 3, "Timed loops per shape (the fastest counts).")
  app.run(lambda argv: print(json.dumps(rates(_HIDDEN.value, _BATCH.value, _ITERATIONS.value, _REPEATS.value))))
