"""Greedy layer-wise pretraining, the report's baseline: its registry entry (`common.settings.programs`)."""

from common.settings import programs

PROGRAM = programs.Program(
    name="greedy", run_name="greedy", label="greedy layer-wise", color="tab:blue", one_device=True, baseline=True)
