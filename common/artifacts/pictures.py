"""Pictures of what a stacked autoencoder learned, from its weights alone (NumPy; matplotlib draws the PNGs).

  * the first layer's filters: column j of layer 1's kernel W [D, h] is what hidden unit j responds to, shown as an
    image of the data's shape, each scaled to its own [min, max] (the tiled filters of Vincent et al. 2010,
    "Stacked denoising autoencoders", figure 6); at most `MAX_FILTERS`;
  * test images beside their reconstructions through each layer: through layer k, the clean image encoded by
    layers 1..k (h = sigmoid(x W + b)) and decoded back by k..1 (x = sigmoid(h W^T + c)).

`common.artifacts.summaries` logs both to TensorBoard every epoch; `draw` writes `<stem>_filters.png` and
`<stem>_reconstructions.png` beside a run record (`--pictures`).
"""

import os
from typing import Dict, List, Optional, Sequence, Tuple

import numpy as np

MAX_FILTERS = 100
EXAMPLES = 10  # test images in the reconstructions picture


def _sigmoid(x: np.ndarray) -> np.ndarray:
  return 1.0 / (1.0 + np.exp(-x))


def layers_of(weights: Dict[str, np.ndarray]) -> int:
  """The number of layers in {"layerN/kernel", ...} weights."""
  return sum(1 for k in weights if k.startswith("layer") and k.endswith("/kernel"))


def reconstructions(weights: Dict[str, np.ndarray], images: np.ndarray) -> List[np.ndarray]:
  """Per layer k (bottom first), float32 [n, D] in (0, 1): `images` (float32 [n, D]) encoded through layers 1..k and
  decoded back through k..1, with `weights` ({"layerN/kernel": [in, out], "layerN/bias", "layerN/decoder_bias"})."""
  out, codes = [], [images.astype(np.float64)]
  for k in range(1, layers_of(weights) + 1):
    codes.append(_sigmoid(codes[-1] @ weights[f"layer{k}/kernel"] + weights[f"layer{k}/bias"]))
    x = codes[-1]
    for j in range(k, 0, -1):
      x = _sigmoid(x @ weights[f"layer{j}/kernel"].T + weights[f"layer{j}/decoder_bias"])
    out.append(x.astype(np.float32))
  return out


def _as_image(row: np.ndarray, shape: Sequence[int]) -> np.ndarray:
  """[D] -> [H, W, C] (C 1 or 3) in [0, 1]; flat data (D,) as a strip [1, D, 1]."""
  image = row.reshape(shape) if len(shape) == 3 else row.reshape((1, -1, 1))
  return image if image.shape[-1] in (1, 3) else image[..., :1]


def _tile(images: Sequence[np.ndarray], columns: int, pad: int = 1) -> np.ndarray:
  """Images [H, W, C] in a grid of `columns`, separated by `pad` pixels of 1 (white): float32 [rows (H+pad), ...]."""
  h, w, c = images[0].shape
  rows = -(-len(images) // columns)
  grid = np.ones((rows * (h + pad) + pad, columns * (w + pad) + pad, c), np.float32)
  for i, image in enumerate(images):
    r, q = divmod(i, columns)
    grid[pad + r * (h + pad):pad + r * (h + pad) + h, pad + q * (w + pad):pad + q * (w + pad) + w] = image
  return grid


def filters(kernel: np.ndarray, image_shape: Sequence[int], limit: int = MAX_FILTERS) -> np.ndarray:
  """The first min(h, `limit`) filters of layer 1 (kernel float [D, h]), each scaled to [0, 1], tiled in a square-ish
  grid: float32 [rows, cols, C]."""
  count = min(kernel.shape[1], limit)
  tiles = []
  for j in range(count):
    f = kernel[:, j].astype(np.float64)
    span = f.max() - f.min()
    tiles.append(_as_image(((f - f.min()) / span if span > 0 else np.zeros_like(f)).astype(np.float32), image_shape))
  return _tile(tiles, int(np.ceil(np.sqrt(count))))


def reconstruction_grid(images: np.ndarray, rebuilt: Sequence[np.ndarray], image_shape: Sequence[int]) -> np.ndarray:
  """A row of the test images (float32 [n, D]) above a row per layer of their reconstructions: float32 [rows, cols, C]."""
  rows = [images] + list(rebuilt)
  return _tile([_as_image(r[i], image_shape) for r in rows for i in range(len(images))], len(images))


def draw(stem: str, weights: Dict[str, np.ndarray], images: np.ndarray, image_shape: Sequence[int],
         title: str = "") -> Tuple[Optional[str], str]:
  """Writes `<stem>_filters.png` (image-shaped data only: None for flat data) and `<stem>_reconstructions.png`;
  returns their paths. Each a few tens of KB (small figures, no interpolation).

  Args:
    stem: the path without suffix, e.g. runs/greedy_30 (beside runs/greedy_30.json).
    weights: the pretrained weights ({"layerN/kernel", ...}, `common.artifacts.runlog.export_weights`' keys).
    images: float32 [n, D] test images in [0, 1]; the first `EXAMPLES` are shown.
    image_shape: the data's example shape, (H, W, C) or (D,).
    title: the figures' title (run name, dataset).
  """
  import matplotlib  # noqa: only here: a run without pictures never imports it
  matplotlib.use("Agg")
  from matplotlib import pyplot as plt

  def save(grid: np.ndarray, path: str, caption: str) -> str:
    height = 1.2 + 5.0 * grid.shape[0] / max(grid.shape[1], 1)
    fig, ax = plt.subplots(figsize=(5.0, min(height, 9.0)), dpi=90)
    ax.imshow(grid[..., 0] if grid.shape[-1] == 1 else grid, cmap="gray", vmin=0.0, vmax=1.0,
              interpolation="nearest")
    ax.set_axis_off()
    ax.set_title(caption, fontsize=8)
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    fig.savefig(path, bbox_inches="tight")
    plt.close(fig)
    return path

  shown = images[:EXAMPLES]
  rebuilt = reconstructions(weights, shown)
  recon = save(reconstruction_grid(shown, rebuilt, image_shape), f"{stem}_reconstructions.png",
               f"{title}\ntop: test images; row k+1: reconstructed through layers 1..{len(rebuilt)}")
  if len(image_shape) not in (2, 3):
    return None, recon
  kernel = weights["layer1/kernel"]
  return save(filters(kernel, image_shape), f"{stem}_filters.png",
              f"{title}\nlayer 1: first {min(kernel.shape[1], MAX_FILTERS)} of {kernel.shape[1]} filters"), recon
