"""How the project's Python becomes TensorFlow graphs: `function`, which is `tf.function` with AutoGraph off.

Every loop and branch that depends on a tensor in the training code is already written as `tf.while_loop` or
`tf.cond`. AutoGraph would only rewrite the Python source of each function, and of every function it calls, at the
first trace in each process. That rewrite costs seconds in every process and changes no op. Without it, a Python `if`
or `while` on a tensor fails at trace time ("using a `tf.Tensor` as a Python `bool` is not allowed") instead of
becoming a graph branch, so new graph code states its control flow with `tf.cond` or `tf.while_loop`.
"""

import functools

import tensorflow as tf


def function(fn=None, **options):
  """`tf.function(fn, autograph=False, **options)`; with no `fn`, a decorator taking those `options`
  (`jit_compile`, `input_signature`, ...). Returns a `tf.types.experimental.PolymorphicFunction`."""
  if fn is None:
    return functools.partial(function, **options)
  return tf.function(fn, autograph=False, **options)
