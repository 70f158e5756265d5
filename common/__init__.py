"""Shared library of the parallel stacked-denoising-autoencoder pretraining programs.

No module here reads absl FLAGS except `common.settings.flags`, so tests and experiments import the rest freely.

Its sub-packages are layers, bottom to top: base, data, measure, settings, model, distribute, training, artifacts,
run, layerwise; a module imports only its own layer and those below it (tests/test_import_layers.py). The commands
`python -m common.predict` and `python -m common.launch` stay at the top level.
"""

import os as _os

# Keep TensorFlow's C++ INFO lines out of the programs' output; set TF_CPP_MIN_LOG_LEVEL=0 to see them.
_os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "1")
