"""The declarations: `Study` (a figure or table of results/README.md) and `Benchmark`, each a plain value in its own
file of `experiments/studies/` or `experiments/benchmarks/`; `Run` (one run: `spec`); `Registry` (every study and
benchmark, handed down by `experiments.reproduce`, the one place that finds the study files); `build` (a preset's
runs, round by round, shared runs stored where their study's `shares` says); and what several studies share: the
presets, the compared programs, the sizes and run builders of the accuracy, scaling and comparison runs."""

import dataclasses
import functools
import os
import types
from typing import Any, Callable, Dict, List, Mapping, NamedTuple, Optional, Sequence, Tuple, Union

from common.data import sources as datasets
from common.settings import config as config_lib
from common.settings import flags as settings_flags
from common.settings import programs, recipes

PRESETS = ("smoke", "cpu", "paper", "mid", "full", "pretraining")
CONFIG_1, CONFIG_2 = (2000, 2000, 2000, 2000), (2000, 1000, 500, 100)
# The report's hardware (AWS g2.8xlarge, 4 x GRID K520) and data-parallel batch, per GPU, for studies citing it.
REPORT_HARDWARE = "report (4× GRID K520)"
REPORT_DP_BATCH_NOTE = ("the report's data-parallel batch was per tower in the original code (global batch = GPUs x "
                        "batch, e.g. 20,000 for its batch 5000 on 4 GPUs); ours is the global batch, split over the "
                        "devices")
GREEDY, MP, DP, PP = programs.GREEDY, programs.MODEL_PARALLEL, programs.DATA_PARALLEL, programs.PIPELINE_PARALLEL
# The baseline and every program on several devices: a newly registered one joins these with no edit here.
COMPARED = (programs.baseline(),) + tuple(p for p in programs.PROGRAMS if not p.one_device)
ACCURACY_COMPARED = tuple(p for p in COMPARED if p is not DP)  # data_parallel's accuracy study is dp_accuracy
HELDOUT = {"heldout_every_epoch": True}  # the comparison runs' held-out reconstruction every epoch (convergence's loss)
NO_PROFILE = {"profile_steps": 0}  # data_parallel's accuracy and sweep runs skip layer 1's op profile (timed runs: not)
_DP_SETTINGS = {"smoke": {"profile_steps": 1, "profile_repeats": 1}, "mid": NO_PROFILE, "full": NO_PROFILE}
LARGE_BATCH = dict(recipes.get("large_batch").values)  # the large-batch recipe, value by value (older than --recipe)
# The large-batch study's candidates: data_parallel at the large global batch with these settings.
LARGE_BATCH_CANDIDATES = (("dp_report", {}), ("dp_linear_warmup2", {"pretrain_lr_scaling": "linear",
                          "finetune_lr_scaling": "linear", "lr_warmup_epochs": 2}), ("dp_large_batch_recipe", LARGE_BATCH))
RECIPES = (("report", {}), ("large_batch", LARGE_BATCH))
BF16 = {"precision": programs.PRECISIONS[1]}
BY_PRECISION = (("", {}), ("_bf16", BF16))  # (run-name suffix, settings) per precision, float32 first
MNIST, FASHION = datasets.DEFAULT, "fashion_mnist"  # Fashion-MNIST: an accuracy study and two full-size runs
NONE: Mapping[str, Any] = types.MappingProxyType({})  # no settings beside a run's sizes
# The settings every run's command line names, whatever their values (the rest: those not at their defaults).
SHARED = ("hidden_units", "pretrain_epochs", "finetune_epochs", "batch_size", "num_devices", "threads_per_device",
          "train_examples", "seed")
StudyRuns = Dict[str, Tuple["Run", ...]]  # {study: its runs at one preset}, in the registry's order


def dataset_prefix(dataset: str) -> str:
  """The start of a run's name that says its dataset: "" for MNIST (the default), else "<dataset>_"."""
  return "" if dataset == MNIST else f"{dataset}_"


@dataclasses.dataclass(frozen=True)
class Run:
  """One run: its name in its study, its program's `Config` (every setting; its command line comes from it), whether
  it resumes from checkpoints, the launcher's module and flags, whether it may fail (a diverging sweep candidate is a
  result); `build` sets where its record goes (`home`, `stored_name`, `layout`: its home study's)."""
  name: str
  config: config_lib.Config
  resumable: bool = False
  home: str = ""
  stored_name: str = ""
  layout: str = ""
  launcher: Tuple[str, ...] = ()
  may_fail: bool = False

  @property
  def program(self) -> str:
    """The registered program that runs it."""
    return self.config.program

  def arguments(self) -> List[str]:
    """Its program's command-line arguments: the SHARED settings, then every other not at its default."""
    return settings_flags.arguments(self.config, SHARED)

  def key(self) -> Tuple:
    """Two runs with equal keys compute the same thing."""
    return (self.config, self.launcher)

  def summary(self) -> str:
    """A short description for progress lines: program and the main settings."""
    c = self.config
    return (f"{self.program} H={len(c.hidden_units)}x{max(c.hidden_units)} G={c.num_devices} "
            f"E={c.pretrain_epochs}+{c.finetune_epochs} B={c.batch_size} N={c.train_examples}")


# The schedule every run pins unless its settings name another: no layer warm-up (`--layer_warmup_epochs`), which
# every committed record before the setting ran, so that a recipe giving a program a warm-up makes no record stale.
PINNED: Mapping[str, Any] = types.MappingProxyType({"layer_warmup_epochs": 0.0})


def spec(name: str, program: programs.Program, hidden: Sequence[int], epochs: int, batch: int, devices: int,
         examples: int, finetune_epochs: int = 0, settings: Mapping[str, Any] = NONE, resumable: bool = False,
         launcher: Sequence[str] = (), threads: int = 1, seed: int = 0, may_fail: bool = False) -> Run:
  """The Run of `program` at these sizes on `program.devices_for(devices)`, `PINNED` and `settings` on top;
  ValueError: refused."""
  values = {**PINNED, **dict(hidden_units=tuple(hidden), pretrain_epochs=epochs, finetune_epochs=finetune_epochs,
                    batch_size=batch, num_devices=program.devices_for(devices), threads_per_device=threads,
                    train_examples=examples, seed=seed), **settings}
  return Run(name, _config(program.name, tuple(values.items())), resumable, launcher=tuple(launcher), may_fail=may_fail)


@functools.lru_cache(maxsize=None)
def _config(program: str, values: Tuple[Tuple[str, Any], ...]) -> config_lib.Config:
  """The `Config` of `program` with `values` (built once: the presets declare thousands of runs, few distinct)."""
  return programs.get(program).make_config(**dict(values))


class Headline(NamedTuple):
  """A row of the results headline (`experiments.report.readme.headline`), declared by the study it reads: `order`,
  `label` (sizes said), `report` (the report's number, its sizes said; "—": none), `ours` ((output_dir, {study: its
  records}, used) -> the cell, the records it read appended to `used` for the machine column)."""
  order: int
  label: str
  report: str
  ours: Callable[[str, Mapping[str, Any], List[dict]], str]


@dataclasses.dataclass(frozen=True)
class Study:
  """A figure or table of results/README.md and its runs, a file of `experiments/studies/`'s `STUDIES`. `sizes`:
  {preset: {size: value}} of the presets that run it; `runs`: its first round (a preset's sizes plus "preset" and
  "dp_settings" -> [Run]); `table`: (its records, other folders') -> (markdown, sentences); `figure`: the same -> a
  matplotlib figure or None; `kind`: report, beyond (the report) or own; `layout` of its records; `timed`: True (it
  compares seconds: a preset's records of one machine and code, runs one at a time), False (accuracy only) or a
  function of a run's name (`times`); `reported`: the report's numbers or None; `headline`: its headline rows;
  `shares`: the studies whose record it reuses for a run computing the same (`Run.key`) at one preset; `later`: later
  rounds, each (the sizes, the records so far: `records.table`) -> [Run], built once the rounds before have records."""
  name: str
  title: str
  sizes: Mapping[str, Mapping[str, Any]]
  runs: Callable[[Mapping[str, Any]], List[Run]]
  table: Callable
  figure: Optional[Callable] = None
  kind: str = "report"
  layout: str = "runs/{study}/{preset}_{run}.json"
  timed: Union[bool, Callable[[str], bool]] = True
  order: int = 0
  reported: Any = None
  headline: Sequence[Headline] = ()
  shares: Tuple[str, ...] = ()
  later: Tuple[Callable[[Mapping[str, Any], Any], List[Run]], ...] = ()

  def times(self, run: str) -> bool:
    """Whether the study compares the seconds of its run named `run` (`timed`)."""
    return self.timed(run) if callable(self.timed) else self.timed


@dataclasses.dataclass(frozen=True)
class Benchmark:
  """A benchmark, the `BENCHMARK` of a module of `experiments/benchmarks/` run by its command line (`harness.main`):
  configurations alternated repeat after repeat, records under results/benchmarks/<name>/. `runs`: a `harness.Setting`
  -> [Run]; `summarize`: (Setting, {configuration: [record per repeat]}) -> {measure: value}; `defaults` of the shared
  flags; `options`: {flag: (default: float, int, str or list of str, help)}; `folder`: Setting -> the records' folder
  (summary_<folder>.json; summary.json for "records"); `columns`: (measure, README label); `details`: summary ->
  (caption, header, rows), a table under its row (cells a spread, number or text), or None for none; `figure`: {file
  name: summary} -> a matplotlib figure (figures/`figure_file`) or None (none drawn); `section`: output_dir ->
  markdown, its own section of results/README.md after the Benchmarks (titled `title`, its figure there); `headline`:
  its rows of the results headline; `order`."""
  name: str
  runs: Callable[[Any], List[Run]]
  summarize: Callable[[Any, Mapping[str, List[dict]]], Dict[str, Any]]
  title: str = ""
  defaults: Mapping[str, Any] = dataclasses.field(default_factory=dict)
  options: Mapping[str, Tuple[Any, str]] = dataclasses.field(default_factory=dict)
  folder: Callable[[Any], str] = lambda s: f"b{s.batch_size}"
  columns: Sequence[Tuple[str, str]] = ()
  details: Optional[Callable[[Mapping[str, Any]], Optional[Tuple[str, List[str], List[List[Any]]]]]] = None
  figure: Optional[Callable] = None
  figure_file: str = ""
  section: Optional[Callable[[str], str]] = None
  headline: Sequence[Headline] = ()
  order: int = 0


def dp_scaling_runs(s) -> List[Run]:  # the op profile: one layer (the profile is of layer 1)
  """data_parallel on each of s["devices"] at sizes `s` (with "dp_settings"), the batch cut to a multiple of them."""
  return [spec(f"g{g}", DP, s.get("hidden", (s.get("units"),)), s["epochs"], s["batch"] - s["batch"] % g, g,
               s["examples"], settings=s["dp_settings"]) for g in s["devices"]]  # a batch the replicas split evenly


def accuracy_runs(s) -> List[Run]:
  """The compared programs but data_parallel, E + E epochs per E of s["epochs"], on s["dataset"] (MNIST), resumable."""
  data = s.get("dataset", MNIST)
  return [spec(f"{dataset_prefix(data)}{p.run_name}_e{e}", p, s["hidden"], e, s["batch"],
               s["devices"], s["examples"], e, settings={"dataset": data},
               resumable=True) for e in s["epochs"] for p in ACCURACY_COMPARED]
def comparison_runs(s) -> List[Run]:
  """The baseline and every multi-device program at sizes `s`, held-out reconstruction every epoch (DP: dp_settings)."""
  return [spec(p.run_name, p, s["hidden"], s["epochs"], s["batch"], s["devices"], s["examples"],
               settings={**(s["dp_settings"] if p is DP else {}), **HELDOUT}) for p in COMPARED]


# accuracy_vs_epochs' sizes; fashion_mnist_accuracy, dp_accuracy and precision_accuracy share its runs.
ACCURACY_SIZES = dict(
    paper=dict(examples=55_000, epochs=(10, 20, 30, 40, 50, 60), batch=100, hidden=CONFIG_1, devices=4),
    cpu=dict(examples=11_000, epochs=(2, 4, 6, 8, 10, 12), batch=100, hidden=(500,) * 4, devices=2),
    smoke=dict(examples=400, epochs=(2,), batch=40, hidden=(32, 32), devices=2))

# The report's pretraining seconds per program, 60 epochs, batch 5000, 4 x 2000 (conres3.png).
COMPARISON_REPORTED = {GREEDY.name: 1105, MP.name: 702, DP.name: 1007}
# The report's test accuracy after E pretraining + E finetuning epochs (conres2.png: greedy's middle points read off
# the plot, its endpoints from the text; the text's "around 96.62%" for model parallel: ACCURACY_REPORTED_MP_TEXT).
ACCURACY_REPORTED = {GREEDY.name: {10: 0.940, 20: 0.952, 30: 0.957, 40: 0.961, 50: 0.966, 60: 0.969},
                     MP.name: {10: 0.765, 20: 0.953, 30: 0.959, 40: 0.962, 50: 0.967, 60: 0.859}}
ACCURACY_REPORTED_MP_TEXT = 0.9662
DP_ACCURACY_REPORTED = {30: 0.7472, 60: 0.8162}  # the report's DP at batch 5000 per GPU: E + E epochs -> test accuracy
# Other models' test accuracies, for context (not the report's): {dataset: {model: test accuracy}} (Fashion-MNIST's
# benchmark table, zalandoresearch/fashion-mnist).
PUBLISHED_BASELINES = {"fashion_mnist": {"MLP 256-128-100": 0.8833, "SVC (C=10, RBF)": 0.897}}
PUBLISHED = ("Published baselines: test accuracies of other models in the Fashion-MNIST benchmark table "
             "(`PUBLISHED_BASELINES` in `experiments/studies/fashion_mnist_accuracy.py`), not the report's numbers "
             "nor ours.")
ACCURACY_GOALS = {FASHION: 0.89}  # the full-size runs' test accuracy goal off MNIST (MNIST's: the report's numbers)

# Our data-parallel batch is the global one (the report's was per GPU). cpu: epochs / 6, 1000 units instead of
# 2000, fewer examples (>= 2 steps per epoch), 12 of 19 sweep batches, comparisons on 2 devices; accuracy studies:
# epochs / 5, 11,000 examples, 4 x 500 units, data-parallel global batch 1000. smoke: studies share runs.
COMPARISON_SIZES = dict(paper=dict(examples=55_000, epochs=60, batch=5000, hidden=CONFIG_1, devices=4),
                   cpu=dict(examples=10_000, epochs=10, batch=5000, hidden=(1000,) * 4, devices=2),
                   smoke=dict(examples=400, epochs=2, batch=200, hidden=(32, 32), devices=2))

class Registry(NamedTuple):
  """Every study of the presets and every benchmark, each kind in its `order` (`experiments.reproduce.discover` finds
  them; tests may build one of their own). ValueError for two of one name, or two of one kind and order."""
  studies: Tuple[Study, ...]
  benchmarks: Tuple[Benchmark, ...] = ()

  def check(self) -> "Registry":
    """Itself, sorted; ValueError as above."""
    found = self.studies + self.benchmarks
    for key, what in ((lambda e: e.name, "name"), (lambda e: (type(e), e.order), "kind and order")):
      if len({key(e) for e in found}) != len(found):
        raise ValueError(f"two studies share a {what}")
    return Registry(*(tuple(sorted(k, key=lambda e: e.order)) for k in (self.studies, self.benchmarks)))

  @property
  def names(self) -> Tuple[str, ...]:
    """The studies' names, in order."""
    return tuple(e.name for e in self.studies)

  @property
  def layouts(self) -> Dict[str, str]:
    """{study: the layout of its records} (`records.table` globs them)."""
    return {e.name: e.layout for e in self.studies}

  @property
  def rounds(self) -> int:
    """The most rounds a study declares (1 + its `later` ones): the passes `experiments.reproduce` makes."""
    return 1 + max((len(e.later) for e in self.studies), default=0)

  def get(self, name: str) -> Union[Study, Benchmark]:
    """The study or benchmark called `name`; ValueError if none is."""
    for study in (e for e in self.studies + self.benchmarks if e.name == name):
      return study
    raise ValueError(f"unknown study {name!r}; studies: {', '.join(e.name for e in self.studies + self.benchmarks)}")
def runs_of(study: Study, preset: str, found: Any = None) -> List[Run]:
  """`study`'s runs at `preset` as its file declares them (shared runs not resolved): its first round's, then those of
  each later round built from `found` (the records found so far, `records.table`; without them, none)."""
  s = dict(study.sizes[preset], dp_settings=_DP_SETTINGS.get(preset, {}), preset=preset)
  return study.runs(s) + [r for later in (study.later if found is not None else ()) for r in later(s, found)]


def build(registry: Registry, preset: str, found: Any = None) -> StudyRuns:
  """The studies `preset` defines, in order, with their runs (`runs_of`; later rounds from `found`), a run computing
  what a run of a study in its `shares` computes stored as that one (in any order); ValueError: unknown preset."""
  if preset not in PRESETS:
    raise ValueError(f"unknown preset {preset!r}; choose one of {', '.join(PRESETS)}")
  out: StudyRuns = {}
  def resolve(study: Study) -> Tuple[Run, ...]:
    if study.name not in out:
      shared = {r.key(): r for name in study.shares if preset in registry.get(name).sizes
                for r in resolve(registry.get(name))}
      out[study.name] = tuple(dataclasses.replace(r, home=shared[r.key()].home, stored_name=shared[r.key()].stored_name,
                                                  layout=shared[r.key()].layout) if r.key() in shared else
                              dataclasses.replace(r, home=study.name, stored_name=r.name, layout=study.layout)
                              for r in runs_of(study, preset, found))
    return out[study.name]
  return {e.name: resolve(e) for e in registry.studies if preset in e.sizes}


def record_file(preset: str, run: Run) -> str:
  """Where `run`'s record at `preset` goes, "/"-separated under the output directory: its key in `records.table`."""
  return run.layout.format(study=run.home, preset=preset, run=run.stored_name)


def record_path(output_dir: str, preset: str, run: Run) -> str:
  """Where the record of `run` at `preset` is written: <output_dir>/`record_file`."""
  return os.path.join(output_dir, *record_file(preset, run).split("/"))


def select(studies: StudyRuns, only: Optional[Sequence[str]]) -> StudyRuns:
  """The studies and runs named by `only` ("STUDY" or "STUDY/RUN"; all when empty); ValueError for unknown ones."""
  chosen: Dict[str, List[Run]] = {}
  for study, _, name in (item.partition("/") for item in only or ()):
    if study not in studies:
      raise ValueError(f"unknown study {study!r}; studies of this preset: {', '.join(studies)}")
    if not (runs := [r for r in studies[study] if r.name == name or not name]):
      raise ValueError(f"study {study} has no run {name!r}; runs: {', '.join(r.name for r in studies[study])}")
    chosen[study] = list(dict.fromkeys(chosen.get(study, []) + runs))
  return {name: tuple(chosen[name]) for name in studies if name in chosen} if only else dict(studies)
