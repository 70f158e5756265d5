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

import platform
from typing import Callable, Optional, Sequence, Tuple

import tensorflow as tf

from common import errors
from common import programs

FLOAT32, MIXED_BFLOAT16 = programs.PRECISIONS
# x86 CPU flags of native bfloat16 arithmetic (AVX-512 BF16, AMX BF16); aarch64's feature is "bf16".
X86_FLAGS = ("avx512_bf16", "amx_bf16")
ARM_FEATURE = "bf16"
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


def read_cpu_flags(cpuinfo: str = "/proc/cpuinfo") -> Tuple[str, Sequence[str]]:
  """(machine, CPU flags): `platform.machine()` and the "flags" (x86) or "Features" (aarch64) of the first
  processor in `cpuinfo`; no flags when the file cannot be read."""
  try:
    with open(cpuinfo) as f:
      for line in f:
        key, _, value = line.partition(":")
        if key.strip() in ("flags", "Features"):
          return platform.machine(), value.split()
  except OSError:
    pass
  return platform.machine(), ()


def native_cpu_bfloat16(machine: str, flags: Sequence[str]) -> Optional[str]:
  """The CPU flag that gives native bfloat16 arithmetic (e.g. "avx512_bf16"), or None."""
  wanted = (ARM_FEATURE,) if machine in ("aarch64", "arm64") else X86_FLAGS
  return next((flag for flag in wanted if flag in flags), None)


def _gpu_capabilities() -> list:
  return [tf.config.experimental.get_device_details(gpu).get("compute_capability") or (0, 0)
          for gpu in tf.config.list_physical_devices("GPU")]


def check_supported(precision: str, cpu_flags: Callable[[], Tuple[str, Sequence[str]]] = read_cpu_flags,
                    gpu_capabilities: Callable[[], list] = _gpu_capabilities) -> None:
  """Refuses mixed_bfloat16 where bfloat16 is not native: a GPU of compute capability below 8.0, or a CPU
  without a bfloat16 flag (and no GPU). float32 is always accepted.

  Args:
    precision: one of `programs.PRECISIONS`.
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
