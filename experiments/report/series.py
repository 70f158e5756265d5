"""What the figures and tables show, computed from the run records (`records.EntryData`) alone: series,
points, speedups, the calibrated performance model, accuracies, and the large-batch study's choice."""

from typing import Dict, List, Optional, Tuple

from common import programs
from data_parallel import config as dp_config
from experiments import perf_model
from experiments import presets
from experiments import records
from experiments import reported

# dp_accuracy's acceptance rule: data parallel at the large batch reaches at least greedy - this.
DP_TOLERANCE = 0.005
# convergence: the fixed loss of layer k is greedy's final loss of layer k times (1 + this).
LOSS_TOLERANCE = 0.01
PHASES = dp_config.PROFILE_PHASES
GREEDY, DP = programs.GREEDY, programs.DATA_PARALLEL


def strategy(record: dict) -> str:
  """The program that wrote a record, e.g. "model_parallel"."""
  return record.get("strategy") or record["config"]["strategy"]


def seconds(record: dict) -> float:
  """Steady-state pretraining seconds."""
  return record["pretrain_seconds"]


# ---- scaling entries -------------------------------------------------------------------------------

def stacks(data: records.EntryData) -> Dict[int, Dict[int, dict]]:
  """{hidden layers: {devices: record}} of a scaling entry (data parallel: one stack), sorted."""
  out: Dict[int, Dict[int, dict]] = {}
  for r in data.runs.values():
    out.setdefault(len(r["config"]["hidden_units"]), {})[records.devices(r)] = r
  return {h: dict(sorted(out[h].items())) for h in sorted(out)}


def model_for(data: records.EntryData) -> Tuple[Optional[object], str]:
  """The performance model of the entry's program calibrated on its own G <= 2 runs, or (None, why not)."""
  return perf_model.calibrated(data.runs)


def model_predictions(data: records.EntryData) -> List[perf_model.Prediction]:
  """The performance model's prediction at every measured run of the entry ([] without a model)."""
  model, _ = model_for(data)
  return perf_model.predictions(model, data.runs) if model else []


def max_error(predictions: List[perf_model.Prediction], in_calibration: bool,
              oversubscribed: Optional[bool] = None) -> Optional[float]:
  """The largest |relative error| over the fit points (in_calibration) or the predicted ones, optionally
  only over oversubscribed (True) or not oversubscribed (False) points; None when there is none."""
  errors = [abs(p.relative_error) for p in predictions if p.in_calibration == in_calibration
            and (oversubscribed is None or p.oversubscribed == oversubscribed)]
  return max(errors) if errors else None


def oversubscribed_faster(data: records.EntryData) -> List[Tuple[int, int, float, int, float]]:
  """Where more devices than cores were faster than every run with at most as many devices as cores:
  [(layers, devices, seconds, best devices <= cores, its seconds)]."""
  out = []
  for h, by_g in stacks(data).items():
    fair = {g: r for g, r in by_g.items() if not records.oversubscribed(r)}
    if not fair:
      continue
    best = min(fair, key=lambda g: seconds(fair[g]))
    out += [(h, g, seconds(r), best, seconds(fair[best])) for g, r in by_g.items()
            if records.oversubscribed(r) and (records.ratio(fair[best], r) or 0) > 1]
  return out


def batch_label(rs: List[dict]) -> str:
  """The batch of data-parallel records as run: "global batch 5000 (2500 per device on 2)", several
  joined by "; "; model-parallel and greedy records: "batch 100" (every layer sees the whole batch)."""
  labels = []
  for r in sorted(rs, key=lambda r: (records.devices(r), r["config"]["batch_size"])):
    b, g = r["config"]["batch_size"], records.devices(r)
    if strategy(r) == DP.name:
      label = f"global batch {b} ({b // g} per device on {g})" if g > 1 else f"global batch {b} (1 device)"
    else:
      label = f"batch {b}"
    if label not in labels:
      labels.append(label)
  return "; ".join(labels)


# ---- data-parallel entries -------------------------------------------------------------------------

def sweep_points(data: records.EntryData) -> List[Tuple[int, float, float, bool]]:
  """[(global batch, median seconds per epoch, examples per second, oversubscribed)] sorted by batch."""
  out = []
  for r in data.runs.values():
    batch = r["config"]["batch_size"]
    s = records.median_epoch_seconds(r)
    processed = (r["config"]["train_examples"] // batch) * batch
    out.append((batch, s, processed / s, records.oversubscribed(r)))
  return sorted(out)


def profile_rows(data: records.EntryData) -> Dict[int, Tuple[Dict[str, float], bool]]:
  """{devices: ({phase: seconds per epoch}, oversubscribed)} from the records' op profiles."""
  out = {}
  for r in data.runs.values():
    phases = (r.get("profile") or {}).get("seconds_per_epoch")
    if phases:
      out[records.devices(r)] = ({p: float(phases.get(p, 0.0)) for p in PHASES}, records.oversubscribed(r))
  return dict(sorted(out.items()))


def mp_vs_dp_groups(data: records.EntryData) -> List[Tuple[str, Dict[str, dict]]]:
  """[(group label "E epochs - Config n", {program: record})] in the report's order."""
  groups: Dict[Tuple[int, str], Dict[str, dict]] = {}
  for name, r in data.runs.items():
    config, epochs, _ = name.split("_")
    groups.setdefault((int(epochs[1:]), config), {})[strategy(r)] = r
  return [(f"{e} epochs - Config {c[1]}", groups[(e, c)]) for e, c in sorted(groups)]


# ---- accuracy entries ------------------------------------------------------------------------------

def presets_shown(data: records.EntryData) -> List[str]:
  """The entry's preset first, then every other preset with records."""
  return [data.preset] + [p for p in presets.PRESETS if p in data.other]


def runs_of(data: records.EntryData, preset: str) -> Dict[str, dict]:
  """{run name: record} of one preset present in `data`."""
  return data.runs if preset == data.preset else data.other[preset]


def epoch_settings(preset: str, entry: str = "accuracy_vs_epochs") -> List[int]:
  """The pretraining epoch counts an accuracy entry runs at `preset`."""
  return sorted({r.flag("pretrain_epochs") for r in presets.build(preset)[entry].runs})


def accuracy_series(data: records.EntryData, preset: str) -> Dict[str, List[Tuple[int, float]]]:
  """{program: [(epochs, test accuracy)]} of one preset's records."""
  out: Dict[str, List[Tuple[int, float]]] = {}
  for r in runs_of(data, preset).values():
    if records.test_accuracy(r) is not None:
      out.setdefault(strategy(r), []).append((r["config"]["pretrain_epochs"], records.test_accuracy(r)))
  return {k: sorted(v) for k, v in out.items()}


def heldout_vs_greedy(data: records.EntryData, preset: str) -> Dict[Tuple[str, int], List[float]]:
  """{(program, epochs): per layer, its held-out reconstruction loss at the end of pretraining / greedy's at the
  same epochs} for every non-greedy record of `preset` that has one (records older than it are left out)."""
  runs = runs_of(data, preset)
  greedy = {r["config"]["pretrain_epochs"]: r for r in runs.values() if strategy(r) == GREEDY.name}
  out = {}
  for r in runs.values():
    e = r["config"]["pretrain_epochs"]
    if strategy(r) == GREEDY.name or e not in greedy:
      continue
    ours, base = r.get("heldout_reconstruction"), greedy[e].get("heldout_reconstruction")
    if ours and base:
      out[(strategy(r), e)] = [a["loss"] / b["loss"] for a, b in zip(ours, base)]
  return out


def dp_accuracy_rows(data: records.EntryData, preset: str) -> List[Dict[str, Optional[float]]]:
  """Per epoch setting: {"epochs", "report_recipe", "large_batch", "baseline" (greedy), "report"} test accuracies
  (None where the record is missing; "report" is the report's value at the matching paper setting)."""
  runs = runs_of(data, preset)
  rows = []
  paper_epochs = epoch_settings("paper", "dp_accuracy")
  for i, e in enumerate(epoch_settings(preset, "dp_accuracy")):
    def acc(name):
      return records.test_accuracy(runs[name]) if name in runs else None
    rows.append({"epochs": e, "report_recipe": acc(f"dp_e{e}_report"), "large_batch": acc(f"dp_e{e}_large_batch"),
                 "baseline": acc(f"{GREEDY.run_name}_e{e}"),
                 "report": reported.DP_ACCURACY.get(paper_epochs[i]) if i < len(paper_epochs) else None})
  return rows


def large_batch_choice(data: records.EntryData) -> Tuple[List[dict], Optional[str]]:
  """The large-batch study: per run {"run", "program", "batch", "validation", "test", "losses"} and the
  chosen data-parallel candidate, the one with the highest validation accuracy (test plays no part)."""
  rows = []
  for name, r in data.runs.items():
    fine = r.get("finetune") or {}
    rows.append({"run": name, "record": r, "program": strategy(r), "batch": r["config"]["batch_size"],
                 "validation": fine.get("validation_accuracy"), "test": fine.get("test_accuracy"),
                 "losses": [layer["epochs"][-1]["loss"] for layer in r["layers"]]})
  candidates = [row for row in rows if row["program"] == DP.name and row["validation"] is not None]
  chosen = max(candidates, key=lambda row: row["validation"])["run"] if candidates else None
  return rows, chosen


# ---- strategy comparison and convergence -----------------------------------------------------------

def strategy_records(data: records.EntryData) -> Dict[str, dict]:
  """{run name: record} of strategy_comparison / convergence, in the order of `presets.COMPARED`."""
  return {p.run_name: data.runs[p.run_name] for p in presets.COMPARED if p.run_name in data.runs}


def convergence_key(rs: Dict[str, dict]) -> str:
  """The loss the convergence entry compares: "heldout_loss" (held-out reconstruction, the same test images
  and masks for every program) when every record has it after every epoch, else the training "loss"."""
  return "heldout_loss" if rs and all(records.has_heldout_curves(r) for r in rs.values()) else "loss"


def convergence_targets(rs: Dict[str, dict]) -> Optional[List[float]]:
  """The fixed loss of each layer: greedy's final loss of that layer x (1 + LOSS_TOLERANCE)."""
  if GREEDY.run_name not in rs:
    return None
  key = convergence_key(rs)
  return [layer["epochs"][-1][key] * (1 + LOSS_TOLERANCE) for layer in rs[GREEDY.run_name]["layers"]]


def layer_times_to_target(data: records.EntryData) -> Dict[str, List[Optional[float]]]:
  """{run name: per layer, the seconds at which it first reached its fixed loss (None: never)}."""
  rs = strategy_records(data)
  targets = convergence_targets(rs)
  key = convergence_key(rs)
  return {s: records.time_to_loss_per_layer(records.loss_curves(r, key), targets) for s, r in rs.items()
          } if targets else {}


def times_to_target(data: records.EntryData) -> Dict[str, Optional[float]]:
  """{run name: seconds until every layer reached its fixed loss (None: never)}."""
  return {s: None if None in t else max(t, default=0.0) for s, t in layer_times_to_target(data).items()}
