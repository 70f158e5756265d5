"""The full-size accuracy runs: the report's network (4 x 2000 hidden units) on all 55,000 training images.

These show that greedy, model parallel and data parallel at batch 5000 reach the report's accuracies
(report: greedy 0.969 after 60 + 60 epochs, model parallel ~0.9662, data parallel at batch 5000 0.7472
after 30 + 30). Each takes one to two hours on 2 CPU cores, so they are not part of the `cpu` preset:
run them one at a time, each resumable from its --model_dir if interrupted.

Usage:
  python -m experiments.full_size --list                  # the runs and their commands
  python -m experiments.full_size --only=greedy_b100_e30   # runs what has no record yet in results/full_size
Writes results/full_size/<name>.json (run records); `experiments/results_readme.py` tabulates them.
"""

import os
import subprocess
import sys
from typing import Dict, List, Optional, Tuple

from absl import app
from absl import flags

from data_parallel import config as dp_config
from experiments import records
from experiments import results_tables

_CONFIG_1 = "--hidden_units=2000,2000,2000,2000"

# name -> (program, flags, the report's accuracy for the same setting or None, what it is compared with)
RUNS: Dict[str, Tuple[str, Tuple[str, ...], Optional[float], str]] = {
    "greedy_b100_e30": ("greedy", (_CONFIG_1, "--pretrain_epochs=30", "--finetune_epochs=30", "--batch_size=100"),
                        0.957, "report greedy 30+30 (conres2.png)"),
    "model_parallel_g2_b100_e30": ("model_parallel", (_CONFIG_1, "--num_devices=2", "--pretrain_epochs=30",
                                                      "--finetune_epochs=30", "--batch_size=100"),
                                   0.9662, "report model parallel, \"around 96.62%\""),
    "dp_b5000_e30_report": ("data_parallel", (_CONFIG_1, "--num_devices=2", "--pretrain_epochs=30",
                                              "--finetune_epochs=30", "--batch_size=5000", "--profile_steps=0"),
                            0.7472, "report data parallel, batch 5000, 30+30"),
    "dp_b5000_e30_large_batch": ("data_parallel", (_CONFIG_1, "--num_devices=2", "--pretrain_epochs=30",
                                                   "--finetune_epochs=30", "--batch_size=5000", "--profile_steps=0")
                                 + dp_config.LARGE_BATCH_RECIPE, 0.7472, "report data parallel, batch 5000, 30+30"),
}
OUTPUT_DIR = "results/full_size"


def command(name: str, output_dir: str = OUTPUT_DIR) -> List[str]:
  """The program command of run `name` (argv without the interpreter)."""
  program, run_flags, _, _ = RUNS[name]
  return ["-m", f"{program}.train", *run_flags, f"--model_dir=models/{name}", f"--results_dir={output_dir}",
          f"--run_name={name}", "--progress=log"]


def table(output_dir: str = OUTPUT_DIR) -> str:
  """A markdown table of the runs that have a record: accuracy beside the report's, time, command."""
  rows = []
  for name, (_, _, reported_accuracy, compared) in RUNS.items():
    record = records.load(os.path.join(output_dir, f"{name}.json"))
    if record is None:
      continue
    accuracy = records.test_accuracy(record)
    rows.append([f"`{name}`", f"{accuracy:.4f}" if accuracy is not None else "—",
                 f"{reported_accuracy} ({compared})" if reported_accuracy else "—",
                 f"{record['pretrain_seconds'] / 60:.0f} + {record['finetune']['seconds'] / 60:.0f} min",
                 f"`python {' '.join(command(name, output_dir))}`"])
  if not rows:
    return "No full-size records yet: `python -m experiments.full_size` runs them (hours on 2 cores)."
  return results_tables.md_table(["run", "test accuracy", "report", "pretraining + finetuning", "command"], rows)


def main(argv):
  if len(argv) > 1:
    raise app.UsageError(f"Unexpected arguments: {' '.join(argv[1:])}")
  names = flags.FLAGS.only or list(RUNS)
  unknown = [n for n in names if n not in RUNS]
  if unknown:
    raise app.UsageError(f"Unknown run(s) {', '.join(unknown)}; known: {', '.join(RUNS)}")
  for name in names:
    done = os.path.exists(os.path.join(OUTPUT_DIR, f"{name}.json"))
    print(f"{name}: {'record exists' if done else 'to run'}: python {' '.join(command(name))}", flush=True)
    if not done and not flags.FLAGS.list:
      subprocess.run([sys.executable, *command(name)], check=True)


if __name__ == "__main__":
  # Defined here, not on import: experiments.results_readme imports this module beside other flags.
  flags.DEFINE_list("only", None, "Runs to do (default: all without a record).")
  flags.DEFINE_bool("list", False, "Print the runs and their commands, run nothing.")
  app.run(main)
