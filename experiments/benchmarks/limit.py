"""Benchmark: the machine's limit and how close the job gets to it. In one run: one core's matrix-product rate at the
step's shapes (`matmul_rates`, one thread, per precision; the limit of C cores is C times it), and the fraction of
that limit reached by greedy (one device, one thread: one core), by pipeline_parallel on --num_devices one-thread
devices with each intra-op pool (per_device: one thread each; shared: one pool of all their threads, so the
lighter stage's core helps the heavier one), pretraining (FLOPs from `common.measure.cost`: the record's layer-epochs)
and finetuning (`common.measure.cost.finetune_epoch_flops` of its epochs, evaluation left out), at --precision.
Alternated repeat after repeat; timings are committed: run alone on the machine.
  python -m experiments.benchmarks.limit --batch_size=100   (and 1000)"""

from typing import Dict, List

from common.measure import cost
from common.settings import programs
from experiments import presets
from experiments.benchmarks import harness
from experiments.benchmarks import precision as precision_bench

POOLS = ("per_device", "shared")


def configurations(s: harness.Setting) -> List:
  """greedy on one core; pipeline_parallel on the devices with each pool; every run finetunes too."""
  extra = (f"--precision={s.options['precision']}", f"--finetune_epochs={s.options['finetune_epochs']}")
  return [s.spec("greedy_1core", programs.GREEDY, 1, extra=extra)] + [
      s.spec(f"pipeline_{pool}", programs.PIPELINE_PARALLEL, s.num_devices, extra=extra + (f"--thread_pool={pool}",))
      for pool in POOLS]


def cores_of(record: dict) -> int:
  """The cores a run may keep busy: its devices x threads per device, at most the usable cores."""
  c = record["config"]
  return min(c["num_devices"] * c["threads_per_device"], record["environment"]["usable_cores"])


def summarize(s: harness.Setting, found: harness.Records) -> Dict:
  """Per configuration: pretraining and finetuning GFLOP/s and their fraction of the limit of its cores."""
  precision = s.options["precision"]
  rate = precision_bench.matmul_rates(s)[precision]["gflops_per_second"] * 1e9
  out = {"precision": precision, "matmul_gflops_per_second_one_core": rate / 1e9, "configurations": {}}
  for name, rs in found.items():
    pre = [precision_bench.flops(r) / r["pretrain_seconds"] for r in rs]
    fine = [cost.finetune_epoch_flops(r["config"]["hidden_units"], r["config"]["train_examples"]) *
            r["finetune"]["epochs"] / r["finetune"]["seconds"] for r in rs]
    c = cores_of(rs[0])
    out["configurations"][name] = {
        "cores": c, "pretrain_gflops_per_second": harness.spread([x / 1e9 for x in pre]),
        "pretrain_fraction_of_limit": harness.spread([x / (c * rate) for x in pre]),
        "finetune_gflops_per_second": harness.spread([x / 1e9 for x in fine]),
        "finetune_fraction_of_limit": harness.spread([x / (c * rate) for x in fine]),
        "finetune_placement": rs[0]["finetune"].get("placement")}
  for name in found:
    out[f"fraction_{name}"] = out["configurations"][name]["pretrain_fraction_of_limit"]
  return out


def details(summary: Dict):
  """The README table: per configuration the fraction of its cores' limit, pretraining and finetuning."""
  caption = (f"{summary['precision']}; the limit: one core's matrix-product rate at the step's shapes, "
             f"{summary['matmul_gflops_per_second_one_core']:.0f} GFLOP/s, times the cores a configuration uses")
  return caption, ["configuration", "cores", "pretraining: fraction of the limit", "finetuning: fraction of the limit",
                   "finetuning placement"], [
      [name, m["cores"], m["pretrain_fraction_of_limit"], m["finetune_fraction_of_limit"], m["finetune_placement"]]
      for name, m in summary["configurations"].items()]


BENCHMARK = presets.Study(
    name="limit", runs=configurations, summarize=summarize, details=details,
    defaults={"hidden_units": "2000,2000,2000,2000", "batch_size": 100, "pretrain_epochs": 2,
              "train_examples": 11_000, "num_devices": 2, "repeats": 3},
    options={"precision": (programs.PRECISIONS[0], "Precision (--precision) of every run."),
             "finetune_epochs": (2, "Finetuning epochs of every run.")},
    folder=lambda s: f"b{s.batch_size}_{s.options['precision']}",
    columns=tuple((f"fraction_{n}", f"{n}: fraction of the limit") for n in
                  ("greedy_1core",) + tuple(f"pipeline_{p}" for p in POOLS)),
    campaign=tuple({"batch_size": b, "train_examples": n, "precision": p} for b, n in ((100, 11_000), (1000, 22_000))
                   for p in programs.PRECISIONS), order=10)
STUDIES = (BENCHMARK,)

if __name__ == "__main__":
  harness.main(BENCHMARK)
