"""The headline of results/README.md and of the top README: a table of at most 8 rows, cells of at most 140
characters, each result ours beside the report's, with the machine and code of the records behind it; a program
shows only where it has records, and a benchmark's number only where none of its configurations is noisy
(`harness.noisy`: the cell says "too noisy ‡" instead)."""

import os
from typing import List, Optional, Tuple

from common.settings import programs
from experiments import presets
from experiments import records
from experiments import reported
from experiments.benchmarks import equal_cores as equal_cores_bench
from experiments.benchmarks import harness
from experiments.benchmarks import precision as precision_bench
from experiments.benchmarks import strategies as strategies_bench
from experiments.report import series
from experiments.report import tables

GREEDY, DP, PP = programs.GREEDY, programs.DATA_PARALLEL, programs.PIPELINE_PARALLEL
CELL = 140  # characters a cell may have


def _per_program(values: List[Tuple[programs.Program, str]], suffix: str = "") -> str:
  """"<label> <value>, ..." + suffix, or by run names ("mp 1.71×") where labels would pass `CELL` characters."""
  cell = ", ".join(f"{p.label} {v}" for p, v in values) + suffix
  return cell if len(cell) <= CELL else ", ".join(f"{p.run_name} {v}" for p, v in values) + suffix


def _cell(*parts: Optional[str]) -> str:
  """The parts that exist, "; "-joined, or "not run yet"."""
  return "; ".join(p for p in parts if p) or "not run yet"


def _scaling(output_dir: str, data: series.Data, used: List[dict]) -> str:
  """Per machine, each scaling entry's deepest stack's speedup over 1 device on 2 / 4 devices (with † where
  oversubscribed), e.g. "2 cores: 1.28× / 1.47× †, ...; 16 cores (...)"; never the `records.EARLIER` folder's."""
  parts = []
  for machine in ("",) + tuple(m for m in records.OTHER_MACHINES if m != records.EARLIER):
    found, cells = [records.EntryData.load(os.path.join(output_dir, machine), n) if machine else data[n]
                    for n in series.SCALING], []
    for by_g in (list(series.stacks(d).values())[-1] if d and d.runs else {} for d in found):
      shown = [by_g[g] for g in (2, 4) if g in by_g and 1 in by_g]
      used += shown + ([by_g[1]] if shown else [])
      cells.append(" / ".join(tables.fmt(records.ratio(by_g[1], r), "×")
                              + (" †" if records.oversubscribed(r) else "") for r in shown))
    if any(cells):
      parts.append(f"{max(series.machine_cores(d) for d in found if d)} cores: "
                   + ", ".join(c or "—" for c in cells))
  return _cell(*parts)


def _noisy(summary: dict, label: str = "") -> Optional[str]:
  """"<label>too noisy ‡" when a configuration of the summary is `harness.noisy`, else None."""
  return f"{label}too noisy ‡" if harness.noisy(summary) else None


def _benchmark(output_dir: str, name: str, file: str, measures: List[str], used: List[dict]) -> Optional[str]:
  """"m1 / m2": median (min–max) of a benchmark summary's measures."""
  folder = os.path.join(output_dir, "benchmarks", name)
  summary = records.load(os.path.join(folder, file))
  if summary is None:
    return None
  used += harness.flat_records(folder, summary)
  return _noisy(summary) or " / ".join(f"{tables.fmt(summary[m], 'spread')}×" for m in measures)


def _accuracy(data: series.Data, program: programs.Program, entry: presets.Entry, used: List[dict],
              recipe: str = "") -> Optional[str]:
  """"cpu / full": test accuracy of `program` at an accuracy entry's most epochs, and of its full-size runs whose
  name contains `recipe`."""
  shown, acc, full, base = [], data[entry.name], data[presets.FULL_SIZE.name], programs.baseline().name
  if acc is not None:
    if recipe:
      rows = series.dp_accuracy_rows(acc.runs, acc.preset)
      shown.append(rows[-1]["report_recipe" if recipe == "report" else recipe] if rows else None)
    else:
      values = series.accuracy_series(acc.runs).get(program.name)
      shown.append(values[-1][1] if values else None)
    used += [r for r in acc.runs.values() if series.strategy(r) in (program.name, base)]
  mine = [r for n, r in (full.runs.items() if full else ()) if series.strategy(r) == program.name and recipe in n
          and r["config"].get("precision", programs.PRECISIONS[0]) == programs.PRECISIONS[0]
          and records.dataset(r) == presets.MNIST]
  used += mine
  shown += [records.test_accuracy(r) for r in mine]
  return " / ".join(tables.fmt(a, "acc") for a in shown) if any(a is not None for a in shown) else None


def _strategies(output_dir: str, used: List[dict]) -> Optional[str]:
  """Every compared program's median speedup over the baseline in the strategies benchmark (alternated repeats)."""
  summaries = harness.load_summaries(output_dir, strategies_bench.BENCHMARK)
  if not summaries:
    return None
  summary, by_run_name = next(iter(summaries.values())), {p.run_name: p for p in programs.PROGRAMS}
  found = harness.records_of(os.path.join(output_dir, "benchmarks", strategies_bench.BENCHMARK.name), summary)
  used += [r for rs in found.values() for r in rs]

  def staleness(rs: List[dict]) -> str:  # the range an asynchronous program's updates had ("0" alone: they took turns)
    if not all(r.get("staleness") for r in rs):
      return ""
    seen = sorted({k for r in rs for k, count in r["staleness"]["histogram"] if count})
    return f" (staleness {seen[0]}{'' if seen[0] == seen[-1] else f'–{seen[-1]}'})"
  return _noisy(summary) or _per_program([(by_run_name[n], f"{s['median']:.2f}×{staleness(found[n])}")
                                          for n, s in summary["speedup_vs_greedy"].items()],
                                         f"; medians of {summary['setting']['repeats']} repeats")


def _precision(output_dir: str, data: series.Data, used: List[dict]) -> Optional[str]:
  """bfloat16 over float32 in the precision benchmark at batch 1000 (where only `records.EARLIER` has it: says so,
  cites none), and the pipeline's test accuracy in both precisions in `precision_accuracy` (the full-size runs are in
  results/README.md, on other machines)."""
  folder = os.path.join(output_dir, "benchmarks", precision_bench.BENCHMARK.name)
  summary, speed, f32 = records.load(os.path.join(folder, "summary_b1000.json")), "", programs.PRECISIONS[0]
  if summary:
    used += harness.flat_records(folder, summary)
    ratios = {n: m["speedup_bf16_over_f32"]["median"] for n, m in summary["programs"].items()}
    speed = _noisy(summary, "speed ") or (
        f"{GREEDY.label} {ratios[GREEDY.name]:.2f}× (every program ≥ {min(ratios.values()):.2f}×); "
        f"{PP.label} bf16 / greedy f32 {summary['pipeline_bf16_vs_greedy_f32']['median']:.2f}×")
  elif os.path.isdir(os.path.join(output_dir, records.EARLIER, "benchmarks", precision_bench.BENCHMARK.name)):
    speed = "speed: no record that names its instruction set (earlier ones: results/README.md)"
  acc = data[presets.PRECISION_ACCURACY.name]
  pp = {r["config"].get("precision", f32): r for r in (acc.runs.values() if acc else ()) if series.strategy(r) == PP.name}
  if len(pp) < 2:
    return speed or None
  used += list(pp.values())
  bf16, base = (tables.fmt(records.test_accuracy(pp[p]), "acc") for p in programs.PRECISIONS[::-1])
  measured = bool(summary) and "‡" not in speed
  return (f"{speed}, its" if measured else f"{speed}; {PP.label}" if speed else PP.label) + (
      f" test accuracy {bf16} (f32: {base})")


def _comparison(data: series.Data, used: List[dict]) -> Optional[str]:
  """Every compared program's speedup over the baseline in `strategy_comparison` (single runs)."""
  sc, base = data[presets.STRATEGY_COMPARISON.name], programs.baseline().run_name
  rs = series.strategy_records(sc) if sc else {}
  if base not in rs:
    return None
  used += rs.values()
  return _per_program([(programs.get(series.strategy(r)), tables.fmt(records.ratio(rs[base], r), "×"))
                       for n, r in rs.items() if n != base], " (single runs)")


def _equal_cores(output_dir: str, used: List[dict]) -> Optional[str]:
  """The fastest program per batch, e.g. "pipeline parallel 1.65× at batch 100, 1.37× at 1000 (2 cores)"."""
  found, rs = series.equal_cores(output_dir)
  used += rs
  parts, last = [], None
  for (cores, batch), s in found.items():
    program = equal_cores_bench.program_of(s["fastest_program"])
    parts.append(_noisy(s, f"batch {batch} ") or f"{'' if program == last else series.program_name(program) + ' '}"
                 f"{series.ratios_to_baseline(s, s['fastest_program'])['median']:.2f}× at "
                 f"{'' if last else 'batch '}{batch}")
    last = None if harness.noisy(s) else program
  return ", ".join(parts) + f" ({'/'.join(sorted({str(c) for c, _ in found}))} cores)" if parts else None


def _most_epochs(data: series.Data, entry: presets.Entry) -> str:
  """"cpu preset 12+12": the shown preset of an accuracy entry at its most epochs."""
  preset = data[entry.name].preset if data[entry.name] else "cpu"
  epochs = entry.sizes[preset]["epochs"] if preset in entry.sizes else "?"
  e = max(epochs) if isinstance(epochs, (tuple, list)) else epochs
  return f"{preset} preset {e}+{e}"


NO_ISA = (f"§ {records.NO_ISA}: the record was made before records kept the processor's flags; bfloat16 speed depends "
          "on them (docs/design.md, Mixed precision).")


def _short(label: str) -> str:
  """A `records.machine_label` as a headline cell: "§" for "instruction set not recorded", "(+2, same code)"."""
  return label.replace(f", {records.NO_ISA}", " §").replace(" of the same code)", ", same code)")


def headline(output_dir: str, data: series.Data) -> str:
  """The headline table (module docstring) and the meaning of its marks (†, ‡, §)."""
  used: List[List[dict]] = [[] for _ in range(7)]
  rep = reported.STRATEGY_COMPARISON
  report_acc = ", ".join(f"{p.label} {reported.ACCURACY[p.name][30]} / {reported.ACCURACY[p.name][60]}"
                         for p in presets.ACCURACY_COMPARED if p.name in reported.ACCURACY)
  rows = [
      ["Speedup over 1 device on 2 / 4 devices, 4 layers: `mp_scaling_b100`, `mp_scaling_b5000`, `dp_scaling` "
       "(single runs)",
       f"on 4 GPUs: {reported.MP_SCALING_B100[4][1] / reported.MP_SCALING_B100[4][4]:.2f}×, "
       f"{reported.MP_SCALING_B5000[4][1] / reported.MP_SCALING_B5000[4][4]:.2f}×; data parallel near linear",
       _scaling(output_dir, data, used[0])],
      ["Speedup over greedy on 2 devices, 4 × 1000 units, batch 5000 (`strategy_comparison` size; `strategies` "
       "benchmark)",
       ", ".join(f"{series.program_name(p)} {rep[GREEDY.name] / s:.2f}×" for p, s in rep.items() if p != GREEDY.name)
       + " (4 GPUs)", _cell(_strategies(output_dir, used[1]) or _comparison(data, used[1]))],
      ["Pipeline parallel (not in the report) on 2 devices vs greedy / vs model parallel, 4 × 1000 units, batch "
       "1000; 100 (benchmark)", "—",
       _cell(*[_benchmark(output_dir, PP.name, f"summary_b{b}.json", ["speedup_vs_greedy", "speedup_vs_model_parallel"],
                          used[2]) for b in (1000, 100)])],
      ["Fastest program given all of the machine's cores, × greedy on them (not in the report; `equal_cores` "
       "benchmark, medians)", "—", _cell(_equal_cores(output_dir, used[3]))],
      [f"Test accuracy, batch 100, {_most_epochs(data, presets.ACCURACY_VS_EPOCHS)} / full size 30+30 (single runs)",
       report_acc + f" (30+30 / 60+60; text: model parallel ~{reported.MP_ACCURACY_TEXT})",
       _cell(_per_program([(p, a) for p in presets.ACCURACY_COMPARED
                           for a in [_accuracy(data, p, presets.ACCURACY_VS_EPOCHS, used[4])] if a]))],
      ["Data parallel test accuracy at a large batch, report's recipe; large-batch recipe (`dp_accuracy` "
       f"{_most_epochs(data, presets.DP_ACCURACY)} / full size 30+30)",
       f"{reported.DP_ACCURACY[30]} / {reported.DP_ACCURACY[60]} (30+30 / 60+60, batch 5000 per tower)",
       _cell(*[_accuracy(data, DP, presets.DP_ACCURACY, used[5], recipe) for recipe in ("report", "large_batch")])],
      ["bfloat16 over float32 (not in the report): `precision` benchmark, 4 × 1000 units, batch 1000, medians; "
       f"test accuracy, {_most_epochs(data, presets.PRECISION_ACCURACY)}", "—", _cell(_precision(output_dir, data,
                                                                                               used[6]))],
  ]
  rows = [row + [_short(records.machine_label(rs) or "—")] for row, rs in zip(rows, used)]
  table = tables.md_table(["result", "report (4× GRID K520)", "ours", "machine, code"], rows)
  return table + "\n\n" + tables.DAGGER + ("\n\n" + tables.NOISY if "‡" in table else "") + (
      "\n\n" + NO_ISA if "§" in table else "")
