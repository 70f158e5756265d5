"""The performance model on synthetic timings where the answer is known exactly (no TensorFlow runs)."""

import os

import pytest

from experiments import perf_model
from experiments import records
from common import layerwise_schedule as schedule_lib
from tests.fixtures import make_records

FIXTURES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "fixtures", "records")


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


def test_model_parallel_prediction_follows_the_programs_schedule():
  # With a core per device and no slowdown or copies, a step lasts as long as its slowest active layer:
  # the model is the schedule's critical path, for every grouping (the model uses model_parallel's Schedule).
  t = [1.0, 3.0, 2.0, 5.0, 4.0]
  for g in range(1, 6):
    for e in (1, 2, 5):
      schedule = schedule_lib.Schedule(len(t), g, e)
      assert perf_model.predict_model_parallel(t, e, g, cores=g) == pytest.approx(schedule.critical_path(t))
  # Synchronized layer-wise: the same steps with all layers in one group, one after another.
  assert perf_model.predict_sync_layerwise(t, 2) == pytest.approx(
      schedule_lib.Schedule(len(t), len(t), 2).critical_path(t, concurrent=False))


def test_model_parallel_prediction_by_hand():
  t = [1.0, 2.0, 3.0, 4.0]
  # One device: greedy, 10 epochs of every layer.
  assert perf_model.predict_model_parallel(t, 10, 1, cores=2) == pytest.approx(100.0)
  assert perf_model.predict_greedy(t, 10) == pytest.approx(100.0)
  # Four devices on four cores: steps last 1, 2, 3, then ten steps of the slowest layer (4 s).
  assert perf_model.predict_model_parallel(t, 10, 4, cores=4) == pytest.approx(1 + 2 + 3 + 40)
  # Two devices on two cores: group (1, 2): 1 + 10 x 2; group (3, 4): 3 + 10 x 4.
  assert perf_model.predict_model_parallel(t, 10, 2, cores=2) == pytest.approx(21 + 43)
  # With copies: per step of group (1, 2) layer 1 (params 10) is copied once; of group (3, 4) layer 3 (30).
  params = [10, 20, 30, 40]
  assert perf_model.predict_model_parallel(t, 10, 2, cores=2, copy_seconds_per_param=0.01, params=params) == \
      pytest.approx(64 + 11 * 0.1 + 11 * 0.3)
  # Oversubscribed: four devices on two cores can never beat (total work) / 2.
  work = sum(t[k] * (13 - k) for k in range(4))  # layer k trains E + G - 1 - k epochs
  assert perf_model.predict_model_parallel(t, 10, 4, cores=2) >= work / 2
  assert perf_model.copied_params([0, 1, 2], params) == 2 * 10 + 1 * 20


def test_work_seconds_counts_every_layer_epoch_of_the_schedule():
  t = (1.0, 2.0)
  mp = perf_model.Model("model_parallel", t, cores=2)
  # Greedy (G = 1): 3 epochs of each layer. G = 2: layer 1 trains E + 1 = 4 epochs, layer 2 trains 3.
  assert mp.work_seconds([10, 10], 3, 1) == pytest.approx(3 * (1 + 2))
  assert mp.work_seconds([10, 10], 3, 2) == pytest.approx(4 * 1 + 3 * 2)
  # Two devices on two cores, no slowdown: steps last 1, 2, 2, 2 s, so 10 s of work in 7 s.
  assert mp.work_seconds([10, 10], 3, 2) / mp.predict([10, 10], 3, 2) == pytest.approx(10 / 7)
  dp = perf_model.Model("data_parallel", t, cores=2)
  assert dp.work_seconds([10, 10], 3, 4) == pytest.approx(9.0)


def test_data_parallel_prediction_by_hand():
  # f = 0.75 of a 2 s epoch splits over G = 2 replicas on 2 cores: 0.75 + 0.5 per epoch.
  assert perf_model.predict_data_parallel([2.0], 4, 2, cores=2, parallel_fraction=0.75) == pytest.approx(4 * 1.25)
  # G = 4 on 2 cores: the compute part still splits over only 2 cores.
  assert perf_model.predict_data_parallel([2.0], 1, 4, cores=2, parallel_fraction=0.75) == pytest.approx(1.25)
  # All-reduce: S steps x (G - 1) transfers x P params x gamma.
  assert perf_model.predict_data_parallel([2.0], 1, 3, cores=4, parallel_fraction=1.0, allreduce_seconds_per_param=1e-3,
                                          params=[100], steps_per_epoch=5) == pytest.approx(2 / 3 + 5 * 2 * 100 * 1e-3)
  # One device: no all-reduce, no slowdown.
  assert perf_model.predict_data_parallel([2.0], 3, 1, cores=2, slowdown=1.3, allreduce_seconds_per_param=1.0,
                                          params=[100], steps_per_epoch=5) == pytest.approx(6.0)


def test_fit_scalar_finds_the_known_minimum():
  assert perf_model.fit_scalar(lambda x: [10 * x, 20 * x], [13.0, 26.0]) == pytest.approx(1.3, abs=1e-9)
  assert perf_model.fit_scalar(lambda x: [10 * x], [5.0]) == pytest.approx(1.0, abs=1e-9)  # clipped at low
  assert perf_model.fit_scalar(lambda x: [x], []) == 1.0


def _entry(entry):
  data = records.EntryData.load(FIXTURES, entry)
  assert data is not None and data.preset == "cpu"
  return data.runs


def test_calibration_recovers_the_parameters_the_timings_were_made_with():
  # The fixture records were generated by the model with known rho and kappa (tests/fixtures/make_records.py),
  # stored to 6 significant digits.
  runs = _entry("mp_scaling_b5000")
  model = perf_model.calibrate_model_parallel(runs)
  assert model.slowdown == pytest.approx(make_records.FIXTURE_SLOWDOWN, rel=1e-4)
  assert model.copy_seconds_per_param == pytest.approx(make_records.FIXTURE_COPY_SECONDS_PER_PARAM, rel=1e-3)
  assert model.cores == make_records.CORES
  predictions = perf_model.predictions(model, runs)
  assert len(predictions) == 9
  assert max(abs(p.relative_error) for p in predictions) < 1e-3
  assert {p.name for p in predictions if p.in_calibration} == {"h2_g1", "h3_g1", "h4_g1", "h2_g2", "h3_g2", "h4_g2"}
  assert {p.devices for p in predictions if p.oversubscribed} == {3, 4}
  # The curve goes to 8 devices; beyond H devices model parallel cannot go faster.
  curve = model.curve((2000,) * 4, 10)
  assert sorted(curve) == list(range(1, 9)) and curve[8] == pytest.approx(curve[4])


def test_data_parallel_calibration_recovers_fraction_and_allreduce_cost():
  runs = _entry("dp_scaling")
  model = perf_model.calibrate_data_parallel(runs)
  assert model.parallel_fraction == pytest.approx(make_records.FIXTURE_PARALLEL_FRACTION, rel=1e-4)
  assert model.allreduce_seconds_per_param == pytest.approx(make_records.FIXTURE_ALLREDUCE_SECONDS_PER_PARAM, rel=1e-4)
  assert model.slowdown == pytest.approx(make_records.FIXTURE_SLOWDOWN, rel=1e-4)
  assert max(abs(p.relative_error) for p in perf_model.predictions(model, runs)) < 1e-4


def test_a_wrong_model_shows_its_error():
  # Calibrated on batch-5000 timings, the model mispredicts the batch-100 runs (other examples): the
  # relative errors must say so rather than hide it.
  model = perf_model.calibrate_model_parallel(_entry("mp_scaling_b5000"))
  predictions = perf_model.predictions(model, _entry("mp_scaling_b100"))
  assert min(abs(p.relative_error) for p in predictions) > 0.5
  with pytest.raises(ValueError, match="one device"):
    perf_model.calibrate_model_parallel({k: v for k, v in _entry("mp_scaling_b100").items() if not k.endswith("g1")})
