"""Executing the epoch-granular layer-wise schedule (`common.layerwise.schedule`) that model_parallel and
sync_layerwise both run: a trainer per layer on its device, the compiled epoch-step that runs a group's
active layers, the per-epoch weight copy into the frozen copies, and `run_schedule`, the loop over steps.

Placement (the report's "multigpu" branch): layer j of a group (0-based) lives on device j together with its
own copy of the training images and frozen copies of every layer below it. Copies of layers of earlier groups
hold final weights and are made once when the group starts; copies of lower layers of the same group are
refreshed from the live layers at the end of every step (`copy_weights`), so in step s every layer reads the
layers below as they were at the end of step s - 1, and no variable is shared between devices while a step
runs. model_parallel places layer j of a group on device j and runs them concurrently; sync_layerwise puts
every layer on one device and runs them one after another: one implementation of the schedule, so the
equivalence "model_parallel with G = H equals sync_layerwise" is about placement and concurrency, which is
what the tests check.

Concurrency (chosen by measurement, docs/model_parallel.md): one `tf.function` per group holds
every layer's epoch loop (`LayerTrainer.run_steps`), each wrapped in its own nested `tf.function`.
The runtime runs the device subgraphs side by side because nothing orders them: the nested calls touch
disjoint variables. Without the nesting, automatic control dependencies chain the stateful
`tf.timestamp` ops of all layers in program order (start 1, end 1, start 2, ...), so the layers run one
after another. That chaining is exactly what the synchronized layer-wise schedule (`concurrent=False`)
needs, so there the loops are called directly: layer j + 1's loop and its start timestamp come after
layer j's end. (A control dependency on a nested call would order its loop but not reliably its start
timestamp, which has no inputs, and the busy seconds would then include the wait.)
"""

import math
import time
from typing import Any, Dict, List, Sequence, Tuple

from absl import logging
import numpy as np
import tensorflow as tf

from common.base import errors
from common.base import progress as progress_lib
from common.distribute import devices as devices_lib
from common.layerwise import schedule as schedule_lib
from common.measure import cost
from common.measure import timing
from common.model import autoencoder
from common.model import graph
from common.model import layer_warmup
from common.run import lifecycle


class GroupTrainer:
  """The compiled training of one group of layers.

  Args:
    layers: the whole stack, bottom first (`DenoisingAutoencoder`s already on their devices).
    group: 0-based global indices of the group's layers, bottom first and consecutive.
    devices: device name of each layer of the group (same length as `group`).
    images: {device name: float32 [N, 784] training images on that device}.
    seed, corruption, batch_size: as in `LayerTrainer`.
    concurrent: run the layers' epochs concurrently (model parallel) or one after another (sync).
    kernels: the kernel path of the layers' steps (`autoencoder.KERNEL_PATHS`).
    warmup_epochs: the layer warm-up (`common.model.layer_warmup`), on each layer's own steps.
  """

  def __init__(self, layers: Sequence[autoencoder.DenoisingAutoencoder], group: Sequence[int],
               devices: Sequence[str], images: Dict[str, tf.Tensor], seed: int, corruption: float,
               batch_size: int, concurrent: bool, kernels: str = "tf", warmup_epochs: float = 0.0):
    self.group = list(group)
    self.devices = list(devices)
    self.concurrent = concurrent
    self._copies: List[Tuple[autoencoder.FrozenEncoder, autoencoder.DenoisingAutoencoder]] = []
    self._steps_fns = []
    self._frozen: Dict[int, List[autoencoder.FrozenEncoder]] = {}
    for layer_index, device in zip(self.group, self.devices):
      with tf.device(device):
        frozen = [autoencoder.FrozenEncoder(layers[k]) for k in range(layer_index)]
      self._frozen[layer_index] = frozen
      self._copies += [(frozen[k], layers[k]) for k in range(self.group[0], layer_index)]
      # Layer j of the group (0-based) starts at epoch-step j: its own steps count from there.
      warmup = layer_warmup.warmup_steps(layer_index, warmup_epochs, int(images[device].shape[0]) // batch_size)
      trainer = autoencoder.LayerTrainer(layers[layer_index], frozen, images[device], seed, corruption,
                                         batch_size, device, kernels, warmup, layer_index - self.group[0])
      self._steps_fns.append(graph.function(trainer.run_steps) if concurrent else trainer.run_steps)
    self.steps_per_epoch = trainer.steps_per_epoch
    self.run_steps = graph.function(self._run_steps)
    self.copy_weights = graph.function(self._copy_weights)

  def inputs_of(self, layer: int) -> List[autoencoder.FrozenEncoder]:
    """The frozen copies of layers 0 .. layer - 1 that 0-based `layer` of the group reads (on its device)."""
    return self._frozen[layer]

  def _run_steps(self, epoch_step: tf.Tensor, first_step: tf.Tensor, num_steps: tf.Tensor, learning_rate: tf.Tensor,
                 active: tf.Tensor) -> Tuple[tf.Tensor, tf.Tensor, tf.Tensor]:
    """Steps first_step .. first_step + num_steps - 1 of epoch `epoch` for every active layer.

    Args:
      epoch_step: int32 scalar, the epoch-step s of the schedule: every active layer trains the epoch of index s
        (its shuffling order and masks, the same batches for all layers).
      first_step, num_steps: int32 scalars, a range of mini-batch steps of the epoch.
      learning_rate: float32 scalar.
      active: int32 [g], 1 for the layers that train in this step, 0 for those not started yet.

    Returns:
      (loss sums float32 [g], start and end timestamps float64 [g] in seconds; -1 when op determinism
      forbids the clock). An inactive layer runs zero steps: loss 0, end - start ~ 0.
    """
    losses, starts, ends = [], [], []
    for j, (fn, device) in enumerate(zip(self._steps_fns, self.devices)):
      with tf.device(device):
        loss, start, end = fn(epoch_step, first_step, num_steps * active[j], learning_rate)
      losses.append(loss)
      starts.append(start)
      ends.append(end)
    return tf.stack(losses), tf.stack(starts), tf.stack(ends)

  def _copy_weights(self) -> None:
    """The per-epoch weight copy: every in-group frozen copy := its live layer (cross-device copies)."""
    for frozen, layer in self._copies:
      frozen.assign_from(layer)


def run_schedule(run: lifecycle.Run, schedule: schedule_lib.Schedule, concurrent: bool) -> Dict[str, Any]:
  """Runs `schedule` with layer i on run.layer_devices[i]; returns the program's part of the run record.

  Every epoch-step: the active layers of the group train one epoch (epoch index = epoch-step index), concurrently
  or one after another; then the per-epoch weight copy; then a checkpoint (resume after any crash gives
  the same weights). Idle seconds of a step are summed over every device of the run the schedule
  may use (the first one when all layers share it): wall time minus the device's busy time.

  Args:
    run: the started run (`lifecycle.start`): configuration, devices, layers on their devices.
    schedule: groups and steps.
    concurrent: True for model parallel, False for synchronized layer-wise.

  Returns:
    The program's part of the run record (`lifecycle.finish` completes it), with
      layers[i]: {"index", "units", "device", "group", "epochs": [{"loss", "seconds", "step"}]}, where
        "seconds" is the layer's busy time in that step from in-graph timestamps (the step's wall time
        when op determinism forbids timestamps);
      schedule: {"num_devices", "groups" (1-based), "steps": [{"group", "step", "active_layers",
        "wall_seconds", "busy_seconds": {device: s}, "copy_seconds", "idle_seconds"}]};
      timing: "pretrain_train" (sum of step wall), "weight_copy", "idle", plus "compile", "checkpoint"
        and the finetune phases;
      pretrain_seconds: step wall + weight copy seconds (warm-up and tracing excluded).

  Raises:
    TrainingDivergedError: a layer's loss became NaN or infinite (the last checkpoint is kept).
  """
  config, layer_devices, device_setup = run.config, run.layer_devices, run.devices
  hidden, n = config.hidden_units, run.data.num_train
  counted = list(device_setup.names) if concurrent else list(dict.fromkeys(layer_devices))  # Devices idle counts.
  images = {}
  for device in dict.fromkeys(layer_devices):
    with tf.device(device):
      images[device] = tf.constant(run.data.train_images)
  state = run.state.setdefault("pretrain", {"layers": [[] for _ in hidden], "steps": []})
  histories, records = state["layers"], state["steps"]
  all_steps = schedule.all_steps()
  flops = [cost.layer_epoch_flops(hidden, i + 1, n, run.data.input_units) for i in range(len(hidden))]
  combine = max if concurrent else sum
  work = [combine(flops[i] for i in step.active) for step in all_steps]
  progress = progress_lib.Progress(sum(work), "pretrain", config.show_progress, sum(work[:len(records)]))
  lr = tf.constant(config.pretrain_learning_rate, tf.float32)
  traced = not config.profile_dir
  for g, members in enumerate(schedule.groups):
    todo = [k for k in range(len(records), len(all_steps)) if all_steps[k].group == g]
    if not todo:
      continue
    with run.timer.phase(timing.COMPILE_PHASE):  # Frozen copies, tracing, XLA compilation; learning rate 0 changes nothing.
      trainer = GroupTrainer(run.layers, members, [layer_devices[i] for i in members], images,
                             config.seed, config.corruption, config.batch_size, concurrent, run.kernels,
                             config.layer_warmup_epochs)
      trainer.run_steps(tf.constant(0), tf.constant(0), tf.constant(1), tf.constant(0.0),
                        tf.ones([len(members)], tf.int32))[0].numpy()
      trainer.copy_weights()
    for k in todo:
      step = all_steps[k]
      trace = not traced and len(step.active) >= min(2, len(members))  # The first step with layers side by side.
      with timing.trace(config.profile_dir if trace else None), run.training(None):
        wall, losses, busy = _run_epoch_step(trainer, step, lr, run.chunks_per_epoch, progress, work[k])
      traced = traced or trace
      for i in step.active:
        if not math.isfinite(losses[i]):
          progress.close()
          raise errors.TrainingDivergedError(
              f"pretraining loss of layer {i + 1} became {losses[i]} in step {step.step + 1} of group {g + 1}; "
              "lower --pretrain_learning_rate. The last good checkpoint is kept.")
      # What each active layer read in this step: its frozen copies, before the copy refreshes them.
      run.observe_inputs({i: len(histories[i]) for i in step.active}, trainer.inputs_of)
      with run.training(None):
        start = time.perf_counter()
        trainer.copy_weights()
        copy = time.perf_counter() - start
      device_busy = {d: 0.0 for d in counted}
      for i in step.active:
        device_busy[layer_devices[i]] = min(wall, device_busy[layer_devices[i]] + busy[i])
        histories[i].append({"loss": losses[i], "seconds": busy[i], "step": step.step})
      records.append({"group": g, "step": step.step, "active_layers": [i + 1 for i in step.active],
                      "wall_seconds": wall, "busy_seconds": device_busy, "copy_seconds": copy,
                      "idle_seconds": sum(wall - b for b in device_busy.values())})
      run.end_epochs({i: histories[i][-1] for i in step.active}, trainer.steps_per_epoch * config.batch_size,
                     inputs_observed=True)
      run.save()
      _log_epoch_step(progress, records[-1], step, schedule, losses, layer_devices, trainer.steps_per_epoch * config.batch_size)
  progress.close()
  wall = sum(r["wall_seconds"] for r in records)
  copy = sum(r["copy_seconds"] for r in records)
  result = {
      "layers": [{"index": i + 1, "units": u, "device": layer_devices[i],
                  "group": schedule.group_of(i) if i < schedule.num_layers else None,  # None: not pretrained
                  "epochs": histories[i]} for i, u in enumerate(hidden)],
      "schedule": {"num_devices": len(counted), "groups": [[i + 1 for i in m] for m in schedule.groups],
                   "steps": records},
      "timing": {"pretrain_train": wall, "weight_copy": copy, "idle": sum(r["idle_seconds"] for r in records)},
      "pretrain_seconds": wall + copy,
  }
  logging.info("Pretrained %d layer(s) in %.1f s (steps %.1f s, weight copies %.3f s, idle %.1f device-seconds).",
               len(hidden), wall + copy, wall, copy, result["timing"]["idle"])
  return result


def _run_epoch_step(trainer: GroupTrainer, step: schedule_lib.EpochStep, lr: tf.Tensor, chunks: int,
              progress: progress_lib.Progress, work: float) -> Tuple[float, Dict[int, float], Dict[int, float]]:
  """Runs one epoch-step in `chunks` calls.

  Returns:
    (wall seconds, {active layer: mean batch loss}, {active layer: busy seconds from the in-graph
    timestamps, or the wall seconds when op determinism forbids timestamps}).
  """
  steps = trainer.steps_per_epoch
  calls = min(chunks, steps)
  bounds = [round(c * steps / calls) for c in range(calls + 1)]
  active = tf.constant([int(i in step.active) for i in trainer.group], tf.int32)
  totals = np.zeros(len(trainer.group))
  busy = np.zeros(len(trainer.group))
  clock = True
  start = time.perf_counter()
  for a, b in zip(bounds, bounds[1:]):
    losses, starts, ends = (t.numpy() for t in trainer.run_steps(
        tf.constant(step.step), tf.constant(a), tf.constant(b - a), lr, active))
    totals += losses
    busy += ends - starts
    clock = clock and bool((starts >= 0).all())
    progress.advance(work * (b - a) / steps)
  wall = time.perf_counter() - start
  positions = {i: j for j, i in enumerate(trainer.group) if i in step.active}
  return (wall, {i: float(totals[j] / steps) for i, j in positions.items()},
          {i: float(busy[j]) if clock else wall for i, j in positions.items()})


def _log_epoch_step(progress: progress_lib.Progress, record: Dict[str, Any], step: schedule_lib.EpochStep,
              schedule: schedule_lib.Schedule, losses: Dict[int, float], layer_devices: Sequence[str],
              examples_per_epoch: int) -> None:
  """One progress line: which layer ran where with its loss, copy and idle seconds, throughput, ETA."""
  layers = ", ".join(f"layer {i + 1}@{devices_lib.short_name(layer_devices[i])} loss {losses[i]:.4f}" for i in step.active)
  progress.log(
      f"group {step.group + 1}/{len(schedule.groups)} step {step.step + 1}/{schedule.steps_in_group(step.group)}: "
      f"{layers} | step {record['wall_seconds']:.2f} s, copy {record['copy_seconds'] * 1e3:.1f} ms, "
      f"idle {record['idle_seconds']:.2f} device-s", examples_per_epoch * len(step.active), record["wall_seconds"])
