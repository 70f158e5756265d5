"""Layer-pipelined pretraining: its registry entry (`common.settings.programs`)."""

from common.settings import programs
from pipeline_parallel import config

PROGRAM = programs.Program(
    name="pipeline_parallel", run_name="pp", label="pipeline parallel", color="tab:red", config=config.PipelineConfig,
    cluster="client_server", pipelined=True, network="activations", thread_pools=("per_device", "shared"),
    # float32: the limit benchmark's faster pool at batch 100, within noise at 1000 (docs/kernels_and_threads.md).
    thread_pool={"float32": "shared", "mixed_bfloat16": "per_device"})
