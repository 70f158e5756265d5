"""Synchronized layer-wise pretraining: its registry entry (`common.programs`)."""

from common import programs

PROGRAM = programs.Program(
    name="sync_layerwise", run_name="sync", label="synchronized layer-wise", color="tab:purple", one_device=True,
    perf_model="experiments.perf_model.SyncLayerwise")
