"""Data-parallel pretraining: its registry entry (`common.settings.programs`)."""

from common.settings import programs
from data_parallel import config

PROGRAM = programs.Program(
    name="data_parallel", run_name="dp", label="data parallel", color="tab:green", config=config.DataParallelConfig,
    cluster="multi_worker", network="gradients", splits_batch=True, timing_settings=(("profile_steps", 0),))
