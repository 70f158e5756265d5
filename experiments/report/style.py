"""What every table and figure shares: the programs' names (`common.programs`), the preset note, the marking of
oversubscribed runs (more logical devices than cores: †), number formats and markdown tables."""

from typing import Optional, Sequence

from common import programs
from experiments import presets
from experiments import records
from experiments import reported

REPORT_LABEL = reported.HARDWARE
DAGGER = "† more logical devices than cores the process could use (oversubscribed)."


def program_name(program: str) -> str:
  """A program's registry label, e.g. "model parallel"; ValueError for an unregistered program."""
  return programs.get(program).label


def dagger(record: Optional[dict]) -> str:
  """" †" for an oversubscribed run, else ""."""
  return " †" if record and records.oversubscribed(record) else ""


def machine_label(data: records.EntryData) -> str:
  """The machine and code of the entry's records (`records.machine_label`)."""
  return records.machine_label(list(data.runs.values()))


def preset_note(entry: str, preset: str) -> str:
  """"preset cpu: examples 5500 (paper 55000); ..." or "preset paper (the report's settings)"."""
  notes = presets.shrink_notes(entry, preset)
  return (f"preset {preset}: " + "; ".join(notes) if notes else
          f"preset {preset}" + (" (the report's settings)" if preset == "paper" else ""))


def fmt_seconds(seconds: Optional[float]) -> str:
  """Seconds with 3 significant digits below 100, whole seconds above ("—" for None)."""
  return "—" if seconds is None else f"{seconds:.3g}" if seconds < 100 else f"{seconds:.0f}"


def fmt_ratio(ratio: Optional[float]) -> str:
  """A speedup or ratio, e.g. "1.31×" ("—" for None)."""
  return "—" if ratio is None else f"{ratio:.2f}×"


def fmt_accuracy(a: Optional[float]) -> str:
  """An accuracy in [0, 1] with 4 decimals ("—" for None)."""
  return "—" if a is None else f"{a:.4f}"


def fmt_spread(s: Optional[dict], fmt: str = "{:.2f}") -> str:
  """A spread {"min", "median", "max"} as "median (min–max)" ("—" for None)."""
  return f"{fmt.format(s['median'])} ({fmt.format(s['min'])}–{fmt.format(s['max'])})" if s else "—"


def md_table(header: Sequence[str], rows: Sequence[Sequence]) -> str:
  """A markdown table."""
  return "\n".join(["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
                   + ["| " + " | ".join(str(c) for c in row) + " |" for row in rows])
