"""The shared tables (`Study.table`: (a study's records, {machine: records}) -> (markdown, [sentences])) and every
table's number formats (`fmt`, `md_table`). † marks oversubscription (more logical devices than cores), ‡ noise."""

import types
from typing import List, Mapping, Optional, Sequence, Tuple

from data_parallel import config as dp_config
from experiments import perf_model, presets, records
from experiments.render import series

Others = Mapping[str, records.StudyRecords]
# The `others` of a table drawn from another folder's records alone (`readme.study_section`): empty, and telling a
# table that lists its study's declared runs to leave out those the folder has no record of.
APART: Others = types.MappingProxyType({})
Table = Tuple[str, List[str]]
PHASES = dp_config.PROFILE_PHASES
SINGLE = "Single runs."
DAGGER = "† more logical devices than cores the process could use (oversubscribed)."
NOISY = (f"‡ repeats more than {records.NOISE:.0%} apart (max / min − 1 of a configuration's pretraining seconds): "
         "shown with its spread, never in the headline.")


def fmt(x, kind: str = "s") -> str:
  """A value as every table shows it, "—" for None: seconds ("s": 3 significant digits below 100, whole above), a
  ratio ("×": "1.31×"), an accuracy ("acc": 4 decimals) or a spread ("spread": "median (min–max)", 2 decimals)."""
  if x is None:
    return "—"
  if kind == "spread":
    return f"{x['median']:.2f} ({x['min']:.2f}–{x['max']:.2f})"
  return f"{x:.2f}×" if kind == "×" else f"{x:.4f}" if kind == "acc" else f"{x:.3g}" if x < 100 else f"{x:.0f}"


def md_table(header: Sequence[str], rows: Sequence[Sequence]) -> str:
  """A markdown table."""
  return "\n".join(["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
                   + ["| " + " | ".join(str(c) for c in row) + " |" for row in rows])


def judged_error(x: Optional[float]) -> str:
  """A relative error against the goal, e.g. "12.3% (within the 15% goal)"; "none" for None."""
  return "none" if x is None else (
      f"{x:.1%} ({'within' if x <= series.MODEL_ERROR_GOAL else 'outside'} the {series.MODEL_ERROR_GOAL:.0%} goal)")


def _seconds(r: Optional[dict]) -> str:
  return fmt(r["pretrain_seconds"]) + (" †" if records.oversubscribed(r) else "") if r else "—"


def cores_note(data: records.StudyRecords, others: Others) -> str:
  """What the records show beyond the core count, on this machine and the others."""
  if not any(records.oversubscribed(r) for r in data.runs.values()):
    return ""
  n, faster = series.cores(data), series.oversubscribed_faster(data)
  cases = "; ".join(f"{h} layers on {g} devices {fmt(s)} s vs {fmt(b)} s on {gb}" for h, g, s, gb, b in faster)
  text = (f"This machine has {n} cores: more devices than that run as logical devices sharing the cores "
          "(oversubscribed, †), so they add no compute; " + (
              f"still, some oversubscribed runs were faster than the fastest run on at most {n} devices ({cases})."
              if faster else f"none was faster than the fastest run on at most {n} devices."))
  for machine, other in others.items():
    ends = [f"{h} layers {fmt(records.ratio(g[1], g[max(g)]), '×')} on {max(g)} devices"
            for h, g in series.stacks(other).items() if 1 in g and max(g) > 1]
    text += (f" On the {max(records.host_cores(r) for r in other.runs.values())}-core machine (`{machine}/`; "
             f"{records.machine_label(list(other.runs.values()))}), where every device has its own core, the "
             f"speedup over 1 device reached: {', '.join(ends)} (single runs).")
  return text


def scaling(data: records.StudyRecords, others: Others) -> Table:
  """Seconds and speedup per (machine, layers, devices), ours beside the report's and the model's."""
  reported_here, rows = data.declared.reported, []  # {layers: {devices: seconds}}, or the report's words
  report = reported_here if isinstance(reported_here, dict) else {}
  for machine, d in [("", data)] + list(others.items()):
    model, _ = perf_model.calibrated(d.runs)
    predicted = {(len(p.hidden_units), p.devices): p for p in (perf_model.predictions(model, d.runs) if model else [])}
    for h, by_g in series.stacks(d).items():
      rep = {} if machine else report.get(h, {})  # The report's numbers once, beside this machine's.
      for g in sorted(set(by_g) | set(rep)):
        r, p = by_g.get(g), predicted.get((h, g))
        rows.append([records.machine_label([r]) if r else "—", h, g, _seconds(r),
                     fmt(records.ratio(by_g[1], r) if r and 1 in by_g else None, "×"),
                     f"{fmt(p.predicted)} ({p.relative_error:+.0%}{', fit' if p.in_calibration else ''})"
                     if p else "—", fmt(rep.get(g)), fmt(rep[1] / rep[g] if g in rep else None, "×")])
  model, _ = perf_model.calibrated(data.runs)
  dp = [f"The report calls its speedup {reported_here}.",
        f"Ours: {series.batch_label(list(data.runs.values()))}; {presets.REPORT_DP_BATCH_NOTE}."]
  sentences = (dp if isinstance(reported_here, str) else []) + ["Each point is a single run."]  # data parallel's
  if model is not None and model.slowdown > 1.0:
    sentences.append(f"The performance model's slowdown of devices side by side, rho = {model.slowdown:.2f}, is fitted "
                     f"to the 2-device runs' times (not measured); with it 2 devices can give at most "
                     f"{2 / model.slowdown:.2f}× here.")
  return md_table(["machine", "layers", "devices", "ours s", "ours speedup", "model s (error)", "report s",
                   "report speedup"], rows), sentences + [cores_note(data, others)]
def accuracy_goal(dataset: str) -> str:
  """"goal ≥ 0.89; published: MLP 256-128-100 0.8833, ..." for a dataset of `ACCURACY_GOALS`, else "—"."""
  published = ", ".join(f"{m} {a}" for m, a in presets.PUBLISHED_BASELINES.get(dataset, {}).items())
  goal = presets.ACCURACY_GOALS.get(dataset)
  return f"goal ≥ {goal}; published: {published}" if goal else "—"


# The tables setting other folders' records beside this machine's (others get a table each: `readme.study_section`).
WITH_OTHERS = (scaling,)
