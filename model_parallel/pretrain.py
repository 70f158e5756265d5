"""Model-parallel pretraining (the report's "multigpu" branch, made to really spread the layers): groups
of G = --num_devices layers, in a group every active layer trains its epoch concurrently on its own
device, all on the same batches, with a per-epoch weight copy into the frozen copies of the layers above.

The schedule (`model_parallel.schedule`) and its execution (`run_schedule`) are shared with
`sync_layerwise`, which is the same schedule with all H layers in one group on one device, executed one
layer after another: one implementation of the schedule, placement and execution order being the only
differences, so the equivalence "model_parallel with G = H equals sync_layerwise" is about placement and
concurrency, which is what the tests check.
"""

import math
import time
from typing import Any, Callable, Dict, Optional, Sequence, Tuple

from absl import logging
import numpy as np
import tensorflow as tf

from common import cost
from common import config as config_lib
from common import devices as devices_lib
from common import errors
from common import program

# The kernel path of the steps with --kernels=auto: TensorFlow's default kernels, faster than XLA's at batch 100,
# 1000 and 5000 on the 2-core machine (results/benchmarks/kernels/, docs/kernels_and_threads.md).
KERNELS = "tf"
# The intra-op pool of logical CPU devices with --thread_pool=auto (docs/kernels_and_threads.md): one pool
# shared by the devices, so the lighter layer's idle core serves the heavier one (2 x 1000 units, batch 1000:
# 1.77x over sync_layerwise against 1.41x with one thread per device;
# results/benchmarks/model_parallel/summary_b1000_variants.json).
THREAD_POOL = "shared"
from common import progress as progress_lib
from common import timing
from model_parallel import group as group_lib
from model_parallel import schedule as schedule_lib


def run(config: config_lib.Config, on_checkpoint: Optional[Callable[[program.Run], None]] = None) -> Dict[str, Any]:
  """Pretrains model-parallel on `config.num_devices` devices, finetunes, exports, writes the run record.

  Layer i (0-based) goes to group i // G and device i % G. With TF_CONFIG (`common.cluster`) the
  "worker" tasks only serve their devices and block, and the "chief" task runs the same schedule as a
  client with the workers' devices: G = workers x num_devices, device j on worker j // num_devices,
  so the per-epoch weight copy crosses the network (docs/multi_host.md).

  Args:
    config: the run's configuration.
    on_checkpoint: called with the `program.Run` after every checkpoint (see `program.start`).

  Returns:
    The run record: the common fields plus "schedule" (groups, per-step wall, busy, copy and idle
    seconds) and per-layer "group" and per-epoch "step" (see `run_schedule`).

  Raises:
    ValueError: the devices cannot be made. common.errors.UserError subclasses for missing data,
      divergence, or a mismatched checkpoint.
  """
  def schedule_on(setup: devices_lib.DeviceSetup) -> schedule_lib.Schedule:
    return schedule_lib.Schedule(len(config.hidden_units), len(setup.names), config.pretrain_epochs)

  def place(setup: devices_lib.DeviceSetup):
    schedule = schedule_on(setup)
    return [setup.names[schedule.position(i)] for i in range(schedule.num_layers)]

  run_ = program.start(config, KERNELS, distribution="client_server", thread_pool=THREAD_POOL, place=place,
                       on_checkpoint=on_checkpoint)
  schedule = schedule_on(run_.devices)
  num_devices = len(run_.devices.names)
  if num_devices > schedule.num_layers:
    logging.warning("%d devices but only %d layer(s): %d device(s) stay idle.", num_devices,
                    schedule.num_layers, num_devices - schedule.num_layers)
  logging.info("Model parallel: %s", "; ".join(
      f"group {g + 1}: " + ", ".join(f"layer {i + 1} on {short_name(run_.layer_devices[i])}" for i in members)
      for g, members in enumerate(schedule.groups)))
  return run_schedule(run_, schedule, concurrent=True)


def short_name(device: str) -> str:
  """"/job:localhost/replica:0/task:0/device:CPU:1" -> "CPU:1"; on a cluster's worker "task:1/CPU:0"."""
  short = device.rsplit("device:", 1)[-1]
  return short if "/job:worker/" not in device else f"task:{tf.DeviceSpec.from_string(device).task}/{short}"


def run_schedule(run_: program.Run, schedule: schedule_lib.Schedule, concurrent: bool) -> Dict[str, Any]:
  """Runs `schedule` with layer i on run_.layer_devices[i], then finetunes and writes the run record.

  Every step: the active layers of the group train one epoch (epoch index = step index), concurrently
  or one after another; then the per-epoch weight copy; then a checkpoint (resume after any crash gives
  the same weights). Idle seconds of a step are summed over every device of the run the schedule
  may use (the first one when all layers share it): wall time minus the device's busy time.

  Args:
    run_: the started run (`program.start`): configuration, devices, layers on their devices.
    schedule: groups and steps.
    concurrent: True for model parallel, False for synchronized layer-wise.

  Returns:
    The run record (written by `program.finish`), with
      layers[i]: {"index", "units", "device", "group", "epochs": [{"loss", "seconds", "step"}]}, where
        "seconds" is the layer's busy time in that step from in-graph timestamps (the step's wall time
        when op determinism forbids timestamps);
      schedule: {"num_devices", "groups" (1-based), "steps": [{"group", "step", "active_layers",
        "wall_seconds", "busy_seconds": {device: s}, "copy_seconds", "idle_seconds"}]};
      timing: "pretrain_train" (sum of step wall), "weight_copy", "idle", plus "warmup", "checkpoint"
        and the finetune phases;
      pretrain_seconds: step wall + weight copy seconds (warm-up and tracing excluded).

  Raises:
    TrainingDivergedError: a layer's loss became NaN or infinite (the last checkpoint is kept).
  """
  config, layer_devices, device_setup = run_.config, run_.layer_devices, run_.devices
  hidden, n = config.hidden_units, run_.mnist.num_train
  counted = list(device_setup.names) if concurrent else list(dict.fromkeys(layer_devices))  # Devices idle counts.
  images = {}
  for device in dict.fromkeys(layer_devices):
    with tf.device(device):
      images[device] = tf.constant(run_.mnist.train_images)
  state = run_.state.setdefault("pretrain", {"layers": [[] for _ in hidden], "steps": []})
  histories, records = state["layers"], state["steps"]
  all_steps = schedule.all_steps()
  flops = [cost.layer_epoch_flops(hidden, i + 1, n) for i in range(len(hidden))]
  combine = max if concurrent else sum
  work = [combine(flops[i] for i in step.active) for step in all_steps]
  progress = progress_lib.Progress(sum(work), "pretrain", config.show_progress, sum(work[:len(records)]))
  lr = tf.constant(config.pretrain_learning_rate, tf.float32)
  traced = not config.profile_dir
  for g, members in enumerate(schedule.groups):
    todo = [k for k in range(len(records), len(all_steps)) if all_steps[k].group == g]
    if not todo:
      continue
    with run_.timer.phase(timing.COMPILE_PHASE):  # Frozen copies, tracing, XLA compilation; learning rate 0 changes nothing.
      trainer = group_lib.GroupTrainer(run_.layers, members, [layer_devices[i] for i in members], images,
                                       config.seed, config.corruption, config.batch_size, concurrent, run_.kernels)
      trainer.run_steps(tf.constant(0), tf.constant(0), tf.constant(1), tf.constant(0.0),
                        tf.ones([len(members)], tf.int32))[0].numpy()
      trainer.copy_weights()
    for k in todo:
      step = all_steps[k]
      trace = not traced and len(step.active) >= min(2, len(members))  # The first step with layers side by side.
      with timing.trace(config.profile_dir if trace else None), run_.training(None):
        wall, losses, busy = _run_step(trainer, step, lr, run_.chunks_per_epoch, progress, work[k])
      traced = traced or trace
      for i in step.active:
        if not math.isfinite(losses[i]):
          progress.close()
          raise errors.TrainingDivergedError(
              f"pretraining loss of layer {i + 1} became {losses[i]} in step {step.step + 1} of group {g + 1}; "
              "lower --pretrain_learning_rate. The last good checkpoint is kept.")
      with run_.training(None):
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
      run_.end_epochs({i: histories[i][-1] for i in step.active}, trainer.steps_per_epoch * config.batch_size)
      run_.save()
      _log_step(progress, records[-1], step, schedule, losses, layer_devices, trainer.steps_per_epoch * config.batch_size)
  progress.close()
  wall = sum(r["wall_seconds"] for r in records)
  copy = sum(r["copy_seconds"] for r in records)
  result = {
      "strategy": config.strategy,
      "layers": [{"index": i + 1, "units": u, "device": layer_devices[i], "group": schedule.group_of(i),
                  "epochs": histories[i]} for i, u in enumerate(hidden)],
      "schedule": {"num_devices": len(counted), "groups": [[i + 1 for i in m] for m in schedule.groups],
                   "steps": records},
      "timing": {"pretrain_train": wall, "weight_copy": copy, "idle": sum(r["idle_seconds"] for r in records)},
      "pretrain_seconds": wall + copy,
  }
  logging.info("Pretrained %d layer(s) in %.1f s (steps %.1f s, weight copies %.3f s, idle %.1f device-seconds).",
               len(hidden), wall + copy, wall, copy, result["timing"]["idle"])
  return program.finish(run_, result)


def _run_step(trainer: group_lib.GroupTrainer, step: schedule_lib.Step, lr: tf.Tensor, chunks: int,
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


def _log_step(progress: progress_lib.Progress, record: Dict[str, Any], step: schedule_lib.Step,
              schedule: schedule_lib.Schedule, losses: Dict[int, float], layer_devices: Sequence[str],
              examples_per_epoch: int) -> None:
  """One progress line: which layer ran where with its loss, copy and idle seconds, throughput, ETA."""
  layers = ", ".join(f"layer {i + 1}@{short_name(layer_devices[i])} loss {losses[i]:.4f}" for i in step.active)
  progress.log(
      f"group {step.group + 1}/{len(schedule.groups)} step {step.step + 1}/{schedule.steps_in_group(step.group)}: "
      f"{layers} | step {record['wall_seconds']:.2f} s, copy {record['copy_seconds'] * 1e3:.1f} ms, "
      f"idle {record['idle_seconds']:.2f} device-s", examples_per_epoch * len(step.active), record["wall_seconds"])
