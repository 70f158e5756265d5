"""Pipeline parallel (beyond the report): pretraining time against devices, with its performance model."""

from typing import Dict, List

from experiments import perf_model, records
from experiments.presets import Study, PP, Run, spec
from experiments.render import series
from experiments.render.figures import COLORS, devices_axes, finish, new, points
from experiments.render.tables import DAGGER, Others, Table, fmt, md_table


def pipeline_rows(data: records.StudyRecords) -> List[dict]:
  """pp_scaling per run: "stack", "devices", "seconds", "predicted" (`perf_model.Pipeline` fitted per stack on its
  one-device run), "speedup", "stages", "cores_busy", "in_sample", "oversubscribed"."""
  by_stack: Dict[str, Dict[int, dict]] = {}
  for r in data.runs.values():
    h = r["config"]["hidden_units"]
    by_stack.setdefault(f"{len(h)} x {h[0]}", {})[records.devices(r)] = r
  out = []
  for stack, by_g in by_stack.items():
    by_g = dict(sorted(by_g.items()))
    model, _ = perf_model.calibrated({str(g): r for g, r in by_g.items()})  # None unless one machine and code
    out += [{"stack": stack, "devices": g, "seconds": r["pretrain_seconds"],
             "predicted": model.predict(r["config"], g) if model else None,
             "speedup": records.ratio(by_g[1], r) if 1 in by_g else None,
             "stages": len((r.get("pipeline") or {}).get("stages", [])) or min(g, len(r["config"]["hidden_units"])),
             "cores_busy": r["pretrain_cpu_seconds"] / r["pretrain_seconds"] if "pretrain_cpu_seconds" in r else None,
             "in_sample": g == 1, "oversubscribed": records.oversubscribed(r)} for g, r in by_g.items()]
  return out


def _pp_scaling(s) -> List[Run]:
  return [spec(f"h{len(h)}x{h[0]}_g{g}", PP, h, s["epochs"], s["batch"], g, s["examples"])
          for h in s["stacks"] for g in range(1, len(h) + 1)]


def table(data: records.StudyRecords, others: Others) -> Table:
  """Seconds, speedup, the pipeline model's prediction and its error, stages and cores busy per stack and devices."""
  found = [(row, None if row["predicted"] is None else (row["predicted"] - row["seconds"]) / row["seconds"])
           for row in pipeline_rows(data)]  # (row, the model's relative error)
  errors = [abs(e) for row, e in found if e is not None and not row["oversubscribed"] and not row["in_sample"]]
  rows = [[row["stack"], f"{row['devices']}{' †' if row['oversubscribed'] else ''}", row["stages"], fmt(row["seconds"]),
           fmt(row["speedup"], "×"), fmt(row["predicted"]),
           "—" if error is None else f"{100 * error:+.0f}%" + (" (fit)" if row["in_sample"] else ""),
           "—" if row["cores_busy"] is None else f"{row['cores_busy']:.2f}"] for row, error in found]
  return md_table(["stack", "devices", "stages", "seconds", "speedup vs 1 device", "model s", "model error",
                   "cores busy"], rows), [
      "Single runs. Cores busy = process CPU seconds / wall seconds while pretraining.",
      f"Model error on the points not used for the fit, up to the core count: largest {100 * max(errors):.0f}% (the "
      "model has no co-run slowdown)." if errors else "", DAGGER]


def figure(data: records.StudyRecords, others=None):
  """Seconds vs devices (left, model dashed) and speedup over one device (right), one line per stack."""
  fig, (left, right) = new(2)
  rows = pipeline_rows(data)
  for i, stack in enumerate(dict.fromkeys(row["stack"] for row in rows)):
    mine = [row for row in rows if row["stack"] == stack]
    gs, over = [row["devices"] for row in mine], [row["oversubscribed"] for row in mine]
    points(left, gs, [row["seconds"] for row in mine], over, COLORS[i], f"{stack} units")
    if all(row["predicted"] is not None for row in mine):
      left.plot(gs, [row["predicted"] for row in mine], "--", color=COLORS[i], alpha=0.5, linewidth=1)
    if all(row["speedup"] is not None for row in mine):
      points(right, gs, [row["speedup"] for row in mine], over, COLORS[i], f"{stack} units")
  left.plot([], [], "--", color="0.5", linewidth=1, label="performance model (FLOP rate fit on G = 1)")
  devices_axes(left, right, series.cores(data), max(row["devices"] for row in rows))
  finish(fig, data, "pipeline_parallel is not in the report; model: critical path of the ticks and the cores, at "
                    "the one-device FLOP rate")
  return fig


STUDIES = (Study("pp_scaling", "Pipeline parallel (beyond the report): pretraining time vs devices", dict(
    paper=dict(examples=55_000, epochs=30, batch=100, stacks=((2000,) * 4, (1000,) * 8)),
    cpu=dict(examples=11_000, epochs=2, batch=100, stacks=((1000,) * 4, (500,) * 8)),
    smoke=dict(examples=400, epochs=2, batch=40, stacks=((32, 32),))), _pp_scaling, table, figure,
    kind="beyond", order=11),)
