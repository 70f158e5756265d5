"""Mixed precision (beyond the report): bfloat16 beside float32, accuracy and reconstruction."""

from typing import List

from common.settings import programs
from experiments import records
from experiments.presets import BY_PRECISION, CONFIG_1, Study, GREEDY, PP, Run, spec
from experiments.render import series
from experiments.render.tables import Others, Table, fmt, md_table


def _precision(s) -> List[Run]:  # float32's runs are accuracy_vs_epochs' at its most epochs
  e = s["epochs"]
  return [spec(f"{p.run_name}_e{e}{suffix}", p, s["hidden"], e, s["batch"], s["devices"], s["examples"], e,
               settings=settings, resumable=True) for p in (GREEDY, PP) for suffix, settings in BY_PRECISION]


def table(data: records.StudyRecords, others: Others) -> Table:
  """Per program and precision: test accuracy, held-out reconstruction per layer, bfloat16's relative to float32's."""
  rows, f32 = [], programs.PRECISIONS[0]
  for preset, runs in series.by_preset(data).items():
    by = {(series.program_of(r), r["config"].get("precision", f32)): r for r in runs.values()}
    for (program, precision), r in sorted(by.items()):
      held, base = [h["loss"] for h in r["heldout_reconstruction"]], by.get((program, f32))
      base = base if base is not None and records.same_source([base, r]) else None  # within one machine only
      gaps = [a / b["loss"] - 1 for a, b in zip(held, base["heldout_reconstruction"])] if base and base is not r else []
      acc, base_acc = records.accuracy(r), records.accuracy(base) if base else None
      rows.append([preset, series.program_name(program), precision, fmt(acc, "acc"),
                   " / ".join(f"{x:.2f}" for x in held), " / ".join(f"{100 * g:+.2f}%" for g in gaps) or "—",
                   f"{100 * (acc - base_acc):+.2f}" if gaps and acc is not None and base_acc is not None else "—"])
  return md_table(["preset", "program", "precision", "test accuracy", "held-out reconstruction per layer",
                   "vs float32 per layer", "accuracy vs float32 (points)"], rows), [
      "Goals of mixed precision: each layer's held-out reconstruction within 1% of float32's and test accuracy "
      "within 0.3 points. Single runs; the float32 runs are accuracy_vs_epochs' at the same epochs. bfloat16 is set "
      "beside float32 only where both ran on one machine and code (— otherwise: a machine without native bfloat16 "
      "cannot make the pair)."]


STUDIES = (Study(
    "precision_accuracy", "Mixed precision (beyond the report): bfloat16 beside float32, accuracy and reconstruction",
    dict(paper=dict(examples=55_000, epochs=30, batch=100, hidden=CONFIG_1, devices=2),
         cpu=dict(examples=11_000, epochs=12, batch=100, hidden=(500,) * 4, devices=2),
         smoke=dict(examples=400, epochs=2, batch=40, hidden=(32, 32), devices=2)), _precision, table,
    kind="beyond", timed=False, order=12, shares=("accuracy_vs_epochs",)),)
