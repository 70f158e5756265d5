"""Benchmarks and the experiments that regenerate every figure and table of the report."""
