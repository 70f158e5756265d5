"""Asynchronous data-parallel pretraining of a stacked denoising autoencoder on MNIST, then finetuning.

Greedy layer order; each layer's variables live on a parameter server (tf.distribute.ParameterServerStrategy)
and a coordinator schedules functions of --steps_per_function SGD steps on whichever worker is free: every
step reads the current weights, computes one batch's gradient on its worker and applies it at once
(asynchronous SGD; Dean et al. 2012). The staleness of every update is measured and recorded. Without TF_CONFIG
the program starts --num_devices workers and one parameter server inside this process on loopback; with
TF_CONFIG (python -m common.launch --workers=W --ps=P ..., or several machines: docs/multi_host.md) each task
runs the same command. With one worker it is greedy at the same batch.
With two or more workers the run is NOT deterministic: the order in which the workers' updates land depends on
timing (and TensorFlow's op determinism is not claimed for this strategy either). A killed worker's functions
are rescheduled on the others (their updates may be applied twice). Finetuning is synchronous, on the
coordinator.

Usage: python -m async_data_parallel.train --num_devices=2 [--steps_per_function=8 --staleness_aware_lr ...]
"""

from absl import app

from common.run import cli
from async_data_parallel import program


def main(argv):
  config = cli.config(program.PROGRAM, argv)
  from async_data_parallel import pretrain  # TensorFlow loads once the flags are valid
  with cli.reported(config):
    cli.summary(config, pretrain.train(config))


if __name__ == "__main__":
  cli.define(program.PROGRAM)
  app.run(main)
