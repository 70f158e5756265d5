"""Where a step's time goes, read from a TensorFlow profiler trace (`--profile_dir`, `tf.profiler.experimental`).

The trace (`<profile_dir>/plugins/profile/<time>/<host>.xplane.pb`, the file TensorBoard's Profile tab reads) holds,
per TensorFlow thread, every op it ran (host tracer level 3: the ops inside functions and loops too) and the
executor's own spans around them. `account` sorts each thread's time in the traced window into
  matrix products  MatMul and its oneDNN forms (_MklMatMul, _FusedMatMul, ...): the arithmetic the limit counts;
                   oneDNN's layout reorders and bfloat16 packing happen inside these kernels;
  conversions      Cast (bfloat16 <-> float32 in mixed precision);
  element-wise     every other op: sigmoids, sums, masks, random numbers, the SGD update, gathers;
  transfers        _Send / _Recv between devices;
  dispatch         the executor's own time: spans that are not ops, and function-call ops beyond their inner ops;
  idle             the window minus the thread's spans;
and `timeline` keeps the spans of a few steps for a picture (`draw`). Threads, not devices: TensorFlow's inter-op pool
serves every logical device, so one thread may run both devices' ops (docs/kernels_and_threads.md).
  python -m common.measure.trace_account <profile_dir> [steps]   # prints the account of the newest trace
"""

import functools
import glob
import os
import re
import sys
from typing import Any, Dict, List, Sequence, Tuple

CATEGORIES = ("matrix products", "conversions", "element-wise", "transfers", "dispatch", "idle")
MATMULS = ("MatMul", "BatchMatMul", "BatchMatMulV2", "BatchMatMulV3", "Einsum")
CONVERSIONS = ("Cast",)
TRANSFERS = ("_Send", "_Recv", "_HostSend", "_HostRecv")
WAITS = ("BlockUntilReady",)  # a thread waiting for another's work: idle
CALLS = ("StatefulPartitionedCall", "PartitionedCall", "While", "StatelessWhile", "If", "StatelessIf")
PS_PER_SECOND = 1e12
IDLE_THREAD = 0.005  # a thread busy for less than this share of the window is left out of the account
Span = Tuple[float, float, str]  # (start seconds from the window's start, duration seconds, category)


def latest(profile_dir: str) -> str:
  """The newest trace file under `profile_dir` (not its sub-folders' traces); FileNotFoundError without one."""
  found = sorted(glob.glob(os.path.join(profile_dir, "plugins", "profile", "*", "*.xplane.pb")))
  if not found:
    raise FileNotFoundError(f"no profiler trace (plugins/profile/*/*.xplane.pb) under {profile_dir}")
  return found[-1]


def category(name: str) -> str:
  """The category of a trace event's name: "<op name>:<op type>" for a TensorFlow op, "<name>.<n>" for an instruction
  of an XLA-compiled function (its kind in the name: MatMul, convert, ..._fusion), "BlockUntilReady" for a thread
  waiting (idle), anything else for the executor's spans (dispatch)."""
  if name in WAITS:
    return "idle"
  if re.fullmatch(r"[\w\-]+\.\d+", name):
    kind = name.rsplit(".", 1)[0]
    if "MatMul" in kind or kind.startswith(("dot", "convolution")):
      return "matrix products"
    return "conversions" if kind.startswith("convert") else "element-wise"
  if ":" not in name or "::" in name:
    return "dispatch"
  kind = name.rsplit(":", 1)[1].strip()
  if kind in MATMULS or "MatMul" in kind:
    return "matrix products"
  if kind in CONVERSIONS:
    return "conversions"
  if kind in TRANSFERS:
    return "transfers"
  if kind in CALLS or kind.startswith("__inference"):
    return "dispatch"
  return "element-wise"


@functools.lru_cache(maxsize=4)
def thread_spans(path: str) -> Dict[str, List[Tuple[int, int, int, str]]]:
  """{thread name: [(start ps, end ps, nesting depth, category), ...] in start order} of the host plane's TensorFlow
  threads (names starting "tf_"), times absolute in picoseconds; read once per file (`account` and `timeline` share
  it: do not modify)."""
  from tensorflow.tsl.profiler.protobuf import xplane_pb2  # pylint: disable=g-import-not-at-top
  space = xplane_pb2.XSpace()
  with open(path, "rb") as f:
    space.ParseFromString(f.read())
  host = next(p for p in space.planes if p.name.startswith("/host:CPU"))
  out = {}
  for line in host.lines:
    if not line.name.startswith("tf_") or not line.events:
      continue
    base = line.timestamp_ns * 1000
    events = sorted(((base + e.offset_ps, base + e.offset_ps + e.duration_ps,
                      category(host.event_metadata[e.metadata_id].name)) for e in line.events),
                    key=lambda e: (e[0], -e[1]))
    spans, stack = [], []
    for start, end, kind in events:
      while stack and stack[-1] <= start:
        stack.pop()
      spans.append((start, end, len(stack), kind))
      stack.append(end)
    out[f"thread {len(out) + 1}"] = spans
  return out


def _window(spans: Dict[str, List[Tuple[int, int, int, str]]]) -> Tuple[int, int]:
  """(first start, last end) in picoseconds over every thread's spans."""
  return min(s[0] for ss in spans.values() for s in ss), max(s[1] for ss in spans.values() for s in ss)


def account(path: str, steps: int) -> Dict[str, Any]:
  """The account of a trace file's window (the first span's start to the last one's end over every thread).

  Args:
    path: an .xplane.pb file (`latest`).
    steps: training steps the window holds (batches through every stage), >= 1.

  Returns:
    {"window_seconds", "steps", "threads": {thread: {category: seconds per step}} (each thread's categories sum to
     window_seconds / steps; threads busy for less than IDLE_THREAD of the window left out), "shares": {category:
     share of all threads' window time}}.

  Raises:
    ValueError: a trace without TensorFlow threads, or steps < 1.
  """
  if steps < 1:
    raise ValueError(f"steps must be >= 1, got {steps}")
  spans = thread_spans(path)
  if not spans:
    raise ValueError(f"{path}: no TensorFlow thread in the trace")
  first, last = _window(spans)
  window = (last - first) / PS_PER_SECOND
  threads = {}
  for name, ss in spans.items():
    own, own_ps, open_spans = dict.fromkeys(CATEGORIES, 0.0), [end - start for start, end, _, _ in ss], []
    for i, (start, end, _, _) in enumerate(ss):  # self time: a span minus its direct children (one pass)
      while open_spans and ss[open_spans[-1]][1] <= start:
        open_spans.pop()
      if open_spans:
        own_ps[open_spans[-1]] -= end - start
      open_spans.append(i)
    for (_, _, _, kind), ps in zip(ss, own_ps):
      own[kind] += ps / PS_PER_SECOND
    busy = sum(v for k, v in own.items() if k != "idle")
    if busy < IDLE_THREAD * window:
      continue
    own["idle"] = window - busy  # waits and gaps
    threads[name] = {k: v / steps for k, v in own.items()}
  total = sum(sum(t.values()) for t in threads.values())
  return {"window_seconds": window, "steps": steps, "threads": threads,
          "shares": {k: sum(t[k] for t in threads.values()) / total for k in CATEGORIES}}


def timeline(path: str, steps: int, shown: int = 3) -> Dict[str, Any]:
  """The spans of `shown` steps from the middle of the window, for `draw`: {"seconds": their length, "threads":
  {thread: [[start s, duration s, category, depth], ...]}} (times from the shown part's start, microseconds kept;
  idle waits and spans shorter than 1/2000 of the length, below a picture's resolution, left out)."""
  spans = thread_spans(path)
  first, last = _window(spans)
  length = (last - first) * min(shown, steps) / steps
  start = first + (last - first - length) / 2
  out = {}
  for name, ss in spans.items():
    kept = [(max(s, start), min(e, start + length), depth, kind) for s, e, depth, kind in ss]
    out[name] = [[round((s - start) / PS_PER_SECOND, 6), round((e - s) / PS_PER_SECOND, 6), kind, depth]
                 for s, e, depth, kind in kept if e - s > length / 2000 and kind != "idle"]
  return {"seconds": round(length / PS_PER_SECOND, 6), "threads": out}


COLORS = {"matrix products": "tab:blue", "conversions": "tab:orange", "element-wise": "tab:green",
          "transfers": "tab:purple", "dispatch": "0.8"}


def draw(ax, shown: Dict[str, Any], title: str) -> None:
  """Draws a `timeline` on a matplotlib axis: one row per thread with spans, coloured by category (inner spans over
  outer ones, so the executor's own time shows grey and idle time white; a thread waiting inside an executor's span,
  e.g. for an XLA computation, shows that span's grey)."""
  names = [name for name, spans in shown["threads"].items() if spans]
  for row, name in enumerate(names):
    for start, length, kind, _ in sorted(shown["threads"][name], key=lambda s: s[3]):
      ax.broken_barh([(start * 1e3, length * 1e3)], (row - 0.4, 0.8), color=COLORS[kind], linewidth=0)
  ax.set_yticks(range(len(names)), names, fontsize=8)
  ax.set_xlim(0, shown["seconds"] * 1e3)
  ax.invert_yaxis()
  ax.set_xlabel("milliseconds", fontsize=8)
  ax.set_title(title, fontsize=9)


def legend(fig) -> None:
  """A legend of the categories (and idle) for a figure of `draw`n timelines."""
  from matplotlib import patches  # pylint: disable=g-import-not-at-top
  fig.legend(handles=[patches.Patch(color=c, label=k) for k, c in COLORS.items()] +
             [patches.Patch(facecolor="white", edgecolor="0.5", label="idle")], loc="lower center", ncol=6,
             fontsize=8, frameon=False)


def main(argv: Sequence[str]) -> int:
  """`python -m common.measure.trace_account <profile_dir> [steps]`: prints each thread's account."""
  if len(argv) not in (2, 3):
    print(__doc__.strip().splitlines()[-1].strip(), file=sys.stderr)
    return 2
  found = account(latest(argv[1]), int(argv[2]) if len(argv) == 3 else 1)
  unit = "per step" if len(argv) == 3 else "in the window"
  print(f"window {found['window_seconds']:.3f} s, {found['steps']} step(s); milliseconds {unit}:")
  print("thread    " + "".join(f"{k:>17}" for k in CATEGORIES))
  for name, t in found["threads"].items():
    print(f"{name:10}" + "".join(f"{t[k] * 1e3:17.2f}" for k in CATEGORIES))
  return 0


if __name__ == "__main__":
  sys.exit(main(sys.argv))
