"""The checks of settings' values: each `check(flag name, value)` raises ValueError with one line that starts with the
flag ("--batch_size must be a positive integer, got 0."), so the library and the command line refuse a bad value with
the same message (`common.settings.config.setting` attaches a check to its field).
"""

import math
from typing import Any, Callable, Optional

from common.measure import provenance


def positive_int(name: str, value: Any, note: str = "") -> None:
  """Refuses anything but an int >= 1 (bool too), naming `note` after "integer"."""
  if isinstance(value, bool) or not isinstance(value, int) or value < 1:
    raise ValueError(f"--{name} must be a positive integer{note}, got {value!r}.")


def counts(what: str) -> Callable[[str, Any], None]:
  """The check of a positive count, refused as "must be a positive integer (<what>)"."""
  return lambda name, value: positive_int(name, value, f" ({what})")


def non_negative_int(note: str) -> Callable[[str, Any], None]:
  """The check of an int >= 0 (bool refused), refused as "must be a non-negative integer<note>"."""
  def check(name, value):
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
      raise ValueError(f"--{name} must be a non-negative integer{note}, got {value!r}.")
  return check


def at_most(limit: int, first: Callable[[str, Any], None] = positive_int) -> Callable[[str, Any], None]:
  """The check `first`, then value <= `limit`."""
  def check(name, value):
    first(name, value)
    if value > limit:
      raise ValueError(f"--{name} must be at most {limit:,}, got {value}.")
  return check


def positive(name: str, value: Any) -> None:
  """Refuses a number <= 0 (or NaN)."""
  if not value > 0:
    raise ValueError(f"--{name} must be positive, got {value}.")


def number_in(low: float, high: float, what: str, low_open: bool = False) -> Callable[[str, Any], None]:
  """A check of a finite number in [low, high] ((low, high] when `low_open`), refused as "must be <what>"."""
  def check(name, value):
    ok = isinstance(value, (int, float)) and math.isfinite(value) and (low < value if low_open else low <= value)
    if not (ok and value <= high):
      raise ValueError(f"--{name} must be {what}, got {value!r}.")
  return check


def optional(check: Callable[[str, Any], None]) -> Callable[[str, Any], None]:
  """`check`, with None (the setting left unset) allowed."""
  return lambda name, value: None if value is None else check(name, value)


def hidden_units(name: str, units: Any) -> None:
  """Refuses an empty list or a layer size that is not a positive integer."""
  if not units:
    raise ValueError(f"--{name} must list at least one layer size, e.g. 2000,2000.")
  for u in units:
    try:
      u = int(u)
    except (TypeError, ValueError):
      raise ValueError(f"--{name} must be positive integers separated by commas, got {u!r}.") from None
    if u < 1:
      raise ValueError(f"--{name} must be positive integers, got {u}.")


def threads(name: str, value: Any) -> None:
  """A positive integer no larger than this process's usable cores (`check_threads`)."""
  positive_int(name, value)
  check_threads(value)


def seed(name: str, value: Any) -> None:
  """An int in [0, 2^31)."""
  if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value < 2**31:
    raise ValueError(f"--{name} must be an integer in [0, 2^31), got {value!r}.")


def corruption(name: str, value: Any) -> None:
  """The masking noise's fraction of input units set to zero, in [0, 1)."""
  if not 0.0 <= value < 1.0:
    raise ValueError(f"--{name} must be in [0, 1) (the fraction of pixels masked), got {value}.")


def check_threads(threads_per_device: int, cores: Optional[int] = None) -> None:
  """Raises ValueError when `threads_per_device` exceeds the cores this process may use.

  More threads than cores in one device cannot run at once; a very large count only grows memory (each
  thread has a stack). Devices x threads beyond the cores stays allowed (`common.distribute.devices.oversubscription`).
  """
  cores = cores or provenance.usable_cores()
  if threads_per_device > cores:
    raise ValueError(f"--threads_per_device must be at most {cores} (the cores this process may use), "
                     f"got {threads_per_device}.")


def check_divisible(global_batch_size: int, replicas: int, flag: str = "batch_size") -> None:
  """Raises ValueError unless the global batch splits evenly over the replicas.

  Args:
    global_batch_size: B, examples per step over all replicas.
    replicas: replicas in sync: G, or G times the workers of a multi-worker run.
    flag: the flag named in the message.
  """
  if global_batch_size % replicas:
    raise ValueError(
        f"--{flag}={global_batch_size} (the global batch) is not divisible by the {replicas} replicas "
        f"(--num_devices, times the workers when started by common.launch): every replica takes an equal share; "
        f"use a multiple of {replicas}, "
        f"e.g. {global_batch_size - global_batch_size % replicas or replicas}.")
