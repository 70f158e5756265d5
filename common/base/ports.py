"""TCP ports of the tasks of a local cluster: free ones to listen on, and whether a task's address accepts
connections. TensorFlow-free: the launcher (`common.launch`) imports it, and so does the parameter-server cluster
(`common.distribute.parameter_server`)."""

import socket
from typing import List

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
