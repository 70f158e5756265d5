"""TCP ports of the tasks of a cluster: free ones to listen on, whether a port can be listened on, and whether a
task's address accepts connections (once, or waited for). TensorFlow-free: the launcher (`common.launch`) imports it,
and so do the parameter-server cluster (`common.distribute.parameter_server`) and the Slurm cluster
(`common.distribute.slurm`)."""

import socket
import time
from typing import Any, Callable, List, Sequence

LOOPBACK = "127.0.0.1"


def free_ports(count: int, host: str = LOOPBACK) -> List[int]:
  """`count` distinct TCP ports free on `host` now (the kernel's choice; held until all are picked)."""
  sockets = []
  try:
    for _ in range(count):
      s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
      s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
      s.bind((host, 0))
      sockets.append(s)
    return [s.getsockname()[1] for s in sockets]
  finally:
    for s in sockets:
      s.close()


def listening(address: str, timeout: float = 1.0) -> bool:
  """True when "host:port" accepts a TCP connection within `timeout` seconds (its server is up)."""
  host, port = address.rsplit(":", 1)
  try:
    socket.create_connection((host, int(port)), timeout=timeout).close()
    return True
  except OSError:
    return False


def bindable(port: int) -> bool:
  """True when a server of this process could listen on TCP `port` of every interface now: no other process
  listens there (a socket in TIME_WAIT does not count: servers bind with SO_REUSEADDR, as gRPC's do)."""
  s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
  try:
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind(("", port))
    return True
  except OSError:
    return False
  finally:
    s.close()


def wait_listening(addresses: Sequence[str], seconds: float, stop: Callable[[], Any] = lambda: None,
                   poll_seconds: float = 0.1) -> Any:
  """Waits until every "host:port" of `addresses` accepts connections (its server is up).

  Args:
    addresses: the servers' addresses, in the order they are waited for.
    seconds: how long they may take, all together.
    stop: called between attempts; a value other than None ends the wait (e.g. a process that failed meanwhile).
    poll_seconds: the pause between two attempts at an address that does not accept yet.

  Returns:
    None once every address accepts; `stop()`'s value once it is not None; or, after `seconds`, the one-line
    message "the servers at <addresses> did not start within <seconds> s." (a str).
  """
  deadline = time.monotonic() + seconds
  pending = list(addresses)
  while pending:
    stopped = stop()
    if stopped is not None:
      return stopped
    if time.monotonic() > deadline:
      return f"the servers at {', '.join(pending)} did not start within {seconds:.0f} s."
    if listening(pending[0]):
      pending.pop(0)
    else:
      time.sleep(poll_seconds)
  return None
