"""Recipes: named sets of hyperparameters (`--recipe=NAME`), each declared once here.

A recipe gives values to settings declared with `recipe=True` (`common.settings.config.setting`); a setting the recipe leaves
out keeps its declared default, which is the report's value, so `report` is the empty recipe. A flag given
explicitly overrides the recipe's value. The run record's config holds the recipe's name and every resolved value,
and the recipe is a training setting (a resumed run must use the same one).

`python -m common.run.recipes [NAME] [--program=PROGRAM]` prints a recipe's resolved values (the command sits
above the program registry, which this module is below).

  report       the report's original implementation: plain SGD at 1e-4 for pretraining, 0.1 for finetuning,
               masking noise 0.5, 30 + 30 epochs (reference/original implementation values; docs/pretraining.md).
  tuned        chosen on the validation splits of MNIST and Fashion-MNIST together by the `pretraining_sweep`
               study (docs/pretraining.md): the same model and update rule, other rates, corruption and schedule;
               and each program's layer warm-up (`--layer_warmup_epochs`), chosen by the `fair_frontier` study's rule
               on validation accuracy (docs/pretraining.md, "The report's question asked fairly"): greedy's 2 epochs
               (data_parallel's and async_data_parallel's too, which compute greedy's steps), model_parallel's 1
               (sync_layerwise's too, model_parallel with G = H) and pipeline_parallel's 1.
  large_batch  data_parallel at a large global batch (Goyal et al. 2017, "Accurate, Large Minibatch SGD", sections
               2.1-2.2): chosen on validation accuracy by the `large_batch` study (docs/data_parallel.md).
"""

import dataclasses
from typing import Any, Mapping, Tuple


@dataclasses.dataclass(frozen=True)
class Recipe:
  """A named set of hyperparameters.

  Attributes:
    name: the value of `--recipe`.
    summary: one line for `--help` and the docs.
    values: {Config field: value} for the settings it changes from their declared (the report's) defaults, for every
      program (a program that lacks one of these settings refuses the recipe).
    program_values: {program: {field: value}}: values for one program only (its own settings, or another value of a
      shared one), over `values`; the other programs leave them out.
  """
  name: str
  summary: str
  values: Mapping[str, Any] = dataclasses.field(default_factory=dict)
  program_values: Mapping[str, Mapping[str, Any]] = dataclasses.field(default_factory=dict)


RECIPES: Tuple[Recipe, ...] = (
    Recipe("report", "the report's values (plain SGD, pretraining rate 1e-4, finetuning rate 0.1, corruption 0.5, "
           "30 + 30 epochs)"),
    Recipe("tuned", "chosen on validation accuracy of MNIST and Fashion-MNIST by the pretraining_sweep study, each "
           "program's layer warm-up by the fair_frontier study",
           {"pretrain_learning_rate": 0.3, "corruption": 0.25, "finetune_learning_rate": 3.0,
            "finetune_lr_schedule": "cosine", "finetune_keep_best": True},
           program_values={"greedy": {"layer_warmup_epochs": 2.0}, "data_parallel": {"layer_warmup_epochs": 2.0},
                           "async_data_parallel": {"layer_warmup_epochs": 2.0},
                           "model_parallel": {"layer_warmup_epochs": 1.0},
                           "sync_layerwise": {"layer_warmup_epochs": 1.0},
                           "pipeline_parallel": {"layer_warmup_epochs": 1.0}}),
    Recipe("large_batch", "data_parallel at a large global batch: pretraining rate scaled linearly with the batch, "
           "finetuning with Adam at 4e-4 scaled by sqrt, 2 warm-up epochs",
           {"pretrain_lr_scaling": "linear", "finetune_optimizer": "adam", "finetune_learning_rate": 0.0004,
            "finetune_lr_scaling": "sqrt", "lr_warmup_epochs": 2.0}),
)
NAMES = tuple(r.name for r in RECIPES)
DEFAULT = NAMES[0]


def get(name: str) -> Recipe:
  """The recipe called `name`.

  Raises:
    ValueError: one line naming the recipes, for an unknown name.
  """
  for recipe in RECIPES:
    if recipe.name == name:
      return recipe
  raise ValueError(f"--recipe must be one of {', '.join(NAMES)}, got {name!r}.")
