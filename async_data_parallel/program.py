"""Asynchronous data-parallel pretraining on a parameter server: its registry entry (`common.settings.programs`)."""

from async_data_parallel import config
from common.settings import programs

PROGRAM = programs.Program(
    name="async_data_parallel", run_name="adp", label="asynchronous data parallel", color="tab:brown",
    config=config.AsyncConfig, cluster="parameter_server", network="gradients", kernel_paths=("tf",))
