"""Profile: where greedy's per-step time goes at a small batch, against the rate of a large batch.

The same FLOPs per epoch take longer at batch 100 than at batch 5000 (one 784 -> 2000 layer, one thread).
This runs greedy on one such layer at each --batch_sizes, alternated --repeats times; in every run the first
epoch is captured with the TensorFlow profiler (`--profile_dir`) and the later epochs are not (their seconds
give the epoch-time ratio, untouched by the tracer), on the kernel path --kernels. The trace is split into
(`split_trace`):
  * matrix products: the step's dot products (encoder, decoder, and the gradients): XLA's dot thunks, or
    TensorFlow's MatMul ops (oneDNN's `_MklMatMul`, `_MklNativeFusedMatMul`) on the tf path;
  * other XLA work: every other thunk of the compiled step (the masking-noise mask, the gather of the batch,
    sigmoids, the loss, the weight updates), per thunk name in `thunks` (0 on the tf path);
  * XLA launch: the compiled step's execution beyond its thunks (argument setup, thunk scheduling; 0 on the
    tf path);
  * graph ops: the TensorFlow ops outside the compiled step (the epoch order's index shuffle, the loop); on the
    tf path every op but the matrix products (per op type in `thunks`);
  * executor: the rest of the epoch's wall time (TensorFlow's graph executor between ops).
Per category it reports microseconds per step and nanoseconds per example, and their difference between the
smallest and the largest batch: the extra time per example at the small batch, and where it goes.

Usage (timings are committed: run alone on the machine):
  python -m experiments.benchmarks.greedy_profile               # XLA steps
  python -m experiments.benchmarks.greedy_profile --kernels=tf  # TensorFlow's default kernels (greedy's default)
Writes <output_dir>/b<batch>_r<k>.json (run records), <output_dir>/summary.json; traces under <work_dir>.
The output directory defaults to results/benchmarks/greedy_profile, and its tf/ folder with --kernels=tf.
"""

import collections
import glob
import json
import os
import statistics
import subprocess
import sys
from typing import Dict, List, Sequence

from absl import app
from absl import flags

CATEGORIES = ("matrix_products", "other_xla", "xla_launch", "graph_ops", "executor")
# On the tf path a step is counted by its SGD updates: one `ResourceApplyGradientDescent` op per weight of the
# layer (kernel, bias, decoder bias; `DenoisingAutoencoder.sgd_step`).
UPDATE_OP, UPDATES_PER_STEP = "ResourceApplyGradientDescent", 3


_OUTPUT_DIR = "results/benchmarks/greedy_profile"


def _events(path: str):
  """(line name, event name, start ps, duration ps) of every event of every plane of an .xplane.pb trace."""
  from tensorflow.tsl.profiler.protobuf import xplane_pb2  # pylint: disable=g-import-not-at-top
  space = xplane_pb2.XSpace()
  with open(path, "rb") as f:
    space.ParseFromString(f.read())
  for plane in space.planes:
    for line in plane.lines:
      for e in line.events:
        yield line.name, plane.event_metadata[e.metadata_id].name, e.duration_ps


def split_trace(path: str) -> Dict:
  """Splits a traced greedy epoch into the categories of the module docstring.

  Args:
    path: an .xplane.pb file written by `tf.profiler.experimental` around one `run_steps` call of greedy's
      first layer, on either kernel path (found from the trace: XLA steps if it holds any).

  Returns:
    {"kernels": "xla" or "tf", "steps": steps executed, "wall_us": the run_steps call,
     "categories": {category: microseconds}, "thunks": {XLA thunk name, or TF op type on the tf path:
     microseconds}}, all totals over the traced epoch.

  Raises:
    ValueError: the trace holds no run_steps call, or no step (no XLA step and no whole number of steps' worth
      of TF update ops).
  """
  total: Dict[str, float] = collections.Counter()
  thunks: Dict[str, float] = collections.Counter()
  ops: Dict[str, float] = collections.Counter()
  op_counts: Dict[str, int] = collections.Counter()
  steps = 0
  wall = 0.0
  for line, name, ps in _events(path):
    us = ps / 1e6
    if name == "run_steps":
      wall += us
    elif name == "CpuExecutable::ExecuteAsyncOnStream":
      total["execute"] += us
      steps += 1
    elif name == "ThunkExecutor::Execute":
      total["thunk_executor"] += us
    elif line.startswith("tf_Compute") and ":" in name and not name.startswith(("end: ", "ExecutorState")):
      op_type = name.rsplit(":", 1)[1]  # TensorFlow ops, named "<node>:<OpType>"
      ops[op_type] += us
      op_counts[op_type] += 1
    elif line.startswith("tf_Compute") and not name.startswith(("end: ", "ExecutorState", "Executor", "Block")) \
        and "::" not in name and name != "Timestamp":
      thunks[name] += us
  if not wall:
    raise ValueError(f"{path}: no run_steps call in the trace")
  if not steps:
    return _split_tf_ops(path, wall, ops, op_counts)
  products = sum(us for name, us in thunks.items() if name.startswith(("MatMul", "dot")))
  other = sum(thunks.values()) - products
  graph_ops = sum(ops.values())
  categories = {"matrix_products": products, "other_xla": other,
                "xla_launch": total["execute"] - sum(thunks.values()),
                "graph_ops": graph_ops,
                "executor": wall - total["execute"] - graph_ops}
  return {"kernels": "xla", "steps": steps, "wall_us": wall, "categories": categories,
          "thunks": dict(sorted(thunks.items(), key=lambda kv: -kv[1]))}


def _split_tf_ops(path: str, wall: float, ops: Dict[str, float], op_counts: Dict[str, int]) -> Dict:
  """`split_trace` of a step on TensorFlow's default kernels: every op is a graph op; MatMul ops are products."""
  count = op_counts[UPDATE_OP]
  if not count or count % UPDATES_PER_STEP:
    raise ValueError(f"{path}: no XLA step, and {count} {UPDATE_OP} ops (not a whole number of steps of "
                     f"{UPDATES_PER_STEP}) in the trace")
  products = sum(us for op, us in ops.items() if "MatMul" in op)
  categories = {"matrix_products": products, "other_xla": 0.0, "xla_launch": 0.0,
                "graph_ops": sum(ops.values()) - products, "executor": wall - sum(ops.values())}
  return {"kernels": "tf", "steps": count // UPDATES_PER_STEP, "wall_us": wall, "categories": categories,
          "thunks": dict(sorted(ops.items(), key=lambda kv: -kv[1]))}


def summarize(runs: Dict[int, List[Dict]]) -> Dict:
  """Per batch: untraced epoch seconds, per-step and per-example time by category; the small-batch excess.

  Args:
    runs: {batch size: [{"record": run record, "trace": split_trace(...)}, ...]} (one per repeat).
  """
  out = {"batches": {}}
  for batch, rs in sorted(runs.items()):
    epochs = [e["seconds"] for r in rs for e in r["record"]["layers"][0]["epochs"][1:]]
    examples = rs[0]["trace"]["steps"] * batch
    per_example = {c: statistics.median(r["trace"]["categories"][c] for r in rs) * 1e3 / examples for c in CATEGORIES}
    out["batches"][str(batch)] = {
        "untraced_epoch_seconds": {"median": statistics.median(epochs), "min": min(epochs), "max": max(epochs),
                                   "values": epochs},
        "steps_per_epoch": rs[0]["trace"]["steps"],
        "traced_epoch_seconds": [r["trace"]["wall_us"] / 1e6 for r in rs],
        "us_per_step": {c: v * batch / 1e3 for c, v in per_example.items()},
        "ns_per_example": per_example,
        "thunks_us_per_step": {k: v / rs[0]["trace"]["steps"] for k, v in rs[0]["trace"]["thunks"].items()},
    }
  small, large = (out["batches"][str(b)] for b in (min(runs), max(runs)))
  out["epoch_ratio_small_to_large_batch"] = small["untraced_epoch_seconds"]["median"] / \
      large["untraced_epoch_seconds"]["median"]
  out["extra_ns_per_example"] = {c: small["ns_per_example"][c] - large["ns_per_example"][c] for c in CATEGORIES}
  return out


def main(argv: Sequence[str]) -> None:
  if len(argv) > 1:
    raise app.UsageError(f"unexpected arguments: {' '.join(argv[1:])}")
  f = flags.FLAGS
  batches = [int(b) for b in f.batch_sizes]
  output_dir = f.output_dir or os.path.join(_OUTPUT_DIR, *(["tf"] if f.kernels == "tf" else []))
  os.makedirs(output_dir, exist_ok=True)
  runs: Dict[int, List[Dict]] = {b: [] for b in batches}
  for r in range(f.repeats):
    for batch in batches:
      name = f"b{batch}_r{r}"
      trace_dir = os.path.join(f.work_dir, name)
      cmd = [sys.executable, "-m", "greedy.train", f"--hidden_units={f.hidden_units}", "--num_devices=1",
             "--threads_per_device=1", f"--pretrain_epochs={f.pretrain_epochs}", "--finetune_epochs=0",
             f"--batch_size={batch}", f"--train_examples={f.train_examples}", "--seed=0", "--progress=log",
             f"--kernels={f.kernels}", f"--profile_dir={trace_dir}", f"--results_dir={output_dir}",
             f"--run_name={name}"]
      print(f"[greedy_profile] {name}: {' '.join(cmd[1:])}", flush=True)
      subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
      trace = sorted(glob.glob(os.path.join(trace_dir, "plugins/profile/*/*.xplane.pb")))[-1]
      runs[batch].append({"record": json.load(open(os.path.join(output_dir, f"{name}.json"))),
                          "trace": split_trace(trace)})
  summary = {"benchmark": "greedy_profile",
             "command": " ".join(["python -m experiments.benchmarks.greedy_profile", *sys.argv[1:]]),
             "setting": {"hidden_units": f.hidden_units, "batch_sizes": batches,
                         "train_examples": f.train_examples, "pretrain_epochs": f.pretrain_epochs,
                         "repeats": f.repeats, "threads": 1, "kernels": f.kernels,
                         "environment": runs[batches[0]][0]["record"]["environment"]},
             **summarize(runs),
             "records": [os.path.join(output_dir, f"b{b}_r{r}.json") for r in range(f.repeats) for b in batches]}
  path = os.path.join(output_dir, "summary.json")
  with open(path, "w") as out:
    json.dump(summary, out, indent=1)
  print(f"[greedy_profile] epoch b{min(batches)} / b{max(batches)}: "
        f"{summary['epoch_ratio_small_to_large_batch']:.3f}; extra ns per example: " +
        ", ".join(f"{c} {v:+.1f}" for c, v in summary["extra_ns_per_example"].items()) + f"; {path}")


if __name__ == "__main__":
  flags.DEFINE_integer("hidden_units", 2000, "Hidden units of the one layer profiled (784 inputs).")
  flags.DEFINE_list("batch_sizes", ["100", "5000"], "Batch sizes compared; the smallest is set against the largest.")
  flags.DEFINE_integer("train_examples", 20_000, "Training images per epoch.")
  flags.DEFINE_integer("pretrain_epochs", 4, "Epochs per run: the first traced, the others timed untraced.")
  flags.DEFINE_integer("repeats", 2, "Runs per batch size, alternated.")
  flags.DEFINE_enum("kernels", "xla", ["xla", "tf"], "Kernel path of the profiled steps (greedy's --kernels).")
  flags.DEFINE_string("output_dir", None, f"Where run records and summary go (default {_OUTPUT_DIR}, its tf/ "
                      "folder with --kernels=tf).")
  flags.DEFINE_string("work_dir", "scratch/benchmarks/greedy_profile", "Where the profiler traces go.")
  flags.register_validator("batch_sizes", lambda v: len(v) >= 2 and all(s.isdigit() and int(s) > 0 for s in v),
                           "--batch_sizes must list at least two positive integers.")
  app.run(main)
