"""results/README.md from the records alone, for the studies and benchmarks given (`presets.Registry`): the headline,
the performance models, the benchmarks and their sections, per study its figure, table, sentences and commands
(other folders' records beside or apart); and the top README's generated blocks (`write_top_readme`)."""

import os
import re
from typing import Dict, List, Optional, Tuple

from experiments import ROOT, driver, perf_model, presets, records
from experiments.render import cells, series, tables, template

def model_line(name: str, d: Optional[records.StudyRecords]) -> str:
  """One study's model on one machine: parameters, largest in- and out-of-sample errors, noise of t_k."""
  if d is None:
    return f"`{name}`: no records yet."
  model, why = perf_model.calibrated(d.runs)
  if model is None:
    return f"`{name}` ({records.machine_label(list(d.runs.values()))}): {why}."
  predictions, singles = perf_model.predictions(model, d.runs), [t for _, t in model.epoch_seconds_by_depth]
  spreads = [max(times) / min(times) - 1 for k in range(max(map(len, singles), default=0))
             for times in [[t[k] for t in singles if len(t) > k]] if len(times) > 1]
  noise = "" if not spreads else (
      f" Between the one-device runs the same layer's epoch time differed by up to {max(spreads):.0%}"
      + (", so a single run per point is noisy on the scale of the goal." if max(spreads) > series.MODEL_ERROR_GOAL
         else "."))
  return (f"**`{name}`** ({records.machine_label(list(d.runs.values()))}, preset {d.preset}): {model.describe()}; "
          f"calibrated on {', '.join(model.calibration)}; in-sample error at the fit points (G <= 2): largest "
          f"{tables.judged_error(series.max_error(predictions, True))}; out-of-sample error at the predicted points "
          f"(G > 2, not used for the fit): largest {tables.judged_error(series.max_error(predictions, False))}.{noise}")


def headline(output_dir: str, data: series.Data, registry: presets.Registry, provenance: bool = False) -> str:
  """The headline (`experiments.render.cells`) from `output_dir`'s records, the rows its studies and benchmarks declare
  in `order`; `provenance`: a last column of each row's machine and code. ValueError for more than `cells.ROWS` rows."""
  rows = sorted((h for e in registry.studies + registry.benchmarks for h in e.headline), key=lambda h: h.order)
  if len(rows) > cells.ROWS:
    raise ValueError(f"the headline may have {cells.ROWS} rows, {len(rows)} are declared")
  out = []
  for row in rows:
    used: List[dict] = []  # the records the row's cell reads (`ours` runs before the machine columns)
    out.append([row.label, row.report, row.ours(output_dir, data, used), cells.machine_class(used)]
               + ([records.machine_label(used) or "—"] if provenance else []))
  return tables.md_table(["result", "report", "ours", "machine"] + (["machine, code"] if provenance else []), out)


def benchmark_section(output_dir: str, registry: presets.Registry) -> str:
  """Every benchmark summary of this machine and the others: its configurations' seconds and measures (`columns`)."""
  parts = []
  for benchmark in registry.benchmarks:
    found = [(os.path.join(where, "benchmarks", benchmark.name), file, summary)
             for where in [output_dir] + [os.path.join(output_dir, m) for m in records.folders(output_dir)]
             for file, summary in records.load_summaries(where, benchmark.name).items()]
    columns = [(key, label) for key, label in benchmark.columns if any(key in summary for *_, summary in found)]
    rows, details = [], []
    for folder, file, summary in found:
      link = os.path.relpath(os.path.join(folder, file), output_dir)
      rows.append([records.machine_label(records.flat_records(folder, summary)), records.setting_of(summary),
                   "; ".join(f"{n} {tables.fmt(s, 'spread')}" + (" ‡" if n in records.noisy(summary) else "")
                             for n, s in summary["pretrain_seconds"].items()),
                   *[tables.fmt(summary.get(key), "spread") for key, _ in columns], f"[`{link}`]({link})"])
      if benchmark.details and (own := benchmark.details(summary)):  # its own measures, a table per summary
        caption, header, body = own
        details.append(f"*`{link}`: {caption}*\n\n" + tables.md_table(header, [
            [tables.fmt(c, "spread") if isinstance(c, dict) else f"{c:.3g}" if isinstance(c, float) else c
             for c in row] for row in body]))
    if rows:
      parts.append(template("benchmark").substitute(name=benchmark.name, table=tables.md_table(
          ["machine, code", "setting", "pretraining s per configuration"] + [label for _, label in columns]
          + ["summary"], rows), details="".join("\n\n" + d for d in details), figure=f"\n\n![{benchmark.name}]"
          f"(figures/{benchmark.figure_file})" if benchmark.figure_file and not benchmark.section else ""))
  return "\n\n".join(parts) or "No benchmark records yet."


def _table_lines(data: records.StudyRecords, table: str, sentences: List[str], where: str = "") -> List[str]:
  """A study's table with its caption (preset, dataset, hardware; `where`: the folder it comes from) and sentences."""
  rs = list(data.runs.values())
  return [f"*{where}{series.preset_note(data.declared, data.preset)}; dataset {records.datasets(rs)}; "
          f"{records.hardware(rs)}.*", "", table, "", " ".join(x for x in sentences if x), ""]


def study_section(output_dir: str, study: presets.Study, data: Optional[records.StudyRecords],
                  others: Dict[str, records.StudyRecords]) -> str:
  """One study: figure, preset, table, sentences, commands; then a table of each other folder's records of it
  (`others`) unless the study's table sets them beside this machine's (`tables.WITH_OTHERS`)."""
  name, table_of = study.name, study.table
  lines = [f"### `{name}`: {study.title}", ""]
  apart = {} if table_of in tables.WITH_OTHERS else others
  if data is None:
    preset = [p for p in presets.PRESETS if p in study.sizes][0 if study.kind == "own" else 1]
    lines += [f"No records yet: run `python -m experiments.reproduce --preset={preset} --only={name}`.", ""]
  else:
    if study.figure:
      lines += [f"![{name}]({os.path.relpath(series.figure_path(output_dir, name), output_dir)})", ""]
    lines += _table_lines(data, *table_of(data, others))
    rel = os.path.relpath(os.path.abspath(output_dir), ROOT)
    rel = output_dir if rel.startswith("..") else rel  # the output directory as the commands name it
    mine = [r for r in data.planned if r.name in data.runs]  # the runs with records
    lines += [f"Command: `python -m experiments.reproduce --preset={data.preset} --only={name} "
              f"--output_dir={rel}` (skips records that exist). Each run:", "", "<details><summary>"
              f"{len(mine)} program commands</summary>", "", "```"]
    lines += ["python " + " ".join(driver.command(driver.job(r.home, 0, 0, r, presets.record_path(
        rel, data.preset, r), "scratch/reproduce", data.preset))[1:]) for r in mine] + ["```", "</details>", ""]
  for machine, d in apart.items():
    lines += _table_lines(d, *table_of(d, tables.APART), where=f"In [`{machine}/`]({machine}/README.md): ")
  return "\n".join(lines)


def text(output_dir: str, registry: presets.Registry) -> str:
  """<output_dir>/README.md as generated from the records in `output_dir` (template `results`)."""
  data, found = series.load_all(output_dir, registry), series.others(output_dir, registry)
  models = [model_line(name, d) for name in series.SCALING if name in data for d in (
      [data[name], *series.others_of(found, name).values()] if data[name] else [None])]
  text = template("results").substitute(
      headline=headline(output_dir, data, registry, provenance=True), model_goal=f"{series.MODEL_ERROR_GOAL:.0%}",
      models="\n\n".join(models), noisy=tables.NOISY, benchmarks=benchmark_section(output_dir, registry),
      sections="\n\n".join(f"## {b.title}\n\n{b.section(output_dir)}" for b in registry.benchmarks if b.section),
      studies="\n".join(study_section(output_dir, e, data[e.name], series.others_of(found, e.name))
                         for e in registry.studies))
  return re.sub(r"\n{3,}", "\n\n", text).rstrip() + "\n"


def write(output_dir: str, registry: presets.Registry) -> str:
  """Writes <output_dir>/README.md (`text`); returns its path."""
  path = os.path.join(output_dir, "README.md")
  with open(path, "w") as f:
    f.write(text(output_dir, registry))
  return path


def quickstart(output_dir: str) -> str:
  """What `make train` did (results/quickstart/make_train.json): minutes, test accuracy, machine ("" without it)."""
  if (r := records.load(os.path.join(output_dir, "quickstart", "make_train.json"))) is None:
    return ""
  f, c = r["finetune"], r["config"]
  return template("quickstart").substitute(
      machine=cells.machine_class([r]), minutes=f"{r['total_seconds'] / 60:.0f}",
      pretrain_minutes=f"{r['pretrain_seconds'] / 60:.1f}", finetune_minutes=f"{f['seconds'] / 60:.1f}",
      strategy=r["strategy"], pretrain_seconds=f"{r['pretrain_seconds']:.1f}", finetune_seconds=f"{f['seconds']:.1f}",
      accuracy=f"{f['test_accuracy']:.4f}", recipe=c.get("recipe", "report"),
      units="x".join(map(str, c["hidden_units"])),
      pretrain_epochs=c["pretrain_epochs"], finetune_epochs=c["finetune_epochs"])


def top_blocks(output_dir: str, registry: presets.Registry) -> Dict[str, str]:
  """The generated blocks of the top README: {name: text between its markers}."""
  return {"results": headline(output_dir, series.load_all(output_dir, registry), registry),
          "quick start": quickstart(output_dir)}


def markers(name: str) -> Tuple[str, str]:
  """The begin and end markers of a generated block of the top README."""
  return f"<!-- {name}: generated by python -m experiments.reproduce; do not edit -->", f"<!-- end of {name} -->"


def write_top_readme(output_dir: str, registry: presets.Registry, readme: str = os.path.join(ROOT, "README.md")) -> str:
  """Rewrites the top README's blocks (`top_blocks`) between their markers; returns its path; ValueError: no markers."""
  with open(readme) as f:
    text = f.read()
  for name, block in top_blocks(output_dir, registry).items():
    begin, end = markers(name)
    pattern = re.compile(re.escape(begin) + ".*?" + re.escape(end), re.S)
    if not pattern.search(text):
      raise ValueError(f"{readme} has no {name} block ({begin} ... {end})")
    text = pattern.sub(lambda _: f"{begin}\n{block}\n{end}", text)
  with open(readme, "w") as f:
    f.write(text)
  return readme
