"""Greedy layer-wise pretraining of a stacked denoising autoencoder on MNIST, then finetuning.

Layer 1 trains for --pretrain_epochs, then layer 2 on the frozen layer 1, and so on; then the whole
stack plus a 10-way output layer is finetuned and evaluated on the test set.

Usage: python -m greedy.train [--hidden_units=2000,2000 --pretrain_epochs=30 ...]
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
  from greedy import pretrain
  cli.run_program(pretrain.run, common_flags.config_from_flags("greedy"))


if __name__ == "__main__":
  app.run(main)
