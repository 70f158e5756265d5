"""Synchronized layer-wise pretraining (Santara et al. 2016, "Faster learning of deep stacked autoencoders
on multi-core systems using synchronized layer-wise pre-training"; the report's "sync" branch).

All H layers are in training at once: in epoch-step s every layer j <= s trains one epoch (epoch index
s) on the frozen copies of the layers below as they were at the end of step s - 1; the copies are
refreshed at the end of every epoch-step (a start offset: layer j starts at epoch-step j, so it trains E + H - 1 - j
epochs and the top layer E). Everything runs on the first device, one layer after another.

This is the epoch-granular layer-wise schedule with one group of all H layers (`common.layerwise.schedule`),
executed sequentially on one device by the code model_parallel runs concurrently
(`common.layerwise.training.run_schedule`): the equivalence "model_parallel with G = H equals
sync_layerwise" then rests only on placement and execution order, which the tests check.
"""

from typing import Any, Callable, Dict, Optional

from common.layerwise import schedule as schedule_lib
from common.layerwise import training as layerwise_training
from common.run import lifecycle
from common.settings import config as config_lib
from sync_layerwise import program


def train(config: config_lib.Config, on_checkpoint: Optional[Callable[[lifecycle.Run], None]] = None
          ) -> Dict[str, Any]:
  """Pretrains with the synchronized layer-wise schedule (`pretrain`), finetunes, exports, writes the run record
  (`common.run.lifecycle`).

  Args:
    config: the run's configuration (`num_devices` > 1 is allowed; only the first device is used).
    on_checkpoint: called with the `lifecycle.Run` after every checkpoint (see `lifecycle.start`).

  Returns:
    The run record, with the same fields as model_parallel's (`common.layerwise.training.run_schedule`); its
    schedule has one group of all layers and one device.

  Raises:
    ValueError: the devices cannot be made. common.base.errors.UserError subclasses for missing data,
      divergence, or a mismatched checkpoint.
  """
  with lifecycle.started(program.PROGRAM, config, on_checkpoint) as run:
    return lifecycle.finish(run, pretrain(run) if run.pretrains else lifecycle.no_pretraining(run))


def pretrain(run: lifecycle.Run) -> Dict[str, Any]:
  """One group of all H layers (of the K = --pretrain_layers that train), one layer after another on the first
  device (`common.layerwise.training.run_schedule`)."""
  layers = run.config.pretrain_layers  # --pretrain_layers=K: the first K; those above keep their initial weights
  return layerwise_training.run_schedule(run, schedule_lib.Schedule(layers, layers, run.config.pretrain_epochs),
                                         concurrent=False)
