"""A checkpoint written by the code before the pipeline's parts moved to common/pipeline/ and the programs called the
lifecycle themselves (tests/fixtures/checkpoints_before/: greedy and pipeline_parallel, killed after their second
checkpoint) resumes with today's code to the weights of a run never interrupted: long runs resume across those
commits."""

import os
import shutil

import numpy as np
import pytest

from common.artifacts import runlog
from common.settings import programs
from conftest import ROOT

# The flags the fixtures were made with (2 epochs, killed after the second checkpoint, i.e. mid-run).
FLAGS = dict(hidden_units=(24, 16), pretrain_epochs=2, finetune_epochs=0, train_examples=400, batch_size=40,
             pretrain_learning_rate=0.05, seed=3, kernels="tf")
OWN = {programs.GREEDY: {}, programs.PIPELINE_PARALLEL: {"num_devices": 2, "pipeline_chunk_steps": 3}}


@pytest.mark.parametrize("program", list(OWN), ids=lambda p: p.name)
def test_a_checkpoint_of_the_code_before_resumes(tmp_path, program):
  model_dir = tmp_path / "model"
  shutil.copytree(os.path.join(ROOT, "tests", "fixtures", "checkpoints_before", program.name), model_dir)

  def train(name, **kw):
    config = program.make_config(results_dir=str(tmp_path), run_name=name, export_weights=str(tmp_path / f"{name}.npz"),
                                 **FLAGS, **OWN[program], **kw)
    return program.load_library().train(config), runlog.load_weights(str(tmp_path / f"{name}.npz"))

  resumed, got = train("resumed", model_dir=str(model_dir))
  assert resumed["resumed"] is True and resumed["run_processes"] == 2
  _, want = train("whole")
  assert sorted(got) == sorted(want)
  for key in want:
    np.testing.assert_allclose(got[key], want[key], rtol=0, atol=1e-5, err_msg=key)
