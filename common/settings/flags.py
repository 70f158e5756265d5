"""The absl flags of a program, derived from its `Config` class (`common.settings.config`): one flag per `setting` field,
shared and its own alike, each validated by its field's check, plus the class's cross-field check.

Only `common.run.cli` calls `define`, before TensorFlow loads; libraries take a `Config`. A bad value stops the program
with one line (absl's "FATAL Flags parsing error: ...") before any work starts.
"""

import dataclasses
import sys
from typing import Any, Dict, List, Sequence, Type

from absl import flags

from common.settings import config as config_lib

_DEFINE = {int: flags.DEFINE_integer, float: flags.DEFINE_float, str: flags.DEFINE_string, bool: flags.DEFINE_bool,
           tuple: flags.DEFINE_list}


def _fields(config_cls: Type[config_lib.Config]) -> List[dataclasses.Field]:
  return [f for f in dataclasses.fields(config_cls) if config_lib.flag_name(f)]


def _parsed(field: dataclasses.Field, value: Any) -> Any:
  """A flag's value as its field holds it (the field's parser, if it has one, applied)."""
  parse = field.metadata.get("parse")
  return parse(value) if parse and value is not None else value


def define(config_cls: Type[config_lib.Config]) -> List[str]:
  """Defines every flag of `config_cls` (those not defined yet: absl keeps one flag per name in a process) with its
  validators; returns their names, in declaration order.

  A field's flag: its kind (`setting`'s kind or choices), its default (`flag_default`), its help; its validator calls
  the field's check on the parsed value, so the error names just that flag; `config_cls.check_together` is one
  validator of the flags of `config_cls.TOGETHER`.
  """
  names = []
  for f in _fields(config_cls):
    name = config_lib.flag_name(f)
    names.append(name)
    if name in flags.FLAGS:
      continue
    _define_one(f, flags.FLAGS)
    if f.metadata["check"]:
      _validate(name, f)
    for old in f.metadata.get("old_names", ()):  # The setting's earlier names: aliases with a notice.
      _define_one(f, flags.FLAGS, old)
      if f.metadata["check"]:
        _validate(old, f)
  together = [n for n in config_cls.TOGETHER if n in names]
  fields = {config_lib.flag_name(f): f for f in _fields(config_cls)}

  def check_together(values: Dict[str, Any]) -> bool:
    try:
      config_cls.check_together(config_cls.resolve({fields[n].name: _parsed(fields[n], v) for n, v in values.items()}))
    except ValueError as e:
      raise flags.ValidationError(str(e)) from None
    return True
  flags.register_multi_flags_validator(together, check_together)
  return names


def _define_one(field: dataclasses.Field, flag_values: flags.FlagValues, old_name: str = "") -> None:
  """Defines the flag of one `setting` field in `flag_values`: its kind (or choices), default and help; with
  `old_name`, the flag of that earlier name instead (default None: not given)."""
  name, meta = config_lib.flag_name(field), field.metadata
  default, text = meta["flag_default"], meta["help"]
  if old_name:
    name, default, text = old_name, None, f"The old name of --{name} (still accepted, with a notice)."
  if meta["choices"]:
    flags.DEFINE_enum(name, default, list(meta["choices"]), text, flag_values=flag_values)
  else:
    _DEFINE[meta["kind"]](name, default, text, flag_values=flag_values)


def values_from_arguments(config_cls: Type[config_lib.Config], arguments: Sequence[str]) -> Dict[str, Any]:
  """{field: value} of `config_cls` for the flags that command-line `arguments` ("--name=value", "--name",
  "--noname") give, parsed by absl exactly as the program's own command line is (kind, list, choices, the field's
  parser), without touching the process's flags; ValueError for an argument no setting has or a value its flag
  refuses."""
  flag_values, fields = flags.FlagValues(), {config_lib.flag_name(f): f for f in _fields(config_cls)}
  for f in fields.values():
    _define_one(f, flag_values)
  try:
    flag_values(["values_from_arguments", *arguments])
  except flags.Error as e:
    raise ValueError(f"{config_cls.__name__}: {e}") from None
  return {f.name: _parsed(f, flag_values[name].value) for name, f in fields.items() if flag_values[name].present}


def _validate(name: str, field: dataclasses.Field) -> None:
  def checker(value):
    try:
      field.metadata["check"](name, list(value) if isinstance(value, list) else _parsed(field, value))
    except ValueError as e:
      raise flags.ValidationError(str(e).replace(f"--{name} ", "", 1)) from None
    return True
  flags.register_validator(name, checker)


def config_from_flags(program) -> config_lib.Config:
  """The run's configuration from the parsed flags of `program` (a `common.settings.programs.Program`); a setting
  given by one of its old names (`setting(old_names=...)`) takes that value, with a one-line notice on stderr."""
  values = {}
  for f in _fields(program.config):
    name = config_lib.flag_name(f)
    values[f.name] = _parsed(f, flags.FLAGS[name].value)
    for old in f.metadata.get("old_names", ()):
      if flags.FLAGS[old].present and not flags.FLAGS[name].present:
        print(f"notice: --{old} is now --{name}; the old name still works.", file=sys.stderr)
        values[f.name] = _parsed(f, flags.FLAGS[old].value)
  return program.make_config(**values)


def arguments(config: config_lib.Config, always: Sequence[str] = ()) -> List[str]:
  """The command-line arguments ("--name=value", "--name", "--noname") that give a program `config`, in declaration
  order: every field in `always`, and every setting whose value differs from its class's default or its flag's
  (a recipe setting's: the recipe's value; the recipe's: the class's), so that the arguments give `config` whether
  parsed by the program or by `values_from_arguments`, its inverse. The program is the module run, so no argument
  names it. ValueError for a value no argument spells (None where the default is not; a flag whose value is parsed
  into another, like --progress: the runner gives those)."""
  base, out = type(config)(program=config.program, recipe=config.recipe, hidden_units=config.hidden_units), []
  for f in _fields(type(config)):
    value, name, meta = getattr(config, f.name), config_lib.flag_name(f), f.metadata
    runner = meta["parse"] and f.name != "hidden_units"  # --results_dir, --progress: the runner gives them
    # A field whose flag's default differs from its own (--pictures) is given either way.
    if runner or f.name == "recipe":
      defaults = (f.default,)
    elif meta["recipe"] or (f.default is None and getattr(base, f.name) is not None):
      defaults = (getattr(base, f.name),)  # the recipe's value; --pretrain_layers: None resolves to every layer
    else:
      defaults = (f.default, _parsed(f, meta["flag_default"]))
    if f.name not in always and all(value == d for d in defaults):
      continue
    if value is None or runner:
      raise ValueError(f"--{name}={value!r}: no argument of a run gives this setting")
    out.append(f"--{'' if value else 'no'}{name}" if isinstance(value, bool) else
               f"--{name}={','.join(map(str, value)) if isinstance(value, tuple) else value}")
  return out
