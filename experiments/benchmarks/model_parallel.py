"""Benchmark: model_parallel on G devices against greedy and sync_layerwise on one (docs/model_parallel.md):
speedups, the schedule's bound from greedy's epoch times and from FLOPs (`flop_bound`) and the fraction reached, the
bound with shared cores, phases, co-run slowdowns; several --kernels or --thread_pool: `variants`.
  python -m experiments.benchmarks.model_parallel --batch_size=1000
  python -m experiments.benchmarks.model_parallel --batch_size=1000 --kernels=xla,tf --thread_pool=per_device,shared"""

from typing import Dict, List, Tuple

from common.layerwise import schedule as schedule_lib
from common.measure import cost
from common.settings import programs
from experiments import harness, presets, records

GREEDY, SYNC, MP = programs.GREEDY, programs.SYNC_LAYERWISE, programs.MODEL_PARALLEL


def _variants(s: harness.Setting) -> Dict[str, Tuple[str, str]]:
  """{name: (kernels, thread pool)}: "model_parallel" for the first pair, model_parallel_<kernels>_<pool> after."""
  pairs = [(k, t) for k in s.options.get("kernels", ["auto"]) for t in s.options.get("thread_pool", ["auto"])]
  return {MP.name if i == 0 else f"{MP.name}_{k}_{t}": (k, t) for i, (k, t) in enumerate(pairs)}


def configurations(s: harness.Setting) -> List:
  """greedy and sync_layerwise on one device, model_parallel on s.num_devices (one per kernels x thread pool)."""
  return [s.spec(p.name, p, 1) for p in (GREEDY, SYNC)] + [
      s.spec(name, MP, s.num_devices, {"kernels": k, "thread_pool": t}) for name, (k, t) in
      _variants(s).items()]


def corun_slowdown(record: dict) -> dict:
  """{layer (1-based str): median epoch seconds beside another layer / alone (fill step; shared pool: + a thread)}."""
  active, out = {(s["group"], s["step"]): len(s["active_layers"]) for s in record["schedule"]["steps"]}, {}
  for i, layer in enumerate(record["layers"]):
    epochs = [(active.get((layer.get("group", 0), e["step"]), 0), e["seconds"]) for e in layer["epochs"]]
    alone, beside = [x for a, x in epochs if a == 1], [x for a, x in epochs if a > 1]
    if alone and beside:
      out[str(i + 1)] = harness.spread(beside)["median"] / harness.spread(alone)["median"]
  return out


def _bound_vs_sync(layer_cost: List[float], devices: int, epochs: int) -> float:
  """sync_layerwise time / model_parallel time if layer i's epoch costs layer_cost[i] and nothing else does."""
  schedule = schedule_lib.Schedule(len(layer_cost), devices, epochs)
  return schedule.critical_path(layer_cost, concurrent=False) / schedule.critical_path(layer_cost)


def _epochs_to_reach(layer_cost: List[float], devices: int, target: float, max_epochs: int = 1000) -> int:
  """The least E for which the bound over sync_layerwise on `devices` devices reaches `target` (-1: none)."""
  return next((e for e in range(1, max_epochs + 1) if _bound_vs_sync(layer_cost, devices, e) >= target), -1)


def summarize(s: harness.Setting, runs: harness.Records) -> dict:
  """Speedups, the bounds and the phases of model_parallel (see the module docstring)."""
  target, g = s.options["target_speedup"], s.num_devices
  schedule = schedule_lib.Schedule(len(s.hidden_units), g, s.pretrain_epochs)
  flops = [cost.layer_epoch_flops(s.hidden_units, i + 1, s.train_examples) for i in range(len(s.hidden_units))]
  per_repeat = []
  for greedy, sync, mp in zip(runs[GREEDY.name], runs[SYNC.name], runs[MP.name]):
    tg, ts, tm = greedy["pretrain_seconds"], sync["pretrain_seconds"], mp["pretrain_seconds"]
    alone = records.layer_epoch_seconds(greedy)
    bound = schedule.critical_path(alone)
    measured = {"speedup_vs_greedy": tg / tm, "speedup_vs_sync_layerwise": ts / tm, "bound_seconds": bound,
              "bound_speedup_vs_greedy": tg / bound, "bound_speedup_vs_sync_layerwise": ts / bound,
              "fraction_of_bound": bound / tm, "cores_bound_speedup_vs_greedy": g * tg / ts}  # over the repeats
    per_repeat.append({"greedy_layer_epoch_seconds": alone, **measured,
                       "epochs_for_target_bound": _epochs_to_reach(alone, g, target)})
  out = {key: harness.spread([x[key] for x in per_repeat]) for key in measured}
  out["cores_bound_speedup_vs_sync_layerwise"] = g
  out["flop_bound"] = {"layer_epoch_flops": flops,
                       "speedup_vs_sync_layerwise": _bound_vs_sync(flops, g, s.pretrain_epochs),
                       "target_speedup": target, "epochs_for_target": _epochs_to_reach(flops, g, target)}
  out["per_repeat"] = per_repeat
  out["variants"] = {name: {
      "kernels": k, "thread_pool": t, "speedup_vs_greedy": harness.ratio_spread(runs, GREEDY.name, name),
      "speedup_vs_sync_layerwise": harness.ratio_spread(runs, SYNC.name, name),
      "fraction_of_bound": harness.spread([x["bound_seconds"] / r["pretrain_seconds"]
                                           for x, r in zip(per_repeat, runs[name])]),
      "fraction_of_cores_bound": harness.spread([y["pretrain_seconds"] / (g * r["pretrain_seconds"])
                                                 for y, r in zip(runs[SYNC.name], runs[name])]),
      "corun_slowdown": [corun_slowdown(r) for r in runs[name]], "cores_busy": harness.cores_busy(runs[name])}
      for name, (k, t) in _variants(s).items()}
  out["model_parallel_phases"] = [harness.phases(r) for r in runs[MP.name]]
  out["sync_layerwise_layer_epoch_seconds"] = [records.layer_epoch_seconds(r) for r in runs[SYNC.name]]
  return out


BENCHMARK = presets.Benchmark(
    name=MP.name, runs=configurations, summarize=summarize,
    defaults={"hidden_units": "1000,1000", "pretrain_epochs": 4, "train_examples": 11_000},
    folder=lambda s: f"b{s.batch_size}" + ("_variants" if len(_variants(s)) > 1 else ""),
    options={"target_speedup": (1.4, "Speedup over sync_layerwise whose reachability is reported."),
             "kernels": (["auto"], "Kernel paths (--kernels) of the model_parallel configurations."),
             "thread_pool": (["auto"], "Thread pools (--thread_pool) of the model_parallel configurations.")},
    columns=(("speedup_vs_greedy", "speedup vs greedy"), ("speedup_vs_sync_layerwise", "speedup vs sync_layerwise"),
             ("bound_speedup_vs_greedy", "bound vs greedy"), ("fraction_of_bound", "fraction of bound"),
             ("cores_bound_speedup_vs_greedy", "bound with shared cores vs greedy")), order=3)

if __name__ == "__main__":
  harness.main(BENCHMARK)
