"""The schedule arms that the frontier studies (`studies/pretraining_frontier.py`, `studies/fair_frontier.py`) and
the speed benchmark (`benchmarks/pipeline_schedules.py`) compare, declared once: (name in run names, program,
settings). Every arm names all its schedule settings (`common.pipeline.schedule`, and the layer warm-up of every
program), so that its records stay its own whatever a recipe sets."""

from typing import Any, Mapping, Optional, Tuple

from common.settings import programs

GREEDY, PP = programs.GREEDY, programs.PIPELINE_PARALLEL
ORIGINAL = {"pretrain_lr_schedule": "constant", "layer_warmup_epochs": 0.0, "stagger_epochs": 0.0, "polish_epochs": 0}
Arm = Tuple[str, programs.Program, Mapping[str, Any]]
BASELINE: Arm = (GREEDY.run_name, GREEDY, {})
PIPELINE_ARMS: Tuple[Arm, ...] = (
    ("pp", PP, ORIGINAL),
    ("pp_cosine", PP, dict(ORIGINAL, pretrain_lr_schedule="cosine")),
    ("pp_warmup1", PP, dict(ORIGINAL, layer_warmup_epochs=1.0)),
    ("pp_warmup2", PP, dict(ORIGINAL, layer_warmup_epochs=2.0)),
    ("pp_stagger0.5", PP, dict(ORIGINAL, stagger_epochs=0.5)),
    ("pp_stagger1", PP, dict(ORIGINAL, stagger_epochs=1.0)),
    ("pp_stagger2", PP, dict(ORIGINAL, stagger_epochs=2.0)),
    ("pp_polish1", PP, dict(ORIGINAL, polish_epochs=1)),
)
# The other schedules that train several layers at once, for comparison.
OTHERS: Tuple[Arm, ...] = (("mp", programs.MODEL_PARALLEL, {}), ("sl", programs.SYNC_LAYERWISE, {}))
ARMS: Tuple[Arm, ...] = (BASELINE, PIPELINE_ARMS[0]) + OTHERS + PIPELINE_ARMS[1:]

# The arm the frontier's rule chose (`choose` in studies/pretraining_frontier.py, docs/pretraining.md): run with
# greedy on more seeds at the frontier's size and at full size (studies/full_size.py). None before the rule is applied.
CHOSEN: Optional[str] = "pp_warmup2"


def original(program: programs.Program) -> Mapping[str, Any]:
  """ORIGINAL for pipeline_parallel, {} for another program: the schedule a committed study's pipeline runs pin, so
  that their records keep naming the schedule they ran whatever schedule a recipe gives the pipeline (every run pins
  the layer warm-up: `experiments.presets.spec`)."""
  return ORIGINAL if program is PP else {}


# The fair frontier (`studies/fair_frontier.py`): greedy, model_parallel and pipeline_parallel, each at every layer
# warm-up of WARMUPS (`--layer_warmup_epochs`, a setting of every program), the pipeline's other settings original.
WARMUPS = (0.0, 1.0, 2.0, 4.0)
FAIR_PROGRAMS = (GREEDY, programs.MODEL_PARALLEL, PP)


def warmup_arm(program: programs.Program, warmup: float) -> Arm:
  """`program` with layer warm-up `warmup` epochs, e.g. ("mp_w2", model_parallel, {"layer_warmup_epochs": 2.0})."""
  return (f"{program.run_name}_w{warmup:g}", program, dict(original(program), layer_warmup_epochs=float(warmup)))


FAIR_ARMS: Tuple[Arm, ...] = tuple(warmup_arm(p, w) for p in FAIR_PROGRAMS for w in WARMUPS)
# Each program's layer warm-up the fair frontier's rule chose (`choose` in studies/fair_frontier.py, on its records):
# the tuned recipe gives it (`common.settings.recipes`; sync_layerwise model_parallel's, data_parallel and
# async_data_parallel greedy's: tests/test_recipes.py), and the full-size runs pin it (studies/full_size.py).
FAIR_CHOSEN: Mapping[str, float] = {GREEDY.name: 2.0, programs.MODEL_PARALLEL.name: 1.0, PP.name: 1.0}


def arm(name: str) -> Arm:
  """The arm called `name` among ARMS; KeyError for another name."""
  found = [a for a in ARMS if a[0] == name]
  if not found:
    raise KeyError(f"no schedule arm {name!r}; the arms: {', '.join(a[0] for a in ARMS)}")
  return found[0]
