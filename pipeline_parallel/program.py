"""Layer-pipelined pretraining: its registry entry (`common.programs`)."""

from common import programs
from pipeline_parallel import config

PROGRAM = programs.Program(
    name="pipeline_parallel", run_name="pp", label="pipeline parallel", color="tab:red", config=config.PipelineConfig,
    cluster="client_server", pipelined=True, network="activations", thread_pools=("per_device", "shared"),
    perf_model="experiments.perf_model.Pipeline")
