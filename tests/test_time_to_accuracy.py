"""The time_to_accuracy study's rule, table and headline (experiments/studies/time_to_accuracy.py) on fixture records:
the rule takes the fewest pretraining + finetuning seconds among the runs whose validation accuracy reaches the goal
and reads no test accuracy; a run beyond the grid is said to be beyond it; the grid runs cheapest first."""

import types

from experiments.studies import time_to_accuracy as tta


def _record(pretrain_epochs, finetune_epochs, validation, test=0.5):
  return {"config": {"pretrain_epochs": pretrain_epochs, "finetune_epochs": finetune_epochs},
          "pretrain_seconds": 30.0 * pretrain_epochs,
          "finetune": {"seconds": 20.0 * finetune_epochs, "validation_accuracy": validation, "test_accuracy": test},
          "run_seconds": 30.0 * pretrain_epochs + 20.0 * finetune_epochs + 15.0}


def _data(runs):
  planned = [types.SimpleNamespace(name=f"pp_bf16_p{p}_f{f}") for p, f in tta.GRID + tta.BEYOND]
  return types.SimpleNamespace(runs=runs, planned=planned, output_dir="", preset="full")


def test_the_grid_runs_cheapest_first_and_beyond_it_last():
  predicted = [tta.PRETRAIN_WEIGHT * p + tta.FINETUNE_WEIGHT * f for p, f in tta.GRID]
  assert predicted == sorted(predicted) and len(tta.GRID) == len(tta.EPOCHS) ** 2
  assert not set(tta.BEYOND) & set(tta.GRID)


def test_the_rule_takes_the_fewest_seconds_reaching_the_goal_on_validation_only():
  runs = {"pp_bf16_p5_f5": _record(5, 5, 0.981, test=0.999), "pp_bf16_p10_f10": _record(10, 10, 0.9851),
          "pp_bf16_p20_f20": _record(20, 20, 0.990), "pp_bf16_p10_f5": _record(10, 5, 0.9849, test=0.999)}
  assert tta.choose(runs) == "pp_bf16_p10_f10"
  assert tta.choose({"a": _record(5, 5, 0.98)}) is None
  table, sentences = tta.table(_data(runs), {})
  assert table.index("`pp_bf16_p5_f5`") < table.index("`pp_bf16_p10_f5`") < table.index("`pp_bf16_p10_f10`")
  assert "`pp_bf16_p10_f10`, 8.3 minutes" in sentences[0] and "beyond" not in sentences[0]
  assert "not run, costlier than a point that reached the goal: `pp_bf16_p5_f20`" in sentences[1]
  assert "not run, beyond the grid, not needed" in sentences[1]


def test_a_run_beyond_the_grid_is_named_so_in_the_table_and_the_headline():
  runs = {"pp_bf16_p5_f5": _record(5, 5, 0.981), "pp_bf16_p20_f20": _record(20, 20, 0.984),
          "pp_bf16_p30_f30": _record(30, 30, 0.9855, test=0.986)}
  _, sentences = tta.table(_data(runs), {})
  assert "beyond the grid" in sentences[0] and "`pp_bf16_p30_f30`" in sentences[0]
  assert "not run, no more epochs of either kind than a point that missed the goal: `pp_bf16_p5_f10`" in sentences[1]
  used = []
  cell = tta._headline("", {"time_to_accuracy": types.SimpleNamespace(runs=runs)}, used)
  assert cell == "25.0 min (30 + 30 epochs, no point of the grid that ran reached it), test accuracy 0.9860"
  assert used == [runs["pp_bf16_p30_f30"]]
  missed = {"pp_bf16_p5_f5": _record(5, 5, 0.981)}
  used = []
  assert tta._headline("", {"time_to_accuracy": types.SimpleNamespace(runs=missed)}, used) == (
      "no run reached 0.985 (1 of the grid ran)")
  assert used == [missed["pp_bf16_p5_f5"]]


def test_the_next_run_is_the_cheapest_left_after_the_costliest_once_the_three_cheapest_missed():
  order = [f"pp_bf16_p{p}_f{f}" for p, f in tta.GRID]
  assert tta.next_run({}) == order[0]
  runs = {n: _record(*tta._epochs(n), 0.98) for n in order[:3]}
  assert tta.next_run(runs) == "pp_bf16_p20_f20"  # the three cheapest missed: can any point reach the goal?
  runs["pp_bf16_p20_f20"] = _record(20, 20, 0.986)
  assert tta.next_run(runs) == order[3]
  runs["pp_bf16_p10_f15"] = _record(10, 15, 0.984)  # a miss: every point with no more epochs of either kind is skipped
  assert tta.next_run(runs) == "pp_bf16_p5_f20" and order[3] == "pp_bf16_p5_f15" and order[4] == "pp_bf16_p10_f10"
  runs["pp_bf16_p15_f10"] = _record(15, 10, 0.9851)  # a success: every costlier point is skipped
  left = [n for n in order if n not in runs and tta._skipped(n, runs) is None]
  assert left == ["pp_bf16_p5_f20", "pp_bf16_p15_f5"] and tta.next_run(runs) == "pp_bf16_p5_f20"
  runs.update({n: _record(*tta._epochs(n), 0.98) for n in left})
  assert tta.next_run(runs) is None and tta.choose(runs) == "pp_bf16_p15_f10"
  missed = {n: _record(*tta._epochs(n), 0.98) for n in order}
  assert tta.next_run(missed) == "pp_bf16_p30_f30"  # no point of the grid reached it: beyond the grid


def test_the_headline_says_how_many_cheaper_points_have_not_run():
  runs = {"pp_bf16_p5_f5": _record(5, 5, 0.981), "pp_bf16_p20_f20": _record(20, 20, 0.986, test=0.987)}
  used = []
  cell = tta._headline("", {"time_to_accuracy": _data(runs)}, used)
  left = len(tta.GRID) - 2  # every other point is cheaper than 20 + 20 and not dominated by 5 + 5
  assert cell == f"16.7 min (20 + 20 epochs; {left} cheaper points of the grid not run yet), test accuracy 0.9870"
