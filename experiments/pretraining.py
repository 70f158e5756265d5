"""The pretraining sweep's candidates: which hyperparameters the tuned recipe is chosen among (docs/pretraining.md).

Stage "coarse" runs every candidate at a small size (4 x 500 units, 5,500 images, 6 + 6 epochs), 3 seeds, on MNIST
and Fashion-MNIST; stage "confirm" runs the best few at the cpu preset's size (11,000 images, 12 + 12 epochs). A
candidate is ranked by its validation accuracy averaged over both datasets and the seeds; test accuracy is not read.
"""

import itertools
from typing import List, NamedTuple, Optional, Tuple

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
