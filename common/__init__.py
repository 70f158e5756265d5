"""Shared library of the parallel stacked-denoising-autoencoder pretraining programs.

No module here reads absl FLAGS except `common.flags`, so tests and experiments import the rest freely.
"""

import os as _os

# Keep TensorFlow's C++ INFO lines out of the programs' output; set TF_CPP_MIN_LOG_LEVEL=0 to see them.
_os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "1")
