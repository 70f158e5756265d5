"""Asynchronous data-parallel pretraining on TensorFlow's parameter-server strategy, then synchronous finetuning on
the coordinator.

Greedy layer order (`greedy.pretrain`): layer 1 for E epochs, then layer 2 on the frozen layer 1, and so on. The
layers' variables live on the parameter server(s) (`tf.distribute.ParameterServerStrategy`,
`common.distribute.parameter_server`); for each layer the coordinator (this process) schedules functions of K =
--steps_per_function steps on whichever worker is free (`scheduling.Scheduler`), and every step reads the current
weights, computes one batch's gradient on its worker and applies it at once (`worker_steps.LayerSteps`): the
asynchronous SGD of Dean et al. 2012, "Large scale distributed deep networks", section 4.1. Step t draws greedy's
batch and masks of step t, so with one worker this is greedy at the same batch; with W >= 2 workers the order in
which updates land depends on timing: the run is not deterministic (compare held-out reconstruction, not weights).

Each update's staleness is measured with a version counter on the parameter server; the record's "staleness"
and "faults" fields (`ledger.record_fields`) hold them per layer and epoch. Finetuning is synchronous SGD of the
whole stack on the coordinator's own device, after the pretrained weights are copied out of the parameter
server (`common.run.lifecycle.finish`).
"""

from typing import Any, Callable, Dict, Optional

from absl import logging
import tensorflow as tf

from async_data_parallel import config as config_lib
from async_data_parallel import ledger as ledger_lib
from async_data_parallel import program
from async_data_parallel import scheduling
from async_data_parallel import worker_steps
from common.base import progress as progress_lib
from common.measure import cost
from common.measure import timing
from common.model import autoencoder
from common.model import layer_warmup
from common.run import lifecycle
from common.training import epochs as epochs_lib

# Errors of a lost task: a parameter server (TensorFlow raises them to the coordinator), or any remote call of the
# coordinator's own (reading counters, checkpointing, copying the weights out).
_LOST = (tf.errors.UnavailableError, tf.errors.AbortedError, tf.errors.CancelledError)


def _lost_task(error: BaseException) -> bool:
  """True for a lost task's error, also when the coordinator wraps it (`original_exception`)."""
  return isinstance(error, _LOST) or isinstance(getattr(error, "original_exception", None), _LOST)


def train(config: config_lib.AsyncConfig,
          on_checkpoint: Optional[Callable[[lifecycle.Run], None]] = None) -> Dict[str, Any]:
  """Pretrains with asynchronous SGD, finetunes on the coordinator, exports, and writes the run record
  (`common.run.lifecycle`).

  Args:
    config: the run's configuration; without TF_CONFIG `num_devices` workers (and one parameter server) run in
      this process; with TF_CONFIG this process is the task it names (a "worker" or "ps" task only serves).
    on_checkpoint: called with the `lifecycle.Run` after every checkpoint (see `lifecycle.start`).

  Returns:
    The run record (`common.artifacts.runlog`) plus "staleness", "faults" and "async" (the cluster and settings), and with
    the benchmark-only straggler, "benchmark_only".

  Raises:
    scheduling.ClusterLostError: a parameter server was lost, or no worker for --worker_recovery_seconds.
    ValueError: a TF_CONFIG without a "ps" or "chief" task, or --num_devices != 1 with TF_CONFIG.
    common.base.errors.UserError subclasses for missing data, divergence, or a mismatched checkpoint.
  """
  try:
    with lifecycle.started(program.PROGRAM, config, on_checkpoint) as run:
      return lifecycle.finish(run, pretrain(run) if run.pretrains else lifecycle.no_pretraining(run))
  except Exception as e:  # pylint: disable=broad-except  # Only a lost task's errors become one line.
    if _lost_task(e):
      raise scheduling.ClusterLostError(scheduling.cluster_failure(getattr(e, "original_exception", e))) from None
    raise


def pretrain(run: lifecycle.Run) -> Dict[str, Any]:
  """The greedy order, each layer's functions of K steps scheduled on free workers."""
  config = run.config
  distribution, setup = run.distribution, run.devices
  coordinator = tf.distribute.coordinator.ClusterCoordinator(distribution)
  num_workers = len(setup.names)
  # A function never holds more than a worker's share of an epoch: with more, the workers would take turns (one
  # function an epoch) and never update concurrently.
  share = max(1, (run.data.num_train // config.batch_size) // num_workers)
  steps_per_function = min(config.steps_per_function, share)
  if steps_per_function < config.steps_per_function:
    logging.info("Functions of %d step(s), not --steps_per_function=%d: an epoch has %d step(s) for %d worker(s), "
                 "and a function holds at most a worker's share of it.", steps_per_function,
                 config.steps_per_function, run.data.num_train // config.batch_size, num_workers)
  scheduler = scheduling.Scheduler(coordinator, () if setup.cluster["in_process"] else setup.cluster["worker"],
                                   steps_per_function, config.worker_recovery_seconds)
  with distribution.scope():
    counters = worker_steps.Counters()
  # Per-worker copies are made lazily: when the first function is traced (the compile phase below).
  images = worker_steps.per_worker_copies(
      distribution, lambda: tf.Variable(run.data.train_images, trainable=False, name="train_images"))
  hidden, epochs, n = config.hidden_units, config.pretrain_epochs, run.data.num_train
  pretrain_state = run.state.setdefault("pretrain", {"layers": [[] for _ in hidden]})
  histories = pretrain_state["layers"]
  entries = pretrain_state.setdefault("async", [])  # One `EpochLedger.close` entry per layer-epoch trained.
  # --pretrain_layers=K: the first K layers train; those above keep their initial weights.
  work = [cost.layer_epoch_flops(hidden, i + 1, n, run.data.input_units) for i in range(config.pretrain_layers)]
  done = sum(w * len(h) for w, h in zip(work, histories))
  progress = progress_lib.Progress(sum(w * epochs for w in work), "pretrain", config.show_progress, done)
  ledger = ledger_lib.EpochLedger(num_workers)
  trace = config.profile_dir  # --profile_dir traces the first epoch this process trains.
  for i, layer in enumerate(run.layers[:config.pretrain_layers]):
    if len(histories[i]) >= epochs:
      continue
    frozen = worker_steps.per_worker_copies(distribution, lambda: [autoencoder.FrozenEncoder(l) for l in run.layers[:i]])
    steps = worker_steps.LayerSteps(layer, frozen, images, counters, config.seed, config.corruption,
                                    config.batch_size, run.kernels, config.staleness_aware_lr,
                                    config.benchmark_slow_worker_delay_seconds,
                                    layer_warmup.warmup_steps(i, config.layer_warmup_epochs, n // config.batch_size))
    with run.timer.phase(timing.COMPILE_PHASE):  # Tracing, and the copies to the workers; learning rate 0.
      scheduler.collect(scheduler.submit(steps.function, 0, 0, 1, 0.0))
    in_flight = []  # The functions of the epoch's previous chunk.
    origin = [0]  # The version from which the layer's applied updates count (its layer warm-up's own steps).

    def steps_fn(epoch, first_step, num_steps, learning_rate, index=i, steps=steps):
      # A chunk (the progress bar cuts an epoch in several) waits for the previous chunk's functions, not its own,
      # so that the workers never run dry between chunks; the epoch's last chunk waits for all of them.
      epoch, first_step, num_steps = int(epoch), int(first_step), int(num_steps)
      if first_step == 0:
        now = counters.read()
        ledger.reset(now, scheduler.scheduled)
        in_flight.clear()
        # The updates the layer's earlier epochs applied (also those of an earlier process: the ledger's entries).
        origin[0] = now[0] - sum(e["faults"]["updates_applied"] for e in entries if e["layer"] == index + 1)
      previous = list(in_flight)
      in_flight[:] = scheduler.submit(steps.function, epoch, first_step, num_steps, float(learning_rate), origin[0])
      last = first_step + num_steps == steps.steps_per_epoch
      total, staleness, workers = scheduler.collect(previous + (in_flight if last else []))
      ledger.add(staleness, workers)
      if last:  # The epoch's end: its entry joins the next checkpoint.
        entry = ledger.close(index + 1, epoch + 1, steps.steps_per_epoch, counters.read(), scheduler.scheduled)
        entries.append(entry)
        run.summaries.scalar(f"pretrain/layer{index + 1}/staleness_mean", entry["staleness"]["mean"], epoch + 1)
        logging.info("layer %d epoch %d: staleness mean %.2f, max %s over %d updates; functions per worker %s; "
                     "rescheduled %d", index + 1, epoch + 1, entry["staleness"]["mean"] or 0.0,
                     entry["staleness"]["max"], entry["staleness"]["updates"], entry["functions_per_worker"],
                     entry["faults"]["rescheduled_functions"])
      return (total,)

    for epoch in range(len(histories[i]), epochs):
      with timing.trace(trace), run.training():
        result = epochs_lib.run_epoch(steps_fn, epoch, steps.steps_per_epoch, config.pretrain_learning_rate,
                                      run.chunks_per_epoch, progress, work[i], f"pretraining loss of layer {i + 1}",
                                      "--pretrain_learning_rate")
      trace = None
      run.end_layer_epoch(i, result, steps.steps_per_epoch * config.batch_size, progress)
  progress.close()
  alive = scheduler.live_workers() if scheduler.worker_addresses else None
  record = {
      "layers": [{"index": i + 1, "units": u, "device": ps_devices(layer), "epochs": histories[i]}
                 for i, (u, layer) in enumerate(zip(hidden, run.layers))],
      "pretrain_seconds": sum(e["seconds"] for h in histories for e in h),
      **ledger_lib.record_fields(entries, len(hidden), config.staleness_aware_lr, alive),
      "async": {"workers": num_workers, "worker_devices": list(setup.names), "ps": len(setup.cluster["ps"]),
                "in_process_cluster": setup.cluster["in_process"], "steps_per_function": steps_per_function,
                "steps_per_function_requested": config.steps_per_function,
                "deterministic": num_workers == 1,
                "finetuning": "synchronous SGD of the whole stack on the coordinator's device "
                              f"({run.finetune_device}), the pretrained weights copied out of the parameter server"},
  }
  if config.benchmark_slow_worker_delay_seconds:
    record["benchmark_only"] = timing.straggler_record(config.benchmark_slow_worker_delay_seconds)
  logging.info("Pretrained %d layer(s) asynchronously on %d worker(s) in %.1f s (steady-state training time); "
               "staleness mean %.2f, max %s; %d function(s) rescheduled.", len(hidden), num_workers,
               record["pretrain_seconds"], record["staleness"]["mean"] or 0.0, record["staleness"]["max"],
               record["faults"]["rescheduled_functions"])
  return record


def ps_devices(layer: autoencoder.DenoisingAutoencoder) -> str:
  """The devices holding a layer's variables, e.g. "/job:ps/replica:0/task:0/device:CPU:0" (comma-separated when
  they are spread over several parameter servers)."""
  return ",".join(dict.fromkeys(v.device for v in layer.weights))
