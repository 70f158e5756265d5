"""One name per concept (docs/README.md, glossary), with the old names still working: `--warmup_epochs` is now
`--lr_warmup_epochs` (data_parallel's rate warm-up, apart from every program's `--layer_warmup_epochs`) and the old
flag still works with a one-line notice; a record or checkpoint that names the old setting still belongs to its run;
the compile phase's timing key is "compile", an older record's "warmup" still read."""

import json

from common.measure import timing
from common.settings import config as config_lib
from common.settings import programs
from conftest import SLICE_EXAMPLES, run_module

DP = programs.DATA_PARALLEL


def test_the_old_flag_name_still_works_with_a_one_line_notice(tmp_path):
  proc = run_module(DP.module, "--hidden_units=8", "--pretrain_epochs=1", "--finetune_epochs=0", "--batch_size=100",
                    f"--train_examples={SLICE_EXAMPLES // 4}", "--num_devices=2", "--warmup_epochs=0.5",
                    "--pretrain_lr_scaling=linear", "--reference_batch_size=50", "--nopictures", "--progress=log",
                    f"--results_dir={tmp_path}", "--run_name=old")
  assert proc.returncode == 0, proc.stderr[-3000:]
  notices = [line for line in proc.stderr.splitlines() if line.startswith("notice:")]
  assert notices == ["notice: --warmup_epochs is now --lr_warmup_epochs; the old name still works."]
  record = json.load(open(tmp_path / "old.json"))
  assert record["config"]["lr_warmup_epochs"] == 0.5 and "warmup_epochs" not in record["config"]


def test_a_record_with_the_old_setting_name_still_belongs_to_its_run():
  config = DP.make_config(num_devices=2, lr_warmup_epochs=2.0)
  saved = dict(config.to_dict())
  saved["warmup_epochs"] = saved.pop("lr_warmup_epochs")  # a record made before the rename
  assert config_lib.stale_settings(config, saved) == []
  saved["warmup_epochs"] = 1.0
  assert config_lib.stale_settings(config, saved) == ["lr_warmup_epochs"]


def test_the_compile_phase_is_read_under_its_name_or_the_old_one():
  assert timing.COMPILE_PHASE == "compile"
  assert timing.compile_seconds({"compile": 2.0}) == 2.0 and timing.compile_seconds({"warmup": 3.0}) == 3.0
  assert timing.compile_seconds({"finetune_warmup": 1.5}, timing.FINETUNE_COMPILE_PHASE) == 1.5
  assert timing.compile_seconds({}) is None


def test_the_tick_time_tails_are_nearest_rank_percentiles():
  assert timing.tail_summary([]) is None
  tails = timing.tail_summary([float(s) for s in range(100, 0, -1)])  # 1 .. 100 seconds, in any order
  assert tails == {"count": 100, "mean": 50.5, "median": 50.5, "p90": 90.0, "p99": 99.0, "max": 100.0}
  assert timing.tail_summary([2.0]) == {"count": 1, "mean": 2.0, "median": 2.0, "p90": 2.0, "p99": 2.0, "max": 2.0}
