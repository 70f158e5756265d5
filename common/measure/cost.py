"""The cost model of the project, in one place and free of TensorFlow: parameters and FLOPs per layer, and the
contiguous split of layers into stages of least maximal cost (`partition`).

Every count follows the model of `common.model.autoencoder` (tied weights, a separate decoder bias): a layer
n_in -> n_out has n_in n_out + n_out + n_in parameters, and one training step on b examples costs five
matrix products of b x n_in x n_out multiply-adds (encode, decode, and three for the gradients). A
multiply-add is 2 FLOPs. The progress ETA of every program, the placement of `pipeline_parallel`, the
benchmarks' FLOP bounds and the performance model all use these
functions, so a change of the model changes them all.
"""

from typing import Any, Dict, List, Sequence

from common.data import sources as datasets

# The default dataset's (MNIST's) inputs and classes; a run on other data passes its own.
INPUT_UNITS = datasets.known(datasets.DEFAULT).input_units
NUM_CLASSES = datasets.known(datasets.DEFAULT).num_classes
# Matrix products of one training step of a layer, per example: encode, decode, and the gradients of the
# decoder and encoder uses of the tied kernel plus the gradient flowing back into the hidden units.
TRAIN_PRODUCTS = 5
# Products per frozen layer below, per example, in a greedy-order step: the corrupted and the clean batch.
FROZEN_PRODUCTS = 2


def sizes(hidden_units: Sequence[int], input_units: int = INPUT_UNITS) -> List[int]:
  """[input_units, hidden_units[0], ...]: the widths of the stack, bottom first."""
  return [int(input_units)] + [int(u) for u in hidden_units]


def layer_params(hidden_units: Sequence[int], input_units: int = INPUT_UNITS) -> List[int]:
  """Trainable parameters of each layer: kernel [n_in, n_out] + bias [n_out] + decoder bias [n_in]."""
  s = sizes(hidden_units, input_units)
  return [s[k] * s[k + 1] + s[k + 1] + s[k] for k in range(len(hidden_units))]


def product_flops(hidden_units: Sequence[int], layer_index: int, input_units: int = INPUT_UNITS) -> float:
  """FLOPs of one matrix product of layer `layer_index` (1-based) for one example: 2 n_in n_out."""
  s = sizes(hidden_units, input_units)
  return 2.0 * s[layer_index - 1] * s[layer_index]


def layer_epoch_flops(hidden_units: Sequence[int], layer_index: int, num_examples: int,
                      input_units: int = INPUT_UNITS) -> float:
  """FLOPs of one pretraining epoch of layer `layer_index` (1-based) in the greedy order.

  Greedy, synchronized layer-wise, model- and data-parallel pretraining: five products of the layer
  plus two forward products (corrupted and clean) per frozen layer below it, for each of the
  `num_examples` examples. So layer n costs 5 + 2(n-1) products of its size class per example.
  """
  own = TRAIN_PRODUCTS * product_flops(hidden_units, layer_index, input_units)
  frozen = sum(FROZEN_PRODUCTS * product_flops(hidden_units, k, input_units) for k in range(1, layer_index))
  return float(num_examples) * (own + frozen)


def pipeline_layer_epoch_flops(hidden_units: Sequence[int], layer_index: int, num_examples: int,
                               input_units: int = INPUT_UNITS) -> float:
  """FLOPs of one epoch of layer `layer_index` (1-based) in the layer-pipelined schedule.

  `pipeline_parallel`: a layer trains on the encodings the layer below emitted and never recomputes the
  layers below; it costs its five products plus one forward product of the clean batch that it emits for
  the layer above (the corrupted encoding is its own training forward pass, reused). The top layer emits
  nothing.
  """
  emits = 1 if layer_index < len(hidden_units) else 0
  return float(num_examples) * (TRAIN_PRODUCTS + emits) * product_flops(hidden_units, layer_index, input_units)


def pretraining_flops(hidden_units: Sequence[int], epochs: int, num_examples: int, pipelined: bool = False,
                      input_units: int = INPUT_UNITS) -> float:
  """FLOPs of pretraining every layer for `epochs` epochs (greedy order, or pipelined)."""
  per_epoch = pipeline_layer_epoch_flops if pipelined else layer_epoch_flops
  return epochs * sum(per_epoch(hidden_units, k, num_examples, input_units)
                      for k in range(1, len(hidden_units) + 1))


def finetune_epoch_flops(hidden_units: Sequence[int], num_examples: int, evaluated_examples: int = 0,
                         input_units: int = INPUT_UNITS, num_classes: int = NUM_CLASSES) -> float:
  """FLOPs of one finetuning epoch: forward and backward (3 products per layer and example) over the
  training examples, plus a forward pass (1 product) over `evaluated_examples` (validation, test)."""
  s = sizes(hidden_units, input_units) + [num_classes]
  per_example = sum(2.0 * a * b for a, b in zip(s, s[1:]))
  return 3.0 * num_examples * per_example + float(evaluated_examples) * per_example


def network_bytes(hidden_units: Sequence[int], batch_size: int, num_examples: int,
                  input_units: int = INPUT_UNITS) -> Dict[str, Any]:
  """Bytes that cross the network during pretraining, from the parameter shapes (float32, 4 bytes).

  "gradients" (a data-parallel program: every step, the layer in training): its gradients, kernel [n_in, n_out] + bias
  [n_out] + decoder bias [n_in], all-reduced (summed); a ring all-reduce over W workers sends
  2 (W - 1) / W times that per worker (1x for W = 2). "weight_copies" (a model-parallel program: once per
  epoch-step, one group
  of all H layers on H workers): every in-group frozen copy, kernel + bias (a frozen encoder has no
  decoder bias), from the worker of layer k to the worker of each layer above it in the group.

  Args:
    hidden_units: the layer sizes, bottom first.
    batch_size: the global batch (data parallel steps per epoch = num_examples // batch_size).
    num_examples: training images per epoch.
    input_units: inputs per example (D).

  Returns:
    {what crosses (`common.settings.programs.NETWORK`): ...}: {"gradients": {"gradient_bytes_per_step": [per layer],
     "steps_per_epoch", "gradient_bytes_per_epoch": [per layer]}, "weight_copies": {"copies": [(layer, to layer),
     ...] (1-based), "bytes_per_epoch_step": total}}.
  """
  sizes = [input_units] + list(hidden_units)
  grads = [4 * (a * b + b + a) for a, b in zip(sizes, sizes[1:])]
  encoder = [4 * (a * b + b) for a, b in zip(sizes, sizes[1:])]
  steps = num_examples // batch_size
  copies = [(k + 1, j + 1) for j in range(len(hidden_units)) for k in range(j)]
  return {"gradients": {"gradient_bytes_per_step": grads, "steps_per_epoch": steps,
                        "gradient_bytes_per_epoch": [g * steps for g in grads]},
          "weight_copies": {"copies": copies, "bytes_per_epoch_step": sum(encoder[k - 1] for k, _ in copies)}}


def partition(costs: Sequence[float], parts: int) -> List[List[int]]:
  """Contiguous split of items 0..n-1 into `parts` non-empty groups minimising the largest group cost.

  Args:
    costs: cost of each item (>= 0), in order.
    parts: number of groups, 1 <= parts <= len(costs).

  Returns:
    The groups, each a list of consecutive 0-based indices, in order. Among optimal splits, the one
    whose earlier groups are as large as possible is returned (deterministic).

  Raises:
    ValueError: parts outside 1..len(costs), or a negative cost.
  """
  n = len(costs)
  if not 1 <= parts <= n:
    raise ValueError(f"cannot split {n} layer(s) into {parts} stage(s)")
  if any(c < 0 for c in costs):
    raise ValueError(f"costs must be >= 0, got {list(costs)}")
  prefix = [0.0]
  for c in costs:
    prefix.append(prefix[-1] + c)
  inf = float("inf")
  # best[k][i]: the least largest-group cost of splitting items 0..i-1 into k groups; cut[k][i]: the
  # start of the last group in that split.
  best = [[inf] * (n + 1) for _ in range(parts + 1)]
  cut = [[0] * (n + 1) for _ in range(parts + 1)]
  best[0][0] = 0.0
  for k in range(1, parts + 1):
    for i in range(k, n + 1):
      for j in range(i - 1, k - 2, -1):  # The last group is items j..i-1; larger j first: shorter last group.
        value = max(best[k - 1][j], prefix[i] - prefix[j])
        if value < best[k][i]:
          best[k][i], cut[k][i] = value, j
  groups, end = [], n
  for k in range(parts, 0, -1):
    start = cut[k][end]
    groups.append(list(range(start, end)))
    end = start
  return groups[::-1]
