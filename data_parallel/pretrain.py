"""Data-parallel pretraining (the report's "dataparallel" branch), then data-parallel finetuning.

Greedy layer order (`greedy.pretrain`): layer 1 for E epochs, then layer 2 on the frozen layer 1, and
so on; but every step the global batch B is split over the G replicas of a
`tf.distribute.MirroredStrategy` (G GPUs or G logical CPU devices; with TF_CONFIG,
`tf.distribute.MultiWorkerMirroredStrategy` over the workers of a cluster, `common.distribute.cluster`) and the
replicas' gradients are summed and applied once (`data_parallel.replicas`). With the same seed and B
this computes what greedy computes, up to float rounding. Finetuning runs data parallel too (`common.training.finetune`).

The learning rates are the given ones unless the large-batch recipe is asked for
(`data_parallel.config`); layer 1's step is profiled phase by phase (`data_parallel.profile`) into the
record's "profile" and "timing".
"""

from typing import Any, Callable, Dict, Optional

from absl import logging

from common.base import progress as progress_lib
from common.distribute import replica_steps
from common.measure import cost
from common.measure import timing
from common.model import autoencoder
from common.model import layer_warmup
from common.run import lifecycle
from common.training import epochs as epochs_lib
from data_parallel import config as config_lib
from data_parallel import profile as profile_lib
from data_parallel import program
from data_parallel import replicas


def train(config: config_lib.DataParallelConfig,
          on_checkpoint: Optional[Callable[[lifecycle.Run], None]] = None) -> Dict[str, Any]:
  """Pretrains data parallel (`pretrain`), finetunes data parallel (`finetune_options`), exports, and writes the run
  record (`common.run.lifecycle`).

  Args:
    config: the run's configuration; `num_devices` replicas (per worker with TF_CONFIG), `batch_size`
      and the finetuning batch are global batches divisible by the number of replicas.
    on_checkpoint: called with the `lifecycle.Run` after every checkpoint (see `lifecycle.start`).

  Returns:
    The run record (`common.artifacts.runlog`) plus "profile" (layer 1's op profile, when profile_steps > 0) and
    "learning_rates" (the recipe as applied); "layers"[i]["device"] lists every replica's device.

  Raises:
    ValueError: a global batch is not divisible by the replicas, or the devices cannot be made.
    common.base.errors.UserError subclasses for missing data, divergence, or a mismatched checkpoint.
  """
  with lifecycle.started(program.PROGRAM, config, on_checkpoint) as run:
    record = pretrain(run) if run.pretrains else lifecycle.no_pretraining(run)
    return lifecycle.finish(run, record, **finetune_options(run))


def pretrain(run: lifecycle.Run) -> Dict[str, Any]:
  """The greedy order, every step's batch split over the replicas of `run.distribution`."""
  config = run.config
  # With TF_CONFIG every worker runs this under MultiWorkerMirroredStrategy (docs/multi_host.md).
  distribution, device_setup = run.distribution, run.devices
  images = replica_steps.replica_resident(distribution, run.data.train_images)
  hidden, epochs, n = config.hidden_units, config.pretrain_epochs, run.data.num_train
  steps_per_epoch = n // config.batch_size
  pretrain_state = run.state.setdefault("pretrain", {"layers": [[] for _ in hidden]})
  histories = pretrain_state["layers"]
  # --pretrain_layers=K: the first K layers train; those above keep their initial weights.
  work = [cost.layer_epoch_flops(hidden, i + 1, n, run.data.input_units) for i in range(config.pretrain_layers)]
  done = sum(w * len(h) for w, h in zip(work, histories))
  progress = progress_lib.Progress(sum(w * epochs for w in work), "pretrain", config.show_progress, done)
  learning_rate = config.pretrain_learning_rate_after_warmup()
  trace = config.profile_dir  # --profile_dir traces the first epoch this process trains.
  for i, layer in enumerate(run.layers[:config.pretrain_layers]):
    if len(histories[i]) >= epochs and (i > 0 or "profile" in pretrain_state or not config.profile_steps):
      continue
    trainer = autoencoder.LayerTrainer(layer, run.layers[:i], images, config.seed, config.corruption,
                                       config.batch_size, kernels=run.kernels, warmup_steps=layer_warmup.warmup_steps(
                                           i, config.layer_warmup_epochs, steps_per_epoch))
    lr_multiplier = config_lib.lr_warmup(learning_rate / config.pretrain_learning_rate, config.lr_warmup_epochs,
                                         steps_per_epoch)
    dp = replicas.DataParallelTrainer(distribution, trainer, lr_multiplier,
                                      config.benchmark_slow_worker_delay_seconds)
    with run.timer.phase(timing.COMPILE_PHASE):  # Tracing and XLA compilation; learning rate 0 changes nothing.
      dp.compile()
    if i == 0 and config.profile_steps and "profile" not in pretrain_state:
      with run.timer.phase("profile"):
        pretrain_state["profile"] = profile_lib.profile_layer(dp, config.profile_steps, config.profile_repeats)
      logging.info("Op profile of layer 1, seconds per epoch: %s", ", ".join(
          f"{k} {v:.3f}" for k, v in pretrain_state["profile"]["seconds_per_epoch"].items()))
    steps_fn = dp.steps_function()
    for epoch in range(len(histories[i]), epochs):
      with timing.trace(trace), run.training():
        result = epochs_lib.run_epoch(steps_fn, epoch, steps_per_epoch, learning_rate, run.chunks_per_epoch,
                                      progress, work[i], f"pretraining loss of layer {i + 1}",
                                      "--pretrain_learning_rate")
      trace = None
      run.end_layer_epoch(i, result, steps_per_epoch * config.batch_size, progress)
  progress.close()
  devices = ",".join(device_setup.names)
  record = {
      "layers": [{"index": i + 1, "units": u, "device": devices, "epochs": histories[i]} for i, u in enumerate(hidden)],
      "pretrain_seconds": sum(e["seconds"] for h in histories for e in h),
      "learning_rates": {
          "pretrain": learning_rate, "finetune": config.finetune_learning_rate_after_warmup(),
          "lr_warmup_epochs": config.lr_warmup_epochs, "reference_batch_size": config.reference_batch_size,
          "finetune_update_rule": config.finetune_update_rule().describe()},
  }
  profile = pretrain_state.get("profile")
  if profile:
    layer1 = [e["seconds"] for e in histories[0]]
    record["profile"] = dict(profile, measured_seconds_per_epoch=sum(layer1) / len(layer1), layer=1)
    record["timing"] = {f"profile/{k}": v for k, v in profile["seconds_per_epoch"].items()}
  if config.benchmark_slow_worker_delay_seconds:
    record["benchmark_only"] = timing.straggler_record(config.benchmark_slow_worker_delay_seconds)
  logging.info("Pretrained %d layer(s) on %d replica(s) in %.1f s (steady-state training time).", len(hidden),
               distribution.num_replicas_in_sync, record["pretrain_seconds"])
  return record


def finetune_options(run: lifecycle.Run) -> Dict[str, Any]:
  """Finetuning's options (`common.run.lifecycle.finish`): the recipe's learning rate, rate warm-up and update rule."""
  config = run.config
  lr_multiplier = None
  if config.finetune_epochs:
    steps = run.data.num_train // config.effective_finetune_batch_size
    lr_multiplier = config_lib.lr_warmup(config.finetune_warmup_factor(), config.lr_warmup_epochs, steps)
  return dict(learning_rate=config.finetune_learning_rate_after_warmup(), lr_multiplier=lr_multiplier,
              rule=config.finetune_update_rule())
