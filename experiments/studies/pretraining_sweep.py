"""The pretraining sweep: the tuned recipe chosen on validation accuracy among its candidates (docs/pretraining.md;
its candidates, stages and selection: `experiments.sweep`)."""

from typing import List, Optional, Tuple

from common.settings import recipes
from experiments import records
from experiments import sweep
from experiments.presets import Study
from experiments.render import tables
from experiments.sweep import DATASETS, candidate, chosen, parse, ranked, rows


def _recipe_candidate() -> Optional[str]:
  """The sweep candidate the tuned recipe's values name (`common.settings.recipes`), None when none does."""
  v = recipes.get("tuned").values
  if v.get("finetune_lr_schedule") != "cosine" or not v.get("finetune_keep_best"):
    return None
  return candidate(v["pretrain_learning_rate"], v["corruption"], v["finetune_learning_rate"]).name


def sweep_table(data, others) -> Tuple[str, List[str]]:
  """Per stage and candidate, best first: validation accuracy per dataset (mean, min–max over the seeds), the score,
  failures; which candidate the sweep chose and whether the tuned recipe is it. Test accuracy is not shown."""
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
  header = ["stage", "candidate"] + [f"{records.dataset_label(d)} validation accuracy" for d in _datasets(data.runs)] + [
      "score", "failed runs"]
  return tables.md_table(header, body), sentences


def _spread_of(stat: Optional[dict]) -> str:
  return "—" if not stat else f"{stat['mean']:.4f} ({stat['min']:.4f}–{stat['max']:.4f})"


def _datasets(runs: dict) -> List[str]:
  found = {(r.get("config") or {}).get("dataset", "mnist") for r in runs.values()}
  return [d for d in DATASETS if d in found]


PRETRAINING_SWEEP = Study(
    "pretraining_sweep", "Pretraining sweep: the tuned recipe, chosen on validation accuracy", sweep.SIZES,
    sweep.coarse_runs, sweep_table, kind="own", timed=False, order=15, later=(sweep.confirm_runs,))
STUDIES = (PRETRAINING_SWEEP,)
