"""The measure layer: the code and machine a run ran on (`provenance`), phase timers (`timing`), parameters, FLOPs
and bytes (`cost`) and the memory estimate (`memory`). It may import `common.base` and `common.data`. The order,
bottom to top, is checked by tests/test_import_layers.py."""
