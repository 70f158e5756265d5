"""The distribute layer: devices and thread pools (`devices`), TF_CONFIG clusters (`cluster`), the parameter-server
cluster (`parameter_server`) and steps under a tf.distribute strategy (`replica_steps`). It may import the layers
below it: `common.base`, `common.data`, `common.measure`, `common.settings` and `common.model`. The order, bottom to
top, is checked by tests/test_import_layers.py."""
