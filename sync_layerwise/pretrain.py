"""Synchronized layer-wise pretraining (Santara et al. 2016, "Faster learning of deep stacked autoencoders
on multi-core systems using synchronized layer-wise pre-training"; the report's "sync" branch).

All H layers are in training at once: in epoch-step s every layer j <= s trains one epoch (epoch index
s) on the frozen copies of the layers below as they were at the end of step s - 1; the copies are
refreshed at the end of every step (pipeline fill: layer j starts at step j, so it trains E + H - 1 - j
epochs and the top layer E). Everything runs on the first device, one layer after another.

This is exactly the model-parallel schedule with one group of all H layers (G = H) executed
sequentially on one device, so it calls `model_parallel.pretrain.run_schedule` with that schedule and
placement instead of implementing the schedule a second time: the equivalence "model_parallel with
G = H equals sync_layerwise" then rests only on placement and execution order, which the tests check.
"""

from typing import Any, Callable, Dict, Optional

from common import config as config_lib
from common import program
from model_parallel import pretrain as model_parallel
from model_parallel import schedule as schedule_lib

# The kernel path of the steps with --kernels=auto: TensorFlow's default kernels, faster than XLA's at batch 100,
# 1000 and 5000 on the 2-core machine (results/benchmarks/kernels/, docs/kernels_and_threads.md).
KERNELS = "tf"


def run(config: config_lib.Config, on_checkpoint: Optional[Callable[[program.Run], None]] = None) -> Dict[str, Any]:
  """Pretrains with the synchronized layer-wise schedule, finetunes, exports, writes the run record.

  Args:
    config: the run's configuration (`num_devices` > 1 is allowed; only the first device is used).
    on_checkpoint: called with the `program.Run` after every checkpoint (see `program.start`).

  Returns:
    The run record, with the same fields as model_parallel's (`model_parallel.pretrain.run_schedule`);
    its schedule has one group of all layers and one device.

  Raises:
    ValueError: the devices cannot be made. common.errors.UserError subclasses for missing data,
      divergence, or a mismatched checkpoint.
  """
  run_ = program.start(config, KERNELS, on_checkpoint=on_checkpoint)  # Every layer on the first device.
  layers = len(config.hidden_units)
  return model_parallel.run_schedule(run_, schedule_lib.Schedule(layers, layers, config.pretrain_epochs),
                                     concurrent=False)
