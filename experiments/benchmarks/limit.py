"""Benchmark: the machine's limit and how close the job gets to it, in each precision of --precisions: one core's
matrix-product rate at the step's shapes (`matmul_rates`, one thread; C cores' limit: C times it) and the fraction of
it reached by greedy on one core, by pipeline_parallel on --num_devices one-thread devices with each intra-op pool
(per_device; shared: one pool of all their threads, so the lighter stage's core helps the heavier) and by
model_parallel on those devices (its --thread_pool=auto), in pretraining (FLOPs of the record's layer-epochs,
`common.measure.cost`) and in finetuning (`cost.finetune_epoch_flops`, evaluation left out, at the placement
--finetune_placement=auto gives); finetuning's speedup over one core, and one core's bfloat16 finetuning against
float32's. The ceiling of a configuration's pretraining: the fraction of the limit its steps could reach if all
but the passes over the kernels that the mathematics needs (`update_floor`: the update, and in bfloat16 the casts)
took no time, products / (products + those passes), both at one core's measured rates. Alternated; timings are
committed: run alone. Records per instruction-set class (folder b<batch>_<class>; summaries of one precision are
from before).
  python -m experiments.benchmarks.limit --batch_size=100   (and --batch_size=1000 --train_examples=22000)"""

from typing import Dict, List

from common.measure import cost
from common.settings import programs
from experiments import harness, presets

POOLS = ("per_device", "shared")
BASES = ("greedy_1core",) + tuple(f"pipeline_{pool}" for pool in POOLS) + (programs.MODEL_PARALLEL.name,)


def configurations(s: harness.Setting) -> List:
  """Per precision: greedy on one core; pipeline_parallel on the devices with each pool; model_parallel on the devices
  (its pool from --thread_pool=auto); every run finetunes too."""
  out = []
  for p in s.options["precisions"]:
    own = {"precision": p, "finetune_epochs": s.options["finetune_epochs"]}
    out += [s.spec(f"greedy_1core_{p}", programs.GREEDY, 1, own)] + [
        s.spec(f"pipeline_{pool}_{p}", programs.PIPELINE_PARALLEL, s.num_devices, {**own, "thread_pool": pool})
        for pool in POOLS] + [s.spec(f"model_parallel_{p}", programs.MODEL_PARALLEL, s.num_devices, own)]
  return out


def summarize(s: harness.Setting, found: harness.Records) -> Dict:
  """Per configuration: pretraining and finetuning GFLOP/s and their fraction of its precision's limit of its cores;
  per precision the pipeline's faster pool's pretraining fraction and finetuning speedup over one core (same repeat)
  and model_parallel's pretraining fraction; one core's finetuning in float32 over bfloat16 (seconds, same repeat)
  when both ran."""
  rates, floor = harness.matmul_rates(s), harness.update_floor(s)
  out = {"precisions": list(s.options["precisions"]), "update_floor": floor, "matmul_gflops_per_second_one_core": {
      p: rates[p]["gflops_per_second"] for p in s.options["precisions"]}, "matmul_ways": {
      p: rates[p]["ways"] for p in s.options["precisions"]}, "matmul_shapes": {
      p: rates[p].get("shapes", []) for p in s.options["precisions"]}, "configurations": {}}
  for name, rs in found.items():
    p, c = rs[0]["config"]["precision"], rs[0]["config"]
    # The cores a run may keep busy: its devices x threads per device, at most the usable cores.
    rate, c = rates[p]["gflops_per_second"] * 1e9, min(c["num_devices"] * c["threads_per_device"],
                                                       rs[0]["environment"]["usable_cores"])
    pre = [harness.flops(r) / r["pretrain_seconds"] for r in rs]
    # What the passes over the kernels leave to the products: at one core's rates, products / (products + passes).
    ceiling = [harness.flops(r) / rate / (harness.flops(r) / rate + harness.floor_seconds(r, floor[p])) for r in rs]
    fine = [cost.finetune_epoch_flops(r["config"]["hidden_units"], r["config"]["train_examples"])
            * r["finetune"]["epochs"] / r["finetune"]["seconds"] for r in rs]
    out["configurations"][name] = {
        "precision": p, "cores": c, "pretrain_gflops_per_second": harness.spread([x / 1e9 for x in pre]),
        "pretrain_fraction_of_limit": harness.spread([x / (c * rate) for x in pre]),
        "pretrain_ceiling_of_limit": harness.spread(ceiling),
        "pretrain_fraction_of_ceiling": harness.spread([x / (c * rate) / y for x, y in zip(pre, ceiling)]),
        "finetune_gflops_per_second": harness.spread([x / 1e9 for x in fine]),
        "finetune_fraction_of_limit": harness.spread([x / (c * rate) for x in fine]),
        "finetune_speedup_vs_one_core": harness.spread([a["finetune"]["seconds"] / b["finetune"]["seconds"] for a, b
                                                        in zip(found[f"greedy_1core_{p}"], rs)]),
        "finetune_placement": rs[0]["finetune"].get("placement")}
  for p in s.options["precisions"]:
    mine = {pool: out["configurations"][f"pipeline_{pool}_{p}"] for pool in POOLS}
    best = max(POOLS, key=lambda pool: mine[pool]["pretrain_fraction_of_limit"]["median"])
    out[f"pipeline_fraction_{p}"] = dict(mine[best]["pretrain_fraction_of_limit"], pool=best)
    out[f"pipeline_ceiling_{p}"] = mine[best]["pretrain_ceiling_of_limit"]
    fast = max(POOLS, key=lambda pool: mine[pool]["finetune_speedup_vs_one_core"]["median"])
    out[f"finetune_speedup_{p}"] = dict(mine[fast]["finetune_speedup_vs_one_core"], pool=fast)
    if f"model_parallel_{p}" in out["configurations"]:  # summaries from before it ran have none
      out[f"model_parallel_fraction_{p}"] = out["configurations"][f"model_parallel_{p}"]["pretrain_fraction_of_limit"]
  f32, bf16 = programs.PRECISIONS
  if {f32, bf16} <= set(s.options["precisions"]):
    out["bf16_over_f32_finetune_one_core"] = harness.spread([
        a["finetune"]["seconds"] / b["finetune"]["seconds"]
        for a, b in zip(found[f"greedy_1core_{f32}"], found[f"greedy_1core_{bf16}"])])
  return out


def details(summary: Dict):
  """The README table: per configuration the fraction of its precision's limit of its cores, pretraining and
  finetuning, and finetuning's speedup over one core (a summary of one precision, from before: no speedup)."""
  old = "precisions" not in summary  # one precision per summary, configurations named without it
  rate = summary["matmul_gflops_per_second_one_core"]
  caption = (f"{summary['precision']}; the limit: one core's matrix-product rate at the step's shapes, {rate:.0f} "
             "GFLOP/s, times the cores a configuration uses") if old else (
      "the limit: one core's matrix-product rate at the step's shapes (GFLOP/s: "
      f"{', '.join(f'{p} {r:.0f}' for p, r in rate.items())}) times the cores a configuration uses; finetuning "
      "speedup: one core's finetuning seconds / the configuration's (same repeat)")
  speedup = [] if old else ["finetune_speedup_vs_one_core"]
  ceiling = ["pretrain_ceiling_of_limit", "pretrain_fraction_of_ceiling"] if "update_floor" in summary else []
  return caption, ["configuration", "cores", "pretraining: fraction of the limit",
                   *(["pretraining: ceiling the kernels' passes leave", "pretraining: fraction of the ceiling"]
                     if ceiling else []), "finetuning: fraction of the limit",
                   *(["finetuning speedup over one core"] if speedup else []), "finetuning placement"], [
      [name] + [m[k] for k in ("cores", "pretrain_fraction_of_limit", *ceiling, "finetune_fraction_of_limit",
                               *speedup, "finetune_placement")] for name, m in summary["configurations"].items()]


BENCHMARK = presets.Benchmark(
    name="limit", runs=configurations, summarize=summarize, details=details,
    defaults={"hidden_units": "2000,2000,2000,2000", "batch_size": 100, "train_examples": 11_000},
    options={"precisions": (list(programs.PRECISIONS), "Precisions (--precision) of the runs, alternated."),
             "finetune_epochs": (2, "Finetuning epochs of every run.")},
    folder=lambda s: f"b{s.batch_size}_{harness.machine_class()}",
    columns=tuple((f"fraction_{n}", f"{n}: fraction of the limit") for n in BASES[:3]) + tuple(  # one precision
        (f"{m}_{p}", f"{label}, {p}") for p in programs.PRECISIONS for m, label in (
            ("pipeline_fraction", "pipeline, fraction of the limit (faster pool)"),
            ("pipeline_ceiling", "pipeline, the ceiling the kernels' passes leave"),
            ("model_parallel_fraction", "model_parallel, fraction of the limit"),
            ("finetune_speedup", "finetuning / one core (faster pool)"))) + (
        ("bf16_over_f32_finetune_one_core", "one core's finetuning, float32 / bfloat16 seconds"),), order=10)

if __name__ == "__main__":
  harness.main(BENCHMARK)
