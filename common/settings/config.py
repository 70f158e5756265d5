"""Every setting of a training run, each declared once: a `Config` field made by `setting`, carrying its help text,
its check, its flag kind and, where the command line differs from the library, its flag name, default and parser.

`common.settings.flags.define` derives the absl flags of a program from its `Config` class (the shared fields here plus its
own subclass's), each flag validated by its field's `check`, and the class's `check_together` (the cross-field rules,
one function per class) over the flags of its `TOGETHER`. A `Config` built directly (a test, an experiment) runs the
same checks, so the library and the command line refuse the same values with the same one-line messages.
"""

import dataclasses
import datetime
import sys
from typing import Any, Callable, ClassVar, Dict, List, Mapping, Optional, Tuple

from common.data import sources as datasets
from common.settings import checks
from common.settings import recipes

# More logical CPU devices than this only oversubscribes the cores further.
MAX_LOGICAL_CPU_DEVICES = 64
# More epochs than this is a typo (the report trains 30 to 60); the epoch also keys the int32 corruption seeds.
MAX_EPOCHS = 100_000
# Numerical precisions of the matrix products (`--precision`).
PRECISIONS = ("float32", "mixed_bfloat16")
# Kernel paths of the pretraining steps (`common.model.autoencoder.KERNEL_PATHS`), or "auto": the program's own
# default (docs/kernels_and_threads.md says which and why).
KERNELS = ("auto", "xla", "tf")
# The intra-op pool of logical CPU devices (`common.distribute.devices.THREAD_POOLS`), or "auto": the program's default.
THREAD_POOLS = ("auto", "per_device", "shared")
# Where finetuning runs (`common.training.finetune.PLACEMENTS`), or "auto": the measured default per precision.
FINETUNE_PLACEMENTS = ("auto", "replicas", "one_device", "pipelined")
# The finetuning learning-rate schedules (`common.training.finetune.lr_schedule`).
FINETUNE_SCHEDULES = ("constant", "cosine")
PROGRESS = {"auto": None, "bar": True, "log": False}  # --progress: None = a bar when stderr is a terminal


def setting(default: Any, help: str, *, check: Optional[Callable[[str, Any], None]] = None, kind: Optional[type] = None,
            choices: Optional[Tuple[str, ...]] = None, training: bool = True, flag: Optional[str] = None,
            flag_default: Any = dataclasses.MISSING, parse: Optional[Callable[[Any], Any]] = None,
            recipe: bool = False, old_names: Tuple[str, ...] = ()) -> Any:
  """A `Config` field declared once, for the library and the command line.

  Args:
    default: the field's default.
    help: the flag's help text (`--help`).
    check: `check(flag name, value)` raises ValueError, one line starting "--<name> ", for a bad value; it takes the
      field's value or the flag's parsed one (after `parse`).
    kind: the flag's type when `default` does not tell (None): int, float, str, bool; a tuple default is a list flag.
    choices: the allowed strings (an enum flag).
    training: False when the value does not change the mathematics (a resumed run may change it).
    flag: the flag's name when it differs from the field's, or "" for a field that is no flag.
    flag_default, parse: the flag's default and the function from its value to the field's, when they differ.
    recipe: True when a recipe may set it (`common.settings.recipes`): the field then defaults to None, "the recipe's value",
      which `Config` resolves on construction (`default` is the report's value, used when the recipe leaves it out).
    old_names: the setting's earlier names: each still a flag (an alias, with a one-line notice) and read from a run
      record or checkpoint that has it instead of the name (`saved_value`).
  """
  meta = {"help": help, "check": check, "kind": kind or type(default), "choices": choices, "training": training,
          "flag": flag, "flag_default": default if flag_default is dataclasses.MISSING else flag_default,
          "parse": parse, "recipe": recipe, "report": default, "old_names": tuple(old_names)}
  if recipe:
    meta["help"] = f"{help} Default: the recipe's value (report: {_shown(default)})."
    meta["flag_default"] = None
    meta["check"] = checks.optional(check) if check else None
    return dataclasses.field(default=None, metadata=meta)
  return dataclasses.field(default=default, metadata=meta)


def _shown(value: Any) -> str:
  return ",".join(map(str, value)) if isinstance(value, tuple) else str(value)


def _ints(values: Any) -> Tuple[int, ...]:
  return tuple(int(u) for u in values)


def slow_worker_delay() -> Any:
  """The benchmark-only straggler of the data-parallel programs (`common.measure.timing.straggle`), one declaration
  for both."""
  return setting(0.0, "BENCHMARK ONLY: worker (replica) 0 sleeps this many seconds in every step, between computing "
                 "its gradient and its update (a straggler); recorded in the run record's benchmark_only field.",
                 check=checks.number_in(0, 3600, "in [0, 3600] seconds"), training=False)


@dataclasses.dataclass(frozen=True)
class Config:
  """Every setting of a training run; field names and meanings match the command-line flags.

  Defaults mirror the report's original implementation: four hidden layers of 2000 sigmoid units,
  masking corruption 0.5, SGD with learning rate 1e-4 for pretraining and 0.1 for finetuning, batch 100.
  A program with settings of its own subclasses it (`<program>/program.py`), declaring each with `setting`.
  """
  # The flags `check_together` reads (its cross-field rules), in the order its error line lists them.
  # A program's own cross-field rules: functions of {field: value} raising ValueError with one line (the shared rules
  # of `check_together` run first).
  RULES: ClassVar[Tuple[Callable[[Mapping[str, Any]], None], ...]] = ()
  TOGETHER: ClassVar[Tuple[str, ...]] = ("recipe", "dataset", "hidden_units", "batch_size", "finetune_batch_size",
                                         "train_examples", "finetune_epochs", "pretrain_layers")

  program: str = setting("", "The registered program (`common.settings.programs`); the run record's \"strategy\".", flag="")
  hidden_units: Tuple[int, ...] = setting(
      (2000, 2000, 2000, 2000), "Hidden units of each autoencoder layer, bottom to top, separated by commas.",
      check=checks.hidden_units, flag_default=["2000", "2000", "2000", "2000"], parse=_ints)
  recipe: str = setting(recipes.DEFAULT, "A named set of hyperparameters (" + "; ".join(
      f"{r.name}: {r.summary}" for r in recipes.RECIPES) + "); flags given explicitly override its values "
      "(python -m common.run.recipes prints them).", choices=recipes.NAMES)
  pretrain_epochs: int = setting(30, "Epochs of unsupervised pretraining per layer (the last layer of a model-parallel "
                                 "group trains exactly this many); 0: no pretraining, finetuning starts from the "
                                 "initial weights.", check=checks.at_most(MAX_EPOCHS, checks.non_negative_int(" (0: no pretraining)")),
                                 recipe=True)
  finetune_epochs: int = setting(30, "Epochs of supervised finetuning of the whole stack; 0 skips finetuning.",
                                 check=checks.at_most(MAX_EPOCHS, checks.non_negative_int(" (0 skips finetuning)")), recipe=True)
  batch_size: int = setting(100, "Global pretraining batch size: examples per step summed over all devices.",
                            check=checks.positive_int)
  finetune_batch_size: Optional[int] = setting(None, "Global finetuning batch size; defaults to --batch_size.",
                                               kind=int, check=checks.optional(checks.positive_int))
  num_devices: int = setting(1, "Devices to use: that many GPUs if present, otherwise that many logical CPU devices.",
                             check=checks.at_most(MAX_LOGICAL_CPU_DEVICES))
  threads_per_device: int = setting(1, "Intra-op threads given to each logical CPU device (ignored on GPUs).",
                                    check=checks.threads)
  corruption: float = setting(0.5, "Fraction of input pixels set to zero by the masking noise, in [0, 1).",
                              check=checks.corruption, recipe=True)
  pretrain_learning_rate: float = setting(1e-4, "SGD learning rate of layer-wise pretraining.", check=checks.positive,
                                          recipe=True)
  layer_warmup_epochs: float = setting(
      0.0, "Layer n's pretraining rate rises linearly from 0 to the full rate over its own first (n - 1) x this many "
      "epochs of steps (layer 1 keeps the full rate), as decoupled greedy learning warms its layers up (Belilovsky et "
      "al. 2020); the same rule in every program, on each layer's own steps (docs/pretraining.md).",
      check=checks.number_in(0, 1000, "in [0, 1000] epochs"), recipe=True)
  pretrain_layers: Optional[int] = setting(
      None, "Pretrain only the first K layers (0 <= K <= the layers); those above keep their initial weights into "
      "finetuning; 0 trains like --pretrain_epochs=0. Default: every layer (recorded as their number).", kind=int,
      check=checks.optional(checks.non_negative_int("")))
  linear_probe_epochs: int = setting(
      0, "After pretraining, before finetuning: for each layer a softmax regression on its clean codes of the training "
      "split, this many epochs of plain SGD (batch 100), its validation and test accuracy in the run record's "
      "linear_probe (outside the pretraining clock); 0: none.",
      check=checks.at_most(MAX_EPOCHS, checks.non_negative_int(" (0: no linear probe)")))
  finetune_learning_rate: float = setting(0.1, "SGD learning rate of supervised finetuning (its largest, under a "
                                          "schedule).", check=checks.positive, recipe=True)
  finetune_lr_schedule: str = setting(
      "constant", "The finetuning learning rate over the steps: constant, or cosine (from --finetune_learning_rate "
      "down to 0 at the last step: Loshchilov and Hutter 2017, 'SGDR', without restarts; Keras' CosineDecay).",
      choices=FINETUNE_SCHEDULES, recipe=True)
  finetune_keep_best: bool = setting(
      False, "Keep the classifier of the finetuning epoch with the best validation accuracy (early stopping on the "
      "validation split, recorded as finetune.best_epoch) instead of the last epoch's.", recipe=True)
  finetune_placement: str = setting(
      "auto", "Where finetuning runs on several devices: replicas (each a share of every batch, gradients "
      "all-reduced), one_device (the first, with the run's intra-op threads), pipelined (the classifier's layers in "
      "stages over the devices, micro-batches, gradients summed: GPipe), or auto (the fastest measured: "
      "docs/kernels_and_threads.md); the weights agree to float rounding.", choices=FINETUNE_PLACEMENTS,
      training=False)
  finetune_kernels: str = setting(
      "auto", "Kernel path of the finetuning steps: xla, tf (TensorFlow's oneDNN kernels), or auto (XLA in float32, "
      "tf in bfloat16: common/training/finetune.py); the weights agree to float rounding across paths.",
      choices=KERNELS, training=False)
  dataset: str = setting(
      datasets.DEFAULT, "The data: a tensorflow-datasets name with image and label features (mnist, fashion_mnist, "
      "kmnist, cifar10, ...) or npz:PATH, your own arrays (docs/programs.md, 'Your own data').",
      check=datasets.check_name)
  train_examples: Optional[int] = setting(None, "Use only the first N training examples of the dataset (default: all "
                                          "of them; MNIST's 55,000).", kind=int, check=checks.optional(checks.positive_int))
  seed: int = setting(0, "Seed of initialisation, shuffling and corruption; the same seed gives the same weights on any "
                      "devices.", check=checks.seed)
  data_dir: Optional[str] = setting(None, "TensorFlow Datasets data directory holding mnist/3.0.1; defaults to "
                                    "$TFDS_DATA_DIR or ~/tensorflow_datasets.", kind=str, training=False)
  model_dir: Optional[str] = setting(None, "Directory for checkpoints at every epoch boundary; a rerun with the same "
                                     "flags resumes from it.", kind=str, training=False)
  results_dir: Optional[str] = setting(None, "Directory the JSON run record is written to; empty to write none.",
                                       kind=str, training=False, flag_default="runs", parse=lambda v: v or None)
  run_name: Optional[str] = setting(None, "Name of the run record (<results_dir>/<run_name>.json); defaults to "
                                    "<strategy>_<UTC time>.", kind=str, training=False)
  export_weights: Optional[str] = setting(None, "Write the pretrained weights to this .npz file (keys layer1/kernel, "
                                          "layer1/bias, layer1/decoder_bias, ...; after finetuning also finetuned/...: "
                                          "docs/use_the_model.md).", kind=str, training=False)
  export_model: Optional[str] = setting(None, "Write a SavedModel to this directory: signatures encode, reconstruct "
                                        "and (after finetuning) predict, loadable without this repository "
                                        "(docs/use_the_model.md).", kind=str, training=False)
  profile_dir: Optional[str] = setting(None, "Capture a TensorFlow profiler trace of the first pretraining epochs into "
                                       "this directory and of the first finetuning epoch into its finetune/ (view in "
                                       "TensorBoard; account: python -m common.measure.trace_account).", kind=str,
                                       training=False)
  precision: str = setting(
      PRECISIONS[0], "Precision of the matrix products of pretraining and finetuning: float32 (the report's) or "
      "mixed_bfloat16 (bfloat16 operands, float32 variables, updates, sigmoids, losses and sums; needs a processor "
      "with native bfloat16: docs/design.md, 'Mixed precision').", choices=PRECISIONS)
  kernels: str = setting(
      "auto", "Kernel path of the pretraining steps: xla (each step compiled by XLA), tf (TensorFlow's default oneDNN "
      "kernels), or auto (the program's default and why: docs/kernels_and_threads.md); the weights agree to float "
      "rounding across paths.", choices=KERNELS)
  thread_pool: str = setting(
      "auto", "Intra-op thread pool of logical CPU devices: per_device (--threads_per_device threads: each device one "
      "worker, the report's 1-vs-G-devices question), shared (num_devices x threads_per_device threads that every "
      "device's ops share, so an idle device lends its cores), or auto (the program's default: "
      "docs/kernels_and_threads.md); ignored on GPUs.", choices=THREAD_POOLS, training=False)
  heldout_every_epoch: bool = setting(
      False, "Also evaluate every layer's held-out reconstruction loss (test images, fixed masks) after each of its "
      "epochs, not only at the end of pretraining; the evaluation time is kept out of the pretraining seconds.",
      training=False)
  tensorboard_dir: Optional[str] = setting(
      None, "Write per-epoch TensorBoard scalars (losses, held-out losses, examples/s, finetuning accuracy) and "
      "pictures (first-layer filters, test images beside their reconstructions) under <tensorboard_dir>/<run_name>.",
      kind=str, training=False)
  pictures: bool = setting(
      False, "Draw <run_name>_filters.png (the first layer's filters) and <run_name>_reconstructions.png (test images "
      "beside their reconstructions through each layer) beside the run record.", training=False, flag_default=True)
  show_progress: bool = setting(
      False, "Progress display: a bar on stderr plus a line per epoch (bar), only the lines (log), or a bar when "
      "stderr is a terminal (auto).", flag="progress", choices=tuple(PROGRESS), flag_default="auto", training=False,
      parse=lambda v: sys.stderr.isatty() if PROGRESS[v] is None else PROGRESS[v])

  def __post_init__(self):
    for name, value in self._recipe_values(self.recipe, self.program).items():
      if getattr(self, name) is None:
        object.__setattr__(self, name, value)
    object.__setattr__(self, "hidden_units", _ints(self.hidden_units))
    if self.pretrain_layers is None:  # Every layer, recorded as their number.
      object.__setattr__(self, "pretrain_layers", len(self.hidden_units))
    values = dataclasses.asdict(self)
    for f in dataclasses.fields(self):
      if f.metadata.get("check"):
        f.metadata["check"](flag_name(f), values[f.name])
      if f.metadata.get("choices") and not f.metadata.get("parse") and values[f.name] not in f.metadata["choices"]:
        raise ValueError(f"--{f.name} must be one of {', '.join(f.metadata['choices'])}, got {values[f.name]!r}.")
    self.check_together(values)

  @classmethod
  def _recipe_values(cls, name: str, program: str = "") -> Dict[str, Any]:
    """{field: value} of every recipe setting of this class under recipe `name` for `program` (default: the class's
    package): the recipe's (its `program_values` for that program over its `values`), else the report's.

    Raises:
      ValueError: one line, for an unknown recipe or one that sets a setting this class lacks.
    """
    recipe = recipes.get(name)
    values = {**recipe.values, **recipe.program_values.get(program or _program_of(cls), {})}
    fields = {f.name: f for f in dataclasses.fields(cls) if f.metadata.get("recipe")}
    foreign = sorted(set(values) - set(fields))
    if foreign:
      owners = _programs_with(set(recipe.values))
      raise ValueError(f"--recipe={name} sets {', '.join(f'--{k}' for k in foreign)}, which this program does not "
                       f"have: it is a recipe of {', '.join(owners) or 'no registered program'}.")
    return {k: values.get(k, f.metadata["report"]) for k, f in fields.items()}

  def recipe_values(self) -> Dict[str, Any]:
    """{field: resolved value} of the settings a recipe may set (what `python -m common.run.recipes` prints)."""
    return {k: getattr(self, k) for k in self._recipe_values(self.recipe, self.program)}

  @classmethod
  def resolve(cls, values: Mapping[str, Any]) -> Dict[str, Any]:
    """`values` ({field: value}, None for "the recipe's") with each None recipe setting given its recipe's value
    (`values["recipe"]`, default report): what `check_together` sees from the command line. An unknown recipe is
    left to the recipe flag's own check."""
    try:
      resolved = cls._recipe_values(values.get("recipe") or recipes.DEFAULT, values.get("program") or "")
    except ValueError:
      return dict(values)
    return {k: resolved[k] if v is None and k in resolved else v for k, v in values.items()}

  @classmethod
  def check_together(cls, values: Mapping[str, Any]) -> None:
    """The cross-field rules of the shared settings, then the class's own `RULES`, against the
    dataset's sizes when they are known without reading it (`common.data.sources.KNOWN`; any other dataset:
    `check_data` once its metadata is read).

    Args:
      values: {field: value} of at least `TOGETHER`'s fields (values a per-field check refused are not rechecked).

    Raises:
      ValueError: one line naming the flags.
    """
    if values.get("recipe") in recipes.NAMES:
      cls._recipe_values(values["recipe"])  # A recipe of settings this class lacks is refused.
    _check_pretrain_layers(values)
    info = datasets.known(values.get("dataset"))
    if info is not None:
      _check_data(values, info)
    for rule in cls.RULES:
      rule(values)

  def check_data(self, info: datasets.Info) -> None:
    """The rules that need the data: --train_examples within its training split, each batch within the training
    examples, labels to finetune on, and the memory estimate on its input size.

    Raises:
      ValueError: one line naming the flags.
    """
    _check_data(dataclasses.asdict(self), info)

  @property
  def effective_finetune_batch_size(self) -> int:
    """The finetuning global batch: `finetune_batch_size`, or `batch_size` when that is None."""
    return self.finetune_batch_size or self.batch_size

  @property
  def effective_run_name(self) -> str:
    """`run_name`, or `<program>_<UTC timestamp>` when it is None."""
    if self.run_name:
      return self.run_name
    stamp = datetime.datetime.now(datetime.timezone.utc).strftime("%Y%m%d-%H%M%S")
    return f"{self.program}_{stamp}"

  def kernel_path(self, program_default: str) -> str:
    """The kernel path of the pretraining steps: `kernels`, or `program_default` when it is "auto"."""
    return program_default if self.kernels == "auto" else self.kernels

  def thread_pool_setting(self, program_default: str) -> str:
    """The intra-op pool setting: `thread_pool`, or `program_default` when it is "auto"."""
    return program_default if self.thread_pool == "auto" else self.thread_pool

  def to_dict(self) -> dict:
    """All fields as JSON-ready values (tuples become lists); the program under the record's key "strategy"."""
    d = dataclasses.asdict(self)
    d["hidden_units"] = list(self.hidden_units)
    return {"strategy": d.pop("program"), **d}

  def training_fingerprint(self) -> dict:
    """The fields that must match for a checkpoint to be resumed by this configuration: all but those declared
    with training=False."""
    own = {f.name for f in dataclasses.fields(self) if not f.metadata.get("training", True)}
    return {k: v for k, v in self.to_dict().items() if k not in own}


def stale_settings(config: Config, saved: Mapping[str, Any]) -> List[str]:
  """The training settings (`Config.training_fingerprint`) whose value in `saved` (the config of a checkpoint or a run
  record) differs from `config`'s, sorted; a setting that `saved` predates counts as its default. The one rule that
  decides whether a checkpoint may be resumed and whether a stored run record still belongs to its run."""
  want = config.training_fingerprint()
  # The defaults at the saved stack's depth: --pretrain_layers' default is every layer.
  depth = tuple(saved.get("hidden_units") or config.hidden_units)
  defaults = type(config)(program=config.program, hidden_units=depth).training_fingerprint()
  return sorted(k for k in want if _plain(want[k]) != _plain(saved_value(type(config), saved, k, defaults.get(k))))


def saved_value(config_cls: type, saved: Mapping[str, Any], name: str, default: Any = None) -> Any:
  """The value of setting `name` in a stored config `saved` (a run record's or a checkpoint's), under its name or,
  for a record that predates a rename, under one of its `old_names`; `default` when it has neither."""
  if name in saved:
    return saved[name]
  field = next((f for f in dataclasses.fields(config_cls) if f.name == name), None)
  old = [n for n in (field.metadata.get("old_names", ()) if field else ()) if n in saved]
  return saved[old[0]] if old else default


def _plain(value: Any) -> Any:
  """A value as JSON holds it (tuples as lists), to compare a config with a stored one."""
  return list(value) if isinstance(value, tuple) else value


def _check_pretrain_layers(values: Mapping[str, Any]) -> None:
  """--pretrain_layers within 0 .. the layers of --hidden_units (one line)."""
  k, units = values.get("pretrain_layers"), values.get("hidden_units")
  if isinstance(k, int) and not isinstance(k, bool) and units and k > len(units):
    raise ValueError(f"--pretrain_layers must be in 0..{len(units)} (the layers of --hidden_units), got {k}.")


def _check_data(values: Mapping[str, Any], info: datasets.Info) -> None:
  n = values.get("train_examples")
  if isinstance(n, int) and n > info.train:
    raise ValueError(f"--train_examples must be in 1..{info.train} (the training examples of --dataset={info.name}), "
                     f"got {n}.")
  n = n if isinstance(n, int) and n >= 1 else info.train
  for name in ("batch_size", "finetune_batch_size"):
    b = values.get(name)
    if isinstance(b, int) and b > n:
      raise ValueError(f"--{name}={b} is larger than the training data ({n} examples).")
  if info.num_classes is None and isinstance(values.get("finetune_epochs"), int) and values["finetune_epochs"] > 0:
    raise ValueError(f"--dataset={info.name} has no labels (no y): it can be pretrained only; pass "
                     "--finetune_epochs=0.")
  try:
    units = [int(u) for u in values.get("hidden_units") or ()]
  except (TypeError, ValueError):
    return  # The hidden_units check reports it.
  if units and all(u > 0 for u in units) and isinstance(values.get("batch_size"), int):
    from common.measure import memory  # noqa: the estimate needs only the sizes
    memory.check(units, values["batch_size"], n, info)


def flag_name(field: dataclasses.Field) -> str:
  """The flag of a `setting` field: its own name unless declared otherwise ("" for none)."""
  return field.name if field.metadata.get("flag") is None else field.metadata["flag"]


def _program_of(cls: type) -> str:
  """The program a `Config` class belongs to: its package's name ("common" for the shared class)."""
  return cls.__module__.split(".")[0]


def _programs_with(settings: set) -> List[str]:
  """The programs whose `Config` class has every field of `settings`, in the order their classes were defined: each
  loaded subclass of `Config` named by its package (a program's package is its name, `common.settings.programs`),
  without importing the registry, which imports this module."""
  found, pending = [], list(Config.__subclasses__())
  while pending:
    cls = pending.pop(0)
    pending += cls.__subclasses__()
    if settings <= {f.name for f in dataclasses.fields(cls)}:
      found.append(_program_of(cls))
  return list(dict.fromkeys(found))
