"""The entry point every `*/train.py` calls (`main`): key flags, stray arguments, the library call, error
reporting and the summary line."""

import sys
from typing import Any, Callable, Dict

from absl import app
from absl import flags

from common.base import errors
from common.data import sources
from common.settings import flags as common_flags
from common.settings import programs


def main(program: programs.Program) -> None:
  """Runs a training program from the command line: `python -m <program>.train [flags]`.

  Its flags derive from its `Config` class (`common.settings.flags.define`: the shared settings and its own), all listed as
  its key flags (`--helpshort`). Once they are valid, its hooks' module (and with it TensorFlow) is imported and its
  `train(config)` called (`run_program`; `common.run.lifecycle.train`), so a bad flag is refused before TensorFlow starts;
  so is a bad `--dataset=npz:PATH` (`check_npz`).

  Args:
    program: the registered program.
  """
  # The registry's entry: every registered program's settings are loaded with it, so a recipe refused here names
  # the programs it is of (`common.settings.config`).
  program = programs.get(program.name)
  for name in common_flags.define(program.config):
    flags.FLAGS.register_key_flag_for_module(sys.argv[0], flags.FLAGS[name])

  def _main(argv):
    reject_extra_args(argv)
    config = common_flags.config_from_flags(program)

    def train(c):
      check_npz(c)
      return program.load_hooks().train(c)
    run_program(train, config)

  app.run(_main)


def reject_extra_args(argv) -> None:
  """Exits with status 2 and one line (not absl's usage page, which lists every flag since --help shows the
  shared flags) when positional arguments follow the program name."""
  if len(argv) > 1:
    print(f"error: Unexpected positional arguments: {' '.join(argv[1:])} (flags are --name=value; --helpshort "
          "lists them)", file=sys.stderr)
    sys.exit(2)


def check_npz(config: Any) -> None:
  """For `--dataset=npz:PATH`, reads and checks the file and checks the settings against it (numpy only, so the
  one-line refusal comes before TensorFlow starts); nothing for a tfds dataset, whose checks need tfds.

  Raises:
    errors.DataError, ValueError: one line (`common.data.sources.load_npz`, `Config.check_data`).
  """
  if config.dataset.startswith(sources.NPZ_PREFIX):
    config.check_data(sources.load_npz(config.dataset)[0])


def run_program(run: Callable[..., Dict[str, Any]], config: Any) -> Dict[str, Any]:
  """Calls `run(config)` and prints its summary line.

  A UserError or ValueError becomes one "error: ..." line and exit status 1 (no line for a
  ReportedByAnotherTaskError: another task of the cluster prints it). Ctrl-C (KeyboardInterrupt,
  raised between two chunks of steps) becomes one line saying how to resume, and exit status 130 (the
  shell's code for SIGINT); the partial epoch is discarded, and a resumed run restarts it from the last
  epoch checkpoint, exactly.

  Returns:
    The run record. Prints the headline numbers, and the record's warnings.
  """
  try:
    record = run(config)
  except errors.ReportedByAnotherTaskError:
    sys.exit(1)  # Task 0 of the job prints the line.
  except (errors.UserError, ValueError) as e:
    print(f"error: {e}", file=sys.stderr)
    sys.exit(1)
  except KeyboardInterrupt:
    if config.model_dir:
      how = (f"the checkpoints in --model_dir={config.model_dir} are kept: rerun the same command to resume "
             "from the last finished epoch.")
    else:
      how = "nothing was saved (no --model_dir); give --model_dir to make a run resumable."
    print(f"\ninterrupted: {how}", file=sys.stderr, flush=True)
    sys.exit(130)
  summary = f"pretraining {record['pretrain_seconds']:.1f} s"
  if record.get("finetune"):
    f = record["finetune"]
    summary += f", finetuning {f['seconds']:.1f} s, test accuracy {f['test_accuracy']:.4f}"
  total = f"this process {record['total_seconds']:.1f} s"
  if record.get("resumed"):
    total += f"; whole run {record['run_seconds']:.1f} s over {record['run_processes']} processes"
  print(f"{config.program}: {summary} ({total})")
  for warning in record.get("warnings", []):
    print(f"WARNING: {warning}", file=sys.stderr)
  return record
