"""The tasks of a job watch one another over TCP, so that each learns within a second how another ended: it finished
("done"), it ended with an error it reported itself ("failed"), or it was lost (killed, crashed, its node gone) or
never started. TensorFlow-free. The Slurm cluster (`common.distribute.slurm`) uses it: there no launcher watches
the tasks' processes (`common.launch` does on one machine), and each task must learn about the others itself.

Each task listens on its own "host:port" (its watch address, not its TensorFlow server's) and connects to every
other task's, keeping the connections open. A task that ends by itself first sends one word to every connection
(`Peers.end`: "done" or "failed"); a connection that closes without a word, or whose TCP keep-alive probes go
unanswered (a node that lost power), means the task was lost. A task not accepting connections within
`start_seconds` of this one's start never started. Every outcome is reported once per task to `on_end(rank, how)`,
on a watcher thread, once that task's process has ended (its connection closed), until this task ends itself.
"""

import socket
import threading
import time
from typing import Callable, Dict, FrozenSet, List, Optional, Sequence, Set

DONE, FAILED, LOST, ABSENT = "done", "failed", "lost", "absent"
_WORDS = (DONE, FAILED)
POLL_SECONDS = 0.2
# TCP keep-alive of the watching connections: the first probe after this many idle seconds, then every
# _KEEPALIVE_INTERVAL seconds, the peer lost after _KEEPALIVE_PROBES unanswered ones (about 20 s for a dead node).
_KEEPALIVE_IDLE, _KEEPALIVE_INTERVAL, _KEEPALIVE_PROBES = 5, 5, 3


def _keepalive(sock: socket.socket) -> None:
  sock.setsockopt(socket.SOL_SOCKET, socket.SO_KEEPALIVE, 1)
  for option, value in (("TCP_KEEPIDLE", _KEEPALIVE_IDLE), ("TCP_KEEPINTVL", _KEEPALIVE_INTERVAL),
                        ("TCP_KEEPCNT", _KEEPALIVE_PROBES)):
    if hasattr(socket, option):  # Linux; elsewhere the system's keep-alive times apply.
      sock.setsockopt(socket.IPPROTO_TCP, getattr(socket, option), value)


class Peers:
  """This task's watch of the other tasks of its job.

  Args:
    rank: this task's index in `addresses`.
    addresses: every task's watch address, "host:port", in rank order (the same list in every task).
    on_end: called as on_end(rank, how) once for each other task whose process has ended (its connection closed),
      `how` one of DONE, FAILED (the word it said with `end`), LOST (no word) or ABSENT (it did not accept a
      connection within `start_seconds`); on a watcher thread; not after this task's own `end`.
    start_seconds: how long the other tasks may take to start listening, counted from `start`.
  """

  def __init__(self, rank: int, addresses: Sequence[str], on_end: Callable[[int, str], None],
               start_seconds: float):
    self.rank = rank
    self.addresses = list(addresses)
    self._on_end = on_end
    self._start_seconds = start_seconds
    self._lock = threading.Lock()
    self._accepted: List[socket.socket] = []
    self._word: Optional[str] = None
    self._listener: Optional[socket.socket] = None
    self.ended: Dict[int, str] = {}  # {rank: how} of the tasks seen ending so far.
    self._watching: Set[int] = set()

  def start(self) -> None:
    """Listens on this task's address (all interfaces, its port) and starts watching every other task.

    Raises:
      OSError: this task's port cannot be bound (another process holds it).
    """
    port = int(self.addresses[self.rank].rsplit(":", 1)[1])
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind(("", port))
    listener.listen(max(len(self.addresses), 16))
    self._listener = listener
    threading.Thread(target=self._accept, name="peers-accept", daemon=True).start()
    deadline = time.monotonic() + self._start_seconds
    for rank in range(len(self.addresses)):
      if rank != self.rank:
        threading.Thread(target=self._watch, args=(rank, deadline), name=f"peers-watch-{rank}", daemon=True).start()

  def end(self, how: str) -> None:
    """Tells every other task that this one ends (`how`: DONE or FAILED) and stops reporting theirs. Idempotent:
    the first word counts."""
    assert how in _WORDS, how
    with self._lock:
      if self._word is not None:
        return
      self._word = how
      accepted = list(self._accepted)
    for conn in accepted:
      self._say(conn, how)

  @property
  def watching(self) -> FrozenSet[int]:
    """The ranks of the tasks this one has connected to so far (those it can tell finished from lost)."""
    with self._lock:
      return frozenset(self._watching)

  def _say(self, conn: socket.socket, word: str) -> None:
    try:
      conn.sendall(word.encode() + b"\n")
    except OSError:
      pass  # That task is gone: it hears nothing more anyway.

  def _accept(self) -> None:
    while True:
      try:
        conn, _ = self._listener.accept()
      except OSError:
        return
      with self._lock:
        self._accepted.append(conn)
        word = self._word
      if word is not None:  # A task that connects after this one ended hears it at once.
        self._say(conn, word)

  def _report(self, rank: int, how: str) -> None:
    with self._lock:
      if rank in self.ended or self._word is not None:
        return
      self.ended[rank] = how
    self._on_end(rank, how)

  def _watch(self, rank: int, deadline: float) -> None:
    host, port = self.addresses[rank].rsplit(":", 1)
    while True:
      try:
        sock = socket.create_connection((host, int(port)), timeout=max(POLL_SECONDS, 1.0))
        break
      except OSError:
        if time.monotonic() > deadline:
          self._report(rank, ABSENT)
          return
        time.sleep(POLL_SECONDS)
    sock.settimeout(None)
    _keepalive(sock)
    with self._lock:
      self._watching.add(rank)
    received = b""
    while True:  # Until the task's process has ended (its connection closes), whatever it said before.
      try:
        chunk = sock.recv(64)
      except OSError:
        chunk = b""
      if not chunk:
        break
      received += chunk
    sock.close()
    word = received.split(b"\n", 1)[0].decode(errors="replace")
    self._report(rank, word if word in _WORDS else LOST)
