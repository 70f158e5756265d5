"""Recipes (`--recipe`, common/settings/recipes.py), no pretraining (`--pretrain_epochs=0`), and finetuning's schedule and
best-validation epoch: the values a recipe resolves to, explicit flags over a recipe, a refused recipe in one line,
every program finetuning from the same initial weights without pretraining, resume and export of such a run."""

import dataclasses
import json
import math
import os

import numpy as np
import pytest
import tensorflow as tf

from common.artifacts import runlog
from common.model import autoencoder
from common.settings import programs
from common.settings import recipes
from common.training import finetune
from conftest import run_module

# The report's values (the original implementation's flags): --recipe=report must resolve to exactly these.
REPORT = dict(pretrain_epochs=30, finetune_epochs=30, corruption=0.5, pretrain_learning_rate=1e-4,
              finetune_learning_rate=0.1, finetune_lr_schedule="constant", finetune_keep_best=False)
TINY = dict(hidden_units=(24, 16), pretrain_epochs=1, finetune_epochs=3, train_examples=600, batch_size=50,
            num_devices=2, show_progress=False, pictures=True)


def test_report_recipe_is_the_report_values_to_the_bit():
  for program in programs.PROGRAMS:
    default, named = program.make_config(), program.make_config(recipe="report")
    assert default == named
    for key, value in REPORT.items():
      assert getattr(named, key) == value and type(getattr(named, key)) is type(value), (program.name, key)
  dp = programs.DATA_PARALLEL.make_config()
  assert (dp.pretrain_lr_scaling, dp.finetune_lr_scaling, dp.lr_warmup_epochs, dp.finetune_optimizer,
          dp.finetune_momentum) == ("none", "none", 0.0, "sgd", 0.0)


def test_a_recipe_sets_its_values_and_explicit_values_override_them():
  tuned = recipes.get("tuned").values
  config = programs.GREEDY.make_config(recipe="tuned")
  for key, value in tuned.items():
    assert getattr(config, key) == value
  # An explicit value wins, even when it is the report's own value.
  key = next(k for k in tuned if k in REPORT)
  config = programs.GREEDY.make_config(recipe="tuned", **{key: REPORT[key]})
  assert getattr(config, key) == REPORT[key]
  assert all(getattr(config, k) == v for k, v in tuned.items() if k != key)
  # The record's config names the recipe and holds every resolved value; the recipe is a training setting.
  d = config.to_dict()
  assert d["recipe"] == "tuned" and all(d[k] == getattr(config, k) for k in tuned)
  assert config.training_fingerprint()["recipe"] == "tuned"
  assert dataclasses.replace(config, recipe="report").training_fingerprint() != config.training_fingerprint()


def test_tuned_recipe_gives_each_program_the_fair_frontiers_warmup():
  """--recipe=tuned gives each program the layer warm-up the fair_frontier rule chose (`schedules.FAIR_CHOSEN`):
  sync_layerwise model_parallel's (it is model_parallel with G = H), data_parallel and async_data_parallel greedy's
  (they compute greedy's steps), so the equivalences hold under the recipe; the pipeline's other schedule settings
  stay the original's; the report's recipe has no warm-up; an explicit --layer_warmup_epochs wins."""
  from experiments import schedules
  like = {programs.SYNC_LAYERWISE: programs.MODEL_PARALLEL, programs.DATA_PARALLEL: programs.GREEDY,
          programs.ASYNC_DATA_PARALLEL: programs.GREEDY}
  for program in programs.PROGRAMS:
    chosen = schedules.FAIR_CHOSEN[like.get(program, program).name]
    assert program.make_config(recipe="tuned").layer_warmup_epochs == chosen, program.name
    assert program.make_config(recipe="report").layer_warmup_epochs == 0.0, program.name
    assert program.make_config(recipe="tuned", layer_warmup_epochs=0.0).layer_warmup_epochs == 0.0
  pp = programs.PIPELINE_PARALLEL
  tuned, report = pp.make_config(recipe="tuned"), pp.make_config(recipe="report")
  assert all(getattr(tuned, k) == getattr(report, k) for k in ("pretrain_lr_schedule", "stagger_epochs",
                                                                  "polish_epochs"))
  assert tuned.to_dict()["layer_warmup_epochs"] == schedules.FAIR_CHOSEN[pp.name]
  assert tuned.training_fingerprint() != pp.make_config(recipe="tuned", layer_warmup_epochs=0.0).training_fingerprint()


def test_large_batch_recipe_is_data_parallels_and_refused_elsewhere_in_one_line():
  config = programs.DATA_PARALLEL.make_config(recipe="large_batch", num_devices=2)
  assert (config.finetune_optimizer, config.finetune_learning_rate, config.pretrain_lr_scaling) == \
      ("adam", 0.0004, "linear")
  for program in programs.PROGRAMS:
    if program is programs.DATA_PARALLEL:
      continue
    with pytest.raises(ValueError) as e:
      program.make_config(recipe="large_batch")
    assert "\n" not in str(e.value) and str(e.value).startswith("--recipe=large_batch sets ")
    assert "a recipe of data_parallel" in str(e.value)
  with pytest.raises(ValueError, match=r"^--recipe must be one of report, tuned, large_batch, got 'fast'\.$"):
    programs.GREEDY.make_config(recipe="fast")


def test_a_recipes_program_values_are_that_programs_only(monkeypatch):
  """`Recipe.program_values`: one program's own settings (or its own value of a shared one), over the shared values;
  every other program leaves them out; a program value the program lacks is refused in one line."""
  pp, tuned = programs.PIPELINE_PARALLEL, recipes.get("tuned")

  def with_program_values(values):
    recipe = dataclasses.replace(tuned, values={**tuned.values, "corruption": 0.3}, program_values={pp.name: values})
    monkeypatch.setattr(recipes, "RECIPES", tuple(recipe if r.name == tuned.name else r for r in recipes.RECIPES))

  with_program_values({"stagger_epochs": 1.5, "corruption": 0.2})
  config = pp.make_config(recipe="tuned")
  assert (config.stagger_epochs, config.corruption) == (1.5, 0.2)
  assert pp.make_config(recipe="tuned", stagger_epochs=0.0).stagger_epochs == 0.0  # an explicit value wins
  for program in programs.PROGRAMS:
    if program is not pp:
      assert program.make_config(recipe="tuned").corruption == 0.3
  with_program_values({"no_such_setting": 1})
  with pytest.raises(ValueError, match=r"^--recipe=tuned sets --no_such_setting, which this program does not have"):
    pp.make_config(recipe="tuned")


def test_every_recipe_sets_only_declared_recipe_settings():
  settable = {f.name for p in programs.PROGRAMS for f in dataclasses.fields(p.config) if f.metadata.get("recipe")}
  for recipe in recipes.RECIPES:
    assert set(recipe.values) <= settable, recipe.name
    for name, values in recipe.program_values.items():
      own = {f.name for f in dataclasses.fields(programs.get(name).config) if f.metadata.get("recipe")}
      assert set(values) <= own, (recipe.name, name)
  assert recipes.RECIPES[0].name == recipes.DEFAULT == "report" and not recipes.RECIPES[0].values


def test_command_line_explicit_flag_beats_the_recipe_and_the_command_prints_it(tmp_path):
  key = next(k for k in recipes.get("tuned").values if k in ("corruption", "finetune_learning_rate"))
  proc = run_module(programs.GREEDY.module, "--recipe=tuned", f"--{key}={REPORT[key]}", "--hidden_units=8",
                    "--pretrain_epochs=0", "--finetune_epochs=1", "--train_examples=200", "--batch_size=50",
                    f"--results_dir={tmp_path}", "--run_name=r", "--nopictures", timeout=300)
  assert proc.returncode == 0, proc.stderr[-2000:]
  config = json.load(open(tmp_path / "r.json"))["config"]
  assert config["recipe"] == "tuned" and config[key] == REPORT[key]
  assert all(config[k] == v for k, v in recipes.get("tuned").values.items() if k != key)
  proc = run_module("common.run.recipes", "tuned", "--program=data_parallel", timeout=600)
  assert proc.returncode == 0, proc.stderr[-2000:]
  for k, v in recipes.get("tuned").values.items():
    assert f"--{k}={v}" in proc.stdout
  assert "--finetune_optimizer=sgd" in proc.stdout  # data_parallel's own settings, resolved


def test_no_pretraining_finetunes_from_the_initial_weights_in_every_program(tmp_path):
  """--pretrain_epochs=0: no schedule runs, the layers keep the weights every program initialises from the seed, the
  record says so, and the finetuned accuracy is the same in every program (one-device finetuning, same steps)."""
  accuracy = {}
  for program in programs.PROGRAMS:
    config = program.make_config(**dict(TINY, pretrain_epochs=0), finetune_placement="one_device",
                                 results_dir=str(tmp_path), run_name=program.name,
                                 export_weights=str(tmp_path / f"{program.name}.npz"))
    if program.cluster == "parameter_server":  # Its in-process cluster would stay connected: its own process.
      flags = [f"--{k}={','.join(map(str, v)) if isinstance(v, (tuple, list)) else v}" for k, v in config.to_dict().items()
               if k != "strategy" and v is not None and k not in ("show_progress", "pictures")]
      proc = run_module(program.module, *flags, timeout=600)
      assert proc.returncode == 0, proc.stderr[-2000:]
      record = json.load(open(tmp_path / f"{program.name}.json"))
    else:
      record = program.load_library().train(config)
    assert record["pretrained"] is False and record["pretrain_seconds"] == 0.0
    assert [layer["epochs"] for layer in record["layers"]] == [[], []]
    assert record["config"]["pretrain_epochs"] == 0 and not record["warnings"]
    weights = runlog.load_weights(str(tmp_path / f"{program.name}.npz"))
    initial = autoencoder.sigmoid_glorot_uniform(784, 24, config.seed, 1).numpy()
    np.testing.assert_array_equal(weights["layer1/kernel"], initial)
    assert os.path.exists(tmp_path / f"{program.name}_filters.png")
    accuracy[program.name] = record["finetune"]["test_accuracy"]
  assert len(set(accuracy.values())) == 1, accuracy


def test_no_pretraining_resumes_and_exports(tmp_path):
  base = dict(TINY, pretrain_epochs=0, model_dir=str(tmp_path / "model"), results_dir=str(tmp_path),
              export_model=str(tmp_path / "saved"), pictures=False)
  program = programs.PIPELINE_PARALLEL
  first = program.load_library().train(program.make_config(**base, run_name="first"))
  again = program.load_library().train(program.make_config(**base, run_name="again"))
  assert again["resumed"] and again["finetune"]["test_accuracy"] == first["finetune"]["test_accuracy"]
  assert "predict" in first["export_model"]["signatures"]
  with pytest.raises(Exception, match="recipe"):  # The recipe is a training setting: another one is not resumed.
    program.load_library().train(program.make_config(**dict(base, recipe="tuned"), run_name="other"))


def test_cosine_schedule_is_kerass_cosine_decay_over_the_finetuning_steps():
  assert finetune.lr_schedule("constant", 100) is None
  factor = finetune.lr_schedule("cosine", 100)
  for step in (0, 25, 50, 99, 100):
    assert float(factor(tf.constant(step))) == pytest.approx(0.5 * (1 + math.cos(math.pi * step / 100)), abs=1e-6)
  with pytest.raises(ValueError, match="unknown finetuning schedule"):
    finetune.lr_schedule("linear", 100)


def test_keep_best_keeps_the_best_validation_epoch_and_resumes_it(tmp_path):
  """The classifier of the first epoch with the highest validation accuracy is kept, as recorded; a run interrupted
  after an epoch and resumed keeps the same one (the best copy is checkpointed)."""
  base = dict(TINY, num_devices=1, pretrain_epochs=0, finetune_epochs=4, finetune_learning_rate=1.0,
              finetune_keep_best=True, results_dir=str(tmp_path))
  record = programs.GREEDY.load_library().train(programs.GREEDY.make_config(**base, run_name="whole"))
  fine = record["finetune"]
  history = [h["validation_accuracy"] for h in fine["history"]]
  assert fine["best_epoch"] == int(np.argmax(history)) + 1
  assert fine["validation_accuracy"] == max(history)
  assert fine["last_epoch_validation_accuracy"] == history[-1]
  # Resumed after 2 of the 4 epochs: the same kept epoch and accuracies.
  model_dir = str(tmp_path / "model")
  with pytest.raises(_Stop):  # No pretraining, so the first checkpoints are finetuning's epochs.
    programs.GREEDY.load_library().train(programs.GREEDY.make_config(**base, model_dir=model_dir, run_name="part"),
                                       on_checkpoint=_stop_after(2))
  resumed = programs.GREEDY.load_library().train(programs.GREEDY.make_config(**base, model_dir=model_dir,
                                                                           run_name="resumed"))
  assert resumed["resumed"]
  for key in ("best_epoch", "validation_accuracy", "test_accuracy"):
    assert resumed["finetune"][key] == fine[key], key


class _Stop(Exception):
  pass


def _stop_after(saves):
  def hook(run):
    if run.checkpoints_saved >= saves:
      raise _Stop()
  return hook
