"""The pretraining sweep's candidates, rounds and selection (docs/pretraining.md), and what the pretraining studies
share (seeds, datasets, sizes, `by_arm`, `gains`, `heldout_means`, `spread_text`), below the study files. Round
"coarse" runs every candidate at a small size (4 x 500 units, 5,500 images, 6 + 6 epochs), 3 seeds, on MNIST and
Fashion-MNIST; round "confirm" the best few at the cpu preset's size (11,000 images, 12 + 12 epochs). A candidate is
ranked by its validation accuracy averaged over both datasets and the seeds; test accuracy is not read."""

import itertools
from typing import Any, List, Mapping, NamedTuple, Optional, Sequence, Tuple

from common.settings import programs
from experiments import records
from experiments.presets import Run, spec

NAME = "pretraining_sweep"  # the study (experiments/studies/pretraining_sweep.py), whose records its later round reads
SEEDS = (0, 1, 2)
DATASETS = ("mnist", "fashion_mnist")
SHORT = {"mnist": "mnist", "fashion_mnist": "fashion"}
VAL = "validation_accuracy"  # finetuning's best (kept) epoch's, as a record gives it
# The grid: plain SGD pretraining rates, masking-noise levels, finetuning rates (all finetuning with the cosine
# schedule and the best validation epoch kept); and without pretraining, the finetuning rates alone.
PRETRAIN_RATES = (0.03, 0.1, 0.3, 1.0)
CORRUPTIONS = (0.1, 0.25, 0.5)
FINETUNE_RATES = (0.3, 1.0, 3.0)
CONFIRMED = 3  # the best coarse candidates (by `rows`' score) confirmed at the cpu preset's size


class Candidate(NamedTuple):
  """A set of hyperparameters: its name in run names and its settings ({field: value}, beside the size's)."""
  name: str
  settings: Mapping[str, Any]
  pretrained: bool = True


def candidate(pretrain_rate: float, corruption: float, finetune_rate: float, schedule: str = "cosine",
              keep_best: bool = True) -> Candidate:
  """The candidate with these values."""
  name = f"p{pretrain_rate:g}_c{corruption:g}_f{finetune_rate:g}" + ("" if schedule == "cosine" else f"_{schedule}")
  return Candidate(name, dict(pretrain_learning_rate=pretrain_rate, corruption=corruption,
                              finetune_learning_rate=finetune_rate, finetune_lr_schedule=schedule,
                              finetune_keep_best=keep_best))


def no_pretraining(finetune_rate: float) -> Candidate:
  """Finetuning from the initial weights at this rate (--pretrain_epochs=0 is set by the run)."""
  return Candidate(f"none_f{finetune_rate:g}", dict(finetune_learning_rate=finetune_rate,
                                                   finetune_lr_schedule="cosine", finetune_keep_best=True), False)

def coarse_candidates(grid_points: Optional[int] = None) -> List[Candidate]:
  """The coarse round: the grid (its first `grid_points`: smoke), no pretraining at each finetuning rate, the report."""
  grid = [candidate(p, c, f) for p, c, f in itertools.product(PRETRAIN_RATES, CORRUPTIONS, FINETUNE_RATES)]
  return grid[:grid_points] + [no_pretraining(f) for f in FINETUNE_RATES[:grid_points]] + [REPORT]


def run_name(round_: str, dataset: str, cand: Candidate, seed: int) -> str:
  """e.g. "coarse_mnist_p0.1_c0.25_f1_s0"."""
  return f"{round_}_{SHORT[dataset]}_{cand.name}_s{seed}"


def parse(run: str) -> Tuple[str, str, str, int]:
  """(round_, dataset, candidate, seed) of a sweep run's name, e.g. "coarse_mnist_p0.1_c0.25_f1_s0"."""
  round_, short, rest = run.split("_", 2)
  name, seed = rest.rsplit("_s", 1)
  return round_, {v: k for k, v in SHORT.items()}[short], name, int(seed)


def rows(runs: dict, round_: str, datasets: Sequence[str] = DATASETS) -> List[dict]:
  """Per candidate of `round_` (records' names in order): {"candidate", "pretrained", "datasets": {dataset: [validation
  accuracy per finished run]}, "failed" (runs), "score" (None unless every run of both datasets finished)}."""
  out: dict = {}
  for (_, dataset, cand, _), record in ((parse(n), r) for n, r in sorted(runs.items()) if parse(n)[0] == round_):
    row = out.setdefault(cand, {"candidate": cand, "pretrained": not cand.startswith("none") and
                                record["config"].get("pretrain_epochs", 1) > 0, "datasets": {}, "failed": 0})
    value = records.accuracy(record, VAL)  # None for a run that failed: its record has no finetuning
    row["failed"] += value is None
    if value is not None:
      row["datasets"].setdefault(dataset, []).append(value)
  for row in out.values():
    complete = not row["failed"] and set(row["datasets"]) == set(datasets)
    row["score"] = sum(sum(v) / len(v) for v in row["datasets"].values()) / len(datasets) if complete else None
  return list(out.values())


def ranked(round_rows: List[dict]) -> List[dict]:
  """The grid's pretrained candidates with a score, best first (the report's only a reference): [0] is the choice."""
  return sorted((r for r in round_rows if r["pretrained"] and r["score"] is not None and r["candidate"] != REPORT.name),
                key=lambda r: -r["score"])


def confirm_candidates(coarse_rows: List[dict]) -> List[Candidate]:
  """The confirm round: the CONFIRMED best coarse candidates, the best with a constant finetuning rate and with its last
  epoch kept, the best without pretraining, the report's values; empty until every coarse candidate has records."""
  best = ranked(coarse_rows)
  if not best or any(r["score"] is None and not r["failed"] for r in coarse_rows):
    return []
  by_name = {c.name: c for c in coarse_candidates()}
  top = [by_name[r["candidate"]] for r in best[:CONFIRMED]]
  p, c, f = (float(x[1:]) for x in top[0].name.split("_")[:3])
  none = max((r for r in coarse_rows if not r["pretrained"] and r["score"] is not None and r["candidate"] != "report"),
             key=lambda r: r["score"])
  last = Candidate(f"{top[0].name}_last", candidate(p, c, f, keep_best=False).settings)
  return top + [candidate(p, c, f, "constant"), last, by_name[none["candidate"]], REPORT]


def spread_text(values: Sequence[float], digits: int = 4) -> str:
  """"mean (min–max)" of `values` to `digits` decimals; the value alone when there is one; "—" when there is none.
  A value that rounds to zero is written without a sign."""
  if not values:
    return "—"

  def fixed(x: float) -> str:
    text = f"{x:.{digits}f}"
    return text.lstrip("-") if float(text) == 0 else text
  mean = fixed(sum(values) / len(values))
  return mean if len(values) == 1 else f"{mean} ({fixed(min(values))}–{fixed(max(values))})"


def by_arm(runs: dict) -> dict:
  """{(dataset short name, arm): {seed: record}} of records named <dataset>_<arm>_s<seed>."""
  out: dict = {}
  for name, r in runs.items():
    short, rest = name.split("_", 1)
    arm, seed = rest.rsplit("_s", 1)
    out.setdefault((short, arm), {})[int(seed)] = r
  return out


def gains(rs: Mapping[int, dict], base: Mapping[int, dict], key: str = "test_accuracy") -> List[float]:
  """Points (100 x) of `key` accuracy by which each of `rs` ({seed: record}) beats `base`'s, over common seeds."""
  return [100 * (records.accuracy(rs[s], key) - records.accuracy(base[s], key)) for s in sorted(rs) if s in base]


def heldout_means(rs: Sequence[dict]) -> List[float]:
  """Each layer's held-out reconstruction loss at the end of pretraining (`heldout_reconstruction`), mean over `rs`."""
  return [sum(layer) / len(layer) for layer in zip(*([h["loss"] for h in r["heldout_reconstruction"]] for r in rs))]


REPORT = Candidate("report", {})  # the report's values, a reference among the candidates
# The pretraining studies' sizes: the cpu preset's accuracy size, 3 seeds, MNIST and Fashion-MNIST.
CPU_ACCURACY = dict(examples=11_000, epochs=12, hidden=(500,) * 4, batch=100)
SMOKE_ACCURACY = dict(examples=400, epochs=1, hidden=(16, 16), batch=40, seeds=(0,), datasets=("mnist",))
# The sweep's sizes per preset: its coarse round_, its confirm round (the pretraining studies' accuracy size).
SIZES = dict(
    pretraining=dict(coarse=dict(examples=5500, epochs=6, hidden=(500,) * 4, batch=100), confirm=CPU_ACCURACY),
    smoke=dict(coarse=SMOKE_ACCURACY, confirm=SMOKE_ACCURACY, grid_points=1, seeds=(0,), datasets=("mnist",)))


def _runs(s, round_: str, candidates: Sequence[Candidate]) -> List[Run]:
  """Greedy runs of `candidates` at `round_`'s size of sizes `s`, per dataset and seed; each may fail (diverge)."""
  size = s[round_]
  return [spec(run_name(round_, d, cand, seed), programs.GREEDY, size["hidden"], size["epochs"] if cand.pretrained
               else 0, size["batch"], 1, size["examples"], size["epochs"], settings={**cand.settings, "dataset": d},
               seed=seed, may_fail=True)
          for cand in candidates for d in s.get("datasets", DATASETS) for seed in s.get("seeds", SEEDS)]


def coarse_runs(s) -> List[Run]:
  """The sweep's first round: every coarse candidate at sizes `s` (`SIZES` of a preset)."""
  return _runs(s, "coarse", coarse_candidates(s.get("grid_points")))


def confirm_runs(s, found) -> List[Run]:
  """The sweep's second round: its confirm candidates from the coarse records in `found`; none until all have one."""
  mine, coarse = records.of(found, NAME, s["preset"]), coarse_runs(s)
  if any(r.name not in mine for r in coarse):
    return []
  return _runs(s, "confirm", confirm_candidates(rows({r.name: mine[r.name] for r in coarse}, "coarse",
                                                     s.get("datasets", DATASETS))))
