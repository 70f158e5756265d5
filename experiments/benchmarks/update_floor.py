"""One core's seconds per pretraining step outside the matrix products that grow with the kernels: the passes over
each layer's [input_units, hidden_units] weights that the step's mathematics needs whatever the batch, timed at the
step's kernel shapes on 1 intra-op thread, in float32 and in bfloat16, so that the limit can say how much of a step
they leave to the products (`ceiling`). In float32 the SGD update (read the kernel and its gradient, write the
kernel); under mixed_bfloat16 also the cast of the float32 kernel to the product operand and the cast of the
kernel's bfloat16 gradient to float32 (`common.model.precision`: oneDNN's products return bfloat16, and TensorFlow has
no CPU product that returns float32 from bfloat16 operands). Each layer the fastest of the ways a step can run them
(`WAYS`): TensorFlow's kernels one op after the other (`tf`), or the update and the next step's cast fused by XLA
(`xla`); `--iterations` steps in one warm `tf.while_loop`, the fastest of `--repeats` loops. The biases' updates
(vectors) are left out. Prints JSON; run by the limit benchmark:
  python -m experiments.benchmarks.update_floor --hidden_units=2000,2000,2000,2000"""

import json
import timeit

from absl import app, flags

from common.measure import cost
from common.settings.config import PRECISIONS  # the programs' --precision values: float32 or bfloat16 operands
from experiments import harness

WAYS = ("tf", "xla")  # the ways a layer's passes are timed; the fastest counts


def kernel_shapes(hidden_units):
  """[(input_units, hidden_units)] of every layer's kernel, bottom first (`common.measure.cost.sizes`)."""
  sizes = cost.sizes(hidden_units)
  return list(zip(sizes, sizes[1:]))


def _loop(way: str, precision: str, kernel, gradient, iterations: int):
  """A callable running `iterations` of one layer's passes on `kernel` (a float32 tf.Variable) with `gradient`
  (float32, or bfloat16 under mixed_bfloat16); the step's product operand is a loop value, so nothing is pruned."""
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  rate, bf16 = tf.constant(1e-3), precision != PRECISIONS[0]

  def passes(operand):
    if way == "xla":  # one fused pass: the update and, under bfloat16, the next step's operand from the new kernel
      new = kernel - rate * tf.cast(gradient, tf.float32)
      kernel.assign(new)
      return tf.cast(new, tf.bfloat16) if bf16 else operand
    operand = tf.cast(kernel, tf.bfloat16) if bf16 else operand
    tf.raw_ops.ResourceApplyGradientDescent(var=kernel.handle, alpha=rate,
                                            delta=tf.cast(gradient, tf.float32) if bf16 else gradient)
    return operand
  body = tf.function(passes, jit_compile=way == "xla")

  @tf.function
  def loop(operand):
    operand = tf.while_loop(lambda i, _: i < iterations, lambda i, w: (i + 1, body(w)), (tf.constant(0), operand))[1]
    return tf.cast(operand[0, 0], tf.float32)
  start = tf.zeros(kernel.shape, tf.bfloat16 if bf16 else tf.float32)
  return lambda: loop(start)


def floors(hidden_units, iterations: int = 10, repeats: int = 3, ways=WAYS, precisions=PRECISIONS) -> dict:
  """{precision: {"seconds_per_step": the sum over the layers of each one's passes at its fastest way (seconds),
  "ways", "layers": [per layer its kernel's input_units, hidden_units, {way: seconds per step} and the fastest]}} on
  one intra-op thread (set here unless TensorFlow has started already). ValueError for a way not in WAYS or a
  precision not in PRECISIONS."""
  tf = harness.one_thread(ways, WAYS, precisions)
  result = {}
  for precision in precisions:
    layers, total = [], 0.0
    for n_in, n_out in kernel_shapes(hidden_units):
      kernel = tf.Variable(tf.random.stateless_uniform([n_in, n_out], (0, 1)))
      gradient = tf.random.stateless_uniform([n_in, n_out], (0, 2)) * 1e-3
      gradient = tf.cast(gradient, tf.bfloat16) if precision != PRECISIONS[0] else gradient
      best = {}
      for way in ways:
        loop = _loop(way, precision, kernel, gradient, iterations)
        loop().numpy()
        best[way] = min(timeit.repeat(lambda loop=loop: loop().numpy(), number=1, repeat=repeats)) / iterations
      fastest = min(best, key=best.get)
      total += best[fastest]
      layers.append({"input_units": n_in, "hidden_units": n_out, "fastest": fastest, "seconds": best[fastest],
                     "ways": best})
    result[precision] = {"seconds_per_step": total, "ways": list(ways), "layers": layers}
  return result


if __name__ == "__main__":
  _HIDDEN = flags.DEFINE_list("hidden_units", ["1000", "1000", "1000", "1000"], "The stack.")
  _ITERATIONS = flags.DEFINE_integer("iterations", 10, "Steps per timed loop.")
  _REPEATS = flags.DEFINE_integer("repeats", 3, "Timed loops per layer and way (the fastest counts).")
  _WAYS = flags.DEFINE_list("ways", list(WAYS), "Ways to time each layer (the fastest counts): " + ", ".join(WAYS))
  _PRECISIONS = flags.DEFINE_list("precisions", list(PRECISIONS), "Precisions: " + ", ".join(PRECISIONS))
  app.run(lambda argv: print(json.dumps(floors(_HIDDEN.value, _ITERATIONS.value, _REPEATS.value, _WAYS.value,
                                               _PRECISIONS.value))))
