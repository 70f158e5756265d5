"""The run list: every experiment as an entry (a figure or table) of training runs, at named sizes (presets).

The report's ten entries ("Parallelizing Pretraining of Deep Neural Networks using Stacked Autoencoders",
section "Results") come at three sizes:
  paper  the report's settings.
  cpu    the same experiments shrunk so the whole set runs in about an hour on 2 cores; every figure
         states what differs from `paper` (`shrink_notes`).
  smoke  seconds per entry, for tests and CI.
Two studies beyond the report have one size each:
  mid    `large_batch`: which learning-rate recipe lets data parallel at a large global batch reach
         greedy's accuracy (4 x 1000 units, 10 + 10 epochs, all 55,000 images), judged on validation.
  full   `full_size`: the report's network (4 x 2000) on all 55,000 images, 30 + 30 epochs, 2 devices.

An entry is a list of runs (`RunSpec`: program, flags). Two runs with the same program and flags are one
run: the later entry reuses the record of the first (`convergence` draws the records of
`strategy_comparison`), see `build`. Records go to <output_dir>/runs/<entry>/<preset>_<run>.json; the two
studies keep the folders their records were first written to (`LAYOUTS`).
"""

import dataclasses
import os
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple

from data_parallel import config as dp_config

REPORT_ENTRIES = ("mp_scaling_b100", "mp_scaling_b5000", "dp_scaling", "dp_batch_sweep", "dp_op_profile", "mp_vs_dp",
                  "accuracy_vs_epochs", "dp_accuracy", "strategy_comparison", "convergence")
# Beyond the report, at the same three sizes: the layer-pipelined program's scaling.
BEYOND = ("pp_scaling",)
STUDIES = ("large_batch", "full_size")
ENTRIES = REPORT_ENTRIES + BEYOND + STUDIES
PRESETS = ("smoke", "cpu", "paper", "mid", "full")

# Where an entry's records go, relative to the output directory (default: DEFAULT_LAYOUT).
DEFAULT_LAYOUT = "runs/{entry}/{preset}_{run}.json"
LAYOUTS = {"large_batch": "large_batch/{preset}/{run}.json", "full_size": "full_size/{run}.json"}

CONFIG_1 = (2000, 2000, 2000, 2000)
CONFIG_2 = (2000, 1000, 500, 100)

# The programs compared side by side, as (run name, program). A program that takes the shared flags and
# --num_devices joins an entry with one line here.
COMPARED = (("greedy", "greedy"), ("mp", "model_parallel"), ("dp", "data_parallel"),
            ("pp", "pipeline_parallel"))  # strategy_comparison, convergence
ACCURACY_COMPARED = (("greedy", "greedy"), ("mp", "model_parallel"), ("pp", "pipeline_parallel"))  # accuracy_vs_epochs
# The comparison runs record the held-out reconstruction after every epoch (the convergence entry's loss).
_HELDOUT = ("--heldout_every_epoch",)
# Programs that run on one device whatever the entry's device count.
ONE_DEVICE_PROGRAMS = ("greedy", "sync_layerwise")

# The large-batch study's candidates: data_parallel at the large global batch with these flags. The report's
# recipe keeps the batch-100 learning rates; the others scale them (data_parallel/config.py).
LARGE_BATCH_CANDIDATES = (
    ("dp_report", ()),
    ("dp_linear_warmup2", ("--pretrain_lr_scaling=linear", "--finetune_lr_scaling=linear", "--warmup_epochs=2")),
    ("dp_large_batch_recipe", dp_config.LARGE_BATCH_RECIPE),
)


@dataclasses.dataclass(frozen=True)
class RunSpec:
  """One training run.

  Attributes:
    name: the run's name within its entry, e.g. "h4_g2".
    program: "greedy", "sync_layerwise", "model_parallel", "data_parallel" or "pipeline_parallel"
      (`python -m <program>.train`).
    flags: the shared flags as (name, value) pairs (`common/flags.py`).
    extra_flags: program-specific flags, verbatim ("--name=value").
    resumable: checkpoint every epoch to a model directory, so a killed run resumes (long runs).
    home: the entry directory holding the record (another entry's when the run is shared).
    stored_name: the run's name in `home`.
    launcher: a module that starts the program, with its flags, e.g. ("common.launch", "--workers=2").
  """
  name: str
  program: str
  flags: Tuple[Tuple[str, Any], ...]
  extra_flags: Tuple[str, ...] = ()
  resumable: bool = False
  home: str = ""
  stored_name: str = ""
  launcher: Tuple[str, ...] = ()

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
    return (self.program, self.flags, self.extra_flags, self.launcher)

  def summary(self) -> str:
    """A short description for progress lines: program and the main flags."""
    f = dict(self.flags)
    return (f"{self.program} H={len(f['hidden_units'])}x{max(f['hidden_units'])} G={f['num_devices']} "
            f"E={f['pretrain_epochs']}+{f['finetune_epochs']} B={f['batch_size']} N={f['train_examples']}")


@dataclasses.dataclass(frozen=True)
class Entry:
  """One figure or table: its name, what it shows, and its runs."""
  name: str
  title: str
  runs: Tuple[RunSpec, ...]


def run(name: str, program: str, hidden: Sequence[int], epochs: int, batch: int, devices: int, examples: int,
        finetune_epochs: int = 0, extra: Sequence[str] = (), resumable: bool = False,
        launcher: Sequence[str] = (), threads: int = 1) -> RunSpec:
  """A RunSpec with every shared flag set (seed 0; `threads` intra-op threads per device)."""
  flags = (("hidden_units", tuple(hidden)), ("pretrain_epochs", epochs), ("finetune_epochs", finetune_epochs),
           ("batch_size", batch), ("num_devices", devices), ("threads_per_device", threads),
           ("train_examples", examples), ("seed", 0))
  return RunSpec(name, program, flags, tuple(extra), resumable, launcher=tuple(launcher))


# Sizes per preset; keys are read by the entry builders below. The report's data-parallel batch was per
# GPU (global = 4 x batch); ours is the global batch, and the tables say so.
# Data-parallel flags: the accuracy and sweep runs skip the op profile of layer 1 (_NO_PROFILE); the
# timing runs profile it (smoke: the shortest profile).
_NO_PROFILE = ("--profile_steps=0",)
_DP_FLAGS = {"paper": (), "cpu": (), "smoke": ("--profile_steps=1", "--profile_repeats=1"), "mid": _NO_PROFILE,
             "full": _NO_PROFILE}
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
        "dp_accuracy": dict(examples=55_000, epochs=(30, 60), batch=5000, hidden=CONFIG_1, devices=4),
        "comparison": dict(examples=55_000, epochs=60, batch=5000, hidden=CONFIG_1, devices=4),
        "pp_scaling": dict(examples=55_000, epochs=30, batch=100, stacks=((2000,) * 4, (1000,) * 8)),
    },
    # Timing entries: epochs / 6, layers of 1000 units instead of 2000 (Config 2 halved too), fewer
    # examples (at least 2 steps per epoch at the report's batch), 12 of the 19 batch sizes of the sweep;
    # the comparisons (sweep, mp_vs_dp, strategy_comparison, dp_accuracy) on 2 devices, the cores there
    # are (4 logical devices on 2 cores cost data_parallel minutes of warm-up per layer and cannot be faster);
    # accuracy entries: epochs / 5, 11,000 examples, 4 x 500 units, data-parallel global batch 1000 (5000
    # scaled with the examples, so an epoch still has 11 steps as at paper size).
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
        "dp_accuracy": dict(examples=11_000, epochs=(6, 12), batch=1000, hidden=(500,) * 4, devices=2),
        "comparison": dict(examples=10_000, epochs=10, batch=5000, hidden=(1000,) * 4, devices=2),
        "pp_scaling": dict(examples=11_000, epochs=2, batch=100, stacks=((1000,) * 4, (500,) * 8)),
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
                            large_batch=dp_config.LARGE_BATCH_RECIPE + ("--warmup_epochs=1",)),
        "comparison": dict(examples=400, epochs=2, batch=200, hidden=(32, 32), devices=2),
        "pp_scaling": dict(examples=400, epochs=2, batch=40, stacks=((32, 32),)),
    },
    "mid": {"large_batch": dict(examples=55_000, epochs=10, hidden=(1000,) * 4, batch=5000, devices=2,
                                reference_batch=100)},
    "full": {"full_size": dict(examples=55_000, epochs=30, hidden=CONFIG_1, batch=100, dp_batch=5000, devices=2)},
}


def _devices(program: str, devices: int) -> int:
  return 1 if program in ONE_DEVICE_PROGRAMS else devices


def _mp_scaling(s) -> List[RunSpec]:
  return [run(f"h{h}_g{g}", "model_parallel", (s["units"],) * h, s["epochs"], s["batch"], g, s["examples"])
          for h in s["layers"] for g in range(1, h + 1)]


def divisible(batch: int, devices: int) -> int:
  """The global batch rounded down to a multiple of the replicas (data parallel splits it evenly)."""
  return batch - batch % devices


def _dp_scaling(s) -> List[RunSpec]:
  return [run(f"g{g}", "data_parallel", s["hidden"], s["epochs"], divisible(s["batch"], g), g, s["examples"],
              extra=s["dp_flags"]) for g in s["devices"]]


def _dp_batch_sweep(s) -> List[RunSpec]:
  return [run(f"b{b}", "data_parallel", (s["units"],), s["epochs"], b, s["devices"], s["examples"],
              extra=_NO_PROFILE) for b in s["batches"]]


def _dp_op_profile(s) -> List[RunSpec]:
  hidden = s.get("hidden", (s.get("units"),))  # one layer: the profile is of layer 1
  return [run(f"g{g}", "data_parallel", hidden, s["epochs"], divisible(s["batch"], g), g, s["examples"],
              extra=s["dp_flags"] + s["profile"]) for g in s["devices"]]


def _mp_vs_dp(s) -> List[RunSpec]:
  configs = {"c1": s.get("config_1", CONFIG_1), "c2": s.get("config_2", CONFIG_2)}
  return [run(f"{c}_e{e}_{short}", program, configs[c], e, s["batch"], s["devices"], s["examples"],
              extra=s["dp_flags"] if program == "data_parallel" else ())
          for e in s["epochs"] for c in ("c1", "c2")
          for short, program in (("dp", "data_parallel"), ("mp", "model_parallel"))]


def _pp_scaling(s) -> List[RunSpec]:
  return [run(f"h{len(h)}x{h[0]}_g{g}", "pipeline_parallel", h, s["epochs"], s["batch"], g, s["examples"])
          for h in s["stacks"] for g in range(1, len(h) + 1)]


def _accuracy(s) -> List[RunSpec]:
  return [run(f"{short}_e{e}", program, s["hidden"], e, s["batch"], _devices(program, s["devices"]), s["examples"], e,
              resumable=True) for e in s["epochs"] for short, program in ACCURACY_COMPARED]


def _dp_accuracy(s, accuracy) -> List[RunSpec]:
  runs = []
  for e in s["epochs"]:
    for recipe, extra in (("report", ()), ("large_batch", s.get("large_batch", dp_config.LARGE_BATCH_RECIPE))):
      runs.append(run(f"dp_e{e}_{recipe}", "data_parallel", s["hidden"], e, s["batch"], s["devices"], s["examples"],
                      e, extra=extra + _NO_PROFILE, resumable=True))
  # The greedy reference at the accuracy entry's batch, when it has these epochs.
  runs += [r for r in _accuracy(accuracy) if r.program == "greedy" and r.flag("pretrain_epochs") in s["epochs"]]
  return runs


def _comparison(s) -> List[RunSpec]:
  return [run(short, program, s["hidden"], s["epochs"], s["batch"], _devices(program, s["devices"]), s["examples"],
              extra=(s["dp_flags"] if program == "data_parallel" else ()) + _HELDOUT) for short, program in COMPARED]


def _large_batch(s) -> List[RunSpec]:
  runs = [run(f"greedy_b{s['reference_batch']}", "greedy", s["hidden"], s["epochs"], s["reference_batch"], 1,
              s["examples"], s["epochs"], resumable=True)]
  return runs + [run(name, "data_parallel", s["hidden"], s["epochs"], s["batch"], s["devices"], s["examples"],
                     s["epochs"], extra=flags + _NO_PROFILE, resumable=True) for name, flags in LARGE_BATCH_CANDIDATES]


def _full_size(s) -> List[RunSpec]:
  e, b, g = s["epochs"], s["batch"], s["devices"]
  dp = [(f"dp_b{s['dp_batch']}_e{e}_{recipe}", flags) for recipe, flags in
        (("report", ()), ("large_batch", dp_config.LARGE_BATCH_RECIPE))]
  return ([run(f"greedy_b{b}_e{e}", "greedy", s["hidden"], e, b, 1, s["examples"], e, resumable=True),
           run(f"model_parallel_g{g}_b{b}_e{e}", "model_parallel", s["hidden"], e, b, g, s["examples"], e,
               resumable=True),
           run(f"pipeline_parallel_g{g}_b{b}_e{e}", "pipeline_parallel", s["hidden"], e, b, g, s["examples"], e,
               extra=_HELDOUT, resumable=True)]
          + [run(name, "data_parallel", s["hidden"], e, s["dp_batch"], g, s["examples"], e, extra=_NO_PROFILE + flags,
                 resumable=True) for name, flags in dp])


_TITLES = {
    "mp_scaling_b100": "Model parallel: pretraining time vs devices (batch 100)",
    "mp_scaling_b5000": "Model parallel: pretraining time vs devices (batch 5000)",
    "dp_scaling": "Data parallel: pretraining time vs devices",
    "dp_batch_sweep": "Data parallel: seconds per epoch of one layer vs global batch",
    "dp_op_profile": "Data parallel: time per epoch by phase vs devices",
    "mp_vs_dp": "Model parallel vs data parallel at a large batch",
    "accuracy_vs_epochs": "Test accuracy vs pretraining/finetuning epochs: greedy vs model parallel",
    "dp_accuracy": "Data parallel test accuracy at a large batch: report recipe vs large-batch recipe",
    "strategy_comparison": "Does parallelism help? Pretraining time per strategy",
    "convergence": "Reconstruction loss vs wall-clock seconds",
    "large_batch": "Large-batch study: which recipe lets data parallel at a large batch match greedy",
    "full_size": "Full size: the report's network on all 55,000 images",
    "pp_scaling": "Pipeline parallel (beyond the report): pretraining time vs devices",
}
# Entry -> (its key in _SIZES, builder).
_BUILDERS = {
    "mp_scaling_b100": ("mp_scaling_b100", _mp_scaling), "mp_scaling_b5000": ("mp_scaling_b5000", _mp_scaling),
    "dp_scaling": ("dp_scaling", _dp_scaling), "dp_batch_sweep": ("dp_batch_sweep", _dp_batch_sweep),
    "dp_op_profile": ("dp_op_profile", _dp_op_profile), "mp_vs_dp": ("mp_vs_dp", _mp_vs_dp),
    "accuracy_vs_epochs": ("accuracy", _accuracy), "strategy_comparison": ("comparison", _comparison),
    "convergence": ("comparison", _comparison), "large_batch": ("large_batch", _large_batch),
    "full_size": ("full_size", _full_size), "pp_scaling": ("pp_scaling", _pp_scaling),
}


def title(entry: str) -> str:
  """What the entry shows."""
  return _TITLES[entry]


def build(preset: str) -> Dict[str, Entry]:
  """The entries `preset` defines, in the order of ENTRIES, with shared runs resolved.

  Raises:
    ValueError: unknown preset.
  """
  if preset not in _SIZES:
    raise ValueError(f"unknown preset {preset!r}; choose one of {', '.join(PRESETS)}")
  s = {name: dict(sizes, dp_flags=_DP_FLAGS[preset]) for name, sizes in _SIZES[preset].items()}
  runs = {}
  for name, (key, builder) in _BUILDERS.items():
    if key in s:
      runs[name] = builder(s[key])
  if "dp_accuracy" in s:
    runs["dp_accuracy"] = _dp_accuracy(s["dp_accuracy"], s["accuracy"])
  owner: Dict[Tuple, RunSpec] = {}
  entries = {}
  for name in (e for e in ENTRIES if e in runs):
    resolved = []
    for r in runs[name]:
      first = owner.setdefault(r.key(), dataclasses.replace(r, home=name, stored_name=r.name))
      resolved.append(dataclasses.replace(r, home=first.home, stored_name=first.stored_name))
    entries[name] = Entry(name, _TITLES[name], tuple(resolved))
  return entries


def defined_in(entry: str) -> List[str]:
  """The presets that define `entry`."""
  return [p for p in PRESETS if entry in build(p)]


def record_file(preset: str, run: RunSpec) -> str:
  """Where the record of `run` at `preset` goes, relative to the output directory."""
  layout = LAYOUTS.get(run.home, DEFAULT_LAYOUT)
  return os.path.join(*layout.format(entry=run.home, preset=preset, run=run.stored_name).split("/"))


def select(entries: Mapping[str, Entry], only: Optional[Sequence[str]]) -> Dict[str, Entry]:
  """The entries (and runs) named by `only`: "ENTRY" or "ENTRY/RUN" items; all when empty.

  Raises:
    ValueError: an unknown entry or run name.
  """
  if not only:
    return dict(entries)
  chosen: Dict[str, List[RunSpec]] = {}
  for item in only:
    entry, _, name = item.partition("/")
    if entry not in entries:
      raise ValueError(f"unknown entry {entry!r}; entries of this preset: {', '.join(entries)}")
    runs = entries[entry].runs
    if name:
      runs = tuple(r for r in runs if r.name == name)
      if not runs:
        raise ValueError(f"entry {entry} has no run {name!r}; runs: {', '.join(r.name for r in entries[entry].runs)}")
    chosen.setdefault(entry, [])
    chosen[entry] += [r for r in runs if r not in chosen[entry]]
  return {name: dataclasses.replace(entries[name], runs=tuple(chosen[name])) for name in entries if name in chosen}


_SHRINK_FLAGS = (("train_examples", "examples"), ("pretrain_epochs", "pretrain epochs"),
                 ("finetune_epochs", "finetune epochs"), ("batch_size", "batch"), ("hidden_units", "hidden units"),
                 ("num_devices", "devices"))


def _values(runs: Sequence[RunSpec], flag: str) -> str:
  def fmt(v):
    return "x".join(str(u) for u in v) if isinstance(v, tuple) else str(v)
  return ", ".join(fmt(v) for v in sorted(set(r.flag(flag) for r in runs), key=lambda v: (str(type(v)), v)))


def shrink_notes(entry: str, preset: str) -> List[str]:
  """What `preset` changes in `entry` relative to the paper preset, one note per flag whose values
  differ, e.g. "examples 5500 (paper 55000)"; none when the paper preset does not define the entry."""
  paper = build("paper")
  if preset == "paper" or entry not in paper:
    return []
  ours = build(preset)[entry].runs
  notes = []
  for flag, label in _SHRINK_FLAGS:
    a, b = _values(ours, flag), _values(paper[entry].runs, flag)
    if a != b:
      notes.append(f"{label} {a} (paper {b})")
  return notes
