"""Benchmark: pipeline_parallel with replicated stages (P stages x R replicas, `--replicas_per_stage=R`) against
data_parallel on --num_devices replicas: every (P, R) of --stages x --replicas whose P R devices fit the usable cores
(and P <= layers), 1 thread per device, alternated (2 cores: (1, 1), (1, 2), (2, 1)). Measures each one's speedup
over P = R = 1, P = 1, R = 2 against P = 2, R = 1 and data_parallel, and `perf_model.Pipeline` (fitted on the
one-device run) at the measured points with R = 1 (no all-reduce cost). Timings are committed: run alone.
  python -m experiments.benchmarks.hybrid"""

import re
from typing import Dict, List, Tuple

from common.measure import provenance
from common.settings import programs
from experiments import harness, perf_model, presets

PP, DP = programs.PIPELINE_PARALLEL, programs.DATA_PARALLEL


def points(s: harness.Setting) -> List[Tuple[int, int]]:
  """Every (P, R) asked for with P <= the stack's layers."""
  return [(p, r) for p in map(int, s.options["stages"]) for r in map(int, s.options["replicas"])
          if p <= len(s.hidden_units)]


def configurations(s: harness.Setting) -> List:
  """pipeline_parallel at every (P, R) whose devices fit the usable cores ((1, 1) always), and data_parallel."""
  cores = provenance.usable_cores()
  return [s.spec(f"p{p}_r{r}", PP, p * r, {"replicas_per_stage": r}) for p, r in points(s)
          if p * r <= cores or (p, r) == (1, 1)] + [s.spec(DP.run_name, DP, s.num_devices, dict(DP.timing_settings))]


def summarize(s: harness.Setting, found: harness.Records) -> Dict:
  """Speedups over the one-device pipeline, the two-device comparison, and the model at the measured (P, 1)."""
  base = "p1_r1"
  out = {"speedup_vs_one_device": harness.speedups(found, base)}
  if "p1_r2" in found and "p2_r1" in found:
    out["p1_r2_vs_p2_r1"] = harness.ratio_spread(found, "p2_r1", "p1_r2")
    out["p1_r2_vs_data_parallel"] = harness.ratio_spread(found, DP.run_name, "p1_r2")
  model, config = perf_model.Pipeline.calibrate({base: found[base][0]}), found[base][0]["config"]
  out["model"] = {"describe": model.describe(), "predictions": [
      {"stages": p, "replicas": r, "devices": p * r, "measured": f"p{p}_r{r}" in found,
       "predicted_seconds": model.predict(dict(config, replicas_per_stage=r), p * r)} for p, r in points(s)
      if f"p{p}_r{r}" in found and r == 1]}
  return out


def details(summary: Dict):
  """The README table: the measured (P, R) and the model's seconds where it applies (one replica per stage)."""
  secs, model = summary["pretrain_seconds"], summary["model"]
  predicted = {(m["stages"], m["replicas"]): m["predicted_seconds"] for m in model["predictions"] if m["measured"]}
  measured = [tuple(map(int, m.groups())) for m in map(re.compile(r"p(\d+)_r(\d+)").fullmatch, secs) if m]
  return (f"performance model ({model['describe']}; fitted on the one-device pipeline): it has no all-reduce cost, so "
          "it is shown only with one replica per stage, and only at the measured configurations (those whose devices "
          "fit this machine's cores)", ["stages P", "replicas R", "devices", "measured s", "model s"],
          [[p, r, p * r, secs[f"p{p}_r{r}"], "— (no all-reduce cost)" if r > 1 else "—" if (p, r) not in predicted
            else f"{predicted[(p, r)]:.3g}" + (" (fit)" if p == 1 else "")] for p, r in measured])


BENCHMARK = presets.Benchmark(
    name="hybrid", runs=configurations, summarize=summarize, details=details, order=5,
    options={"stages": (["1", "2", "4"], "Stage counts P."), "replicas": (["1", "2", "4"], "Replicas per stage R.")},
    columns=(("p1_r2_vs_p2_r1", "P=1,R=2 vs P=2,R=1"), ("p1_r2_vs_data_parallel", "P=1,R=2 vs data parallel")))

if __name__ == "__main__":
  harness.main(BENCHMARK)
