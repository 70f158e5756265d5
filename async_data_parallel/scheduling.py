"""The coordinator's side: a range of steps as functions of K steps on free workers, the wait for them while
watching the workers, and what the run cannot survive.

`tf.distribute.coordinator.ClusterCoordinator` queues each scheduled function and runs it on the next free
worker. When a worker fails, the function it was running is put back in the queue and runs again on another
worker (or on the same one once it is back); updates the first attempt had applied stay applied. TensorFlow
waits up to an hour for a failed worker to come back; this program ends the run instead once no worker has
accepted a connection for `recovery_seconds`. A parameter server's failure ends the run (the variables are
gone); the last checkpoint of --model_dir is where the same command resumes.
"""

import re
import threading
import time
from typing import Any, Callable, List, Sequence, Tuple

from absl import logging
import numpy as np
import tensorflow as tf

from common.base import errors
from common.base import ports

# Seconds between two looks at the coordinator's queue while waiting.
POLL_SECONDS = 0.005
# Seconds between two checks that the workers accept connections.
LIVENESS_SECONDS = 1.0
# Seconds a liveness check waits for a worker's connection.
CONNECT_SECONDS = 1.0


class ClusterLostError(errors.UserError):
  """The run cannot go on: no worker left, or a parameter server (or the connection to it) lost."""


def cluster_failure(error: Exception) -> str:
  """The one line a user sees when the cluster failed under the run: which task, and how to resume."""
  tasks = sorted(set(re.findall(r"/job:(?:ps|chief)/replica:0/task:\d+", str(error))))
  where = f"the connection to {', '.join(tasks)}" if tasks else "a task of the cluster"
  return (f"lost {where} ({type(error).__name__}): the run cannot continue without the variables on the parameter "
          "server(s). Restart the lost task and rerun the same command with --model_dir to resume from the last "
          "checkpoint.")


class Scheduler:
  """Runs ranges of steps of a layer as functions of `steps_per_function` steps on the workers.

  Args:
    coordinator: the `ClusterCoordinator`.
    worker_addresses: "host:port" of every worker task (liveness checks), or () to skip them (in-process
      workers live as long as this process).
    steps_per_function: K.
    recovery_seconds: how long no live worker is tolerated before `ClusterLostError`.
  """

  def __init__(self, coordinator: tf.distribute.coordinator.ClusterCoordinator, worker_addresses: Sequence[str],
               steps_per_function: int, recovery_seconds: float):
    self.coordinator = coordinator
    self.worker_addresses = tuple(worker_addresses)
    self.steps_per_function = steps_per_function
    self.recovery_seconds = recovery_seconds
    self.scheduled = 0  # Functions scheduled by this process.

  def live_workers(self) -> int:
    """How many of `worker_addresses` accept connections now."""
    return sum(ports.listening(a, CONNECT_SECONDS) for a in self.worker_addresses)

  def _wait(self, running: Callable[[], bool]) -> None:
    """Blocks while `running()`, watching the workers.

    Raises:
      ClusterLostError: no worker accepted a connection for `recovery_seconds`.
    """
    lost_since, next_check = None, time.monotonic() + LIVENESS_SECONDS
    while running():
      now = time.monotonic()
      if self.worker_addresses and now >= next_check:
        next_check = now + LIVENESS_SECONDS
        if self.live_workers():
          lost_since = None
        elif lost_since is None:
          lost_since = now
          logging.warning("No worker accepts connections; waiting up to %.0f s (--worker_recovery_seconds) for one "
                          "to come back.", self.recovery_seconds)
        elif now - lost_since > self.recovery_seconds:
          raise ClusterLostError(
              f"no worker of {', '.join(self.worker_addresses)} has accepted a connection for "
              f"{self.recovery_seconds:.0f} s (--worker_recovery_seconds); restart the workers and rerun the same "
              "command with --model_dir to resume from the last checkpoint.")
      time.sleep(POLL_SECONDS)

  def submit(self, function: Callable[..., Any], epoch: int, first_step: int, num_steps: int,
             learning_rate: float, origin: int = 0) -> List[Any]:
    """Schedules steps first_step .. first_step + num_steps - 1 of `epoch` as functions of K steps, in order,
    and returns at once.

    Args:
      function: `LayerSteps.function`, fn(epoch, first_step, num_steps, learning_rate, origin) -> (summed loss,
        staleness int64 [steps], worker index).
      origin: the version counter's value from which the layer's applied updates count (its layer warm-up's steps).

    Returns:
      The functions' `RemoteValue`s, for `collect`.
    """
    remote: List[Any] = []
    lr = tf.constant(learning_rate, tf.float32)
    for start in range(first_step, first_step + num_steps, self.steps_per_function):
      n = min(self.steps_per_function, first_step + num_steps - start)
      remote.append(self.coordinator.schedule(
          function, args=(tf.constant(epoch), tf.constant(start), tf.constant(n), lr,
                          tf.constant(origin, tf.int64))))
    self.scheduled += len(remote)
    return remote

  def collect(self, remote: Sequence[Any]) -> Tuple[float, np.ndarray, np.ndarray]:
    """Waits for the functions of `remote` (from `submit`) while watching the workers; returns their results.

    The values are fetched on a thread of this method's, so that a wait for a worker that never comes back ends
    after `recovery_seconds` instead of TensorFlow's hour.

    Returns:
      (the sum of the steps' mean batch losses, int64 [steps] staleness of every update as its function's last
      run measured it, int64 [functions] the worker that ran each function).

    Raises:
      ClusterLostError: no worker accepted a connection for `recovery_seconds`.
      Whatever a function raised (its `RemoteValue` re-raises it), e.g. a parameter server's failure.
    """
    values: List[Any] = []
    failures: List[BaseException] = []

    def fetch():
      try:
        values.extend(r.fetch() for r in remote)
      except Exception as e:  # pylint: disable=broad-except  # Raised again in the caller's thread below.
        failures.append(e)

    fetcher = threading.Thread(target=fetch, name="async_fetch", daemon=True)
    fetcher.start()
    self._wait(fetcher.is_alive)
    if failures:
      raise failures[0]
    total = float(sum(v[0] for v in values))
    staleness = np.concatenate([np.asarray(v[1], np.int64) for v in values]) if values else np.zeros(0, np.int64)
    return total, staleness, np.asarray([int(v[2]) for v in values], np.int64)
