"""Input drift: how far the codes a layer trained on were from the codes it is finally stacked on.

In greedy pretraining layer n trains every epoch on the final codes of the frozen layers below it. In the
schedules that train several layers at once it trains on codes of layers that are still moving: in
model_parallel and sync_layerwise on frozen copies refreshed once per epoch-step (up to an epoch old), in
pipeline_parallel on what the layer below emitted at each step. At the end it is stacked on the final codes,
so it may be fitted to older representations (the "input drift" hypothesis of docs/pretraining.md; decoupled
greedy learning, Belilovsky et al. 2020, "Decoupled Greedy Learning of CNNs", section 3, trains its layers on
such moving inputs too).

The measure. A fixed probe of `PROBE_EXAMPLES` validation images (the first ones: the same for every run and
seed) goes, clean, through the encoders layer n read in an epoch; the codes, float32 [probe, units of layer
n - 1], are projected by a fixed Gaussian matrix [units, `PROJECTION_DIMS`] / sqrt(dims) (a Johnson-Lindenstrauss
sketch: distances are kept to a few percent, and a run's checkpoint holds [probe, dims] per epoch instead of the
codes). After pretraining, for each epoch e of layer n:

  distance_to_final(e) = ||Z_e - Z_final||_F / ||Z_final - mean_rows(Z_final)||_F
  change(e)            = ||Z_e - Z_(e-1)||_F   / ||Z_final - mean_rows(Z_final)||_F   (None for the first epoch)

Z_e is the sketch of the codes layer n read in its epoch e, Z_final that of layer n - 1's final codes (the stack
after pretraining). The denominator is the spread of the final codes over the probe, so 1.0 means "as far as two
different images' codes are apart". Greedy gives exactly 0 for both. Everything runs in float32 (whatever the
run's precision), outside the pretraining clock (timing phase "input_drift").
"""

import base64
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence

import numpy as np
import tensorflow as tf

from common.model import graph

# Validation images in the probe, and the dimensions of the sketch.
PROBE_EXAMPLES = 256
PROJECTION_DIMS = 64
# Seed of the projections: fixed, so that every run and seed is measured with the same sketch.
PROJECTION_SEED = 20_161_207
STATE_KEY = "input_drift"  # where the sketches live in the checkpointed progress document


def projection(units: int, boundary: int) -> tf.Tensor:
  """The fixed sketch of the codes below layer `boundary` + 1: float32 [units, PROJECTION_DIMS], entries
  N(0, 1 / PROJECTION_DIMS) (a pure function of (units, boundary))."""
  return tf.random.stateless_normal([units, PROJECTION_DIMS], seed=[PROJECTION_SEED, boundary],
                                    stddev=1.0 / np.sqrt(PROJECTION_DIMS))


def _pack(sketch: np.ndarray) -> str:
  return base64.b64encode(np.asarray(sketch, np.float16).tobytes()).decode("ascii")


def _unpack(text: str) -> np.ndarray:
  return np.frombuffer(base64.b64decode(text), np.float16).astype(np.float32).reshape(-1, PROJECTION_DIMS)


class InputDrift:
  """Sketches, per layer n > 1 and per epoch, the probe's codes that layer n read; summarizes them at the end.

  Args:
    validation_images: float32 [V, D] in [0, 1]; the first min(V, PROBE_EXAMPLES) are the probe.
    layer_units: the units of every layer, bottom first.
    device: where the probe is encoded (it reads every encoder's weights, wherever they live).
  """

  def __init__(self, validation_images: np.ndarray, layer_units: Sequence[int], device: Optional[str] = None):
    self.device = device
    with tf.device(device):
      self._probe = tf.constant(np.asarray(validation_images[:PROBE_EXAMPLES], np.float32))
      self._projections = [projection(int(u), j + 1) for j, u in enumerate(layer_units[:-1])]
    self._functions: Dict[tuple, Callable] = {}

  @property
  def probe_examples(self) -> int:
    """Examples in the fixed probe batch the drift is measured on."""
    return int(self._probe.shape[0])

  def sketch(self, encoders: Sequence) -> np.ndarray:
    """float32 [probe, PROJECTION_DIMS]: the sketch of the probe through `encoders` (bottom first, each with
    `kernel` [in, out] and `bias` [out]: layers or their frozen copies), sigmoid(x W + b) in float32."""
    key = tuple(id(e) for e in encoders)
    if key not in self._functions:
      def encode():
        with tf.device(self.device):
          codes = self._probe
          for encoder in encoders:
            codes = tf.sigmoid(tf.matmul(codes, tf.cast(encoder.kernel, tf.float32)) + encoder.bias)
          return tf.matmul(codes, self._projections[len(encoders) - 1])
      self._functions[key] = graph.function(encode)
    return self._functions[key]().numpy()

  def observe(self, state: Dict[str, Any], layer: int, epoch: int, encoders: Sequence) -> None:
    """Keeps in `state` (the checkpointed progress document) the sketch of what 0-based `layer` (>= 1) read at the
    end of its 0-based `epoch` (-1: at the start of its first epoch, for a schedule whose layers read codes that
    move within an epoch): the probe through `encoders`, the encoders of layers 0 .. layer - 1 it read."""
    if layer < 1:
      return
    state.setdefault(STATE_KEY, {}).setdefault(str(layer), {})[str(epoch)] = _pack(self.sketch(encoders))

  def summary(self, state: Mapping[str, Any], layers: Sequence) -> Dict[str, Any]:
    """The run record's "input_drift": {"probe_examples", "projection_dims", "layers": [{"layer" (1-based n >= 2),
    "reads" ("fixed": one set of codes per epoch, e.g. frozen copies; "moving": codes that move within the epoch),
    "epochs": [{"epoch" (1-based), "distance_to_final", "change"}]}]}, from the sketches in `state` and the final
    codes of `layers` (the whole stack after pretraining).

    For "fixed" reads an epoch's distance is that of its codes; for "moving" reads (a sketch at the start of the
    first epoch was kept) it is the mean of the distances at the epoch's start and end (the trapezoid estimate of
    the mean over its steps), and the first epoch's change is from that start. An epoch without a sketch (a run
    resumed from a checkpoint made before the measure existed) is left out."""
    kept = state.get(STATE_KEY, {})
    out = []
    for n in range(1, len(layers)):
      final = _unpack(_pack(self.sketch(layers[:n])))  # rounded as the kept sketches are: greedy gives exactly 0
      spread = float(np.linalg.norm(final - final.mean(axis=0, keepdims=True))) or 1.0
      sketches = {int(k): _unpack(v) for k, v in kept.get(str(n), {}).items()}
      moving = -1 in sketches
      distance = {e: float(np.linalg.norm(z - final)) / spread for e, z in sketches.items()}
      epochs = []
      for e in sorted(e for e in sketches if e >= 0):
        before = e - 1 in sketches
        epochs.append({"epoch": e + 1,
                       "distance_to_final": (distance[e] + distance[e - 1]) / 2 if moving and before else distance[e],
                       "change": float(np.linalg.norm(sketches[e] - sketches[e - 1])) / spread if before else None})
      out.append({"layer": n + 1, "reads": "moving" if moving else "fixed", "epochs": epochs})
    return {"probe_examples": self.probe_examples, "projection_dims": PROJECTION_DIMS, "layers": out}


def final_distances(record: Mapping[str, Any]) -> List[Optional[float]]:
  """Per layer n >= 2 of a run record, the distance to final of its last recorded epoch (None without one)."""
  return [layer["epochs"][-1]["distance_to_final"] if layer["epochs"] else None
          for layer in (record.get("input_drift") or {}).get("layers", [])]
