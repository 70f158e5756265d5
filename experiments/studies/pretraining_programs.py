"""The report's question asked again with the tuned recipe: every program against greedy, 3 seeds, MNIST and
Fashion-MNIST, with the time to greedy's held-out reconstruction and validation accuracy (docs/pretraining.md)."""

from typing import List, Optional, Sequence, Tuple

from common.settings import programs
from experiments import harness, records, schedules
from experiments.presets import Study, spec
from experiments.render import tables
from experiments.sweep import (CPU_ACCURACY, DATASETS, SEEDS, SHORT, SMOKE_ACCURACY, VAL, by_arm, gains,
                               heldout_means, spread_text)

# A check of one cause of the Fashion-MNIST loss (docs/pretraining.md): the same pretraining, finetuning
# FINETUNE_FACTOR times as many epochs (the tuned recipe's cosine schedule stretched over them), for greedy and the
# two programs that lost accuracy; accuracy only (no held-out curves, and its seconds are compared with none).
FINETUNE_FACTOR, LONGER = 3, "_longer"
LONGER_PROGRAMS = (programs.baseline(), programs.MODEL_PARALLEL, programs.PIPELINE_PARALLEL)


def comparison_runs(s: dict) -> list:
  """The comparison's runs at sizes `s` ({"hidden", "examples", "epochs", "batch", "devices"}): every registered
  program with the tuned recipe on `devices` devices (one for a one-device program), and pipeline_parallel with two
  replicas per stage on 2 x `devices`, per dataset and seed, each layer's held-out reconstruction after every epoch;
  then, per dataset of s["longer"], the `LONGER_PROGRAMS` finetuning FINETUNE_FACTOR times as long."""
  def run(d, seed, name, p, devices, finetune_epochs, own):
    return spec(f"{SHORT[d]}_{name}_s{seed}", p, s["hidden"], s["epochs"], s["batch"], devices, s["examples"],
                finetune_epochs, settings={"recipe": "tuned", "dataset": d, **schedules.original(p), **own}, seed=seed)
  variants = [(p.run_name, p, s["devices"], dict(p.timing_settings)) for p in programs.PROGRAMS] + [
      ("pp_r2", programs.PIPELINE_PARALLEL, 2 * s["devices"], {"replicas_per_stage": 2})]
  seeds = s.get("seeds", SEEDS)
  return [run(d, seed, name, p, g, s["epochs"], {"heldout_every_epoch": True, **own})
          for d in s.get("datasets", DATASETS) for seed in seeds for name, p, g, own in variants] + [
      run(d, seed, p.run_name + LONGER, p, s["devices"], FINETUNE_FACTOR * s["epochs"], dict(p.timing_settings))
      for d in s.get("longer", ()) for seed in seeds for p in LONGER_PROGRAMS]


def programs_table(data, others) -> Tuple[str, List[str]]:
  """Per dataset and program: test accuracy (mean, min–max), its difference from greedy's of the same seed, held-out
  reconstruction per layer, and the seconds to greedy's final held-out reconstruction and validation accuracy."""
  found, body = by_arm(data.runs), []  # {(dataset short name, variant): {seed: record}}
  names = {p.run_name: p.label for p in programs.PROGRAMS}
  names["pp_r2"] = f"{programs.PIPELINE_PARALLEL.label}, 2 replicas per stage"
  names.update({p.run_name + LONGER: f"{p.label}, finetuning {FINETUNE_FACTOR}x as long" for p in LONGER_PROGRAMS})
  for d in DATASETS:
    for variant, label in ((v, label) for v, label in names.items() if found.get((SHORT[d], v))):
      longer, rs = variant.endswith(LONGER), found[(SHORT[d], variant)]
      base = programs.baseline().run_name + (LONGER if longer else "")
      greedy, seeds = found.get((SHORT[d], base), {}), sorted(rs)
      over = any(records.oversubscribed(r) for r in rs.values())
      to_loss = [harness.seconds_to_loss_of(rs[s], greedy[s]) for s in seeds if s in greedy]  # within 1% of its final
      to_acc = [_seconds_to_accuracy(rs[s], greedy[s]) for s in seeds if s in greedy]
      body.append([records.dataset_label(d), label + (" †" if over else ""), records.devices(rs[seeds[0]]),
                   spread_text([records.accuracy(r) for r in rs.values()]),
                   "—" if variant == base else spread_text(gains(rs, greedy), digits=2),
                   "—" if variant == base else spread_text(gains(rs, greedy, VAL), digits=2),
                   " / ".join(f"{x:.0f}" for x in heldout_means(list(rs.values()))),
                   "—" if over or longer else _median(to_loss), "—" if over or longer else _median(to_acc)])
  one = next(iter(data.runs.values()))["config"]
  return tables.md_table(
      ["dataset", "program", "devices", "test accuracy", "vs greedy (points, same seed)", "validation: vs greedy",
       "held-out reconstruction per layer", "s to greedy's held-out", "s to greedy's validation accuracy"], body), [
      f"The tuned recipe, {len(one['hidden_units'])} x {one['hidden_units'][0]} units, {one['train_examples']:,} "
      f"images, {one['pretrain_epochs']} + {one['finetune_epochs']} epochs, batch {one['batch_size']}; "
      f"{len({s for v in found.values() for s in v})} seeds; mean (min–max) over them. Seconds (median over the "
      "seeds): wall seconds of pretraining until every layer's held-out reconstruction is within 1% of greedy's final "
      "one (same seed), and of pretraining plus finetuning until a finetuning epoch's validation accuracy reaches "
      "greedy's final one; — never, or oversubscribed. " + tables.DAGGER,
      f"The rows \"finetuning {FINETUNE_FACTOR}x as long\" check one cause of a loss: the same pretraining, then "
      f"{FINETUNE_FACTOR} times as many finetuning epochs (the cosine schedule over all of them), each compared with "
      "greedy finetuned as long; they measure accuracy only (no held-out curves, no seconds).",
      f"Machine: {records.machine_label(list(data.runs.values()))}; the runs ran one at a time."]


def _median(values: Sequence[Optional[float]]) -> str:
  if not values or any(v is None for v in values):
    reached = [v for v in values if v is not None]
    return "—" if not reached else f"{sorted(reached)[len(reached) // 2]:.0f} ({len(reached)} of {len(values)})"
  v = sorted(values)
  return f"{(v[len(v) // 2] + v[(len(v) - 1) // 2]) / 2:.0f}"


def _seconds_to_accuracy(record: dict, greedy: dict) -> Optional[float]:
  """Pretraining seconds plus finetuning seconds until an epoch's validation accuracy reaches greedy's final one."""
  target, elapsed = records.accuracy(greedy, VAL), record["pretrain_seconds"]
  for epoch in (record.get("finetune") or {}).get("history", []):
    elapsed += epoch["seconds"]
    if epoch["validation_accuracy"] >= target:
      return elapsed
  return None


STUDIES = (Study(
    "pretraining_programs", "The report's question asked again with the tuned recipe: every program against greedy",
    dict(pretraining=dict(CPU_ACCURACY, devices=2, longer=("fashion_mnist",)), smoke=dict(SMOKE_ACCURACY, devices=2)),
    comparison_runs, programs_table, kind="own", order=17,
    timed=lambda run: not run.rsplit("_s", 1)[0].endswith(LONGER)),)  # the longer finetuning: accuracy only
