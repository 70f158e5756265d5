"""The layerwise layer: the epoch-step layer-wise schedule (`schedule`) and its execution (`training`), used only by
model_parallel and sync_layerwise. The top layer: it may import every other layer of `common`. The order, bottom to
top, is checked by tests/test_import_layers.py."""
