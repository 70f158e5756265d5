"""Figures, tables and results/README.md drawn from the fixture records (synthetic records that follow the
run-record contract, made by `tests.fixtures.make_records` in a temporary directory for every run of the presets,
whatever programs are registered: conftest's `output_dir`); the committed results/README.md and headline regenerate
byte for byte from the committed records; no training runs. Machine and code labels: tests/test_machine_labels.py."""

import dataclasses
import json
import os
import re
import shutil
import subprocess

import pytest

from common.settings import programs
import importlib
from experiments import presets
from experiments.reproduce import REGISTRY
from experiments import records
from experiments import schedules
from experiments import harness
from experiments.benchmarks import strategies as bench_strategies
from experiments.report import draw
from experiments.report import readme
from experiments.render import series
from experiments.render import cells
from experiments.render import tables
from experiments.studies import accuracy_vs_epochs
from experiments.studies import convergence
from experiments.studies import dp_accuracy
from experiments.studies import dp_batch_sweep
from experiments.studies import dp_op_profile
from experiments.studies import fashion_mnist_accuracy
from experiments.studies import full_size
from experiments.studies import large_batch
from experiments.studies import pp_scaling
from experiments.studies import strategy_comparison
from conftest import ROOT, fresh_python

RESULTS = os.path.join(ROOT, "results")


def _data(output_dir, study):
  return series.load_all(output_dir, REGISTRY)[study]


def _of_kind(kind):
  """The names of the registry's studies of `kind` ("report", "beyond" or "own")."""
  return [e.name for e in REGISTRY.studies if e.kind == kind]


def test_the_fixtures_cover_every_run_of_the_presets(output_dir):
  # Made afresh for each test session: a preset edited or a program registered needs no rerun of make_records.
  for preset in ("cpu", "mid", "full"):
    for study, runs in presets.build(REGISTRY, preset).items():
      for run in runs:
        record = records.load(presets.record_path(output_dir, preset, run))
        assert record is not None, (study, run.name)
        assert records.mismatches(record, run) == []


def test_every_study_names_a_table_and_a_figure_that_exist():
  for study in REGISTRY.studies:
    assert callable(study.table), study.name
    assert study.figure is None or callable(study.figure), study.name
    assert study.kind in ("report", "beyond", "own") and study.sizes and set(study.sizes) <= set(presets.PRESETS)
  for benchmark in REGISTRY.benchmarks:  # a benchmark: configurations and a summary, run by its own command line
    assert callable(benchmark.summarize) and isinstance(benchmark, presets.Benchmark), benchmark.name
    assert importlib.import_module(f"experiments.benchmarks.{benchmark.name}").BENCHMARK is benchmark
  with pytest.raises(ValueError, match="unknown study"):
    REGISTRY.get("nope")
  with pytest.raises(TypeError, match="runs"):
    presets.Study("no_runs", "A study without runs", dict(smoke={}))


def test_report_modules_import_no_tensorflow():
  import experiments.render
  import experiments.report
  modules = [f"{p.__name__}.{f[:-3]}" for p in (experiments.render, experiments.report)
             for f in sorted(os.listdir(os.path.dirname(p.__file__))) if f.endswith(".py") and f != "__init__.py"]
  code = f"import sys\nfor m in {modules!r}:\n  __import__(m)\nprint('tensorflow' in sys.modules)"
  done = subprocess.run([fresh_python(), "-c", code], cwd=ROOT, env=dict(os.environ, PYTHONPATH=ROOT),
                        capture_output=True, text=True)
  assert done.returncode == 0, done.stderr[-2000:]
  assert done.stdout.strip() == "False" and len(modules) >= 2


def test_all_ten_figures_are_drawn_with_preset_hardware_and_oversubscription(output_dir, monkeypatch):
  texts, save = {}, draw.save

  def saved(fig, path):  # each figure `draw.draw` writes, its texts kept: every figure drawn once
    texts[os.path.splitext(os.path.basename(path))[0]] = "\n".join(t.get_text() for t in fig.texts)
    save(fig, path)
  monkeypatch.setattr(draw, "save", saved)
  written = draw.draw(output_dir, REGISTRY, out=lambda _: None)
  texts = {study: texts[study] for study in _of_kind("report")}
  for study, text in texts.items():
    assert "preset cpu" in text, study
    assert "2 cores" in text and "CPU-logical" in text and "Fixture CPU" in text, study
  # Every study with 3 or 4 devices on this 2-core fixture machine says so, and only those.
  for study in ("mp_scaling_b100", "mp_scaling_b5000", "dp_scaling", "dp_op_profile", "accuracy_vs_epochs"):
    assert "oversubscribed" in texts[study], study
  for study in ("dp_batch_sweep", "mp_vs_dp", "strategy_comparison", "convergence"):
    assert "oversubscribed" not in texts[study], study
  assert "examples 5500 (paper 55000)" in texts["mp_scaling_b100"]
  assert "performance model (" in texts["mp_scaling_b100"] and "fitted rho" in texts["mp_scaling_b100"]
  with_figure = [e.name for e in REGISTRY.studies if e.figure]
  assert [os.path.basename(p) for p in written] == [f"{e}.png" for e in with_figure] + ["equal_cores.png"]
  for study in _of_kind("report"):
    assert os.path.getsize(series.figure_path(output_dir, study)) > 20_000, study


def test_scaling_figure_plots_the_records_and_the_report(output_dir):
  data = _data(output_dir, "mp_scaling_b5000")
  fig = draw.make(data, series.others(output_dir, REGISTRY))
  left, right = fig.axes
  measured = {tuple(line.get_ydata()) for line in left.get_lines()}
  four = tuple(data.runs[f"h4_g{g}"]["pretrain_seconds"] for g in range(1, 5))
  assert four in measured
  rep = REGISTRY.get("mp_scaling_b5000").reported[4]
  report_speedups = tuple(rep[1] / rep[g] for g in range(1, 5))
  assert any(line.get_ydata() == pytest.approx(report_speedups) for line in right.get_lines()
             if len(line.get_ydata()) == 4)
  labels = [t.get_text() for t in right.get_legend().get_texts()]
  assert any("report (4× GRID K520)" in label for label in labels)


def test_sweep_and_profile_values(output_dir):
  sweep = dp_batch_sweep.sweep_points(_data(output_dir, "dp_batch_sweep"))
  assert [p[0] for p in sweep] == sorted(r.config.batch_size for r in presets.build(REGISTRY, "cpu")["dp_batch_sweep"])
  b52 = records.load(os.path.join(output_dir, "runs", "dp_batch_sweep", "cpu_b52.json"))
  assert sweep[0][1] == pytest.approx(records.layer_epoch_seconds(b52)[0])
  assert sweep[0][2] == pytest.approx((18_000 // 52) * 52 / sweep[0][1])
  rows = dp_op_profile.profile_rows(_data(output_dir, "dp_op_profile"))
  assert sorted(rows) == [1, 2, 3, 4]
  assert rows[1][0]["allreduce"] == 0.0 and rows[2][0]["allreduce"] > 0
  assert rows[3][1] and not rows[2][1]  # oversubscribed from 3 devices on 2 cores


def test_convergence_time_to_fixed_loss(output_dir):
  data = _data(output_dir, "convergence")
  greedy = data.runs[programs.GREEDY.run_name]
  curves = records.loss_curves(greedy)
  # Greedy runs layer after layer: the last epoch ends at pretrain_seconds.
  assert curves[-1][-1][0] == pytest.approx(greedy["pretrain_seconds"], rel=1e-4)
  # Model parallel: each epoch ends with its step; the last at pretrain_seconds (steps + copies).
  mp = data.runs[programs.MODEL_PARALLEL.run_name]
  assert records.loss_curves(mp)[-1][-1][0] == pytest.approx(mp["pretrain_seconds"], rel=1e-4)
  reach, _ = convergence.times_to_target(data)[programs.GREEDY.run_name]
  # Greedy reaches 1.01 x its own final loss no later than its end, and not before its last layer started.
  assert curves[-1][0][0] <= reach <= greedy["pretrain_seconds"] * (1 + 1e-4)
  assert records.time_to_loss(curves, [0.0] * len(curves))[0] is None


def test_accuracy_figures_show_every_preset_present(output_dir):
  data = _data(output_dir, "accuracy_vs_epochs")
  assert data.preset == "cpu" and set(data.other) == {"paper"}
  paper = accuracy_vs_epochs.accuracy_series(data.other["paper"])
  assert [e for e, _ in paper[programs.GREEDY.name]] == [60] and [e for e, _ in paper[programs.MODEL_PARALLEL.name]] == [60]
  fig = draw.make(data, {})
  labels = [t.get_text() for t in fig.axes[0].get_legend().get_texts()]
  assert "ours (paper), model parallel" in labels and "ours (cpu), greedy layer-wise" in labels
  rows = dp_accuracy.dp_accuracy_rows(_data(output_dir, "dp_accuracy").runs, "cpu")
  assert [r["epochs"] for r in rows] == [6, 12]
  assert [r["report"] for r in rows] == [REGISTRY.get("dp_accuracy").reported[30], REGISTRY.get("dp_accuracy").reported[60]]
  assert all(r["baseline"] is not None and r["large_batch"] is not None for r in rows)


def test_primary_preset_prefers_complete_paper_runs(output_dir, tmp_path):
  assert series.load_all(output_dir, REGISTRY)["accuracy_vs_epochs"].preset == "cpu"  # paper: 2 of 12 runs
  assert series.load_all(str(tmp_path), REGISTRY)["dp_scaling"] is None
  for run in presets.build(REGISTRY, "paper")["strategy_comparison"]:
    path = presets.record_path(str(tmp_path), "paper", run)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
      json.dump({"config": {}}, f)
  assert series.load_all(str(tmp_path), REGISTRY)["strategy_comparison"].preset == "paper"


def test_results_readme_compares_every_study_with_the_report(output_dir):
  path = readme.write(output_dir, REGISTRY)
  text = open(path).read()
  for study in REGISTRY.names:
    assert f"### `{study}`" in text
    assert f"--only={study}" in text
  for study in _of_kind("report"):
    assert f"figures/{study}.png" in text
  rep, greedy = REGISTRY.get("strategy_comparison").reported, programs.GREEDY.name  # the report's numbers beside ours, its sizes said
  assert f"| 4 GPUs, 4 × 2000: model parallel {rep[greedy] / rep[programs.MODEL_PARALLEL.name]:.2f}×, " in text
  # The model's errors at the fit points and at the predicted points are reported apart, for each scaling study.
  assert text.count("in-sample error at the fit points (G <= 2): largest ") == 3
  assert text.count("out-of-sample error at the predicted points (G > 2, not used for the fit): largest") == 3
  # The experiments' runs draw no pictures beside their records (no figure uses them).
  command = f"python -m {programs.MODEL_PARALLEL.module} --hidden_units=1000,1000,1000,1000 --pretrain_epochs=10 "
  assert {" --nopictures " in line for line in text.splitlines() if line.startswith(command)} == {True}
  # Numbers in the tables come from the records.
  sc = _data(output_dir, "strategy_comparison").runs
  assert f"{sc[programs.GREEDY.run_name]['pretrain_seconds']:.0f}" in text
  # Every data-parallel batch is labelled as run: global batch and per device.
  assert "global batch 1000 (500 per device on 2)" in text
  assert "single run" in text


def test_large_batch_choice_uses_validation_accuracy_only(output_dir):
  data = _data(output_dir, "large_batch")
  assert data.preset == "mid"
  rows, chosen = large_batch.large_batch_choice(data)
  assert chosen == max((r for r in rows if r["program"] == programs.DATA_PARALLEL.name), key=lambda r: r["validation"])["run"]
  # Make the best test accuracy belong to another candidate: the choice must not move, and the table must show
  # test accuracy only for the chosen candidate (and greedy).
  other = next(r["run"] for r in rows if r["program"] == programs.DATA_PARALLEL.name and r["run"] != chosen)
  data.runs[other]["finetune"]["test_accuracy"] = 0.999
  assert large_batch.large_batch_choice(data)[1] == chosen
  table, sentences = large_batch.table(data, {})
  assert "0.9990" not in table and f"`{chosen}` (chosen)" in table
  assert table.count("not used") == len([r for r in rows if r["program"] == programs.DATA_PARALLEL.name]) - 1


def test_full_size_table_lists_each_run_with_the_reports_number(output_dir):
  table, sentences = full_size.table(_data(output_dir, "full_size"), {})
  assert "| `model_parallel_g2_b100_e30` | MNIST | batch 100 |" in table
  assert f"{accuracy_vs_epochs.REPORTED_MP_TEXT} (model parallel" in table
  assert "global batch 5000 (2500 per device on 2)" in table
  # The Fashion-MNIST runs: labelled with their dataset and machine, the goal and the published baselines beside them.
  row = next(line for line in table.splitlines() if line.startswith(f"| `fashion_mnist_{programs.GREEDY.name}_b100_e30`"))
  assert "| Fashion-MNIST | batch 100 |" in row and "Fixture CPU, AVX2, 2 cores, commit 0123456" in row
  assert "goal ≥ 0.89; published: MLP 256-128-100 0.8833, SVC (C=10, RBF) 0.897" in row
  # Minutes are never set side by side across machines: grouped by machine in a sentence, none in the table.
  assert " min" not in table
  minutes = next(s for s in sentences if s.startswith("Minutes of pretraining + finetuning"))
  assert minutes.count("Fixture CPU, AVX2, 2 cores: ") == 1 and "`fashion_mnist_greedy_b100_e30` " in minutes
  # The tuned runs shared the machine: their accuracy is shown, their minutes are not.
  assert "`greedy_b100_e30_tuned` |" in table and "_tuned" not in minutes
  assert any(s.startswith("The `_tuned` runs are accuracy runs that shared the machine") for s in sentences)
  # A declared run without a record is listed as not run yet.
  data = _data(output_dir, "full_size")
  del data.runs[f"fashion_mnist_{programs.GREEDY.name}_b100_e30"]
  assert "| Fashion-MNIST | — | not run yet |" in full_size.table(data, {})[0]


def test_full_size_compares_greedy_and_the_pipeline_each_at_its_warmup_over_the_seeds_both_ran(output_dir):
  data = _data(output_dir, "full_size")
  g, pp = programs.GREEDY.name, programs.PIPELINE_PARALLEL.name
  w = schedules.FAIR_CHOSEN
  names = lambda seed: (f"fashion_mnist_{g}_b100_e30_tuned_w{w[g]:g}_s{seed}",  # noqa: E731
                        f"fashion_mnist_{pp}_g2_b100_e30_tuned_w{w[pp]:g}_s{seed}")
  points = [100 * (records.accuracy(data.runs[p]) - records.accuracy(data.runs[g])) for g, p in map(names, range(3))]
  sentence = lambda: next(s for s in full_size.table(data, {})[1]  # noqa: E731
                          if s.startswith("Greedy and the pipeline each at"))
  fashion, mnist = sentence().split("; MNIST")
  assert "Fashion-MNIST (3 seeds)" in fashion and "no difference is claimed" not in fashion
  assert f"test {sum(points) / 3:.2f} ({min(points):.2f}–{max(points):.2f})" in fashion
  assert mnist.startswith(" (3 seeds)") and "no difference is claimed" not in mnist
  for seed in (1, 2):  # MNIST with seed 0 alone
    del data.runs[f"{g}_b100_e30_tuned_w{w[g]:g}_s{seed}"]
  mnist = sentence().split("; MNIST")[1]
  assert mnist.startswith(" (1 seed)") and "fewer than 3 seeds: no difference is claimed" in mnist
  assert "–" not in mnist  # one seed: each value alone, no range of one
  # A seed counts only when both ran; with neither dataset's pair, no sentence.
  del data.runs[names(1)[1]]
  assert "Fashion-MNIST (2 seeds)" in next(s for s in full_size.table(data, {})[1] if s.startswith("Greedy and"))
  for seed in (0, 2):
    del data.runs[names(seed)[0]]
  del data.runs[f"{g}_b100_e30_tuned_w{w[g]:g}_s0"]
  assert not any(s.startswith("Greedy and the pipeline each at") for s in full_size.table(data, {})[1])


def test_the_tuned_headline_row_shows_each_at_its_warmup_and_says_which_has_not_run(output_dir):
  data = series.load_all(output_dir, REGISTRY)
  row = next(h for h in full_size.HEADLINE if h.label.startswith("Test accuracy, tuned"))
  g, pp = programs.GREEDY.name, programs.PIPELINE_PARALLEL.name
  w = schedules.FAIR_CHOSEN
  greedy, pipeline = f"greedy w{w[g]:g}", f"pipeline parallel w{w[pp]:g}"
  fashion = lambda: row.ours(output_dir, data, []).split(" / ")[1]  # noqa: E731
  assert fashion().startswith(f"{greedy} 0.") and f"{pipeline} 0." in fashion()
  del data["full_size"].runs[f"fashion_mnist_{pp}_g2_b100_e30_tuned_w{w[pp]:g}_s0"]
  assert fashion().startswith(f"{greedy} 0.") and fashion().endswith(f", {pipeline} not run yet")
  del data["full_size"].runs[f"fashion_mnist_{g}_b100_e30_tuned_w{w[g]:g}_s0"]
  assert fashion().startswith("greedy 0.") and "not run yet" not in fashion()  # before either: the earlier pair


def test_fashion_mnist_accuracy_sets_each_program_on_both_datasets_beside_the_published_baselines(output_dir):
  data = _data(output_dir, REGISTRY.get("fashion_mnist_accuracy").name)
  # MNIST's runs are the accuracy study's (shared); Fashion-MNIST's pass --dataset and are labelled by it.
  runs = presets.build(REGISTRY, "cpu")[data.study]
  assert {(r.home, r.config.dataset) for r in runs} == {("accuracy_vs_epochs", "mnist"), (data.study, "fashion_mnist")}
  assert all(("--dataset=fashion_mnist" in r.arguments()) == (r.config.dataset == "fashion_mnist") for r in runs)
  assert [p for p, _ in sorted({(r.program, 0) for r in runs})] == sorted(p.name for p in presets.ACCURACY_COMPARED)
  acc = fashion_mnist_accuracy.dataset_accuracy(data)
  assert list(acc) == ["mnist", "fashion_mnist"] and all(len(a) == len(presets.ACCURACY_COMPARED) for a in acc.values())
  table, sentences = fashion_mnist_accuracy.table(data, {})
  assert "| program | epochs | MNIST test accuracy | Fashion-MNIST test accuracy |" in table
  assert "| published: MLP 256-128-100 | — | — | 0.8833 |" in table
  assert "| published: SVC (C=10, RBF) | — | — | 0.897 |" in table
  assert "not the report's numbers" in " ".join(sentences)
  fig = draw.make(data, {})
  labels = [t.get_text() for t in fig.axes[0].get_legend().get_texts()]
  assert "ours, MNIST" in labels and "ours, Fashion-MNIST" in labels and any("0.8833" in label for label in labels)
  assert "dataset MNIST, Fashion-MNIST" in "\n".join(t.get_text() for t in fig.texts)
  # A record of another dataset than its run's is refused; a record made before "dataset" counts as MNIST.
  fashion = next(r for r in runs if r.config.dataset == "fashion_mnist")
  record = records.load(presets.record_path(output_dir, "cpu", fashion))
  assert records.mismatches(record, fashion) == []
  assert records.mismatches(dict(record, dataset={"name": "mnist"}), fashion) == ["dataset='mnist' (run: 'fashion_mnist')"]
  mnist = next(r for r in runs if r.config.dataset == "mnist")
  old = records.load(presets.record_path(output_dir, "cpu", mnist))
  del old["dataset"], old["config"]["dataset"]
  assert records.mismatches(old, mnist) == [] and records.mismatches(old, fashion) != []
  assert records.datasets([old, record]) == "MNIST, Fashion-MNIST"


def test_the_committed_results_readme_and_headline_regenerate_byte_for_byte():
  # `python -m experiments.reproduce --figures_only` wrote them from the committed records; nothing hand-edited.
  with open(os.path.join(RESULTS, "README.md")) as f:
    assert readme.text(RESULTS, REGISTRY) == f.read()
  with open(os.path.join(ROOT, "README.md")) as f:
    top = f.read()
  for name, block in readme.top_blocks(RESULTS, REGISTRY).items():
    begin, end = readme.markers(name)
    assert f"{begin}\n{block}\n{end}" in top, name


def test_headline_names_every_rows_machine_and_code_in_results_readme(output_dir):
  table = readme.headline(output_dir, series.load_all(output_dir, REGISTRY), REGISTRY, provenance=True)
  rows = [re.split(r" \| ", line.strip("| ")) for line in table.splitlines()[2:]]
  assert 1 <= len(rows) <= 8 and all(len(row) == 5 for row in rows)
  assert {row[4] for row in rows} == {"Fixture CPU, AVX2, 2 cores, commit 0123456"}  # every row names its machine
  assert not any("not run yet" in row[2] or "not measured" in row[2] for row in rows)  # the fixtures have them all


def test_the_strategies_cell_gives_the_staleness_a_programs_updates_had(tmp_path):
  # A strategies summary whose runs of one program had staleness 0 and 1 (concurrent updates, as an asynchronous
  # program's records say), the baseline's records none.
  folder, base = tmp_path / "benchmarks" / "strategies", programs.baseline()
  other = next(p for p in programs.PROGRAMS if p is not base)
  (folder / "b5000").mkdir(parents=True)
  histograms = {f"{other.run_name}_r0": [[0, 40], [1, 40]], f"{other.run_name}_r1": [[0, 80], [1, 0]],
                f"{base.run_name}_r0": None, f"{base.run_name}_r1": None}
  for name, histogram in histograms.items():
    staleness = {"histogram": histogram, "max": max(k for k, c in histogram if c)} if histogram else None
    (folder / "b5000" / f"{name}.json").write_text(json.dumps({"pretrain_seconds": 1.0, "staleness": staleness}))
  spread = {"min": 1.0, "median": 1.0, "max": 1.0, "values": [1.0, 1.0]}
  (folder / "summary_b5000.json").write_text(json.dumps({
      "setting": {"repeats": 2}, "pretrain_seconds": {base.run_name: spread, other.run_name: spread},
      "speedup_vs_greedy": {other.run_name: dict(spread, median=1.62)},
      "records": {n: [f"results/benchmarks/strategies/b5000/{n}_r{i}.json" for i in (0, 1)]
                  for n in (base.run_name, other.run_name)}}))
  used = []
  short = other.label.replace(" layer-wise", "")
  assert bench_strategies.speedups(str(tmp_path), [other.run_name], used) == f"{short} 1.62× (1.00–1.00) (staleness 0–1)"
  assert len(used) == 4
  # Workers that only took turns: staleness 0 alone, said as such.
  for i in (0, 1):
    (folder / "b5000" / f"{other.run_name}_r{i}.json").write_text(json.dumps(
        {"pretrain_seconds": 1.0, "staleness": {"histogram": [[0, 80]], "max": 0}}))
  assert "(staleness 0)" in bench_strategies.speedups(str(tmp_path), [other.run_name], [])


def test_the_headline_rows_are_declared_by_their_studies(output_dir):
  """Each headline row is declared by the study or benchmark whose records it reads (`presets.Headline`), in its
  order; a ninth row is refused."""
  declared = sorted((h for e in REGISTRY.studies + REGISTRY.benchmarks for h in e.headline), key=lambda h: h.order)
  assert [h.order for h in declared] == list(range(1, cells.ROWS + 1))
  rows = readme.headline(output_dir, series.load_all(output_dir, REGISTRY), REGISTRY).splitlines()[2:]
  assert [row.split(" | ")[0][2:] for row in rows] == [h.label for h in declared]
  extra = dataclasses.replace(REGISTRY.studies[0], headline=(presets.Headline(9, "a ninth", "—", lambda *_: "x"),))
  more = presets.Registry(REGISTRY.studies[1:] + (extra,), REGISTRY.benchmarks)
  with pytest.raises(ValueError, match="the headline may have 8 rows, 9 are declared"):
    readme.headline(output_dir, {}, more)


def test_an_earlier_folders_records_get_tables_of_their_own_and_no_headline_cell(output_dir, tmp_path):
  # The full-size bfloat16 run moved to a folder "earlier", with a precision benchmark folder there and none here:
  # it loads like any folder of records (`records.folders`), named by nothing in the code.
  out, run = str(tmp_path / "results"), "pipeline_parallel_g2_b100_e30_bf16"
  shutil.copytree(output_dir, out)
  earlier = os.path.join(out, "earlier")
  os.makedirs(os.path.join(earlier, "full_size"))
  os.makedirs(os.path.join(earlier, "benchmarks", "precision"))
  shutil.move(os.path.join(out, "full_size", f"{run}.json"), os.path.join(earlier, "full_size", f"{run}.json"))
  assert records.folders(out) == ["earlier"]
  text = readme.text(out, REGISTRY)
  section = text.split("### `full_size`")[1].split("\n### ")[0]
  here, apart = section.split("*In [`earlier/`](earlier/README.md): ")
  rows = lambda part: [line for line in part.splitlines() if line.startswith("| `")]
  assert len(rows(here)) == len(presets.build(REGISTRY, "full")["full_size"])  # every declared run, the moved one too:
  assert [r for r in rows(here) if f"`{run}`" in r and "not run yet" in r]  # not run yet in this folder
  assert len(rows(apart)) == 1 and f"`{run}`" in rows(apart)[0] and "not run yet" not in apart  # only its record
  cell = [line for line in readme.headline(out, series.load_all(out, REGISTRY), REGISTRY).splitlines() if "bfloat16" in line][0]
  assert "AVX2" in cell  # the fixtures' own records, never the earlier folder's


def test_the_committed_headline_is_for_users():
  # The limits on the records committed today, whatever they are (the fixtures above have every row).
  table = readme.headline(RESULTS, series.load_all(RESULTS, REGISTRY), REGISTRY)
  rows = [re.split(r" \| ", line.strip("| ")) for line in table.splitlines()[2:]]
  assert 1 <= len(rows) <= 8
  assert not [cell for row in rows for cell in row if len(cell.strip()) > cells.CELL]


def test_cores_note_says_what_the_records_show(output_dir):
  data = _data(output_dir, "mp_scaling_b100")
  note = tables.cores_note(data, {})
  faster = series.oversubscribed_faster(data)
  assert ("still, some oversubscribed runs were faster" in note) == bool(faster)
  assert "no further speedup can appear" not in note


def test_top_readme_blocks_are_replaced_between_their_markers(output_dir, tmp_path):
  top = tmp_path / "README.md"
  blocks = "\n\n".join(f"{readme.markers(n)[0]}\nold {n}\n{readme.markers(n)[1]}" for n in readme.top_blocks(output_dir, REGISTRY))
  top.write_text(f"# Title\n\n{blocks}\n\n## After\n")
  readme.write_top_readme(output_dir, REGISTRY, str(top))
  text = top.read_text()
  assert "old results" not in text and text.startswith("# Title") and text.endswith("## After\n")
  assert readme.headline(output_dir, series.load_all(output_dir, REGISTRY), REGISTRY) in text
  top.write_text("# No markers\n")
  with pytest.raises(ValueError, match="no results block"):
    readme.write_top_readme(output_dir, REGISTRY, str(top))


def test_readme_results_table_is_for_users(output_dir):
  """At most 8 rows, cells of at most 100 characters, no commit hash and no footnote mark, every row names its
  machine class in words (on the fixtures, where every row has records)."""
  table = readme.headline(output_dir, series.load_all(output_dir, REGISTRY), REGISTRY)
  rows = [re.split(r" \| ", line.strip("| ")) for line in table.splitlines()[2:]]
  assert 1 <= len(rows) <= 8
  assert not [cell for row in rows for cell in row if len(cell.strip()) > cells.CELL]
  assert not re.search(r"\b[0-9a-f]{7}\b", table) and not set("§‡†") & set(table)
  assert all("cores" in row[-1] for row in rows if "not run yet" not in row[2] and "not measured" not in row[2])


def test_pipeline_scaling_and_heldout_convergence(output_dir):
  data = _data(output_dir, "pp_scaling")
  rows = pp_scaling.pipeline_rows(data)
  assert {(r["stack"], r["devices"]) for r in rows} == {("4 x 1000", g) for g in range(1, 5)} | {
      ("8 x 500", g) for g in range(1, 9)}
  # The model is fitted on each stack's one-device run: exact there, a prediction elsewhere.
  for r in rows:
    assert (r["predicted"] == pytest.approx(r["seconds"])) if r["in_sample"] else r["predicted"] > 0
  text, sentences = REGISTRY.get("pp_scaling").table(data, {})
  assert "+0% (fit)" in text and "8 x 500 | 8 †" in text
  assert any("not used for the fit" in s for s in sentences)
  # The comparison runs record the held-out loss every epoch: the convergence study compares it.
  conv = _data(output_dir, "convergence")
  rs = strategy_comparison.program_records(conv)
  assert list(rs) == [p.run_name for p in presets.COMPARED]
  assert convergence.convergence_loss(rs)[0] == "heldout_loss"
  text, sentences = REGISTRY.get("convergence").table(conv, {})
  assert "held-out reconstruction loss" in sentences[0]
  assert len(convergence.times_to_target(conv)[programs.GREEDY.run_name][1]) == 4


def test_a_noisy_configuration_is_marked_with_its_spread_and_said_in_words_in_the_headline(output_dir, tmp_path):
  pp = programs.PIPELINE_PARALLEL.name
  summaries = records.load_summaries(output_dir, importlib.import_module(f"experiments.benchmarks.{pp}").BENCHMARK.name)
  assert summaries and all(s["noisy"] == [] for s in summaries.values())  # the fixtures' repeats take equal times
  out = str(tmp_path / "noisy")
  shutil.copytree(output_dir, out)
  path = os.path.join(out, "benchmarks", pp, "summary_b1000.json")
  summary = records.load(path)
  summary["pretrain_seconds"][programs.GREEDY.name] = harness.spread([10.0, 11.0, 11.6])  # 16% apart
  with open(path, "w") as f:
    json.dump(summary, f)
  assert records.noisy(summary) == [programs.GREEDY.name]  # also for summaries made before their "noisy" field
  assert f"{programs.GREEDY.name} 11.00 (10.00–11.60) ‡; " in readme.benchmark_section(out, REGISTRY)
  row = next(line for line in readme.headline(out, series.load_all(out, REGISTRY), REGISTRY).splitlines() if line.startswith("| Pipeline"))
  before = next(line for line in readme.headline(output_dir, series.load_all(output_dir, REGISTRY), REGISTRY).splitlines()
                if line.startswith("| Pipeline"))
  assert "; repeats vary more than 15%" in row and "repeats vary" not in before