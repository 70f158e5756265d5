"""What every `*/train.py` calls around its one library call (greedy/train.py reads as all of them do): its flags
(`define`, before absl parses the command line), its configuration once they are valid (`config`), errors as one line
(`reported`) and the summary line (`summary`). TensorFlow loads only after the flags are valid."""

import contextlib
import sys
from typing import Any, Dict, Iterator

from absl import flags

from common.base import errors
from common.data import sources
from common.settings import flags as common_flags
from common.settings import programs


def define(program: programs.Program) -> None:
  """Defines the flags of `program` (`common.settings.flags.define`: the shared settings and its own, from its `Config`
  class), each listed as a key flag of the program's module (`--helpshort`). Call it before `absl.app.run`."""
  # The registry's entry: every registered program's settings are loaded with it, so a recipe refused here names
  # the programs it is of (`common.settings.config`).
  program = programs.get(program.name)
  for name in common_flags.define(program.config):
    flags.FLAGS.register_key_flag_for_module(sys.argv[0], flags.FLAGS[name])


def config(program: programs.Program, argv) -> Any:
  """The run's configuration from the parsed flags of `program`, once they are valid (absl has checked each flag and
  the cross-field rules): stray positional arguments, and a bad `--dataset=npz:PATH` (`check_npz`), end the process
  with one line before TensorFlow starts (status 2 and 1)."""
  reject_extra_args(argv)
  config_ = common_flags.config_from_flags(program)
  with reported(config_):
    check_npz(config_)
  return config_


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


@contextlib.contextmanager
def reported(config: Any) -> Iterator[None]:
  """Runs the block as a command line reports it: a UserError or ValueError becomes one "error: ..." line and exit
  status 1 (no line for a ReportedByAnotherTaskError: another task of the cluster prints it). Ctrl-C
  (KeyboardInterrupt, raised between two chunks of steps) becomes one line saying how to resume, and exit status 130
  (the shell's code for SIGINT); the partial epoch is discarded, and a resumed run restarts it from the last epoch
  checkpoint, exactly."""
  try:
    yield
  except errors.ReportedByAnotherTaskError:
    sys.exit(1)  # Task 0 of the job prints the line.
  except (errors.UserError, ValueError) as e:
    errors.print_line(f"error: {e}")
    sys.exit(1)
  except KeyboardInterrupt:
    if config.model_dir:
      how = (f"the checkpoints in --model_dir={config.model_dir} are kept: rerun the same command to resume "
             "from the last finished epoch.")
    else:
      how = "nothing was saved (no --model_dir); give --model_dir to make a run resumable."
    print(f"\ninterrupted: {how}", file=sys.stderr, flush=True)
    sys.exit(130)


def summary(config: Any, record: Dict[str, Any]) -> Dict[str, Any]:
  """Prints the run's summary line (pretraining and finetuning seconds, test accuracy) and the record's warnings;
  returns the record."""
  line = f"pretraining {record['pretrain_seconds']:.1f} s"
  if record.get("finetune"):
    f = record["finetune"]
    line += f", finetuning {f['seconds']:.1f} s, test accuracy {f['test_accuracy']:.4f}"
  total = f"this process {record['total_seconds']:.1f} s"
  if record.get("resumed"):
    total += f"; whole run {record['run_seconds']:.1f} s over {record['run_processes']} processes"
  print(f"{config.program}: {line} ({total})")
  for warning in record.get("warnings", []):
    print(f"WARNING: {warning}", file=sys.stderr)
  return record
