"""The program registry (`common/settings/programs.py`, each program's `<name>/program.py`) is the one place a program is
declared: every registered program runs from the command line, nothing else names a program by a string, the
generic code names no program at all, no strategy imports another, and the registry imports no TensorFlow."""

import ast
import concurrent.futures
import os
import re
import subprocess
import sys

import pytest

from common import launch
from common.settings import programs

from conftest import ROOT, fresh_python, run_module


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
  """A list of programs, a comparison or a test names a program through `common.settings.programs`, never by a string
  literal equal to its name or its module (prose inside longer strings and docstrings is not such a literal); only
  the registry, the two tables below it keyed by name (the measured defaults made from the records,
  `processor_defaults.TABLE`, and the recipes' values for one program, `recipes.Recipe.program_values`, whose names
  `tests/test_recipes.py` checks against the registry) and the program's own folder spell its name."""
  found = []
  below = [os.path.join("common", "settings", f"{m}.py") for m in ("programs", "processor_defaults", "recipes")]
  for path in _python_files():
    if path in below + [EXTENDING]:
      continue
    names = {n for p in programs.PROGRAMS if not path.startswith(p.name + os.sep) for n in (p.name, p.module)}
    for node in ast.walk(_tree(path)):
      if isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value in names:
        found.append(f"{path}:{node.lineno}: {node.value!r}")
  assert not found, "\n".join(found)



def test_graph_code_is_traced_without_autograph():
  """The programs and common/ make graphs through `common.model.graph.function` (AutoGraph off), never `tf.function`
  itself (tests and experiments may)."""
  found = [f"{path}:{node.lineno}" for path in _python_files() if not path.startswith(("tests", "experiments"))
           and path != os.path.join("common", "model", "graph.py") for node in ast.walk(_tree(path))
           if isinstance(node, ast.Attribute) and node.attr == "function" and isinstance(node.value, ast.Name)
           and node.value.id == "tf"]
  assert not found, "tf.function outside common/model/graph.py: " + ", ".join(found)

# The test that registers a seventh program by name in a copy of the repository (its name is a program's there).
EXTENDING = os.path.join("tests", "test_extending.py")
# The generic code: it asks a program's capabilities (`common.settings.programs.Program`) and names none.
GENERIC = ("common/run/lifecycle.py", "common/run/cli.py", "common/settings/flags.py", "common/settings/config.py",
           "common/measure/cost.py", "common/launch.py", "experiments/driver.py", "experiments/records.py",
           "experiments/reproduce.py", "experiments/harness.py", "experiments/render/series.py")


def test_generic_code_names_no_program():
  """No `programs.<NAME>` (a program by its registry name), no program's folder imported, no hand-written list of
  programs in the generic modules: they derive from `programs.PROGRAMS`, `programs.baseline()` and capabilities."""
  found = []
  for path in GENERIC:
    for node in ast.walk(_tree(path)):
      if isinstance(node, ast.Attribute) and node.attr.lower() in programs.NAMES:
        found.append(f"{path}:{node.lineno}: .{node.attr}")
      if isinstance(node, (ast.Import, ast.ImportFrom)):
        modules = [a.name for a in node.names] if isinstance(node, ast.Import) else [node.module or ""]
        found += [f"{path}:{node.lineno}: import {m}" for m in modules if m.split(".")[0] in programs.NAMES]
  assert not found, "\n".join(found)


def test_the_registry_imports_no_tensorflow():
  """Flags are parsed before TensorFlow loads: the registry and every program's declaration import none of it."""
  code = ("import sys; from common.settings import programs; programs.PROGRAMS; "
          "assert 'tensorflow' not in sys.modules, sorted(m for m in sys.modules if 'tensorflow' in m)[:5]")
  proc = subprocess.run([fresh_python(), "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=600)
  assert proc.returncode == 0, proc.stderr[-2000:]


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


def test_the_readme_layout_names_every_common_package():
  """Every sub-package of `common/` and every module at its top level (but `__init__.py`) is named in the README's
  Layout block."""
  with open(os.path.join(ROOT, "README.md")) as f:
    layout = f.read().split("## Layout", 1)[1].split("```")[1]
  common = [p.split(os.sep)[1:] for p in _python_files() if p.startswith("common" + os.sep)]
  names = {f"{parts[0]}/" if len(parts) > 1 else parts[0] for parts in common} - {"__init__.py"}
  assert len(names) >= 12, sorted(names)
  assert [n for n in sorted(names) if re.search(rf"(?<![\w./]){re.escape(n)}", layout) is None] == []


def test_every_program_has_its_declaration_entry_point_and_library():
  """Its folder holds `program.py` (the object), `train.py` (flags and one call) and its library's module, which
  defines its schedule `pretrain` and the library entry `train`."""
  for program in programs.PROGRAMS:
    for module in ("program.py", "train.py"):
      assert os.path.exists(os.path.join(ROOT, program.name, module)), (program.name, module)
    library = _tree(program.library.replace(".", os.sep) + ".py")
    defined = {node.name for node in library.body if isinstance(node, ast.FunctionDef)}
    assert {"pretrain", "train"} <= defined, program.name


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
