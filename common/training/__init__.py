"""The training layer: one epoch in chunks (`epochs`), the classifier and finetuning (`finetune`) and finetuning's
layers pipelined over the devices (`finetune_pipeline`). It may import the layers below it: `common.base`,
`common.data`, `common.measure`, `common.settings`, `common.model` and `common.distribute`. The order, bottom to top,
is checked by tests/test_import_layers.py."""
