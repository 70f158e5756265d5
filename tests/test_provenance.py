"""Every number names its machine and code: a record written today carries its provenance, and every committed record
but the exempt ones (older machines and studies, kept as they were) names a commit and a processor (a full-size one
its processor's flags too)."""

import json
import os
import re

from common.measure import provenance
from common.settings import config as config_lib
from common.settings import processor_defaults
from common.settings import programs
from greedy import pretrain as greedy
from conftest import ROOT, SLICE_EXAMPLES

HEX40 = re.compile(r"^[0-9a-f]{40}$")
# Kept as they were (each table labels them): the 16-core machine's records of commit 4a53c80 and the
# devices_beyond_cores study (commit f0f06ab and its fix).
EXEMPT = ("results/xeon16/", "results/benchmarks/devices_beyond_cores/")
# Folders whose every record names the processor's flags too (made after records kept them).
WITH_FLAGS = ("results/full_size/",)
FIELDS = ("commit", "commit_dirty", "code_digest", "cpu_model", "cpu_flags", "usable_cores", "kernels", "thread_pool", "precision")


def test_a_record_written_today_names_its_code_machine_and_settings(tmp_path):
  record = greedy.train(config_lib.Config(hidden_units=(16,), pretrain_epochs=1, finetune_epochs=0,
                                        train_examples=SLICE_EXAMPLES, batch_size=100, results_dir=str(tmp_path),
                                        run_name="g"))
  env = json.load(open(tmp_path / "g.json"))["environment"]
  assert env == record["environment"]
  assert all(env.get(f) is not None for f in FIELDS), {f: env.get(f) for f in FIELDS}
  assert HEX40.match(env["commit"]) and env["commit"] == provenance.commit()  # this is a git checkout
  assert env["cpu_model"] == provenance.cpu_model() and env["usable_cores"] == provenance.usable_cores()
  assert env["cpu_flags"] == provenance.cpu_flags() and isinstance(env["cpu_flags"], list)
  assert (env["kernels"], env["thread_pool"], env["precision"]) == (
      programs.GREEDY.default_kernels(), programs.GREEDY.default_thread_pool(), programs.PRECISIONS[0])
  assert len(env["code_digest"]) == 16
  # Which processor class's measurements gave each `auto` choice (None: the program's declared default).
  assert env["auto_from"] == processor_defaults.sources(programs.GREEDY.name, programs.PRECISIONS[0])
  assert env["auto_from"]["class"] == provenance.instruction_set(env["cpu_flags"])


def test_the_instruction_set_is_read_from_cpuinfo_and_named_by_class(tmp_path):
  epyc, amx, arm = tmp_path / "epyc", tmp_path / "amx", tmp_path / "arm"
  epyc.write_text("processor\t: 0\nmodel name\t: AMD EPYC\nflags\t\t: fpu avx2 avx512f avx512_bf16 avx512_vnni sse\n")
  amx.write_text("flags\t: avx2 avx512f amx_bf16 amx_tile avx512_bf16\nflags\t: ignored_second_cpu\n")
  arm.write_text("Features\t: fp asimd bf16 i8mm\n")
  assert provenance.cpu_flags(str(epyc)) == ["avx2", "avx512f", "avx512_bf16", "avx512_vnni"]
  assert provenance.cpu_flags(str(amx)) == ["avx2", "avx512f", "avx512_bf16", "amx_tile", "amx_bf16"]
  assert provenance.cpu_flags(str(tmp_path / "missing")) == []
  assert [provenance.instruction_set(provenance.cpu_flags(str(p))) for p in (epyc, amx, arm)] == [
      "AVX-512 BF16", "AMX", "NEON BF16"]
  assert provenance.instruction_set(["avx2"]) == "AVX2" and provenance.instruction_set(None) is None


def test_the_code_digest_ignores_results_docs_and_markdown(tmp_path, monkeypatch):
  files = {"common/a.py": "x = 1\n", "docs/b.md": "one\n", "results/r.json": "{}\n", "README.md": "hi\n"}
  for path, text in files.items():
    os.makedirs(tmp_path / os.path.dirname(path), exist_ok=True)
    (tmp_path / path).write_text(text)
  monkeypatch.setattr(provenance, "ROOT", str(tmp_path))
  monkeypatch.setattr(provenance, "_git", lambda *args: "\n".join(files) if args[0] == "ls-files" else None)
  digest = provenance.code_digest.__wrapped__()
  for path in ("docs/b.md", "results/r.json", "README.md"):
    (tmp_path / path).write_text("changed\n")
  assert provenance.code_digest.__wrapped__() == digest
  (tmp_path / "common/a.py").write_text("x = 2\n")
  assert provenance.code_digest.__wrapped__() != digest


def test_a_changed_record_or_doc_is_not_dirty_code_a_changed_code_file_is():
  # The first line keeps its leading status column: " M results/..." once read as the code file "esults/...".
  assert not provenance.status_has_code(" M results/runs/driver_log.jsonl\n?? docs/new.md\n M README.md\n")
  assert provenance.status_has_code(" M results/runs/driver_log.jsonl\n M common/data/loader.py\n")
  assert provenance.status_has_code("?? experiments/new.py\n")
  assert provenance.status_has_code("R  common/old.py -> common/new.py\n")


def test_every_committed_record_names_a_commit_and_a_processor_and_a_full_size_one_its_flags():
  missing = []
  for folder, _, names in os.walk(os.path.join(ROOT, "results")):
    for name in (n for n in names if n.endswith(".json")):
      path = os.path.relpath(os.path.join(folder, name), ROOT).replace(os.sep, "/")
      record = json.load(open(os.path.join(ROOT, path)))
      env = record.get("environment") if isinstance(record, dict) else None
      if env is None or path.startswith(EXEMPT):
        continue  # summaries and driver logs name their records; those are checked themselves
      if not HEX40.match(str(env.get("commit"))) or not env.get("cpu_model") or (
          path.startswith(WITH_FLAGS) and not isinstance(env.get("cpu_flags"), list)):
        missing.append(path)
  assert not missing, f"{len(missing)} records without a commit, a processor or (in {WITH_FLAGS}) the processor's " \
                      f"flags, e.g. {missing[:5]}"
