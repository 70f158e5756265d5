"""Model-parallel pretraining: its registry entry (`common.settings.programs`)."""

from common.settings import programs

PROGRAM = programs.Program(
    name="model_parallel", run_name="mp", label="model parallel", color="tab:orange", cluster="client_server",
    network="weight_copies", thread_pool="shared", thread_pools=("per_device", "shared"))
