"""Synchronized layer-wise pretraining (Santara et al. 2016, "Faster learning of deep stacked autoencoders
on multi-core systems using synchronized layer-wise pre-training"; the report's "sync" branch).

All H layers are in training at once: in epoch-step s every layer j <= s trains one epoch (epoch index
s) on the frozen copies of the layers below as they were at the end of step s - 1; the copies are
refreshed at the end of every step (pipeline fill: layer j starts at step j, so it trains E + H - 1 - j
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
  """Pretrains with the synchronized layer-wise schedule, finetunes, exports, writes the run record
  (`common.run.lifecycle.train`).

  Args:
    config: the run's configuration (`num_devices` > 1 is allowed; only the first device is used).
    on_checkpoint: called with the `lifecycle.Run` after every checkpoint (see `lifecycle.train`).

  Returns:
    The run record, with the same fields as model_parallel's (`layerwise_training.run_schedule`); its
    schedule has one group of all layers and one device.

  Raises:
    ValueError: the devices cannot be made. common.base.errors.UserError subclasses for missing data,
      divergence, or a mismatched checkpoint.
  """
  return lifecycle.train(program.PROGRAM, config, on_checkpoint)


def pretrain(run: lifecycle.Run) -> Dict[str, Any]:
  """The schedule hook: one group of all H layers, one layer after another on the first device."""
  layers = run.config.pretrain_layers  # --pretrain_layers=K: the first K; those above keep their initial weights
  return layerwise_training.run_schedule(run, schedule_lib.Schedule(layers, layers, run.config.pretrain_epochs),
                                         concurrent=False)
