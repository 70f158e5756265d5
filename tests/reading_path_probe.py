"""What a reader follows from `python -m <program>.train` to the SGD update: the project's files and frames on the
Python stack when the first update op (`ResourceApplyGradientDescent`) is traced, printed as one JSON line.

  python tests/reading_path_probe.py model_parallel.train --hidden_units=16,16 ...

A profile hook of its own: the op's Python wrapper is replaced, for this process only, by one that records the stack
at its first call (frames of the repository's files; this probe's, the tests', TensorFlow's, absl's and Python's own are
not counted)."""

import json
import os
import runpy
import sys
import traceback

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

import tensorflow as tf  # noqa: E402

_FOUND = []
_APPLY = tf.raw_ops.ResourceApplyGradientDescent


def _spy(*args, **kwargs):
  if not _FOUND:
    tests = os.path.join(ROOT, "tests") + os.sep  # this probe and the test suite's fork server
    _FOUND.append([f for f in traceback.extract_stack()[:-1] if f.filename.startswith(ROOT + os.sep)
                   and not f.filename.startswith(tests) and os.sep + "." not in f.filename[len(ROOT):]])
  return _APPLY(*args, **kwargs)


def main() -> None:
  tf.raw_ops.ResourceApplyGradientDescent = _spy
  module, sys.argv = sys.argv[1], sys.argv[1:]
  try:
    runpy.run_module(module, run_name="__main__", alter_sys=True)
  except SystemExit as e:
    if e.code:
      raise
  frames = _FOUND[0] if _FOUND else []
  print(json.dumps({"module": module, "files": sorted({os.path.relpath(f.filename, ROOT) for f in frames}),
                    "frames": [f"{os.path.relpath(f.filename, ROOT)}:{f.name}" for f in frames]}))


if __name__ == "__main__":
  main()
