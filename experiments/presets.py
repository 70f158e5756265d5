"""The experiments of the report, one entry per figure/table, at three sizes (presets).

  paper  the report's settings (reference/original_implementation.md, "Reported results").
  cpu    the same experiments shrunk so the whole set runs in about an hour on 2 cores; every
         figure states what differs from `paper` (computed by `shrink_notes`).
  smoke  seconds per entry, for tests and CI.

An entry is a list of runs (`RunSpec`: program, flags). Two runs with the same program and flags are
one run: the later entry reuses the record of the first (e.g. `convergence` draws the records of
`strategy_comparison`), see `build`.
"""

import dataclasses
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple

from data_parallel import config as dp_config

ENTRIES = ("mp_scaling_b100", "mp_scaling_b5000", "dp_scaling", "dp_batch_sweep", "dp_op_profile", "mp_vs_dp",
           "accuracy_vs_epochs", "dp_accuracy", "strategy_comparison", "convergence")
PRESETS = ("smoke", "cpu", "paper")
ACCURACY_ENTRIES = ("accuracy_vs_epochs", "dp_accuracy")

CONFIG_1 = (2000, 2000, 2000, 2000)
CONFIG_2 = (2000, 1000, 500, 100)


@dataclasses.dataclass(frozen=True)
class RunSpec:
  """One training run.

  Attributes:
    name: the run's name within its entry, e.g. "h4_g2".
    program: "greedy", "model_parallel" or "data_parallel" (run as `python -m <program>.train`).
    flags: the shared flags as (name, value) pairs (DESIGN.md, "The command-line contract").
    extra_flags: program-specific flags, verbatim ("--name=value").
    resumable: checkpoint every epoch to a model directory, so a killed run resumes (long runs).
    home: the entry directory holding the record (another entry's when the run is shared).
    stored_name: the run's name in `home`.
  """
  name: str
  program: str
  flags: Tuple[Tuple[str, Any], ...]
  extra_flags: Tuple[str, ...] = ()
  resumable: bool = False
  home: str = ""
  stored_name: str = ""

  def flag(self, name: str) -> Any:
    """The value of shared flag `name`."""
    return dict(self.flags)[name]

  def arguments(self) -> List[str]:
    """The flags as command-line arguments."""
    args = []
    for k, v in self.flags:
      args.append(f"--{k}={','.join(str(u) for u in v) if isinstance(v, (tuple, list)) else v}")
    return args + list(self.extra_flags)

  def key(self) -> Tuple:
    """Two runs with equal keys compute the same thing."""
    return (self.program, self.flags, self.extra_flags)

  def summary(self) -> str:
    """A short description for progress lines: program and the main flags."""
    f = dict(self.flags)
    return (f"{self.program} H={len(f['hidden_units'])}x{max(f['hidden_units'])} G={f['num_devices']} "
            f"E={f['pretrain_epochs']}+{f['finetune_epochs']} B={f['batch_size']} N={f['train_examples']}")


@dataclasses.dataclass(frozen=True)
class Entry:
  """One figure/table of the report: its name, what it shows, and its runs."""
  name: str
  title: str
  runs: Tuple[RunSpec, ...]


# Sizes per preset. Keys are read by the entry builders below. Program-specific flags are lists:
#   dp_accuracy.large_batch  flags of data_parallel's large-batch recipe (runs "dp_e*_large_batch").
#   dp_op_profile.profile    flags of data_parallel's op profile (it profiles layer 1 by default).
# The large-batch recipe (data_parallel/config.py): the pretraining learning rate scaled linearly from the
# report's batch 100 (Goyal et al. 2017), finetuning with Adam at a square-root-scaled rate, both reached by
# a linear warm-up over the first 2 epochs of every layer and of finetuning.
_LARGE_BATCH = dp_config.LARGE_BATCH_RECIPE
# The accuracy runs skip data_parallel's op profile of layer 1 (not needed there).
_NO_PROFILE = ("--profile_steps=0",)
# Flags of every data_parallel timing run, per preset (smoke: the shortest op profile).
_DP_FLAGS = {"paper": (), "cpu": (), "smoke": ("--profile_steps=1", "--profile_repeats=1")}
_SIZES: Dict[str, Dict[str, Dict[str, Any]]] = {
    "paper": {
        "mp_scaling_b100": dict(examples=55_000, epochs=30, batch=100, units=2000, layers=(2, 3, 4)),
        "mp_scaling_b5000": dict(examples=55_000, epochs=60, batch=5000, units=2000, layers=(2, 3, 4)),
        "dp_scaling": dict(examples=55_000, epochs=40, batch=5000, hidden=CONFIG_1, devices=(1, 2, 3, 4)),
        "dp_batch_sweep": dict(examples=55_000, epochs=2, units=2000, devices=4,
                               batches=(52, 100, 200, 300, 400, 500, 600, 700, 800, 900, 1000, 2000, 3000, 4000,
                                        5000, 6000, 7000, 8000, 9000)),
        "dp_op_profile": dict(examples=55_000, epochs=1, batch=1000, units=2000, devices=(1, 2, 3, 4), profile=()),
        "mp_vs_dp": dict(examples=55_000, epochs=(30, 60), batch=7000, devices=4),
        "accuracy": dict(examples=55_000, epochs=(10, 20, 30, 40, 50, 60), batch=100, hidden=CONFIG_1, devices=4),
        "dp_accuracy": dict(examples=55_000, epochs=(30, 60), batch=5000, hidden=CONFIG_1, devices=4,
                            large_batch=_LARGE_BATCH),
        "comparison": dict(examples=55_000, epochs=60, batch=5000, hidden=CONFIG_1, devices=4),
    },
    # Timing entries: epochs / 6, layers of 1000 units instead of 2000 (Config 2 halved too), fewer
    # examples (at least 2 steps per epoch at the report's batch), 12 of the 19 batch sizes of the sweep;
    # the comparisons (sweep, mp_vs_dp, strategy_comparison, dp_accuracy) on 2 devices, the cores there
    # are (4 logical devices on 2 cores cost data_parallel minutes of warm-up per layer and cannot be faster);
    # accuracy entries: epochs / 5, 11,000 examples, 4 x 500 units, data-parallel batch 1000 (5000 scaled
    # with the examples, so an epoch still has 11 steps as at paper size).
    "cpu": {
        "mp_scaling_b100": dict(examples=5500, epochs=5, batch=100, units=1000, layers=(2, 3, 4)),
        "mp_scaling_b5000": dict(examples=10_000, epochs=10, batch=5000, units=1000, layers=(2, 3, 4)),
        "dp_scaling": dict(examples=10_000, epochs=7, batch=5000, hidden=(1000,) * 4, devices=(1, 2, 3, 4)),
        "dp_batch_sweep": dict(examples=18_000, epochs=2, units=1000, devices=2,
                               batches=(52, 100, 200, 300, 500, 700, 1000, 2000, 4000, 6000, 7000, 9000)),
        "dp_op_profile": dict(examples=11_000, epochs=1, batch=1000, units=1000, devices=(1, 2, 3, 4), profile=()),
        "mp_vs_dp": dict(examples=14_000, epochs=(5, 10), batch=7000, devices=2, config_1=(1000,) * 4,
                         config_2=(1000, 500, 250, 50)),
        "accuracy": dict(examples=11_000, epochs=(2, 4, 6, 8, 10, 12), batch=100, hidden=(500,) * 4, devices=4),
        "dp_accuracy": dict(examples=11_000, epochs=(6, 12), batch=1000, hidden=(500,) * 4, devices=2,
                            large_batch=_LARGE_BATCH),
        "comparison": dict(examples=10_000, epochs=10, batch=5000, hidden=(1000,) * 4, devices=2),
    },
    # Few runs: sizes chosen so that entries share runs (dp_op_profile = dp_scaling, strategy_comparison's
    # and mp_vs_dp's Config 1 runs = the scaling entries' 2-device runs).
    "smoke": {
        "mp_scaling_b100": dict(examples=400, epochs=2, batch=40, units=32, layers=(2,)),
        "mp_scaling_b5000": dict(examples=400, epochs=2, batch=200, units=32, layers=(2,)),
        "dp_scaling": dict(examples=400, epochs=2, batch=200, hidden=(32, 32), devices=(1, 2)),
        "dp_batch_sweep": dict(examples=400, epochs=1, units=32, devices=2, batches=(52, 200)),
        "dp_op_profile": dict(examples=400, epochs=2, batch=200, hidden=(32, 32), devices=(1, 2), profile=()),
        "mp_vs_dp": dict(examples=400, epochs=(2,), batch=200, devices=2, config_1=(32, 32), config_2=(32, 16)),
        "accuracy": dict(examples=400, epochs=(2,), batch=40, hidden=(32, 32), devices=2),
        "dp_accuracy": dict(examples=400, epochs=(2,), batch=200, hidden=(32, 32), devices=2,
                            large_batch=_LARGE_BATCH + ("--warmup_epochs=1",)),
        "comparison": dict(examples=400, epochs=2, batch=200, hidden=(32, 32), devices=2),
    },
}


def _run(name: str, program: str, hidden: Sequence[int], epochs: int, batch: int, devices: int, examples: int,
         finetune_epochs: int = 0, extra: Sequence[str] = (), resumable: bool = False, **more) -> RunSpec:
  flags = (("hidden_units", tuple(hidden)), ("pretrain_epochs", epochs), ("finetune_epochs", finetune_epochs),
           ("batch_size", batch), ("num_devices", devices), ("threads_per_device", 1),
           ("train_examples", examples), ("seed", 0)) + tuple(sorted(more.items()))
  return RunSpec(name, program, flags, tuple(extra), resumable)


def _mp_scaling(s) -> List[RunSpec]:
  return [_run(f"h{h}_g{g}", "model_parallel", (s["units"],) * h, s["epochs"], s["batch"], g, s["examples"])
          for h in s["layers"] for g in range(1, h + 1)]


def divisible(batch: int, devices: int) -> int:
  """The global batch rounded down to a multiple of the replicas (data parallel splits it evenly)."""
  return batch - batch % devices


def _dp_scaling(s) -> List[RunSpec]:
  return [_run(f"g{g}", "data_parallel", s["hidden"], s["epochs"], divisible(s["batch"], g), g, s["examples"],
               extra=s["dp_flags"]) for g in s["devices"]]


def _dp_batch_sweep(s) -> List[RunSpec]:
  return [_run(f"b{b}", "data_parallel", (s["units"],), s["epochs"], b, s["devices"], s["examples"],
               extra=_NO_PROFILE) for b in s["batches"]]


def _dp_op_profile(s) -> List[RunSpec]:
  hidden = s.get("hidden", (s.get("units"),))  # one layer: the profile is of layer 1
  return [_run(f"g{g}", "data_parallel", hidden, s["epochs"], divisible(s["batch"], g), g, s["examples"],
               extra=s["dp_flags"] + s["profile"]) for g in s["devices"]]


def _mp_vs_dp(s) -> List[RunSpec]:
  configs = {"c1": s.get("config_1", CONFIG_1), "c2": s.get("config_2", CONFIG_2)}
  return [_run(f"{c}_e{e}_{short}", program, configs[c], e, s["batch"], s["devices"], s["examples"],
               extra=s["dp_flags"] if program == "data_parallel" else ())
          for e in s["epochs"] for c in ("c1", "c2")
          for short, program in (("dp", "data_parallel"), ("mp", "model_parallel"))]


def _accuracy(s) -> List[RunSpec]:
  runs = []
  for e in s["epochs"]:
    runs.append(_run(f"greedy_e{e}", "greedy", s["hidden"], e, s["batch"], 1, s["examples"], e, resumable=True))
    runs.append(_run(f"mp_e{e}", "model_parallel", s["hidden"], e, s["batch"], s["devices"], s["examples"], e,
                     resumable=True))
  return runs


def _dp_accuracy(s, accuracy) -> List[RunSpec]:
  runs = []
  for e in s["epochs"]:
    for recipe, extra in (("report", ()), ("large_batch", s["large_batch"])):
      runs.append(_run(f"dp_e{e}_{recipe}", "data_parallel", s["hidden"], e, s["batch"], s["devices"], s["examples"],
                       e, extra=extra + _NO_PROFILE, resumable=True))
  # The greedy reference at the accuracy entry's batch, when it has these epochs.
  runs += [r for r in _accuracy(accuracy) if r.program == "greedy" and r.flag("pretrain_epochs") in s["epochs"]]
  return runs


def _comparison(s) -> List[RunSpec]:
  return [_run("greedy", "greedy", s["hidden"], s["epochs"], s["batch"], 1, s["examples"]),
          _run("mp", "model_parallel", s["hidden"], s["epochs"], s["batch"], s["devices"], s["examples"]),
          _run("dp", "data_parallel", s["hidden"], s["epochs"], s["batch"], s["devices"], s["examples"],
               extra=s["dp_flags"])]


_TITLES = {
    "mp_scaling_b100": "Model parallel: pretraining time vs devices (batch 100)",
    "mp_scaling_b5000": "Model parallel: pretraining time vs devices (batch 5000)",
    "dp_scaling": "Data parallel: pretraining time vs devices (batch 5000)",
    "dp_batch_sweep": "Data parallel: seconds per epoch of one layer vs batch size, 4 devices",
    "dp_op_profile": "Data parallel: time per epoch by phase vs devices",
    "mp_vs_dp": "Model parallel vs data parallel at batch 7000",
    "accuracy_vs_epochs": "Test accuracy vs pretraining/finetuning epochs: greedy vs model parallel",
    "dp_accuracy": "Data parallel test accuracy at batch 5000: report recipe vs large-batch recipe",
    "strategy_comparison": "Does parallelism help? Greedy vs model parallel vs data parallel",
    "convergence": "Reconstruction loss vs wall-clock seconds",
}


def build(preset: str) -> Dict[str, Entry]:
  """The entries of `preset`, in the report's order, with shared runs resolved.

  Raises:
    ValueError: unknown preset.
  """
  if preset not in _SIZES:
    raise ValueError(f"unknown preset {preset!r}; choose one of {', '.join(PRESETS)}")
  s = {name: dict(sizes, dp_flags=_DP_FLAGS[preset]) for name, sizes in _SIZES[preset].items()}
  runs = {
      "mp_scaling_b100": _mp_scaling(s["mp_scaling_b100"]),
      "mp_scaling_b5000": _mp_scaling(s["mp_scaling_b5000"]),
      "dp_scaling": _dp_scaling(s["dp_scaling"]),
      "dp_batch_sweep": _dp_batch_sweep(s["dp_batch_sweep"]),
      "dp_op_profile": _dp_op_profile(s["dp_op_profile"]),
      "mp_vs_dp": _mp_vs_dp(s["mp_vs_dp"]),
      "accuracy_vs_epochs": _accuracy(s["accuracy"]),
      "dp_accuracy": _dp_accuracy(s["dp_accuracy"], s["accuracy"]),
      "strategy_comparison": _comparison(s["comparison"]),
      "convergence": _comparison(s["comparison"]),
  }
  owner: Dict[Tuple, RunSpec] = {}
  entries = {}
  for name in ENTRIES:
    resolved = []
    for run in runs[name]:
      first = owner.setdefault(run.key(), dataclasses.replace(run, home=name, stored_name=run.name))
      resolved.append(dataclasses.replace(run, home=first.home, stored_name=first.stored_name))
    entries[name] = Entry(name, _TITLES[name], tuple(resolved))
  return entries


def select(entries: Mapping[str, Entry], only: Optional[Sequence[str]]) -> Dict[str, Entry]:
  """The entries (and runs) named by `only`: "ENTRY" or "ENTRY/RUN" items; all when empty.

  Raises:
    ValueError: an unknown entry or run name.
  """
  if not only:
    return dict(entries)
  chosen: Dict[str, List[RunSpec]] = {}
  for item in only:
    entry, _, run = item.partition("/")
    if entry not in entries:
      raise ValueError(f"unknown entry {entry!r}; entries: {', '.join(ENTRIES)}")
    runs = entries[entry].runs
    if run:
      runs = tuple(r for r in runs if r.name == run)
      if not runs:
        raise ValueError(f"entry {entry} has no run {run!r}; runs: {', '.join(r.name for r in entries[entry].runs)}")
    chosen.setdefault(entry, [])
    chosen[entry] += [r for r in runs if r not in chosen[entry]]
  return {name: dataclasses.replace(entries[name], runs=tuple(chosen[name])) for name in ENTRIES if name in chosen}


_SHRINK_FLAGS = (("train_examples", "examples"), ("pretrain_epochs", "pretrain epochs"),
                 ("finetune_epochs", "finetune epochs"), ("batch_size", "batch"), ("hidden_units", "hidden units"),
                 ("num_devices", "devices"))


def _values(runs: Sequence[RunSpec], flag: str) -> str:
  def fmt(v):
    return "x".join(str(u) for u in v) if isinstance(v, tuple) else str(v)
  return ", ".join(fmt(v) for v in sorted(set(r.flag(flag) for r in runs), key=lambda v: (str(type(v)), v)))


def shrink_notes(entry: str, preset: str) -> List[str]:
  """What `preset` changes in `entry` relative to the paper preset, one note per flag whose values
  differ, e.g. "examples 5500 (paper 55000)" or "pretrain epochs 2, 4, 6 (paper 10, 20, 30)"."""
  if preset == "paper":
    return []
  ours, paper = build(preset)[entry].runs, build("paper")[entry].runs
  notes = []
  for flag, label in _SHRINK_FLAGS:
    a, b = _values(ours, flag), _values(paper, flag)
    if a != b:
      notes.append(f"{label} {a} (paper {b})")
  return notes
