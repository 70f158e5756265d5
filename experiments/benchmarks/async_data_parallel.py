"""Benchmark: asynchronous against synchronous data parallelism, with and without a straggler: greedy on one device,
data_parallel on --num_devices workers (`common.launch`, MultiWorkerMirroredStrategy), async_data_parallel on as many
workers and a parameter server, each again with worker 0 sleeping --slow_worker_delay s a step, the held-out loss
every epoch, alternated. Measures examples per second, the speedup over greedy, the seconds to greedy's final
held-out loss (+1%), the staleness and rescheduled functions. Timings are committed.
  python -m experiments.benchmarks.async_data_parallel --batch_size=100 --slow_worker_delay=0.01"""

import statistics
from typing import Dict, List, Mapping

from common.settings import programs
from experiments import harness, presets
from experiments.render import figures

GREEDY, SYNC, ASYNC = programs.GREEDY, programs.DATA_PARALLEL, programs.ASYNC_DATA_PARALLEL


def configurations(s: harness.Setting) -> List:
  """greedy; data_parallel and async_data_parallel on W workers, each without and with the straggler."""
  w, delay = s.num_devices, s.options["slow_worker_delay"]
  runs = [s.spec(GREEDY.run_name, GREEDY, 1, settings=presets.HELDOUT)]
  for program, launcher in ((SYNC, (f"--workers={w}",)), (ASYNC, (f"--workers={w}", "--ps=1"))):
    for suffix, straggler in (("", {}), ("_straggler", {"benchmark_slow_worker_delay_seconds": delay})):
      runs.append(s.spec(program.run_name + suffix, program, 1,
                         {**presets.HELDOUT, **dict(program.timing_settings), **straggler},
                         launcher=("common.launch", *launcher)))
  return runs


def summarize(s: harness.Setting, found: harness.Records) -> Dict:
  """Throughput, speedup over greedy, time to greedy's held-out loss, staleness and faults per configuration."""
  base = GREEDY.run_name
  examples = (s.train_examples // s.batch_size) * s.batch_size * s.pretrain_epochs * len(s.hidden_units)
  out = {"examples_per_second": {n: harness.spread([examples / r["pretrain_seconds"] for r in rs])
                                 for n, rs in found.items()},
         "speedup_vs_greedy": harness.speedups(found, base),
         "seconds_to_greedy_heldout_loss": {n: [harness.seconds_to_loss_of(r, g) for r, g in zip(rs, found[base])]
                                            for n, rs in found.items()}, "staleness": {}, "rescheduled_functions": {}}
  for name, rs in found.items():
    if rs[0].get("staleness"):
      out["staleness"][name] = {k: statistics.median(r["staleness"][k] for r in rs) for k in ("mean", "p90", "max")}
      out["rescheduled_functions"][name] = [r["faults"]["rescheduled_functions"] for r in rs]
  for name in (SYNC.run_name, ASYNC.run_name):
    out[f"{name}_straggler_slowdown"] = harness.ratio_spread(found, f"{name}_straggler", name)
  return out


def details(summary: Dict):
  """The README table: throughput, time to greedy's held-out loss, staleness and rescheduled functions."""
  stale, times = summary["staleness"], summary["seconds_to_greedy_heldout_loss"]
  return ("seconds until every layer's held-out loss reached greedy's final one (+1%), median over the repeats "
          "(— if a repeat never did); staleness of the asynchronous updates, medians over the repeats",
          ["configuration", "examples/s", "× greedy", "s to greedy's held-out loss", "staleness mean / p90 / max",
           "rescheduled functions"],
          [[name, rate, summary["speedup_vs_greedy"].get(name, "—"),
            "—" if None in times[name] else statistics.median(times[name]),
            " / ".join(f"{stale[name][k]:.2f}" for k in ("mean", "p90", "max")) if name in stale else "—",
            ", ".join(map(str, summary["rescheduled_functions"].get(name, []))) or "—"]
           for name, rate in summary["examples_per_second"].items()])


def figure(summaries: Mapping[str, Dict]):
  """Per batch, each configuration's seconds to greedy's final held-out loss (median), with and without straggler."""
  fig, axes = figures.new(len(summaries), width=5.6, height=4.2)
  program = {p.run_name: p.name for p in programs.PROGRAMS}
  for ax, s in zip(axes, summaries.values()):
    times = {n: statistics.median(t) for n, t in s["seconds_to_greedy_heldout_loss"].items() if None not in t}
    names = list(s["seconds_to_greedy_heldout_loss"])
    ax.barh(range(len(names)), [times.get(n, 0.0) for n in names],
            color=[figures.color(program[n.split("_")[0]]) for n in names])
    for i, n in enumerate(names):
      ax.annotate("never" if n not in times else f"{times[n]:.0f} s", (times.get(n, 0.0), i), va="center", fontsize=7)
    ax.set_yticks(range(len(names)), [n.replace("_", " ") for n in names], fontsize=8)
    ax.invert_yaxis()
    ax.set(xlabel="seconds until every layer reached greedy's final held-out loss (+1%)",
           title=f"batch {s['setting']['batch_size']}, straggler sleeps {s['setting']['slow_worker_delay']:g} s/step")
  fig.suptitle("Asynchronous vs synchronous data parallelism, with and without a straggler", fontsize=10)
  fig.tight_layout()
  return fig


BENCHMARK = presets.Benchmark(
    name=ASYNC.name, runs=configurations, summarize=summarize, defaults={"batch_size": 100, "pretrain_epochs": 3},
    options={"slow_worker_delay": (0.01, "Seconds worker 0 sleeps in every step of the straggler configurations.")},
    columns=((f"{SYNC.run_name}_straggler_slowdown", "data parallel: straggler / none"),
             (f"{ASYNC.run_name}_straggler_slowdown", "async: straggler / none")), details=details,
    figure=figure, figure_file="async_data_parallel.png", order=7)

if __name__ == "__main__":
  harness.main(BENCHMARK)
