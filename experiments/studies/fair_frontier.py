"""The fair frontier (docs/pretraining.md, "The report's question asked fairly"): greedy, model_parallel and
pipeline_parallel each at every layer warm-up of `experiments.schedules.WARMUPS` (`--layer_warmup_epochs`, a setting
of every program), so that every schedule gets the knob; and greedy with only its first K layers pretrained
(`--pretrain_layers`), which says at this size which layers' pretraining moves the finetuned accuracy. Every run: the
tuned recipe, its warm-up named, a linear probe of every pretrained layer and its held-out reconstruction; 3 seeds,
MNIST and Fashion-MNIST. Each program's warm-up is then chosen by `choose` (a rule committed before the records it
reads), and the chosen arms run 2 more seeds (`confirm_runs`): the report's question answered best against best."""

import os
import statistics
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple

from matplotlib import figure as mpl_figure

from common.settings import programs
from experiments import records
from experiments import schedules
from experiments.presets import Run, Study, spec
from experiments.render import tables
from experiments.sweep import (CPU_ACCURACY, DATASETS, SEEDS, SHORT, SMOKE_ACCURACY, VAL, by_arm, gains,
                               heldout_means, spread_text)

NAME = "fair_frontier"
CONFIRM_SEEDS = (3, 4)  # the chosen arms' seeds beyond SEEDS: 5 in all
LINEAR_PROBE_EPOCHS = 10  # every run's linear probe (`common.training.linear_probe`)
BASE = schedules.warmup_arm(schedules.GREEDY, 0.0)[0]  # greedy without a warm-up: every difference's reference
OLD_STUDY = "pretraining_frontier"  # its stagger arms, drawn beside this study's (their own greedy the reference)
STAGGER_ARMS = ("pp_stagger0.5", "pp_stagger1", "pp_stagger2")


def layers_arm(k: int) -> Tuple[str, Any, Mapping[str, Any]]:
  """Greedy with its first `k` layers pretrained, no warm-up: ("greedy_k2", greedy, {...})."""
  return f"greedy_k{k}", schedules.GREEDY, {"layer_warmup_epochs": 0.0, "pretrain_layers": k}


def _spec(s: Mapping[str, Any], d: str, arm, seed: int) -> Run:
  name, program, settings = arm
  return spec(f"{SHORT[d]}_{name}_s{seed}", program, s["hidden"], s["epochs"], s["batch"], s["devices"],
              s["examples"], s["epochs"], settings={"recipe": "tuned", "dataset": d,
                                                   "linear_probe_epochs": LINEAR_PROBE_EPOCHS, **settings}, seed=seed)


def arms_of(s: Mapping[str, Any]) -> List:
  """The first round's arms at sizes `s`: every program at every warm-up, then greedy at K = 0 .. H - 1 pretrained
  layers (K = H is greedy's `BASE`)."""
  return list(schedules.FAIR_ARMS) + [layers_arm(k) for k in range(len(s["hidden"]))]


def fair_runs(s: Mapping[str, Any]) -> List[Run]:
  """Every arm per seed (outer) and dataset, at sizes `s` ({"hidden", "examples", "epochs", "batch", "devices"})."""
  return [_spec(s, d, arm, seed) for seed in s.get("seeds", SEEDS) for d in reversed(s.get("datasets", DATASETS))
          for arm in arms_of(s)]


def choose(runs: Mapping[str, dict], datasets: Sequence[str] = DATASETS,
           seeds: Sequence[int] = SEEDS) -> Dict[str, Tuple[float, float]]:
  """The rule, committed before the records it reads: for each program of `schedules.FAIR_PROGRAMS`, the warm-up w of
  `schedules.WARMUPS` with the highest mean validation accuracy over its `seeds` x `datasets` (a tie at 4 decimals
  goes to the smaller w). Test accuracy is not read, nor the confirm seeds. Returns {program name: (w, its mean)} for
  the programs whose every candidate has all its records."""
  found = by_arm(runs)
  chosen = {}
  for program in schedules.FAIR_PROGRAMS:
    scores = {}
    for w in schedules.WARMUPS:
      arm = schedules.warmup_arm(program, w)[0]
      rs = {d: found.get((SHORT[d], arm), {}) for d in datasets}
      values = [records.accuracy(rs[d][seed], VAL) for d in datasets for seed in seeds if seed in rs[d]]
      if len(values) < len(datasets) * len(seeds) or None in values:
        break  # a candidate without all its records: no choice for this program yet
      scores[w] = round(statistics.mean(values), 4)
    else:
      best = max(scores.values())
      chosen[program.name] = (min(w for w, v in scores.items() if v == best), best)
  return chosen


def confirm_runs(s: Mapping[str, Any], found) -> List[Run]:
  """The second round: each program's chosen warm-up (`choose` on the first round's records) on CONFIRM_SEEDS; none
  until every program's candidates have their records."""
  mine = records.of(found, NAME, s["preset"])
  datasets = s.get("datasets", DATASETS)
  chosen = choose(mine, datasets, s.get("seeds", SEEDS))
  if len(chosen) < len(schedules.FAIR_PROGRAMS):
    return []
  return [_spec(s, d, schedules.warmup_arm(program, chosen[program.name][0]), seed)
          for seed in s.get("confirm_seeds", CONFIRM_SEEDS) for d in reversed(datasets)
          for program in schedules.FAIR_PROGRAMS]


def _layers(values: Sequence[Optional[float]], digits: int) -> str:
  return " / ".join("—" if v is None else f"{v:.{digits}f}" for v in values)


def probe_means(rs: Sequence[dict], key: str = "validation_accuracy") -> List[Optional[float]]:
  """Each layer's linear-probe `key` accuracy (`linear_probe`), mean over the records `rs` that have one."""
  probes = [r["linear_probe"] for r in rs if r.get("linear_probe")]
  if not probes:
    return []
  return [statistics.mean(p[n][key] for p in probes) for n in range(len(probes[0]))]


def _row(d: str, name: str, rs: Mapping[int, dict], base: Mapping[int, dict]) -> List[Any]:
  first = [r for s, r in rs.items() if s in SEEDS]  # the means of reconstruction and probe: the first round's seeds
  return [records.dataset_label(d), f"`{name}`", len(rs), spread_text([records.accuracy(r, VAL) for r in rs.values()]),
          "—" if name == BASE else spread_text(gains(rs, base, VAL), digits=2),
          "—" if name == BASE else spread_text(gains(rs, base), digits=2),
          _layers(heldout_means(first), 1), _layers(probe_means(first), 3)]


def fair_table(data, others) -> Tuple[str, List[str]]:
  """Per dataset and arm: validation accuracy (mean, min–max over the seeds), validation and test accuracy minus
  greedy's without a warm-up of the same seed (points), held-out reconstruction and linear-probe validation accuracy
  per layer (means over the first 3 seeds); the rule's choice, and the answer best against best."""
  found, body = by_arm(data.runs), []
  names = [a[0] for a in list(schedules.FAIR_ARMS) + [layers_arm(k) for k in range(8)]]
  for d in DATASETS:
    for name in names:
      if (SHORT[d], name) in found:
        body.append(_row(d, name, found[(SHORT[d], name)], found.get((SHORT[d], BASE), {})))
  header = ["dataset", "arm", "seeds", "validation accuracy", "validation: vs greedy_w0 (points)",
            "test: vs greedy_w0 (points)", "held-out reconstruction per layer", "linear probe per layer (validation)"]
  chosen = choose(data.runs)
  sentences = [
      "Arms: `<program>_w<w>`, the layer warm-up of w epochs (`--layer_warmup_epochs`; greedy, model_parallel on 2 "
      "devices, pipeline_parallel on 2 devices with its other schedule settings original); `greedy_k<K>`: greedy with "
      "only its first K layers pretrained (`--pretrain_layers`; `greedy_w0` is K = every layer). Accuracy: mean "
      "(min–max) over the seeds; vs greedy_w0: points against the same seed's `greedy_w0`. Held-out reconstruction "
      "(nats per image, test images through the stack below) and the linear probe's validation accuracy "
      f"({LINEAR_PROBE_EPOCHS} epochs of plain SGD on each layer's clean codes): means over seeds "
      f"{', '.join(map(str, SEEDS))}, layer 1 first.",
      _rule_sentence(chosen), _best_against_best(found, chosen, data.output_dir)]
  return tables.md_table(header, body), sentences


def _rule_sentence(chosen: Mapping[str, Tuple[float, float]]) -> str:
  if not chosen:
    return "The rule (`choose`) has not been applied: not every candidate has its records."
  held = all(schedules.FAIR_CHOSEN.get(p) == w for p, (w, _) in chosen.items())
  return ("The rule (`choose`: per program, the warm-up with the highest mean validation accuracy over seeds "
          f"{', '.join(map(str, SEEDS))} and both datasets, a tie at 4 decimals to the smaller w; test accuracy not "
          "read) chose: " + "; ".join(f"{p} w = {w:g} (mean validation accuracy {v:.4f})"
                                      for p, (w, v) in chosen.items()) + ". " + (
              "`experiments.schedules.FAIR_CHOSEN` and the tuned recipe hold these." if held else
              "`experiments.schedules.FAIR_CHOSEN` holds another choice: " + ", ".join(
                  f"{p} w = {w:g}" for p, w in schedules.FAIR_CHOSEN.items()) + "."))


def _best_against_best(found, chosen: Mapping[str, Tuple[float, float]], output_dir: str) -> str:
  """Model parallel's and the pipeline's chosen arm against greedy's chosen arm, every seed both have (points), and
  their speedups over greedy from the newest benchmark summaries."""
  greedy = schedules.GREEDY.name
  if greedy not in chosen:
    return ""
  base = schedules.warmup_arm(schedules.GREEDY, chosen[greedy][0])[0]
  parts = []
  for program in schedules.FAIR_PROGRAMS[1:]:
    if program.name not in chosen:
      continue
    arm = schedules.warmup_arm(program, chosen[program.name][0])[0]
    per_dataset = []
    for d in DATASETS:
      rs, b = found.get((SHORT[d], arm), {}), found.get((SHORT[d], base), {})
      per_dataset.append(f"{records.dataset_label(d)} ({len(set(rs) & set(b))} seeds): validation "
                         f"{spread_text(gains(rs, b, VAL), digits=2)}, test {spread_text(gains(rs, b), digits=2)}")
    parts.append(f"`{arm}` minus `{base}`: " + "; ".join(per_dataset) + _speed(program, chosen[program.name][0],
                                                                                 output_dir))
  return "Best against best (points, mean (min–max) over the seeds): " + " — ".join(parts) + "."


# Where each program's speedup over greedy is measured: (the benchmark, the arm in its summary; None: the summary's
# one speedup over greedy). model_parallel's benchmark has the program's name.
SPEED = {programs.MODEL_PARALLEL: (programs.MODEL_PARALLEL.name, None), schedules.PP: ("pipeline_schedules", "pp")}


def _speed(program, warmup: float, output_dir: str) -> str:
  """", speedup over greedy <median (min–max)> (<benchmark>, <sizes>)" from the newest batch-100 summary; the layer
  warm-up changes no step's work, so the benchmark of the program without it stands."""
  benchmark, arm = SPEED.get(program, (None, None))
  if benchmark is None:
    return ""
  found = [s for name, s in records.load_summaries(output_dir, benchmark).items() if "variants" not in name and
           s["setting"].get("batch_size") == 100 and (arm in s["speedup_vs_greedy"] if arm else True)]
  if not found:
    return ""
  summary = max(found, key=lambda s: s["setting"].get("repeats", 0))
  spread = summary["speedup_vs_greedy"].get(arm) if arm else summary["speedup_vs_greedy"]
  if not spread:
    return ""
  s = summary["setting"]
  return (f"; speedup over greedy {tables.fmt(spread, 'spread')} (`{benchmark}` benchmark, "
          f"{len(s['hidden_units'])} × {s['hidden_units'][0]} units, batch {s['batch_size']}, {s['num_devices']} "
          "devices; the warm-up changes no step's work, so the figure without it stands)")


def fair_figure(data, others) -> mpl_figure.Figure:
  """Per dataset (rows): validation accuracy minus greedy_w0's against the warm-up, per program (mean, bars
  min–max over the seeds), the stagger arms of `pretraining_frontier` against their own greedy at the right; the
  linear probe's and the held-out reconstruction's layers for each program without and with its chosen warm-up; and
  greedy's validation accuracy against the layers pretrained."""
  found, chosen = by_arm(data.runs), choose(data.runs)
  old = by_arm(records.of(records.table(data.output_dir, {OLD_STUDY: "runs/{study}/{preset}_{run}.json"}), OLD_STUDY,
                          data.preset)) if data.output_dir and os.path.isdir(data.output_dir) else {}
  fig = mpl_figure.Figure(figsize=(18, 8))
  axes = fig.subplots(len(DATASETS), 4, squeeze=False)
  for row, d in zip(axes, DATASETS):
    base = found.get((SHORT[d], BASE), {})
    for program in schedules.FAIR_PROGRAMS:
      xs, means, lows, highs = [], [], [], []
      for w in schedules.WARMUPS:
        diffs = gains(found.get((SHORT[d], schedules.warmup_arm(program, w)[0]), {}), base, VAL)
        if diffs:
          xs.append(w)
          means.append(statistics.mean(diffs))
          lows.append(means[-1] - min(diffs))
          highs.append(max(diffs) - means[-1])
      if xs:
        row[0].errorbar(xs, means, yerr=[lows, highs], fmt="o-", capsize=3, color=program.color, label=program.label)
    top, ticks = max(schedules.WARMUPS), list(schedules.WARMUPS)
    labels = [f"{w:g}" for w in ticks]
    for k, arm in enumerate(STAGGER_ARMS):
      diffs = gains(old.get((SHORT[d], arm), {}), old.get((SHORT[d], schedules.BASELINE[0]), {}), VAL)
      if diffs:
        x = top + 1 + 0.5 * k
        row[0].errorbar([x], [statistics.mean(diffs)], yerr=[[statistics.mean(diffs) - min(diffs)],
                                                             [max(diffs) - statistics.mean(diffs)]],
                        fmt="s", color="0.4", capsize=3)
        ticks.append(x)
        labels.append(f"d={arm[len('pp_stagger'):]}")
    row[0].axhline(0.0, color="0.7", linestyle=":")
    row[0].set_xticks(ticks, labels, fontsize=8)
    row[0].set_title(f"{records.dataset_label(d)}: validation accuracy against the warm-up", fontsize=10)
    row[0].set_xlabel("layer warm-up w (epochs); squares: the pipeline's stagger d (vs its own greedy)")
    row[0].set_ylabel("minus greedy_w0's, same seed (points)")
    for ax, measure, label in ((row[1], lambda rs: probe_means(rs), "linear probe, validation accuracy"),
                               (row[2], heldout_means, "held-out reconstruction (nats per image)")):
      for program in schedules.FAIR_PROGRAMS:
        for w, style in ((0.0, "o--"), (chosen.get(program.name, (None,))[0], "o-")):
          rs = [r for s, r in found.get((SHORT[d], schedules.warmup_arm(program, w or 0.0)[0]), {}).items()
                if s in SEEDS] if w is not None else []
          values = measure(rs) if rs else []
          if values and not (w == 0.0 and style == "o-"):
            ax.plot(range(1, len(values) + 1), values, style, color=program.color, markersize=3,
                    label=f"{program.run_name} w={w:g}")
      ax.set_title(f"{records.dataset_label(d)}: {label}", fontsize=10)
      ax.set_xlabel("layer")
      ax.xaxis.get_major_locator().set_params(integer=True)
    ks = sorted((int(n[len("greedy_k"):]), rs) for (short, n), rs in found.items()
                if short == SHORT[d] and n.startswith("greedy_k"))
    if base:
      ks.append((len(next(iter(base.values()))["config"]["hidden_units"]), base))
    if ks:
      values = [[records.accuracy(r, VAL) for s, r in rs.items() if s in SEEDS] for _, rs in ks]
      row[3].errorbar([k for k, _ in ks], [statistics.mean(v) for v in values],
                      yerr=[[statistics.mean(v) - min(v) for v in values],
                            [max(v) - statistics.mean(v) for v in values]],
                      fmt="o-", capsize=3, color=schedules.GREEDY.color)
    row[3].set_title(f"{records.dataset_label(d)}: greedy, first K layers pretrained", fontsize=10)
    row[3].set_xlabel("K, the layers pretrained")
    row[3].set_ylabel("validation accuracy")
    for ax in row[:3]:
      if ax.get_legend_handles_labels()[0]:
        ax.legend(fontsize=7)
  fig.suptitle("The report's question asked fairly: every schedule with the layer warm-up", fontsize=12)
  fig.text(0.01, 0.005, records.machine_label(list(data.runs.values())), fontsize=7, family="monospace")
  fig.tight_layout(rect=(0, 0.02, 1, 0.97))
  return fig


STUDIES = (Study(
    NAME, "The report's question asked fairly: every schedule with the layer warm-up, the layers compared",
    dict(pretraining=dict(CPU_ACCURACY, devices=2),
         smoke=dict(SMOKE_ACCURACY, devices=2, confirm_seeds=(1,))),
    fair_runs, fair_table, fair_figure, kind="own", order=19, timed=False, later=(confirm_runs,)),)
