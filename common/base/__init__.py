"""The base layer: one-line user errors (`errors`), free loopback ports (`ports`) and progress lines (`progress`). It
imports no other layer of `common`. The order, bottom to top, is checked by tests/test_import_layers.py."""
