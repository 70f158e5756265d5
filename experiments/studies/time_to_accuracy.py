"""The whole tuned job's time to 98.5% on MNIST: the report's network at full size (4 × 2000 units, all 55,000
images) with the tuned recipe, its layer warm-up named (`experiments.schedules.FAIR_CHOSEN`), on the fastest program
and precision (pipeline_parallel on 2 devices in bfloat16), linear probe and per-epoch held-out evaluation off, over a
grid of pretraining and finetuning epochs. `choose`: the configuration with the fewest pretraining + finetuning
seconds whose validation accuracy reaches GOAL; its test accuracy is reported, never used to choose. The grid is run
cheapest first (`GRID`, by its epochs' predicted seconds), one process alone on the machine; a configuration costlier
than one that reached the goal need not run, and the table says which ran."""

from typing import Any, List, Mapping, Optional, Tuple

from experiments import records
from experiments import schedules
from experiments.presets import BF16, CONFIG_1, MNIST, Headline, Run, Study, spec
from experiments.render import tables

GOAL = 0.985  # validation accuracy on MNIST
EPOCHS = (5, 10, 15, 20)
# Seconds of one epoch's pretraining and finetuning, only to order the grid (the measured seconds decide).
PRETRAIN_WEIGHT, FINETUNE_WEIGHT = 18.0, 11.0
GRID: Tuple[Tuple[int, int], ...] = tuple(sorted(((p, f) for p in EPOCHS for f in EPOCHS),
                                                 key=lambda e: PRETRAIN_WEIGHT * e[0] + FINETUNE_WEIGHT * e[1]))
PROGRAM = schedules.PP


def _runs(s: Mapping[str, Any]) -> List[Run]:
  """The grid, cheapest first: pipeline_parallel in bfloat16 at sizes `s`, each (pretraining, finetuning) epochs."""
  settings = {"recipe": "tuned", "dataset": MNIST, **BF16, **schedules.original(PROGRAM),
              "layer_warmup_epochs": schedules.FAIR_CHOSEN[PROGRAM.name]}
  return [spec(f"pp_bf16_p{p}_f{f}", PROGRAM, s["hidden"], p, s["batch"], s["devices"], s["examples"], f,
               settings=settings, resumable=True) for p, f in s.get("grid", GRID)]


def seconds(record: Mapping[str, Any]) -> float:
  """A run's pretraining + finetuning seconds."""
  return record["pretrain_seconds"] + record["finetune"]["seconds"]


def choose(runs: Mapping[str, dict]) -> Optional[str]:
  """The run with the fewest pretraining + finetuning seconds whose validation accuracy is at least GOAL (None:
  none); test accuracy is not read."""
  passing = [n for n, r in runs.items() if r.get("finetune") and records.accuracy(r, "validation_accuracy") >= GOAL]
  return min(passing, key=lambda n: seconds(runs[n])) if passing else None


def table(data: records.StudyRecords, others) -> Tuple[str, List[str]]:
  """Every grid point that ran, cheapest first: epochs, seconds (pretraining, finetuning, the whole process), accuracy;
  which the rule chose."""
  rows, ran = [], [run.name for run in data.planned if run.name in data.runs]
  for name in ran:
    r = data.runs[name]
    rows.append([f"`{name}`", f"{r['config']['pretrain_epochs']} + {r['config']['finetune_epochs']}",
                 f"{r['pretrain_seconds'] / 60:.1f} + {r['finetune']['seconds'] / 60:.1f}",
                 f"{r.get('run_seconds', r['total_seconds']) / 60:.1f}",
                 tables.fmt(records.accuracy(r, "validation_accuracy"), "acc"), tables.fmt(records.accuracy(r), "acc")])
  chosen = choose({n: data.runs[n] for n in ran})
  not_run = [run.name for run in data.planned if run.name not in data.runs]
  return tables.md_table(["run", "epochs", "minutes: pretraining + finetuning", "minutes: whole process",
                          "validation accuracy", "test accuracy"], rows), [
      (f"The fastest to reach validation accuracy {GOAL}: `{chosen}`, "
       f"{seconds(data.runs[chosen]) / 60:.1f} minutes of pretraining + finetuning, test accuracy "
       f"{records.accuracy(data.runs[chosen]):.4f}.") if chosen else f"No run reached validation accuracy {GOAL}.",
      "pipeline_parallel on 2 devices, mixed_bfloat16, the tuned recipe with its layer warm-up, 4 × 2000 units, all "
      "55,000 images, batch 100; one process alone on the machine each; single runs. The grid runs cheapest first"
      + (f"; not run: {', '.join(f'`{n}`' for n in not_run)}, each predicted costlier than the choice" if chosen and
         not_run else "") + "."]


def _headline(output_dir: str, data, used: List[dict]) -> str:
  """The fastest run to GOAL: its minutes, epochs and test accuracy (or that none reached it)."""
  mine = data.get("time_to_accuracy")
  runs = mine.runs if mine else {}
  chosen = choose(runs)
  if chosen is None:
    used += list(runs.values())
    return "not run yet" if not runs else f"no run reached {GOAL} ({len(runs)} of the grid ran)"
  r = runs[chosen]
  used.append(r)
  return (f"{seconds(r) / 60:.1f} min ({r['config']['pretrain_epochs']} + {r['config']['finetune_epochs']} epochs), "
          f"test accuracy {records.accuracy(r):.4f}")


STUDIES = (Study(
    "time_to_accuracy", "The whole tuned job's time to 98.5% validation accuracy on MNIST, full size",
    dict(full=dict(examples=55_000, hidden=CONFIG_1, batch=100, devices=2),
         smoke=dict(examples=400, hidden=(16, 16), batch=40, devices=2, grid=((1, 1),))),
    _runs, table, kind="own", layout="time_to_accuracy/{run}.json", order=21,
    headline=(Headline(8, "Full size, tuned, MNIST: minutes to 98.5% validation accuracy (pipeline, bfloat16)", "—",
                       _headline),)),)
