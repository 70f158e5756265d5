"""Every benchmark, in the order results/README.md shows them. A new benchmark module is added here."""

from experiments.benchmarks import cluster
from experiments.benchmarks import data_parallel
from experiments.benchmarks import equal_cores
from experiments.benchmarks import kernels
from experiments.benchmarks import model_parallel
from experiments.benchmarks import pipeline_parallel

BENCHMARKS = (model_parallel.BENCHMARK, pipeline_parallel.BENCHMARK, data_parallel.BENCHMARK, cluster.BENCHMARK,
              equal_cores.BENCHMARK, kernels.BENCHMARK)
