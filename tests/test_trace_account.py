"""Where a step's time goes (`common.measure.trace_account`): op names sorted into categories; the account of a real
profiler trace adds up to its window per thread and finds the products and casts the traced function ran; the
step_account benchmark's configurations, table and timeline figure, on a fixture."""

import pytest
import tensorflow as tf

from common.measure import timing
from common.measure import trace_account
from common.settings import programs
from experiments import harness
from experiments.benchmarks import step_account


def test_event_names_are_sorted_into_categories():
  cases = {"model/dense/MatMul:_MklMatMul": "matrix products", "a/b:MatMul": "matrix products",
           "x/BatchMatMulV2:BatchMatMulV2": "matrix products", "w/Cast:Cast": "conversions",
           "s/Sigmoid:Sigmoid": "element-wise", "u:ResourceApplyGradientDescent": "element-wise",
           "send/_3:_Send": "transfers", "f/StatefulPartitionedCall:StatefulPartitionedCall": "dispatch",
           "ExecutorState::Process": "dispatch", "ExecutorDoneCallback": "dispatch", "BlockUntilReady": "idle",
           "MatMul.12": "matrix products", "dot.3": "matrix products", "convert.4": "conversions",
           "multiply_subtract_fusion.5": "element-wise"}
  assert {name: trace_account.category(name) for name in cases} == cases


def test_the_account_of_a_real_trace_adds_up_and_finds_the_products_and_casts(tmp_path):
  a = tf.reshape(tf.range(256 * 256, dtype=tf.float32), [256, 256]) / (256 * 256)

  @tf.function
  def step(x):
    for _ in range(4):
      x = tf.sigmoid(tf.matmul(x, tf.cast(tf.cast(a, tf.float16), tf.float32)))
    return x
  step(a).numpy()
  with timing.trace(str(tmp_path)):
    for _ in range(5):
      step(a).numpy()
  path = trace_account.latest(str(tmp_path))
  found = trace_account.account(path, steps=5)
  assert found["steps"] == 5 and found["threads"] and found["window_seconds"] > 0
  for thread in found["threads"].values():
    assert list(thread) == list(trace_account.CATEGORIES)
    assert sum(thread.values()) == pytest.approx(found["window_seconds"] / 5)
    assert min(thread.values()) >= -1e-9
  busy = {k: sum(t[k] for t in found["threads"].values()) for k in trace_account.CATEGORIES}
  assert busy["matrix products"] > 0 and busy["conversions"] > 0 and busy["element-wise"] > 0
  assert sum(found["shares"].values()) == pytest.approx(1.0)
  shown = trace_account.timeline(path, steps=5, shown=2)
  assert 0 < shown["seconds"] <= found["window_seconds"]
  spans = [s for ss in shown["threads"].values() for s in ss]
  assert spans and all(0 <= start and start + length <= shown["seconds"] + 1e-6 for start, length, _, _ in spans)
  with pytest.raises(ValueError, match="steps"):
    trace_account.account(path, steps=0)
  with pytest.raises(FileNotFoundError, match="no profiler trace"):
    trace_account.latest(str(tmp_path / "nothing"))


def test_step_account_traces_the_pipeline_and_draws_its_timelines():
  options = {"precisions": list(programs.PRECISIONS), "trace_dir": "t", "label": "", "chunk_steps": 0}
  s = harness.Setting((32,), 100, 1, 400, 2, 1, options)
  runs = step_account.configurations(s)
  assert [r.name for r in runs] == [f"pipeline_{p}" for p in programs.PRECISIONS]
  assert all(r.program == programs.PIPELINE_PARALLEL.name for r in runs)
  assert runs[0].config.profile_dir == "t/b100_float32" and runs[0].config.finetune_epochs == 1
  default_chunk = runs[0].config.pipeline_chunk_steps
  longer = step_account.configurations(harness.Setting((32,), 100, 1, 400, 2, 1, dict(options, chunk_steps=11)))
  assert [r.config.pipeline_chunk_steps for r in longer] == [11, 11] and default_chunk != 11
  record = {"pipeline": {"chunk_steps": 4}, "dataset": {"examples": {"train": 400}}, "finetune": {"batch_size": 100}}
  assert step_account.steps(record, "pretraining") == 4 and step_account.steps(record, "finetuning") == 4
  thread = dict(zip(trace_account.CATEGORIES, (0.004, 0.001, 0.001, 0.0, 0.0005, 0.0005)))
  phases = {phase: {"window_seconds": 0.028, "steps": 4, "threads": {"thread 1": thread, "thread 2": thread},
                    "placement": "pipeline"} for phase in step_account.PHASES}
  shown = {"seconds": 0.02, "threads": {"thread 1": [[0.0, 0.01, "dispatch", 0], [0.001, 0.005, "matrix products", 1]],
                                        "thread 2": [[0.002, 0.004, "conversions", 0]]}}
  summary = {"setting": {"batch_size": 100}, "accounts": {r.name: phases for r in runs},
             "timelines": {r.name: dict.fromkeys(step_account.PHASES, shown) for r in runs}}
  caption, header, rows = step_account.details(summary)
  assert len(rows) == 2 * len(step_account.PHASES) * 2 and rows[0][3] == "4.00" and len(header) == len(rows[0])
  fig = step_account.figure({"summary_b100.json": summary})
  assert len(fig.axes) == 2 * len(step_account.PHASES)
