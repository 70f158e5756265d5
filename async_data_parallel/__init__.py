"""Asynchronous data-parallel pretraining (asynchronous SGD) on TensorFlow's parameter-server strategy."""
