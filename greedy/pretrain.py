"""Greedy layer-wise pretraining, the baseline of every speedup (Bengio et al. 2007, "Greedy layer-wise
training of deep networks"; the report's "greedy" branch).

Layer 1 trains for E epochs on corrupted images; then it is frozen and layer 2 trains E epochs on its
outputs; and so on; then the whole stack is finetuned. Epoch e of every layer uses the shuffling order
and corruption masks of (seed, e). Everything runs on the first device.
"""

from typing import Any, Callable, Dict, Optional

from absl import logging
import tensorflow as tf

from common.base import progress as progress_lib
from common.measure import cost
from common.measure import timing
from common.model import autoencoder
from common.model import graph
from common.model import layer_warmup
from common.run import lifecycle
from common.settings import config as config_lib
from common.training import epochs as epochs_lib
from greedy import program


def train(config: config_lib.Config, on_checkpoint: Optional[Callable[[lifecycle.Run], None]] = None
          ) -> Dict[str, Any]:
  """Pretrains greedily (`pretrain`), finetunes, exports, and writes the run record (`common.run.lifecycle`).

  Args:
    config: the run's configuration (`num_devices` > 1 is allowed; only the first device is used).
    on_checkpoint: called with the `lifecycle.Run` after every checkpoint (see `lifecycle.start`).

  Returns:
    The run record (see `common.artifacts.runlog`); "layers" holds every layer's per-epoch loss and seconds.

  Raises:
    common.base.errors.UserError subclasses for missing data, divergence, or a mismatched checkpoint.
  """
  with lifecycle.started(program.PROGRAM, config, on_checkpoint) as run:
    return lifecycle.finish(run, pretrain(run) if run.pretrains else lifecycle.no_pretraining(run))


def pretrain(run: lifecycle.Run) -> Dict[str, Any]:
  """Every layer for its remaining epochs, bottom first, on the first device; returns the program's part of the run
  record ("layers", "pretrain_seconds")."""
  config = run.config
  device = run.devices.names[0]
  with tf.device(device):
    images = tf.constant(run.data.train_images)
  hidden, epochs, n = config.hidden_units, config.pretrain_epochs, run.data.num_train
  steps_per_epoch = n // config.batch_size
  histories = run.state.setdefault("pretrain", {"layers": [[] for _ in hidden]})["layers"]
  # --pretrain_layers=K: the first K layers train; those above keep their initial weights.
  work = [cost.layer_epoch_flops(hidden, i + 1, n, run.data.input_units) for i in range(config.pretrain_layers)]
  done = sum(w * len(h) for w, h in zip(work, histories))
  progress = progress_lib.Progress(sum(w * epochs for w in work), "pretrain", config.show_progress, done)
  trace = config.profile_dir  # --profile_dir traces the first epoch this process trains (not its compile phase).
  for i, layer in enumerate(run.layers[:config.pretrain_layers]):
    if len(histories[i]) >= epochs:
      continue
    # Layer i reads the trained layers below it; its own steps tau = e S + s set its layer warm-up.
    trainer = autoencoder.LayerTrainer(layer, run.layers[:i], images, config.seed, config.corruption,
                                       config.batch_size, device, run.kernels,
                                       layer_warmup.warmup_steps(i, config.layer_warmup_epochs, steps_per_epoch))
    steps_fn = graph.function(trainer.run_steps)
    with run.timer.phase(timing.COMPILE_PHASE):  # Tracing and XLA compilation; learning rate 0 changes nothing.
      steps_fn(tf.constant(0), tf.constant(0), tf.constant(1), tf.constant(0.0))[0].numpy()
    for epoch in range(len(histories[i]), epochs):
      with timing.trace(trace), run.training():
        result = epochs_lib.run_epoch(steps_fn, epoch, steps_per_epoch, config.pretrain_learning_rate,
                                      run.chunks_per_epoch, progress, work[i], f"pretraining loss of layer {i + 1}",
                                      "--pretrain_learning_rate")
      trace = None
      run.end_layer_epoch(i, result, steps_per_epoch * config.batch_size, progress)
  progress.close()
  record = {
      "layers": [{"index": i + 1, "units": u, "device": device, "epochs": histories[i]} for i, u in enumerate(hidden)],
      "pretrain_seconds": sum(e["seconds"] for h in histories for e in h),
  }
  logging.info("Pretrained %d layer(s) in %.1f s (steady-state training time).", config.pretrain_layers,
               record["pretrain_seconds"])
  return record
