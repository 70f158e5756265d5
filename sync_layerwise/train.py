"""Synchronized layer-wise pretraining of a stacked denoising autoencoder on MNIST, then finetuning.

All layers are in training at once (Santara et al. 2016; the report's "sync" branch): every epoch-step
each active layer trains one epoch on the frozen copies of the layers below, refreshed at the end of the
previous step, with a start offset (layer j starts one epoch-step after layer j-1). One device, one layer after
another. Then the whole stack is finetuned and evaluated on the test set.

Usage: python -m sync_layerwise.train [--hidden_units=2000,2000 --pretrain_epochs=30 ...]
"""

from absl import app

from common.run import cli
from sync_layerwise import program


def main(argv):
  config = cli.config(program.PROGRAM, argv)
  from sync_layerwise import pretrain  # TensorFlow loads once the flags are valid
  with cli.reported(config):
    cli.summary(config, pretrain.train(config))


if __name__ == "__main__":
  cli.define(program.PROGRAM)
  app.run(main)
