"""Figures and results/README.md drawn from the fixture records (tests/fixtures/records, synthetic records
that follow the run-record contracts); no training runs."""

import json
import os
import shutil

import pytest

from experiments import figures
from experiments import plot_accuracy
from experiments import plot_comparison
from experiments import plot_data_parallel
from experiments import plot_style
from experiments import presets
from experiments import records
from experiments import reported
from experiments import results_readme

FIXTURES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "fixtures", "records")


@pytest.fixture(scope="module")
def output_dir(tmp_path_factory):
  out = tmp_path_factory.mktemp("results")
  shutil.copytree(os.path.join(FIXTURES, "runs"), out / "runs")
  return str(out)


def _data(output_dir, entry):
  return plot_style.EntryData.load(output_dir, entry)


def test_fixtures_are_current_with_the_cpu_preset():
  # Regenerate with `python -m tests.fixtures.make_records` after changing the cpu preset.
  for entry in presets.build("cpu").values():
    for run in entry.runs:
      record = records.load(records.record_path(FIXTURES, "cpu", run))
      assert record is not None, (entry.name, run.name)
      assert records.mismatches(record, run) == []


def test_all_ten_figures_are_drawn_with_preset_hardware_and_oversubscription(output_dir):
  texts = {}
  for entry in presets.ENTRIES:
    fig = figures.DRAW[entry](_data(output_dir, entry))
    texts[entry] = "\n".join(t.get_text() for t in fig.texts)
    plot_style.save(fig, os.path.join(output_dir, f"{entry}.png"))
    assert os.path.getsize(os.path.join(output_dir, f"{entry}.png")) > 20_000
  for entry, text in texts.items():
    assert "preset cpu" in text, entry
    assert "2 cores" in text and "CPU-logical" in text, entry
  # Every entry with 3 or 4 devices on this 2-core fixture machine says so, and only those.
  for entry in ("mp_scaling_b100", "mp_scaling_b5000", "dp_scaling", "dp_op_profile", "accuracy_vs_epochs"):
    assert "oversubscribed" in texts[entry], entry
  for entry in ("dp_batch_sweep", "mp_vs_dp", "strategy_comparison", "convergence"):
    assert "oversubscribed" not in texts[entry], entry
  assert "examples 5500 (paper 55000)" in texts["mp_scaling_b100"]
  assert "performance model: t_k" in texts["mp_scaling_b100"]
  written = figures.draw(output_dir, presets.ENTRIES, out=lambda _: None)
  assert len(written) == 10 and all(os.path.exists(p) for p in written)


def test_scaling_figure_plots_the_records_and_the_report(output_dir):
  data = _data(output_dir, "mp_scaling_b5000")
  fig = figures.DRAW["mp_scaling_b5000"](data)
  left, right = fig.axes
  measured = {tuple(line.get_ydata()) for line in left.get_lines()}
  four = tuple(data.runs[f"h4_g{g}"]["pretrain_seconds"] for g in range(1, 5))
  assert four in measured
  report_speedups = tuple(reported.MP_SCALING_B5000[4][1] / reported.MP_SCALING_B5000[4][g] for g in range(1, 5))
  assert any(line.get_ydata() == pytest.approx(report_speedups) for line in right.get_lines()
             if len(line.get_ydata()) == 4)
  labels = [t.get_text() for t in right.get_legend().get_texts()]
  assert any("report (4× GRID K520)" in label for label in labels)


def test_sweep_and_profile_values(output_dir):
  sweep = plot_data_parallel.sweep_points(_data(output_dir, "dp_batch_sweep"))
  assert [p[0] for p in sweep] == sorted(r.flag("batch_size") for r in presets.build("cpu")["dp_batch_sweep"].runs)
  b52 = records.load(os.path.join(output_dir, "runs", "dp_batch_sweep", "cpu_b52.json"))
  assert sweep[0][1] == pytest.approx(records.median_epoch_seconds(b52))
  assert sweep[0][2] == pytest.approx((18_000 // 52) * 52 / sweep[0][1])
  rows = plot_data_parallel.profile_rows(_data(output_dir, "dp_op_profile"))
  assert sorted(rows) == [1, 2, 3, 4]
  assert rows[1][0]["allreduce"] == 0.0 and rows[2][0]["allreduce"] > 0
  assert rows[3][1] and not rows[2][1]  # oversubscribed from 3 devices on 2 cores


def test_convergence_time_to_fixed_loss(output_dir):
  data = _data(output_dir, "convergence")
  greedy = data.runs["greedy"]
  curves = records.loss_curves(greedy)
  # Greedy runs layer after layer: the last epoch ends at pretrain_seconds.
  assert curves[-1][-1][0] == pytest.approx(greedy["pretrain_seconds"], rel=1e-4)
  # Model parallel: each epoch ends with its step; the last at pretrain_seconds (steps + copies).
  mp = data.runs["mp"]
  assert records.loss_curves(mp)[-1][-1][0] == pytest.approx(mp["pretrain_seconds"], rel=1e-4)
  reach = plot_comparison.times_to_target(data)
  # Greedy reaches 1.01 x its own final loss no later than its end, and not before its last layer started.
  assert curves[-1][0][0] <= reach["greedy"] <= greedy["pretrain_seconds"] * (1 + 1e-4)
  assert records.time_to_loss(curves, [0.0] * len(curves)) is None


def test_accuracy_figures_show_every_preset_present(output_dir):
  data = _data(output_dir, "accuracy_vs_epochs")
  assert data.preset == "cpu" and set(data.other) == {"paper"}
  paper = plot_accuracy.accuracy_series(data, "paper")
  assert [e for e, _ in paper["greedy"]] == [60] and [e for e, _ in paper["mp"]] == [60]
  fig = figures.DRAW["accuracy_vs_epochs"](data)
  labels = [t.get_text() for t in fig.axes[0].get_legend().get_texts()]
  assert "ours (paper), model parallel" in labels and "ours (cpu), greedy layer-wise" in labels
  rows = plot_accuracy.dp_accuracy_rows(_data(output_dir, "dp_accuracy"), "cpu")
  assert [r["epochs"] for r in rows] == [6, 12]
  assert [r["report"] for r in rows] == [reported.DP_ACCURACY[30], reported.DP_ACCURACY[60]]
  assert all(r["greedy"] is not None and r["large_batch"] is not None for r in rows)


def test_primary_preset_prefers_complete_paper_runs(output_dir, tmp_path):
  assert records.primary_preset(output_dir, "accuracy_vs_epochs") == "cpu"  # paper: 2 of 12 runs
  assert records.primary_preset(str(tmp_path), "dp_scaling") is None
  for run in presets.build("paper")["strategy_comparison"].runs:
    path = records.record_path(str(tmp_path), "paper", run)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
      json.dump({"config": {}}, f)
  assert records.primary_preset(str(tmp_path), "strategy_comparison") == "paper"


def test_results_readme_compares_every_entry_with_the_report(output_dir):
  path = results_readme.write(output_dir)
  text = open(path).read()
  for entry in presets.ENTRIES:
    assert f"### `{entry}`" in text
    assert f"figures/{entry}.png" in text
    assert f"--only={entry}" in text
  assert "| Model parallel speedup, 4 layers, batch 5000 (`mp_scaling_b5000`) | 2.10× on 4 GPUs |" in text
  assert "largest error 0.0% (within the 15% goal); at predicted points 0.0% (within" in text  # made by the model
  unique = {(r.home, r.stored_name) for e in presets.build("cpu").values() for r in e.runs}
  assert f"| **total** | {len(unique)} |" in text
  assert "python -m model_parallel.train --hidden_units=1000,1000,1000,1000 --pretrain_epochs=10" in text
  # Numbers in the tables come from the records.
  sc = _data(output_dir, "strategy_comparison").runs
  assert f"{sc['greedy']['pretrain_seconds']:.0f}" in text


def test_full_size_table_lists_recorded_runs_with_their_commands(tmp_path):
  from experiments import full_size
  assert "No full-size records yet" in full_size.table(str(tmp_path))
  with open(tmp_path / "model_parallel_g2_b100_e30.json", "w") as f:
    json.dump({"pretrain_seconds": 1200.0, "finetune": {"test_accuracy": 0.9712, "seconds": 600.0}}, f)
  text = full_size.table(str(tmp_path))
  assert "| `model_parallel_g2_b100_e30` | 0.9712 | 0.9662 (" in text
  assert "| 20 + 10 min |" in text
  assert (f"`python -m model_parallel.train --hidden_units=2000,2000,2000,2000 --num_devices=2 --pretrain_epochs=30 "
          f"--finetune_epochs=30 --batch_size=100 --model_dir=models/model_parallel_g2_b100_e30 "
          f"--results_dir={tmp_path} --run_name=model_parallel_g2_b100_e30 --progress=log`") in text
  assert "greedy_b100_e30" not in text  # No record, no row.
