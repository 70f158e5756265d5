"""pp_scaling (beyond the report): pipeline_parallel's pretraining seconds and speedup vs devices, per stack,
beside the pipeline performance model (`perf_model.Pipeline`, fitted on each stack's one-device run)."""

from typing import Dict, List, Tuple

from experiments import perf_model
from experiments import records
from experiments.report import scaling
from experiments.report import series
from experiments.report import style


def _stacks(data: records.EntryData) -> Dict[str, Dict[int, dict]]:
  """{"4 x 1000": {devices: record}}, stacks in the order of their runs."""
  out: Dict[str, Dict[int, dict]] = {}
  for r in data.runs.values():
    h = r["config"]["hidden_units"]
    out.setdefault(f"{len(h)} x {h[0]}", {})[records.devices(r)] = r
  return {k: dict(sorted(v.items())) for k, v in out.items()}


def rows(data: records.EntryData) -> List[dict]:
  """Per run: stack, devices, measured and predicted seconds, speedup over one device, stages, cores busy,
  whether the model was fitted on it (in-sample) and whether it is oversubscribed."""
  out = []
  for stack, by_g in _stacks(data).items():
    try:  # a stack's model and its runs from one machine and one code only
      model = perf_model.Pipeline.calibrate({str(g): r for g, r in by_g.items()}) if records.same_source(
          list(by_g.values())) else None
    except ValueError:
      model = None
    one = by_g.get(1)
    for g, r in by_g.items():
      out.append({"stack": stack, "devices": g, "seconds": series.seconds(r),
                  "predicted": model.predict(r["config"], g) if model else None,
                  "speedup": records.ratio(one, r) if one else None,
                  "stages": len((r.get("pipeline") or {}).get("stages", [])) or min(g, len(r["config"]["hidden_units"])),
                  "cores_busy": (r["pretrain_cpu_seconds"] / r["pretrain_seconds"]
                                 if "pretrain_cpu_seconds" in r else None),
                  "in_sample": g == 1, "oversubscribed": records.oversubscribed(r)})
  return out


def draw(data: records.EntryData, others=None):
  """Seconds vs devices (left, model dashed) and speedup over one device (right), one line per stack."""
  fig, (left, right) = style.figure(2)
  table = rows(data)
  max_g = max(row["devices"] for row in table)
  for i, stack in enumerate(dict.fromkeys(row["stack"] for row in table)):
    mine = [row for row in table if row["stack"] == stack]
    gs = [row["devices"] for row in mine]
    over = [row["oversubscribed"] for row in mine]
    style.points(left, gs, [row["seconds"] for row in mine], over, style.COLORS[i], f"{stack} units")
    if all(row["predicted"] is not None for row in mine):
      left.plot(gs, [row["predicted"] for row in mine], "--", color=style.COLORS[i], alpha=0.5, linewidth=1)
    if all(row["speedup"] is not None for row in mine):
      style.points(right, gs, [row["speedup"] for row in mine], over, style.COLORS[i], f"{stack} units")
  left.plot([], [], "--", color="0.5", linewidth=1, label="performance model (FLOP rate fit on G = 1)")
  cores = min(records.cores(r) for r in data.runs.values())
  for ax in (left, right):
    scaling.shade_oversubscribed(ax, cores, max_g)
  left.set_ylabel("pretraining seconds (steady state)")
  left.set_ylim(bottom=0)
  left.legend(fontsize=7)
  right.plot([1, max_g], [1, max_g], ":", color="0.7", label="linear speedup")
  right.set_ylabel("speedup over 1 device (single runs)")
  right.legend(fontsize=7, loc="upper left")
  style.finish(fig, data, "pipeline_parallel is not in the report; model: critical path of the ticks and the "
                          "cores, at the one-device FLOP rate")
  return fig


def table(data: records.EntryData, others) -> Tuple[str, List[str]]:
  """Seconds, speedup, model prediction and its error, stages and cores busy per stack and device count."""
  table_rows, errors = [], {True: [], False: []}
  for row in rows(data):
    error = (row["predicted"] - row["seconds"]) / row["seconds"] if row["predicted"] is not None else None
    if error is not None and not row["oversubscribed"]:
      errors[row["in_sample"]].append(abs(error))
    table_rows.append([row["stack"], f"{row['devices']}{' †' if row['oversubscribed'] else ''}", row["stages"],
                       style.fmt_seconds(row["seconds"]), style.fmt_ratio(row["speedup"]),
                       style.fmt_seconds(row["predicted"]),
                       "—" if error is None else f"{100 * error:+.0f}%" + (" (fit)" if row["in_sample"] else ""),
                       "—" if row["cores_busy"] is None else f"{row['cores_busy']:.2f}"])
  sentences = ["Single runs. Cores busy = process CPU seconds / wall seconds while pretraining."]
  if errors[False]:
    sentences.append(f"Model error on the points not used for the fit, up to the core count: largest "
                     f"{100 * max(errors[False]):.0f}% (the model has no co-run slowdown).")
  sentences.append(style.DAGGER)
  return style.md_table(["stack", "devices", "stages", "seconds", "speedup vs 1 device", "model s", "model error",
                         "cores busy"], table_rows), sentences
