"""The program registry (`common/programs.py`) is the one place a program is declared: every registered program
runs from the command line, nothing else names a program by a string, no strategy imports another."""

import ast
import concurrent.futures
import os
import subprocess

import pytest

from common import launch
from common import programs

from conftest import ROOT, run_module


def _python_files():
  listed = subprocess.run(["git", "ls-files", "--cached", "--others", "--exclude-standard", "*.py"], cwd=ROOT,
                          capture_output=True, text=True, check=True).stdout.split()
  return [p for p in listed if os.path.exists(os.path.join(ROOT, p))]


def _tree(path):
  with open(os.path.join(ROOT, path)) as f:
    return ast.parse(f.read(), path)


def test_every_registered_program_parses_help():
  """`--helpshort` lists the shared flags as the program's own (and its own flags); `--help` all flags."""
  runs = [(p.module, "--helpshort") for p in programs.PROGRAMS] + [(programs.GREEDY.module, "--help")]
  with concurrent.futures.ThreadPoolExecutor(max_workers=4) as pool:
    procs = dict(zip(runs, pool.map(lambda r: run_module(*r, timeout=300), runs)))
  for (module, _), proc in procs.items():
    text = proc.stdout + proc.stderr
    assert "Traceback" not in text, (module, text[-3000:])
    assert "--hidden_units: Hidden units of each autoencoder layer" in text, (module, text[-3000:])
    assert "(default: '2000,2000,2000,2000')" in text, module
    assert "--model_dir:" in text and "--threads_per_device:" in text, module
  assert "--pipeline_chunk_steps:" in procs[(programs.PIPELINE_PARALLEL.module, "--helpshort")].stdout


def test_no_string_names_a_program_outside_the_registry():
  """A list of programs, a comparison or a test names a program through `common.programs`, never by a string
  literal equal to its name or its module (prose inside longer strings and docstrings is not such a literal)."""
  names = set(programs.NAMES) | {p.module for p in programs.PROGRAMS}
  found = []
  for path in _python_files():
    if path == os.path.join("common", "programs.py"):
      continue
    for node in ast.walk(_tree(path)):
      if isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value in names:
        found.append(f"{path}:{node.lineno}: {node.value!r}")
  assert not found, "\n".join(found)


def test_no_strategy_imports_another():
  for program in programs.PROGRAMS:
    others = set(programs.NAMES) - {program.name}
    for path in (p for p in _python_files() if p.startswith(program.name + os.sep)):
      for node in ast.walk(_tree(path)):
        if isinstance(node, ast.Import):
          modules = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
          modules = [node.module or ""]
        else:
          continue
        assert not {m.split(".")[0] for m in modules} & others, (path, node.lineno, modules)


def test_every_program_has_its_entry_point_and_library():
  for program in programs.PROGRAMS:
    for module in ("train.py", "pretrain.py"):
      assert os.path.exists(os.path.join(ROOT, program.name, module)), (program.name, module)
    assert any(isinstance(node, ast.FunctionDef) and node.name == "run"
               for node in _tree(os.path.join(program.name, "pretrain.py")).body), program.name


def test_launcher_and_lookups_derive_from_the_registry():
  assert launch.PROGRAMS == {p.module for p in programs.PROGRAMS if p.cluster != "none"}
  assert launch.CLIENT_SERVER_PROGRAMS == {p.module for p in programs.with_cluster("client_server")}
  assert programs.get(programs.MODEL_PARALLEL.name) is programs.MODEL_PARALLEL
  with pytest.raises(ValueError, match="unknown program 'no_such_program'"):
    programs.get("no_such_program")
  assert len({p.run_name for p in programs.PROGRAMS}) == len(programs.PROGRAMS)
  assert len({p.color for p in programs.PROGRAMS}) == len(programs.PROGRAMS)
  for program in programs.PROGRAMS:
    for precision in programs.PRECISIONS:
      assert program.default_kernels(precision) in ("tf", "xla")
      assert program.default_thread_pool(precision) in ("per_device", "shared")
