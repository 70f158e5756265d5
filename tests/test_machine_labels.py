"""Machine and code in the report: a record's label names its processor, instruction set, cores and commit; two
machines, two instruction sets or two versions of the code are never one label and never give a ratio, in the
committed records (every study's and every benchmark summary's) and in the fixture records made to differ."""

import json
import os
import shutil

import pandas

from common.measure import provenance
from common.settings import programs
from experiments import records
from experiments.reproduce import REGISTRY
from experiments.render import cells
from experiments.render import series
from conftest import ROOT

RESULTS = os.path.join(ROOT, "results")


def test_labels_name_a_processor_without_trademarks_or_clock():
  assert records.processor("Intel(R) Xeon(R) Processor") == "Intel Xeon"
  assert records.processor("Intel(R) Xeon(R) Gold 6148 CPU @ 2.40GHz") == "Intel Xeon Gold 6148"
  assert records.processor("AMD EPYC 7B12 64-Core Processor") == "AMD EPYC 7B12 64-Core"
  assert records.processor("Fixture CPU") == "Fixture CPU" and records.processor("AMD EPYC") == "AMD EPYC"
  assert records.processor(None) == records.processor("unknown") == "processor not recorded"
  xeon = {"environment": {"cpu_model": "Intel(R) Xeon(R) Processor", "usable_cores": 2, "commit": "cd" * 20,
                          "code_digest": "d1"}}
  assert records.machine_label([xeon]) == "Intel Xeon, instruction set not recorded, 2 cores, commit cdcdcdc"
  # The instruction set, where a record names its processor's flags (`common.measure.provenance.instruction_set`).
  amx = {"environment": dict(xeon["environment"], cpu_flags=["avx2", "avx512f", "avx512_bf16", "amx_tile", "amx_bf16"])}
  assert records.machine_label([amx]) == "Intel Xeon, AMX, 2 cores, commit cdcdcdc"
  avx2 = {"environment": dict(xeon["environment"], cpu_flags=["avx2"])}
  assert records.machine_label([avx2, amx]) == ("Intel Xeon, AMX, 2 cores, commit cdcdcdc; "
                                                "Intel Xeon, AVX2, 2 cores, commit cdcdcdc")
  # Two instruction sets are two machines: no ratio; a record without flags (made before them) pairs with either.
  assert not records.comparable(avx2, amx) and records.comparable(xeon, amx) and records.comparable(avx2, dict(avx2))
  assert records.ratio(dict(avx2, pretrain_seconds=2.0), dict(amx, pretrain_seconds=1.0)) is None


def test_a_label_says_when_a_record_predates_its_instruction_set_and_names_its_machine():
  env = {"cpu_model": "Intel(R) Xeon(R) Processor", "usable_cores": 2, "commit": "cd" * 20, "code_digest": "d1"}
  old = {"environment": dict(env, date_utc="2026-11-20")}
  new = {"environment": dict(env, commit="ef" * 20, date_utc="2026-11-21")}  # the same code, a later commit
  flagged = {"environment": dict(env, cpu_flags=["avx2"])}
  assert records.machine_label([old, new]) == ("Intel Xeon, instruction set not recorded, 2 cores, commit cdcdcdc "
                                               "(+1 of the same code)")
  assert cells.machine_class([flagged]) == "Intel Xeon with AVX2, 2 cores"
  # Two virtual machines of one class are two machines: never one label, never a ratio.
  a, b = ({"environment": dict(env, cpu_flags=["avx2"], machine_id=m)} for m in ("aaaaaa000000", "bbbbbb000000"))
  assert records.machine_label([a, b]).count("machine ") == 2 and not records.comparable(a, b)


def test_one_label_names_machine_and_code_and_dagger_uses_the_usable_cores(tmp_path):
  cpuinfo = tmp_path / "cpuinfo"
  cpuinfo.write_text("processor\t: 0\nmodel name\t: AMD EPYC 9B45\n\nprocessor\t: 1\nmodel name\t: AMD EPYC 9B45\n")
  assert provenance.cpu_model(str(cpuinfo)) == "AMD EPYC 9B45"
  old = {"environment": {"device_kind": "CPU-logical", "cpu_count": 16, "tensorflow": "2.21.0"}, "config": {"num_devices": 4}}
  new = {"environment": dict(old["environment"], cpu_model="AMD EPYC 9B45", usable_cores=2, commit="ab" * 20,
                             commit_dirty=True, code_digest="d1"), "config": {"num_devices": 4}}
  assert records.machine_label([old]) == "processor not recorded, instruction set not recorded, 16 cores, commit not recorded"
  # The new record's process was pinned to 2 of the 16 cores (CPU affinity).
  assert records.machine_label([new, old]) == (
      "AMD EPYC 9B45, instruction set not recorded, 2 of 16 cores, commit abababa+dirty; "
      "processor not recorded, instruction set not recorded, 16 cores, commit not recorded")
  assert records.hardware([old]) == ("processor not recorded, instruction set not recorded, 16 cores, commit not recorded; "
                                     "CPU-logical devices, TF 2.21.0")
  # 4 devices: not more than the 16 cores of the old record, more than the 2 the new record's process could use.
  assert not records.oversubscribed(old) and records.oversubscribed(new)
  assert not records.comparable(old, new) and records.ratio(dict(old, pretrain_seconds=2.0),
                                                            dict(new, pretrain_seconds=1.0)) is None
  other_digest = {"environment": dict(new["environment"], code_digest="d2")}
  assert not records.comparable(new, other_digest) and records.comparable(new, dict(new))


TABLE_COLUMNS = ("folder", "study", "preset", "summary", "run", "program", "dataset", "seed", "timed", "machine", "isa",
                 "commit", "code", "record")


def records_table(output_dir, registry):
  """Every record of `registry`'s studies (`records.table`: each where its home study keeps it) and of every benchmark
  summary under `output_dir` and its other folders, one row each (columns `TABLE_COLUMNS`): folder ("" or the other
  folder's), study (a study, or a benchmark's folder under benchmarks/, its module removed or not), preset (a
  study's; "" for a benchmark or a layout without one), summary (the benchmark summary's
  file; "" for a study), run (a benchmark's: <configuration>_r<repeat>), program, dataset, seed, timed (its study
  compares seconds; every benchmark does), machine (`records.host`), isa, commit, code (the code digest, else the
  commit), and the record itself."""
  def row(folder, study, preset, summary, run, r, timed):
    return {"folder": folder, "study": study, "preset": preset, "summary": summary, "run": run,
            "program": r.get("strategy"), "dataset": records.dataset(r), "seed": r.get("config", {}).get("seed"),
            "timed": timed, "machine": records.host(r), "isa": records.instruction_set(r),
            "commit": r["environment"].get("commit"), "code": r["environment"].get("code_digest") or records.code(r),
            "record": r}
  rows = []
  for folder in [""] + records.folders(output_dir):
    found = records.table(os.path.join(output_dir, folder), registry.layouts)  # the one table of a folder's records
    rows += [row(folder, study, preset, "", run, r, registry.get(study).times(run))
             for study, preset, run, r in zip(found["study"], found["preset"], found["run"], found["record"])]
    benchmarks = os.path.join(output_dir, folder, "benchmarks")
    for name in sorted(os.listdir(benchmarks)) if os.path.isdir(benchmarks) else ():
      for file, summary in records.load_summaries(os.path.join(output_dir, folder), name).items():
        rows += [row(folder, name, "", file, f"{configuration}_r{i}", r, True)
                 for configuration, rs in records.records_of(os.path.join(benchmarks, name), summary).items()
                 for i, r in enumerate(rs) if r]
  return pandas.DataFrame(rows, columns=list(TABLE_COLUMNS))


def ratio_problems(output_dir):
  """One line per timed study's preset, and per benchmark summary, whose records differ in machine or code (in the
  table of every record, `records_table`): the report takes no ratio across machines or codes."""
  frame = records_table(output_dir, REGISTRY)
  groups = frame[frame["timed"]].groupby(["folder", "study", "preset", "summary"])
  return [(os.path.join(output_dir, folder, "benchmarks", study, summary) if summary else
           f"{os.path.join(folder or '.', study)} ({preset})") + ": its records come from "
          f"{records.machine_label(list(group['record']))}" for (folder, study, preset, summary), group in groups
          if not records.same_source(list(group["record"]))]


def test_the_committed_records_take_no_ratio_across_machines_or_codes():
  assert ratio_problems(RESULTS) == []


def test_a_ratio_across_machines_or_codes_is_found(output_dir, tmp_path):
  assert ratio_problems(output_dir) == []
  out = str(tmp_path / "mixed")
  shutil.copytree(output_dir, out)
  # greedy of the strategy comparison remade on another machine: every speedup over it is refused and reported.
  path = os.path.join(out, "runs", "strategy_comparison", "cpu_greedy.json")
  record = records.load(path)
  record["environment"]["cpu_model"] = "Other CPU"
  with open(path, "w") as f:
    json.dump(record, f)
  found = ratio_problems(out)
  assert found and all("Other CPU" in line for line in found)
  table, _ = REGISTRY.get("strategy_comparison").table(series.load_all(out, REGISTRY)["strategy_comparison"], {})
  speedups = [line.split(" | ")[3] for line in table.splitlines()[2:]]  # greedy's own row, then the others
  assert speedups[0] == "1.00×" and set(speedups[1:]) == {"—"}
  # A benchmark summary whose records ran two versions of the code.
  folder = os.path.join(out, "benchmarks", programs.MODEL_PARALLEL.name, "b1000_variants")
  path = os.path.join(folder, sorted(os.listdir(folder))[0])
  record = records.load(path)
  record["environment"]["code_digest"] = "another"
  with open(path, "w") as f:
    json.dump(record, f)
  assert any("summary_b1000_variants.json" in line for line in ratio_problems(out))
  # One table holds the studies' records and the benchmarks' (a benchmark's by its summary), with their machine,
  # instruction set and commit; a study may time only some of its runs (the longer finetuning: accuracy only).
  frame = records_table(output_dir, REGISTRY)
  mine = frame[(frame["study"] == programs.MODEL_PARALLEL.name) & (frame["summary"] == "summary_b1000_variants.json")]
  assert len(mine) == len(os.listdir(folder)) and set(mine["preset"]) == {""} and mine["timed"].all()
  assert set(mine["machine"]) == {records.host(mine["record"].iloc[0])} and mine["isa"].notna().all()
  assert mine["commit"].notna().all()
  longer = frame[(frame["study"] == "pretraining_programs") & frame["run"].str.contains("_longer_s")]
  assert len(longer) and not longer["timed"].any()
  assert frame[(frame["study"] == "pretraining_programs") & ~frame["run"].str.contains("_longer_s")]["timed"].all()


def test_each_other_machines_folder_has_its_own_style_and_every_style_a_name_for_the_caption(tmp_path):
  from experiments.render import figures
  for name in ("b_machine", "a_machine", "c_machine"):
    os.makedirs(tmp_path / name / ("runs" if name != "c_machine" else "benchmarks"))
  os.makedirs(tmp_path / "figures")  # neither runs/ nor benchmarks/: not a machine's folder
  styles = [figures.folder_style(str(tmp_path), m) for m in ("a_machine", "b_machine", "c_machine")]
  assert styles == list(figures.FOLDER_STYLES[:3]) and len(set(styles)) == 3  # by sorted place, all different
  assert all(m in figures.STYLE_NAMES and line in figures.STYLE_NAMES for m, line in figures.FOLDER_STYLES)
