"""`common/` is layered: a module imports only modules of its own layer or of the layers below it (the top-level
commands `predict.py` and `launch.py` may import anything), and no modules import each other in a cycle when loaded.
Read from the source with `ast` (no TensorFlow): every import statement anywhere in a file, those inside functions
included; an import inside a function runs only when it is called, so it is left out of the cycle check (config.py
and recipes.py name the program registry that way)."""

import ast
import os

# Bottom to top.
LAYERS = ["base", "data", "measure", "settings", "model", "distribute", "training", "artifacts", "run", "layerwise"]
COMMANDS = ["predict.py", "launch.py"]
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
COMMON = os.path.join(ROOT, "common")


def _modules():
  """{module name: path} of every .py file under common/ ("common.run.lifecycle", "common.base" for its
  __init__.py)."""
  found = {}
  for folder, dirs, files in os.walk(COMMON):
    dirs[:] = [d for d in dirs if d != "__pycache__"]
    for name in files:
      if name.endswith(".py"):
        parts = os.path.relpath(os.path.join(folder, name), ROOT)[:-3].split(os.sep)
        found[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = os.path.join(folder, name)
  return found


def _imports(path, modules):
  """(line, imported module of common, whether the import runs only when a function is called) of every import."""
  tree = ast.parse(open(path).read(), path)
  deferred = {id(n) for f in ast.walk(tree) if isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda))
              for n in ast.walk(f) if n is not f}
  for node in ast.walk(tree):
    if isinstance(node, ast.Import):
      names = [a.name for a in node.names]
    elif isinstance(node, ast.ImportFrom) and node.module:
      names = [f"{node.module}.{a.name}" if f"{node.module}.{a.name}" in modules else node.module for a in node.names]
    else:
      continue
    yield from ((node.lineno, n, id(node) in deferred) for n in names if n.split(".")[0] == "common")


def _layer(module):
  """Index of `module`'s layer in LAYERS; len(LAYERS) for the commands and the package itself, above every layer."""
  parts = module.split(".")
  return LAYERS.index(parts[1]) if len(parts) > 1 and parts[1] in LAYERS else len(LAYERS)


def test_import_layers():
  entries = {e for e in os.listdir(COMMON) if e != "__pycache__"}
  assert entries == set(LAYERS) | {"__init__.py", *COMMANDS}, f"common/ holds {sorted(entries)}: only the layers' " \
      f"sub-packages {LAYERS}, __init__.py and the commands {COMMANDS} belong at its top level"
  assert all(os.path.isfile(os.path.join(COMMON, layer, "__init__.py")) for layer in LAYERS)
  modules, wrong, graph = _modules(), [], {}
  for module, path in sorted(modules.items()):
    graph[module] = set()
    for line, imported, deferred in _imports(path, modules):
      assert imported in modules, f"{os.path.relpath(path, ROOT)}:{line}: imports {imported}, which does not exist"
      if _layer(imported) > _layer(module) and os.path.basename(path) not in COMMANDS:
        wrong.append(f"{os.path.relpath(path, ROOT)}:{line}: layer {LAYERS[_layer(module)]} imports {imported} of "
                     f"the higher layer {LAYERS[_layer(imported)] if _layer(imported) < len(LAYERS) else 'commands'}")
      if not deferred and imported != module:
        graph[module].add(imported)
  assert not wrong, f"imports of a higher layer (bottom to top: {' < '.join(LAYERS)}):\n" + "\n".join(wrong)
  done, stack = set(), []

  def visit(module):  # Depth-first; a module met again on the current path closes a cycle.
    if module in stack:
      raise AssertionError("import cycle: " + " -> ".join(stack[stack.index(module):] + [module]))
    if module not in done:
      stack.append(module)
      for imported in sorted(graph[module]):
        visit(imported)
      done.add(stack.pop())

  for module in sorted(graph):
    visit(module)
