"""Full size: the report's network on all 55,000 images, hours per run."""

from typing import Dict, List

from experiments import presets
from experiments import records
from experiments import schedules
from experiments.presets import (BY_PRECISION, CONFIG_1, DP, Study, FASHION, GREEDY, HELDOUT, MNIST, MP, NO_PROFILE,
                                 PP, RECIPES, Run, spec)
from experiments.render import series
from experiments.render import cells
from experiments.render.tables import APART, Others, Table, accuracy_goal, fmt, md_table
from experiments.sweep import spread_text

# The full-size runs' goals with the tuned recipe (docs/pretraining.md), per dataset.
TUNED_GOALS = {presets.MNIST: 0.985, presets.FASHION: 0.90}
TUNED = "_tuned"  # in the names of the tuned recipe's runs
FAIR_SEEDS = {FASHION: (0, 1, 2), MNIST: (0, 1, 2)}  # `_fair`'s seeds per dataset


def _full_size(s) -> List[Run]:
  e, b, g = s["epochs"], s["batch"], s["devices"]
  name = lambda p: f"{p.name}{'' if p.one_device else f'_g{g}'}_b{b}_e{e}"  # noqa: E731
  return [spec(f"{name(p)}{suffix}", p, s["hidden"], e, b, g, s["examples"], e,
               settings={**(HELDOUT if p is PP else {}), **settings}, resumable=True)
          for suffix, settings in BY_PRECISION for p in (GREEDY, MP, PP)] + [
      spec(f"dp_b{s['dp_batch']}_e{e}_{recipe}", DP, s["hidden"], e, s["dp_batch"], g, s["examples"], e,
           settings={**NO_PROFILE, **settings}, resumable=True) for recipe, settings in RECIPES] + [
      spec(f"{FASHION}_{name(p)}", p, s["hidden"], e, b, g, s["examples"], e,
           settings={**(HELDOUT if p is PP else {}), "dataset": FASHION}, resumable=True) for p in (GREEDY, PP)] + [
      spec(f"{presets.dataset_prefix(d)}{name(p)}_tuned", p, s["hidden"], e, b, g, s["examples"], e,
           settings={"recipe": "tuned", "dataset": d, **schedules.original(p)}, resumable=True)
      for d in (MNIST, FASHION) for p in (GREEDY, PP)] + [
      spec(f"{FASHION}_{name(GREEDY)}_tuned_s{seed}", GREEDY, s["hidden"], e, b, g, s["examples"], e,
           settings={"recipe": "tuned", "dataset": FASHION}, resumable=True, seed=seed) for seed in (1, 2)] + (
      _chosen(s, name(PP)) if schedules.CHOSEN else []) + _fair(s, name)


def _fair(s, name) -> List[Run]:
  """Greedy and the pipeline each at the layer warm-up the fair frontier chose for it (`schedules.FAIR_CHOSEN`, named),
  the tuned recipe: seeds 0-2 of each dataset, Fashion-MNIST first (greedy first: its warm-up was the question)."""
  return [spec(_fair_name(d, name(p), p, seed), p, s["hidden"], s["epochs"], s["batch"], s["devices"], s["examples"],
               s["epochs"], settings={"recipe": "tuned", "dataset": d, **schedules.original(p),
                                      "layer_warmup_epochs": schedules.FAIR_CHOSEN[p.name]}, resumable=True, seed=seed)
          for d, seeds in FAIR_SEEDS.items() for seed in seeds for p in (GREEDY, PP)]


def _fair_name(dataset: str, sized_name: str, program, seed: int) -> str:
  """A `_fair` run's name: <dataset>_<program and sizes>_tuned_w<its chosen warm-up>_s<seed> (no dataset for MNIST)."""
  warmup = schedules.FAIR_CHOSEN[program.name]
  return f"{presets.dataset_prefix(dataset)}{sized_name}_tuned_w{warmup:g}_s{seed}"


def _chosen(s, pp_name: str) -> List[Run]:
  """The frontier's chosen schedule (`experiments.schedules.CHOSEN`, its settings named) at full size with the tuned
  recipe: Fashion-MNIST seeds 0-2, MNIST seed 0."""
  arm, program, settings = schedules.arm(schedules.CHOSEN)
  return [spec(f"{presets.dataset_prefix(d)}{pp_name}_tuned_{arm}_s{seed}", program, s["hidden"], s["epochs"],
               s["batch"], s["devices"], s["examples"], s["epochs"],
               settings={"recipe": "tuned", "dataset": d, **settings}, resumable=True, seed=seed)
          for d, seeds in ((FASHION, (0, 1, 2)), (MNIST, (0,))) for seed in seeds]


def table(data: records.StudyRecords, others: Others) -> Table:
  """Every declared full-size run (not run yet where it has no record; of another folder's, `APART`, those it has),
  each row labelled with its dataset and machine:
  test accuracy beside the report's (MNIST) or the goal and published baselines (other datasets), and time."""
  report = {GREEDY.name: f"{presets.ACCURACY_REPORTED[GREEDY.name][30]} (greedy 30+30, conres2.png)",
            MP.name: f"{presets.ACCURACY_REPORTED_MP_TEXT} (model parallel, \"around 96.62%\" in the text)",
            DP.name: f"{presets.DP_ACCURACY_REPORTED[30]} (data parallel, batch 5000 per tower, 30+30)"}
  rows = [[f"`{run.name}`", records.dataset_label(run.config.dataset), series.batch_label([r]) if r else "—",
           fmt(records.accuracy(r), "acc") if r else "not run yet",
           f"tuned recipe's goal ≥ {TUNED_GOALS[run.config.dataset]}" if TUNED in run.name else
           report.get(run.program, "—") if run.config.dataset == presets.MNIST else accuracy_goal(run.config.dataset),
           records.machine_label([r]) if r else "—"]
          for run in data.planned for r in [data.runs.get(run.name)]
          if r or others is not APART]
  by_machine: Dict[str, List[str]] = {}  # minutes grouped by machine, never two machines' side by side
  for name, r in data.runs.items():
    if TUNED in name:
      continue  # accuracy runs that shared the machine with other runs (the sentence below)
    by_machine.setdefault(records.host(r), []).append(
        f"`{name}` {r['pretrain_seconds'] / 60:.0f} + {r['finetune']['seconds'] / 60:.0f}")
  short = [f"`{name}`" for name, r in data.runs.items()
           if r.get("run_seconds", r.get("total_seconds", float("inf"))) < r["pretrain_seconds"]]
  return md_table(["run", "dataset", "batch", "test accuracy", "report, or goal and published baselines",
                   "machine, code"], rows), [
      _fair_comparison(data),
      f"{', '.join(short)}: resumed from checkpoints written before records kept the whole run's time, so each one's "
      "total_seconds (and run_seconds, where present) is the last process's only (smaller than the pretraining "
      "seconds); the minutes shown are pretraining and finetuning." if short else "",
      "Minutes of pretraining + finetuning by machine (compare within one machine only" + (
          "; the runs whose records name no commit or processor ran at low priority beside other work" if any(
              records.code(r) == f"commit {records.NOT_RECORDED}" for r in data.runs.values()) else "") + "): "
      + "; ".join(f"{host}: {', '.join(runs)}" for host, runs in sorted(by_machine.items())) + ".",
      "The `_tuned` runs are accuracy runs that shared the machine with other runs (several at once, and the test "
      "suite): their minutes measure nothing and are left out." if any(TUNED in n for n in data.runs) else "",
      "The report's network, 4 × 2000 hidden units, all 55,000 training images, on 2 CPU cores; hours per run, so not "
      "in the `cpu` preset. Single runs. The large-batch recipe is the one chosen on validation accuracy in "
      "`large_batch`; `_tuned`: the tuned recipe, chosen on validation accuracy in `pretraining_sweep` "
      "(docs/pretraining.md). " + presets.PUBLISHED]


def _fair_names(dataset: str, seed: int) -> List[str]:
  """The names of `_fair`'s greedy and pipeline runs of one dataset and seed at the full preset's sizes."""
  return [_fair_name(dataset, f"{GREEDY.name}_b100_e30", GREEDY, seed),
          _fair_name(dataset, f"{PP.name}_g2_b100_e30", PP, seed)]


def _fair_comparison(data: records.StudyRecords) -> str:
  """The pipeline against greedy at full size, each at its chosen warm-up (`_fair`), per dataset over the seeds both
  ran: each one's test accuracy and the pipeline's minus greedy's of the same seed, validation and test (points,
  mean (min–max)); with fewer than 3 seeds it says no difference is claimed. "" before any seed has both."""
  parts = []
  for d, seeds in FAIR_SEEDS.items():
    pairs = [[data.runs[n] for n in names] for seed in seeds for names in [_fair_names(d, seed)]
             if all(n in data.runs for n in names)]
    if pairs:
      points = {key: [100 * (records.accuracy(p, key) - records.accuracy(g, key)) for g, p in pairs]
                for key in ("validation_accuracy", "test_accuracy")}
      parts.append(f"{records.dataset_label(d)} ({len(pairs)} seed{'s' if len(pairs) > 1 else ''}): test accuracy "
                   f"greedy {spread_text([records.accuracy(g) for g, _ in pairs])}, pipeline "
                   f"{spread_text([records.accuracy(p) for _, p in pairs])}; pipeline minus greedy, validation "
                   f"{spread_text(points['validation_accuracy'], 2)}, test {spread_text(points['test_accuracy'], 2)}"
                   + (" (fewer than 3 seeds: no difference is claimed)" if len(pairs) < 3 else ""))
  w = schedules.FAIR_CHOSEN
  return (f"Greedy and the pipeline each at its chosen layer warm-up (greedy w = {w[GREEDY.name]:g}, pipeline w = "
          f"{w[PP.name]:g}; `_w` runs; points, mean (min–max) over the seeds both ran): " + "; ".join(parts) + "."
          ) if parts else ""


def _tuned_pair(data, dataset: str, used: List[dict]) -> str:
  """The headline's cell for one dataset: greedy and the pipeline each at its chosen layer warm-up (seed 0 of
  `_fair`) once either has run; before that greedy without a warm-up and the frontier's chosen pipeline schedule."""
  w = {p.name: schedules.FAIR_CHOSEN[p.name] for p in (GREEDY, PP)}
  fair, prefix = _fair_names(dataset, 0), presets.dataset_prefix(dataset)
  full = data.get("full_size")
  if full and any(n in full.runs for n in fair):
    labels = [f"greedy w{w[GREEDY.name]:g}", f"pipeline parallel w{w[PP.name]:g}"]
    return cells.full_size(data, fair, used, labels) + "".join(
        f", {label} not run yet" for label, n in zip(labels, fair) if n not in full.runs)
  return cells.full_size(data, [f"{prefix}greedy_b100_e30_tuned", f"{prefix}pipeline_parallel_g2_b100_e30_tuned_"
                                f"{schedules.CHOSEN}_s0"], used)


HEADLINE = (
    presets.Headline(4, "Test accuracy, report's recipe, 4 × 2000 units, 30 + 30 epochs, single runs",
                     f"greedy {presets.ACCURACY_REPORTED[GREEDY.name][30]}, model parallel "
                     f"~{presets.ACCURACY_REPORTED_MP_TEXT}", lambda output_dir, data, used: cells.full_size(
                         data, ["greedy_b100_e30", "model_parallel_g2_b100_e30", "pipeline_parallel_g2_b100_e30"],
                         used)),
    presets.Headline(5, "Data parallel at global batch 5000, 30 + 30 epochs: report's recipe, large-batch recipe",
                     f"{presets.DP_ACCURACY_REPORTED[30]} (batch 5000 per GPU, 4 GPUs)",
                     lambda output_dir, data, used: cells.full_size(
                         data, ["dp_b5000_e30_report", "dp_b5000_e30_large_batch"], used,
                         ["report's recipe", "large-batch recipe"])),
    presets.Headline(7, "Test accuracy, tuned, 4 × 2000, 30 + 30, MNIST (goal 0.985) / Fashion-MNIST (0.90); wN: "
                        "warm-up N", "—", lambda output_dir, data, used: " / ".join(_tuned_pair(data, d, used)
                                                                   for d in (MNIST, FASHION))))


STUDIES = (Study("full_size", "Full size: the report's network on all 55,000 images", dict(
    full=dict(examples=55_000, epochs=30, hidden=CONFIG_1, batch=100, dp_batch=5000, devices=2)),
    _full_size, table, kind="own", layout="full_size/{run}.json", timed=False, order=14, headline=HEADLINE),)
