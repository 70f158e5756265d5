"""The headline's cells (`experiments.report.readme.headline`, rows declared by the studies and benchmarks whose records
they read: `presets.Headline`): at most 8 rows of cells of at most 100 characters, every number with its spread (or
"single runs"), the machine class in words, the report's numbers beside ours at the same sizes or with sizes said."""

import os
from typing import List, Optional

from common.settings import programs
from experiments import records
from experiments.render import series

CELL = 100  # characters a cell may have
ROWS = 8  # rows the headline may have


def machine_class(rs: List[dict]) -> str:
  """The machine classes of records in words, e.g. "AMD EPYC with AVX2, 2 cores" ("; "-joined, first seen first)."""
  labels = (records.processor(r["environment"].get("cpu_model")) + (f" with {isa}" if isa else "")
            + f", {records.cores(r)} cores" for r in rs for isa in [records.instruction_set(r)])
  return "; ".join(dict.fromkeys(labels)) or "—"


def spread(s: dict, unit: str = "×") -> str:
  """"1.59× (1.58–1.61)": the median of a benchmark's repeats and their range."""
  return f"{s['median']:.2f}{unit} ({s['min']:.2f}–{s['max']:.2f})"


def summary(output_dir: str, benchmark: str, file: str, used: List[dict]) -> Optional[dict]:
  """The benchmark summary <output_dir>/benchmarks/<benchmark>/<file> (None without), its records added to `used`."""
  folder = os.path.join(output_dir, "benchmarks", benchmark)
  if (found := records.load(os.path.join(folder, file))) is not None:
    used += [r for r in records.flat_records(folder, found) if r]
  return found


def noisy_note(s: dict) -> str:
  """"; repeats vary more than 15%" for a summary with a noisy configuration (`records.noisy`), else ""."""
  return "; repeats vary more than 15%" if records.noisy(s) else ""


def staleness(rs: List[dict]) -> str:
  """" (staleness 0–1)": the range an asynchronous program's updates had, "" for a synchronous one."""
  if not rs or not all(r.get("staleness") for r in rs):
    return ""
  seen = sorted({k for r in rs for k, count in r["staleness"]["histogram"] if count})
  return f" (staleness {seen[0]}{'' if seen[0] == seen[-1] else f'–{seen[-1]}'})"


def short(program: str) -> str:
  """A program's label without "layer-wise", e.g. "greedy"."""
  return programs.get(program).label.replace(" layer-wise", "")


def full_size(data: series.Data, names: List[str], used: List[dict], labels: Optional[List[str]] = None) -> str:
  """Test accuracy of full-size runs, each by its program's short label (or `labels`)."""
  full = data.get("full_size")
  found = [(i, full.runs[n]) for i, n in enumerate(names) if full and n in full.runs]
  used += [r for _, r in found]
  return ", ".join(f"{labels[i] if labels else short(series.program_of(r))} {records.accuracy(r):.4f}"
                   for i, r in found) or "not run yet"
