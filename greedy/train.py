"""Greedy layer-wise pretraining of a stacked denoising autoencoder on MNIST, then finetuning.

Layer 1 trains for --pretrain_epochs, then layer 2 on the frozen layer 1, and so on; then the whole
stack plus a 10-way output layer is finetuned and evaluated on the test set.

Usage: python -m greedy.train [--hidden_units=2000,2000 --pretrain_epochs=30 ...]
"""

from absl import app

from common.run import cli
from greedy import program


def main(argv):
  config = cli.config(program.PROGRAM, argv)
  from greedy import pretrain  # TensorFlow loads once the flags are valid
  with cli.reported(config):
    cli.summary(config, pretrain.train(config))


if __name__ == "__main__":
  cli.define(program.PROGRAM)
  app.run(main)
