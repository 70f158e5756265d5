"""Benchmark: every program in float32 and in mixed_bfloat16 side by side (on its devices of --num_devices, 1 thread
each, pretraining only, alternated repeat after repeat): per program float32 seconds / bfloat16 seconds in the same
repeat; the pipeline in bfloat16 against greedy in float32; one core's matrix-product rates at the step's shapes
(`harness.matmul_rates`, after the runs) and, per program and precision, the FLOPs it computed per second per device
(`harness.flops`) as a fraction of one core's bfloat16 rate. Timings are committed: run alone on the machine.
  python -m experiments.benchmarks.precision --batch_size=1000   (and 100, 5000)"""

from typing import Dict, List

from common.settings import programs
from experiments import harness, presets


def configurations(s: harness.Setting) -> List:
  """Every registered program in each precision, timed."""
  return [s.spec(f"{p.name}_{precision}", p, p.devices_for(s.num_devices),
                 {"precision": precision, **dict(p.timing_settings)})
          for p in programs.PROGRAMS for precision in programs.PRECISIONS]


def summarize(s: harness.Setting, found: harness.Records) -> Dict:
  """Speedups of bfloat16, pipeline in bfloat16 against greedy in float32, rates and fractions of the bf16 rate."""
  f32, bf16 = programs.PRECISIONS
  rates = harness.matmul_rates(s)
  core = rates[bf16]["gflops_per_second"] * 1e9
  out = {"matmul_rates": rates, "bf16_over_f32_matmul_rate": rates[bf16]["gflops_per_second"] /
         rates[f32]["gflops_per_second"], "programs": {}}
  for p in programs.PROGRAMS:
    devices = p.devices_for(s.num_devices)
    out["programs"][p.name] = {
        "devices": devices,
        "speedup_bf16_over_f32": harness.ratio_spread(found, f"{p.name}_{f32}", f"{p.name}_{bf16}"),
        "fraction_of_bf16_rate": {precision: harness.spread([harness.flops(r) / r["pretrain_seconds"] / devices / core
                                                             for r in found[f"{p.name}_{precision}"]])
                                  for precision in programs.PRECISIONS}}
    out[f"speedup_{p.name}"] = out["programs"][p.name]["speedup_bf16_over_f32"]
  out["pipeline_bf16_vs_greedy_f32"] = harness.ratio_spread(
      found, f"{programs.GREEDY.name}_{f32}", f"{programs.PIPELINE_PARALLEL.name}_{bf16}")
  return out


def details(summary: Dict):
  """The README table: per program, the speedup of bfloat16 and the fraction of one core's bfloat16 rate reached."""
  f32, bf16 = programs.PRECISIONS
  rates = summary["matmul_rates"]
  caption = (f"one core's matrix-product rate at the step's shapes, float32 {rates[f32]['gflops_per_second']:.0f} "
             f"and bfloat16 {rates[bf16]['gflops_per_second']:.0f} GFLOP/s ({summary['bf16_over_f32_matmul_rate']:.2f}"
             "×); pipeline parallel in bfloat16 vs greedy in float32: "
             f"{summary['pipeline_bf16_vs_greedy_f32']['median']:.2f}× (median of the repeats)")
  return caption, ["program", "devices", "float32 s / bfloat16 s", "fraction of one core's bfloat16 rate per device, "
                   "float32", "bfloat16"], [
      [programs.get(name).label, m["devices"], m["speedup_bf16_over_f32"], m["fraction_of_bf16_rate"][f32],
       m["fraction_of_bf16_rate"][bf16]] for name, m in summary["programs"].items()]


BENCHMARK = presets.Benchmark(
    name="precision", runs=configurations, summarize=summarize, defaults={"train_examples": 55_000},
    columns=tuple((f"speedup_{p.name}", f"{p.label}: f32 s / bf16 s") for p in programs.PROGRAMS)
    + (("pipeline_bf16_vs_greedy_f32", "pipeline bf16 vs greedy f32"),), details=details, order=2)

if __name__ == "__main__":
  harness.main(BENCHMARK)
