"""Supervised finetuning: the pretrained sigmoid stack plus a linear K-way layer (K the data's classes, 10 for
MNIST), softmax cross-entropy.

As in the report's original implementation: every layer is trained, plain SGD with
learning rate 0.1; accuracy on the validation and test images (MNIST: 5,000 and 10,000). The original applied a
sigmoid to the logits before the softmax; that defect is not mirrored.
"""

import contextlib
import math
import os
from typing import Any, Callable, Dict, List, Optional, Sequence

import numpy as np
import tensorflow as tf

from common.base import progress as progress_lib
from common.data import loader as data
from common.distribute import replica_steps
from common.measure import timing
from common.model import autoencoder
from common.model import export
from common.model import graph
from common.model import optimizers
from common.model import precision as precision_lib
from common.settings import config as config_lib
from common.settings import processor_defaults
from common.training import epochs as epochs_lib
from common.training import finetune_pipeline


# Where finetuning runs (`--finetune_placement`): "replicas" (a MirroredStrategy over the devices, each replica a
# share of every batch), "one_device" (the first device, with whatever intra-op threads the run has), "pipelined"
# (the classifier's layers in stages over the devices, micro-batches: `common.training.finetune_pipeline`).
PLACEMENTS = config_lib.FINETUNE_PLACEMENTS[1:]
# The placement of --finetune_placement=auto where the finetune benchmark measured no class of processor
# (`common.settings.processor_defaults` holds what it measured per class; docs/kernels_and_threads.md, "Finetuning").
DEFAULT_PLACEMENT = "one_device"
# The kernel path of a finetuning step per precision (`common.model.autoencoder.compile_step`): XLA in float32, TensorFlow's
# oneDNN kernels in bfloat16, where they ran pretraining 1.5-2.3x as fast as XLA's on an AMX Xeon (medians, the kernels
# benchmark, docs/kernels_and_threads.md) and where finetuning on XLA was slower than float32 (docs/design.md,
# "Finetuning on every device"); on this path bfloat16 finetuning on one core took 0.64 of float32's time on an
# Intel Xeon with AMX (medians of the finetune benchmark; XLA in bfloat16 was not measured again).
KERNELS = {"float32": "xla", "mixed_bfloat16": "tf"}
# With --profile_dir the first finetuning epoch trained here is traced into this folder of it.
PROFILE_SUBDIR = "finetune"


def auto_placement(precision: str, thread_pool: str, num_devices: int, isa: Optional[str] = None) -> str:
  """The placement of --finetune_placement=auto: the finetune benchmark's fastest for class `isa` (default: this
  processor's, or the nearest measured class's: `processor_defaults.choice`), else `DEFAULT_PLACEMENT`; except
  "replicas" for "one_device" on several devices with one intra-op pool per device (`thread_pool` "per_device"),
  where one device would finetune on one device's threads: the benchmark's one_device ran one device with every
  core's thread."""
  chosen = processor_defaults.choice("finetune_placement", precision, isa=isa)[0] or DEFAULT_PLACEMENT
  return "replicas" if chosen == "one_device" and thread_pool != "shared" and num_devices > 1 else chosen


class Classifier(tf.Module):
  """D inputs -> hidden layers (sigmoid) -> K logits.

  Attributes:
    kernels, biases: float32 [n_in, n_out] / [n_out] per hidden layer, loaded from pretraining.
    output_kernel: float32 [hidden_units[-1], K], Glorot-uniform initialised from the seed.
    output_bias: float32 [K], zeros.
    precision: of the matrix products of training (`common.model.precision`); prediction is float32.
    devices: None (the current device), or the device of each layer, hidden ones then the output layer
      (`--finetune_placement=pipelined`, `common.training.finetune_pipeline`).
  """

  def __init__(self, hidden_units: Sequence[int], seed: int, input_units: int, num_classes: int,
               precision: str = precision_lib.FLOAT32, devices: Optional[Sequence[str]] = None):
    super().__init__(name="classifier")
    self.precision = precision
    sizes = [input_units] + list(hidden_units)
    place = lambda i: tf.device(devices[i] if devices else None)  # noqa: E731  # layer i's (hidden..., output)
    with self.name_scope:
      self.kernels, self.biases = [], []
      for i, (a, b) in enumerate(zip(sizes, sizes[1:])):
        with place(i):
          self.kernels.append(tf.Variable(tf.zeros([a, b]), name=f"kernel{i + 1}"))
          self.biases.append(tf.Variable(tf.zeros([b]), name=f"bias{i + 1}"))
      limit = math.sqrt(6.0 / (sizes[-1] + num_classes))
      with place(len(hidden_units)):
        self.output_kernel = tf.Variable(
            tf.random.stateless_uniform([sizes[-1], num_classes], seed=[seed, 104729], minval=-limit, maxval=limit),
            name="output_kernel")
        self.output_bias = tf.Variable(tf.zeros([num_classes]), name="output_bias")

  @property
  def weights(self) -> List[tf.Variable]:
    """All trainable variables, in a fixed order."""
    return self.kernels + self.biases + [self.output_kernel, self.output_bias]

  def update_slots(self, rule: optimizers.UpdateRule) -> List[List[tf.Variable]]:
    """Per weight, the `rule.num_slots` slot variables of an update rule (momentum's velocity, Adam's
    moments), zero-initialised and created (in the current device or strategy scope) on the first call;
    saved and restored with the classifier. Raises ValueError if a different rule made them before."""
    if not hasattr(self, "slots"):
      with self.name_scope:
        self.slots = [[tf.Variable(tf.zeros(w.shape), trainable=False, name=f"{rule.name}_slot{k}_{i}")
                       for k in range(rule.num_slots)] for i, w in enumerate(self.weights)]
        self.slots_rule = rule.name
    if self.slots_rule != rule.name:
      raise ValueError(f"the classifier's slots belong to {self.slots_rule}, not {rule.name}")
    return self.slots

  def best_copy(self) -> List[tf.Variable]:
    """Per weight, a copy holding the weights of the best validation epoch so far (`--finetune_keep_best`), created
    (in the current device or strategy scope, each beside its weight) on the first call; saved and restored with the
    classifier."""
    if not hasattr(self, "best"):
      with self.name_scope:
        self.best = []
        for i, w in enumerate(self.weights):
          with contextlib.nullcontext() if tf.distribute.has_strategy() else tf.device(w.device):
            self.best.append(tf.Variable(tf.zeros(w.shape), trainable=False, name=f"best_{i}"))
    return self.best

  def load_pretrained(self, layers: Sequence) -> None:
    """Copies kernel and bias of each pretrained `DenoisingAutoencoder` into the hidden layers."""
    for kernel, bias, layer in zip(self.kernels, self.biases, layers):
      kernel.assign(layer.kernel)
      bias.assign(layer.bias)

  def predict(self, images: tf.Tensor) -> tf.Tensor:
    """float32 [b, D] in [0, 1] -> int32 [b] predicted class (float32 products: the weights are measured), one
    XLA computation on the images' device whatever devices the weights live on (pipelined finetuning)."""
    with tf.device(images.device or None):
      values = [tf.identity(w) for w in self.weights]
    return _predict(values[:len(self.kernels)], values[len(self.kernels):-2], *values[-2:], images)

  def logits(self, images: tf.Tensor, precision: Optional[str] = None) -> tf.Tensor:
    """float32 [b, D] in [0, 1] -> float32 [b, K] logits, the products at `precision` (default: the
    classifier's; under mixed_bfloat16 the gradients' products are bfloat16 too, through the casts)."""
    p = precision or self.precision
    h = images
    for kernel, bias in zip(self.kernels, self.biases):
      h = tf.sigmoid(precision_lib.matmul(h, kernel, p) + bias)
    return precision_lib.matmul(h, self.output_kernel, p) + self.output_bias


@graph.function(jit_compile=True)
def _predict(kernels, biases, output_kernel, output_bias, images):
  return tf.argmax(export.classify(kernels, biases, output_kernel, output_bias, images), axis=1, output_type=tf.int32)


class Finetuner(tf.Module):
  """SGD on softmax cross-entropy for a `Classifier`, one device or under a tf.distribute strategy.

  Args:
    classifier: the model (created under `strategy.scope()` when a strategy is used).
    images: float32 [N, D] training images in [0, 1]; labels: int32 [N].
    seed: keys the shuffling order (a stream separate from pretraining's).
    batch_size: global batch B; an epoch is N // B steps.
    device: device of the single-device path (None: default).
    rule: the update rule (`common.model.optimizers.UpdateRule`); other than plain SGD on the strategy path only.
    kernels: the steps' kernel path, "xla" or "tf", or "auto" (`KERNELS` of the classifier's precision).
  """

  def __init__(self, classifier: Classifier, images: tf.Tensor, labels: tf.Tensor, seed: int,
               batch_size: int, device: Optional[str] = None, rule: optimizers.UpdateRule = optimizers.SGD,
               kernels: str = "auto"):
    super().__init__(name="finetuner")
    self.classifier = classifier
    self.rule = rule
    self.slots = classifier.update_slots(rule) if rule.num_slots else ()
    self.images, self.labels = images, labels
    self.seed, self.batch_size, self.device = seed, batch_size, device
    self.num_examples = int(images.shape[0])
    self.steps_per_epoch = self.num_examples // batch_size
    kernels = KERNELS[classifier.precision] if kernels == "auto" else kernels
    self.train_step = autoencoder.compile_step(self._train_step, kernels)
    self.loss_and_gradients = autoencoder.compile_step(self._loss_and_gradients_of_share, kernels)

  def _loss_and_gradients(self, images, labels, global_batch_size):
    with tf.GradientTape() as tape:
      per_example = tf.nn.sparse_softmax_cross_entropy_with_logits(labels=labels, logits=self.classifier.logits(images))
      loss = tf.reduce_sum(per_example) / tf.cast(global_batch_size, tf.float32)
    return loss, tape.gradient(loss, self.classifier.weights)

  def _loss_and_gradients_of_share(self, images, labels, global_batch_size):
    """(loss share float32, gradients) of a batch share: images [b, D], labels int32 [b]."""
    return self._loss_and_gradients(images, labels, global_batch_size)

  def _train_step(self, example_indices: tf.Tensor, learning_rate: tf.Tensor) -> tf.Tensor:
    """One fused SGD step on int32 [B] example indices; returns the batch's mean loss."""
    images = tf.gather(self.images, example_indices)
    labels = tf.gather(self.labels, example_indices)
    loss, grads = self._loss_and_gradients(images, labels, tf.shape(example_indices)[0])
    for var, grad in zip(self.classifier.weights, grads):
      optimizers.SGD.apply(var, grad, learning_rate, ())  # one pass (assign_sub(learning_rate * grad) makes two)
    return loss

  def _indices(self, positions, epoch):
    return data.epoch_indices(positions, self.seed, epoch, self.num_examples, data.FINETUNE_STREAM)

  def run_steps(self, epoch, first_step, num_steps, learning_rate, strategy=None,
                lr_multiplier: Optional[Callable[[tf.Tensor], tf.Tensor]] = None) -> tf.Tensor:
    """Runs a range of an epoch's steps (graph code); returns the sum of the batch mean losses.

    Args:
      epoch, first_step, num_steps: int32 scalars.
      learning_rate: float32 scalar (0 changes nothing: used to warm up compilation).
      strategy: run under this strategy, every replica taking its share of each global batch
        (`common.distribute.replica_steps`; every replica computes its positions itself,
        `replica_steps.replica_positions`); None runs the fused single-device step on `device`.
      lr_multiplier: None, or a function of the step's index in the whole run (int32 scalar,
        epoch * steps_per_epoch + step) returning a float32 factor for `learning_rate` (a warm-up).
    """
    def rate(step):
      return optimizers.learning_rate_at(learning_rate, lr_multiplier, epoch * self.steps_per_epoch + step)

    if strategy is not None:
      def replica_step(step):
        indices = self._indices(replica_steps.replica_positions(step, self.batch_size), epoch)
        loss, grads = self.loss_and_gradients(tf.gather(self.images, indices), tf.gather(self.labels, indices),
                                              self.batch_size)
        optimizers.apply_update(self.classifier.weights, grads, rate(step), self.rule, self.slots,
                      epoch * self.steps_per_epoch + step)
        return loss
      return replica_steps.distributed_steps(strategy, replica_step, first_step, num_steps)

    if self.rule.name != "sgd":
      raise ValueError(f"finetuning with {self.rule.name} runs under a tf.distribute strategy only")
    with tf.device(self.device):
      offsets = tf.range(self.batch_size)

      def body(step, total):
        indices = self._indices(step * self.batch_size + offsets, epoch)
        return step + 1, total + self.train_step(indices, rate(step))

      stop = first_step + num_steps
      _, total = tf.while_loop(lambda s, _: s < stop, body, (first_step, tf.constant(0.0)))
      return total


def accuracy(classifier: Classifier, images: np.ndarray, labels: np.ndarray, batch_size: int = 5000) -> float:
  """Fraction of `images` (float32 [n, D]) whose argmax logit equals `labels` (int [n])."""
  correct = 0
  for start in range(0, len(images), batch_size):
    correct += int(np.sum(classifier.predict(tf.constant(images[start:start + batch_size])).numpy() == labels[start:start + batch_size]))
  return correct / len(images)


def lr_schedule(schedule: str, total_steps: int) -> Optional[Callable[[tf.Tensor], tf.Tensor]]:
  """The factor of the finetuning learning rate at each step (int32, counted from the first step of finetuning) under
  `--finetune_lr_schedule`: None for "constant"; for "cosine", 1 at step 0 decaying to 0 at `total_steps`
  (Loshchilov and Hutter 2017, "SGDR: Stochastic Gradient Descent with Warm Restarts", eq. 5 without restarts;
  Keras' `CosineDecay`).

  Raises:
    ValueError: an unknown schedule.
  """
  if schedule == "constant":
    return None
  if schedule != "cosine":
    raise ValueError(f"unknown finetuning schedule {schedule!r}; one of {', '.join(config_lib.FINETUNE_SCHEDULES)}")
  return tf.keras.optimizers.schedules.CosineDecay(1.0, max(total_steps, 1))


def _product(a: Optional[Callable], b: Optional[Callable]) -> Optional[Callable]:
  """The pointwise product of two learning-rate factors (None: the factor 1)."""
  if a is None or b is None:
    return a or b
  return lambda step: a(step) * b(step)


def run_finetuning(classifier: Classifier, layers: Sequence, dataset: data.Dataset, config: config_lib.Config,
                   state: Dict[str, Any], save: Callable[[Dict[str, Any]], float], timer: timing.PhaseTimer,
                   device: Optional[str] = None, strategy: Optional[tf.distribute.Strategy] = None,
                   chunks_per_epoch: int = 1, learning_rate: Optional[float] = None,
                   lr_multiplier: Optional[Callable[[tf.Tensor], tf.Tensor]] = None,
                   rule: optimizers.UpdateRule = optimizers.SGD, summaries: Optional[Any] = None,
                   devices: Optional[Sequence[str]] = None) -> Dict[str, Any]:
  """Finetunes for `config.finetune_epochs`, checkpointing every epoch; returns the record's "finetune".

  Resumable: `state["finetune"]` (the checkpointed progress) says how many epochs are done; when it is
  absent the hidden layers are first loaded from the pretrained `layers`.

  Args:
    classifier: the model (restored from the checkpoint when resuming).
    layers: the pretrained `DenoisingAutoencoder`s, bottom first.
    dataset: the data (with labels).
    config: uses finetune_epochs, effective_finetune_batch_size, finetune_learning_rate, seed.
    state: the run's progress document (updated in place).
    save: writes a checkpoint with the given progress document; returns seconds spent.
    timer: phases "finetune_warmup", "finetune_train", "finetune_evaluate", "checkpoint" are added.
    device, strategy: where to run (one device, or replicas of a strategy). Under a strategy the
      training images are copied once to every replica device (`replica_steps.replica_resident`) and each
      replica computes its example indices (`replica_steps.replica_positions`).
    chunks_per_epoch: calls per epoch (more gives a smoother progress bar).
    learning_rate: the SGD learning rate (after the warm-up); None uses config.finetune_learning_rate.
    lr_multiplier: None, or the factor of `learning_rate` at each step (see `Finetuner.run_steps`): a program's warm-up,
      multiplied by config.finetune_lr_schedule's factor (`lr_schedule`).
    rule: the update rule (`common.model.optimizers.UpdateRule`, plain SGD by default; others with `strategy` only);
      its slot variables are saved with the classifier.
    summaries: a `common.artifacts.summaries.Summaries` receiving each epoch's scalars, or None.
    devices: the classifier's layers' devices when they are pipelined (`common.training.finetune_pipeline`; plain SGD, no
      strategy), else None.

  Returns:
    {"epochs", "batch_size", "learning_rate", "lr_schedule", "placement" ("replicas", "one_device" or "pipelined"),
     "replicas", "seconds", "validation_accuracy", "test_accuracy", "history": [{"loss", "validation_accuracy",
     "seconds"}, ...]}, and with config.finetune_keep_best "best_epoch" (1-based: the epoch whose weights were kept,
     the first of the highest validation accuracy) and "last_epoch_validation_accuracy".

  Raises:
    TrainingDivergedError: the loss became NaN or infinite (the last good checkpoint is kept).
  """
  epochs = config.finetune_epochs
  batch = config.effective_finetune_batch_size
  fine = state.get("finetune")
  if fine is None:
    classifier.load_pretrained(layers)
    fine = state["finetune"] = {"history": []}
  done = len(fine["history"])
  if strategy is not None:
    images = replica_steps.replica_resident(strategy, dataset.train_images)
    labels = replica_steps.replica_resident(strategy, dataset.train_labels)
  elif devices:
    images = labels = None  # On the first and last stage's devices (below).
  else:
    with tf.device(device):
      images = tf.constant(dataset.train_images)
      labels = tf.constant(dataset.train_labels)
  if devices:
    if rule.name != "sgd":
      raise ValueError(f"pipelined finetuning runs plain SGD, not {rule.name}: use another --finetune_placement")
    with tf.device(devices[0]):
      images = tf.constant(dataset.train_images)
    with tf.device(devices[-1]):
      labels = tf.constant(dataset.train_labels)
    finetuner = finetune_pipeline.PipelinedFinetuner(classifier, devices, images, labels, config.seed, batch)
  else:
    with strategy.scope() if strategy is not None else tf.device(device):
      finetuner = Finetuner(classifier, images, labels, config.seed, batch, device, rule, config.finetune_kernels)
  steps = finetuner.steps_per_epoch
  best = None
  if config.finetune_keep_best:
    with strategy.scope() if strategy is not None else contextlib.nullcontext():
      best = classifier.best_copy()
  lr_multiplier = _product(lr_multiplier, lr_schedule(config.finetune_lr_schedule, epochs * steps))
  steps_fn = graph.function(lambda e, f, n, lr: finetuner.run_steps(e, f, n, lr, strategy, lr_multiplier))
  with timer.phase(timing.FINETUNE_COMPILE_PHASE):
    steps_fn(tf.constant(0), tf.constant(0), tf.constant(1), tf.constant(0.0)).numpy()
  progress = progress_lib.Progress(epochs, "finetune", config.show_progress, done_work=done)
  learning_rate = config.finetune_learning_rate if learning_rate is None else learning_rate
  for epoch in range(done, epochs):
    traced = os.path.join(config.profile_dir, PROFILE_SUBDIR) if config.profile_dir and epoch == done else None
    with timer.phase("finetune_train"), timing.trace(traced):
      result = epochs_lib.run_epoch(steps_fn, epoch, steps, learning_rate, chunks_per_epoch, progress, 1.0,
                                    "finetuning loss", "--finetune_learning_rate")
    loss, seconds = result["loss"], result["seconds"]
    with timer.phase("finetune_evaluate"):
      val = accuracy(classifier, dataset.validation_images, dataset.validation_labels)
    fine["history"].append({"loss": loss, "validation_accuracy": val, "seconds": seconds})
    if best is not None and val > fine.get("best_validation_accuracy", -1.0):
      with timer.phase("finetune_evaluate"):
        _copy(classifier.weights, best)
      fine["best_epoch"], fine["best_validation_accuracy"] = epoch + 1, val
    if summaries is not None:
      summaries.finetune_epoch(epoch + 1, fine["history"][-1], steps * batch)
    timer.add("checkpoint", save(state))
    progress.log(f"finetune epoch {epoch + 1}/{epochs} loss {loss:.4f} validation accuracy {val:.4f}",
                 steps * batch, seconds)
  progress.close()
  kept = {}
  if best is not None and fine["history"]:
    kept = {"best_epoch": fine["best_epoch"], "last_epoch_validation_accuracy": fine["history"][-1]["validation_accuracy"]}
    if fine["best_epoch"] < len(fine["history"]):
      _copy(best, classifier.weights)
  with timer.phase("finetune_evaluate"):
    val = accuracy(classifier, dataset.validation_images, dataset.validation_labels)
    test = accuracy(classifier, dataset.test_images, dataset.test_labels)
  return {"epochs": epochs, "batch_size": batch, "learning_rate": learning_rate, "update_rule": rule.describe(),
          "lr_schedule": config.finetune_lr_schedule, **kept,
          "placement": "pipelined" if devices else "replicas" if strategy is not None else "one_device",
          "replicas": strategy.num_replicas_in_sync if strategy is not None else 1,
          "seconds": sum(h["seconds"] for h in fine["history"]), "validation_accuracy": val,
          "test_accuracy": test, "history": fine["history"]}


def _copy(source: Sequence[tf.Variable], target: Sequence[tf.Variable]) -> None:
  """Assigns each variable of `source` to the one of `target` at its position (each on its own device)."""
  for a, b in zip(source, target):
    b.assign(a)
