"""Data-parallel pretraining of a stacked denoising autoencoder on MNIST, then data-parallel finetuning.

Greedy layer order; every step the global batch --batch_size is split over --num_devices replicas
(tf.distribute.MirroredStrategy over G GPUs, or over the CPU split into G logical devices with
--threads_per_device threads each), the gradients are summed over the replicas and applied once. Same
flags and seed give the same weights as greedy. The large-batch recipe (off by default) scales the
learning rates with the batch and warms them up (Goyal et al. 2017).

Usage: python -m data_parallel.train --num_devices=2 --batch_size=5000 [--pretrain_lr_scaling=linear ...]
"""

from absl import flags

from common import cli
from common import flags as common_flags
from common import programs
from data_parallel import config as config_lib

_DEFAULTS = config_lib.DataParallelConfig()
_OWN = {
    "pretrain_lr_scaling": flags.DEFINE_enum(
        "pretrain_lr_scaling", _DEFAULTS.pretrain_lr_scaling, config_lib.SCALINGS,
        "Multiply --pretrain_learning_rate by k (linear) or sqrt(k) (sqrt), k = batch / --reference_batch_size."),
    "finetune_lr_scaling": flags.DEFINE_enum(
        "finetune_lr_scaling", _DEFAULTS.finetune_lr_scaling, config_lib.SCALINGS,
        "The same for --finetune_learning_rate, with k from the finetuning batch."),
    "reference_batch_size": flags.DEFINE_integer(
        "reference_batch_size", _DEFAULTS.reference_batch_size,
        "The batch the given learning rates are tuned for (the report's 100)."),
    "warmup_epochs": flags.DEFINE_float(
        "warmup_epochs", _DEFAULTS.warmup_epochs,
        "Epochs of linear warm-up from the given to the scaled learning rate, per layer and for finetuning."),
    "finetune_momentum": flags.DEFINE_float(
        "finetune_momentum", _DEFAULTS.finetune_momentum,
        "Momentum of finetuning's SGD, in [0, 1) (0: plain SGD as in the report)."),
    "finetune_optimizer": flags.DEFINE_enum(
        "finetune_optimizer", _DEFAULTS.finetune_optimizer, config_lib.OPTIMIZERS,
        "Finetuning's update rule: sgd (plain, or with --finetune_momentum) or adam (Kingma and Ba 2015)."),
    "profile_steps": flags.DEFINE_integer(
        "profile_steps", _DEFAULTS.profile_steps,
        "Steps timed per phase in the op profile of layer 1 (0: no profile)."),
    "profile_repeats": flags.DEFINE_integer(
        "profile_repeats", _DEFAULTS.profile_repeats, "Timed repetitions of each phase of the op profile."),
    "benchmark_slow_worker_delay_seconds": common_flags.define_slow_worker_delay(),
}


common_flags.validate_each(
    ["reference_batch_size", "warmup_epochs", "finetune_momentum", "profile_steps", "profile_repeats"], config_lib.check)
common_flags.validate_together(["batch_size", "finetune_batch_size", "num_devices"], config_lib.check)
common_flags.validate_together(["finetune_optimizer", "finetune_momentum"], config_lib.check)

if __name__ == "__main__":
  cli.main(programs.DATA_PARALLEL, config_lib.DataParallelConfig, _OWN)
