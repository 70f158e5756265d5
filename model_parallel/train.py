"""Model-parallel pretraining of a stacked denoising autoencoder on MNIST, then finetuning.

The layers are taken in groups of G = --num_devices; within a group the layers train concurrently,
layer j on device j (G GPUs, or the CPU split into G logical devices of --threads_per_device threads),
all on the same batches, with a start offset (layer j starts one epoch-step after layer j-1) and a per-epoch
weight copy into the frozen copies of the layers above. Then the whole stack is finetuned and evaluated
on the test set.

Usage: python -m model_parallel.train --num_devices=2 [--hidden_units=2000,2000 --pretrain_epochs=30 ...]
"""

from absl import app

from common.run import cli
from model_parallel import program


def main(argv):
  config = cli.config(program.PROGRAM, argv)
  from model_parallel import pretrain  # TensorFlow loads once the flags are valid
  with cli.reported(config):
    cli.summary(config, pretrain.train(config))


if __name__ == "__main__":
  cli.define(program.PROGRAM)
  app.run(main)
