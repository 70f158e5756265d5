"""Benchmark: pipeline_parallel with replicated stages (P stages x R replicas, `--replicas_per_stage=R`) against
data_parallel, with the performance model's predictions for every P x R asked for. Every (P, R) of --stages x
--replicas whose P R devices fit the cores this process may use (and P <= layers) runs, with data_parallel on
--num_devices replicas, 1 thread per device, alternated (2 cores: (1, 1), (1, 2), (2, 1)). Measures each one's
speedup over P = R = 1, P = 1, R = 2 against P = 2, R = 1 and against data_parallel, and `perf_model.Pipeline`
(fitted on the one-device run) at the measured points with one replica per stage: the model has no all-reduce cost,
so it predicts nothing with R > 1. Timings are committed: run alone on the machine.
  python -m experiments.benchmarks.hybrid"""

import re
from typing import Dict, List, Tuple

from common.measure import provenance
from common.settings import programs
from experiments import harness, perf_model, presets

PP, DP = programs.PIPELINE_PARALLEL, programs.DATA_PARALLEL


def _name(stages: int, replicas: int) -> str:
  return f"p{stages}_r{replicas}"


def points(s: harness.Setting) -> List[Tuple[int, int]]:
  """Every (P, R) asked for with P <= the stack's layers."""
  return [(p, r) for p in map(int, s.options["stages"]) for r in map(int, s.options["replicas"])
          if p <= len(s.hidden_units)]


def configurations(s: harness.Setting) -> List:
  """pipeline_parallel at every (P, R) whose devices fit the usable cores ((1, 1) always), and data_parallel."""
  cores = provenance.usable_cores()
  return [s.spec(_name(p, r), PP, p * r, {"replicas_per_stage": r}) for p, r in points(s)
          if p * r <= cores or (p, r) == (1, 1)] + [s.spec(DP.run_name, DP, s.num_devices, dict(DP.timing_settings))]


def summarize(s: harness.Setting, found: harness.Records) -> Dict:
  """Speedups over the one-device pipeline, the two-device comparison, and the model at the measured (P, 1)."""
  base = _name(1, 1)
  out = {"speedup_vs_one_device": harness.speedups(found, base)}
  if _name(1, 2) in found and _name(2, 1) in found:
    out["p1_r2_vs_p2_r1"] = harness.ratio_spread(found, _name(2, 1), _name(1, 2))
    out["p1_r2_vs_data_parallel"] = harness.ratio_spread(found, DP.run_name, _name(1, 2))
  model = perf_model.Pipeline.calibrate({base: found[base][0]})
  config = found[base][0]["config"]
  out["model"] = {"describe": model.describe(), "predictions": [
      {"stages": p, "replicas": r, "devices": p * r, "measured": _name(p, r) in found,
       "predicted_seconds": model.predict(dict(config, replicas_per_stage=r), p * r)} for p, r in points(s)
      if _name(p, r) in found and r == 1]}
  return out


def details(summary: Dict):
  """The README table: the measured (P, R) and the model's seconds where it applies (one replica per stage)."""
  seconds, model = summary["pretrain_seconds"], summary["model"]
  predicted = {(m["stages"], m["replicas"]): m["predicted_seconds"] for m in model["predictions"] if m["measured"]}
  measured = [tuple(map(int, m.groups())) for m in map(re.compile(r"p(\d+)_r(\d+)").fullmatch, seconds) if m]
  return (f"performance model ({model['describe']}; fitted on the one-device pipeline): it has no all-reduce cost, so "
          "it is shown only with one replica per stage, and only at the measured configurations (those whose devices "
          "fit this machine's cores)", ["stages P", "replicas R", "devices", "measured s", "model s"],
          [[p, r, p * r, seconds[_name(p, r)], "— (no all-reduce cost)" if r > 1 else "—" if (p, r) not in predicted
            else f"{predicted[(p, r)]:.3g}" + (" (fit)" if p == 1 else "")] for p, r in measured])


BENCHMARK = presets.Benchmark(
    name="hybrid", runs=configurations, summarize=summarize,
    options={"stages": (["1", "2", "4"], "Stage counts P."), "replicas": (["1", "2", "4"], "Replicas per stage R.")},
    columns=(("p1_r2_vs_p2_r1", "P=1,R=2 vs P=2,R=1"), ("p1_r2_vs_data_parallel", "P=1,R=2 vs data parallel")),
    details=details, order=5)

if __name__ == "__main__":
  harness.main(BENCHMARK)
