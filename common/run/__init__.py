"""The run layer: a run from start to finish around a program's pretrain hook (`lifecycle`) and the programs' entry
point (`cli`). It may import every layer below it, all but `common.layerwise`. The order, bottom to top, is checked
by tests/test_import_layers.py."""
