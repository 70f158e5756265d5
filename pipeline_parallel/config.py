"""The pipeline_parallel configuration: the shared `Config` plus the chunk size of the pipeline."""

import dataclasses
from typing import Any, Mapping

from common import config as config_lib
from common import programs

# Steps per chunk, K: the fastest of 1..32 at the default batch (100) in the sweep of docs/pipeline_parallel.md,
# "Speed" (at batch 1000, K = 1 was fastest). A smaller K shortens
# the fill and drain (P - 1 chunks each) and the in-flight activations ([K x batch, units] per stage
# boundary); a larger K means fewer ticks, each of which waits for its slowest stage and costs a call.
DEFAULT_CHUNK_STEPS = 4


@dataclasses.dataclass(frozen=True)
class PipelineConfig(config_lib.Config):
  """`Config` plus `pipeline_chunk_steps`: K, the steps a stage trains between two exchanges of
  activations with its neighbours (clamped to the steps of one epoch). The weights do not depend on it."""
  strategy: str = programs.PIPELINE_PARALLEL.name
  pipeline_chunk_steps: int = DEFAULT_CHUNK_STEPS

  def __post_init__(self):
    super().__post_init__()
    check(dataclasses.asdict(self))


def check(values: Mapping[str, Any]) -> None:
  """Validates the pipeline's own fields.

  Raises:
    ValueError: one line naming the flag.
  """
  if "pipeline_chunk_steps" in values:
    v = values["pipeline_chunk_steps"]
    if isinstance(v, bool) or not isinstance(v, int) or v < 1:
      raise ValueError(f"--pipeline_chunk_steps must be a positive integer (steps per chunk), got {v!r}.")
