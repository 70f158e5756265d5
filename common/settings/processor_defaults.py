"""What `auto` chooses on each class of processor: --kernels=auto (a program's kernel path), --thread_pool=auto (a
program's intra-op pool) and --finetune_placement=auto, per precision.

`TABLE` has one row per instruction-set class (`common.measure.provenance.instruction_set`: "AMX", "AVX-512 BF16",
"AVX2", ...) that a benchmark measured. It is edited by hand from the committed benchmark summaries (the rules:
docs/kernels_and_threads.md, "Defaults per processor class") and checked against them by
tests/test_processor_defaults.py, which derives it by those rules; the programs never read results/.
A class without a row, or a row without the setting, takes the nearest measured class's choice (`CLASS_ORDER`); a
setting no benchmark measured for a program keeps the program's declared default (`common.settings.programs`). The
run record says which class each choice came from (`sources`).
"""

import functools
from typing import Dict, Optional, Tuple

from common.measure import provenance

# From the most to the least capable matrix-product instructions; "nearest" is the closest position in this order,
# the more capable class of two as close.
CLASS_ORDER = ("AMX", "AVX-512 BF16", "AVX-512", "AVX2", "NEON BF16", "NEON", "older")
SETTINGS = ("kernels", "thread_pool", "finetune_placement")  # the first two per program, the last for every program

# Edited by hand; tests/test_processor_defaults.py checks it against the committed benchmark summaries.
# BEGIN TABLE
TABLE: Dict[str, Dict[str, dict]] = {'AMX': {'kernels': {'greedy': {'float32': 'tf', 'mixed_bfloat16': 'tf'},
                     'sync_layerwise': {'float32': 'tf', 'mixed_bfloat16': 'tf'},
                     'model_parallel': {'float32': 'tf', 'mixed_bfloat16': 'tf'},
                     'data_parallel': {'float32': 'tf', 'mixed_bfloat16': 'tf'},
                     'pipeline_parallel': {'mixed_bfloat16': 'tf'}},
         'thread_pool': {'pipeline_parallel': {'float32': 'shared', 'mixed_bfloat16': 'shared'}},
         'finetune_placement': {'float32': 'one_device', 'mixed_bfloat16': 'one_device'}},
 'AVX-512 BF16': {'thread_pool': {'pipeline_parallel': {'float32': 'shared', 'mixed_bfloat16': 'shared'}},
                  'finetune_placement': {'float32': 'one_device', 'mixed_bfloat16': 'one_device'}},
 'AVX2': {'thread_pool': {'pipeline_parallel': {'float32': 'shared'}}}}
# END TABLE


@functools.lru_cache(maxsize=None)
def this_class() -> Optional[str]:
  """This processor's instruction-set class (None when its flags cannot be read)."""
  return provenance.instruction_set(provenance.cpu_flags())


def choice(setting: str, precision: str, program: Optional[str] = None, isa: Optional[str] = None
           ) -> Tuple[Optional[str], Optional[str]]:
  """(the value of `setting` at `precision`, the class whose row gave it) for class `isa` (default: this processor's),
  from its row or the nearest measured class's; (None, None) when no class measured it.

  Args:
    setting: one of SETTINGS.
    precision: one of `common.settings.config.PRECISIONS`.
    program: the program's name for "kernels" and "thread_pool"; None for "finetune_placement".
    isa: an instruction-set class; None for this processor's.

  Raises:
    ValueError: an unknown setting.
  """
  if setting not in SETTINGS:
    raise ValueError(f"unknown setting {setting!r}; one of {', '.join(SETTINGS)}")
  isa = isa if isa is not None else this_class()
  start = CLASS_ORDER.index(isa) if isa in CLASS_ORDER else len(CLASS_ORDER) - 1
  for i in sorted(range(len(CLASS_ORDER)), key=lambda i: (abs(i - start), i)):
    row = TABLE.get(CLASS_ORDER[i], {}).get(setting, {})
    value = (row.get(program, {}) if program is not None else row).get(precision)
    if value:
      return value, CLASS_ORDER[i]
  return None, None


def sources(program: str, precision: str) -> Dict[str, Optional[str]]:
  """For a run record: this processor's class and, per setting, the class whose row gave `auto`'s choice (None: the
  program's declared default)."""
  return {"class": this_class(), **{s: choice(s, precision, None if s == "finetune_placement" else program)[1]
                                    for s in SETTINGS}}
