"""`python -m common.run.recipes [NAME ...] [--program=PROGRAM] [--only_changed]`: prints the resolved values of
recipes (`common.settings.recipes`; default: every recipe) for a program (default: the baseline). A command of its own
above the registry, so that the recipes, the settings and the registry import one another in one direction."""

import sys

from common.settings import programs
from common.settings.recipes import DEFAULT, NAMES, get


def main(argv=None) -> None:
  """Prints the resolved values of a recipe (default: every recipe) for a program (default: the baseline)."""
  from absl import app, flags  # noqa: only the command needs them

  flags.DEFINE_string("program", None, "The program whose settings are printed, its own included (default: the "
                      "baseline).")
  flags.DEFINE_bool("only_changed", False, "Print only the values the recipe changes from the report's.")

  def _main(args):
    program = programs.get(flags.FLAGS.program) if flags.FLAGS.program else programs.baseline()
    for name in args[1:] or NAMES:
      try:
        config = program.make_config(recipe=name)
      except ValueError as e:
        print(f"{name}: {e}")
        continue
      report = program.make_config().to_dict() if name != DEFAULT else None
      print(f"--recipe={name} ({program.name}): {get(name).summary}")
      for key, value in config.recipe_values().items():
        if flags.FLAGS.only_changed and report is not None and report.get(key) == value:
          continue
        print(f"  --{key}={','.join(map(str, value)) if isinstance(value, tuple) else value}")

  app.run(_main, argv or sys.argv)


if __name__ == "__main__":
  main()
