"""The absl flags shared by every training program, defined once (importing this module defines them).

Only the `*/train.py` entry points import this module; libraries take a `common.config.Config`.
Every value is checked by `common.config.check` when the flags are parsed, so a bad value stops the
program with one line (absl's "FATAL Flags parsing error: ...") before any work starts.
"""

import sys
from typing import Any, Callable, Mapping, Sequence, Type

from absl import flags

from common import config as config_lib
from common import memory
from common import programs

_DEFAULTS = config_lib.Config()

flags.DEFINE_list(
    "hidden_units", [str(u) for u in _DEFAULTS.hidden_units],
    "Hidden units of each autoencoder layer, bottom to top, separated by commas.")
flags.DEFINE_integer(
    "pretrain_epochs", _DEFAULTS.pretrain_epochs,
    "Epochs of unsupervised pretraining per layer (the last layer of a model-parallel group trains exactly this many).")
flags.DEFINE_integer(
    "finetune_epochs", _DEFAULTS.finetune_epochs,
    "Epochs of supervised finetuning of the whole stack; 0 skips finetuning.")
flags.DEFINE_integer(
    "batch_size", _DEFAULTS.batch_size,
    "Global pretraining batch size: examples per step summed over all devices.")
flags.DEFINE_integer(
    "finetune_batch_size", None,
    "Global finetuning batch size; defaults to --batch_size.")
flags.DEFINE_integer(
    "num_devices", _DEFAULTS.num_devices,
    "Devices to use: that many GPUs if present, otherwise that many logical CPU devices.")
flags.DEFINE_integer(
    "threads_per_device", _DEFAULTS.threads_per_device,
    "Intra-op threads given to each logical CPU device (ignored on GPUs).")
flags.DEFINE_float(
    "corruption", _DEFAULTS.corruption,
    "Fraction of input pixels set to zero by the masking noise, in [0, 1).")
flags.DEFINE_float(
    "pretrain_learning_rate", _DEFAULTS.pretrain_learning_rate,
    "SGD learning rate of layer-wise pretraining.")
flags.DEFINE_float(
    "finetune_learning_rate", _DEFAULTS.finetune_learning_rate,
    "SGD learning rate of supervised finetuning.")
flags.DEFINE_integer(
    "train_examples", _DEFAULTS.train_examples,
    "Use only the first N of the 55,000 MNIST training examples (1..55000).")
flags.DEFINE_integer(
    "seed", _DEFAULTS.seed,
    "Seed of initialisation, shuffling and corruption; the same seed gives the same weights on any devices.")
flags.DEFINE_string(
    "data_dir", None,
    "TensorFlow Datasets data directory holding mnist/3.0.1; defaults to $TFDS_DATA_DIR or ~/tensorflow_datasets.")
flags.DEFINE_string(
    "model_dir", None,
    "Directory for checkpoints at every epoch boundary; a rerun with the same flags resumes from it.")
flags.DEFINE_string(
    "results_dir", "runs",
    "Directory the JSON run record is written to; empty to write none.")
flags.DEFINE_string(
    "run_name", None,
    "Name of the run record (<results_dir>/<run_name>.json); defaults to <strategy>_<UTC time>.")
flags.DEFINE_string(
    "export_weights", None,
    "Write the pretrained weights to this .npz file (keys layer1/kernel, layer1/bias, layer1/decoder_bias, ...).")
flags.DEFINE_string(
    "profile_dir", None,
    "Capture a TensorFlow profiler trace of the first pretraining epochs into this directory (view in TensorBoard).")
flags.DEFINE_enum(
    "precision", _DEFAULTS.precision, list(programs.PRECISIONS),
    "Precision of the matrix products of pretraining and finetuning: float32 (the report's) or mixed_bfloat16 "
    "(bfloat16 operands, float32 variables, updates, sigmoids, losses and sums; needs a processor with native "
    "bfloat16: docs/design.md, 'Mixed precision').")
flags.DEFINE_enum(
    "kernels", _DEFAULTS.kernels, list(config_lib.KERNELS),
    "Kernel path of the pretraining steps: xla (each step compiled by XLA), tf (TensorFlow's default oneDNN "
    "kernels), or auto (the program's default and why: docs/kernels_and_threads.md); the weights agree "
    "to float rounding across paths.")
flags.DEFINE_enum(
    "thread_pool", _DEFAULTS.thread_pool, list(config_lib.THREAD_POOLS),
    "Intra-op thread pool of logical CPU devices: per_device (--threads_per_device threads: each device one "
    "worker, the report's 1-vs-G-devices question), shared (num_devices x threads_per_device threads that "
    "every device's ops share, so an idle device lends its cores), or auto (the program's default: docs/kernels_and_threads.md); "
    "ignored on GPUs.")
flags.DEFINE_bool(
    "heldout_every_epoch", False,
    "Also evaluate every layer's held-out reconstruction loss (test images, fixed masks) after each of its "
    "epochs, not only at the end of pretraining; the evaluation time is kept out of the pretraining seconds.")
flags.DEFINE_string(
    "tensorboard_dir", None,
    "Write per-epoch TensorBoard scalars (losses, held-out losses, examples/s, finetuning accuracy) under "
    "<tensorboard_dir>/<run_name>.")
flags.DEFINE_enum(
    "progress", "auto", ["auto", "bar", "log"],
    "Progress display: a bar on stderr plus a line per epoch (bar), only the lines (log), or a bar when stderr is a terminal (auto).")


# The shared flags, in the order --help lists them.
SHARED = ("hidden_units", "pretrain_epochs", "finetune_epochs", "batch_size", "finetune_batch_size", "num_devices",
          "threads_per_device", "corruption", "pretrain_learning_rate", "finetune_learning_rate", "train_examples",
          "seed", "data_dir", "model_dir", "results_dir", "run_name", "export_weights", "profile_dir", "precision",
          "kernels", "thread_pool", "heldout_every_epoch", "tensorboard_dir", "progress")


def define_slow_worker_delay() -> flags.FlagHolder:
  """Defines --benchmark_slow_worker_delay_seconds, the benchmark-only straggler of the data-parallel programs
  (`common.timing.straggle`), validated by `common.config.check`."""
  name = "benchmark_slow_worker_delay_seconds"
  if name in flags.FLAGS:  # Defined by another program's module imported in this process.
    return flags.FlagHolder(flags.FLAGS, flags.FLAGS[name])
  holder = flags.DEFINE_float(
      name, 0.0,
      "BENCHMARK ONLY: worker (replica) 0 sleeps this many seconds in every step, between computing its gradient "
      "and its update (a straggler); recorded in the run record's benchmark_only field.")
  validate_each([holder.name], config_lib.check)
  return holder


def validate_each(names: Sequence[str], check: Callable[[Mapping[str, Any]], None]) -> None:
  """Registers one validator per flag of `names` (so the error names just that flag) that calls
  `check({name: value})`, which raises ValueError with a one-line message starting "--<name> "."""
  def register(name):
    def checker(value):
      try:
        check({name: list(value) if name == "hidden_units" else value})
      except ValueError as e:
        raise flags.ValidationError(str(e).replace(f"--{name} ", "", 1)) from None
      return True
    flags.register_validator(name, checker)
  for name in names:
    register(name)


def validate_together(names: Sequence[str], check: Callable[[Mapping[str, Any]], None]) -> None:
  """Registers one validator of the flags `names` together: `check({name: value, ...})` raises ValueError."""
  def checker(values):
    try:
      check(values)
    except ValueError as e:
      raise flags.ValidationError(str(e)) from None
    return True
  flags.register_multi_flags_validator(list(names), checker)


def _check_shared(values: Mapping[str, Any]) -> None:
  config_lib.check(values)
  if "threads_per_device" in values:
    config_lib.check_threads(values["threads_per_device"])


def _fits_in_memory(values: Mapping[str, Any]) -> None:
  try:
    units = [int(u) for u in values["hidden_units"]]
  except (TypeError, ValueError):
    return  # The hidden_units validator reports it.
  if units and all(isinstance(values[k], int) for k in ("batch_size", "train_examples")):
    memory.check(units, values["batch_size"], values["train_examples"])


def _register_validators() -> None:
  """One validator per flag, plus the cross-flag batch and memory checks."""
  validate_each(("hidden_units", "pretrain_epochs", "finetune_epochs", "batch_size", "finetune_batch_size",
                 "num_devices", "threads_per_device", "corruption", "pretrain_learning_rate",
                 "finetune_learning_rate", "train_examples", "seed"), _check_shared)
  validate_together(("batch_size", "finetune_batch_size", "train_examples"), config_lib.check)
  validate_together(("hidden_units", "batch_size", "train_examples"), _fits_in_memory)


_register_validators()


def config_from_flags(strategy: str, config_cls: Type[config_lib.Config] = config_lib.Config,
                      **extra) -> config_lib.Config:
  """Builds the run configuration from the parsed shared flags.

  Args:
    strategy: program name recorded in the run record, e.g. "greedy".
    config_cls: `Config` or a program's subclass with extra fields.
    **extra: values of the subclass's extra fields (from the program's own flags).

  Returns:
    A validated `config_cls` instance.
  """
  f = flags.FLAGS
  values = {name: f[name].value for name in SHARED if name != "progress"}
  values.update(hidden_units=tuple(int(u) for u in f.hidden_units), results_dir=f.results_dir or None,
                show_progress={"bar": True, "log": False, "auto": sys.stderr.isatty()}[f.progress])
  return config_cls(strategy=strategy, **values, **extra)
