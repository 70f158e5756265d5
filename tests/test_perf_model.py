"""The performance models on small cases computed by hand (no TensorFlow runs, no generated fixtures)."""

import dataclasses

import pytest

from common.layerwise import schedule as schedule_lib
from common.measure import cost
from common.settings import programs
from experiments import perf_model

# Parameters of a 784 -> 10 layer (kernel 7840, bias 10, decoder bias 784) and of a 10 -> 10 layer.
P1, P10 = 8634, 120


def _config(hidden, epochs, examples=500, batch=100):
  return {"hidden_units": list(hidden), "pretrain_epochs": epochs, "train_examples": examples, "batch_size": batch}


def _record(program, hidden, epochs, devices, seconds, layers=None, steps=None, profile=None, examples=500):
  """A minimal run record: config, environment (2 cores), per-layer epoch seconds or schedule steps."""
  r = {"strategy": program.name, "config": dict(_config(hidden, epochs, examples), num_devices=devices),
       "environment": {"cpu_count": 2}, "pretrain_seconds": seconds,
       "layers": [{"epochs": [{"seconds": s}] * epochs} for s in (layers or [0.0] * len(hidden))]}
  if steps:
    r["schedule"] = {"steps": steps}
  if profile:
    r["profile"] = {"seconds_per_epoch": profile}
  return r


def test_processor_sharing_makespan_by_hand():
  assert perf_model.processor_sharing_makespan([], 2) == 0.0
  # No more jobs than cores: the longest job.
  assert perf_model.processor_sharing_makespan([1.0, 3.0], 2) == pytest.approx(3.0)
  # Three jobs on two cores: each at 2/3 speed until job 1 (1 s of work) ends at 1.5 s; then the two
  # left (1 s and 2 s of work to go) run at full speed: 2.5 s and 3.5 s.
  assert perf_model.processor_sharing_makespan([1.0, 2.0, 3.0], 2) == pytest.approx(3.5)
  # Four equal jobs on two cores take twice as long as one.
  assert perf_model.processor_sharing_makespan([2.0] * 4, 2) == pytest.approx(4.0)
  # The side-by-side slowdown applies only while two or more jobs run.
  assert perf_model.processor_sharing_makespan([2.0, 2.0], 2, slowdown=1.5) == pytest.approx(3.0)
  assert perf_model.processor_sharing_makespan([2.0], 2, slowdown=1.5) == pytest.approx(2.0)
  # Jobs 1 s and 3 s, slowdown 2: both at half speed until 2 s, then the 3 s job's last 2 s alone: 4 s.
  assert perf_model.processor_sharing_makespan([1.0, 3.0], 2, slowdown=2.0) == pytest.approx(4.0)
  with pytest.raises(ValueError):
    perf_model.processor_sharing_makespan([1.0], 0)
  with pytest.raises(ValueError):
    perf_model.processor_sharing_makespan([1.0], 2, slowdown=0.5)


def test_model_parallel_follows_the_programs_schedule():
  # With a core per device and no slowdown or copies, a step lasts as long as its slowest active layer:
  # the model is the schedule's critical path, for every grouping.
  t = (1.0, 3.0, 2.0, 5.0, 4.0)
  for g in range(1, 6):
    for e in (1, 2, 5):
      assert perf_model.ModelParallel(t, cores=g).predict(_config([10] * 5, e), g) == pytest.approx(
          schedule_lib.Schedule(len(t), g, e).critical_path(t))


def test_layer_models_by_hand():
  t, config = (1.0, 2.0, 3.0, 4.0), _config([10] * 4, 10)
  # One device: every layer 10 epochs one after another; greedy the same whatever G.
  assert perf_model.ModelParallel(t, cores=2).predict(config, 1) == pytest.approx(100.0)
  assert perf_model.Greedy(t, cores=2).predict(config, 4) == pytest.approx(100.0)
  # Four devices on four cores: steps last 1, 2, 3, then ten steps of the slowest layer (4 s).
  assert perf_model.ModelParallel(t, cores=4).predict(config, 4) == pytest.approx(1 + 2 + 3 + 40)
  # Two devices on two cores: group (1, 2): 1 + 10 x 2; group (3, 4): 3 + 10 x 4.
  assert perf_model.ModelParallel(t, cores=2).predict(config, 2) == pytest.approx(21 + 43)
  # Copies: in each of the 11 steps of group (1, 2) layer 1 (P1 params) is copied once, of group (3, 4) layer 3.
  kappa = perf_model.ModelParallel(t, cores=2, copy_seconds_per_param=1e-3)
  assert kappa.predict(config, 2) == pytest.approx(64 + 11 * P1 * 1e-3 + 11 * P10 * 1e-3)
  assert perf_model.copied_params([0, 1, 2], [10, 20, 30]) == 2 * 10 + 1 * 20
  # Synchronized layer-wise, 2 layers, 3 epochs: layer 1 trains 4 epochs, layer 2 3, one after another.
  assert perf_model.SyncLayerwise((1.0, 2.0), cores=2).predict(_config([10, 10], 3), 1) == pytest.approx(4 + 6)
  # Two layers, 3 epochs on 2 devices of 2 cores: layer 1 alone (1 s), then three steps of layer 2 (2 s).
  mp = perf_model.ModelParallel((1.0, 2.0), cores=2)
  assert mp.predict(_config([10, 10], 3), 2) == pytest.approx(1 + 2 + 2 + 2)
  with pytest.raises(ValueError, match="calibrated for 2 layers"):
    mp.predict(_config([10] * 3, 3), 2)


def test_data_parallel_by_hand():
  # f = 0.75 of a 2 s epoch splits over G = 2 replicas on 2 cores: 0.75 + 0.5 per epoch.
  dp = perf_model.DataParallel((2.0,), cores=2, parallel_fraction=0.75)
  assert dp.predict(_config([10], 4), 2) == pytest.approx(4 * 1.25)
  # G = 4 on 2 cores: the compute part still splits over only 2 cores.
  assert dp.predict(_config([10], 1), 4) == pytest.approx(1.25)
  # All-reduce: S = 500 / 100 steps x (G - 1) transfers x P1 params x gamma.
  dp = perf_model.DataParallel((2.0,), cores=4, allreduce_seconds_per_param=1e-3)
  assert dp.predict(_config([10], 1), 3) == pytest.approx(2 / 3 + 5 * 2 * P1 * 1e-3)
  # One device: no all-reduce, no slowdown.
  assert dataclasses.replace(dp, slowdown=1.3).predict(_config([10], 3), 1) == pytest.approx(6.0)


def test_fit_scalar_finds_the_known_minimum():
  assert perf_model.fit_scalar(lambda x: [10 * x, 20 * x], [13.0, 26.0]) == pytest.approx(1.3, abs=1e-9)
  assert perf_model.fit_scalar(lambda x: [10 * x], [5.0]) == pytest.approx(1.0, abs=1e-9)  # clipped at low
  assert perf_model.fit_scalar(lambda x: [x], []) == 1.0


def test_model_parallel_calibration_by_hand():
  mp = programs.MODEL_PARALLEL
  # One device: the steps where layer k trains alone give t = (1, 2).
  one = _record(mp, [10, 10], 3, 1, 9.0, steps=[{"active_layers": [1], "wall_seconds": 1.0, "group": 0, "step": 0},
                                                 {"active_layers": [2], "wall_seconds": 2.0, "group": 1, "step": 0}])
  # Two devices, no copy seconds: step 0 layer 1 alone (1 s), steps 1-3 both; with rho = 1.5 each such step
  # lasts 2.5 s (both at 1/1.5 until layer 1 ends at 1.5 s, then layer 2's last second alone): 8.5 s.
  two = _record(mp, [10, 10], 3, 2, 8.5, steps=[{"active_layers": [1], "wall_seconds": 1.0, "copy_seconds": 0.0}])
  model = perf_model.ModelParallel.calibrate({"g1": one, "g2": two})
  assert model.epoch_seconds == (1.0, 2.0) and model.cores == 2 and model.copy_seconds_per_param == 0.0
  assert model.slowdown == pytest.approx(1.5, abs=1e-6)
  assert model.calibration == ("g1", "g2")
  assert "fitted rho = 1.500" in model.describe() and "kappa = 0 ns/param" in model.describe()
  three = _record(mp, [10, 10], 3, 3, 8.0)
  predictions = perf_model.predictions(model, {"g1": one, "g2": two, "g3": three})
  assert [(p.name, p.in_calibration) for p in predictions] == [("g1", True), ("g2", True), ("g3", False)]
  assert predictions[2].predicted == pytest.approx(8.5)  # G > H behaves as G = H
  with pytest.raises(ValueError, match="one device"):
    perf_model.ModelParallel.calibrate({"g2": two})


def test_data_parallel_calibration_by_hand():
  dp = programs.DATA_PARALLEL
  # f = (forward_loss + gradients) / total = 1.5 / 2.0; gamma = all-reduce / (S P1) = 0.8634 / (5 x 8634).
  one = _record(dp, [10], 1, 1, 2.0, layers=[2.0], profile={"input": 0.3, "forward_loss": 1.2, "gradients": 0.3,
                                                            "allreduce": 0.0, "apply": 0.2})
  # Two replicas at rho = 1.2: 2 x 0.75 x 1.2 / 2 + 0.5 + 0.8634 = 2.2634 s.
  two = _record(dp, [10], 1, 2, 2.2634, layers=[2.2634], profile={"input": 0.3, "forward_loss": 0.5, "gradients": 0.2,
                                                                  "allreduce": 0.8634, "apply": 0.2})
  model = perf_model.DataParallel.calibrate({"g1": one, "g2": two})
  assert model.parallel_fraction == pytest.approx(0.75)
  assert model.allreduce_seconds_per_param == pytest.approx(2e-5)
  assert model.steps_per_epoch == 5 and model.slowdown == pytest.approx(1.2, abs=1e-6)


def test_pipeline_model_is_fitted_on_the_one_device_run():
  pp = programs.PIPELINE_PARALLEL
  config = dict(_config([100] * 4, 2, examples=1000, batch=100), num_devices=1)
  one = _record(pp, [100] * 4, 2, 1, 10.0, examples=1000)
  model = perf_model.Pipeline.calibrate({"g1": one})
  work = perf_model.pipeline_plan(config, 1).critical_path_flops(100)
  assert model.rate == pytest.approx(work / 10.0) and model.calibration == ("g1",)
  assert model.predict(config, 1) == pytest.approx(10.0)
  # Two devices on two cores: never below half the work, never above the one-device time.
  assert 5.0 <= model.predict(config, 2) <= 10.0
  assert model.predict(config, 4) >= 5.0  # 4 devices on 2 cores still share 2 cores


def test_every_program_resolves_to_its_model_and_an_unknown_program_is_an_error():
  for program in programs.PROGRAMS:
    model = perf_model.resolve(program)
    assert model is perf_model.MODELS.get(program.name), program.name
    assert model is None or all(hasattr(model, f) for f in ("calibrate", "predict", "describe")), program.name
  assert perf_model.resolve(programs.MODEL_PARALLEL) is perf_model.ModelParallel
  assert {perf_model.resolve(p) for p in programs.PROGRAMS} >= {perf_model.Greedy, perf_model.Pipeline}
  assert perf_model.resolve(dataclasses.replace(programs.GREEDY, name="no_model")) is None
  unknown = _record(programs.GREEDY, [10], 1, 1, 1.0, layers=[1.0])
  unknown["strategy"] = "no_such_program"
  with pytest.raises(ValueError, match="unknown program"):
    perf_model.calibrated({"a": unknown})
  greedy = perf_model.calibrated({"a": _record(programs.GREEDY, [10, 10], 2, 1, 6.0, layers=[1.0, 2.0])})[0]
  assert isinstance(greedy, perf_model.Greedy) and greedy.predict(_config([10, 10], 2), 1) == pytest.approx(6.0)
  assert cost.layer_params([10, 10]) == [P1, P10]


def test_pipeline_with_replicated_stages_by_hand():
  """One layer is one stage on any devices; R replicas split its work: on R devices with R cores the run takes 1/R
  of the one-device time (the model counts no all-reduce)."""
  config = {"hidden_units": [100], "train_examples": 1000, "batch_size": 100, "pretrain_epochs": 1,
            "pipeline_chunk_steps": 1}
  one = perf_model.pipeline_plan(config, 1).critical_path_flops(100)
  model = perf_model.Pipeline(rate=one / 10.0, cores=4, calibration=("one",))  # 10 s on one device
  assert model.predict(config, 1) == pytest.approx(10.0)
  assert model.predict(dict(config, replicas_per_stage=2), 2) == pytest.approx(5.0)
  assert model.predict(dict(config, replicas_per_stage=4), 4) == pytest.approx(2.5)
  # More replicas than cores: the work is shared by the 4 cores at most.
  assert perf_model.Pipeline(one / 10.0, 2, ("one",)).predict(dict(config, replicas_per_stage=4), 4) == pytest.approx(5.0)
