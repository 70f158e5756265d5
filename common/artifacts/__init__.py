"""The artifacts layer: what a run leaves behind: resumable checkpoints (`checkpoint`), one writer per model_dir
(`lock`), output checks (`outputs`), the run record (`runlog`), TensorBoard summaries (`summaries`) and pictures of
filters and reconstructions (`pictures`). It may import the layers below it: `common.base`, `common.data`,
`common.measure`, `common.settings`, `common.model`, `common.distribute` and `common.training`. The order, bottom to
top, is checked by tests/test_import_layers.py."""
