"""import-linter's contracts with the registry's programs: `.importlinter` states the layers, and each list of the
programs in it (the root packages, the programs' layer, the acyclic siblings' ancestors) is rewritten from the
registry's `PACKAGES` (`common.settings.programs`) before lint-imports runs, so that a program added to the registry
is checked without an edit of `.importlinter`. `make test` runs it:

  python tests/import_contracts.py [ROOT]     # lint-imports on the contracts of ROOT (default: this repository)

A program is a top-level folder with a `program.py`; a line of `.importlinter` that names programs only (one, or
several joined by "|") is a list of the programs."""

import os
import re
import subprocess
import sys
import tempfile
from typing import List, Sequence

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def packages(root: str) -> List[str]:
  """The registry's `PACKAGES` of the repository at `root` (read from its common/settings/programs.py, without
  importing it)."""
  with open(os.path.join(root, "common", "settings", "programs.py")) as f:
    found = re.search(r"^PACKAGES = \(([^)]*)\)", f.read(), re.M)
  return re.findall(r'"([A-Za-z_][A-Za-z0-9_]*)"', found.group(1))


def contracts(root: str) -> str:
  """The text of `root`'s `.importlinter` with every list of programs replaced by `packages(root)`."""
  programs = packages(root)
  folders = {d for d in os.listdir(root) if os.path.isfile(os.path.join(root, d, "program.py"))}
  out: List[str] = []
  listed = False  # whether the current option's list of programs has been written
  with open(os.path.join(root, ".importlinter")) as f:
    for line in f.read().splitlines():
      names = [n.strip() for n in line.split("|")]
      if line.startswith((" ", "\t")) and names and all(n in folders or n in programs for n in names if n):
        indent = line[:len(line) - len(line.lstrip())]
        if len(names) > 1:
          out.append(indent + " | ".join(programs))  # the programs' layer: independent siblings
        elif not listed:
          out += [indent + p for p in programs]
          listed = True
        continue
      if not line.startswith((" ", "\t")):
        listed = False  # a new option or section: its own list
      out.append(line)
  return "\n".join(out) + "\n"


def lint(root: str = ROOT, extra: Sequence[str] = ()) -> subprocess.CompletedProcess:
  """lint-imports (the one next to this Python) on `contracts(root)`, in `root`; the CompletedProcess."""
  with tempfile.NamedTemporaryFile("w", suffix=".importlinter", delete=False) as f:
    f.write(contracts(root))
  try:
    command = os.path.join(os.path.dirname(sys.executable), "lint-imports")
    return subprocess.run([command, f.name, "--no-cache", *extra], cwd=root, capture_output=True, text=True,
                          timeout=600, env=dict(os.environ, PYTHONPATH=root))
  finally:
    os.unlink(f.name)


if __name__ == "__main__":
  done = lint(sys.argv[1] if len(sys.argv) > 1 else ROOT)
  print(done.stdout, end="")
  print(done.stderr, end="", file=sys.stderr)
  sys.exit(done.returncode)
