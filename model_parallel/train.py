"""Model-parallel pretraining of a stacked denoising autoencoder on MNIST, then finetuning.

The layers are taken in groups of G = --num_devices; within a group the layers train concurrently,
layer j on device j (G GPUs, or the CPU split into G logical devices of --threads_per_device threads),
all on the same batches, with pipeline fill (layer j starts one epoch after layer j-1) and a per-epoch
weight copy into the frozen copies of the layers above. Then the whole stack is finetuned and evaluated
on the test set.

Usage: python -m model_parallel.train --num_devices=2 [--hidden_units=2000,2000 --pretrain_epochs=30 ...]
"""

from absl import app
from absl import flags

from common import cli
from common import flags as common_flags

# --help and --helpshort list the shared flags too, as this program's own.
flags.adopt_module_key_flags(common_flags)


def main(argv):
  cli.reject_extra_args(argv)
  # Imported once the flags are valid, so a bad flag is refused before TensorFlow starts.
  from model_parallel import pretrain
  cli.run_program(pretrain.run, common_flags.config_from_flags("model_parallel"))


if __name__ == "__main__":
  app.run(main)
