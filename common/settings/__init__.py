"""The settings layer: every setting, one `Config` field each (`config`), the recipes (`recipes`), the program
registry (`programs`) and the flags derived from the settings (`flags`). It may import `common.base`, `common.data`
and `common.measure`. The order, bottom to top, is checked by tests/test_import_layers.py."""
