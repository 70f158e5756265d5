"""Checks that the report takes no ratio across machines or codes: in the table of every record (`records.table`), each
study that compares seconds (`Study.timed`) has the records of each of its presets (per machine folder) from one
machine and one code, and so has every benchmark summary; exit status 1, one line per offender, if any does not.
`records.ratio` itself refuses such a pair.
  python -m experiments.check_ratios [--output_dir=results]"""

import os
import sys
from typing import List

from absl import app
from absl import flags

from experiments import records

_OUTPUT_DIR = flags.DEFINE_string("output_dir", "results", "The records (and report) to check.")


def problems(output_dir: str) -> List[str]:
  """One line per timed study's preset, and per benchmark summary, whose records differ in machine or code."""
  frame = records.table(output_dir)
  groups = frame[frame["timed"]].groupby(["folder", "study", "preset", "summary"])
  return [(os.path.join(output_dir, folder, "benchmarks", study, summary) if summary else
           f"{os.path.join(folder or '.', study)} ({preset})") + ": its records come from "
          f"{records.machine_label(list(group['record']))}" for (folder, study, preset, summary), group in groups
          if not records.same_source(list(group["record"]))]


def main(argv):
  if len(argv) > 1:
    raise app.UsageError(f"Unexpected positional arguments: {' '.join(argv[1:])}")
  found = problems(_OUTPUT_DIR.value)
  print("".join(f"records of several machines or codes: {line}\n" for line in found), end="")
  print(f"[check_ratios] {len(found)} group(s) across machines or codes in {_OUTPUT_DIR.value}")
  sys.exit(1 if found else 0)


if __name__ == "__main__":
  app.run(main)
