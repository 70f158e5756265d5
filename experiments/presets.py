"""The registry of entries: one `Entry` per figure or table of results/README.md, with its sizes per preset (paper,
cpu, smoke; the studies mid and full), the function building its runs and its table and figure by dotted path."""

import dataclasses
import os
from typing import Any, Callable, Dict, List, Mapping, NamedTuple, Optional, Sequence, Tuple

from common import programs
from data_parallel import config as dp_config

PRESETS = ("smoke", "cpu", "paper", "mid", "full")
CONFIG_1, CONFIG_2 = (2000, 2000, 2000, 2000), (2000, 1000, 500, 100)
GREEDY, MP, DP, PP = programs.GREEDY, programs.MODEL_PARALLEL, programs.DATA_PARALLEL, programs.PIPELINE_PARALLEL
COMPARED: Tuple[programs.Program, ...] = (GREEDY,) + tuple(p for p in programs.PROGRAMS if not p.one_device)
ACCURACY_COMPARED = tuple(p for p in COMPARED if p is not DP)
ONE_DEVICE_PROGRAMS = tuple(p.name for p in programs.PROGRAMS if p.one_device)
# The comparison runs record the held-out reconstruction after every epoch (the convergence entry's loss).
_HELDOUT = ("--heldout_every_epoch",)
# Data-parallel flags: the accuracy and sweep runs skip the op profile of layer 1; the timing runs profile it.
_NO_PROFILE = ("--profile_steps=0",)
_DP_FLAGS = {"paper": (), "cpu": (), "smoke": ("--profile_steps=1", "--profile_repeats=1"), "mid": _NO_PROFILE,
             "full": _NO_PROFILE}
_LARGE = dp_config.LARGE_BATCH_RECIPE
# The large-batch study's candidates: data_parallel at the large global batch with these flags.
LARGE_BATCH_CANDIDATES = (("dp_report", ()), ("dp_linear_warmup2", ("--pretrain_lr_scaling=linear",
                          "--finetune_lr_scaling=linear", "--warmup_epochs=2")),
                          ("dp_large_batch_recipe", _LARGE))
_RECIPES = (("report", ()), ("large_batch", _LARGE))
BF16 = f"--precision={programs.PRECISIONS[1]}"


@dataclasses.dataclass(frozen=True)
class RunSpec:
  """One run: name in its entry, registered program, shared flags ((name, value) pairs), program flags ("--name=value"),
  whether it resumes from checkpoints, the entry and name its record is stored under, launcher module and flags."""
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
    return [f"--{k}={','.join(map(str, v)) if isinstance(v, (tuple, list)) else v}" for k, v in self.flags
            ] + list(self.extra_flags)

  def key(self) -> Tuple:
    """Two runs with equal keys compute the same thing."""
    return (self.program, self.flags, self.extra_flags, self.launcher)

  def summary(self) -> str:
    """A short description for progress lines: program and the main flags."""
    f = dict(self.flags)
    return (f"{self.program} H={len(f['hidden_units'])}x{max(f['hidden_units'])} G={f['num_devices']} "
            f"E={f['pretrain_epochs']}+{f['finetune_epochs']} B={f['batch_size']} N={f['train_examples']}")


def run(name: str, program: programs.Program, hidden: Sequence[int], epochs: int, batch: int, devices: int,
        examples: int, finetune_epochs: int = 0, extra: Sequence[str] = (), resumable: bool = False,
        launcher: Sequence[str] = (), threads: int = 1) -> RunSpec:
  """A RunSpec with every shared flag set (seed 0); a one-device program gets one device whatever `devices` says."""
  flags = (("hidden_units", tuple(hidden)), ("pretrain_epochs", epochs), ("finetune_epochs", finetune_epochs),
           ("batch_size", batch), ("num_devices", 1 if program.one_device else devices),
           ("threads_per_device", threads), ("train_examples", examples), ("seed", 0))
  return RunSpec(name, program.name, flags, tuple(extra), resumable, launcher=tuple(launcher))


@dataclasses.dataclass(frozen=True)
class Entry:
  """A figure or table: `name`, `title`, `sizes` ({preset: {size: value}}), `runs` (sizes, "preset", "dp_flags" ->
  RunSpecs), `table`/`figure` (dotted paths; figure None: none), `kind` (report, beyond, study), records' `layout`."""
  name: str
  title: str
  sizes: Mapping[str, Mapping[str, Any]]
  runs: Callable[[Mapping[str, Any]], List[RunSpec]]
  table: str
  figure: Optional[str] = None
  kind: str = "report"
  layout: str = "runs/{entry}/{preset}_{run}.json"


class EntryRuns(NamedTuple):
  """An entry's runs at one preset (shared runs resolved to their home entry)."""
  name: str
  runs: Tuple[RunSpec, ...]


def _mp_scaling(s) -> List[RunSpec]:
  return [run(f"h{h}_g{g}", MP, (s["units"],) * h, s["epochs"], s["batch"], g, s["examples"])
          for h in s["layers"] for g in range(1, h + 1)]


def _dp_scaling(s) -> List[RunSpec]:  # the op profile: one layer (the profile is of layer 1)
  return [run(f"g{g}", DP, s.get("hidden", (s.get("units"),)), s["epochs"], s["batch"] - s["batch"] % g, g,
              s["examples"], extra=s["dp_flags"]) for g in s["devices"]]  # a batch the replicas split evenly


def _dp_batch_sweep(s) -> List[RunSpec]:
  return [run(f"b{b}", DP, (s["units"],), s["epochs"], b, s["devices"], s["examples"], extra=_NO_PROFILE)
          for b in s["batches"]]


def _mp_vs_dp(s) -> List[RunSpec]:
  configs = {"c1": s["config_1"], "c2": s["config_2"]}
  return [run(f"{c}_e{e}_{p.run_name}", p, configs[c], e, s["batch"], s["devices"], s["examples"],
              extra=s["dp_flags"] if p is DP else ()) for e in s["epochs"] for c in ("c1", "c2") for p in (DP, MP)]


def _pp_scaling(s) -> List[RunSpec]:
  return [run(f"h{len(h)}x{h[0]}_g{g}", PP, h, s["epochs"], s["batch"], g, s["examples"])
          for h in s["stacks"] for g in range(1, len(h) + 1)]


def _accuracy(s) -> List[RunSpec]:
  return [run(f"{p.run_name}_e{e}", p, s["hidden"], e, s["batch"], s["devices"], s["examples"], e, resumable=True)
          for e in s["epochs"] for p in ACCURACY_COMPARED]


def _dp_accuracy(s) -> List[RunSpec]:
  recipes = (_RECIPES[0], ("large_batch", s["large_batch"]))
  # The greedy reference at the accuracy entry's batch, when it has these epochs.
  return [run(f"dp_e{e}_{recipe}", DP, s["hidden"], e, s["batch"], s["devices"], s["examples"], e,
              extra=extra + _NO_PROFILE, resumable=True) for e in s["epochs"] for recipe, extra in recipes] + [
      r for r in _accuracy(ACCURACY_VS_EPOCHS.sizes[s["preset"]])
      if r.program == GREEDY.name and r.flag("pretrain_epochs") in s["epochs"]]


def _precision(s) -> List[RunSpec]:  # float32's runs are accuracy_vs_epochs' at its most epochs
  e = s["epochs"]
  return [run(f"{p.run_name}_e{e}{suffix}", p, s["hidden"], e, s["batch"], s["devices"], s["examples"], e, extra=extra,
              resumable=True) for p in (GREEDY, PP) for suffix, extra in (("", ()), ("_bf16", (BF16,)))]


def _comparison(s) -> List[RunSpec]:
  return [run(p.run_name, p, s["hidden"], s["epochs"], s["batch"], s["devices"], s["examples"],
              extra=(s["dp_flags"] if p is DP else ()) + _HELDOUT) for p in COMPARED]


def _large_batch(s) -> List[RunSpec]:
  e, b = s["epochs"], s["reference_batch"]
  return [run(f"{GREEDY.name}_b{b}", GREEDY, s["hidden"], e, b, 1, s["examples"], e, resumable=True)] + [
      run(name, DP, s["hidden"], e, s["batch"], s["devices"], s["examples"], e, extra=flags + _NO_PROFILE,
          resumable=True) for name, flags in LARGE_BATCH_CANDIDATES]


def _full_size(s) -> List[RunSpec]:
  e, b, g = s["epochs"], s["batch"], s["devices"]
  return [run(f"{p.name}{'' if p.one_device else f'_g{g}'}_b{b}_e{e}", p, s["hidden"], e, b, g, s["examples"], e,
              extra=_HELDOUT if p is PP else (), resumable=True)
          for p in (GREEDY, MP, PP)] + [  # the programs its committed records ran
      run(f"{PP.name}_g{g}_b{b}_e{e}_bf16", PP, s["hidden"], e, b, g, s["examples"], e, extra=_HELDOUT + (BF16,),
          resumable=True)] + [
      run(f"dp_b{s['dp_batch']}_e{e}_{recipe}", DP, s["hidden"], e, s["dp_batch"], g, s["examples"], e,
          extra=_NO_PROFILE + flags, resumable=True) for recipe, flags in _RECIPES]


def _sizes(keys: str, **by_preset: Tuple) -> Dict[str, Dict[str, Any]]:
  """{preset: {size: value}} from one tuple of values per preset, in the order of the space-separated `keys`."""
  return {preset: dict(zip(keys.split(), values)) for preset, values in by_preset.items()}


# Our data-parallel batch is the global one (the report's was per GPU). cpu: epochs / 6, 1000 units instead of
# 2000, fewer examples (>= 2 steps per epoch), 12 of 19 sweep batches, comparisons on 2 devices; accuracy entries:
# epochs / 5, 11,000 examples, 4 x 500 units, data-parallel global batch 1000. smoke: entries share runs.
_MP = "examples epochs batch units layers"
_COMPARISON = _sizes("examples epochs batch hidden devices", paper=(55_000, 60, 5000, CONFIG_1, 4),
                     cpu=(10_000, 10, 5000, (1000,) * 4, 2), smoke=(400, 2, 200, (32, 32), 2))
_T, _F = "experiments.report.tables.", "experiments.report.figures."

MP_SCALING_B100 = Entry("mp_scaling_b100", "Model parallel: pretraining time vs devices (batch 100)", _sizes(
    _MP, paper=(55_000, 30, 100, 2000, (2, 3, 4)), cpu=(5500, 5, 100, 1000, (2, 3, 4)), smoke=(400, 2, 40, 32, (2,))),
    _mp_scaling, _T + "scaling", _F + "scaling")
MP_SCALING_B5000 = Entry("mp_scaling_b5000", "Model parallel: pretraining time vs devices (batch 5000)", _sizes(
    _MP, paper=(55_000, 60, 5000, 2000, (2, 3, 4)), cpu=(10_000, 10, 5000, 1000, (2, 3, 4)),
    smoke=(400, 2, 200, 32, (2,))), _mp_scaling, _T + "scaling", _F + "scaling")
DP_SCALING = Entry("dp_scaling", "Data parallel: pretraining time vs devices", _sizes(
    "examples epochs batch hidden devices", paper=(55_000, 40, 5000, CONFIG_1, (1, 2, 3, 4)),
    cpu=(10_000, 7, 5000, (1000,) * 4, (1, 2, 3, 4)), smoke=(400, 2, 200, (32, 32), (1, 2))),
    _dp_scaling, _T + "scaling", _F + "scaling")
DP_BATCH_SWEEP = Entry("dp_batch_sweep", "Data parallel: seconds per epoch of one layer vs global batch", _sizes(
    "examples epochs units devices batches", paper=(55_000, 2, 2000, 4, (
        52, 100, 200, 300, 400, 500, 600, 700, 800, 900, 1000, 2000, 3000, 4000, 5000, 6000, 7000, 8000, 9000)),
    cpu=(18_000, 2, 1000, 2, (52, 100, 200, 300, 500, 700, 1000, 2000, 4000, 6000, 7000, 9000)),
    smoke=(400, 1, 32, 2, (52, 200))), _dp_batch_sweep, _T + "dp_batch_sweep", _F + "dp_batch_sweep")
DP_OP_PROFILE = Entry("dp_op_profile", "Data parallel: time per epoch by phase vs devices", {
    **_sizes("examples epochs batch units devices", paper=(55_000, 1, 1000, 2000, (1, 2, 3, 4)),
             cpu=(11_000, 1, 1000, 1000, (1, 2, 3, 4))),
    **_sizes("examples epochs batch hidden devices", smoke=(400, 2, 200, (32, 32), (1, 2)))},
    _dp_scaling, _T + "dp_op_profile", _F + "dp_op_profile")
MP_VS_DP = Entry("mp_vs_dp", "Model parallel vs data parallel at a large batch", _sizes(
    "examples epochs batch devices config_1 config_2", paper=(55_000, (30, 60), 7000, 4, CONFIG_1, CONFIG_2),
    cpu=(14_000, (5, 10), 7000, 2, (1000,) * 4, (1000, 500, 250, 50)), smoke=(400, (2,), 200, 2, (32, 32), (32, 16))),
    _mp_vs_dp, _T + "mp_vs_dp", _F + "mp_vs_dp")
ACCURACY_VS_EPOCHS = Entry(
    "accuracy_vs_epochs", "Test accuracy vs pretraining/finetuning epochs: greedy vs model parallel", _sizes(
        "examples epochs batch hidden devices", paper=(55_000, (10, 20, 30, 40, 50, 60), 100, CONFIG_1, 4),
        cpu=(11_000, (2, 4, 6, 8, 10, 12), 100, (500,) * 4, 2), smoke=(400, (2,), 40, (32, 32), 2)),
    _accuracy, _T + "accuracy_vs_epochs", _F + "accuracy_vs_epochs")
DP_ACCURACY = Entry(
    "dp_accuracy", "Data parallel test accuracy at a large batch: report recipe vs large-batch recipe", _sizes(
        "examples epochs batch hidden devices large_batch", paper=(55_000, (30, 60), 5000, CONFIG_1, 4, _LARGE),
        cpu=(11_000, (6, 12), 1000, (500,) * 4, 2, _LARGE), smoke=(400, (2,), 200, (32, 32), 2, _LARGE + (
            "--warmup_epochs=1",))), _dp_accuracy, _T + "dp_accuracy", _F + "dp_accuracy")
STRATEGY_COMPARISON = Entry("strategy_comparison", "Does parallelism help? Pretraining time per strategy",
                            _COMPARISON, _comparison, _T + "strategy_comparison", _F + "strategy_comparison")
CONVERGENCE = Entry("convergence", "Reconstruction loss vs wall-clock seconds", _COMPARISON, _comparison,
                    _T + "convergence", _F + "convergence")
PRECISION_ACCURACY = Entry(
    "precision_accuracy", "Mixed precision (beyond the report): bfloat16 beside float32, accuracy and reconstruction",
    _sizes("examples epochs batch hidden devices", paper=(55_000, 30, 100, CONFIG_1, 2),
           cpu=(11_000, 12, 100, (500,) * 4, 2), smoke=(400, 2, 40, (32, 32), 2)),
    _precision, _T + "precision_accuracy", kind="beyond")
PP_SCALING = Entry("pp_scaling", "Pipeline parallel (beyond the report): pretraining time vs devices", _sizes(
    "examples epochs batch stacks", paper=(55_000, 30, 100, ((2000,) * 4, (1000,) * 8)),
    cpu=(11_000, 2, 100, ((1000,) * 4, (500,) * 8)), smoke=(400, 2, 40, ((32, 32),))),
    _pp_scaling, _T + "pp_scaling", _F + "pp_scaling", kind="beyond")
LARGE_BATCH = Entry(
    "large_batch", "Large-batch study: which recipe lets data parallel at a large batch match greedy", _sizes(
        "examples epochs hidden batch devices reference_batch", mid=(55_000, 10, (1000,) * 4, 5000, 2, 100)),
    _large_batch, _T + "large_batch", kind="study", layout="large_batch/{preset}/{run}.json")
FULL_SIZE = Entry("full_size", "Full size: the report's network on all 55,000 images", _sizes(
    "examples epochs hidden batch dp_batch devices", full=(55_000, 30, CONFIG_1, 100, 5000, 2)),
    _full_size, _T + "full_size", kind="study", layout="full_size/{run}.json")

ENTRIES: Tuple[Entry, ...] = (MP_SCALING_B100, MP_SCALING_B5000, DP_SCALING, DP_BATCH_SWEEP, DP_OP_PROFILE, MP_VS_DP,
                              ACCURACY_VS_EPOCHS, DP_ACCURACY, STRATEGY_COMPARISON, CONVERGENCE, PP_SCALING,
                              PRECISION_ACCURACY, LARGE_BATCH, FULL_SIZE)
NAMES = tuple(e.name for e in ENTRIES)
REPORT_ENTRIES = tuple(e.name for e in ENTRIES if e.kind == "report")
BEYOND = tuple(e.name for e in ENTRIES if e.kind == "beyond")


def get(name: str) -> Entry:
  """The entry called `name`; ValueError if none is."""
  for entry in (e for e in ENTRIES if e.name == name):
    return entry
  raise ValueError(f"unknown entry {name!r}; entries: {', '.join(NAMES)}")


def build(preset: str) -> Dict[str, EntryRuns]:
  """The entries `preset` defines in order, shared runs resolved to the first listing them; ValueError: unknown."""
  if preset not in PRESETS:
    raise ValueError(f"unknown preset {preset!r}; choose one of {', '.join(PRESETS)}")
  owner: Dict[Tuple, RunSpec] = {}
  out = {}
  for entry in (e for e in ENTRIES if preset in e.sizes):
    runs = entry.runs(dict(entry.sizes[preset], dp_flags=_DP_FLAGS[preset], preset=preset))
    first = [owner.setdefault(r.key(), dataclasses.replace(r, home=entry.name, stored_name=r.name)) for r in runs]
    out[entry.name] = EntryRuns(entry.name, tuple(dataclasses.replace(r, home=f.home, stored_name=f.stored_name)
                                                  for r, f in zip(runs, first)))
  return out


def record_file(preset: str, run: RunSpec) -> str:
  """Where the record of `run` at `preset` goes, relative to the output directory."""
  return os.path.join(*get(run.home).layout.format(entry=run.home, preset=preset, run=run.stored_name).split("/"))


def select(entries: Mapping[str, EntryRuns], only: Optional[Sequence[str]]) -> Dict[str, EntryRuns]:
  """The entries and runs named by `only` ("ENTRY" or "ENTRY/RUN"; all when empty); ValueError for unknown ones."""
  chosen: Dict[str, List[RunSpec]] = {}
  for entry, _, name in (item.partition("/") for item in only or ()):
    if entry not in entries:
      raise ValueError(f"unknown entry {entry!r}; entries of this preset: {', '.join(entries)}")
    runs = [r for r in entries[entry].runs if r.name == name or not name]
    if not runs:
      raise ValueError(f"entry {entry} has no run {name!r}; runs: {', '.join(r.name for r in entries[entry].runs)}")
    chosen.setdefault(entry, [])
    chosen[entry] += [r for r in runs if r not in chosen[entry]]
  return {name: EntryRuns(name, tuple(chosen[name])) for name in entries if name in chosen} if only else dict(entries)


_SHRINK_FLAGS = (("train_examples", "examples"), ("pretrain_epochs", "pretrain epochs"),
                 ("finetune_epochs", "finetune epochs"), ("batch_size", "batch"), ("hidden_units", "hidden units"),
                 ("num_devices", "devices"))


def shrink_notes(name: str, preset: str) -> List[str]:
  """What `preset` changes in entry `name` from the paper preset, e.g. "examples 5500 (paper 55000)"."""
  paper = build("paper")
  if preset == "paper" or name not in paper:
    return []

  def values(runs: Sequence[RunSpec], flag: str) -> str:
    found = sorted(set(r.flag(flag) for r in runs), key=lambda v: (str(type(v)), v))
    return ", ".join("x".join(map(str, v)) if isinstance(v, tuple) else str(v) for v in found)
  notes = [(label, values(build(preset)[name].runs, flag), values(paper[name].runs, flag))
           for flag, label in _SHRINK_FLAGS]
  return [f"{label} {a} (paper {b})" for label, a, b in notes if a != b]
