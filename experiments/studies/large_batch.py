"""Which recipe lets data parallel at a large batch match greedy (chosen on validation accuracy)."""

from typing import List, Optional, Tuple

from common.settings import programs
from experiments import records
from experiments.presets import DP, Study, GREEDY, LARGE_BATCH_CANDIDATES, NO_PROFILE, Run, spec
from experiments.render import series
from experiments.render.tables import Others, SINGLE, Table, fmt, md_table


def large_batch_choice(data: records.StudyRecords) -> Tuple[List[dict], Optional[str]]:
  """Per run {"run", "record", "program", "candidate" (not the baseline's reference run), "batch", "validation",
  "test", "losses"}, and the candidate with the highest validation accuracy (test plays no part)."""
  rows = [{"run": name, "record": r, "program": p, "candidate": p != programs.baseline().name,
           "batch": r["config"]["batch_size"], "validation": (r.get("finetune") or {}).get("validation_accuracy"),
           "test": records.accuracy(r), "losses": [layer["epochs"][-1]["loss"] for layer in r["layers"]]}
          for name, r in data.runs.items() for p in [series.program_of(r)]]
  candidates = [row for row in rows if row["candidate"] and row["validation"] is not None]
  return rows, max(candidates, key=lambda row: row["validation"])["run"] if candidates else None


def _large_batch(s) -> List[Run]:
  e, b = s["epochs"], s["reference_batch"]
  return [spec(f"{GREEDY.name}_b{b}", GREEDY, s["hidden"], e, b, 1, s["examples"], e, resumable=True)] + [
      spec(name, DP, s["hidden"], e, s["batch"], s["devices"], s["examples"], e, settings={**settings, **NO_PROFILE},
           resumable=True) for name, settings in LARGE_BATCH_CANDIDATES]


def table(data: records.StudyRecords, others: Others) -> Table:
  """The large-batch study: candidates compared on validation accuracy, test accuracy of the chosen one only."""
  rows, chosen = large_batch_choice(data)
  table = [[f"`{row['run']}`" + (" (chosen)" if row["run"] == chosen else ""), series.program_name(row["program"]),
            series.batch_label([row["record"]]), f"{rates.get('pretrain', c['pretrain_learning_rate']):.3g}",
            f"{c.get('finetune_optimizer', 'sgd')} {rates.get('finetune', c['finetune_learning_rate']):.3g}",
            ", ".join(f"{x:.1f}" for x in row["losses"]), fmt(row["validation"], "acc"),
            fmt(row["test"], "acc") if row["run"] == chosen or not row["candidate"] else "not used"]
           for row in rows for rates, c in [(row["record"].get("learning_rates") or {}, row["record"]["config"])]]
  return md_table(["run", "program", "batch", "pretraining rate", "finetuning", "last loss per layer",
                   "validation accuracy", "test accuracy"], table), [
      "Candidates are compared on the validation split (the first 5,000 images of MNIST's training set, never "
      "trained on); test accuracy is reported once, for the chosen candidate (and the greedy reference). " + SINGLE]


STUDIES = (Study(
    "large_batch", "Large-batch study: which recipe lets data parallel at a large batch match greedy", dict(
        mid=dict(examples=55_000, epochs=10, hidden=(1000,) * 4, batch=5000, devices=2, reference_batch=100)),
    _large_batch, table, kind="own", layout="large_batch/{preset}/{run}.json", timed=False, order=13),)
