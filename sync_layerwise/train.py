"""Synchronized layer-wise pretraining of a stacked denoising autoencoder on MNIST, then finetuning.

All layers are in training at once (Santara et al. 2016; the report's "sync" branch): every epoch-step
each active layer trains one epoch on the frozen copies of the layers below, refreshed at the end of the
previous step, with pipeline fill (layer j starts one epoch after layer j-1). One device, one layer after
another. Then the whole stack is finetuned and evaluated on the test set.

Usage: python -m sync_layerwise.train [--hidden_units=2000,2000 --pretrain_epochs=30 ...]
"""

from common.run import cli
from sync_layerwise import program

if __name__ == "__main__":
  cli.main(program.PROGRAM)
