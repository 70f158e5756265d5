"""The pretraining sweep: the tuned recipe chosen on validation accuracy (docs/pretraining.md; `experiments.sweep`)."""

from typing import List, Tuple

from common.settings import recipes
from experiments import records, sweep
from experiments.presets import Study
from experiments.render import tables
from experiments.sweep import DATASETS, candidate, parse, ranked, rows, spread_text


def sweep_table(data, others) -> Tuple[str, List[str]]:
  """Per round and candidate, best first: validation accuracy per dataset (mean, min–max over the seeds), the score,
  failures; which candidate the sweep chose and whether the tuned recipe is it. Test accuracy is not shown."""
  found = {(r.get("config") or {}).get("dataset", "mnist") for r in data.runs.values()}
  datasets = [d for d in DATASETS if d in found]
  rounds = {round_: rows(data.runs, round_, datasets) for round_ in ("confirm", "coarse")}
  sizes, body, sentences = {}, [], []
  for round_, round_rows in ((s, r) for s, r in rounds.items() if r):
    one = next(r for n, r in data.runs.items() if parse(n)[0] == round_)["config"]
    sizes[round_] = (f"{round_}: {len(one['hidden_units'])} x {one['hidden_units'][0]} units, "
                    f"{one['train_examples']:,} images, {one['finetune_epochs']} + {one['finetune_epochs']} epochs")
    body += [[round_, f"`{r['candidate']}`"] + [spread_text(r["datasets"].get(d, [])) for d in datasets] + [
        "—" if r["score"] is None else f"{r['score']:.4f}", r["failed"] or ""]
             for r in sorted(round_rows, key=lambda r: -(r["score"] or 0))]
  best = ranked(rounds["confirm"])  # the chosen candidate (the tuned recipe) first
  if best:
    first, second = best[0], best[1] if len(best) > 1 else None
    apart = second is None or all(min(first["datasets"][d]) > max(second["datasets"][d]) for d in first["datasets"])
    v = recipes.get("tuned").values  # the candidate the tuned recipe's values name, None if none does
    tuned = (candidate(v["pretrain_learning_rate"], v["corruption"], v["finetune_learning_rate"]).name
             if v.get("finetune_lr_schedule") == "cosine" and v.get("finetune_keep_best") else None)
    sentences.append(
        f"Chosen: `{first['candidate']}`, the confirm round's best score (mean validation accuracy over the datasets "
        "and seeds)" + ("" if apart else f"; its seeds' range overlaps the runner-up's (`{second['candidate']}`), so "
                        "the choice is within noise") + ". " + (
            "The tuned recipe (`common/settings/recipes.py`) holds its values." if tuned == first["candidate"] else
            f"The tuned recipe holds `{tuned}`, not the choice."))
  sentences.append("Candidates `pP_cC_fF`: pretraining rate P (plain SGD), corruption C, finetuning rate F with the "
                   "cosine schedule and the best validation epoch kept; `_constant`: a constant finetuning rate; "
                   "`_last`: the last epoch kept; `none_fF`: no pretraining; `report`: the report's values. "
                   + "; ".join(sizes.values()) + ". A candidate with a failed run (diverged) has no score.")
  header = ["round", "candidate"] + [f"{records.dataset_label(d)} validation accuracy" for d in datasets]
  return tables.md_table(header + ["score", "failed runs"], body), sentences


STUDIES = (Study(
    "pretraining_sweep", "Pretraining sweep: the tuned recipe, chosen on validation accuracy", sweep.SIZES,
    sweep.coarse_runs, sweep_table, kind="own", timed=False, order=15, later=(sweep.confirm_runs,)),)
