"""Equal cores (beyond the report): every program given the machine's N cores, per batch size; the table, the
figure and the one-sentence answer to "which program, with which flags, finishes pretraining first?", from the
summaries of `experiments/benchmarks/equal_cores.py` alone."""

import os
import re
import statistics
from typing import Dict, List, Optional, Tuple

from experiments import records
from experiments.benchmarks import equal_cores as bench
from experiments.benchmarks import harness
from experiments.report import style

FIGURE = "equal_cores.png"
_NAME = re.compile(r"^(?P<program>.+)_g(?P<devices>\d+)_t(?P<threads>\d+)(?P<shared>_shared)?$")


def _folder(output_dir: str) -> str:
  return os.path.join(output_dir, "benchmarks", bench.BENCHMARK.name)


def summaries(output_dir: str) -> Dict[Tuple[int, int], dict]:
  """{(cores, batch size): summary} of this machine's equal-cores summaries, by cores then batch."""
  found = harness.load_summaries(output_dir, bench.BENCHMARK)
  out = {(s["cores"], s["setting"]["batch_size"]): s for s in found.values()}
  return dict(sorted(out.items()))


def flags_of(name: str) -> str:
  """"model_parallel_g2_t1_shared" -> "--num_devices=2 --threads_per_device=1 --thread_pool=shared"."""
  m = _NAME.match(name)
  if not m:
    raise ValueError(f"not an equal-cores configuration name: {name!r}")
  text = f"--num_devices={m['devices']} --threads_per_device={m['threads']}"
  if m["shared"]:
    return text + " --thread_pool=shared"
  two_level = m["program"] in bench.TWO_LEVEL and int(m["devices"]) > 1
  return text + (" --thread_pool=per_device" if two_level else "")


def program_of(name: str) -> str:
  return _NAME.match(name)["program"]


def _ratios(summary: dict, name: str) -> dict:
  """Spread over repeats of greedy-on-all-cores seconds / this configuration's seconds (same repeat)."""
  base = summary["pretrain_seconds"][summary["baseline"]]["values"]
  mine = summary["pretrain_seconds"][name]["values"]
  return harness.spread([b / m for b, m in zip(base, mine)])


def _time_to_loss(summary: dict, name: str) -> Optional[float]:
  """Median seconds until every layer reached greedy's final held-out loss (x 1.01); None if a repeat never did."""
  values = (summary.get("seconds_to_greedy_heldout_loss") or {}).get(name)
  if not values or any(v is None for v in values):
    return None
  return statistics.median(values)


def conclusion(output_dir: str) -> Optional[str]:
  """The sentence naming the fastest program per batch size with its flags, or None without summaries."""
  found = summaries(output_dir)
  if not found:
    return None
  parts = []
  for (cores, batch), s in found.items():
    best = s["fastest_program"]
    r = _ratios(s, best)
    parts.append(f"at batch {batch}, `{program_of(best)}` with `{flags_of(best)}` "
                 f"({r['median']:.2f}× greedy on all {cores} cores, {r['min']:.2f}–{r['max']:.2f})")
  label = records.machine_label(harness.flat_records(_folder(output_dir), *found.values()))
  return (f"On {label or 'a machine its summaries do not name'}, with 4 × 1000 units and "
          f"{next(iter(found.values()))['setting']['train_examples']:,} images, the program that finishes pretraining "
          "first is: " + "; ".join(parts) + ".")


def headline_cell(output_dir: str, used: List[dict]) -> Optional[str]:
  """The fastest program per batch, e.g. "pipeline parallel 1.65× at batch 100, 1.37× at 1000 (2 cores)"; the
  summaries' records are appended to `used`."""
  found = summaries(output_dir)
  used += harness.flat_records(_folder(output_dir), *found.values())
  parts, last = [], None
  for (cores, batch), s in found.items():
    program = program_of(s["fastest_program"])
    parts.append(f"{'' if program == last else style.program_name(program) + ' '}"
                 f"{_ratios(s, s['fastest_program'])['median']:.2f}× at {'' if last else 'batch '}{batch}")
    last = program
  return ", ".join(parts) + f" ({'/'.join(sorted({str(c) for c, _ in found}))} cores)" if parts else None


def table(output_dir: str) -> str:
  """Every configuration of every summary: seconds, ratio to greedy on all cores, time to greedy's held-out loss."""
  rows = []
  for (cores, batch), s in summaries(output_dir).items():
    fastest = set(s["fastest_configuration"].values())
    for name, secs in sorted(s["pretrain_seconds"].items(), key=lambda kv: kv[1]["median"]):
      t = _time_to_loss(s, name)
      rows.append([cores, batch, ("**" if name in fastest else "") + style.program_name(program_of(name)) +
                   ("**" if name in fastest else ""), f"`{flags_of(name)}`", style.fmt_spread(secs),
                   style.fmt_spread(_ratios(s, name)), "—" if t is None else f"{t:.1f}"])
  return style.md_table(["cores", "batch", "program (bold: its fastest configuration)", "flags",
                         "pretraining s", "× greedy on all cores", "s to greedy's held-out loss"], rows)


def draw(output_dir: str) -> Optional[str]:
  """results/figures/equal_cores.png: per batch size, every configuration's ratio to greedy on all cores."""
  found = summaries(output_dir)
  if not found:
    return None
  fig, axes = style.figure(len(found), width=5.6, height=4.8)
  for ax, ((cores, batch), s) in zip(axes, found.items()):
    names = sorted(s["pretrain_seconds"], key=lambda n: s["pretrain_seconds"][n]["median"])
    spreads = [_ratios(s, n) for n in names]
    y = list(range(len(names)))
    ax.barh(y, [r["median"] for r in spreads], color=[style.program_color(program_of(n)) for n in names],
            xerr=[[r["median"] - r["min"] for r in spreads], [r["max"] - r["median"] for r in spreads]], capsize=3)
    ax.set_yticks(y)
    ax.set_yticklabels([n.replace("_", " ") for n in names], fontsize=8)
    ax.invert_yaxis()
    ax.axvline(1.0, color="0.3", lw=0.8, ls="--")
    ax.set_xlabel("speedup over greedy on all cores\n(median, min–max over repeats)")
    ax.set_title(f"batch {batch}, {cores} cores")
  fig.suptitle(f"Equal cores: 4 × 1000 units, {s['setting']['train_examples']:,} images,\n"
               f"{s['setting']['pretrain_epochs']} pretraining epochs, {s['setting']['repeats']} alternated repeats",
               fontsize=10)
  fig.tight_layout()
  path = os.path.join(output_dir, "figures", FIGURE)
  os.makedirs(os.path.dirname(path), exist_ok=True)
  style.save(fig, path)
  return path


def section(output_dir: str) -> List[str]:
  """The results README's equal-cores section (lines), or a line saying how to make it."""
  sentence = conclusion(output_dir)
  if sentence is None:
    return ["No equal-cores records yet: `python -m experiments.benchmarks.equal_cores --batch_size=100` "
            "(and 1000, 5000)."]
  return [
      "Not in the report. The report asks \"G devices against one\"; a CPU user asks \"I have N cores: which "
      "program, with which flags, finishes first?\" Every program runs in every configuration of devices × "
      "threads per device that uses exactly the N cores (model_parallel and pipeline_parallel with each thread "
      "pool), alternated repeat after repeat; greedy with all N threads on one device is the reference "
      "(`python -m experiments.benchmarks.equal_cores --batch_size=100`, then 1000 and 5000). The last column is "
      "the time until every layer's held-out reconstruction loss reached greedy's final one (+1%), — when a repeat "
      "never did.", "",
      sentence, "",
      f"![equal cores](figures/{FIGURE})", "",
      table(output_dir),
  ]
