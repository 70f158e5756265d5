"""Benchmark: pipeline_parallel against greedy and model_parallel, and on one device and with checkpoints; several
--chunk_steps, --kernels or --precisions: one configuration each (docs/pipeline_parallel.md). Speedups, the FLOP bound
(`placement.Plan.critical_path_flops`) and the fraction reached, cores busy, checkpoint seconds, the full ticks' tails.
  python -m experiments.benchmarks.pipeline_parallel --batch_size=1000 [--chunk_steps=1,2,4,8 --baselines=0]
  (chunk length against the tails: --chunk_steps=4,8,16,32 --precisions=float32,mixed_bfloat16 --baselines=0)"""

import dataclasses
from typing import Dict, List, Optional, Tuple

from common.measure import cost
from common.settings import programs
from experiments import harness, presets
from experiments.render import cells
from pipeline_parallel import config as pp_config
from common.pipeline import placement

GREEDY, MP, PP = programs.GREEDY, programs.MODEL_PARALLEL, programs.PIPELINE_PARALLEL
PIPELINE = PP.name
FLOAT32 = programs.PRECISIONS[0]


def _variants(s: harness.Setting) -> Dict[str, Tuple[int, str, str]]:
  """{name: (chunk size K, kernels, precision)} of the pipeline configurations on G devices, the main one first."""
  chunks, kernels, precisions = [int(k) for k in s.options["chunk_steps"]], s.options["kernels"], s.options.get(
      "precisions", [FLOAT32])
  return {PIPELINE + (f"_k{k}" if len(chunks) > 1 else "") + (f"_{kern}" if len(kernels) > 1 else "")
          + (f"_{p}" if len(precisions) > 1 or p != FLOAT32 else ""): (k, kern, p)
          for p in precisions for k in chunks for kern in kernels}


def configurations(s: harness.Setting) -> List:
  """The baselines (unless --baselines=0) and pipeline_parallel on G devices for each precision, chunk size and kernel
  path."""
  own = {name: {"pipeline_chunk_steps": k, "kernels": kern, **({"precision": p} if p != FLOAT32 else {})}
         for name, (k, kern, p) in _variants(s).items()}
  runs = [s.spec(name, PP, s.num_devices, settings) for name, settings in own.items()]
  main = next(iter(own.values()))
  if s.options["baselines"]:
    first = {k: v for k, v in main.items() if k == "precision"}  # the baselines in the first variant's precision
    runs = [s.spec(GREEDY.name, GREEDY, 1, first), s.spec(MP.name, MP, s.num_devices, first), *runs,
            s.spec(f"{PIPELINE}_1_device", PP, 1, main),
            dataclasses.replace(s.spec(f"{PIPELINE}_checkpoints", PP, s.num_devices, main), resumable=True)]
  return runs


def tick_tails(rs) -> Optional[Dict[str, object]]:
  """The spread over repeats `rs` (pipeline run records) of p99 / median of the full ticks' seconds
  (`pipeline.tick_seconds`; dimensionless, 1 = no tail), or None where a record has no ticks."""
  ticks = [r.get("pipeline", {}).get("tick_seconds") for r in rs]
  return harness.spread([t["p99"] / t["median"] for t in ticks]) if ticks and all(ticks) else None


def summarize(s: harness.Setting, runs: harness.Records) -> Dict:
  """Speedups, the FLOP bound and the fraction of it reached, cores busy, each configuration's tick tails and its
  speedup over the first configuration of its precision, checkpoint cost."""
  variants = _variants(s)
  (first, (k, _, _)), *others = variants.items()
  plan, alone = [placement.plan_for(s.hidden_units, g, s.train_examples, s.batch_size, s.pretrain_epochs, k)
                 for g in (s.num_devices, 1)]
  greedy_flops = cost.pretraining_flops(s.hidden_units, s.pretrain_epochs,
                                        (s.train_examples // s.batch_size) * s.batch_size)
  path = plan.critical_path_flops(s.batch_size)
  out = {"plan": plan.describe(), "flop_bound_vs_greedy": greedy_flops / path,
         "flop_bound_vs_one_device": alone.critical_path_flops(s.batch_size) / path,
         "cores_busy": {name: harness.cores_busy(rs) for name, rs in runs.items()},
         # The tails of each configuration's full ticks: p99 / median of `pipeline.tick_seconds` per repeat.
         "tick_p99_over_median": {name: tick_tails(runs[name]) for name in variants if name in runs},
         # the first configuration of the same precision's seconds / this one's: > 1 means this one is faster.
         "speedup_vs_first": {name: harness.ratio_spread(runs, next(n for n, v in variants.items() if v[2] == p), name)
                              for name, (_, _, p) in others}}
  if not s.options["baselines"]:
    return out
  one = f"{PIPELINE}_1_device"
  out["speedup_vs_greedy"] = harness.ratio_spread(runs, GREEDY.name, first)
  out["speedup_vs_model_parallel"] = harness.ratio_spread(runs, MP.name, first)
  out["one_device_speedup_vs_greedy"] = harness.ratio_spread(runs, GREEDY.name, one)
  out["fraction_of_flop_bound"] = harness.spread([a["pretrain_seconds"] / out["flop_bound_vs_one_device"] /
                                                  b["pretrain_seconds"] for a, b in zip(runs[one], runs[first])])
  saved = [(r["timing"].get("checkpoint", 0.0) + r["timing"].get("checkpoint_in_flight", 0.0), r["pretrain_seconds"])
           for r in runs[f"{PIPELINE}_checkpoints"]]
  out["checkpoint_seconds"] = harness.spread([c for c, _ in saved])
  out["checkpoint_fraction_of_pretraining"] = harness.spread([c / t for c, t in saved])
  return out


def over_greedy(output_dir: str, data, used: List[dict]) -> str:
  """The headline's cell: the pipeline's speedup over greedy at batch 100 and 1000, with spreads."""
  found = [(b, cells.summary(output_dir, PIPELINE, f"summary_b{b}.json", used)) for b in (100, 1000)]
  return ", ".join(f"{cells.spread(s['speedup_vs_greedy'])} at batch {b}" + cells.noisy_note(s)
                   for b, s in found if s) or "not measured yet"


def details(summary: Dict):
  """The README table of a summary with tick tails: per configuration its speedup over the first configuration of its
  precision and its full ticks' p99 / median; None for summaries from before them."""
  tails = summary.get("tick_p99_over_median")
  if not tails:
    return None
  faster = summary.get("speedup_vs_first", {})
  return ("per configuration: pretraining seconds of its precision's first configuration / its own (same repeat), "
          "and the p99 / median of its full ticks' seconds (`pipeline.tick_seconds`)", [
              "configuration", "speedup vs the first", "tick p99 / median"], [
              [name, faster.get(name, "—"), tail if tail else "—"] for name, tail in tails.items()])


BENCHMARK = presets.Benchmark(
    name=PIPELINE, runs=configurations, summarize=summarize, details=details,
    defaults={"pretrain_epochs": 3, "train_examples": 55_000},
    headline=(presets.Headline(3, "Pipeline parallel over greedy, 2 devices, 4 × 1000 units, 3 repeats", "—",
                               over_greedy),),
    options={"chunk_steps": ([str(pp_config.DEFAULT_CHUNK_STEPS)], "Chunk sizes K of the pipeline configurations."),
             "kernels": (["auto"], "Kernel paths (--kernels) of the pipeline configurations."),
             "precisions": ([FLOAT32], "Precisions (--precision) of the pipeline configurations; other than float32 "
                                       "alone, the records sit in a folder of this processor's class."),
             "baselines": (1, "1: also greedy, model_parallel, the one-device pipeline and checkpoints; 0: only "
                              "pipeline_parallel at each chunk size.")},
    folder=lambda s: (f"b{s.batch_size}" + ("_chunks" if len(s.options["chunk_steps"]) > 1 else "")
                      + ("_kernels" if len(s.options["kernels"]) > 1 else "")
                      + ("" if list(s.options.get("precisions", [FLOAT32])) == [FLOAT32]
                         else f"_{harness.machine_class()}")),
    columns=(("speedup_vs_greedy", "speedup vs greedy"), ("speedup_vs_model_parallel", "speedup vs model_parallel"),
             ("one_device_speedup_vs_greedy", "1 device vs greedy"),
             ("fraction_of_flop_bound", "fraction of FLOP bound")), order=4)

if __name__ == "__main__":
  harness.main(BENCHMARK)
