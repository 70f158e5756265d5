"""Benchmark: where one step's time goes (`common.measure.trace_account`). pipeline_parallel on --num_devices one-thread
devices (its default pool and finetuning placement) pretrains and finetunes one epoch each with --profile_dir, in each
precision of --precisions; from the traces of one pipeline tick and of the first finetuning epoch, per TensorFlow
thread, the milliseconds per step in matrix products, conversions, element-wise ops, transfers, dispatch and idle,
and the threads' timelines over a few steps (the figure). Traces cost time: these seconds are compared with none.
A tick holds --pipeline_chunk_steps steps (4 by default): --chunk_steps=N traces N steps per precision instead.
  python -m experiments.benchmarks.step_account                 (batch 100; also --batch_size=1000)"""

import os
from typing import Dict, List

from common.measure import trace_account
from common.settings import programs
from experiments import harness, presets

PHASES = {"pretraining": "", "finetuning": "finetune"}  # phase: its trace's folder under --profile_dir


def _trace_dir(s: harness.Setting, precision: str) -> str:
  return os.path.join(s.options["trace_dir"], f"{BENCHMARK.folder(s)}_{precision}")


def configurations(s: harness.Setting) -> List:
  """pipeline_parallel with --profile_dir (and --pipeline_chunk_steps if --chunk_steps), one per precision."""
  chunk = {"pipeline_chunk_steps": s.options["chunk_steps"]} if s.options["chunk_steps"] else {}
  return [s.spec(f"pipeline_{p}", programs.PIPELINE_PARALLEL, s.num_devices, {
      "precision": p, "finetune_epochs": 1, "profile_dir": _trace_dir(s, p), **chunk}) for p in s.options["precisions"]]


def steps(record: dict, phase: str) -> int:
  """Steps of a phase's traced window: the pipeline tick's steps, or the finetuning epoch's batches."""
  if phase == "pretraining":
    return record["pipeline"]["chunk_steps"]
  return record["dataset"]["examples"]["train"] // record["finetune"]["batch_size"]


def summarize(s: harness.Setting, found: harness.Records) -> Dict:
  """Per configuration and phase: the account of its newest trace and a timeline of three steps."""
  out = {"accounts": {}, "timelines": {}}
  for name, rs in found.items():
    record = rs[-1]
    out["accounts"][name], out["timelines"][name] = {}, {}
    for phase, sub in PHASES.items():
      path = trace_account.latest(os.path.join(_trace_dir(s, record["config"]["precision"]), sub))
      out["accounts"][name][phase] = dict(trace_account.account(path, steps(record, phase)),
                                          placement=record["finetune"]["placement"] if sub else "pipeline")
      out["timelines"][name][phase] = trace_account.timeline(path, steps(record, phase))
  return out


def details(summary: Dict):
  """The README table: milliseconds per step per thread and category."""
  header = ["configuration", "phase", "thread"] + [f"{c} (ms)" for c in trace_account.CATEGORIES]
  return "milliseconds per step, per TensorFlow thread, from one profiler trace each", header, [
      [name, f"{phase} ({a['placement']})", thread] + [f"{t[c] * 1e3:.2f}" for c in trace_account.CATEGORIES]
      for name, phases in summary["accounts"].items() for phase, a in phases.items()
      for thread, t in a["threads"].items()]


def figure(summaries: Dict[str, Dict]):
  """The timelines of the first summary by file name (batch 100, unlabelled): a panel per configuration and phase."""
  from matplotlib import figure as mpl_figure  # pylint: disable=g-import-not-at-top
  summary = summaries[sorted(summaries)[0]]
  panels = [(n, p, t) for n, phases in summary["timelines"].items() for p, t in phases.items()]
  fig = mpl_figure.Figure(figsize=(11, 1.3 * len(panels) + 0.8))
  for ax, (name, phase, shown) in zip(fig.subplots(len(panels), 1, squeeze=False)[:, 0], panels):
    trace_account.draw(ax, shown, f"{name}, {phase}: 3 steps, batch {summary['setting']['batch_size']}")
  trace_account.legend(fig)
  fig.tight_layout(rect=(0, 0.05, 1, 1))
  return fig


BENCHMARK = presets.Benchmark(
    name="step_account", runs=configurations, summarize=summarize, details=details, figure=figure, order=14,
    figure_file="step_account.png", defaults={"hidden_units": "2000,2000,2000,2000", "batch_size": 100,
                                              "pretrain_epochs": 1, "train_examples": 11_000, "repeats": 1},
    folder=lambda s: f"b{s.batch_size}" + (f"_{s.options['label']}" if s.options["label"] else ""),
    options={"precisions": (list(programs.PRECISIONS), "Precisions to trace."),
             "trace_dir": (os.path.join(harness.WORK_DIR, "step_account", "traces"), "Where the traces go."),
             "label": ("", "Appended to the records' folder, e.g. before: an account of the code before a change."),
             "chunk_steps": (0, "Steps per pipeline tick (--pipeline_chunk_steps; 0: the program's default). The "
                             "pretraining trace holds one tick, so more steps average over more of them.")})

if __name__ == "__main__":
  harness.main(BENCHMARK)
