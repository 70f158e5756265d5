"""Layer-pipelined pretraining of a stacked denoising autoencoder on MNIST, then finetuning.

Every layer trains at once, at batch granularity: at step t layer n trains one SGD step on the encodings
that layer n-1 produced at step t, so no layer ever recomputes the layers below. The layers are split into
contiguous stages balanced by cost, one per device (--num_devices), which exchange activations every
--pipeline_chunk_steps steps. Then the whole stack is finetuned and evaluated on the test set. This is not
the report's schedule (see pipeline_parallel/pretrain.py).

Usage: python -m pipeline_parallel.train --num_devices=2 [--hidden_units=2000,2000 --pretrain_epochs=30 ...]
"""

from absl import flags

from common import cli
from common import flags as common_flags
from common import programs
from pipeline_parallel import config as config_lib

_CHUNK_STEPS = flags.DEFINE_integer(
    "pipeline_chunk_steps", config_lib.DEFAULT_CHUNK_STEPS,
    "Steps each stage trains between two exchanges of activations with the neighbouring stages (K, clamped "
    "to the steps of one epoch); smaller shortens the pipeline fill, larger means fewer exchanges; the "
    "weights do not depend on it (the sweep over K: docs/pipeline_parallel.md, 'Speed').")
_REPLICAS = flags.DEFINE_integer(
    "replicas_per_stage", 1,
    "Devices per stage, R: each stage is replicated on R devices that split every batch and all-reduce their "
    "gradients (pipeline x data parallelism), on P = min(devices / R, layers) stages; --num_devices and "
    "--batch_size must be multiples of R; the weights do not depend on it (docs/pipeline_parallel.md).")
common_flags.validate_each(["pipeline_chunk_steps", "replicas_per_stage"], config_lib.check)
common_flags.validate_together(["replicas_per_stage", "num_devices", "batch_size"], config_lib.check)

if __name__ == "__main__":
  cli.main(programs.PIPELINE_PARALLEL, config_lib.PipelineConfig,
           {"pipeline_chunk_steps": _CHUNK_STEPS, "replicas_per_stage": _REPLICAS})
