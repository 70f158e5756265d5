"""The registry of entries: one `Entry` per figure or table of results/README.md, with its sizes per preset (paper,
cpu, smoke; the studies mid and full) by name, the function building its runs (`spec`: one `RunSpec` a run) and its
table and figure by dotted path."""

import dataclasses
import json
import os
from typing import Any, Callable, Dict, List, Mapping, NamedTuple, Optional, Sequence, Tuple

from common.data import sources as datasets
from common.settings import programs
from common.settings import recipes
from experiments import ROOT
from experiments import pretraining

PRESETS = ("smoke", "cpu", "paper", "mid", "full", "pretraining")
CONFIG_1, CONFIG_2 = (2000, 2000, 2000, 2000), (2000, 1000, 500, 100)
# Entries about given programs (the report's figures, and the studies' committed records) name them.
GREEDY, MP, DP, PP = programs.GREEDY, programs.MODEL_PARALLEL, programs.DATA_PARALLEL, programs.PIPELINE_PARALLEL
# The baseline and every program on several devices: a newly registered one joins these with no edit here.
COMPARED: Tuple[programs.Program, ...] = (programs.baseline(),) + tuple(p for p in programs.PROGRAMS if not p.one_device)
ACCURACY_COMPARED = tuple(p for p in COMPARED if p is not DP)  # data_parallel's accuracy entry is dp_accuracy
# The comparison runs record the held-out reconstruction after every epoch (the convergence entry's loss).
_HELDOUT = ("--heldout_every_epoch",)
# Data-parallel flags: the accuracy and sweep runs skip the op profile of layer 1; the timing runs profile it.
_NO_PROFILE = ("--profile_steps=0",)
_DP_FLAGS = {"paper": (), "cpu": (), "smoke": ("--profile_steps=1", "--profile_repeats=1"), "mid": _NO_PROFILE,
             "full": _NO_PROFILE}
# The large-batch recipe's values as explicit flags, as its records were made before --recipe existed.
_LARGE = recipes.as_flags("large_batch")
# The large-batch study's candidates: data_parallel at the large global batch with these flags.
LARGE_BATCH_CANDIDATES = (("dp_report", ()), ("dp_linear_warmup2", ("--pretrain_lr_scaling=linear",
                          "--finetune_lr_scaling=linear", "--warmup_epochs=2")),
                          ("dp_large_batch_recipe", _LARGE))
_RECIPES = (("report", ()), ("large_batch", _LARGE))
BF16 = f"--precision={programs.PRECISIONS[1]}"
MNIST, FASHION = datasets.DEFAULT, "fashion_mnist"  # Fashion-MNIST: an accuracy entry and two full-size runs


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
  may_fail: bool = False

  def flag(self, name: str) -> Any:
    """The value of shared flag `name`."""
    return dict(self.flags)[name]

  @property
  def dataset(self) -> str:
    """The --dataset of the run (MNIST unless its program flags name another)."""
    return next((f.split("=", 1)[1] for f in self.extra_flags if f.startswith("--dataset=")), MNIST)

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


def spec(name: str, program: programs.Program, hidden: Sequence[int], epochs: int, batch: int, devices: int,
         examples: int, finetune_epochs: int = 0, extra: Sequence[str] = (), resumable: bool = False,
         launcher: Sequence[str] = (), threads: int = 1, seed: int = 0, may_fail: bool = False) -> RunSpec:
  """The RunSpec of a run with every shared flag set, on `program.devices_for(devices)` devices."""
  flags = (("hidden_units", tuple(hidden)), ("pretrain_epochs", epochs), ("finetune_epochs", finetune_epochs),
           ("batch_size", batch), ("num_devices", program.devices_for(devices)),
           ("threads_per_device", threads), ("train_examples", examples), ("seed", seed))
  return RunSpec(name, program.name, flags, tuple(extra), resumable, launcher=tuple(launcher), may_fail=may_fail)


@dataclasses.dataclass(frozen=True)
class Entry:
  """A figure or table: `name`, `title`, `sizes` ({preset: {size: value}}), `runs` (sizes, "preset", "dp_flags" ->
  RunSpecs), its `table` and `figure` functions by dotted path (default: report/tables.py's and report/figures.py's
  function named as the entry; figure None: none), `kind` (report, beyond, study), its records' `layout`."""
  name: str
  title: str
  sizes: Mapping[str, Mapping[str, Any]]
  runs: Callable[[Mapping[str, Any]], List[RunSpec]]
  table: str = ""
  figure: Optional[str] = ""
  kind: str = "report"
  layout: str = "runs/{entry}/{preset}_{run}.json"
  timed: bool = True

  def __post_init__(self):
    for field, module in (("table", "tables"), ("figure", "figures")):
      if getattr(self, field) == "":
        object.__setattr__(self, field, f"experiments.report.{module}.{self.name}")


class EntryRuns(NamedTuple):
  """An entry's runs at one preset (shared runs resolved to their home entry)."""
  name: str
  runs: Tuple[RunSpec, ...]


def _mp_scaling(s) -> List[RunSpec]:
  return [spec(f"h{h}_g{g}", MP, (s["units"],) * h, s["epochs"], s["batch"], g, s["examples"])
          for h in s["layers"] for g in range(1, h + 1)]


def _dp_scaling(s) -> List[RunSpec]:  # the op profile: one layer (the profile is of layer 1)
  return [spec(f"g{g}", DP, s.get("hidden", (s.get("units"),)), s["epochs"], s["batch"] - s["batch"] % g, g,
               s["examples"], extra=s["dp_flags"]) for g in s["devices"]]  # a batch the replicas split evenly


def _dp_batch_sweep(s) -> List[RunSpec]:
  return [spec(f"b{b}", DP, (s["units"],), s["epochs"], b, s["devices"], s["examples"], extra=_NO_PROFILE)
          for b in s["batches"]]


def _mp_vs_dp(s) -> List[RunSpec]:
  configs = {"c1": s["config_1"], "c2": s["config_2"]}
  return [spec(f"{c}_e{e}_{p.run_name}", p, configs[c], e, s["batch"], s["devices"], s["examples"],
               extra=s["dp_flags"] if p is DP else ()) for e in s["epochs"] for c in ("c1", "c2") for p in (DP, MP)]


def _pp_scaling(s) -> List[RunSpec]:
  return [spec(f"h{len(h)}x{h[0]}_g{g}", PP, h, s["epochs"], s["batch"], g, s["examples"])
          for h in s["stacks"] for g in range(1, len(h) + 1)]


def _accuracy(s) -> List[RunSpec]:
  data = s.get("dataset", MNIST)
  return [spec(f"{'' if data == MNIST else data + '_'}{p.run_name}_e{e}", p, s["hidden"], e, s["batch"],
               s["devices"], s["examples"], e, extra=() if data == MNIST else (f"--dataset={data}",),
               resumable=True) for e in s["epochs"] for p in ACCURACY_COMPARED]


def _dataset_accuracy(s) -> List[RunSpec]:  # MNIST's are accuracy_vs_epochs' runs of these sizes (shared)
  return [r for d in s["datasets"] for r in _accuracy(dict(s, dataset=d))]


def _dp_accuracy(s) -> List[RunSpec]:
  recipes = (_RECIPES[0], ("large_batch", s["large_batch"]))
  # The greedy reference at the accuracy entry's batch, when it has these epochs.
  return [spec(f"dp_e{e}_{recipe}", DP, s["hidden"], e, s["batch"], s["devices"], s["examples"], e,
               extra=extra + _NO_PROFILE, resumable=True) for e in s["epochs"] for recipe, extra in recipes] + [
      r for r in _accuracy(ACCURACY_VS_EPOCHS.sizes[s["preset"]])
      if r.program == GREEDY.name and r.flag("pretrain_epochs") in s["epochs"]]


_BY_PRECISION = (("", ()), ("_bf16", (BF16,)))  # (run-name suffix, extra flags) per precision, float32 first


def _precision(s) -> List[RunSpec]:  # float32's runs are accuracy_vs_epochs' at its most epochs
  e = s["epochs"]
  return [spec(f"{p.run_name}_e{e}{suffix}", p, s["hidden"], e, s["batch"], s["devices"], s["examples"], e,
               extra=extra, resumable=True) for p in (GREEDY, PP) for suffix, extra in _BY_PRECISION]


def _comparison(s) -> List[RunSpec]:
  return [spec(p.run_name, p, s["hidden"], s["epochs"], s["batch"], s["devices"], s["examples"],
               extra=(s["dp_flags"] if p is DP else ()) + _HELDOUT) for p in COMPARED]


def _large_batch(s) -> List[RunSpec]:
  e, b = s["epochs"], s["reference_batch"]
  return [spec(f"{GREEDY.name}_b{b}", GREEDY, s["hidden"], e, b, 1, s["examples"], e, resumable=True)] + [
      spec(name, DP, s["hidden"], e, s["batch"], s["devices"], s["examples"], e, extra=flags + _NO_PROFILE,
           resumable=True) for name, flags in LARGE_BATCH_CANDIDATES]


def _full_size(s) -> List[RunSpec]:
  e, b, g = s["epochs"], s["batch"], s["devices"]
  name = lambda p: f"{p.name}{'' if p.one_device else f'_g{g}'}_b{b}_e{e}"  # noqa: E731
  return [spec(f"{name(p)}{suffix}", p, s["hidden"], e, b, g, s["examples"], e,
               extra=(_HELDOUT if p is PP else ()) + extra, resumable=True)
          for suffix, extra in _BY_PRECISION for p in (GREEDY, MP, PP)] + [
      spec(f"dp_b{s['dp_batch']}_e{e}_{recipe}", DP, s["hidden"], e, s["dp_batch"], g, s["examples"], e,
           extra=_NO_PROFILE + flags, resumable=True) for recipe, flags in _RECIPES] + [
      spec(f"{FASHION}_{name(p)}", p, s["hidden"], e, b, g, s["examples"], e,
           extra=(_HELDOUT if p is PP else ()) + (f"--dataset={FASHION}",), resumable=True) for p in (GREEDY, PP)] + [
      spec(f"{'' if d == MNIST else d + '_'}{name(p)}_tuned", p, s["hidden"], e, b, g, s["examples"], e,
           extra=("--recipe=tuned", f"--dataset={d}"), resumable=True) for d in (MNIST, FASHION) for p in (GREEDY, PP)]


def _pretraining_sweep(s) -> List[RunSpec]:
  """The coarse stage's runs, then (once every coarse record exists in s["output_dir"]) the confirm stage's."""
  datasets_ = s.get("datasets", pretraining.DATASETS)

  def runs(stage, size, candidates):
    return [spec(pretraining.run_name(stage, d, cand, seed), GREEDY, size["hidden"],
                 size["epochs"] if cand.pretrained else 0, size["batch"], 1, size["examples"], size["epochs"],
                 extra=cand.flags + (f"--dataset={d}",), seed=seed, may_fail=True)
            for cand in candidates for d in datasets_ for seed in s.get("seeds", pretraining.SEEDS)]
  coarse = runs("coarse", s["coarse"], pretraining.coarse_candidates(s.get("grid_points")))
  found = {r.name: load_json(os.path.join(s["output_dir"], "runs", "pretraining_sweep", f"{s['preset']}_{r.name}.json"))
           for r in coarse}
  if any(v is None for v in found.values()):
    return coarse
  confirm = pretraining.confirm_candidates(pretraining.rows(found, "coarse", datasets_))
  return coarse + runs("confirm", s["confirm"], confirm)


def _pretraining_ablation(s) -> List[RunSpec]:
  """Its own runs, and the sweep's confirm-stage runs of its best candidate without pretraining (shared)."""
  sweep = _pretraining_sweep(dict(PRETRAINING_SWEEP.sizes[s["preset"]], preset=s["preset"], output_dir=s["output_dir"]))
  own = [dataclasses.replace(r, name=f"{r.name.split('_')[1]}_none_own_s{r.flag('seed')}", may_fail=False)
         for r in sweep if r.name.startswith("confirm_") and r.name.split("_")[2] == "none"]
  return pretraining.ablation_runs(spec, s) + own


def _pretraining_programs(s) -> List[RunSpec]:
  return pretraining.comparison_runs(spec, s)


def load_json(path: str) -> Optional[dict]:
  """The JSON object at `path`, None when there is no file."""
  if not os.path.exists(path):
    return None
  with open(path) as f:
    return json.load(f)


# Our data-parallel batch is the global one (the report's was per GPU). cpu: epochs / 6, 1000 units instead of
# 2000, fewer examples (>= 2 steps per epoch), 12 of 19 sweep batches, comparisons on 2 devices; accuracy entries:
# epochs / 5, 11,000 examples, 4 x 500 units, data-parallel global batch 1000. smoke: entries share runs.
_COMPARISON = dict(paper=dict(examples=55_000, epochs=60, batch=5000, hidden=CONFIG_1, devices=4),
                   cpu=dict(examples=10_000, epochs=10, batch=5000, hidden=(1000,) * 4, devices=2),
                   smoke=dict(examples=400, epochs=2, batch=200, hidden=(32, 32), devices=2))
_SCALING = "experiments.report.tables.scaling", "experiments.report.figures.scaling"

MP_SCALING_B100 = Entry("mp_scaling_b100", "Model parallel: pretraining time vs devices (batch 100)", dict(
    paper=dict(examples=55_000, epochs=30, batch=100, units=2000, layers=(2, 3, 4)),
    cpu=dict(examples=5500, epochs=5, batch=100, units=1000, layers=(2, 3, 4)),
    smoke=dict(examples=400, epochs=2, batch=40, units=32, layers=(2,))), _mp_scaling, *_SCALING)
MP_SCALING_B5000 = Entry("mp_scaling_b5000", "Model parallel: pretraining time vs devices (batch 5000)", dict(
    paper=dict(examples=55_000, epochs=60, batch=5000, units=2000, layers=(2, 3, 4)),
    cpu=dict(examples=10_000, epochs=10, batch=5000, units=1000, layers=(2, 3, 4)),
    smoke=dict(examples=400, epochs=2, batch=200, units=32, layers=(2,))), _mp_scaling, *_SCALING)
DP_SCALING = Entry("dp_scaling", "Data parallel: pretraining time vs devices", dict(
    paper=dict(examples=55_000, epochs=40, batch=5000, hidden=CONFIG_1, devices=(1, 2, 3, 4)),
    cpu=dict(examples=10_000, epochs=7, batch=5000, hidden=(1000,) * 4, devices=(1, 2, 3, 4)),
    smoke=dict(examples=400, epochs=2, batch=200, hidden=(32, 32), devices=(1, 2))), _dp_scaling, *_SCALING)
DP_BATCH_SWEEP = Entry("dp_batch_sweep", "Data parallel: seconds per epoch of one layer vs global batch", dict(
    paper=dict(examples=55_000, epochs=2, units=2000, devices=4, batches=(
        52, 100, 200, 300, 400, 500, 600, 700, 800, 900, 1000, 2000, 3000, 4000, 5000, 6000, 7000, 8000, 9000)),
    cpu=dict(examples=18_000, epochs=2, units=1000, devices=2,
             batches=(52, 100, 200, 300, 500, 700, 1000, 2000, 4000, 6000, 7000, 9000)),
    smoke=dict(examples=400, epochs=1, units=32, devices=2, batches=(52, 200))), _dp_batch_sweep)
DP_OP_PROFILE = Entry("dp_op_profile", "Data parallel: time per epoch by phase vs devices", dict(
    paper=dict(examples=55_000, epochs=1, batch=1000, units=2000, devices=(1, 2, 3, 4)),
    cpu=dict(examples=11_000, epochs=1, batch=1000, units=1000, devices=(1, 2, 3, 4)),
    smoke=dict(examples=400, epochs=2, batch=200, hidden=(32, 32), devices=(1, 2))), _dp_scaling)
MP_VS_DP = Entry("mp_vs_dp", "Model parallel vs data parallel at a large batch", dict(
    paper=dict(examples=55_000, epochs=(30, 60), batch=7000, devices=4, config_1=CONFIG_1, config_2=CONFIG_2),
    cpu=dict(examples=14_000, epochs=(5, 10), batch=7000, devices=2, config_1=(1000,) * 4,
             config_2=(1000, 500, 250, 50)),
    smoke=dict(examples=400, epochs=(2,), batch=200, devices=2, config_1=(32, 32), config_2=(32, 16))), _mp_vs_dp)
ACCURACY_VS_EPOCHS = Entry(
    "accuracy_vs_epochs", "Test accuracy vs pretraining/finetuning epochs: greedy vs model parallel", dict(
        paper=dict(examples=55_000, epochs=(10, 20, 30, 40, 50, 60), batch=100, hidden=CONFIG_1, devices=4),
        cpu=dict(examples=11_000, epochs=(2, 4, 6, 8, 10, 12), batch=100, hidden=(500,) * 4, devices=2),
        smoke=dict(examples=400, epochs=(2,), batch=40, hidden=(32, 32), devices=2)), _accuracy)
DP_ACCURACY = Entry(
    "dp_accuracy", "Data parallel test accuracy at a large batch: report recipe vs large-batch recipe", dict(
        paper=dict(examples=55_000, epochs=(30, 60), batch=5000, hidden=CONFIG_1, devices=4, large_batch=_LARGE),
        cpu=dict(examples=11_000, epochs=(6, 12), batch=1000, hidden=(500,) * 4, devices=2, large_batch=_LARGE),
        smoke=dict(examples=400, epochs=(2,), batch=200, hidden=(32, 32), devices=2,
                   large_batch=_LARGE + ("--warmup_epochs=1",))), _dp_accuracy)
STRATEGY_COMPARISON = Entry("strategy_comparison", "Does parallelism help? Pretraining time per strategy",
                            _COMPARISON, _comparison)
CONVERGENCE = Entry("convergence", "Reconstruction loss vs wall-clock seconds", _COMPARISON, _comparison)
PRECISION_ACCURACY = Entry(
    "precision_accuracy", "Mixed precision (beyond the report): bfloat16 beside float32, accuracy and reconstruction",
    dict(paper=dict(examples=55_000, epochs=30, batch=100, hidden=CONFIG_1, devices=2),
         cpu=dict(examples=11_000, epochs=12, batch=100, hidden=(500,) * 4, devices=2),
         smoke=dict(examples=400, epochs=2, batch=40, hidden=(32, 32), devices=2)), _precision, figure=None,
    kind="beyond")
FASHION_MNIST_ACCURACY = Entry(
    "fashion_mnist_accuracy", "Test accuracy on Fashion-MNIST beside MNIST (beyond the report): the accuracy entry's "
    "programs", dict(cpu=dict(ACCURACY_VS_EPOCHS.sizes["cpu"], epochs=(12,), datasets=(MNIST, FASHION)),
                     smoke=dict(ACCURACY_VS_EPOCHS.sizes["smoke"], datasets=(MNIST, FASHION))),
    _dataset_accuracy, kind="beyond")
PP_SCALING = Entry("pp_scaling", "Pipeline parallel (beyond the report): pretraining time vs devices", dict(
    paper=dict(examples=55_000, epochs=30, batch=100, stacks=((2000,) * 4, (1000,) * 8)),
    cpu=dict(examples=11_000, epochs=2, batch=100, stacks=((1000,) * 4, (500,) * 8)),
    smoke=dict(examples=400, epochs=2, batch=40, stacks=((32, 32),))), _pp_scaling, kind="beyond")
LARGE_BATCH = Entry(
    "large_batch", "Large-batch study: which recipe lets data parallel at a large batch match greedy", dict(
        mid=dict(examples=55_000, epochs=10, hidden=(1000,) * 4, batch=5000, devices=2, reference_batch=100)),
    _large_batch, figure=None, kind="study", layout="large_batch/{preset}/{run}.json")
FULL_SIZE = Entry("full_size", "Full size: the report's network on all 55,000 images", dict(
    full=dict(examples=55_000, epochs=30, hidden=CONFIG_1, batch=100, dp_batch=5000, devices=2)),
    _full_size, figure=None, kind="study", layout="full_size/{run}.json")
# The pretraining studies (docs/pretraining.md): at the cpu preset's accuracy size, 3 seeds, MNIST and Fashion-MNIST.
_CPU_ACCURACY = dict(examples=11_000, epochs=12, hidden=(500,) * 4, batch=100)
_SMOKE_ACCURACY = dict(examples=400, epochs=1, hidden=(16, 16), batch=40, seeds=(0,), datasets=(MNIST,))
PRETRAINING_SWEEP = Entry(
    "pretraining_sweep", "Pretraining sweep: the tuned recipe, chosen on validation accuracy", dict(
        pretraining=dict(coarse=dict(examples=5500, epochs=6, hidden=(500,) * 4, batch=100), confirm=_CPU_ACCURACY),
        smoke=dict(coarse=_SMOKE_ACCURACY, confirm=_SMOKE_ACCURACY, grid_points=1, seeds=(0,), datasets=(MNIST,))),
    _pretraining_sweep, table="experiments.pretraining.sweep_table", figure=None, kind="study", timed=False)
PRETRAINING_ABLATION = Entry(
    "pretraining_ablation", "Does pretraining help? No pretraining, the report's recipe and the tuned one (greedy)",
    dict(pretraining=_CPU_ACCURACY, smoke=_SMOKE_ACCURACY), _pretraining_ablation,
    table="experiments.pretraining.ablation_table", figure="experiments.pretraining.ablation_figure", kind="study",
    timed=False)
PRETRAINING_PROGRAMS = Entry(
    "pretraining_programs", "The report's question asked again with the tuned recipe: every program against greedy",
    dict(pretraining=dict(_CPU_ACCURACY, devices=2), smoke=dict(_SMOKE_ACCURACY, devices=2)), _pretraining_programs,
    table="experiments.pretraining.programs_table", figure=None, kind="study")
# The whole job at full size with the fastest program, per precision (pretraining plus finetuning: a full_size run):
# the campaign's end-to-end step runs the one of the fastest precision the processor has.
_FULL = FULL_SIZE.sizes["full"]
END_TO_END = {precision: f"{PP.name}_g{_FULL['devices']}_b{_FULL['batch']}_e{_FULL['epochs']}{suffix}"
              for precision, suffix in zip(programs.PRECISIONS, ("", "_bf16"))}

ENTRIES: Tuple[Entry, ...] = (MP_SCALING_B100, MP_SCALING_B5000, DP_SCALING, DP_BATCH_SWEEP, DP_OP_PROFILE, MP_VS_DP,
                              ACCURACY_VS_EPOCHS, FASHION_MNIST_ACCURACY, DP_ACCURACY, STRATEGY_COMPARISON, CONVERGENCE,
                              PP_SCALING, PRECISION_ACCURACY, LARGE_BATCH, FULL_SIZE, PRETRAINING_SWEEP,
                              PRETRAINING_ABLATION, PRETRAINING_PROGRAMS)
NAMES = tuple(e.name for e in ENTRIES)
REPORT_ENTRIES = tuple(e.name for e in ENTRIES if e.kind == "report")
BEYOND = tuple(e.name for e in ENTRIES if e.kind == "beyond")


def get(name: str) -> Entry:
  """The entry called `name`; ValueError if none is."""
  for entry in (e for e in ENTRIES if e.name == name):
    return entry
  raise ValueError(f"unknown entry {name!r}; entries: {', '.join(NAMES)}")


def build(preset: str, output_dir: Optional[str] = None) -> Dict[str, EntryRuns]:
  """The entries `preset` defines in order, shared runs resolved to the first listing them; ValueError: unknown.
  `output_dir` (default results/) holds the records a stage's runs depend on (the pretraining sweep's confirm stage)."""
  if preset not in PRESETS:
    raise ValueError(f"unknown preset {preset!r}; choose one of {', '.join(PRESETS)}")
  owner: Dict[Tuple, RunSpec] = {}
  out = {}
  for entry in (e for e in ENTRIES if preset in e.sizes):
    runs = entry.runs(dict(entry.sizes[preset], dp_flags=_DP_FLAGS.get(preset, ()), preset=preset,
                           output_dir=output_dir or os.path.join(ROOT, "results")))
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
