"""The headline: a results table for users, at most 8 rows, cells of at most 100 characters, every number with its
spread (or "single runs"), the machine class in words, the report's numbers only beside ours at the same sizes or with
each side's size said. The top README shows it without commits or marks; results/README.md adds a column with each
row's records' machine and code (`records.machine_label`)."""

import os
from typing import List, Optional

from common.measure import provenance
from common.settings import programs
from experiments import presets
from experiments import records
from experiments.benchmarks import harness
from experiments.benchmarks import pipeline_parallel as pipeline_benchmark
from experiments.report import series
from experiments.report import tables
from experiments.studies import accuracy_vs_epochs
from experiments.studies import pretraining_ablation
from experiments.studies import pretraining_sweep

CELL = 100  # characters a cell may have
GREEDY, MP, DP, PP = programs.GREEDY, programs.MODEL_PARALLEL, programs.DATA_PARALLEL, programs.PIPELINE_PARALLEL


def machine_class(rs: List[dict]) -> str:
  """The machine classes of records in words, e.g. "AMD EPYC with AVX2, 2 cores" ("; "-joined, first seen first)."""
  out = []
  for r in rs:
    isa = provenance.instruction_set(r["environment"].get("cpu_flags"))
    name = records.processor(r["environment"].get("cpu_model")) + (f" with {isa}" if isa else "")
    out.append(f"{name}, {records.cores(r)} cores")
  return "; ".join(dict.fromkeys(out)) or "—"


def _spread(s: dict, unit: str = "×") -> str:
  """"1.59× (1.58–1.61)": the median of a benchmark's repeats and their range."""
  return f"{s['median']:.2f}{unit} ({s['min']:.2f}–{s['max']:.2f})"


def _summary(output_dir: str, benchmark: str, file: str, used: List[dict]) -> Optional[dict]:
  folder = os.path.join(output_dir, "benchmarks", benchmark)
  summary = records.load(os.path.join(folder, file))
  if summary is not None:
    used += [r for r in records.flat_records(folder, summary) if r]
  return summary


def _noisy_note(summary: dict) -> str:
  return "; repeats vary more than 15%" if harness.noisy(summary) else ""


def staleness(rs: List[dict]) -> str:
  """" (staleness 0–1)": the range an asynchronous program's updates had, "" for a synchronous one."""
  if not rs or not all(r.get("staleness") for r in rs):
    return ""
  seen = sorted({k for r in rs for k, count in r["staleness"]["histogram"] if count})
  return f" (staleness {seen[0]}{'' if seen[0] == seen[-1] else f'–{seen[-1]}'})"


def _strategies(output_dir: str, names: List[str], used: List[dict]) -> str:
  s = _summary(output_dir, "strategies", "summary_b5000.json", used)
  if not s:
    return "not measured yet"
  labels = {p.run_name: p.name for p in programs.PROGRAMS}
  found = records.records_of(os.path.join(output_dir, "benchmarks", "strategies"), s)
  return ", ".join(f"{_short(labels[n])} {_spread(s['speedup_vs_greedy'][n])}{staleness(found.get(n, []))}"
                   for n in names if n in s["speedup_vs_greedy"]) + _noisy_note(s)


def _pipeline(output_dir: str, used: List[dict]) -> str:
  parts = []
  for b in (100, 1000):
    s = _summary(output_dir, pipeline_benchmark.BENCHMARK.name, f"summary_b{b}.json", used)
    if s:
      parts.append(f"{_spread(s['speedup_vs_greedy'])} at batch {b}" + _noisy_note(s))
  return ", ".join(parts) or "not measured yet"


def _short(program: str) -> str:
  """A program's label without "layer-wise", e.g. "greedy"."""
  return programs.get(program).label.replace(" layer-wise", "")


def _full(data: series.Data, names: List[str], used: List[dict], labels: Optional[List[str]] = None) -> str:
  """Test accuracy of full-size runs, each by its program's short label (or `labels`)."""
  full = data.get(presets.FULL_SIZE.name)
  found = [(i, full.runs[n]) for i, n in enumerate(names) if full and n in full.runs]
  used += [r for _, r in found]
  return ", ".join(f"{labels[i] if labels else _short(series.strategy(r))} {records.test_accuracy(r):.4f}"
                   for i, r in found) or "not run yet"


def _gain(data: series.Data, used: List[dict]) -> str:
  """The tuned recipe's gain over no pretraining at its own best finetuning rate in the ablation, per dataset, mean
  (min to max over the seeds)."""
  d = data.get("pretraining_ablation")
  if not d:
    return "not run yet"
  arms, parts = pretraining_sweep.by_arm(d.runs), []
  used += list(d.runs.values())
  for dataset in pretraining_sweep.DATASETS:
    g = pretraining_ablation.gain(arms, dataset, "none_own")
    if g:
      parts.append(f"{records.dataset_label(dataset)} {g[0]:+.1f} points ({g[1]:+.1f} to {g[2]:+.1f})")
  return ", ".join(parts) + ", 3 seeds" if parts else "not run yet"


def _precision(output_dir: str, used: List[dict]) -> str:
  parts = []
  for b in (100, 1000, 5000):
    s = _summary(output_dir, "precision", f"summary_b{b}.json", used)
    if s:
      values = [m["speedup_bf16_over_f32"]["median"] for m in s["programs"].values()]
      isa = provenance.instruction_set(s["provenance"].get("cpu_flags"))
      parts.append(f"{min(values):.1f}–{max(values):.1f}× ({b}, {isa}"
                   + (", noisy" if harness.noisy(s) else "") + ")")
  return ", ".join(parts) or "not measured yet"


def table(output_dir: str, data: series.Data, provenance: bool = False) -> str:
  """The headline (module docstring) from the records in `output_dir`; with `provenance` a last column names each
  row's machine and code (results/README.md)."""
  rows, rep = [], presets.STRATEGY_COMPARISON.reported
  full_report = (f"greedy {presets.ACCURACY_VS_EPOCHS.reported[GREEDY.name][30]}, model parallel "
                 f"~{accuracy_vs_epochs.REPORTED_MP_TEXT}")
  specs = [
      ("Speedup over greedy, 2 devices, 4 × 1000 units, batch 5000, 3 repeats",
       f"4 GPUs, 4 × 2000: model parallel {rep[GREEDY.name] / rep[MP.name]:.2f}×, "
       f"data parallel {rep[GREEDY.name] / rep[DP.name]:.2f}×", lambda u: _strategies(output_dir, ["mp", "dp"], u)),
      ("Beyond the report, same benchmark", "—", lambda u: _strategies(output_dir, ["pp", "adp"], u)),
      ("Pipeline parallel over greedy, 2 devices, 4 × 1000 units, 3 repeats", "—",
       lambda u: _pipeline(output_dir, u)),
      ("Test accuracy, report's recipe, 4 × 2000 units, 30 + 30 epochs, single runs", full_report,
       lambda u: _full(data, ["greedy_b100_e30", "model_parallel_g2_b100_e30", "pipeline_parallel_g2_b100_e30"], u)),
      ("Data parallel at global batch 5000, 30 + 30 epochs: report's recipe, large-batch recipe",
       f"{presets.DP_ACCURACY.reported[30]} (batch 5000 per GPU, 4 GPUs)",
       lambda u: _full(data, ["dp_b5000_e30_report", "dp_b5000_e30_large_batch"], u,
                       ["report's recipe", "large-batch recipe"])),
      ("Test accuracy added by tuned pretraining over none at its own best rate, 4 × 500 units",
       "—", lambda u: _gain(data, u)),
      ("Test accuracy, tuned recipe, 4 × 2000, 30 + 30, MNIST (goal 0.985) / Fashion-MNIST (0.90)", "—",
       lambda u: _full(data, ["greedy_b100_e30_tuned", "pipeline_parallel_g2_b100_e30_tuned"], u) + " / " + _full(
           data, ["fashion_mnist_greedy_b100_e30_tuned", "fashion_mnist_pipeline_parallel_g2_b100_e30_tuned"], u)),
      ("bfloat16 over float32, pretraining: the programs' medians (batch, instruction set)", "—",
       lambda u: _precision(output_dir, u)),
  ]
  for label, report, ours in specs:
    used: List[dict] = []
    cell = ours(used)
    rows.append([label, report, cell, machine_class(used)] + ([records.machine_label(used) or "—"] if provenance else []))
  return tables.md_table(["result", "report", "ours", "machine"] + (["machine, code"] if provenance else []), rows)
