"""The frontier study's rule, table and figure (experiments/studies/pretraining_frontier.py) on fixture records:
the rule reads validation accuracy only and picks the fastest arm within its tolerance on both datasets, else the
best trade; the table's differences are per seed; the figure draws drift, held-out curves and, with a speed summary,
the frontier."""

import json
import types

import pytest

from experiments.studies import pretraining_frontier as frontier

HIDDEN = 4  # layers of the fixture runs


def _record(validation, test, drift=0.2):
  """A fixture record: finetuning accuracies, every layer's held-out curve, the input drift of layers 2..4."""
  epochs = [{"loss": 1.0, "seconds": 1.0, "elapsed_seconds": 1.0 + e, "heldout_loss": 10.0 - e} for e in range(3)]
  return {"finetune": {"validation_accuracy": validation, "test_accuracy": test},
          "layers": [{"index": i + 1, "epochs": epochs} for i in range(HIDDEN)],
          "input_drift": {"layers": [{"layer": n, "reads": "moving", "epochs": [
              {"epoch": e + 1, "distance_to_final": drift / (e + 1), "change": None} for e in range(3)]}
              for n in range(2, HIDDEN + 1)]},
          "environment": {"cpu_model": "Fixture CPU", "cpu_flags": ["avx2"], "cpu_count": 2, "usable_cores": 2,
                          "commit": "0" * 40, "code_digest": "f1x7"}}


def _data(accuracy, output_dir=""):
  """StudyRecords-like fixture: {arm: (validation per seed, test per seed)} on both datasets alike."""
  runs = {f"{short}_{arm}_s{s}": _record(v[s], t[s]) for short in ("mnist", "fashion")
          for arm, (v, t) in accuracy.items() for s in range(len(v))}
  return types.SimpleNamespace(runs=runs, output_dir=output_dir, preset="pretraining")


GREEDY = ([0.870, 0.872, 0.874], [0.860, 0.861, 0.862])


def test_the_rule_takes_the_fastest_arm_within_its_tolerance_and_reads_no_test_accuracy():
  data = _data({frontier.BASE: GREEDY,
                "pp": ([0.865, 0.866, 0.867], [0.99, 0.99, 0.99]),  # far below on validation, far above on test
                "pp_warmup1": ([0.870, 0.871, 0.874], [0.1, 0.1, 0.1]),  # -0.03 points on validation
                "pp_stagger1": ([0.871, 0.873, 0.875], [0.5, 0.5, 0.5])})  # +0.1
  arm, why = frontier.choose(data, {"pp": 2.1, "pp_warmup1": 2.0, "pp_stagger1": 1.6})
  assert arm == "pp_warmup1" and "2.00x" in why
  assert frontier.choose(data, {"pp": 2.1, "pp_warmup1": 1.5, "pp_stagger1": 1.6})[0] == "pp_stagger1"
  # No arm within the tolerance: the best worse-dataset difference is the trade.
  data = _data({frontier.BASE: GREEDY, "pp": ([0.860] * 3, [0.9] * 3), "pp_cosine": ([0.866] * 3, [0.1] * 3)})
  arm, why = frontier.choose(data, {"pp": 2.1, "pp_cosine": 2.0})
  assert arm == "pp_cosine" and "no arm within" in why
  assert frontier.choose(_data({}), {}) == (None, "no records")


def test_the_table_gives_each_arms_difference_from_greedy_of_the_same_seed():
  data = _data({frontier.BASE: GREEDY, "pp": ([0.868, 0.872, 0.870], [0.861, 0.861, 0.861])})
  table, _ = frontier.frontier_table(data, {})
  rows = [line for line in table.splitlines() if "| pp |" in line]
  assert len(rows) == 2  # one per dataset
  # validation: -0.2, 0.0, -0.4 points; test: +0.1, 0.0, -0.1
  assert "-0.20 (-0.40–0.00)" in rows[0] and "0.00 (-0.10–0.10)" in rows[0]
  assert "0.200" in rows[0] and "0.067" in rows[0]  # the top layer's drift in its first and last epochs


def _summary(tmp_path):
  folder = tmp_path / "benchmarks" / frontier.SPEED_BENCHMARK
  folder.mkdir(parents=True)
  summary = {"setting": {"batch_size": 100, "repeats": 3}, "provenance": {"commits": ["0" * 40]},
             "speedup_vs_greedy": {"pp": {"median": 2.1}, "pp_warmup1": {"median": 2.0}}, "records": {}}
  (folder / "summary_b100_r3.json").write_text(json.dumps(summary))


@pytest.mark.parametrize("with_speed", [False, True])
def test_the_figure_draws_drift_held_out_curves_and_the_frontier(tmp_path, with_speed):
  if with_speed:
    _summary(tmp_path)
  data = _data({frontier.BASE: GREEDY, "pp": ([0.868] * 3, [0.86] * 3), "pp_warmup1": ([0.871] * 3, [0.86] * 3)},
               str(tmp_path))
  fig = frontier.frontier_figure(data, {})
  axes = fig.get_axes()
  assert len(axes) == (9 if with_speed else 6)
  drift = axes[0].get_lines()
  # the drift figure's arms that have records, in its order
  assert [l.get_label() for l in drift] == [a for a, _ in frontier.DRIFT_ARMS if a in (frontier.BASE, "pp", "pp_warmup1")]
  assert list(drift[1].get_ydata()) == pytest.approx([0.2, 0.1, 0.2 / 3])
  if with_speed:
    frontier_axes = axes[6]
    assert {t.get_text() for t in frontier_axes.texts} >= {frontier.BASE, "pp", "pp_warmup1"}
