"""Model-parallel pretraining: groups of G layers trained concurrently, one layer per device."""
