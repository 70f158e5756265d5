"""The pretraining sweep's candidates: which hyperparameters the tuned recipe is chosen among (docs/pretraining.md).

Stage "coarse" runs every candidate at a small size (4 x 500 units, 5,500 images, 6 + 6 epochs), 3 seeds, on MNIST
and Fashion-MNIST; stage "confirm" runs the best few at the cpu preset's size (11,000 images, 12 + 12 epochs). A
candidate is ranked by its validation accuracy averaged over both datasets and the seeds; test accuracy is not read.
"""

import itertools
import os
from typing import List, NamedTuple, Optional, Sequence, Tuple

SEEDS = (0, 1, 2)
DATASETS = ("mnist", "fashion_mnist")
SHORT = {"mnist": "mnist", "fashion_mnist": "fashion"}
# The grid: plain SGD pretraining rates, masking-noise levels, finetuning rates (all finetuning with the cosine
# schedule and the best validation epoch kept); and without pretraining, the finetuning rates alone.
PRETRAIN_RATES = (0.03, 0.1, 0.3, 1.0)
CORRUPTIONS = (0.1, 0.25, 0.5)
FINETUNE_RATES = (0.3, 1.0, 3.0)


class Candidate(NamedTuple):
  """A set of hyperparameters: its name in run names and its flags (beside the size's)."""
  name: str
  flags: Tuple[str, ...]
  pretrained: bool = True


def _g(x: float) -> str:
  return f"{x:g}"


def candidate(pretrain_rate: float, corruption: float, finetune_rate: float, schedule: str = "cosine",
              keep_best: bool = True) -> Candidate:
  """The candidate with these values."""
  name = f"p{_g(pretrain_rate)}_c{_g(corruption)}_f{_g(finetune_rate)}" + ("" if schedule == "cosine" else f"_{schedule}")
  return Candidate(name, (f"--pretrain_learning_rate={_g(pretrain_rate)}", f"--corruption={_g(corruption)}",
                          f"--finetune_learning_rate={_g(finetune_rate)}", f"--finetune_lr_schedule={schedule}",
                          "--finetune_keep_best" if keep_best else "--nofinetune_keep_best"))


def no_pretraining(finetune_rate: float, schedule: str = "cosine") -> Candidate:
  """Finetuning from the initial weights at this rate (--pretrain_epochs=0 is set by the run)."""
  return Candidate(f"none_f{_g(finetune_rate)}" + ("" if schedule == "cosine" else f"_{schedule}"),
                   (f"--finetune_learning_rate={_g(finetune_rate)}", f"--finetune_lr_schedule={schedule}",
                    "--finetune_keep_best"), pretrained=False)


REPORT = Candidate("report", ())


def coarse_candidates(grid_points: Optional[int] = None) -> List[Candidate]:
  """Every candidate of the coarse stage: the grid (its first `grid_points` only, when given: the smoke preset), no
  pretraining at each finetuning rate, and the report's values."""
  grid = [candidate(p, c, f) for p, c, f in itertools.product(PRETRAIN_RATES, CORRUPTIONS, FINETUNE_RATES)]
  return grid[:grid_points] + [no_pretraining(f) for f in FINETUNE_RATES[:grid_points]] + [REPORT]


def run_name(stage: str, dataset: str, cand: Candidate, seed: int) -> str:
  """e.g. "coarse_mnist_p0.1_c0.25_f1_s0"."""
  return f"{stage}_{SHORT[dataset]}_{cand.name}_s{seed}"


# A candidate is chosen among the pretrained ones by SCORE: the mean over the datasets of its mean validation accuracy
# over the seeds. One that failed (its training diverged) in any run is not chosen.
CONFIRMED = 3  # the best coarse candidates confirmed at the cpu preset's size


def parse(run: str) -> Tuple[str, str, str, int]:
  """(stage, dataset, candidate, seed) of a sweep run's name, e.g. "coarse_mnist_p0.1_c0.25_f1_s0"."""
  stage, short, rest = run.split("_", 2)
  name, seed = rest.rsplit("_s", 1)
  return stage, {v: k for k, v in SHORT.items()}[short], name, int(seed)


def validation(record: dict) -> Optional[float]:
  """The validation accuracy a run finished with (its kept epoch's), None when it failed."""
  return None if record.get("failed") else (record.get("finetune") or {}).get("validation_accuracy")


def rows(runs: dict, stage: str, datasets: Sequence[str] = DATASETS) -> List[dict]:
  """Per candidate of `stage` (in the order of the records' names): {"candidate", "pretrained", "datasets": {dataset:
  {"mean", "min", "max", "runs"}}, "failed" (runs that failed), "score" (None unless every run of both datasets
  finished), "heldout": {dataset: mean held-out reconstruction per layer}}. Test accuracy is not read."""
  out: dict = {}
  for name, record in sorted(runs.items()):
    s, dataset, cand, _ = parse(name)
    if s != stage:
      continue
    row = out.setdefault(cand, {"candidate": cand, "pretrained": not cand.startswith("none") and
                                record["config"].get("pretrain_epochs", 1) > 0, "values": {}, "failed": 0,
                                "heldout_values": {}})
    value = validation(record)
    row["failed"] += value is None
    if value is not None:
      row["values"].setdefault(dataset, []).append(value)
      row["heldout_values"].setdefault(dataset, []).append([h["loss"] for h in record["heldout_reconstruction"]])
  for row in out.values():
    values = row.pop("values")
    row["datasets"] = {d: {"mean": sum(v) / len(v), "min": min(v), "max": max(v), "runs": len(v)}
                       for d, v in values.items()}
    heldout = row.pop("heldout_values")
    row["heldout"] = {d: [sum(layer) / len(layer) for layer in zip(*h)] for d, h in heldout.items()}
    complete = not row["failed"] and set(row["datasets"]) == set(datasets)
    row["score"] = sum(v["mean"] for v in row["datasets"].values()) / len(datasets) if complete else None
  return list(out.values())


def ranked(stage_rows: List[dict]) -> List[dict]:
  """The grid's pretrained candidates with a score, best first (the report's values are the reference, not one)."""
  return sorted((r for r in stage_rows if r["pretrained"] and r["score"] is not None and r["candidate"] != REPORT.name),
                key=lambda r: -r["score"])


def confirm_candidates(coarse_rows: List[dict]) -> List[Candidate]:
  """The confirm stage: the CONFIRMED best coarse candidates; the best one with a constant finetuning rate and with
  its last epoch kept (does the schedule, does early stopping pay?); the best candidate without pretraining; the
  report's values. Empty until every coarse candidate has its records."""
  best = ranked(coarse_rows)
  if not best or any(r["score"] is None and not r["failed"] for r in coarse_rows):
    return []
  by_name = {c.name: c for c in coarse_candidates()}
  top = [by_name[r["candidate"]] for r in best[:CONFIRMED]]
  p, c, f = (float(x[1:]) for x in top[0].name.split("_")[:3])
  none = max((r for r in coarse_rows if not r["pretrained"] and r["score"] is not None and r["candidate"] != "report"),
             key=lambda r: r["score"])
  return top + [candidate(p, c, f, "constant"), Candidate(f"{top[0].name}_last", candidate(p, c, f, keep_best=False).flags),
                by_name[none["candidate"]], REPORT]


def chosen(confirm_rows: List[dict]) -> Optional[str]:
  """The confirm stage's best pretrained candidate (the tuned recipe), None before its records exist."""
  best = ranked(confirm_rows)
  return best[0]["candidate"] if best else None


# The ablation (does pretraining help?) and the comparison (the report's question with the tuned recipe): greedy with
# no pretraining, the report's recipe and the tuned one; every program against greedy, with the tuned recipe.
ABLATION_ARMS = (("none", ("--recipe=tuned", "--pretrain_epochs=0")), ("report", ("--recipe=report",)),
                 ("tuned", ("--recipe=tuned",)))


def ablation_runs(spec, s: dict) -> list:
  """The ablation's runs at sizes `s` ({"hidden", "examples", "epochs", "batch"}; "seeds" optional): per dataset,
  arm and seed a greedy run, seed 0's drawing its filters. `spec` is `experiments.presets.spec`."""
  from common.settings import programs  # noqa: the registry, when the runs are built
  out = []
  for d in s.get("datasets", DATASETS):
    for arm, flags in ABLATION_ARMS:
      for seed in s.get("seeds", SEEDS):
        extra = flags[:1] + (f"--dataset={d}",) + (("--pictures",) if seed == 0 else ())
        epochs = 0 if "--pretrain_epochs=0" in flags else s["epochs"]
        out.append(spec(f"{SHORT[d]}_{arm}_s{seed}", programs.GREEDY, s["hidden"], epochs, s["batch"], 1,
                        s["examples"], s["epochs"], extra=extra, seed=seed))
  return out


def comparison_runs(spec, s: dict) -> list:
  """The comparison's runs at sizes `s` ({"hidden", "examples", "epochs", "batch", "devices"}): every registered
  program with the tuned recipe on `devices` devices (one for a one-device program), and pipeline_parallel with two
  replicas per stage on 2 x `devices`, per dataset and seed, each layer's held-out reconstruction after every epoch."""
  from common.settings import programs  # noqa: the registry, when the runs are built
  variants = [(p.run_name, p, s["devices"], p.timing_flags) for p in programs.PROGRAMS] + [
      ("pp_r2", programs.PIPELINE_PARALLEL, 2 * s["devices"], ("--replicas_per_stage=2",))]
  return [spec(f"{SHORT[d]}_{name}_s{seed}", p, s["hidden"], s["epochs"], s["batch"], g, s["examples"], s["epochs"],
               extra=("--recipe=tuned", f"--dataset={d}", "--heldout_every_epoch") + own, seed=seed)
          for d in s.get("datasets", DATASETS) for seed in s.get("seeds", SEEDS) for name, p, g, own in variants]


# What the tables and the figure show. A table function takes (the entry's records, other machines' records) and
# returns (markdown table, sentences), as `experiments.report.tables`' do.
GOAL_POINTS = 1.0  # the tuned recipe's pretraining should beat no pretraining by this many points on both datasets
ARM_LABELS = {"none": "no pretraining (tuned recipe, 0 pretraining epochs)", "report": "report's recipe",
              "tuned": "tuned recipe", "none_own": "no pretraining, its own best finetuning rate (sweep)"}


def _spread(values: Sequence[float], scale: float = 1.0, digits: int = 4) -> str:
  """"mean (min–max)" of `values` times `scale`, or "—"."""
  if not values:
    return "—"
  v = [x * scale for x in values]
  return f"{sum(v) / len(v):.{digits}f} ({min(v):.{digits}f}–{max(v):.{digits}f})"


def _recipe_candidate() -> Optional[str]:
  """The sweep candidate the tuned recipe's values name (`common.settings.recipes`), None when none does."""
  from common.settings import recipes  # noqa: the recipe, when a table is drawn
  v = recipes.get("tuned").values
  if v.get("finetune_lr_schedule") != "cosine" or not v.get("finetune_keep_best"):
    return None
  return candidate(v["pretrain_learning_rate"], v["corruption"], v["finetune_learning_rate"]).name


def sweep_table(data, others) -> Tuple[str, List[str]]:
  """Per stage and candidate, best first: validation accuracy per dataset (mean, min–max over the seeds), the score,
  failures; which candidate the sweep chose and whether the tuned recipe is it. Test accuracy is not shown."""
  from experiments.report import tables  # noqa: the shared formats
  sizes = {}
  body, sentences = [], []
  for stage in ("confirm", "coarse"):
    stage_rows = rows(data.runs, stage, _datasets(data.runs))
    if not stage_rows:
      continue
    one = next(r for n, r in data.runs.items() if parse(n)[0] == stage)["config"]
    sizes[stage] = (f"{stage}: {len(one['hidden_units'])} x {one['hidden_units'][0]} units, "
                    f"{one['train_examples']:,} images, {one['finetune_epochs']} + {one['finetune_epochs']} epochs")
    for r in sorted(stage_rows, key=lambda r: -(r["score"] or 0)):
      body.append([stage, f"`{r['candidate']}`"] + [
          _spread_of(r["datasets"].get(d)) for d in _datasets(data.runs)] + [
          "—" if r["score"] is None else f"{r['score']:.4f}", r["failed"] or ""])
  best = chosen(rows(data.runs, "confirm", _datasets(data.runs)))
  if best:
    ranked_ = ranked(rows(data.runs, "confirm", _datasets(data.runs)))
    first, second = ranked_[0], ranked_[1] if len(ranked_) > 1 else None
    apart = second is None or all(first["datasets"][d]["min"] > second["datasets"][d]["max"]
                                  for d in first["datasets"])
    tuned = _recipe_candidate()
    sentences.append(
        f"Chosen: `{best}`, the confirm stage's best score (mean validation accuracy over the datasets and seeds)"
        + ("" if apart else f"; its seeds' range overlaps the runner-up's (`{second['candidate']}`), so the choice "
           "is within noise") + ". " + ("The tuned recipe (`common/settings/recipes.py`) holds its values."
                                       if tuned == best else f"The tuned recipe holds `{tuned}`, not the choice."))
  sentences.append("Candidates `pP_cC_fF`: pretraining rate P (plain SGD), corruption C, finetuning rate F with the "
                   "cosine schedule and the best validation epoch kept; `_constant`: a constant finetuning rate; "
                   "`_last`: the last epoch kept; `none_fF`: no pretraining; `report`: the report's values. "
                   + "; ".join(sizes.values()) + ". A candidate with a failed run (diverged) has no score.")
  header = ["stage", "candidate"] + [f"{_label(d)} validation accuracy" for d in _datasets(data.runs)] + [
      "score", "failed runs"]
  return tables.md_table(header, body), sentences


def _spread_of(stat: Optional[dict]) -> str:
  return "—" if not stat else f"{stat['mean']:.4f} ({stat['min']:.4f}–{stat['max']:.4f})"


def _label(dataset: str) -> str:
  return {"mnist": "MNIST", "fashion_mnist": "Fashion-MNIST"}.get(dataset, dataset)


def _datasets(runs: dict) -> List[str]:
  found = {(r.get("config") or {}).get("dataset", "mnist") for r in runs.values()}
  return [d for d in DATASETS if d in found]


def _by_arm(runs: dict) -> dict:
  """{(dataset short name, arm): {seed: record}} of the ablation's records."""
  out: dict = {}
  for name, r in runs.items():
    short, rest = name.split("_", 1)
    arm, seed = rest.rsplit("_s", 1)
    out.setdefault((short, arm), {})[int(seed)] = r
  return out


def _accuracy(r: dict, key: str = "test_accuracy") -> Optional[float]:
  return (r.get("finetune") or {}).get(key)


def ablation_table(data, others) -> Tuple[str, List[str]]:
  """Per dataset and arm: test and validation accuracy (mean, min–max over the seeds), held-out reconstruction per
  layer (mean), the finetuning rate; and the tuned recipe's gain over no pretraining against the goal."""
  from experiments.report import tables  # noqa: the shared formats
  arms, body, sentences = _by_arm(data.runs), [], []
  for d in DATASETS:
    for arm in ARM_LABELS:
      found = arms.get((SHORT[d], arm))
      if not found:
        continue
      rs = [found[s] for s in sorted(found)]
      held = [sum(h[k]["loss"] for h in (r["heldout_reconstruction"] for r in rs)) / len(rs)
              for k in range(len(rs[0]["heldout_reconstruction"]))]
      body.append([_label(d), ARM_LABELS[arm], _spread([_accuracy(r) for r in rs]),
                   _spread([_accuracy(r, "validation_accuracy") for r in rs]),
                   " / ".join(f"{x:.0f}" for x in held), f"{rs[0]['config']['finetune_learning_rate']:g}", len(rs)])
    gains = {arm: gain(arms, d, arm) for arm in ("none", "none_own")}
    if gains["none"]:
      mean, low, high = gains["none"]
      sentences.append(
          f"{_label(d)}: the tuned recipe's pretraining adds {mean:+.2f} points of test accuracy over no pretraining "
          f"with the same finetuning (per seed {low:+.2f} to {high:+.2f}; goal ≥ +{GOAL_POINTS:g}: "
          + ("met" if low >= GOAL_POINTS else "met on average, not by every seed" if mean >= GOAL_POINTS
             else "missed") + ")" + ("" if not gains["none_own"] else
                                     f", and {gains['none_own'][0]:+.2f} ({gains['none_own'][1]:+.2f} to "
                                     f"{gains['none_own'][2]:+.2f}) over no pretraining at its own best finetuning "
                                     "rate, the fairer baseline (the tuned rate is too large for a network finetuned "
                                     "from its initial weights).") + ("" if gains["none_own"] else "."))
  one = next(iter(data.runs.values()))["config"]
  sentences.append(f"Greedy, {len(one['hidden_units'])} x {one['hidden_units'][0]} units, {one['train_examples']:,} "
                   f"images, {one['finetune_epochs']} + {one['finetune_epochs']} epochs (none: 0 + "
                   f"{one['finetune_epochs']}), batch {one['batch_size']}; held-out reconstruction: test images "
                   "through the stack below, fixed masks (of untrained layers without pretraining). The last arm is "
                   "the sweep's confirm-stage records of its best candidate without pretraining.")
  return tables.md_table(["dataset", "recipe", "test accuracy", "validation accuracy",
                          "held-out reconstruction per layer", "finetuning rate", "seeds"], body), sentences


def gain(arms: dict, dataset: str, baseline: str) -> Optional[Tuple[float, float, float]]:
  """(mean, min, max) over the seeds both have of the tuned arm's test accuracy minus the `baseline` arm's, in
  points; None without a common seed."""
  tuned, base = arms.get((SHORT[dataset], "tuned"), {}), arms.get((SHORT[dataset], baseline), {})
  gains = [100 * (_accuracy(tuned[s]) - _accuracy(base[s])) for s in sorted(set(tuned) & set(base))]
  return (sum(gains) / len(gains), min(gains), max(gains)) if gains else None


def ablation_figure(data, others=None):
  """The first layer's filters of seed 0 under each arm side by side, a row per dataset (the runs' own pictures)."""
  from matplotlib import image as mpl_image  # noqa: only to draw
  from experiments.report import figures
  arms = _by_arm(data.runs)
  shown = [d for d in DATASETS if any((SHORT[d], a) in arms for a in ARM_LABELS)]
  columns = [a for a in ("none", "report", "tuned")]
  fig = figures.mpl_figure.Figure(figsize=(4.2 * len(columns), 4.4 * len(shown)))
  axes = fig.subplots(len(shown), len(columns), squeeze=False)
  for i, d in enumerate(shown):
    for j, arm in enumerate(columns):
      ax, r = axes[i][j], arms.get((SHORT[d], arm), {}).get(0)
      ax.set_axis_off()
      path = None if r is None else os.path.join(data.output_dir, "runs", data.entry,  # beside the record
                                                 f"{r['config']['run_name']}_filters.png")
      if path and os.path.exists(path):
        ax.imshow(mpl_image.imread(path))
      else:
        ax.text(0.5, 0.5, "no picture", ha="center", va="center")
      ax.set_title(f"{_label(d)}: {ARM_LABELS[arm].split(' (')[0]}", fontsize=10)
  fig.suptitle("The first layer's filters (seed 0)", fontsize=12)
  fig.tight_layout(rect=(0, 0, 1, 0.95))
  return fig


def _by_program(runs: dict) -> dict:
  """{(dataset short name, variant): {seed: record}} of the comparison's records."""
  return _by_arm(runs)


def programs_table(data, others) -> Tuple[str, List[str]]:
  """Per dataset and program: test accuracy (mean, min–max), its difference from greedy's of the same seed, held-out
  reconstruction per layer, and the seconds to greedy's final held-out reconstruction and validation accuracy."""
  from common.settings import programs  # noqa: the registry, when a table is drawn
  from experiments import records
  from experiments.report import tables
  found, body = _by_program(data.runs), []
  base = programs.baseline().run_name
  names = {p.run_name: p.label for p in programs.PROGRAMS}
  names["pp_r2"] = f"{programs.PIPELINE_PARALLEL.label}, 2 replicas per stage"
  for d in DATASETS:
    greedy = found.get((SHORT[d], base), {})
    for variant, label in names.items():
      rs = found.get((SHORT[d], variant))
      if not rs:
        continue
      seeds = sorted(rs)
      over = any(records.oversubscribed(r) for r in rs.values())
      diffs = [100 * (_accuracy(rs[s]) - _accuracy(greedy[s])) for s in seeds if s in greedy]
      held = [sum(r["heldout_reconstruction"][k]["loss"] for r in rs.values()) / len(rs)
              for k in range(len(rs[seeds[0]]["heldout_reconstruction"]))]
      to_loss = [_seconds_to_loss(rs[s], greedy[s]) for s in seeds if s in greedy]
      to_acc = [_seconds_to_accuracy(rs[s], greedy[s]) for s in seeds if s in greedy]
      body.append([_label(d), label + (" †" if over else ""), records.devices(rs[seeds[0]]),
                   _spread([_accuracy(r) for r in rs.values()]),
                   "—" if variant == base else _spread(diffs, digits=2),
                   " / ".join(f"{x:.0f}" for x in held),
                   "—" if over else _median(to_loss), "—" if over else _median(to_acc)])
  one = next(iter(data.runs.values()))
  return tables.md_table(
      ["dataset", "program", "devices", "test accuracy", "vs greedy (points, same seed)",
       "held-out reconstruction per layer", "s to greedy's held-out", "s to greedy's validation accuracy"], body), [
      f"The tuned recipe, {len(one['config']['hidden_units'])} x {one['config']['hidden_units'][0]} units, "
      f"{one['config']['train_examples']:,} images, {one['config']['pretrain_epochs']} + "
      f"{one['config']['finetune_epochs']} epochs, batch {one['config']['batch_size']}; "
      f"{len({s for v in found.values() for s in v})} seeds; mean (min–max) over them. Seconds (median over the seeds): "
      "wall seconds of pretraining until every layer's held-out reconstruction is within 1% of greedy's final one "
      "(same seed), and of pretraining plus finetuning until a finetuning epoch's validation accuracy reaches "
      "greedy's final one; — never, or oversubscribed. " + tables.DAGGER,
      f"Machine: {records.machine_label(list(data.runs.values()))}; the runs ran one at a time."]


def _median(values: Sequence[Optional[float]]) -> str:
  if not values or any(v is None for v in values):
    reached = [v for v in values if v is not None]
    return "—" if not reached else f"{sorted(reached)[len(reached) // 2]:.0f} ({len(reached)} of {len(values)})"
  v = sorted(values)
  return f"{(v[len(v) // 2] + v[(len(v) - 1) // 2]) / 2:.0f}"


def _seconds_to_loss(record: dict, greedy: dict) -> Optional[float]:
  """Seconds of pretraining until every layer's held-out loss is within 1% of greedy's final one."""
  from experiments import records  # noqa
  if not records.has_heldout_curves(record):
    return None
  targets = [h["loss"] * 1.01 for h in greedy["heldout_reconstruction"]]
  return records.time_to_loss(records.loss_curves(record, "heldout_loss"), targets)[0]


def _seconds_to_accuracy(record: dict, greedy: dict) -> Optional[float]:
  """Pretraining seconds plus finetuning seconds until an epoch's validation accuracy reaches greedy's final one."""
  target, elapsed = _accuracy(greedy, "validation_accuracy"), record["pretrain_seconds"]
  for epoch in (record.get("finetune") or {}).get("history", []):
    elapsed += epoch["seconds"]
    if epoch["validation_accuracy"] >= target:
      return elapsed
  return None
