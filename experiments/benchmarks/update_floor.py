"""One core's seconds per pretraining step outside the matrix products that grow with the kernels: the passes over
each layer's [input_units, hidden_units] weights that the step's mathematics needs whatever the batch, timed at the
step's kernel shapes on 1 intra-op thread, in float32 and in bfloat16, so that the limit can say how much of a step
they leave to the products (`ceiling`). In float32 the SGD update (read the kernel and its gradient, write the
kernel); under mixed_bfloat16 also the cast of the float32 kernel to the product operand and the cast of the
kernel's bfloat16 gradient to float32 (`common.model.precision`: oneDNN's products return bfloat16, and TensorFlow has
no CPU product that returns float32 from bfloat16 operands). Each layer the fastest of the ways a step can run them
(`WAYS`): TensorFlow's kernels one op after the other (`tf`: the programs' way under float32); the gradient's cast
and the update in one pass compiled by XLA, the next step's cast by TensorFlow (`xla_update`: the programs' way under
mixed_bfloat16, `common.model.autoencoder.xla_sgd_update`); or the update and the next step's cast fused by XLA
(`xla`); `--iterations` steps in one warm `tf.while_loop`, the fastest of `--repeats` loops. Each step passes over
several copies of the layer's kernel and gradient, together at least `--working_set_mb` (at most `MAX_COPIES`
copies), so that they stream from memory as the programs' do (a device holds several layers' kernels, more than a
processor's cache) instead of staying in cache, which would time these memory-bound passes too fast. The biases'
updates (vectors) are left out. Prints JSON; run by the limit benchmark:
  python -m experiments.benchmarks.update_floor --hidden_units=2000,2000,2000,2000"""

import json
import timeit

from absl import app, flags

from common.measure import cost
from common.settings.config import PRECISIONS  # the programs' --precision values: float32 or bfloat16 operands
from experiments import harness

WAYS = ("tf", "xla_update", "xla")  # the ways a layer's passes are timed; the fastest counts
WORKING_SET_MB, MAX_COPIES = 128, 16  # a layer's kernel copies: at least this many MB per step, at most so many


def kernel_shapes(hidden_units):
  """[(input_units, hidden_units)] of every layer's kernel, bottom first (`common.measure.cost.sizes`)."""
  sizes = cost.sizes(hidden_units)
  return list(zip(sizes, sizes[1:]))


def copies(input_units: int, hidden_units: int, precision: str, working_set_mb: float = WORKING_SET_MB) -> int:
  """How many copies of a kernel (float32) and its gradient (float32, or bfloat16 under mixed_bfloat16) make at least
  `working_set_mb` MB (10^6 bytes), between 1 and MAX_COPIES."""
  pair = input_units * hidden_units * (4 + (4 if precision == PRECISIONS[0] else 2))
  return max(1, min(MAX_COPIES, -(-int(working_set_mb * 1e6) // pair)))


def _loop(way: str, precision: str, kernels, gradients, iterations: int):
  """A callable running `iterations` steps of one layer's passes, each over every one of `kernels` (float32
  tf.Variables, copies of one shape) with its one of `gradients` (float32, or bfloat16 under mixed_bfloat16); each
  step's product operands are loop values, so nothing is pruned."""
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  from common.model import autoencoder  # pylint: disable=g-import-not-at-top (after TensorFlow's threads are set)
  rate, bf16 = tf.constant(1e-3), precision != PRECISIONS[0]

  def one(kernel, gradient, operand):
    if way == "xla_update":  # the programs' way under mixed_bfloat16
      operand = tf.cast(kernel, tf.bfloat16) if bf16 else operand
      autoencoder.xla_sgd_update(kernel, rate, gradient)
      return operand
    if way == "xla":  # one fused pass: the update and, under bfloat16, the next step's operand from the new kernel
      new = kernel - rate * tf.cast(gradient, tf.float32)
      kernel.assign(new)
      return tf.cast(new, tf.bfloat16) if bf16 else operand
    operand = tf.cast(kernel, tf.bfloat16) if bf16 else operand
    tf.raw_ops.ResourceApplyGradientDescent(var=kernel.handle, alpha=rate,
                                            delta=tf.cast(gradient, tf.float32) if bf16 else gradient)
    return operand
  body = tf.function(lambda operands: [one(k, g, w) for k, g, w in zip(kernels, gradients, operands)],
                     jit_compile=way == "xla")

  @tf.function
  def loop(operands):
    operands = tf.while_loop(lambda i, _: i < iterations, lambda i, w: (i + 1, body(w)), (tf.constant(0), operands))[1]
    return tf.add_n([tf.cast(w[0, 0], tf.float32) for w in operands])
  start = [tf.zeros(k.shape, tf.bfloat16 if bf16 else tf.float32) for k in kernels]
  return lambda: loop(start)


def floors(hidden_units, iterations: int = 10, repeats: int = 3, ways=WAYS, precisions=PRECISIONS,
           working_set_mb: float = WORKING_SET_MB) -> dict:
  """{precision: {"seconds_per_step": the sum over the layers of each one's passes at its fastest way (seconds),
  "ways", "working_set_mb", "layers": [per layer its kernel's input_units, hidden_units, copies, {way: seconds per
  step of one copy} and the fastest]}} on one intra-op thread (set here unless TensorFlow has started already).
  ValueError for a way not in WAYS or a precision not in PRECISIONS."""
  tf = harness.one_thread(ways, WAYS, precisions)
  result = {}
  for precision in precisions:
    layers, total = [], 0.0
    for n_in, n_out in kernel_shapes(hidden_units):
      n = copies(n_in, n_out, precision, working_set_mb)
      kernels = [tf.Variable(tf.random.stateless_uniform([n_in, n_out], (c, 1))) for c in range(n)]
      gradients = [tf.random.stateless_uniform([n_in, n_out], (c, 2)) * 1e-3 for c in range(n)]
      gradients = [tf.cast(g, tf.bfloat16) for g in gradients] if precision != PRECISIONS[0] else gradients
      best = {}
      for way in ways:
        loop = _loop(way, precision, kernels, gradients, iterations)
        loop().numpy()
        best[way] = min(timeit.repeat(lambda loop=loop: loop().numpy(), number=1, repeat=repeats)) / (iterations * n)
      fastest = min(best, key=best.get)
      total += best[fastest]
      layers.append({"input_units": n_in, "hidden_units": n_out, "copies": n, "fastest": fastest,
                     "seconds": best[fastest], "ways": best})
    result[precision] = {"seconds_per_step": total, "ways": list(ways), "working_set_mb": working_set_mb,
                         "layers": layers}
  return result


if __name__ == "__main__":
  _HIDDEN = flags.DEFINE_list("hidden_units", ["1000", "1000", "1000", "1000"], "The stack.")
  _ITERATIONS = flags.DEFINE_integer("iterations", 10, "Steps per timed loop.")
  _REPEATS = flags.DEFINE_integer("repeats", 3, "Timed loops per layer and way (the fastest counts).")
  _WAYS = flags.DEFINE_list("ways", list(WAYS), "Ways to time each layer (the fastest counts): " + ", ".join(WAYS))
  _PRECISIONS = flags.DEFINE_list("precisions", list(PRECISIONS), "Precisions: " + ", ".join(PRECISIONS))
  _WORKING_SET = flags.DEFINE_float("working_set_mb", WORKING_SET_MB, "MB of kernel copies each step streams.")
  app.run(lambda argv: print(json.dumps(floors(_HIDDEN.value, _ITERATIONS.value, _REPEATS.value, _WAYS.value,
                                               _PRECISIONS.value, _WORKING_SET.value))))
