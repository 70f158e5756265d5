"""Benchmark: pipeline_parallel with replicated stages (P stages x R replicas, `--replicas_per_stage=R`) against
data_parallel, side by side, with the performance model's predictions for every P x R asked for.

Every (P, R) of --stages x --replicas whose P R devices fit the cores this process may use (and P <= layers) runs
as `pipeline_parallel --num_devices=P*R --replicas_per_stage=R`, with data_parallel on --num_devices replicas,
1 thread per device, pretraining only, alternated repeat after repeat (`harness`). On a 2-core machine that is
(1, 1), (1, 2) and (2, 1); with 16 cores the same command measures P in {1, 2, 4} x R in {1, 2, 4}. Measures:
  * every configuration's seconds and its speedup over the one-device pipeline (P = R = 1) in the same repeat;
  * P = 1, R = 2 against P = 2, R = 1 and against data_parallel (the same repeat);
  * the performance model (`perf_model.Pipeline`, fitted on the one-device run) for EVERY P x R of the lists,
    measured or not, marked as predictions where nothing was measured.

Usage (timings are committed: run alone on the machine):
  python -m experiments.benchmarks.hybrid
"""

from typing import Dict, List, Tuple

from common import programs
from common import provenance
from experiments import perf_model
from experiments.benchmarks import harness

DP = programs.DATA_PARALLEL.run_name


def _name(stages: int, replicas: int) -> str:
  return f"p{stages}_r{replicas}"


def points(s: harness.Setting) -> List[Tuple[int, int]]:
  """Every (P, R) asked for with P <= the stack's layers."""
  return [(p, r) for p in map(int, s.options["stages"]) for r in map(int, s.options["replicas"])
          if p <= len(s.hidden_units)]


def measured(s: harness.Setting) -> List[Tuple[int, int]]:
  """The points whose devices fit the cores this process may use; (1, 1) always."""
  cores = provenance.usable_cores()
  return [pr for pr in points(s) if pr[0] * pr[1] <= cores or pr == (1, 1)]


def configurations(s: harness.Setting) -> List:
  """pipeline_parallel at every measured (P, R), and data_parallel on --num_devices replicas."""
  return [s.run(_name(p, r), programs.PIPELINE_PARALLEL, p * r, extra=(f"--replicas_per_stage={r}",))
          for p, r in measured(s)] + [s.run(DP, programs.DATA_PARALLEL, s.num_devices, extra=("--profile_steps=0",))]


def summarize(s: harness.Setting, found: harness.Records) -> Dict:
  """Speedups over the one-device pipeline, the two-device comparison, and the model at every (P, R)."""
  base = _name(1, 1)
  out = {"speedup_vs_one_device": {n: harness.ratio_spread(found, base, n) for n in found if n != base}}
  if _name(1, 2) in found and _name(2, 1) in found:
    out["p1_r2_vs_p2_r1"] = harness.ratio_spread(found, _name(2, 1), _name(1, 2))
    out["p1_r2_vs_data_parallel"] = harness.ratio_spread(found, DP, _name(1, 2))
  model = perf_model.Pipeline.calibrate({base: found[base][0]})
  config = found[base][0]["config"]
  out["model"] = {"describe": model.describe(), "predictions": [
      {"stages": p, "replicas": r, "devices": p * r, "measured": _name(p, r) in found,
       "predicted_seconds": model.predict(dict(config, replicas_per_stage=r), p * r)} for p, r in points(s)]}
  return out


def details(summary: Dict):
  """The README table: every (P, R), measured where the cores allowed, and the model's prediction."""
  measured = summary["pretrain_seconds"]
  return (f"performance model ({summary['model']['describe']}; fitted on the one-device pipeline, no all-reduce "
          "cost): a prediction at every P × R, a measurement only where the devices fit this machine's cores",
          ["stages P", "replicas R", "devices", "measured s", "predicted s (a prediction)"],
          [[m["stages"], m["replicas"], m["devices"], measured[_name(m["stages"], m["replicas"])] if m["measured"]
            else "not measured", m["predicted_seconds"]] for m in summary["model"]["predictions"]])


BENCHMARK = harness.Benchmark(
    name="hybrid", configurations=configurations, summarize=summarize,
    defaults={"hidden_units": "1000,1000,1000,1000", "batch_size": 1000, "pretrain_epochs": 2,
              "train_examples": 22_000, "num_devices": 2, "repeats": 3},
    options={"stages": (["1", "2", "4"], "Stage counts P."), "replicas": (["1", "2", "4"], "Replicas per stage R.")},
    columns=(("p1_r2_vs_p2_r1", "P=1,R=2 vs P=2,R=1"), ("p1_r2_vs_data_parallel", "P=1,R=2 vs data parallel")),
    details=details)

if __name__ == "__main__":
  harness.main(BENCHMARK)
