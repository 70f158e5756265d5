"""Layer-pipelined pretraining of a stacked denoising autoencoder on MNIST, then finetuning.

Every layer trains at once, at batch granularity: at step t layer n trains one SGD step on the encodings
that layer n-1 produced at step t, so no layer ever recomputes the layers below. The layers are split into
contiguous stages balanced by cost, one per device (--num_devices), which exchange activations every
--pipeline_chunk_steps steps. Then the whole stack is finetuned and evaluated on the test set. This is not
the report's schedule (see pipeline_parallel/pretrain.py).

Usage: python -m pipeline_parallel.train --num_devices=2 [--hidden_units=2000,2000 --pretrain_epochs=30 ...]
"""

from absl import app

from common.run import cli
from pipeline_parallel import program


def main(argv):
  config = cli.config(program.PROGRAM, argv)
  from pipeline_parallel import pretrain  # TensorFlow loads once the flags are valid
  with cli.reported(config):
    cli.summary(config, pretrain.train(config))


if __name__ == "__main__":
  cli.define(program.PROGRAM)
  app.run(main)
