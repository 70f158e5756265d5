"""Data-parallel pretraining of a stacked denoising autoencoder on MNIST, then data-parallel finetuning.

Greedy layer order; every step the global batch --batch_size is split over --num_devices replicas
(tf.distribute.MirroredStrategy over G GPUs, or over the CPU split into G logical devices with
--threads_per_device threads each), the gradients are summed over the replicas and applied once. Same
flags and seed give the same weights as greedy. The large-batch recipe (off by default) scales the
learning rates with the batch and warms them up (Goyal et al. 2017).

Usage: python -m data_parallel.train --num_devices=2 --batch_size=5000 [--pretrain_lr_scaling=linear ...]
"""

from absl import app

from common.run import cli
from data_parallel import program


def main(argv):
  config = cli.config(program.PROGRAM, argv)
  from data_parallel import pretrain  # TensorFlow loads once the flags are valid
  with cli.reported(config):
    cli.summary(config, pretrain.train(config))


if __name__ == "__main__":
  cli.define(program.PROGRAM)
  app.run(main)
