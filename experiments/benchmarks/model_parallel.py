"""Benchmark: model_parallel on G devices against greedy and sync_layerwise on one, side by side.

Pretraining only, 1 intra-op thread per device, the three programs alternated repeat after repeat
(`harness`). Measures, from the run records:
  * speedup of model_parallel over greedy and over sync_layerwise, per repeat (same repeat's runs);
  * the bound implied by the measured per-layer epoch times: greedy's per-layer epoch times (median over
    its epochs) put through the model-parallel schedule (sum over steps of the slowest active layer,
    `Schedule.critical_path`), the speedups that bound allows, and the fraction of it reached;
  * the same bound from FLOPs alone (`cost.layer_epoch_flops`), and the epoch count E at which the bound
    over sync_layerwise first reaches --target_speedup (with two layers on two devices layer 1 trains
    E + 1 epochs and layer 2 E, so the bound ((E + 1) t1 + E t2) / (t1 + E t2) grows with E);
  * model_parallel's phases: per-device busy seconds, idle device-seconds, weight-copy seconds, each
    layer's epoch time beside the other layer, and the per-step overhead (wall - slowest device busy).

Usage (timings are committed: run alone on the machine, e.g. under an exclusive lock):
  python -m experiments.benchmarks.model_parallel --batch_size=1000 --repeats=7
Writes <output_dir>/b<batch>/<program>_r<k>.json and <output_dir>/summary_b<batch>.json.
"""

from typing import List

from common import cost
from experiments import records
from experiments.benchmarks import harness
from model_parallel import schedule as schedule_lib

PROGRAMS = ("greedy", "sync_layerwise", "model_parallel")


def configurations(s: harness.Setting) -> List:
  """greedy and sync_layerwise on one device, model_parallel on s.num_devices."""
  return [s.run(p, p, s.num_devices if p == "model_parallel" else 1) for p in PROGRAMS]


def _phases(record: dict) -> dict:
  steps = record["schedule"]["steps"]
  devices = list(steps[0]["busy_seconds"])
  both = [s for s in steps if len(s["active_layers"]) > 1]
  return {
      "pretrain_seconds": record["pretrain_seconds"],
      "step_wall_seconds": record["timing"]["pretrain_train"],
      "weight_copy_seconds": record["timing"]["weight_copy"],
      "idle_device_seconds": record["timing"]["idle"],
      "busy_seconds_per_device": {d: sum(s["busy_seconds"][d] for s in steps) for d in devices},
      # Wall time of the steps beyond the busiest device: dispatch, fetching results, the step barrier.
      "overhead_seconds": sum(s["wall_seconds"] - max(s["busy_seconds"].values()) for s in steps),
      # > 1 only if the devices' busy intervals overlap: the layers really ran concurrently.
      "concurrency_in_full_steps": (sum(sum(s["busy_seconds"].values()) for s in both) /
                                    sum(s["wall_seconds"] for s in both)) if both else None,
      "layer_epoch_seconds": records.layer_epoch_seconds(record),
  }


def _bound_vs_sync(schedule: schedule_lib.Schedule, layer_cost: List[float]) -> float:
  """sync_layerwise time / model_parallel time if layer i's epoch costs layer_cost[i] and nothing else does."""
  return schedule.critical_path(layer_cost, concurrent=False) / schedule.critical_path(layer_cost)


def _epochs_to_reach(layer_cost: List[float], devices: int, target: float, max_epochs: int = 1000) -> int:
  """The least E for which the bound over sync_layerwise on `devices` devices reaches `target` (-1: none)."""
  for epochs in range(1, max_epochs + 1):
    if _bound_vs_sync(schedule_lib.Schedule(len(layer_cost), devices, epochs), layer_cost) >= target:
      return epochs
  return -1


def summarize(s: harness.Setting, runs: harness.Records) -> dict:
  """Speedups, the bounds and the phases of model_parallel (see the module docstring)."""
  target = s.options["target_speedup"]
  schedule = schedule_lib.Schedule(len(s.hidden_units), s.num_devices, s.pretrain_epochs)
  flops = [cost.layer_epoch_flops(s.hidden_units, i + 1, s.train_examples) for i in range(len(s.hidden_units))]
  per_repeat = []
  for greedy, sync, mp in zip(runs["greedy"], runs["sync_layerwise"], runs["model_parallel"]):
    alone = records.layer_epoch_seconds(greedy)
    bound = schedule.critical_path(alone)
    per_repeat.append({
        "greedy_layer_epoch_seconds": alone, "bound_seconds": bound,
        "speedup_vs_greedy": greedy["pretrain_seconds"] / mp["pretrain_seconds"],
        "speedup_vs_sync_layerwise": sync["pretrain_seconds"] / mp["pretrain_seconds"],
        "bound_speedup_vs_greedy": greedy["pretrain_seconds"] / bound,
        "bound_speedup_vs_sync_layerwise": sync["pretrain_seconds"] / bound,
        "fraction_of_bound": bound / mp["pretrain_seconds"],
        "epochs_for_target_bound": _epochs_to_reach(alone, s.num_devices, target)})
  out = {key: harness.spread([x[key] for x in per_repeat]) for key in (
      "speedup_vs_greedy", "speedup_vs_sync_layerwise", "bound_seconds", "bound_speedup_vs_greedy",
      "bound_speedup_vs_sync_layerwise", "fraction_of_bound")}
  out["flop_bound"] = {"layer_epoch_flops": flops, "speedup_vs_sync_layerwise": _bound_vs_sync(schedule, flops),
                       "target_speedup": target, "epochs_for_target": _epochs_to_reach(flops, s.num_devices, target)}
  out["per_repeat"] = per_repeat
  out["model_parallel_phases"] = [_phases(r) for r in runs["model_parallel"]]
  out["sync_layerwise_layer_epoch_seconds"] = [records.layer_epoch_seconds(r) for r in runs["sync_layerwise"]]
  return out


BENCHMARK = harness.Benchmark(
    name="model_parallel", configurations=configurations, summarize=summarize,
    options={"target_speedup": (1.4, "Speedup over sync_layerwise whose reachability is reported.")},
    columns=(("speedup_vs_greedy", "speedup vs greedy"), ("speedup_vs_sync_layerwise", "speedup vs sync_layerwise"),
             ("bound_speedup_vs_greedy", "bound vs greedy"), ("fraction_of_bound", "fraction of bound")))

if __name__ == "__main__":
  harness.main(BENCHMARK)
