"""Benchmark: where finetuning runs fastest (`--finetune_placement`, `common.training.finetune`). pipeline_parallel
(finetuning is every program's same code; its weights do not depend on its devices) pretrains briefly and finetunes,
in each precision of --precisions:
  one_core    one device, one thread: the baseline;
  replicas    --num_devices one-thread devices, a MirroredStrategy splitting every batch;
  one_device  one device with --num_devices threads (every core's thread in one device);
  pipelined   --num_devices one-thread devices, the classifier's layers in stages, micro-batches (GPipe).
Measures per precision each placement's finetuning seconds, one_core's / its (same repeat), the fastest (`choice`:
common/training/finetune.py DEFAULT_PLACEMENT, --finetune_placement=auto). Alternated; timings committed: run alone.
  python -m experiments.benchmarks.finetune"""

import statistics
from typing import Dict, List, Tuple

from common.settings import programs
from experiments import harness, presets

PLACEMENTS = ("replicas", "one_device", "pipelined")


def _variants(s: harness.Setting) -> List[Tuple[str, str, str]]:
  """(key, precision, finetuning kernel path) of each precision and --finetune_kernels path; the key is the
  precision alone when only the default path (auto) runs."""
  paths = list(s.options.get("finetune_kernels", ["auto"]))
  return [(precision if paths == ["auto"] else f"{precision}_{k}", precision, k)
          for precision in s.options["precisions"] for k in paths]


def _placements(s: harness.Setting) -> List[str]:
  """The placements of --placements (default every one), in `PLACEMENTS`' order; ValueError: an unknown one."""
  chosen = list(s.options.get("placements", PLACEMENTS))
  if set(chosen) - set(PLACEMENTS):
    raise ValueError(f"--placements={','.join(chosen)}: choose among {', '.join(PLACEMENTS)}")
  return [p for p in PLACEMENTS if p in chosen]


def sets_the_default(summary: Dict) -> bool:
  """Whether a summary's choice is a class's default placement (common/settings/processor_defaults.py): every
  placement compared, on the default kernel path (auto) alone, at batch 100."""
  setting = summary["setting"]
  return ("placements" in summary and setting["batch_size"] == 100
          and list(setting.get("placements", PLACEMENTS)) == list(PLACEMENTS)
          and list(setting.get("finetune_kernels", ["auto"])) == ["auto"])


def configurations(s: harness.Setting) -> List:
  """Finetuning --finetune_epochs epochs on one core and in each placement, in each precision (and kernel path)."""
  out, g = [], s.num_devices
  for key, precision, kernels in _variants(s):
    own = {"finetune_epochs": s.options["finetune_epochs"], "precision": precision,
           **({"finetune_kernels": kernels} if kernels != "auto" else {})}
    out.append(s.spec(f"one_core_{key}", programs.PIPELINE_PARALLEL, 1, own))
    for placement in _placements(s):
      shared = placement == "one_device"
      out.append(s.spec(f"{placement}_{key}", programs.PIPELINE_PARALLEL, 1 if shared else g,
                        threads=g if shared else 1, settings={**own, "finetune_placement": placement}))
  return out


def summarize(s: harness.Setting, found: harness.Records) -> Dict:
  """Per precision (and kernel path): finetuning seconds and speedup over one core (of the same path) of each
  placement, and the fastest one."""
  out = {"placements": {}}
  for key, _, _ in _variants(s):
    base = found[f"one_core_{key}"]
    mine = {p: {"seconds": harness.spread([r["finetune"]["seconds"] for r in found[f"{p}_{key}"]]),
                "speedup_vs_one_core": harness.spread([a["finetune"]["seconds"] / b["finetune"]["seconds"]
                                                       for a, b in zip(base, found[f"{p}_{key}"])]),
                "ran_as": found[f"{p}_{key}"][0]["finetune"].get("placement")} for p in _placements(s)}
    choice = max(mine, key=lambda p: statistics.median(mine[p]["speedup_vs_one_core"]["values"]))
    out["placements"][key] = dict(mine, choice=choice, one_core_seconds=harness.spread(
        [r["finetune"]["seconds"] for r in base]))
    out[f"finetune_speedup_{key}"] = mine[choice]["speedup_vs_one_core"]
  return out


def details(summary: Dict):
  """The README table: per precision and placement, the speedup over one core (older summaries: replicas only)."""
  if "placements" not in summary:
    return "earlier code: finetuning on 1 device / on G devices as replicas (same repeat)", [
        "precision", "placement", "speedup over one device", "default"], [
        [key.rsplit("_", 1)[-1] if "bfloat16" not in key else "mixed_bfloat16", "replicas", value, ""]
        for key, value in summary.items() if key.startswith("finetune_speedup_")]
  paths = any(key not in programs.PRECISIONS for key in summary["placements"])  # several --finetune_kernels
  return ("finetuning seconds on one core / in each placement (same repeat)" + (
      "; per precision and kernel path, each against its own one core: a comparison, not the default" if paths else
      "; the fastest is the default"), ["precision" + (" and kernel path" if paths else ""), "placement",
                                         "finetuning seconds, median: one core → placement", "speedup over one core",
                                         "fastest" if paths else "default"], [
      [key, p, f"{m['one_core_seconds']['median']:.2f} → {m[p]['seconds']['median']:.2f}", m[p]["speedup_vs_one_core"],
       "yes" if m["choice"] == p else ""]
      for key, m in summary["placements"].items() for p in PLACEMENTS if p in m])


BENCHMARK = presets.Benchmark(
    name="finetune", runs=configurations, summarize=summarize, details=details,
    folder=lambda s: f"b{s.batch_size}_{harness.machine_class()}" + (
        "" if list(s.options.get("finetune_kernels", ["auto"])) == ["auto"] else "_kernels"),
    defaults={"hidden_units": "2000,2000,2000,2000", "batch_size": 100, "pretrain_epochs": 1, "train_examples": 11_000},
    options={"finetune_epochs": (2, "Finetuning epochs of every run."),
             "precisions": ([programs.PRECISIONS[0]], "Precisions to compare the placements in."),
             "placements": (list(PLACEMENTS), "Placements to compare (a subset of the default: no choice is made "
                                              "for the defaults table from it)."),
             "finetune_kernels": (["auto"], "Kernel paths (--finetune_kernels) to compare the placements on; other "
                                            "than auto alone, the records sit in a folder of their own.")},
    columns=tuple((f"finetune_speedup_{p}", f"finetuning, fastest placement / one core, {p}")
                  for p in programs.PRECISIONS), order=9)

if __name__ == "__main__":
  harness.main(BENCHMARK)
