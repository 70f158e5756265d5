"""The fair frontier's rule, second round, table and figure (experiments/studies/fair_frontier.py) on fixture
records: the rule takes each program's warm-up of best mean validation accuracy (ties to the smaller), reads no test
accuracy and no confirm seed, and chooses nothing for a program missing a record; the chosen arms run the confirm
seeds; the table's differences are per seed, best against best."""

import types

from common.settings import programs
from experiments import schedules
from experiments.studies import fair_frontier as fair

HIDDEN = 4


def _record(validation, test, seed=0):
  return {"finetune": {"validation_accuracy": validation, "test_accuracy": test},
          "config": {"hidden_units": [500] * HIDDEN, "seed": seed},
          "layers": [{"index": i + 1, "epochs": []} for i in range(HIDDEN)],
          "heldout_reconstruction": [{"layer": i + 1, "loss": 100.0 + i} for i in range(HIDDEN)],
          "linear_probe": [{"layer": i + 1, "validation_accuracy": 0.9 - 0.01 * i, "test_accuracy": 0.8}
                           for i in range(HIDDEN)],
          "environment": {"cpu_model": "Fixture CPU", "cpu_flags": ["avx2"], "cpu_count": 2, "usable_cores": 2,
                          "commit": "0" * 40, "code_digest": "f1x7"}}


def _runs(validation, seeds=(0, 1, 2), test=0.5):
  """{run: record}: every fair arm on both datasets, validation accuracy `validation(arm, seed)`."""
  return {f"{short}_{arm}_s{s}": _record(validation(arm, s), test, s) for short in ("mnist", "fashion")
          for arm, _, _ in schedules.FAIR_ARMS for s in seeds}


def test_the_rule_takes_each_programs_best_mean_validation_accuracy_ties_to_the_smaller_warmup():
  best = {programs.GREEDY.run_name: "greedy_w1", "mp": "mp_w4", "pp": "pp_w2"}
  runs = _runs(lambda arm, s: 0.9 if arm == best[arm.split("_")[0]] else 0.85 + 0.001 * s)
  chosen = fair.choose(runs)
  assert {p: w for p, (w, _) in chosen.items()} == {programs.GREEDY.name: 1.0, programs.MODEL_PARALLEL.name: 4.0,
                                                    programs.PIPELINE_PARALLEL.name: 2.0}
  # Equal to 4 decimals: the smaller warm-up.
  tie = _runs(lambda arm, s: 0.87 + (0.00001 if arm.endswith("w4") else 0.0))
  assert {p: w for p, (w, _) in fair.choose(tie).items()} == dict.fromkeys(chosen, 0.0)
  # Test accuracy and the confirm seeds are not read.
  noisy = {**runs, **{n: _record(0.99, 0.99, 3) for n in _runs(lambda a, s: 0.99, seeds=(3,))}}
  for name in noisy:
    noisy[name]["finetune"]["test_accuracy"] = 0.1 if name.endswith("w0_s0") else 0.99
  assert fair.choose(noisy) == chosen
  # A program missing one record gets no choice yet.
  partial = {n: r for n, r in runs.items() if n != "mnist_pp_w4_s2"}
  assert set(fair.choose(partial)) == {programs.GREEDY.name, programs.MODEL_PARALLEL.name}


def test_the_second_round_runs_the_chosen_arms_on_the_confirm_seeds(monkeypatch):
  sizes = dict(fair.STUDIES[0].sizes["pretraining"], preset="pretraining")
  runs = _runs(lambda arm, s: 0.9 if arm in ("greedy_w2", "mp_w0", "pp_w1") else 0.8)
  monkeypatch.setattr(fair.records, "of", lambda found, study, preset: found)
  confirm = fair.confirm_runs(sizes, runs)
  assert sorted({r.name.rsplit("_s", 1)[0].split("_", 1)[1] for r in confirm}) == ["greedy_w2", "mp_w0", "pp_w1"]
  assert {r.config.seed for r in confirm} == set(fair.CONFIRM_SEEDS)
  assert all(r.config.linear_probe_epochs == fair.LINEAR_PROBE_EPOCHS and r.config.recipe == "tuned" for r in confirm)
  assert {r.config.layer_warmup_epochs for r in confirm if r.program == programs.GREEDY.name} == {2.0}
  assert fair.confirm_runs(sizes, {n: r for n, r in runs.items() if "pp_w4" not in n}) == []


def test_every_run_names_its_warmup_and_probes_its_layers():
  runs = fair.fair_runs(dict(fair.STUDIES[0].sizes["pretraining"]))
  assert len(runs) == 2 * 3 * (len(schedules.FAIR_ARMS) + HIDDEN)
  for run in runs:
    assert run.config.linear_probe_epochs == fair.LINEAR_PROBE_EPOCHS and not run.config.heldout_every_epoch
    w = float(run.name.split("_w")[1].split("_")[0]) if "_w" in run.name else 0.0
    assert run.config.layer_warmup_epochs == w, run.name
  ks = [r for r in runs if "_k" in r.name]
  assert sorted({r.config.pretrain_layers for r in ks}) == list(range(HIDDEN))


def test_the_table_gives_differences_per_seed_and_best_against_best():
  runs = _runs(lambda arm, s: {"greedy_w0": 0.870, "greedy_w1": 0.875, "pp_w2": 0.874 + 0.001 * s,
                               "mp_w0": 0.872}.get(arm, 0.86))
  runs["mnist_greedy_k1_s0"] = _record(0.5, 0.5)
  table, sentences = fair.fair_table(types.SimpleNamespace(runs=runs, output_dir="", preset="pretraining"), {})
  row = next(line for line in table.splitlines() if "| MNIST | `pp_w2` |" in line)
  assert "0.50 (0.40–0.60)" in row  # validation minus greedy_w0: 0.4, 0.5, 0.6 points
  assert "100.0 / 101.0 / 102.0 / 103.0" in row and "0.900 / 0.890 / 0.880 / 0.870" in row
  assert any("`greedy_k1`" in line for line in table.splitlines())
  text = " ".join(sentences)
  assert "greedy w = 1" in text and "pipeline_parallel w = 2" in text
  assert "`pp_w2` minus `greedy_w1`" in text and "`mp_w0` minus `greedy_w1`" in text


def test_the_figure_draws_every_program_and_the_layers_pretrained(tmp_path):
  runs = _runs(lambda arm, s: 0.87)
  runs.update({f"mnist_greedy_k{k}_s{s}": _record(0.8 + 0.01 * k, 0.8) for k in range(HIDDEN) for s in range(3)})
  fig = fair.fair_figure(types.SimpleNamespace(runs=runs, output_dir=str(tmp_path), preset="pretraining"), {})
  axes = fig.get_axes()
  assert len(axes) == 8
  assert {l.get_label() for l in axes[1].get_lines()} >= {"greedy w=0", "pp w=0"}
  assert len(axes[3].get_lines()[0].get_xdata()) == HIDDEN + 1  # K = 0 .. 3, and every layer (greedy_w0)
