"""Every benchmark, in the order results/README.md shows them. A new benchmark module is added here."""

from experiments.benchmarks import async_data_parallel
from experiments.benchmarks import async_functions
from experiments.benchmarks import cluster
from experiments.benchmarks import data_parallel
from experiments.benchmarks import equal_cores
from experiments.benchmarks import finetune
from experiments.benchmarks import hybrid
from experiments.benchmarks import kernels
from experiments.benchmarks import limit
from experiments.benchmarks import model_parallel
from experiments.benchmarks import pipeline_parallel
from experiments.benchmarks import precision
from experiments.benchmarks import strategies

BENCHMARKS = (strategies.BENCHMARK, precision.BENCHMARK, model_parallel.BENCHMARK, pipeline_parallel.BENCHMARK,
              hybrid.BENCHMARK, data_parallel.BENCHMARK, async_data_parallel.BENCHMARK, async_functions.BENCHMARK,
              finetune.BENCHMARK, limit.BENCHMARK, cluster.BENCHMARK, equal_cores.BENCHMARK, kernels.BENCHMARK)
