"""Checks that no ratio of the report (regenerated with every pair given to `records.ratio` or `same_source`
audited) nor any benchmark summary takes its records from different machines or codes; exit status 1 if one does.
  python -m experiments.check_ratios [--output_dir=results]"""

import os
import sys
from typing import List

from absl import app
from absl import flags

from experiments import records
from experiments.benchmarks import harness
from experiments.report import readme

_OUTPUT_DIR = flags.DEFINE_string("output_dir", "results", "The records (and report) to check.")


def problems(output_dir: str) -> List[str]:
  """One line per ratio of the report in `output_dir` whose two records differ in machine or code."""
  records.audit = []
  try:
    readme.text(output_dir)
    pairs = records.audit
  finally:
    records.audit = None
  out = [f"{a.get('run_name', '?')} ({records.machine_label([a])}) against {b.get('run_name', '?')} "
         f"({records.machine_label([b])})" for a, b in pairs if not records.comparable(a, b)]
  for folder, _, files in sorted(os.walk(output_dir)):
    for file in (f for f in sorted(files) if f.startswith("summary") and f.endswith(".json")):
      found = [r for r in harness.flat_records(folder, records.load(os.path.join(folder, file))) if r]
      if found and not records.same_source(found):
        out.append(f"{os.path.join(folder, file)}: its records come from {records.machine_label(found)}")
  return list(dict.fromkeys(out))


def main(argv):
  if len(argv) > 1:
    raise app.UsageError(f"Unexpected positional arguments: {' '.join(argv[1:])}")
  found = problems(_OUTPUT_DIR.value)
  print("".join(f"ratio across machines or codes: {line}\n" for line in found), end="")
  print(f"[check_ratios] {len(found)} ratio(s) across machines or codes in {_OUTPUT_DIR.value}")
  sys.exit(1 if found else 0)


if __name__ == "__main__":
  app.run(main)
