"""Numerical precision of the matrix products (`--precision`): float32, the report's, or mixed_bfloat16.

Under mixed_bfloat16 (Keras's name for the policy; Micikevicius et al. 2018, "Mixed precision training", with
bfloat16 instead of float16, which needs no loss scaling: Kalamkar et al. 2019, "A study of BFLOAT16 for deep
learning training") every matrix product of pretraining and finetuning takes bfloat16 operands and its result is
cast to float32 at once: TensorFlow's CPU kernels (oneDNN) accumulate in float32 inside but return bfloat16, and
`tf.linalg.matmul(..., output_type=tf.float32)` has no CPU kernel. The variables, the biases, the SGD update, the
sigmoid, the cross-entropy from the logits and every reduction stay float32; so do the exported weights and the
evaluation (held-out reconstruction, accuracies), which reads the float32 weights in float32.

On a processor without native bfloat16 TensorFlow's bfloat16 kernels are several times slower than float32
(tensorflow#42422, #45441), so mixed_bfloat16 is refused there before any work (`check_supported`).
"""

from typing import Callable, Sequence, Tuple

import tensorflow as tf

from common.base import errors
from common.measure import provenance
from common.settings import config as config_lib

FLOAT32, MIXED_BFLOAT16 = config_lib.PRECISIONS
X86_FLAGS, ARM_FEATURE = provenance.BFLOAT16_X86_FLAGS, provenance.BFLOAT16_ARM_FEATURE
# GPUs with native bfloat16 tensor cores: compute capability 8.0 (Ampere) and later.
MIN_GPU_CAPABILITY = (8, 0)


def operand(x: tf.Tensor, precision: str) -> tf.Tensor:
  """`x` as a matrix-product operand at `precision`: bfloat16 under mixed_bfloat16, else unchanged."""
  return tf.cast(x, tf.bfloat16) if precision == MIXED_BFLOAT16 else x


def matmul(a: tf.Tensor, b: tf.Tensor, precision: str, transpose_a: bool = False,
           transpose_b: bool = False) -> tf.Tensor:
  """float32 a·b (a, b float32, or already `operand`s): under mixed_bfloat16 from bfloat16 operands, the result
  cast to float32 at once; under float32 a plain float32 product."""
  product = tf.matmul(operand(a, precision), operand(b, precision), transpose_a=transpose_a,
                      transpose_b=transpose_b)
  return tf.cast(product, tf.float32) if precision == MIXED_BFLOAT16 else product


# Which processors have native bfloat16: TensorFlow-free, in `common.measure.provenance` (asked before any run).
read_cpu_flags, native_cpu_bfloat16 = provenance.read_cpu_flags, provenance.native_cpu_bfloat16


def _gpu_capabilities() -> list:
  return [tf.config.experimental.get_device_details(gpu).get("compute_capability") or (0, 0)
          for gpu in tf.config.list_physical_devices("GPU")]


def check_supported(precision: str, cpu_flags: Callable[[], Tuple[str, Sequence[str]]] = read_cpu_flags,
                    gpu_capabilities: Callable[[], list] = _gpu_capabilities) -> None:
  """Refuses mixed_bfloat16 where bfloat16 is not native: a GPU of compute capability below 8.0, or a CPU
  without a bfloat16 flag (and no GPU). float32 is always accepted.

  Args:
    precision: one of `config_lib.PRECISIONS`.
    cpu_flags: returns (machine, CPU flags) (`read_cpu_flags`; tests inject their own).
    gpu_capabilities: returns the (major, minor) compute capability of each GPU ([] without GPUs).

  Raises:
    errors.UserError: one line saying why and what to use instead.
  """
  if precision != MIXED_BFLOAT16:
    return
  capabilities = gpu_capabilities()
  if capabilities:
    slow = [c for c in capabilities if tuple(c) < MIN_GPU_CAPABILITY]
    if slow:
      raise errors.UserError(
          f"--precision=mixed_bfloat16 needs GPUs of compute capability >= 8.0 (native bfloat16), this machine's "
          f"are {', '.join('.'.join(map(str, c)) for c in capabilities)}; use --precision=float32.")
    return
  machine, flags = cpu_flags()
  if native_cpu_bfloat16(machine, flags) is None:
    wanted = ARM_FEATURE if machine in ("aarch64", "arm64") else " or ".join(X86_FLAGS)
    raise errors.UserError(
        f"--precision=mixed_bfloat16 needs a processor with native bfloat16 ({wanted} among its CPU flags), and "
        f"this {machine or 'unknown'} processor has none: TensorFlow's bfloat16 kernels are several times slower "
        "than float32 there (tensorflow#42422, #45441); use --precision=float32.")
