"""Data parallel at a large batch: which learning-rate recipe recovers greedy's accuracy at batch 100.

Runs greedy at batch 100 and data_parallel at a large global batch with the report's recipe (the
batch-100 learning rates) and with variants of the large-batch recipe (Goyal et al. 2017: learning
rates scaled with the batch, linear warm-up), each as its own subprocess writing a run record, one after
another; then prints the finetuned test accuracies next to greedy's. Runs whose record exists are
not rerun (delete the record to redo one).

Usage (accuracies, not timings: a shared CPU lock is enough):
  flock -s /work/cpu.lock .venv/bin/python -m experiments.dp_large_batch --preset=mid
  flock -s /work/cpu.lock .venv/bin/python -m experiments.dp_large_batch --preset=mid --runs=dp_linear_warmup2
Writes <output_dir>/<preset>/<run>.json and <output_dir>/<preset>/summary.json.
"""

import json
import os
import subprocess
import sys
from typing import Dict, List, Tuple

from absl import app
from absl import flags

from data_parallel import config as dp_config

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# Size of each preset: shared flags of every run.
PRESETS: Dict[str, Tuple[str, ...]] = {
    "mid": ("--hidden_units=1000,1000,1000,1000", "--pretrain_epochs=10", "--finetune_epochs=10"),
    "full": ("--hidden_units=2000,2000,2000,2000", "--pretrain_epochs=30", "--finetune_epochs=30"),
    "smoke": ("--hidden_units=32,32", "--pretrain_epochs=2", "--finetune_epochs=2", "--train_examples=2000"),
}
# (run name, program, flags beyond the preset's)
RUNS: Tuple[Tuple[str, str, Tuple[str, ...]], ...] = (
    ("greedy_b100", "greedy", ("--batch_size=100",)),
    ("dp_report", "data_parallel", ("LARGE",)),
    ("dp_finetune_linear_warmup2", "data_parallel", ("LARGE", "--finetune_lr_scaling=linear", "--warmup_epochs=2")),
    ("dp_linear_warmup2", "data_parallel",
     ("LARGE", "--pretrain_lr_scaling=linear", "--finetune_lr_scaling=linear", "--warmup_epochs=2")),
    ("dp_linear", "data_parallel", ("LARGE", "--pretrain_lr_scaling=linear", "--finetune_lr_scaling=linear")),
    ("dp_linear_sqrt_warmup2", "data_parallel",
     ("LARGE", "--pretrain_lr_scaling=linear", "--finetune_lr_scaling=sqrt", "--warmup_epochs=2")),
    ("dp_large_batch_recipe", "data_parallel", ("LARGE",) + dp_config.LARGE_BATCH_RECIPE),
)

_PRESET = flags.DEFINE_enum("preset", "mid", list(PRESETS), "Size of the runs.")
_RUNS = flags.DEFINE_list("runs", [r[0] for r in RUNS], "Names of the runs to make (default: all).")
_LARGE = flags.DEFINE_integer("large_batch", 5000, "Global batch of the data-parallel runs.")
_DEVICES = flags.DEFINE_integer("num_devices", 2, "Replicas of the data-parallel runs.")
_EXTRA = flags.DEFINE_list("extra_flags", [], "More flags for every run, e.g. --train_examples=11000.")
_OUTPUT = flags.DEFINE_string("output_dir", "results/large_batch", "Where the records go.")


def _command(name: str, program: str, run_flags: Tuple[str, ...], records_dir: str) -> List[str]:
  devices = _DEVICES.value if program == "data_parallel" else 1
  run_flags = tuple(f"--batch_size={_LARGE.value}" if f == "LARGE" else f for f in run_flags)
  return ([sys.executable, "-m", f"{program}.train", *PRESETS[_PRESET.value], *run_flags, *_EXTRA.value,
           f"--num_devices={devices}", "--progress=log", f"--results_dir={records_dir}", f"--run_name={name}"]
          + (["--profile_steps=0"] if program == "data_parallel" else []))


def main(argv):
  del argv
  records_dir = os.path.join(_OUTPUT.value, _PRESET.value)
  os.makedirs(records_dir, exist_ok=True)
  unknown = set(_RUNS.value) - {r[0] for r in RUNS}
  if unknown:
    raise app.UsageError(f"unknown runs: {', '.join(sorted(unknown))}")
  rows = []
  for name, program, run_flags in RUNS:
    path = os.path.join(records_dir, f"{name}.json")
    command = _command(name, program, run_flags, records_dir)
    if name in _RUNS.value and not os.path.exists(path):
      print("python " + " ".join(command[1:]), flush=True)
      proc = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, env=dict(os.environ, PYTHONPATH=ROOT))
      if proc.returncode != 0:
        print(f"  {name} failed:\n{proc.stderr[-2000:]}", flush=True)
        continue
    if not os.path.exists(path):
      continue
    with open(path) as f:
      record = json.load(f)
    fine = record.get("finetune") or {}
    rows.append({"run": name, "command": "python " + " ".join(command[1:]), "test_accuracy": fine.get("test_accuracy"),
                 "validation_accuracy": fine.get("validation_accuracy"),
                 "pretrain_seconds": record["pretrain_seconds"], "finetune_seconds": fine.get("seconds"),
                 "learning_rates": record.get("learning_rates"),
                 "last_pretrain_loss": [layer["epochs"][-1]["loss"] for layer in record["layers"]]})
    print(f"  {name}: test accuracy {rows[-1]['test_accuracy']}", flush=True)
  greedy = next((r["test_accuracy"] for r in rows if r["run"] == "greedy_b100"), None)
  for r in rows:
    r["points_below_greedy"] = None if greedy is None else 100 * (greedy - r["test_accuracy"])
  with open(os.path.join(records_dir, "summary.json"), "w") as f:
    json.dump({"preset": _PRESET.value, "runs": rows}, f, indent=1)
  for r in rows:
    gap = "" if r["points_below_greedy"] is None else f"  {r['points_below_greedy']:+.2f} points below greedy"
    print(f"{r['run']:28s} test accuracy {r['test_accuracy']:.4f}{gap}")


if __name__ == "__main__":
  app.run(main)
