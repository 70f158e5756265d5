"""Model-parallel pretraining (the report's "multigpu" branch, made to really spread the layers): groups
of G = --num_devices layers, in a group every active layer trains its epoch concurrently on its own
device, all on the same batches, with a per-epoch weight copy into the frozen copies of the layers above.

The schedule (`common.layerwise.schedule`) and its execution (`common.layerwise.training.run_schedule`) are
shared with `sync_layerwise`, which is the same schedule with all H layers in one group on one device,
executed one layer after another: this module only places layer j of a group on device j and runs them
concurrently.
"""

from typing import Any, Callable, Dict, List, Optional

from absl import logging

from common.distribute import devices as devices_lib
from common.layerwise import schedule as schedule_lib
from common.layerwise import training as layerwise_training
from common.run import lifecycle
from common.settings import config as config_lib
from model_parallel import program


def train(config: config_lib.Config, on_checkpoint: Optional[Callable[[lifecycle.Run], None]] = None
          ) -> Dict[str, Any]:
  """Pretrains model-parallel on `config.num_devices` devices (`pretrain`), finetunes, exports, writes the run record
  (`common.run.lifecycle`).

  Layer i (0-based) goes to group i // G and device i % G (`plan`, `place`). With TF_CONFIG
  (`common.distribute.cluster`) the "worker" tasks only serve their devices and block, and the "chief" task runs the
  same schedule as a client with the workers' devices: G = workers x num_devices, device j on worker j //
  num_devices, so the per-epoch weight copy crosses the network (docs/multi_host.md).

  Args:
    config: the run's configuration.
    on_checkpoint: called with the `lifecycle.Run` after every checkpoint (see `lifecycle.start`).

  Returns:
    The run record: the common fields plus "schedule" (groups, per-epoch-step wall, busy, copy and idle seconds) and
    per-layer "group" and per-epoch "step" (the epoch-step; see `common.layerwise.training.run_schedule`).

  Raises:
    ValueError: the devices cannot be made. common.base.errors.UserError subclasses for missing data,
      divergence, or a mismatched checkpoint.
  """
  with lifecycle.started(program.PROGRAM, config, on_checkpoint, plan=plan, place=place) as run:
    return lifecycle.finish(run, pretrain(run) if run.pretrains else lifecycle.no_pretraining(run))


def plan(config: config_lib.Config, setup: devices_lib.DeviceSetup, dataset=None) -> schedule_lib.Schedule:
  """The layout: groups of G = the run's devices layers (`common.layerwise.schedule`), of the K =
  --pretrain_layers layers that train (every layer's placement when K = 0, which trains none)."""
  return schedule_lib.Schedule(config.pretrain_layers or len(config.hidden_units), len(setup.names),
                               config.pretrain_epochs)


def place(schedule: schedule_lib.Schedule, setup: devices_lib.DeviceSetup) -> List[str]:
  """The placement: layer j of a group on device j (the layers above those that train: on the first device)."""
  return [setup.names[schedule.position(i)] for i in range(schedule.num_layers)]


def pretrain(run: lifecycle.Run) -> Dict[str, Any]:
  """The groups' epoch-steps (`common.layerwise.training.run_schedule`), the active layers of an epoch-step
  concurrently, one per device."""
  schedule, num_devices = run.plan, len(run.devices.names)
  if num_devices > schedule.num_layers:
    logging.warning("%d devices but only %d layer(s): %d device(s) stay idle.", num_devices,
                    schedule.num_layers, num_devices - schedule.num_layers)
  logging.info("Model parallel: %s", "; ".join(
      f"group {g + 1}: " + ", ".join(f"layer {i + 1} on {devices_lib.short_name(run.layer_devices[i])}"
                                     for i in members)
      for g, members in enumerate(schedule.groups)))
  return layerwise_training.run_schedule(run, schedule, concurrent=True)
