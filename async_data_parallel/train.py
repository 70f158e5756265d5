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

from absl import flags

from async_data_parallel import config as config_lib
from common import cli
from common import flags as common_flags
from common import programs

_OWN = {
    "steps_per_function": flags.DEFINE_integer(
        "steps_per_function", config_lib.DEFAULT_STEPS_PER_FUNCTION,
        "SGD steps in each function the coordinator schedules on a free worker (K); larger amortises the dispatch, "
        "smaller balances the workers' last functions of an epoch (docs/async_data_parallel.md)."),
    "staleness_aware_lr": flags.DEFINE_bool(
        "staleness_aware_lr", False,
        "Divide each update's learning rate by its staleness + 1 (Zhang et al. 2016, staleness-aware async-SGD)."),
    "worker_recovery_seconds": flags.DEFINE_float(
        "worker_recovery_seconds", config_lib.DEFAULT_WORKER_RECOVERY_SECONDS,
        "End the run with an error once no worker has accepted a connection for this many seconds (a lost "
        "worker's functions run on the others meanwhile; TensorFlow alone would wait an hour)."),
    "benchmark_slow_worker_delay_seconds": common_flags.define_slow_worker_delay(),
}

common_flags.validate_each(
    ["steps_per_function", "worker_recovery_seconds", "kernels"],
    config_lib.check)

if __name__ == "__main__":
  cli.main(programs.ASYNC_DATA_PARALLEL, config_lib.AsyncConfig, _OWN)
