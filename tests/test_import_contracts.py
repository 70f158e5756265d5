"""The import order of the project, stated in `.importlinter` and checked by import-linter (`lint-imports`): the layers
of experiments/ (declarations and records, helpers, studies and benchmarks, the report, reproduce) and of common/,
the six programs above common/, no study file importing another, and no cycle among siblings anywhere. Read from the
source (grimp), every import statement, those inside functions included. `common/` holds only its layers' packages
and its two commands; the longest chain of imports among experiments/' modules has at most 5 modules; and a copy of
the tree with one upward import added is refused."""

import configparser
import os
import re
import shutil
import subprocess

import grimp
import pytest

from conftest import ROOT
import import_contracts

# common/'s layers, bottom first; siblings of one layer (independent of each other) joined by " | ".
COMMON_LAYERS = ["base", "data", "measure", "settings", "model", "distribute", "training", "artifacts", "run",
                 "layerwise | pipeline"]
PACKAGES = [p.strip() for layer in COMMON_LAYERS for p in layer.split("|")]
COMMANDS = ["predict.py", "launch.py"]


def _lint(root):
  """lint-imports run in `root` on its contracts with the registry's programs (tests/import_contracts.py, as `make
  test` runs it): the CompletedProcess."""
  return import_contracts.lint(str(root))


def _copy(tmp_path):
  """The repository's Python packages and `.importlinter`, copied under tmp_path/repo."""
  root = tmp_path / "repo"
  listed = subprocess.run(["git", "ls-files", "--cached", "--others", "--exclude-standard"], cwd=ROOT,
                          capture_output=True, text=True, check=True).stdout.split()
  for path in [p for p in listed if p.endswith(".py") or p == ".importlinter"]:
    if os.path.isfile(os.path.join(ROOT, path)) and not path.startswith("tests"):
      os.makedirs(root / os.path.dirname(path), exist_ok=True)
      shutil.copy2(os.path.join(ROOT, path), root / path)
  return root


def _contracts():
  """The names of the contracts `.importlinter` declares (its [importlinter:contract:<name>] sections)."""
  parser = configparser.ConfigParser()
  assert parser.read(os.path.join(ROOT, ".importlinter")), ".importlinter not found"
  prefix = "importlinter:contract:"
  return [section[len(prefix):] for section in parser.sections() if section.startswith(prefix)]


def test_the_contracts_are_kept():
  contracts = _contracts()
  assert contracts, "no contract in .importlinter"
  done = _lint(ROOT)
  assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
  counts = re.search(r"Contracts: (\d+) kept, (\d+) broken", done.stdout)
  assert counts and (int(counts[1]), int(counts[2])) == (len(contracts), 0), (contracts, done.stdout[-3000:])


def test_common_holds_its_layers_and_two_commands():
  common = os.path.join(ROOT, "common")
  entries = {e for e in os.listdir(common) if e != "__pycache__"}
  assert entries == set(PACKAGES) | {"__init__.py", *COMMANDS}, f"common/ holds {sorted(entries)}: only the " \
      f"layers' sub-packages {PACKAGES}, __init__.py and the commands {COMMANDS} belong at its top level"
  assert all(os.path.isfile(os.path.join(common, package, "__init__.py")) for package in PACKAGES)
  with open(os.path.join(ROOT, ".importlinter")) as f:  # the contract lists every layer, top first
    text = f.read().split("[importlinter:contract:common-layers]")[1].split("[importlinter:contract:")[0]
  layers = [" | ".join(part.strip()[len("common."):] for part in line.split("|"))
            for line in text.splitlines() if line.startswith("    common.")]
  assert layers[1:] == COMMON_LAYERS[::-1]


def test_the_longest_chain_of_imports_in_experiments_has_at_most_5_modules():
  graph = grimp.build_graph("experiments", "common", cache_dir=None)
  mine = {m for m in graph.modules if m.startswith("experiments.")}
  memo = {}

  def longest(module, seen=()):
    if module not in memo:
      below = [longest(m, seen + (module,)) for m in graph.find_modules_directly_imported_by(module) & mine
               if m not in seen]
      memo[module] = (module,) + max(below, key=len, default=())
    return memo[module]
  chain = max((longest(m) for m in mine), key=len)
  assert len(chain) <= 5, " -> ".join(chain)


@pytest.mark.parametrize("module, upward", [
    ("experiments/records.py", "from experiments.report import readme"),  # records importing the report
    ("experiments/studies/convergence.py", "from experiments.studies import strategy_comparison"),  # a sibling
    ("common/settings/recipes.py", "from common.settings import programs"),  # the settings circle, back
])
def test_an_upward_import_in_a_copy_of_the_tree_is_refused(tmp_path, module, upward):
  root = _copy(tmp_path)
  with open(root / module, "a") as f:
    f.write(f"\n{upward}  # noqa: added by the test\n")
  done = _lint(root)
  assert done.returncode != 0 and "BROKEN" in done.stdout, done.stdout[-3000:]
