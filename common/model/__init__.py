"""The model layer: the tied denoising autoencoder and its trainer (`autoencoder`), the matrix products' precision
(`precision`), the optimizers (`optimizers`), the weights and SavedModel out (`export`), the held-out
reconstruction (`evaluation`) and `tf.function` without AutoGraph (`graph`). It may import `common.base`,
`common.data`, `common.measure` and `common.settings`.
The order, bottom to top, is checked by tests/test_import_layers.py."""
