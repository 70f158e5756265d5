"""Stages and chunks of the layer-pipelined schedule (pure Python, no TensorFlow).

The H layers are split into P = min(devices / R, H) contiguous stages, each on R devices (R replicas per stage,
`--replicas_per_stage`; stage p's replicas on devices p R .. p R + R - 1), so that the costliest
stage is as cheap as possible (the classic linear partition problem, solved exactly by dynamic
programming); costs come from `common.measure.cost.pipeline_layer_epoch_flops`. The steps t = 0 .. T-1 of the
run are cut into chunks of K steps; in tick k, stage p trains on chunk k - p (if it exists), so the
pipeline fills during the first P - 1 ticks and drains during the last P - 1 (GPipe's "bubble", Huang et
al. 2019, "GPipe: Efficient Training of Giant Neural Networks using Pipeline Parallelism", section 2.3).
"""

import dataclasses
from typing import Dict, List, Sequence, Tuple

from common.measure import cost


# The exact contiguous split of the layers into stages (shared with the pipelined finetuning: `common.measure.cost`).
partition = cost.partition


@dataclasses.dataclass(frozen=True)
class Plan:
  """The stages, chunks and ticks of a pipelined run.

  Attributes:
    hidden_units: the stack, bottom first.
    num_devices: devices available (P R of them are used, P = min(num_devices / R, H)).
    total_steps: T = epochs x steps per epoch.
    chunk_steps: K, steps per chunk (already clamped to 1..T).
    replicas_per_stage: R, the devices of each stage, splitting every batch.
    input_units: D, the inputs of layer 1 (the data's).
  """
  hidden_units: Tuple[int, ...]
  num_devices: int
  total_steps: int
  chunk_steps: int
  replicas_per_stage: int = 1
  input_units: int = cost.INPUT_UNITS

  def __post_init__(self):
    r = self.replicas_per_stage
    if (self.num_devices < 1 or self.total_steps < 1 or not 1 <= self.chunk_steps <= self.total_steps or r < 1
        or self.num_devices % r):
      raise ValueError(f"invalid plan: devices {self.num_devices}, total steps {self.total_steps}, "
                       f"chunk steps {self.chunk_steps}, replicas per stage {r}")
    object.__setattr__(self, "hidden_units", tuple(int(u) for u in self.hidden_units))

  @property
  def layer_costs(self) -> List[float]:
    """FLOPs of each layer per training example in the pipelined schedule (`common.measure.cost`)."""
    return [cost.pipeline_layer_epoch_flops(self.hidden_units, n, 1, self.input_units)
            for n in range(1, len(self.hidden_units) + 1)]

  @property
  def stages(self) -> List[List[int]]:
    """0-based layers of each stage, bottom first."""
    return partition(self.layer_costs, min(self.num_devices // self.replicas_per_stage, len(self.hidden_units)))

  @property
  def stage_of(self) -> Dict[int, Tuple[int, int]]:
    """{0-based layer: (its stage, its 0-based position in the stage)}."""
    return {i: (p, m) for p, stage in enumerate(self.stages) for m, i in enumerate(stage)}

  @property
  def num_stages(self) -> int:
    """P, the stages (one device each, or R replicas)."""
    return len(self.stages)

  @property
  def stage_costs(self) -> List[float]:
    """FLOPs of each stage per training example."""
    costs = self.layer_costs
    return [sum(costs[i] for i in stage) for stage in self.stages]

  @property
  def predicted_balance(self) -> float:
    """Mean stage cost / largest stage cost, in (0, 1]: 1 when every device has the same work."""
    costs = self.stage_costs
    return sum(costs) / (len(costs) * max(costs))

  @property
  def num_chunks(self) -> int:
    """Chunks of `chunk_steps` steps in `total_steps` (the last one may be shorter)."""
    return -(-self.total_steps // self.chunk_steps)

  @property
  def num_ticks(self) -> int:
    """Chunks plus the fill: num_chunks + P - 1."""
    return self.num_chunks + self.num_stages - 1

  def chunk(self, index: int) -> Tuple[int, int]:
    """(first step, number of steps) of chunk `index`; (0, 0) for an index outside 0..num_chunks-1."""
    if not 0 <= index < self.num_chunks:
      return 0, 0
    first = index * self.chunk_steps
    return first, min(self.chunk_steps, self.total_steps - first)

  def tick(self, index: int) -> List[Tuple[int, int]]:
    """(first step, number of steps) that each stage trains in tick `index` (stage p: chunk index - p)."""
    return [self.chunk(index - p) for p in range(self.num_stages)]

  def critical_path_flops(self, examples_per_step: int) -> float:
    """FLOPs the busiest device computes back to back over the whole run, if every tick lasts as long as
    its costliest active stage: the bound of the schedule given equal devices (fill and drain included; a
    replica computes 1/R of its stage's examples; the all-reduce is not counted)."""
    costs = self.stage_costs
    share = examples_per_step / self.replicas_per_stage
    return sum(max((costs[p] * n * share for p, (_, n) in enumerate(self.tick(k))), default=0.0)
               for k in range(self.num_ticks))

  def stage_devices(self, names: Sequence[str]) -> List[List[str]]:
    """The devices of each stage's replicas: stage p on names[p R .. p R + R - 1]."""
    r = self.replicas_per_stage
    return [list(names[p * r:(p + 1) * r]) for p in range(self.num_stages)]

  def describe(self) -> dict:
    """The plan for the run record: stages (1-based layers), replicas, costs, balance, chunks and ticks."""
    return {"stages": [[i + 1 for i in s] for s in self.stages], "replicas_per_stage": self.replicas_per_stage,
            "stage_flops_per_example": self.stage_costs,
            "predicted_balance": self.predicted_balance, "chunk_steps": self.chunk_steps,
            "total_steps": self.total_steps, "num_chunks": self.num_chunks, "num_ticks": self.num_ticks,
            "fill_ticks": self.num_stages - 1}


def plan_for(hidden_units: Sequence[int], num_devices: int, train_examples: int, batch_size: int,
             pretrain_epochs: int, chunk_steps: int, replicas_per_stage: int = 1,
             input_units: int = cost.INPUT_UNITS, extra_steps: int = 0) -> Plan:
  """The plan of a run with these flags: T = (N // B) x E steps (plus `extra_steps`: a staggered start's,
  `common.pipeline.schedule`), K clamped to one epoch's steps (so a layer ends at most one epoch per tick, and
  every epoch gets its own record entry) and to T. The weights do not depend on K. With E = 0 (no pretraining)
  the plan is of one epoch: it only places the layers.

  Raises:
    ValueError: no steps (fewer training examples than one batch) or a K below 1.
  """
  steps_per_epoch = train_examples // batch_size
  # No pretraining (E = 0) still places the stages: the plan of one epoch, of which no tick runs.
  total = steps_per_epoch * max(pretrain_epochs, 1) + (extra_steps if pretrain_epochs else 0)
  return Plan(tuple(hidden_units), num_devices, total, min(chunk_steps, steps_per_epoch, total), replicas_per_stage,
              input_units)
