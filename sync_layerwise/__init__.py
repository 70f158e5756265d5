"""Synchronized layer-wise pretraining: all layers in training at once, one after another on one device."""
