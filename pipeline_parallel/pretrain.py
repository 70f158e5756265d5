"""Layer-pipelined pretraining of the stacked denoising autoencoder: every layer trains at once.

This is not the report's schedule; it is this project's extension of it. The schedule, exactly:

  * Steps t = 0 .. E*S - 1 (S = N // B steps per epoch); step t belongs to epoch e = t // S and uses the
    batch at position t % S of epoch e's shuffling order, with epoch e's masking noise: exactly the batch
    greedy draws at that step of an epoch (`common.data.loader`).
  * At step t, layer 1 trains one SGD step on (corrupted images, clean images) and emits the pair
    (h1(corrupted), h1(clean)) computed with the weights it had at the start of that step: the corrupted
    encoding is the forward pass of its own training step, reused; the clean one is one extra forward.
  * Layer n > 1 trains one step at step t on the pair layer n-1 emitted at step t (input = the corrupted
    path, target = the clean path, as in greedy where both come from the frozen layers below) and emits
    its own pair. No layer ever runs the layers below it: per example, layer n costs its 5 products plus
    1 for the clean encoding it emits (none for the top layer), against greedy's 5 + 2(n-1)
    (`common.measure.cost`).
  * Nothing of this depends on the devices, the placement or the chunk size, so every placement and
    every --pipeline_chunk_steps computes the same weights (tested). Layer 1 is exactly greedy's layer 1.

Execution (`common.pipeline.placement`, `common.pipeline.stages`): the layers form P = min(G, H)
contiguous stages of least maximal cost, one per device; steps are cut into chunks of K steps; in tick k
stage p trains chunk k - p, reading the activations stage p - 1 emitted in tick k - 1, so after a fill of
P - 1 ticks every device computes all the time (the in-flight activations are device-resident tensors of
[K x B, units], double buffered by the tick structure). A checkpoint is taken at a tick boundary at least
once per epoch of layer 1 and holds the weights, the progress, and the in-flight activations, so a run
killed at any point resumes with the same weights as one never interrupted.

Related work: pipelined back-propagation (Chen et al. 2012, "Pipelined back-propagation for
context-dependent deep neural networks") pipelines the layers of one network trained end to end, with
stale weights between stages; decoupled greedy learning (Belilovsky et al. 2020, "Decoupled greedy learning
of CNNs") trains the layers of a CNN concurrently with auxiliary classifiers; the fill/drain "bubble" of
micro-batch pipelines is analysed in GPipe (Huang et al. 2019, section 2.3).
"""

import time
from typing import Any, Callable, Dict, List, Optional

from absl import logging
import tensorflow as tf

from common.base import progress as progress_lib
from common.distribute import devices as devices_lib
from common.measure import cost
from common.measure import timing
from common.model import autoencoder
from common.model import graph
from common.run import lifecycle
from common.training import epochs as epochs_lib
from common.pipeline import handover
from common.pipeline import placement
from common.pipeline import schedule as schedule_lib
from common.pipeline import stages as stages_lib
from pipeline_parallel import config as config_lib
from pipeline_parallel import program


def make_plan(config: config_lib.PipelineConfig, num_devices: int, input_units: int) -> placement.Plan:
  """The plan of a run on `num_devices` devices and data of `input_units` inputs (`placement.plan_for`); an
  epoch's held-out evaluation happens at the end of the tick it ended in."""
  config_lib.check_devices(num_devices, config.replicas_per_stage)
  steps_per_epoch = config.train_examples // config.batch_size
  schedule = schedule_lib.LayerSchedule.of(config, steps_per_epoch)
  # The K = --pretrain_layers layers that train (every layer's placement when K = 0, which trains none).
  trained = config.hidden_units[:config.pretrain_layers or len(config.hidden_units)]
  return placement.plan_for(trained, num_devices, config.train_examples, config.batch_size,
                            config.pretrain_epochs, config.pipeline_chunk_steps, config.replicas_per_stage,
                            input_units, extra_steps=schedule.total_steps - schedule.layer_steps)


def train(config: config_lib.PipelineConfig,
          on_checkpoint: Optional[Callable[[lifecycle.Run], None]] = None) -> Dict[str, Any]:
  """Pretrains layer-pipelined on `config.num_devices` devices, finetunes, exports, writes the run record
  (`common.run.lifecycle`).

  With TF_CONFIG (`common.distribute.cluster`, started by `python -m common.launch`) the "worker" tasks serve their
  devices and the "chief" task runs the pipeline on them as a client: stage p on device p of the
  workers' devices (worker 0's first, then worker 1's, ...), so activations cross the network between
  stages (docs/multi_host.md).

  Args:
    config: the run's configuration.
    on_checkpoint: called with the `lifecycle.Run` after every checkpoint (see `lifecycle.start`).

  Returns:
    The run record: the common fields (per layer "epochs" with the mean training loss of each epoch,
    "seconds" from the layer's previous epoch end to the end of the tick in which this epoch ended, and
    "elapsed_seconds") plus "pipeline": the plan (stages, stage FLOPs, predicted balance, chunks, ticks)
    and the busy seconds of each stage's device and idle device-seconds (None when op determinism forbids
    reading the in-graph clock).

  Raises:
    ValueError: the devices cannot be made. common.base.errors.UserError subclasses for missing data,
      divergence, or a mismatched checkpoint.
  """
  with lifecycle.started(program.PROGRAM, config, on_checkpoint, plan=plan, place=place,
                         checkpoint_objects=checkpoint_objects) as run:
    return lifecycle.finish(run, pretrain(run) if run.pretrains else lifecycle.no_pretraining(run))


def plan(config: config_lib.PipelineConfig, setup: devices_lib.DeviceSetup, dataset) -> placement.Plan:
  """The layout: the stages on the run's devices (`make_plan`)."""
  return make_plan(config, len(setup.names), dataset.input_units)


def place(plan_: placement.Plan, setup: devices_lib.DeviceSetup) -> List[str]:
  """The placement: every layer of stage p on stage p's first device (its replicas' copies: `handover.ReplicaLayers`)."""
  devices = plan_.stage_devices(setup.names)
  return [devices[p][0] for p, stage in enumerate(plan_.stages) for _ in stage]


def checkpoint_objects(plan_: placement.Plan, setup: devices_lib.DeviceSetup,
                       config: config_lib.PipelineConfig) -> Dict[str, Any]:
  """Checkpointed with the weights: the in-flight activations, and the replicas' layer copies when R > 1."""
  devices = plan_.stage_devices(setup.names)
  objects = {"in_flight": handover.InFlight(plan_, devices)}
  if plan_.replicas_per_stage > 1:
    objects["replicas"] = handover.ReplicaLayers(plan_, devices, config.seed, config.precision)
  return objects


def pretrain(run: lifecycle.Run) -> Dict[str, Any]:
  """The plan's ticks from where the checkpoint left off (then the polish, with --polish_epochs); returns the
  program's part of the run record."""
  plan, config = run.plan, run.config
  devices = plan.stage_devices(run.devices.names)
  used = plan.num_stages * plan.replicas_per_stage
  if len(run.devices.names) > used:
    logging.warning("%d devices but only %d layer(s) x %d replica(s): %d device(s) stay idle.",
                    len(run.devices.names), len(plan.hidden_units), plan.replicas_per_stage,
                    len(run.devices.names) - used)
  logging.info("Pipeline: %s; chunks of %d steps, %d ticks (fill %d); predicted balance %.3f (mean / largest "
               "stage FLOPs).", "; ".join(
                   f"stage {p + 1} on {', '.join(devices_lib.short_name(d) for d in devices[p])}: layers "
                   f"{', '.join(str(i + 1) for i in stage)}" for p, stage in enumerate(plan.stages)),
               plan.chunk_steps, plan.num_ticks, plan.num_stages - 1, plan.predicted_balance)
  in_flight = run.checkpoint_objects["in_flight"]
  copies = run.checkpoint_objects["replicas"].copies if "replicas" in run.checkpoint_objects else [
      [] for _ in plan.stages]
  hidden, n, b = plan.hidden_units, run.data.num_train, config.batch_size  # the layers that train (--pretrain_layers)
  steps_per_epoch = n // b
  schedule = schedule_lib.LayerSchedule.of(config, steps_per_epoch)
  images = []
  for device in devices[0]:
    with tf.device(device):
      images.append(tf.constant(run.data.train_images))
  pipeline = stages_lib.Pipeline([
      stages_lib.Stage(replicas=[[run.layers[i] for i in stage]] + copies[p], devices=devices[p],
                       emits=p < plan.num_stages - 1, images=images if p == 0 else None, seed=config.seed,
                       corruption=config.corruption, batch_size=b, kernels=run.kernels, schedule=schedule,
                       first_layer=stage[0])
      for p, stage in enumerate(plan.stages)])
  state = run.state.setdefault("pretrain", {
      "layers": [[] for _ in hidden], "tick": 0, "busy_seconds": [0.0] * plan.num_stages,
      "wall_seconds": 0.0, "partial": [{"loss_sum": 0.0, "steps": 0, "since": 0.0} for _ in hidden]})
  histories, partial = state["layers"], state["partial"]
  stage_of = plan.stage_of
  with run.timer.phase(timing.COMPILE_PHASE):  # Tracing (and XLA compilation); learning rate 0 changes nothing.
    warm = []
    for stage in pipeline.stages[1:]:
      for device in stage.devices:
        with tf.device(device):
          warm += [tf.zeros([stage.share, stage.input_units])] * 2
    pipeline.tick(tf.zeros([plan.num_stages], tf.int32), tf.ones([plan.num_stages], tf.int32),
                  tf.constant(0.0), *warm)[0][0].numpy()
  inputs = in_flight.load() if state["tick"] else pipeline.empty_inputs()
  tick_work = [max(c * k for c, (_, k) in zip(plan.stage_costs, plan.tick(t))) for t in range(plan.num_ticks)]
  polish_work = [cost.layer_epoch_flops(hidden, i + 1, steps_per_epoch, plan.input_units) for i in range(len(hidden))]
  polish = state.setdefault("polish", [[] for _ in hidden])
  progress = progress_lib.Progress(
      sum(tick_work) + config.polish_epochs * sum(polish_work[1:]), "pretrain", config.show_progress,
      sum(tick_work[:state["tick"]]) + sum(w * len(h) for w, h in zip(polish_work, polish)))
  lr = tf.constant(config.pretrain_learning_rate, tf.float32)
  for k in range(state["tick"], plan.num_ticks):
    work = plan.tick(k)
    _observe_starts(run, schedule, plan, k)
    firsts = tf.constant([f for f, _ in work], tf.int32)
    counts = tf.constant([c for _, c in work], tf.int32)
    trace = config.profile_dir if k == min(plan.num_stages - 1, plan.num_ticks - 1) else None
    with timing.trace(trace), run.training():
      began = time.perf_counter()
      losses, inputs, starts, ends = pipeline.tick(firsts, counts, lr, *inputs)
      losses = [l.numpy() for l in losses]
      starts, ends = starts.numpy(), ends.numpy()
      seconds = time.perf_counter() - began
    if not trace and all(count == plan.chunk_steps for _, count in work):  # a full tick: no fill, drain or trace
      state.setdefault("tick_seconds", []).append(seconds)
    progress.advance(tick_work[k])
    if not (starts >= 0).all():  # Op determinism forbids reading the clock: busy time unknown.
      state["busy_seconds"] = None
    elif state["busy_seconds"] is not None:
      for p, (_, count) in enumerate(work):
        state["busy_seconds"][p] += float(ends[p] - starts[p]) if count else 0.0
    ended = schedule_lib.account_tick(schedule, plan, losses, work, partial, histories, run.pretrain_elapsed)
    run.end_epochs(ended, steps_per_epoch * b)
    if ended:
      _log(progress, ended, histories, devices, stage_of, config.pretrain_epochs, steps_per_epoch * b)
    # A checkpoint when layer 1 has crossed an epoch boundary in this tick, and at the end.
    first, count = work[0]
    if k == plan.num_ticks - 1 or (first + count) // steps_per_epoch > first // steps_per_epoch:
      state["tick"] = k + 1
      with run.timer.phase("checkpoint_in_flight"):
        in_flight.store(inputs)
      run.save()
  state["tick"] = plan.num_ticks
  if config.polish_epochs:
    _polish(run, polish, [devices[stage_of[i][0]][0] for i in range(len(hidden))], images[0], devices[0][0],
            -(-plan.total_steps // steps_per_epoch), progress, polish_work)
  progress.close()
  wall = run.pretrain_elapsed
  busy = state["busy_seconds"]
  record = {
      "layers": [{"index": i + 1, "units": u, "device": ",".join(devices[stage_of[i][0]]),
                  "stage": stage_of[i][0] + 1, "epochs": histories[i],
                  **({"polish": polish[i]} if config.polish_epochs else {})} for i, u in enumerate(hidden)],
      "pipeline": dict(plan.describe(), devices=[d[0] for d in devices] if plan.replicas_per_stage == 1 else devices,
                       schedule=dict(schedule.describe(), polish_epochs=config.polish_epochs),
                       busy_seconds=busy, tick_seconds=timing.tail_summary(state.get("tick_seconds", [])),
                       idle_device_seconds=sum(wall - x for x in busy) if busy is not None else None,
                       flops=cost.pretraining_flops(hidden, config.pretrain_epochs, steps_per_epoch * b, pipelined=True,
                                                    input_units=plan.input_units)),
      "pretrain_seconds": wall,
  }
  record["layers"] += [{"index": i + 1, "units": u, "device": run.layer_devices[i], "stage": None, "epochs": []}
                       for i, u in enumerate(config.hidden_units) if i >= len(hidden)]  # not pretrained
  logging.info("Pretrained %d layer(s) in %.1f s on %d stage(s) (busy %s s per stage).", len(hidden), wall,
               plan.num_stages, ", ".join(f"{x:.1f}" for x in busy) if busy is not None else "unknown")
  return record


def _observe_starts(run: lifecycle.Run, schedule: schedule_lib.LayerSchedule, plan: placement.Plan, tick: int) -> None:
  """Before `tick`, sketches for the input-drift measure what each layer n > 1 reads at its first step (epoch -1 of
  `lifecycle.Run.observe_inputs`: the pipeline's layers read codes that move within an epoch), in the first tick whose
  first step of layer 1 is at or after that layer's start: the layers below as they are then (those of lower stages
  up to P - 1 chunks ahead)."""
  kept = run.state.get("input_drift", {})
  starting = {i: -1 for i in range(1, schedule.num_layers)
              if -(-schedule.start(i) // plan.chunk_steps) == tick and "-1" not in kept.get(str(i), {})}
  if starting:
    run.observe_inputs(starting, lambda i: run.layers[:i])


def _polish(run: lifecycle.Run, polish: List[List[Dict[str, Any]]], layer_devices: List[str], images: tf.Tensor,
            images_device: str, first_epoch: int, progress: progress_lib.Progress, work: List[float]) -> None:
  """--polish_epochs: each layer n > 1 in turn, bottom first, trains more epochs on frozen copies (on its device) of
  the final layers below it, greedy's step at --pretrain_learning_rate on epochs `first_epoch`, ... of the data's
  order and masks; each epoch's {"loss", "seconds", "epoch" (1-based, of the data), "elapsed_seconds"} appended to
  `polish[n - 1]`, then a checkpoint. Raises TrainingDivergedError as a pipelined epoch does."""
  config = run.config
  for i in range(1, len(polish)):
    if len(polish[i]) >= config.polish_epochs:
      continue
    device = layer_devices[i]
    with tf.device(device):
      frozen = [autoencoder.FrozenEncoder(layer) for layer in run.layers[:i]]
      on_device = images if device == images_device else tf.constant(run.data.train_images)
    trainer = autoencoder.LayerTrainer(run.layers[i], frozen, on_device, config.seed, config.corruption,
                                       config.batch_size, device, run.kernels)
    steps_fn = graph.function(trainer.run_steps)
    with run.timer.phase(timing.COMPILE_PHASE):  # Learning rate 0 changes nothing.
      steps_fn(tf.constant(0), tf.constant(0), tf.constant(1), tf.constant(0.0))[0].numpy()
    for e in range(len(polish[i]), config.polish_epochs):
      with run.training("pretrain_polish"):
        result = epochs_lib.run_epoch(steps_fn, first_epoch + e, trainer.steps_per_epoch,
                                      config.pretrain_learning_rate, run.chunks_per_epoch, progress, work[i],
                                      f"polishing loss of layer {i + 1}", "--pretrain_learning_rate")
      polish[i].append(dict(result, epoch=first_epoch + e + 1, elapsed_seconds=run.pretrain_elapsed))
      run.save()
      progress.log(f"layer {i + 1} polish epoch {e + 1}/{config.polish_epochs} loss {result['loss']:.4f}",
                   trainer.steps_per_epoch * config.batch_size, result["seconds"])


def _log(progress: progress_lib.Progress, ended: Dict[int, Dict[str, Any]], histories, devices, stage_of,
         epochs: int, examples_per_epoch: int) -> None:
  """One progress line for the layer-epochs that ended in a tick; examples/s of the first of them
  (an epoch's examples over the seconds since that layer's previous epoch ended)."""
  parts = [f"layer {i + 1}@{devices_lib.short_name(devices[stage_of[i][0]][0])} epoch {len(histories[i])}/{epochs} "
           f"loss {entry['loss']:.4f}" for i, entry in sorted(ended.items())]
  progress.log("; ".join(parts), examples_per_epoch, ended[min(ended)]["seconds"])
