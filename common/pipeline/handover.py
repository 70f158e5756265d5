"""The hand-over of codes between the pipeline's stages that outlives a tick: the activations in flight at a tick
boundary (`InFlight`), kept in variables so that a checkpoint holds them and a run killed at any point resumes with
the same weights, and the layer copies of a stage's replicas (`ReplicaLayers`, `--replicas_per_stage` R > 1). Within
a tick the codes pass as tensors (`common.pipeline.stages.Pipeline.tick`)."""

from typing import List

import tensorflow as tf

from common.model import autoencoder
from common.pipeline import placement


class InFlight(tf.Module):
  """The activations between stages at a tick boundary, as variables so that they are checkpointed.

  Per boundary p and replica r, two variables hold the corrupted / clean encodings replica r of stage p emitted
  for replica r of stage p + 1, float32 [k x B/R, units] (k <= K steps; [0, units] when nothing is in flight), on
  that replica's device; in the order of `Pipeline.tick`'s inputs.
  """

  def __init__(self, plan: placement.Plan, stage_devices: List[List[str]]):
    super().__init__(name="in_flight")
    self.buffers = []
    with self.name_scope:
      for p, stage in enumerate(plan.stages[:-1]):
        units = plan.hidden_units[stage[-1]]
        for r, device in enumerate(stage_devices[p + 1]):
          with tf.device(device):
            for path in ("corrupted", "clean"):
              self.buffers.append(tf.Variable(tf.zeros([0, units]), shape=tf.TensorShape([None, units]),
                                              trainable=False, name=f"stage{p + 1}_{path}" + (f"_{r}" if r else "")))

  def store(self, tensors: List[tf.Tensor]) -> None:
    """Keeps `tensors` (a tick's outputs, `Pipeline.tick`'s next inputs) in the variables, to be checkpointed."""
    for var, value in zip(self.buffers, tensors):
      var.assign(value)

  def load(self) -> List[tf.Tensor]:
    """The kept activations, in the order of `Pipeline.tick`'s inputs."""
    return [var.read_value() for var in self.buffers]


class ReplicaLayers(tf.Module):
  """The layer copies of replicas 1 .. R-1 of every stage (replica 0's are the run's layers), checkpointed with
  them: `copies[p][r - 1]` are stage p's layers on its replica r's device, initialised as the run's layers."""

  def __init__(self, plan: placement.Plan, stage_devices: List[List[str]], seed: int, precision: str):
    super().__init__(name="replica_layers")
    sizes = [plan.input_units] + list(plan.hidden_units)
    with self.name_scope:
      self.copies = [[[new_layer(sizes, i, seed, precision, device) for i in stage] for device in devices[1:]]
                     for stage, devices in zip(plan.stages, stage_devices)]


def new_layer(sizes: List[int], index: int, seed: int, precision: str, device: str) -> autoencoder.DenoisingAutoencoder:
  """A new layer `index` (0-based) of the stack of `sizes` ([input units, hidden units of each layer]) on `device`,
  with the run's initial weights (those of `seed`)."""
  with tf.device(device):
    return autoencoder.DenoisingAutoencoder(sizes[index], sizes[index + 1], index + 1, seed, precision)
