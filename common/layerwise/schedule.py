"""The epoch-granular layer-wise schedule that model_parallel and sync_layerwise both execute (pure Python).

The report's "multigpu" branch (its original implementation's model-parallel schedule): the H layers are
taken in groups of G (G = number of devices). Within a group of g <= G layers there are E + g - 1
epoch-steps s = 0 .. E + g - 2; layer j (0-based in the group) is active from epoch-step j on (its start offset:
it starts once the layer below has trained one epoch), so it trains E + g - 1 - j epochs and the top
layer of every group trains exactly E. In epoch-step s every active layer trains one epoch with the shuffling
order and corruption masks of epoch index s, so all of them consume the same batches. The next group
starts when the previous one has finished. The last group may hold fewer than G layers; it then has
E + g - 1 steps for its own size g, which keeps "the top layer of a group trains E epochs" true.

G = 1 gives greedy layer-wise pretraining (one layer per group, E epoch-steps, epoch-step s = epoch s); G >= H gives
one group of all H layers: the synchronized layer-wise schedule of Santara et al. 2016 with its start offsets.
"""

import dataclasses
from typing import List, Sequence, Tuple


@dataclasses.dataclass(frozen=True)
class EpochStep:
  """One epoch-step of a group: every active layer trains one epoch.

  Attributes:
    group: 0-based group index.
    step: 0-based epoch-step index within the group; also the epoch index that keys shuffling and masks.
    active: 0-based global indices of the layers that train an epoch in this epoch-step, bottom first.
  """
  group: int
  step: int
  active: Tuple[int, ...]


@dataclasses.dataclass(frozen=True)
class Schedule:
  """Groups, placement and steps of H layers on G devices for E epochs.

  Attributes:
    num_layers: H.
    num_devices: G (devices available to the schedule; a group uses min(G, layers left) of them).
    epochs: E, the epochs of the top layer of each group (0: no pretraining).
  """
  num_layers: int
  num_devices: int
  epochs: int

  def __post_init__(self):
    for name in ("num_layers", "num_devices"):
      if getattr(self, name) < 1:
        raise ValueError(f"{name} must be positive, got {getattr(self, name)}.")
    if self.epochs < 0:
      raise ValueError(f"epochs must be non-negative (0: no pretraining), got {self.epochs}.")

  @property
  def groups(self) -> List[List[int]]:
    """0-based global layer indices of each group, e.g. H=3, G=2 -> [[0, 1], [2]]."""
    g = self.num_devices
    return [list(range(a, min(a + g, self.num_layers))) for a in range(0, self.num_layers, g)]

  def group_of(self, layer: int) -> int:
    """The group of 0-based layer `layer`."""
    return layer // self.num_devices

  def position(self, layer: int) -> int:
    """0-based position of `layer` in its group, which is also the index of its device."""
    return layer % self.num_devices

  def steps_in_group(self, group: int) -> int:
    """E + g - 1 for a group of g layers (none when E = 0: no pretraining, the schedule only places the layers)."""
    return self.epochs + len(self.groups[group]) - 1 if self.epochs else 0

  def epochs_of(self, layer: int) -> int:
    """Epochs layer `layer` trains: E + g - 1 - j for position j in a group of g layers."""
    return self.steps_in_group(self.group_of(layer)) - self.position(layer)

  def steps(self, group: int) -> List[EpochStep]:
    """The steps of one group in order."""
    layers = self.groups[group]
    return [EpochStep(group, s, tuple(layers[:s + 1])) for s in range(self.steps_in_group(group))]

  def all_steps(self) -> List[EpochStep]:
    """Every epoch-step of every group, in execution order."""
    return [step for g in range(len(self.groups)) for step in self.steps(g)]

  def critical_path(self, layer_epoch_seconds: Sequence[float], concurrent: bool = True) -> float:
    """Time of the whole schedule if layer i's epoch takes layer_epoch_seconds[i] and nothing else costs.

    With `concurrent`, an epoch-step lasts as long as its slowest active layer (the model-parallel bound);
    otherwise as long as all its active layers one after another (synchronized layer-wise on one
    device). Seconds.
    """
    combine = max if concurrent else sum
    return sum(combine(layer_epoch_seconds[i] for i in step.active) for step in self.all_steps())
