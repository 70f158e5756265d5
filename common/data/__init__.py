"""The data layer: the datasets a run may use, their splits and checks (`sources`), and loading, shuffling and
masking noise (`loader`). It may import `common.base`. The order, bottom to top, is checked by
tests/test_import_layers.py."""
