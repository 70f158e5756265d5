"""Benchmark: model_parallel on G devices against greedy and sync_layerwise on one, side by side in one run.

Every program runs as its own subprocess (each needs its own device configuration), pretraining only
(--finetune_epochs=0), 1 intra-op thread per device; the three are interleaved repeat after repeat (the
order rotates) so that drifts of the shared machine hit them alike. Reported from the run records:
  * pretraining seconds of each program (steady state: warm-up and tracing excluded), min/median/max;
  * speedup of model_parallel over greedy and over sync_layerwise, per repeat (same repeat's runs), with
    min/median/max;
  * the bound implied by the measured per-layer epoch times: greedy's per-layer epoch times (median over
    its epochs) put through the model-parallel schedule (sum over steps of the slowest active layer,
    `Schedule.critical_path`), the speedups that bound allows, and the fraction of it reached;
  * the same bound from FLOPs alone (`cost.layer_epoch_flops`: layer n also passes the corrupted
    and the clean batch through frozen copies of layers 1..n-1), which needs no timing, and the epoch
    count E at which the measured bound over sync_layerwise first reaches `--target_speedup` (for two
    layers on two devices, where layer 1 trains E + 1 epochs and layer 2 E, the bound
    ((E + 1) t1 + E t2) / (t1 + E t2) grows with E towards (t1 + t2) / t2 when t2 > t1);
  * model_parallel's phase timings: per-device busy seconds, idle device-seconds, weight-copy seconds,
    each layer's epoch time when sharing the machine vs alone (greedy), and the per-step overhead
    (wall - slowest device busy).

Usage (timings are reported: exclusive CPU lock):
  flock -x /work/cpu.lock .venv/bin/python -m experiments.bench_model_parallel --batch_size=1000
  flock -x /work/cpu.lock .venv/bin/python -m experiments.bench_model_parallel --batch_size=100
Writes <output_dir>/b<batch>/<program>_r<k>.json (run records) and <output_dir>/summary_b<batch>.json.
"""

import json
import os
import statistics
import sys
from typing import List

from absl import app
from absl import flags

from common import cost
from experiments import dp_common
from experiments.dp_common import spread
from model_parallel import schedule as schedule_lib

_HIDDEN = flags.DEFINE_list("hidden_units", ["1000", "1000"], "Hidden units per layer.")
_BATCH = flags.DEFINE_integer("batch_size", 1000, "Batch size (global).")
_EPOCHS = flags.DEFINE_integer("pretrain_epochs", 4, "Pretraining epochs E.")
_EXAMPLES = flags.DEFINE_integer("train_examples", 11_000, "Training images.")
_REPEATS = flags.DEFINE_integer("repeats", 3, "Runs of each program (interleaved).")
_DEVICES = flags.DEFINE_integer("num_devices", 2, "Devices of model_parallel (G).")
_TARGET = flags.DEFINE_float("target_speedup", 1.4, "Speedup over sync_layerwise whose reachability is reported.")
_OUTPUT = flags.DEFINE_string("output_dir", "results/benchmarks/model_parallel", "Where records and summary go.")

PROGRAMS = ("greedy", "sync_layerwise", "model_parallel")


def _run(program: str, repeat: int, records_dir: str) -> dict:
  name = f"{program}_r{repeat}"
  command = ["-m", f"{program}.train", f"--hidden_units={','.join(_HIDDEN.value)}",
             f"--pretrain_epochs={_EPOCHS.value}", "--finetune_epochs=0", f"--batch_size={_BATCH.value}",
             f"--train_examples={_EXAMPLES.value}", "--threads_per_device=1", "--progress=log",
             f"--num_devices={_DEVICES.value if program == 'model_parallel' else 1}",
             f"--results_dir={records_dir}", f"--run_name={name}"]
  return dp_common.run_program(command, os.path.join(records_dir, f"{name}.json"))


def _layer_epoch_seconds(record: dict) -> List[float]:
  """Median epoch seconds of each layer in a record."""
  return [statistics.median(e["seconds"] for e in layer["epochs"]) for layer in record["layers"]]


def _model_parallel_phases(record: dict) -> dict:
  steps = record["schedule"]["steps"]
  devices = list(steps[0]["busy_seconds"])
  busy = {d: sum(s["busy_seconds"][d] for s in steps) for d in devices}
  both = [s for s in steps if len(s["active_layers"]) > 1]
  return {
      "pretrain_seconds": record["pretrain_seconds"],
      "step_wall_seconds": record["timing"]["pretrain_train"],
      "weight_copy_seconds": record["timing"]["weight_copy"],
      "idle_device_seconds": record["timing"]["idle"],
      "busy_seconds_per_device": busy,
      # Wall time of the steps beyond the busiest device: dispatch, fetching results, the step barrier.
      "overhead_seconds": sum(s["wall_seconds"] - max(s["busy_seconds"].values()) for s in steps),
      # > 1 only if the devices' busy intervals overlap: the layers really ran concurrently.
      "concurrency_in_full_steps": (sum(sum(s["busy_seconds"].values()) for s in both) /
                                    sum(s["wall_seconds"] for s in both)) if both else None,
      "layer_epoch_seconds": _layer_epoch_seconds(record),
  }


def _bound_speedup_vs_sync(schedule: schedule_lib.Schedule, layer_cost: List[float]) -> float:
  """sync_layerwise time / model_parallel time if layer i's epoch costs layer_cost[i] and nothing else does."""
  return schedule.critical_path(layer_cost, concurrent=False) / schedule.critical_path(layer_cost)


def _epochs_to_reach(layer_cost: List[float], devices: int, target: float, max_epochs: int = 1000) -> int:
  """The least E for which the bound over sync_layerwise on `devices` devices reaches `target`, or -1
  if none up to max_epochs."""
  for epochs in range(1, max_epochs + 1):
    if _bound_speedup_vs_sync(schedule_lib.Schedule(len(layer_cost), devices, epochs), layer_cost) >= target:
      return epochs
  return -1


def main(argv):
  del argv
  name = f"b{_BATCH.value}"
  records_dir = os.path.join(_OUTPUT.value, name)
  os.makedirs(records_dir, exist_ok=True)
  records = {p: [] for p in PROGRAMS}
  for r in range(_REPEATS.value):
    for k in range(len(PROGRAMS)):
      program = PROGRAMS[(k + r) % len(PROGRAMS)]
      records[program].append(_run(program, r, records_dir))
  schedule = schedule_lib.Schedule(len(_HIDDEN.value), _DEVICES.value, _EPOCHS.value)
  hidden = [int(u) for u in _HIDDEN.value]
  flops = [cost.layer_epoch_flops(hidden, i + 1, _EXAMPLES.value) for i in range(len(hidden))]
  seconds = {p: [rec["pretrain_seconds"] for rec in records[p]] for p in PROGRAMS}
  bounds, per_repeat = [], []
  for r in range(_REPEATS.value):
    alone = _layer_epoch_seconds(records["greedy"][r])
    bound = schedule.critical_path(alone)
    bounds.append(bound)
    mp = seconds["model_parallel"][r]
    per_repeat.append({
        "greedy_layer_epoch_seconds": alone, "bound_seconds": bound,
        "speedup_vs_greedy": seconds["greedy"][r] / mp, "speedup_vs_sync_layerwise": seconds["sync_layerwise"][r] / mp,
        "bound_speedup_vs_greedy": seconds["greedy"][r] / bound,
        "bound_speedup_vs_sync_layerwise": seconds["sync_layerwise"][r] / bound,
        "fraction_of_bound": bound / mp,
        "epochs_for_target_bound": _epochs_to_reach(alone, _DEVICES.value, _TARGET.value)})
  summary = {
      "command": "python -m experiments.bench_model_parallel " + " ".join(sys.argv[1:]),
      "setting": {"hidden_units": [int(u) for u in _HIDDEN.value], "batch_size": _BATCH.value,
                  "pretrain_epochs": _EPOCHS.value, "train_examples": _EXAMPLES.value, "repeats": _REPEATS.value,
                  "model_parallel_devices": _DEVICES.value, "threads_per_device": 1,
                  "device_kind": records["model_parallel"][0]["environment"]["device_kind"],
                  "cpu_count": records["model_parallel"][0]["environment"]["cpu_count"]},
      "pretrain_seconds": {p: spread(v) for p, v in seconds.items()},
      "speedup_vs_greedy": spread([x["speedup_vs_greedy"] for x in per_repeat]),
      "speedup_vs_sync_layerwise": spread([x["speedup_vs_sync_layerwise"] for x in per_repeat]),
      "bound_seconds": spread(bounds),
      "bound_speedup_vs_greedy": spread([x["bound_speedup_vs_greedy"] for x in per_repeat]),
      "bound_speedup_vs_sync_layerwise": spread([x["bound_speedup_vs_sync_layerwise"] for x in per_repeat]),
      "fraction_of_bound": spread([x["fraction_of_bound"] for x in per_repeat]),
      "flop_bound": {"layer_epoch_flops": flops,
                     "speedup_vs_sync_layerwise": _bound_speedup_vs_sync(schedule, flops),
                     "target_speedup": _TARGET.value,
                     "epochs_for_target": _epochs_to_reach(flops, _DEVICES.value, _TARGET.value)},
      "per_repeat": per_repeat,
      "model_parallel_phases": [_model_parallel_phases(rec) for rec in records["model_parallel"]],
      "sync_layerwise_layer_epoch_seconds": [_layer_epoch_seconds(rec) for rec in records["sync_layerwise"]],
      "records": {p: [os.path.join(records_dir, f"{p}_r{r}.json") for r in range(_REPEATS.value)] for p in PROGRAMS},
  }
  path = os.path.join(_OUTPUT.value, f"summary_{name}.json")
  with open(path, "w") as f:
    json.dump(summary, f, indent=1)
  for key in ("speedup_vs_greedy", "speedup_vs_sync_layerwise", "bound_speedup_vs_greedy",
              "bound_speedup_vs_sync_layerwise", "fraction_of_bound"):
    s = summary[key]
    print(f"{key}: median {s['median']:.3f} (min {s['min']:.3f}, max {s['max']:.3f})")
  print(f"FLOP bound over sync_layerwise: {summary['flop_bound']['speedup_vs_sync_layerwise']:.3f} at E = "
        f"{_EPOCHS.value}; reaches {_TARGET.value} from E = {summary['flop_bound']['epochs_for_target']}")
  print(f"Summary: {path}")


if __name__ == "__main__":
  app.run(main)
