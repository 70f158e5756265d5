"""Benchmark: every program given the same N = --cores cores (default: the machine's) in every devices x threads per
device that uses them all (each of its `thread_pools` on several devices): each program's fastest configuration, the
baseline on all N cores / it, and the seconds until every layer reached the baseline's final held-out loss (+1%).
  python -m experiments.benchmarks.equal_cores --batch_size=100"""

import os
import re
import statistics
from typing import Dict, List, Mapping, Tuple

from common.settings import programs
from experiments import harness, presets, records
from experiments.render import figures, series, tables, template

_NAME = re.compile(r"^(?P<program>.+)_g(?P<devices>\d+)_t(?P<threads>\d+)(?P<shared>_shared)?$")


def _cores(s: harness.Setting) -> int:
  return int(s.options["cores"]) or os.cpu_count() or 1


def baseline(s: harness.Setting) -> str:
  """The reference configuration: the baseline program, one device with every core as its threads."""
  return f"{programs.baseline().name}_g1_t{_cores(s)}"


def program_of(name: str) -> str:
  """The program of a configuration name, e.g. "model_parallel" of "model_parallel_g2_t1_shared"."""
  return _NAME.match(name)["program"]


def flags_of(name: str) -> str:
  """"model_parallel_g2_t1_shared" -> "--num_devices=2 --threads_per_device=1 --thread_pool=shared"."""
  if not (m := _NAME.match(name)):
    raise ValueError(f"not an equal-cores configuration name: {name!r}")
  pools = programs.get(m["program"]).thread_pools
  pool = "shared" if m["shared"] else "per_device" if len(pools) > 1 and int(m["devices"]) > 1 else ""
  return (f"--num_devices={m['devices']} --threads_per_device={m['threads']}"
          + (f" --thread_pool={pool}" if pool else ""))


def configurations(s: harness.Setting) -> List:
  """Each program x (devices, threads), devices x threads = N (devices dividing a split batch), per thread pool."""
  n, runs = _cores(s), []
  for p in programs.PROGRAMS:
    for g in (d for d in range(1, n + 1) if n % d == 0 and p.devices_for(d) == d
              and not (p.splits_batch and s.batch_size % d)):
      pools = p.thread_pools if g > 1 and len(p.thread_pools) > 1 else ("",)
      runs += [s.spec(f"{p.name}_g{g}_t{n // g}" + ("" if pool in ("", "per_device") else f"_{pool}"), p, g,
                      settings={**presets.HELDOUT, **({"thread_pool": pool} if pool else {})}, threads=n // g)
               for pool in pools]
  return runs


def summarize(s: harness.Setting, runs: harness.Records) -> Dict:
  """Fastest configuration per program, ratios to the baseline on all cores, time to its held-out loss."""
  seconds = {name: harness.spread([r["pretrain_seconds"] for r in rs])["median"] for name, rs in runs.items()}
  best = {p: min((n for n in runs if program_of(n) == p), key=seconds.get)
          for p in dict.fromkeys(map(program_of, runs))}  # each program's fastest configuration
  base, reference = baseline(s), runs[baseline(s)]
  out = {"cores": _cores(s), "baseline": base, "fastest_configuration": best,
         "speedup_vs_greedy_all_cores": {p: harness.ratio_spread(runs, base, name) for p, name in best.items()},
         "fastest_program": min(best.values(), key=lambda name: seconds[name])}
  if all(records.has_heldout_curves(r) for r in reference):
    out["seconds_to_greedy_heldout_loss"] = {name: [harness.seconds_to_loss_of(r, g) for r, g in zip(rs, reference)]
                                             for name, rs in runs.items()}
  return out


def ratios_to_baseline(summary: Mapping, name: str) -> dict:
  """Spread over repeats of the baseline-on-all-cores seconds / this configuration's seconds (same repeat)."""
  seconds = summary["pretrain_seconds"]
  return harness.spread([b / m for b, m in zip(seconds[summary["baseline"]]["values"], seconds[name]["values"])])


def by_setting(summaries: Mapping[str, dict]) -> Dict[Tuple[int, int], dict]:
  """{(cores, batch size): summary} of a machine's summaries, sorted."""
  return dict(sorted({(s["cores"], s["setting"]["batch_size"]): s for s in summaries.values()}.items()))


def section(output_dir: str) -> str:
  """Its section of results/README.md (the table last), or a line saying how to make it."""
  summaries = records.load_summaries(output_dir, BENCHMARK.name)
  if not (found := by_setting(summaries)):
    return ("No equal-cores records yet: `python -m experiments.benchmarks.equal_cores --batch_size=100` "
            "(and 1000, 5000).")
  best, rows = [], []
  for (cores, batch), s in found.items():
    r, fastest = ratios_to_baseline(s, s["fastest_program"]), set(s["fastest_configuration"].values())
    best.append(f"at batch {batch}, `{program_of(s['fastest_program'])}` with `{flags_of(s['fastest_program'])}` "
                f"({r['median']:.2f}× greedy on all {cores} cores, {r['min']:.2f}–{r['max']:.2f})"
                + (" ‡" if records.noisy(s) else ""))
    for name, secs in sorted(s["pretrain_seconds"].items(), key=lambda kv: kv[1]["median"]):
      t, bold = (s.get("seconds_to_greedy_heldout_loss") or {}).get(name), "**" if name in fastest else ""
      rows.append([cores, batch, bold + series.program_name(program_of(name)) + bold, f"`{flags_of(name)}`",
                   tables.fmt(secs, "spread") + (" ‡" if name in records.noisy(s) else ""),
                   tables.fmt(ratios_to_baseline(s, name), "spread"),
                   "—" if not t or None in t else f"{statistics.median(t):.1f}"])
  folder = os.path.join(output_dir, "benchmarks", BENCHMARK.name)
  return template("equal_cores").substitute(
      machine=records.machine_label(records.flat_records(folder, *summaries.values())) or
      "a machine its summaries do not name", best="; ".join(best),
      examples=f"{next(iter(found.values()))['setting']['train_examples']:,}", figure=BENCHMARK.figure_file,
      noisy=f" {tables.NOISY}" if any(map(records.noisy, found.values())) else "", table=tables.md_table(
          ["cores", "batch", "program (bold: its fastest configuration)", "flags", "pretraining s",
           "× greedy on all cores", "s to greedy's held-out loss"], rows))


def figure(summaries: Mapping[str, dict]):
  """Every configuration's speedup over greedy on all cores, a panel per (cores, batch)."""
  found = by_setting(summaries)
  fig, axes = figures.new(len(found), width=5.6, height=4.8)
  for ax, ((cores, batch), s) in zip(axes, found.items()):
    names = sorted(s["pretrain_seconds"], key=lambda n: s["pretrain_seconds"][n]["median"])
    spreads = [ratios_to_baseline(s, n) for n in names]
    ax.barh(range(len(names)), [r["median"] for r in spreads], color=[figures.color(program_of(n)) for n in names],
            xerr=[[r["median"] - r["min"] for r in spreads], [r["max"] - r["median"] for r in spreads]], capsize=3)
    ax.set_yticks(range(len(names)), [n.replace("_", " ") for n in names], fontsize=8)
    ax.invert_yaxis()
    ax.axvline(1.0, color="0.3", lw=0.8, ls="--")
    ax.set(xlabel="speedup over greedy on all cores\n(median, min–max over repeats)",
           title=f"batch {batch}, {cores} cores")
  fig.suptitle(f"Equal cores: 4 × 1000 units, {s['setting']['train_examples']:,} images,\n"
               f"{s['setting']['pretrain_epochs']} pretraining epochs, {s['setting']['repeats']} alternated repeats",
               fontsize=10)
  fig.tight_layout()
  return fig


BENCHMARK = presets.Benchmark(
    name="equal_cores", title="Equal cores: which program finishes first on this machine", runs=configurations,
    summarize=summarize, section=section, figure=figure, figure_file="equal_cores.png",
    defaults={"batch_size": 100, "pretrain_epochs": 3},
    options={"cores": (0, "N, the cores every configuration uses (devices x threads per device); 0: all of the "
                          "machine's.")},
    folder=lambda s: f"n{_cores(s)}_b{s.batch_size}", order=12)

if __name__ == "__main__":
  harness.main(BENCHMARK)
