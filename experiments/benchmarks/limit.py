"""Benchmark: the machine's limit and how close the job gets to it, in each precision of --precisions: one core's
matrix-product rate at the step's shapes (`matmul_rates`, one thread; C cores' limit: C times it) and the fraction of
it reached by greedy on one core, by pipeline_parallel on --num_devices one-thread devices with each intra-op pool
(per_device; shared: one pool of all their threads, so the lighter stage's core helps the heavier) and by
model_parallel on those devices (its --thread_pool=auto), in pretraining (FLOPs of the record's layer-epochs,
`common.measure.cost`) and in finetuning (`cost.finetune_epoch_flops`, evaluation left out, at the placement
--finetune_placement=auto gives); finetuning's speedup over one core, and one core's bfloat16 finetuning against
float32's. The ceiling of a configuration's pretraining: the fraction of the limit its steps could reach if all
but the passes over the kernels that the mathematics needs (`update_floor`: the update, and in bfloat16 the casts)
took no time, products / (products + those passes), both at one core's measured rates. Every fraction is also given
against the limit as the machine runs: on two cores the higher rate of two one-thread product streams at once, as
threads of one process or as two processes (`harness.two_stream_rates`), not twice one core's. Alternated; timings are
committed: run alone. Records per instruction-set class (folder b<batch>_<class>; summaries of one precision are
from before).
  python -m experiments.benchmarks.limit --batch_size=100   (and --batch_size=1000 --train_examples=22000)"""

from typing import Dict, List, Mapping

from common.measure import cost, provenance
from common.settings import processor_defaults, programs
from experiments import harness, presets, records
from experiments.render import figures

POOLS = ("per_device", "shared")
BASES = ("greedy_1core",) + tuple(f"pipeline_{pool}" for pool in POOLS) + (programs.MODEL_PARALLEL.name,)
PAIR = "greedy_beside"  # greedy on one core with a copy of itself on the other (`experiments.beside`)


def configurations(s: harness.Setting) -> List:
  """Per precision: greedy on one core; pipeline_parallel on the devices with each pool; model_parallel on the devices
  (its pool from --thread_pool=auto); every run finetunes too."""
  out = []
  for p in s.options["precisions"]:
    own = {"precision": p, "finetune_epochs": s.options["finetune_epochs"]}
    out += [s.spec(f"greedy_1core_{p}", programs.GREEDY, 1, own)] + [
        s.spec(f"pipeline_{pool}_{p}", programs.PIPELINE_PARALLEL, s.num_devices, {**own, "thread_pool": pool})
        for pool in POOLS] + [s.spec(f"model_parallel_{p}", programs.MODEL_PARALLEL, s.num_devices, own)]
    if s.options.get("account"):  # the interference of the account: greedy beside a copy of itself
      out.append(s.spec(f"{PAIR}_{p}", programs.GREEDY, 1, own, launcher=("experiments.beside",)))
  return out


def summarize(s: harness.Setting, found: harness.Records) -> Dict:
  """Per configuration: pretraining and finetuning GFLOP/s and their fraction of its precision's limit of its cores;
  per precision the pipeline's faster pool's pretraining fraction and finetuning speedup over one core (same repeat)
  and model_parallel's pretraining fraction; one core's finetuning in float32 over bfloat16 (seconds, same repeat)
  when both ran."""
  rates, floor, two = harness.matmul_rates(s), harness.update_floor(s), harness.two_stream_rates(s)
  out = {"precisions": list(s.options["precisions"]), "update_floor": floor, "two_streams": two,
         "matmul_gflops_per_second_one_core": {
      p: rates[p]["gflops_per_second"] for p in s.options["precisions"]}, "matmul_ways": {
      p: rates[p]["ways"] for p in s.options["precisions"]}, "matmul_shapes": {
      p: rates[p].get("shapes", []) for p in s.options["precisions"]}, "configurations": {}}
  for name, rs in found.items():
    p, c = rs[0]["config"]["precision"], rs[0]["config"]
    # The cores a run may keep busy: its devices x threads per device, at most the usable cores.
    rate, c = rates[p]["gflops_per_second"] * 1e9, min(c["num_devices"] * c["threads_per_device"],
                                                       rs[0]["environment"]["usable_cores"])
    pre = [harness.flops(r) / r["pretrain_seconds"] for r in rs]
    # The limit as the machine runs: one core's rate on one core, two streams' at once on two (else not measured).
    running = {1: rate, 2: two[p]["gflops_per_second"] * 1e9}.get(c)
    # What the passes over the kernels leave to the products: at one core's rates, products / (products + passes).
    ceiling = [harness.flops(r) / rate / (harness.flops(r) / rate + harness.floor_seconds(r, floor[p])) for r in rs]
    fine = [cost.finetune_epoch_flops(r["config"]["hidden_units"], r["config"]["train_examples"])
            * r["finetune"]["epochs"] / r["finetune"]["seconds"] for r in rs]
    out["configurations"][name] = {
        "precision": p, "cores": c, "pretrain_gflops_per_second": harness.spread([x / 1e9 for x in pre]),
        "pretrain_fraction_of_limit": harness.spread([x / (c * rate) for x in pre]),
        "pretrain_ceiling_of_limit": harness.spread(ceiling),
        "pretrain_fraction_of_ceiling": harness.spread([x / (c * rate) / y for x, y in zip(pre, ceiling)]),
        "pretrain_fraction_of_running_limit": harness.spread([x / running for x in pre]) if running else None,
        "finetune_gflops_per_second": harness.spread([x / 1e9 for x in fine]),
        "finetune_fraction_of_limit": harness.spread([x / (c * rate) for x in fine]),
        "finetune_fraction_of_running_limit": harness.spread([x / running for x in fine]) if running else None,
        "finetune_speedup_vs_one_core": harness.spread([a["finetune"]["seconds"] / b["finetune"]["seconds"] for a, b
                                                        in zip(found[f"greedy_1core_{p}"], rs)]),
        "finetune_placement": rs[0]["finetune"].get("placement")}
  for p in s.options["precisions"]:
    mine = {pool: out["configurations"][f"pipeline_{pool}_{p}"] for pool in POOLS}
    best = max(POOLS, key=lambda pool: mine[pool]["pretrain_fraction_of_limit"]["median"])
    out[f"pipeline_fraction_{p}"] = dict(mine[best]["pretrain_fraction_of_limit"], pool=best)
    if mine[best]["pretrain_fraction_of_running_limit"]:
      out[f"pipeline_fraction_running_{p}"] = dict(mine[best]["pretrain_fraction_of_running_limit"], pool=best)
    out[f"pipeline_ceiling_{p}"] = mine[best]["pretrain_ceiling_of_limit"]
    fast = max(POOLS, key=lambda pool: mine[pool]["finetune_speedup_vs_one_core"]["median"])
    out[f"finetune_speedup_{p}"] = dict(mine[fast]["finetune_speedup_vs_one_core"], pool=fast)
    if f"model_parallel_{p}" in out["configurations"]:  # summaries from before it ran have none
      out[f"model_parallel_fraction_{p}"] = out["configurations"][f"model_parallel_{p}"]["pretrain_fraction_of_limit"]
    if f"{PAIR}_{p}" in found and mine[best]["pretrain_fraction_of_running_limit"]:
      out[f"account_{p}"] = account(found[f"pipeline_{best}_{p}"], found[f"greedy_1core_{p}"], found[f"{PAIR}_{p}"],
                                    rates[p]["gflops_per_second"] * 1e9)
  f32, bf16 = programs.PRECISIONS
  if {f32, bf16} <= set(s.options["precisions"]):
    out["bf16_over_f32_finetune_one_core"] = harness.spread([
        a["finetune"]["seconds"] / b["finetune"]["seconds"]
        for a, b in zip(found[f"greedy_1core_{f32}"], found[f"greedy_1core_{bf16}"])])
  return out


ACCOUNT = ("interference", "computing", "tails", "idle")  # the parts of the account, in `account`'s order


def account(pipeline: List[dict], alone: List[dict], beside: List[dict], rate: float) -> Dict:
  """Where a two-device pipeline's pretraining seconds beyond the limit's go, per repeat (spreads over the repeats):
  wall - limit = (mean busy - limit) + mean idle, a stage's busy seconds its device's in-graph compute time
  (`pipeline.busy_seconds`), idle its wall minus busy, the limit the records' FLOPs at twice one core's `rate`
  (FLOP/s). Busy beyond the limit splits into interference, (greedy beside a copy of itself / greedy alone - 1, the
  same repeat) x the limit's seconds, and computing (the rest: the kernels short of the products' rate, the casts and
  the update); idle into tails (the full ticks' seconds beyond their median, `pipeline.tick_seconds`: the tick's
  barrier waiting for a slow stage) and idle (the rest: imbalance between the stages, fill and drain). Each part as
  seconds and as a fraction of the wall; their sum is wall - limit. Runs without busy seconds or tick times (op
  determinism) are left out."""
  parts = {k: [] for k in ACCOUNT + ("limit", "wall")}
  for r, a, b in zip(pipeline, alone, beside):
    busy, ticks = r["pipeline"].get("busy_seconds"), r["pipeline"].get("tick_seconds")
    if not busy or not ticks:
      continue
    wall, limit = r["pretrain_seconds"], harness.flops(r) / (2 * rate)
    mean_busy, interference = sum(busy) / len(busy), (b["pretrain_seconds"] / a["pretrain_seconds"] - 1) * limit
    tails = ticks["count"] * (ticks["mean"] - ticks["median"])
    values = {"interference": interference, "computing": mean_busy - limit - interference, "tails": tails,
              "idle": wall - mean_busy - tails, "limit": limit, "wall": wall}
    for k, v in values.items():
      parts[k].append(v)
  if not parts["wall"]:
    return {}
  return {k: {"seconds": harness.spread(v), "fraction_of_wall": harness.spread(
      [x / w for x, w in zip(v, parts["wall"])])} for k, v in parts.items()}


# The account's bars: the limit's own seconds, then each part beyond it (`ACCOUNT`), with their axis labels.
PARTS = (("limit", "the limit\n(products at\n2 cores' rate)"),
         ("interference", "interference\n(greedy beside\na copy)"),
         ("computing", "the stages'\ncomputing\nbeyond it"), ("tails", "slow ticks"),
         ("idle", "idle\n(imbalance,\nfill, drain)"))


def accounted(summaries: Mapping[str, Dict]) -> List[Dict]:
  """The summaries with an account (`account_<precision>`), by instruction-set class (the most capable first), then
  batch."""
  order = processor_defaults.CLASS_ORDER + (None,)
  return sorted((s for s in summaries.values() if any(s.get(f"account_{p}") for p in s.get("precisions", []))),
                key=lambda s: (order.index(provenance.instruction_set(s["provenance"].get("cpu_flags"))),
                               s["setting"]["batch_size"]))


def figure(summaries: Mapping[str, Dict]):
  """Where the pipeline's pretraining wall time goes (`account`): per summary with an account (a machine and a batch),
  each part as a fraction of the wall per precision, bars at the median over the repeats, lines from the least to the
  most (in each repeat the parts sum to 1). None when no summary has an account."""
  shown = accounted(summaries)
  if not shown:
    return None
  fig, axes = figures.grid(len(shown), width=6.0, height=4.4)
  for ax, s in zip(axes, shown):
    own = [p for p in s["precisions"] if s.get(f"account_{p}")]
    width = 0.8 / len(own)
    for i, p in enumerate(own):
      parts = [s[f"account_{p}"][k]["fraction_of_wall"] for k, _ in PARTS]
      xs = [j + (i - (len(own) - 1) / 2) * width for j in range(len(PARTS))]
      ax.bar(xs, [v["median"] for v in parts], width, color=figures.COLORS[i], label=p.replace("mixed_", ""),
             yerr=[[v["median"] - v["min"] for v in parts], [v["max"] - v["median"] for v in parts]], capsize=2,
             error_kw={"elinewidth": 0.8})
      for x, v in zip(xs, parts):
        ax.annotate(f"{v['median']:.2f}", (x, max(v["max"], 0.0)), ha="center", va="bottom", fontsize=6)
    ax.axhline(0.0, color="0.3", linewidth=0.6)
    ax.set_xticks(range(len(PARTS)), [label for _, label in PARTS], fontsize=7)
    ax.set_ylabel("fraction of the pretraining wall time", fontsize=8)
    ax.legend(fontsize=7)
    pv = s["provenance"]
    ax.set_title(f"{records.processor(pv.get('cpu_model'))}, {provenance.instruction_set(pv.get('cpu_flags'))}"
                 + (f", machine {pv['machine_id'][:6]}" if pv.get("machine_id") else "")
                 + f", commit {pv['commit'][:7]}\nbatch {s['setting']['batch_size']}, "
                 f"{s['setting']['train_examples']:,} images, {s['setting']['pretrain_epochs']} epochs, "
                 f"medians of {s['setting']['repeats']}", fontsize=8)
  low = min([0.0] + [v["fraction_of_wall"]["min"] for s in shown for p in s["precisions"]
                     for v in (s.get(f"account_{p}") or {}).values()])
  for ax in axes:  # one scale for every panel
    ax.set_ylim(low - 0.05, 1.0)
  units = shown[0]["setting"]["hidden_units"]
  fig.suptitle("Where the pipeline's pretraining time goes: pipeline_parallel on 2 one-thread devices, "
               + (f"{len(units)} × {units[0]}" if len(set(units)) == 1 else " × ".join(map(str, units))) + " units",
               fontsize=10)
  fig.tight_layout()
  return fig


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
  running = ["pretrain_fraction_of_running_limit"] if "two_streams" in summary else []
  if running:
    caption += ("; the limit as the machine runs: one core's rate on one core, on two the higher of two one-thread "
                "product streams at once as threads or as processes (GFLOP/s: " + ", ".join(
                    f"{p} {v['gflops_per_second']:.0f}" for p, v in summary["two_streams"].items()) + ")")
  return caption, ["configuration", "cores", "pretraining: fraction of the limit",
                   *(["pretraining: fraction of the limit as it runs"] if running else []),
                   *(["pretraining: ceiling the kernels' passes leave", "pretraining: fraction of the ceiling"]
                     if ceiling else []), "finetuning: fraction of the limit",
                   *(["finetuning speedup over one core"] if speedup else []), "finetuning placement"], [
      [name] + [m[k] for k in ("cores", "pretrain_fraction_of_limit", *running, *ceiling, "finetune_fraction_of_limit",
                               *speedup, "finetune_placement")] for name, m in summary["configurations"].items()]


BENCHMARK = presets.Benchmark(
    name="limit", runs=configurations, summarize=summarize, details=details,
    defaults={"hidden_units": "2000,2000,2000,2000", "batch_size": 100, "train_examples": 11_000},
    options={"precisions": (list(programs.PRECISIONS), "Precisions (--precision) of the runs, alternated."),
             "finetune_epochs": (2, "Finetuning epochs of every run."),
             "account": (1, "1: also greedy beside a copy of itself (the account's interference); 0: not.")},
    folder=lambda s: f"b{s.batch_size}_{harness.machine_class()}", figure=figure, figure_file="limit_account.png",
    columns=tuple((f"fraction_{n}", f"{n}: fraction of the limit") for n in BASES[:3]) + tuple(  # one precision
        (f"{m}_{p}", f"{label}, {p}") for p in programs.PRECISIONS for m, label in (
            ("pipeline_fraction", "pipeline, fraction of the limit (faster pool)"),
            ("pipeline_fraction_running", "pipeline, fraction of the limit as it runs (two streams)"),
            ("pipeline_ceiling", "pipeline, the ceiling the kernels' passes leave"),
            ("model_parallel_fraction", "model_parallel, fraction of the limit"),
            ("finetune_speedup", "finetuning / one core (faster pool)"))) + (
        ("bf16_over_f32_finetune_one_core", "one core's finetuning, float32 / bfloat16 seconds"),), order=10)

if __name__ == "__main__":
  harness.main(BENCHMARK)
