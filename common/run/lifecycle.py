"""What every training program does around its pretraining schedule, called by the program's own `train`
(`<program>/pretrain.py`): `started` (or `start`) before its schedule, `finish` after.

`start` checks every output location (`common.artifacts.outputs`), sets up the devices (the one place that does:
logical CPU devices, GPUs, or a cluster's workers), takes the lock of `--model_dir` (`common.artifacts.lock`), loads
the data, builds the layers and the classifier where the program places them (its `plan` and `place`, passed in),
and restores the newest intact checkpoint of `--model_dir`; the program then runs its schedule, timing its training
blocks with `Run.training` and reporting each finished layer-epoch with `Run.end_epochs` (elapsed time, held-out
loss, TensorBoard); `finish` evaluates the held-out reconstruction, probes the layers, finetunes, exports the weights
and writes the run record.

Words: the program (`common.settings.programs.Program`), the distribution (a `tf.distribute.Strategy`), the run (`Run`,
`common.run.state`), the run record (a dict, `common.artifacts.runlog`).
"""

import contextlib
import dataclasses
import os
import time
from typing import Any, Callable, Dict, Iterator, List, Optional, Tuple

from absl import logging
import tensorflow as tf

from common.artifacts import checkpoint as checkpoint_lib
from common.artifacts import lock as lock_lib
from common.artifacts import outputs
from common.artifacts import pictures
from common.artifacts import runlog
from common.artifacts import summaries as summaries_lib
from common.data import loader as data_lib
from common.distribute import cluster
from common.distribute import devices as devices_lib
from common.distribute import parameter_server
from common.distribute import replica_steps
from common.distribute import slurm
from common.measure import provenance
from common.measure import timing
from common.model import autoencoder
from common.model import evaluation
from common.model import export
from common.model import input_drift
from common.model import precision as precision_lib
from common.run.state import Run  # the state `start` builds; the programs' schedules take a `lifecycle.Run`
from common.settings import config as config_lib
from common.settings import programs
from common.settings import processor_defaults
from common.training import finetune
from common.training import finetune_pipeline
from common.training import linear_probe


def setup_devices(config: config_lib.Config, program: programs.Program
                  ) -> Tuple[devices_lib.DeviceSetup, Optional[tf.distribute.Strategy]]:
  """The devices of a run, and its distribution when it has one: the one place devices are set up.

  Args:
    config: uses num_devices, threads_per_device and thread_pool ("auto": the program's default).
    program: the registered program; its `cluster` says what it does when TF_CONFIG describes a cluster.

  Returns:
    (DeviceSetup, distribution or None). A "client_server" worker task, or a "parameter_server" worker or ps task,
    never returns: it serves its devices.

  Raises:
    ValueError: the devices cannot be made, TF_CONFIG is malformed, or the servers of a Slurm cluster did not start
      (`common.distribute.slurm.wait_for_servers`).
  """
  pool = config.thread_pool_setting(program.default_thread_pool(config.precision))
  slurm.wait_for_servers()  # The chief of a Slurm cluster of servers: srun started them with it.
  if program.cluster == "parameter_server":  # Always a cluster: TF_CONFIG's, or one started in this process.
    distribution, setup = parameter_server.strategy(program.name, config.num_devices, config.threads_per_device, pool)
    return setup, distribution
  if program.cluster == "none" or cluster.task() is None:
    setup = devices_lib.setup(config.num_devices, config.threads_per_device, pool)
    # A "multi_worker" program (data parallel) trains under a `MirroredStrategy` over this process's devices.
    return setup, replica_steps.make_strategy(setup.names) if program.cluster == "multi_worker" else None
  if program.cluster == "client_server":
    return cluster.serve_or_connect(config.num_devices, config.threads_per_device), None
  distribution, setup = cluster.multi_worker_strategy(config.num_devices, config.threads_per_device)
  return setup, distribution


def _finetune_distribution(config: config_lib.Config, setup: devices_lib.DeviceSetup
                           ) -> Optional[tf.distribute.Strategy]:
  """Finetuning on every device of this process: a `MirroredStrategy` over the first k of its devices, k the
  largest count up to all of them that divides the finetuning batch (each replica an equal share; the summed
  gradient is the one-device gradient of the global batch), or None for one device. In a cluster of servers the
  client (or coordinator) finetunes on its own device (the servers' devices are remote): None."""
  if setup.cluster is not None:
    return None
  batch = config.effective_finetune_batch_size
  k = max(g for g in range(1, len(setup.names) + 1) if batch % g == 0)
  if k < len(setup.names):
    logging.info("Finetuning on %d of the %d devices: the finetuning batch %d is not divisible by %d.", k,
                 len(setup.names), batch, len(setup.names))
  return replica_steps.make_strategy(setup.names[:k]) if k > 1 else None


def _writes_outputs(program: programs.Program) -> Optional[bool]:
  """Whether this process writes the record and weights: None for a task that only serves (a worker or ps task of a
  cluster whose chief runs the program), True for the chief (task "chief", worker 0 of a multi-worker run, or no
  cluster at all), False for another worker of a multi-worker run."""
  task = cluster.task() if program.cluster != "none" else None
  if task is None:
    return True
  if program.cluster in ("client_server", "parameter_server") and task[0] != "chief":
    return None
  return task in (("chief", 0), ("worker", 0))


@contextlib.contextmanager
def started(program: programs.Program, config: config_lib.Config,
            on_checkpoint: Optional[Callable[[Run], None]] = None, plan: Optional[Callable[..., Any]] = None,
            place: Optional[Callable[..., List[str]]] = None,
            checkpoint_objects: Optional[Callable[..., Dict[str, Any]]] = None) -> Iterator[Run]:
  """The started run of `program` (`start`), inside a Slurm job step of several tasks its task of the cluster
  (`common.distribute.slurm.task_of_step`). A program's `train` reads:

    with lifecycle.started(program.PROGRAM, config, on_checkpoint, plan=plan, place=place) as run:
      record = pretrain(run) if run.pretrains else lifecycle.no_pretraining(run)
      return lifecycle.finish(run, record)

  Args: as `start`. Raises: as `start`, and as `common.distribute.slurm.start` does under Slurm.
  """
  if config.program != program.name:
    config = dataclasses.replace(config, program=program.name)
  # The parameter-server programs' Config declares `ps`.
  with slurm.task_of_step(program.name, program.cluster, getattr(config, "ps", 1)):
    yield start(config, program, on_checkpoint, plan, place, checkpoint_objects)


def no_pretraining(run: Run) -> Dict[str, Any]:
  """The program's part of the record of a run with --pretrain_epochs=0 (or --pretrain_layers=0), instead of its
  schedule: every layer keeps its initial weights (the ones pretraining would have started from), so finetuning starts
  from the initialization."""
  logging.info("No pretraining (--pretrain_epochs=0 or --pretrain_layers=0): finetuning starts from the initial "
               "weights.")
  return {"layers": [{"index": i + 1, "units": u, "device": d, "epochs": []}
                     for i, (u, d) in enumerate(zip(run.config.hidden_units, run.layer_devices))],
          "pretrain_seconds": 0.0, "pretrained": False}


def start(config: config_lib.Config, program: programs.Program,
          on_checkpoint: Optional[Callable[[Run], None]] = None, plan: Optional[Callable[..., Any]] = None,
          place: Optional[Callable[..., List[str]]] = None,
          checkpoint_objects: Optional[Callable[..., Dict[str, Any]]] = None) -> Run:
  """Sets up a run: devices, data, model placed where the program says, and the latest checkpoint of
  `config.model_dir`.

  Args:
    config: the configuration (already validated).
    program: the registered program (`common.settings.programs`): its cluster shape, and the kernel path and thread
      pool that config.kernels and config.thread_pool "auto" stand for.
    on_checkpoint: called with the `Run` after each checkpoint is written (tests use it to kill the process or inject a
      fault at a chosen point; `Run.checkpoints_saved` counts them). Default: the
      `common.distribute.cluster.KILL_ENV` test hook when that variable names this process, else none.
    plan: `plan(config, devices, dataset)`, the program's layout (kept as `Run.plan`); None: no plan.
    place: `place(plan, devices) -> [device of each layer]`; the layers it leaves out (above those that train) and
      every layer without it: the first device.
    checkpoint_objects: `checkpoint_objects(plan, devices, config) -> {name: trackable}`, checkpointed with the
      weights (kept as `Run.checkpoint_objects`); None: nothing more.

  Raises:
    ValueError: devices cannot be made, or the flags do not fit the data (`Config.check_data`).
    DataUnavailableError: the data is missing. DataError: the data is unknown or malformed (`common.data.loader.load`).
    UserError: --precision=mixed_bfloat16 on a processor without native bfloat16 (`common.model.precision`).
    ResumeMismatchError: `model_dir` holds a checkpoint of a different configuration.
    OutputPathError: an output location cannot be written (`common.artifacts.outputs.check`, before anything else).
    ModelDirInUseError: another running process holds `model_dir` (`common.artifacts.lock`).
    CheckpointUnusableError: `model_dir` holds checkpoint files of which none can be read.
  """
  started = time.perf_counter()
  provenance.fields()  # The code that runs is the code at the start (cached; the record is written at the end).
  writes = _writes_outputs(program)  # None for a task that only serves its devices: it needs no data.
  if writes is not None:
    if program.cluster == "parameter_server" and cluster.tf_config():
      parameter_server.check_tf_config(cluster.tf_config(), program.name, config.num_devices)
    # The data first: bad data is refused before anything is written; --train_examples defaults to all of it.
    info = data_lib.describe(config.dataset, config.data_dir)
    config.check_data(info)
    if config.train_examples is None:
      config = dataclasses.replace(config, train_examples=info.train)
    # Every output location is checked before anything is built.
    outputs.check(config, chief=writes)
  precision_lib.check_supported(config.precision)
  device_setup, distribution = setup_devices(config, program)
  chief = distribution is None or distribution.extended.should_checkpoint
  # One writer per model directory: the chief (the workers of a multi-worker run share it).
  model_dir_lock = lock_lib.acquire(config.model_dir) if config.model_dir and chief else None
  data = data_lib.load(config.dataset, config.data_dir, config.train_examples)
  first = device_setup.names[0]
  layout = plan(config, device_setup, data) if plan else None
  layer_devices = list(place(layout, device_setup) if place else [])
  # The layers the hook did not place (above the --pretrain_layers that train) go to the first device.
  layer_devices += [first] * (len(config.hidden_units) - len(layer_devices))
  # In a client/server cluster the client (this process) finetunes; its workers hold the layers. A
  # parameter-server program's coordinator (this process) finetunes; the ps tasks hold the layers.
  finetune_device = first
  if program.cluster == "client_server" and cluster.task():
    finetune_device = cluster.client_device()
  elif program.cluster == "parameter_server":
    finetune_device = parameter_server.COORDINATOR_DEVICE
  mirrored = program.cluster == "multi_worker"
  placement = finetune.auto_placement(config.precision, device_setup.thread_pool, len(device_setup.names)) if \
      config.finetune_placement == "auto" else config.finetune_placement
  finetune_distribution, finetune_devices = distribution if mirrored else None, None
  if not mirrored and placement == "replicas":
    finetune_distribution = _finetune_distribution(config, device_setup)
  elif not mirrored and placement == "pipelined" and device_setup.cluster is None and len(device_setup.names) > 1:
    finetune_devices = finetune_pipeline.layer_devices(config.hidden_units, data.input_units, data.num_classes or 1,
                                                       device_setup.names)
  with distribution.scope() if distribution is not None else tf.device(first):
    layers = autoencoder.build_stack(config.hidden_units, config.seed, data.input_units,
                                     devices=None if distribution else layer_devices, precision=config.precision)
  classifier = None  # Data without labels is pretrained only.
  if data.num_classes:
    with finetune_distribution.scope() if finetune_distribution is not None else tf.device(finetune_device):
      classifier = finetune.Classifier(config.hidden_units, config.seed, data.input_units, data.num_classes,
                                       precision=config.precision, devices=finetune_devices)
  extra = checkpoint_objects(layout, device_setup, config) if checkpoint_objects else {}
  objects = dict(layers=layers, **({"classifier": classifier} if classifier is not None else {}), **extra)
  # Your own arrays are known by their content: a checkpoint of other arrays at the same path is not resumed.
  ckpt = checkpoint_lib.CheckpointState(config.model_dir, config, chief=chief,
                                        data_fingerprint={"dataset_sha256": data.info.source.get("sha256")}, **objects)
  state = ckpt.restore()
  resumed = state is not None
  state = state or {}
  state.pop("config", None)
  clock = state.setdefault("clock", {"pretrain_seconds": 0.0, "pretrain_cpu_seconds": 0.0})
  # The run's wall seconds before this process: the earlier processes' up to their last checkpoint.
  clock["earlier_processes_seconds"] = clock.get("run_seconds", 0.0)
  clock["processes"] = clock.get("processes", 0) + 1
  # Under a mirrored strategy the layers are on every replica: evaluate on this process's default device.
  evaluator = evaluation.HeldoutEvaluator(data.test_images, config.corruption, None if mirrored else finetune_device)
  drift = input_drift.InputDrift(data.validation_images, config.hidden_units, None if mirrored else finetune_device)
  return Run(
      config=config, program=program, devices=device_setup, data=data, layers=layers, classifier=classifier,
      state=state, timer=timing.PhaseTimer(), resumed=resumed, started=started, chief=chief,
      finetune_device=finetune_device, layer_devices=layer_devices, distribution=distribution,
      finetune_distribution=finetune_distribution, finetune_devices=finetune_devices,
      kernels=config.kernel_path(program.default_kernels(config.precision)),
      evaluator=evaluator, drift=drift, summaries=summaries_lib.Summaries(config.tensorboard_dir if chief else None,
                                                             config.effective_run_name),
      checkpoint=ckpt, on_checkpoint=on_checkpoint or cluster.fault_hook_from_environment(), lock=model_dir_lock,
      plan=layout, checkpoint_objects=extra)


def finish(run: Run, record: Dict[str, Any], **finetune_options) -> Dict[str, Any]:
  """Evaluates the held-out reconstruction, probes the layers (with --linear_probe_epochs), finetunes (unless
  finetune_epochs is 0), exports weights, writes and returns the run record.

  Args:
    run: the run.
    record: the program's record with "strategy", "layers", "pretrain_seconds" and its own "timing"
      entries filled in; "config", "environment", "heldout_reconstruction", "pretrain_cpu_seconds",
      "finetune", "timing" and "total_seconds" are completed here.
    **finetune_options: more keyword arguments of `finetune.run_finetuning`: a program's own recipe
      (learning_rate, lr_multiplier, rule); none: plain SGD at config.finetune_learning_rate, on
      `run.finetune_distribution`, else `run.finetune_device`.
  """
  config = run.config
  with run.timer.phase("heldout_eval"):
    heldout = run.evaluator.losses(run.layers)
  logging.info("Held-out reconstruction loss per layer (test images, fixed masks): %s",
               ", ".join(f"layer {i + 1} {v:.2f}" for i, v in enumerate(heldout)))
  with run.timer.phase("input_drift"):
    drift = run.drift.summary(run.state, run.layers)
  if config.linear_probe_epochs and run.chief:
    if run.data.num_classes is None:
      record["linear_probe_note"] = f"no linear probe: --dataset={run.data.info.name} has no labels"
      logging.info("No linear probe: --dataset=%s has no labels.", run.data.info.name)
    else:
      if "linear_probe" not in run.state:  # Kept in the checkpoints: a resumed run does not probe again.
        with run.timer.phase("linear_probe"):
          run.state["linear_probe"] = linear_probe.run(run.layers, run.data, config.linear_probe_epochs, config.seed,
                                                       run.evaluator.device)
      record["linear_probe"] = run.state["linear_probe"]
      logging.info("Linear probe per layer (validation / test accuracy): %s", ", ".join(
          f"layer {p['layer']} {p['validation_accuracy']:.4f} / {p['test_accuracy']:.4f}"
          for p in record["linear_probe"]))
  if config.finetune_epochs > 0:
    record["finetune"] = finetune.run_finetuning(
        run.classifier, run.layers, run.data, config, run.state, lambda _: run.save(), run.timer,
        device=run.finetune_device, strategy=run.finetune_distribution, chunks_per_epoch=run.chunks_per_epoch,
        summaries=run.summaries, devices=run.finetune_devices, **finetune_options)
    logging.info("Finetuned %d epochs: validation accuracy %.4f, test accuracy %.4f",
                 config.finetune_epochs, record["finetune"]["validation_accuracy"],
                 record["finetune"]["test_accuracy"])
  if (config.export_weights or config.export_model) and run.chief:
    weights = runlog.layer_weights(run.layers)
    if config.finetune_epochs > 0:
      weights.update(export.classifier_weights(run.classifier))
    if config.export_weights:
      written = outputs.write_with_fallback(lambda path: runlog.export_weights(path, weights),
                                            outputs.weights_file(config.export_weights), "exported weights")
      logging.info("Exported pretrained weights to %s%s", written,
                   " (and the finetuned classifier's, finetuned/...)" if config.finetune_epochs else "")
    if config.export_model:
      with run.timer.phase("export_model"):
        record["export_model"] = export.save(config.export_model, weights, {
            "dataset": run.data.info.name, "program": run.program.name})
      logging.info("Exported the model (SavedModel: %s) to %s", ", ".join(record["export_model"]["signatures"]),
                   config.export_model)
  run.summaries.flush()
  full = runlog.new_record(config, run.devices)
  full["environment"]["kernels"] = run.kernels
  # Which processor class's measurements gave each `auto` choice (common/settings/processor_defaults.py).
  full["environment"]["auto_from"] = processor_defaults.sources(run.program.name, config.precision)
  full["dataset"] = run.data.describe()
  full.update(record)
  full["heldout_reconstruction"] = [{"layer": i + 1, "loss": v} for i, v in enumerate(heldout)]
  full["input_drift"] = drift
  full["pretrain_cpu_seconds"] = run.pretrain_cpu_seconds
  full["timing"] = dict(record.get("timing", {}), **run.timer.as_dict())
  full["resumed"] = run.resumed
  if run.resumed:
    full["resumed_from"] = run.checkpoint.restored_from
  if run.checkpoint.skipped:
    full["skipped_checkpoints"] = list(run.checkpoint.skipped)
  full["total_seconds"] = time.perf_counter() - run.started
  # total_seconds is this process's; a resumed run's processes together took run_seconds.
  full["process_seconds"] = full["total_seconds"]
  full["run_seconds"] = run.run_seconds
  full["run_processes"] = int(run._clock.get("processes", 1))
  full["run_name"] = config.effective_run_name
  full["warnings"] = runlog.health_warnings(full)
  full["diverged"] = bool(full["warnings"])
  for message in full["warnings"]:
    logging.warning("%s", message)
  path = None
  if run.chief and config.results_dir:
    if config.pictures:
      with run.timer.phase("pictures"):
        drawn = pictures.draw(os.path.splitext(runlog.record_path(full, config))[0], runlog.layer_weights(run.layers),
                              run.data.test_images, run.data.info.image_shape,
                              f"{config.effective_run_name} ({run.data.info.name})")
      full["pictures"] = [os.path.basename(p) for p in drawn if p]
      if drawn[0] is None:
        logging.info("No filter picture: --dataset=%s is flat (not images).", run.data.info.name)
      full["timing"]["pictures"] = run.timer.as_dict()["pictures"]
    path = outputs.write_with_fallback(lambda p: runlog.write_record(full, config, p),
                                       runlog.record_path(full, config), "run record")
  if path:
    logging.info("Run record: %s", path)
  if run.lock is not None:
    run.lock.release()
  return full
