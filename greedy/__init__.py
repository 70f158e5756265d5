"""Greedy layer-wise pretraining (the baseline)."""
