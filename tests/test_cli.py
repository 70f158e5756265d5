"""Every bad command line is refused with a clear message, a non-zero exit and no traceback,
before any work starts. The programs run as subprocesses, concurrently to save time."""

import concurrent.futures
import sys

import pytest

from common.base import errors
from common.data import loader as data
from common.settings import programs

from conftest import run_module

PROGRAMS = [p.module for p in programs.PROGRAMS]

# {case: (flags, words the error must contain)}
BAD = {
    "batch_zero": (["--batch_size=0"], "--batch_size=0: must be a positive integer"),
    "batch_negative": (["--batch_size=-5"], "must be a positive integer"),
    "batch_fraction": (["--batch_size=1.5"], "--batch_size=1.5"),
    "epochs_negative": (["--pretrain_epochs=-1"], "--pretrain_epochs=-1: must be a non-negative integer"),
    "recipe_unknown": (["--recipe=fast"], "--recipe=fast: value should be one of <report|tuned|large_batch>"),
    "recipe_of_another_program": (["--recipe=large_batch"], "--recipe=large_batch sets --finetune_lr_scaling, "
                                  "--finetune_optimizer, --lr_warmup_epochs, --pretrain_lr_scaling, which this program "
                                  "does not have: it is a recipe of data_parallel."),
    "epochs_word": (["--pretrain_epochs=two"], "--pretrain_epochs"),
    "finetune_epochs_negative": (["--finetune_epochs=-1"], "non-negative"),
    "hidden_zero": (["--hidden_units=100,0"], "positive integers"),
    "hidden_word": (["--hidden_units=100,abc"], "positive integers"),
    "hidden_empty": (["--hidden_units="], "at least one layer"),
    "corruption_one": (["--corruption=1.0"], "must be in [0, 1)"),
    "corruption_negative": (["--corruption=-0.1"], "must be in [0, 1)"),
    "devices_zero": (["--num_devices=0"], "--num_devices=0"),
    "devices_too_many": (["--num_devices=1000"], "must be at most"),
    "threads_zero": (["--threads_per_device=0"], "--threads_per_device=0"),
    "examples_zero": (["--train_examples=0"], "--train_examples=0"),
    "examples_too_many": (["--train_examples=55001"], "must be in 1..55000"),
    "batch_above_examples": (["--batch_size=3000", "--train_examples=2000"], "larger than the training data"),
    "finetune_batch_above_examples": (["--finetune_batch_size=3000", "--train_examples=2000"],
                                      "larger than the training data"),
    "learning_rate_zero": (["--pretrain_learning_rate=0"], "must be positive"),
    "seed_negative": (["--seed=-1"], "--seed"),
    "unknown_flag": (["--no_such_flag=1"], "no_such_flag"),
    "stray_argument": (["stray_argument"], "Unexpected positional arguments: stray_argument"),
}


# The shared flags are defined and checked once (common/settings/flags.py): greedy gets every case above, the
# other programs a sample of them (one of each kind of check) plus their own flags (each case is one
# process start, ~4 s).
SAMPLE = ("batch_zero", "epochs_negative", "recipe_unknown", "corruption_one", "devices_too_many", "examples_too_many", "batch_above_examples",
          "unknown_flag", "stray_argument")
OWN = {
    programs.PIPELINE_PARALLEL.module: {
        "chunk_zero": (["--pipeline_chunk_steps=0"], "--pipeline_chunk_steps=0: must be a positive integer"),
        "chunk_negative": (["--pipeline_chunk_steps=-3"], "must be a positive integer"),
        "replicas_zero": (["--replicas_per_stage=0"], "--replicas_per_stage=0: must be a positive integer"),
        "devices_not_multiple": (["--replicas_per_stage=2", "--num_devices=3"],
                                 "not a multiple of --replicas_per_stage=2"),
        "batch_not_divisible": (["--replicas_per_stage=2", "--num_devices=2", "--batch_size=51"],
                                "--batch_size=51 is not divisible by --replicas_per_stage=2"),
    },
    programs.DATA_PARALLEL.module: {
        "indivisible_batch": (["--num_devices=2", "--batch_size=101"], "divisible"),
        "unknown_scaling": (["--pretrain_lr_scaling=cubic"], "--pretrain_lr_scaling"),
        "warmup_negative": (["--lr_warmup_epochs=-1"], "--lr_warmup_epochs"),
        "old_name_warmup_negative": (["--warmup_epochs=-1"], "--warmup_epochs"),
        "momentum_one": (["--finetune_momentum=1.0"], "--finetune_momentum"),
        "momentum_with_adam": (["--finetune_optimizer=adam", "--finetune_momentum=0.9"],
                               "applies to --finetune_optimizer=sgd only"),
    },
}
CASES = {program: {**(BAD if program == programs.GREEDY.module else {name: BAD[name] for name in SAMPLE}),
                   **OWN.get(program, {})} for program in PROGRAMS}


@pytest.fixture(scope="module")
def results(tmp_path_factory):
  """Runs every (program, bad flags) pair concurrently; returns {(program, case): CompletedProcess}."""
  runs = {}
  with concurrent.futures.ThreadPoolExecutor(max_workers=4) as pool:
    for program in PROGRAMS:
      for case, (flags, _) in CASES[program].items():
        runs[(program, case)] = pool.submit(run_module, program, *flags, "--results_dir=", timeout=600)
    empty = str(tmp_path_factory.mktemp("no_mnist"))
    for program in PROGRAMS:
      runs[(program, "no_data")] = pool.submit(
          run_module, program, "--hidden_units=8", "--pretrain_epochs=1", "--finetune_epochs=0",
          "--train_examples=100", "--results_dir=", env={"TFDS_DATA_DIR": empty}, timeout=600)
    return {k: f.result() for k, f in runs.items()}


@pytest.mark.parametrize("program,case", [(p, c) for p in PROGRAMS for c in CASES[p]],
                         ids=[f"{p}:{c}" for p in PROGRAMS for c in CASES[p]])
def test_bad_flag_is_refused_cleanly(results, program, case):
  proc = results[(program, case)]
  expected = CASES[program][case][1]
  assert proc.returncode != 0
  assert "Traceback" not in proc.stderr
  assert expected in proc.stderr, proc.stderr[-2000:]
  # Refused before any work: no data loaded, no device set up.
  assert "Load dataset info" not in proc.stderr and "logical CPU device" not in proc.stderr


@pytest.mark.skipif(data._online(), reason="with a network tfds downloads MNIST instead of failing")
@pytest.mark.parametrize("program", PROGRAMS)
def test_missing_mnist_offline_names_tfds_data_dir(results, program):
  proc = results[(program, "no_data")]
  assert proc.returncode == 1
  assert "Traceback" not in proc.stderr
  assert "TFDS_DATA_DIR" in proc.stderr
  assert len([l for l in proc.stderr.splitlines() if l.startswith("error:")]) == 1


def test_flags_are_checked_before_tensorflow_is_imported():
  """Every program's entry point defines and checks its flags without importing TensorFlow, so a bad flag is
  refused in a fraction of a second; the library (and TensorFlow) loads in main, once the flags are valid."""
  import subprocess
  import sys
  from conftest import ROOT, fresh_python
  code = ("import sys, importlib\n"
          f"for m in {PROGRAMS!r}:\n"
          "  importlib.import_module(m)\n"
          "  print(m, 'tensorflow' in sys.modules)\n")
  out = subprocess.run([fresh_python(), "-c", code], cwd=ROOT, capture_output=True, text=True, check=True).stdout
  assert out.split() == [w for p in PROGRAMS for w in (p, "False")]


def test_an_error_or_note_line_is_one_write_so_another_threads_log_line_cannot_split_it(monkeypatch):
  """`print` writes a line and its newline in two writes; a coordinator thread's log line once landed between them
  (the lost-worker note of tests/test_slurm.py). `errors.print_line` writes the whole line at once."""
  writes = []

  class Recorder:
    def write(self, text):
      writes.append(text)

    def flush(self):
      writes.append("<flush>")

  monkeypatch.setattr(sys, "stderr", Recorder())
  errors.print_line("note: worker 0 was lost")
  assert writes == ["note: worker 0 was lost\n", "<flush>"]
