"""The data layer: the datasets a run may use, their splits and checks (`sources`), loading, shuffling and masking
noise (`loader`), and the decoded datasets kept between runs (`decoded_cache`). It may import `common.base`. The
order, bottom to top, is checked by tests/test_import_layers.py."""
