"""Progress a person can watch: a log line per epoch with loss, throughput, elapsed time and ETA, and a
tqdm progress bar on stderr when attached to a terminal.

Work is counted in abstract units (the programs use FLOPs of each layer-epoch, so the ETA accounts
for deeper layers costing more than the first).
"""

import datetime
import math
import sys
import time
from typing import Optional

from absl import logging
import tqdm


# Durations from this many seconds on print in years (datetime.timedelta overflows near 2.7 million years).
_YEAR_SECONDS = 365.25 * 86400


def _clock(seconds: float) -> str:
  """"H:MM:SS", "N days, H:MM:SS", or "~N years" for any float, however large ("?" for NaN)."""
  if math.isnan(seconds):
    return "?"
  seconds = max(seconds, 0.0)
  if seconds >= 1000 * _YEAR_SECONDS:
    return f"~{seconds / _YEAR_SECONDS:.3g} years"
  return str(datetime.timedelta(seconds=int(round(seconds))))


class Progress:
  """Tracks done work against a total and reports it.

  Args:
    total_work: total work units of the phase (> 0).
    description: label of the bar, e.g. "pretrain".
    show_bar: draw a tqdm bar on stderr.
    done_work: work already done (when resuming), counted as done but not timed.
  """

  def __init__(self, total_work: float, description: str, show_bar: bool = False, done_work: float = 0.0):
    self.total = float(total_work)
    self.done = float(done_work)
    self._timed_work = 0.0
    self._start = time.perf_counter()
    self._bar = (tqdm.tqdm(total=100.0, desc=description, file=sys.stderr, leave=False,
                           bar_format="{desc}: {percentage:3.0f}%|{bar}| [{elapsed}<{remaining}]")
                 if show_bar else None)
    self._advance_bar(0.0)

  @property
  def elapsed(self) -> float:
    """Seconds since this phase started in this process."""
    return time.perf_counter() - self._start

  def eta(self) -> Optional[float]:
    """Seconds left, extrapolated from the work timed so far; None before any."""
    if self._timed_work <= 0:
      return None
    return self.elapsed / self._timed_work * max(self.total - self.done, 0.0)

  def _advance_bar(self, work: float) -> None:
    if self._bar is not None and self.total > 0:
      self._bar.n = min(100.0, 100.0 * self.done / self.total)
      self._bar.refresh()

  def advance(self, work: float) -> None:
    """Counts `work` more units as done (updates the bar)."""
    self.done += work
    self._timed_work += work
    self._advance_bar(work)

  def log(self, message: str, examples: int, seconds: float) -> None:
    """Logs one line: `message`, examples/s over `seconds`, elapsed time and ETA."""
    eta = self.eta()
    line = (f"{message} | {examples / max(seconds, 1e-9):,.0f} examples/s | elapsed {_clock(self.elapsed)}"
            f" | ETA {_clock(eta) if eta is not None else '?'}")
    if self._bar is not None:
      self._bar.clear()
    logging.info("%s", line)
    if self._bar is not None:
      self._bar.refresh()

  def close(self) -> None:
    """Removes the bar."""
    if self._bar is not None:
      self._bar.close()
      self._bar = None
