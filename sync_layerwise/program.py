"""Synchronized layer-wise pretraining: its registry entry (`common.settings.programs`)."""

from common.settings import programs

PROGRAM = programs.Program(
    name="sync_layerwise", run_name="sync", label="synchronized layer-wise", color="tab:purple", one_device=True)
