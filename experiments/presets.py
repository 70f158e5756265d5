"""The registry of studies: one `Study` per figure, table or benchmark of results/README.md, declared in its own file
of `experiments/studies/` (its sizes per preset by name, the function building its runs: `spec`, one `Run` a run;
its table and figure) or `experiments/benchmarks/` (its configurations, command line and summary), found there on
first use (`STUDIES`, `BENCHMARKS`, `get`, `build`); and what several studies share: the presets, the compared
programs, the run builders of the accuracy, scaling and comparison runs."""

import dataclasses
import functools
import importlib
import os
import pkgutil
import types
from typing import Any, Callable, Dict, List, Mapping, NamedTuple, Optional, Sequence, Tuple, Union

from common.data import sources as datasets
from common.settings import config as config_lib
from common.settings import flags as settings_flags
from common.settings import programs
from common.settings import recipes
from experiments import ROOT

PRESETS = ("smoke", "cpu", "paper", "mid", "full", "pretraining")
CONFIG_1, CONFIG_2 = (2000, 2000, 2000, 2000), (2000, 1000, 500, 100)
# What the report says of itself as a whole, for every study that sets its numbers (each study's `REPORTED`) beside
# ours: its hardware (AWS g2.8xlarge, 4 x GRID K520), and its data-parallel batch, per GPU.
REPORT_HARDWARE = "report (4× GRID K520)"
REPORT_DP_BATCH_NOTE = ("the report's data-parallel batch was per tower in the original code (global batch = GPUs x "
                        "batch, e.g. 20,000 for its batch 5000 on 4 GPUs); ours is the global batch, split over the "
                        "devices")
# Studies about given programs (the report's figures, and the studies' committed records) name them.
GREEDY, MP, DP, PP = programs.GREEDY, programs.MODEL_PARALLEL, programs.DATA_PARALLEL, programs.PIPELINE_PARALLEL
# The baseline and every program on several devices: a newly registered one joins these with no edit here.
COMPARED: Tuple[programs.Program, ...] = (programs.baseline(),) + tuple(p for p in programs.PROGRAMS if not p.one_device)
ACCURACY_COMPARED = tuple(p for p in COMPARED if p is not DP)  # data_parallel's accuracy study is dp_accuracy
# The comparison runs record the held-out reconstruction after every epoch (the convergence study's loss).
HELDOUT = {"heldout_every_epoch": True}
# Data-parallel settings: the accuracy and sweep runs skip the op profile of layer 1; the timing runs profile it.
NO_PROFILE = {"profile_steps": 0}
_DP_SETTINGS = {"smoke": {"profile_steps": 1, "profile_repeats": 1}, "mid": NO_PROFILE, "full": NO_PROFILE}
# The large-batch recipe's values set one by one, as its records were made before --recipe existed.
LARGE_BATCH = dict(recipes.get("large_batch").values)
# The large-batch study's candidates: data_parallel at the large global batch with these settings.
LARGE_BATCH_CANDIDATES = (("dp_report", {}), ("dp_linear_warmup2", {"pretrain_lr_scaling": "linear",
                          "finetune_lr_scaling": "linear", "warmup_epochs": 2}), ("dp_large_batch_recipe", LARGE_BATCH))
RECIPES = (("report", {}), ("large_batch", LARGE_BATCH))
BF16 = {"precision": programs.PRECISIONS[1]}
MNIST, FASHION = datasets.DEFAULT, "fashion_mnist"  # Fashion-MNIST: an accuracy study and two full-size runs
NONE: Mapping[str, Any] = types.MappingProxyType({})  # no settings beside a run's sizes
# The settings every run's command line names, whatever their values (the rest: those not at their defaults).
SHARED = ("hidden_units", "pretrain_epochs", "finetune_epochs", "batch_size", "num_devices", "threads_per_device",
          "train_examples", "seed")


@dataclasses.dataclass(frozen=True)
class Run:
  """One run: its name in its study, its program's `Config` (every setting; its command line is derived from it),
  whether it resumes from checkpoints, the study and name its record is stored under, the launcher's module and
  flags, and whether it may fail (a sweep's candidate whose training diverges is a result)."""
  name: str
  config: config_lib.Config
  resumable: bool = False
  home: str = ""
  stored_name: str = ""
  launcher: Tuple[str, ...] = ()
  may_fail: bool = False

  @property
  def program(self) -> str:
    """The registered program that runs it."""
    return self.config.program

  def arguments(self) -> List[str]:
    """Its program's command-line arguments (`common.settings.flags.arguments`: the SHARED settings, then every
    other not at its default)."""
    return settings_flags.arguments(self.config, SHARED)

  def key(self) -> Tuple:
    """Two runs with equal keys compute the same thing."""
    return (self.config, self.launcher)

  def summary(self) -> str:
    """A short description for progress lines: program and the main settings."""
    c = self.config
    return (f"{self.program} H={len(c.hidden_units)}x{max(c.hidden_units)} G={c.num_devices} "
            f"E={c.pretrain_epochs}+{c.finetune_epochs} B={c.batch_size} N={c.train_examples}")


def spec(name: str, program: programs.Program, hidden: Sequence[int], epochs: int, batch: int, devices: int,
         examples: int, finetune_epochs: int = 0, settings: Mapping[str, Any] = NONE,
         resumable: bool = False, launcher: Sequence[str] = (), threads: int = 1, seed: int = 0,
         may_fail: bool = False) -> Run:
  """The Run of `program` with these sizes on `program.devices_for(devices)` devices and `settings` ({field: value})
  over them; ValueError (from `Config`) for a value the program refuses."""
  values = {**dict(hidden_units=tuple(hidden), pretrain_epochs=epochs, finetune_epochs=finetune_epochs,
                    batch_size=batch, num_devices=program.devices_for(devices), threads_per_device=threads,
                    train_examples=examples, seed=seed), **settings}
  return Run(name, _config(program.name, tuple(values.items())), resumable, launcher=tuple(launcher),
             may_fail=may_fail)


@functools.lru_cache(maxsize=None)
def _config(program: str, values: Tuple[Tuple[str, Any], ...]) -> config_lib.Config:
  """The `Config` of `program` with `values` (built once: the presets declare thousands of runs, few distinct)."""
  return programs.get(program).make_config(**dict(values))


class Headline(NamedTuple):
  """A row of the results headline (`experiments.report.users`), declared by the study whose records it reads:
  `order` (its place among the rows), `label` (what it is, sizes said), `report` (the report's number at the same
  sizes, with its own said; "—": none), `ours` ((output_dir, {study: its records}, used) -> the cell; the records
  it read appended to `used`, for the machine column)."""
  order: int
  label: str
  report: str
  ours: Callable[[str, Mapping[str, Any], List[dict]], str]


@dataclasses.dataclass(frozen=True)
class Study:
  """A study: a figure, table or benchmark of results/README.md and the runs behind it, declared in a file of
  `experiments/studies/` or `experiments/benchmarks/` (`STUDIES` there). `name`, `title`, `runs` (its settings ->
  [Run]), `kind` (report; beyond: beyond the report; own: the project's own questions), `order` (in every listing
  of its kind), `figure`, `reported` (the report's numbers it sets ours beside, declared in its file; None: none).

  A study of the presets (no `summarize`) is run by `experiments.reproduce`: `sizes` ({preset: {size: value}}; `runs`
  takes one with "preset", "dp_settings" and "output_dir" added), `table` ((its records, other machines' records) ->
  (markdown, sentences)), `figure` (the same -> a matplotlib figure, or None), its records' `layout`, `timed` (True:
  its table compares seconds, so its records of a preset come from one machine and code and its runs go one at a
  time; False: accuracy only; or a function of a run's name: True for the runs whose seconds it compares, `times`).

  A benchmark (`summarize` set) is run by its own command line, `experiments.benchmarks.harness`, its configurations
  alternated repeat after repeat (records under results/benchmarks/<name>/): `runs` takes a `harness.Setting`;
  `summarize` ((Setting, {configuration: [record per repeat]}) -> {measure: value}), `defaults` of the shared flags,
  `options` ({flag: (default: float, int, str or list of str, help)}), `folder` (Setting -> the records' folder; its
  summary is summary_<folder>.json, or summary.json for the fixed folder "records"), `columns` ((measure, README
  label)), `details` (summary -> (caption, header, rows): a table of its own measures under the benchmark's table,
  cells a spread, a number or text), `figure_file` (its figure's file under figures/, drawn by `report.figures`;
  its `figure`, when set, takes its summaries {file name: summary} and returns a matplotlib figure), `section` (output_dir -> markdown: a
  section of its own in results/README.md after the Benchmarks, headed by its `title`, its figure shown there).
  Either kind may declare rows of the results headline (`headline`, `Headline`s). ValueError: no `runs`."""
  name: str
  title: str = ""
  sizes: Mapping[str, Mapping[str, Any]] = dataclasses.field(default_factory=dict)
  runs: Optional[Callable[[Any], List[Run]]] = None
  table: Optional[Callable] = None
  figure: Optional[Callable] = None
  kind: str = "report"
  layout: str = "runs/{study}/{preset}_{run}.json"
  timed: Union[bool, Callable[[str], bool]] = True
  order: int = 0
  reported: Any = None
  summarize: Optional[Callable[[Any, Mapping[str, List[dict]]], Dict[str, Any]]] = None
  defaults: Mapping[str, Any] = dataclasses.field(default_factory=dict)
  options: Mapping[str, Tuple[Any, str]] = dataclasses.field(default_factory=dict)
  folder: Callable[[Any], str] = lambda s: f"b{s.batch_size}"
  columns: Sequence[Tuple[str, str]] = ()
  details: Optional[Callable[[Mapping[str, Any]], Tuple[str, List[str], List[List[Any]]]]] = None
  figure_file: str = ""
  section: Optional[Callable[[str], str]] = None
  headline: Sequence[Headline] = ()

  def __post_init__(self):
    if self.runs is None:
      raise ValueError(f"study {self.name!r} declares no runs")

  def times(self, run: str) -> bool:
    """Whether the study compares the seconds of its run named `run` (`timed`)."""
    return self.timed(run) if callable(self.timed) else self.timed

  @property
  def benchmark(self) -> bool:
    """True for a benchmark (run by its own command line and the harness), False for a study of the presets."""
    return self.summarize is not None


class StudyRuns(NamedTuple):
  """A study's runs at one preset (shared runs resolved to their home study)."""
  name: str
  runs: Tuple[Run, ...]


def dp_scaling_runs(s) -> List[Run]:  # the op profile: one layer (the profile is of layer 1)
  """data_parallel on each device count of s["devices"] at sizes `s` (a study's sizes with "dp_settings"), its batch
  cut to a multiple of the devices."""
  return [spec(f"g{g}", DP, s.get("hidden", (s.get("units"),)), s["epochs"], s["batch"] - s["batch"] % g, g,
               s["examples"], settings=s["dp_settings"]) for g in s["devices"]]  # a batch the replicas split evenly


def accuracy_runs(s) -> List[Run]:
  """Every compared program but data_parallel, pretraining and finetuning E + E epochs for each E of s["epochs"], on
  s["dataset"] (default MNIST), resumable."""
  data = s.get("dataset", MNIST)
  return [spec(f"{'' if data == MNIST else data + '_'}{p.run_name}_e{e}", p, s["hidden"], e, s["batch"],
               s["devices"], s["examples"], e, settings={"dataset": data},
               resumable=True) for e in s["epochs"] for p in ACCURACY_COMPARED]


BY_PRECISION = (("", {}), ("_bf16", BF16))  # (run-name suffix, settings) per precision, float32 first


def comparison_runs(s) -> List[Run]:
  """The baseline and every multi-device program at sizes `s`, each layer's held-out reconstruction after every
  epoch (data_parallel with s["dp_settings"])."""
  return [spec(p.run_name, p, s["hidden"], s["epochs"], s["batch"], s["devices"], s["examples"],
               settings={**(s["dp_settings"] if p is DP else {}), **HELDOUT}) for p in COMPARED]


# Our data-parallel batch is the global one (the report's was per GPU). cpu: epochs / 6, 1000 units instead of
# 2000, fewer examples (>= 2 steps per epoch), 12 of 19 sweep batches, comparisons on 2 devices; accuracy studies:
# epochs / 5, 11,000 examples, 4 x 500 units, data-parallel global batch 1000. smoke: studies share runs.
COMPARISON_SIZES = dict(paper=dict(examples=55_000, epochs=60, batch=5000, hidden=CONFIG_1, devices=4),
                   cpu=dict(examples=10_000, epochs=10, batch=5000, hidden=(1000,) * 4, devices=2),
                   smoke=dict(examples=400, epochs=2, batch=200, hidden=(32, 32), devices=2))

@functools.lru_cache(maxsize=None)
def _registered() -> Tuple[Study, ...]:
  """Every study declared in experiments/studies/ and experiments/benchmarks/ (each module's STUDIES), the presets'
  first, each kind in its order; ValueError for two of one name, or two of one kind and order."""
  from experiments import benchmarks  # noqa: the packages of study files, imported on first use
  from experiments import studies  # noqa
  found = [e for package in (studies, benchmarks) for m in pkgutil.iter_modules(package.__path__) for e in
           getattr(importlib.import_module(f"{package.__name__}.{m.name}"), "STUDIES", ())]
  for key, what in ((lambda e: e.name, "name"), (lambda e: (e.benchmark, e.order), "kind and order")):
    if len({key(e) for e in found}) != len(found):
      raise ValueError(f"two studies share a {what}")
  return tuple(sorted(found, key=lambda e: (e.benchmark, e.order)))


def __getattr__(attribute: str):
  """STUDIES (every study of the presets, in order), BENCHMARKS (every benchmark, in order), NAMES (of STUDIES),
  REPORT_STUDIES and BEYOND (the names of those of kind report and beyond), END_TO_END
  (`experiments.studies.full_size`), and each study by its name in capitals (presets.FULL_SIZE): found on first use,
  so a study file may import this module."""
  if attribute in ("STUDIES", "BENCHMARKS"):
    return tuple(e for e in _registered() if e.benchmark == (attribute == "BENCHMARKS"))
  if attribute == "NAMES":
    return tuple(e.name for e in _registered() if not e.benchmark)
  if attribute in ("REPORT_STUDIES", "BEYOND"):
    kind = {"REPORT_STUDIES": "report", "BEYOND": "beyond"}[attribute]
    return tuple(e.name for e in _registered() if e.kind == kind and not e.benchmark)
  if attribute == "END_TO_END":
    return importlib.import_module("experiments.studies.full_size").END_TO_END
  if attribute.isupper() and any(e.name == attribute.lower() for e in _registered()):
    return get(attribute.lower())
  raise AttributeError(f"module {__name__!r} has no attribute {attribute!r}")


def get(name: str) -> Study:
  """The study called `name`; ValueError if none is."""
  for study in (e for e in _registered() if e.name == name):
    return study
  raise ValueError(f"unknown study {name!r}; studies: {', '.join(e.name for e in _registered())}")


def build(preset: str, output_dir: Optional[str] = None) -> Dict[str, StudyRuns]:
  """The studies `preset` defines in order, shared runs resolved to the first listing them; ValueError: unknown.
  `output_dir` (default results/) holds the records a stage's runs depend on (the pretraining sweep's confirm stage)."""
  if preset not in PRESETS:
    raise ValueError(f"unknown preset {preset!r}; choose one of {', '.join(PRESETS)}")
  owner: Dict[Tuple, Run] = {}
  out = {}
  for study in (e for e in _registered() if preset in e.sizes and not e.benchmark):
    runs = study.runs(dict(study.sizes[preset], dp_settings=_DP_SETTINGS.get(preset, {}), preset=preset,
                           output_dir=output_dir or os.path.join(ROOT, "results")))
    first = [owner.setdefault(r.key(), dataclasses.replace(r, home=study.name, stored_name=r.name)) for r in runs]
    out[study.name] = StudyRuns(study.name, tuple(dataclasses.replace(r, home=f.home, stored_name=f.stored_name)
                                                  for r, f in zip(runs, first)))
  return out


def record_file(preset: str, run: Run) -> str:
  """Where the record of `run` at `preset` goes, relative to the output directory."""
  return os.path.join(*get(run.home).layout.format(study=run.home, preset=preset, run=run.stored_name).split("/"))


def select(studies: Mapping[str, StudyRuns], only: Optional[Sequence[str]]) -> Dict[str, StudyRuns]:
  """The studies and runs named by `only` ("STUDY" or "STUDY/RUN"; all when empty); ValueError for unknown ones."""
  chosen: Dict[str, List[Run]] = {}
  for study, _, name in (item.partition("/") for item in only or ()):
    if study not in studies:
      raise ValueError(f"unknown study {study!r}; studies of this preset: {', '.join(studies)}")
    runs = [r for r in studies[study].runs if r.name == name or not name]
    if not runs:
      raise ValueError(f"study {study} has no run {name!r}; runs: {', '.join(r.name for r in studies[study].runs)}")
    chosen.setdefault(study, [])
    chosen[study] += [r for r in runs if r not in chosen[study]]
  return {name: StudyRuns(name, tuple(chosen[name])) for name in studies if name in chosen} if only else dict(studies)


_SHRINK_FLAGS = (("train_examples", "examples"), ("pretrain_epochs", "pretrain epochs"),
                 ("finetune_epochs", "finetune epochs"), ("batch_size", "batch"), ("hidden_units", "hidden units"),
                 ("num_devices", "devices"))


def shrink_notes(name: str, preset: str) -> List[str]:
  """What `preset` changes in study `name` from the paper preset, e.g. "examples 5500 (paper 55000)"."""
  paper = build("paper")
  if preset == "paper" or name not in paper:
    return []

  def values(runs: Sequence[Run], flag: str) -> str:
    found = sorted(set(getattr(r.config, flag) for r in runs), key=lambda v: (str(type(v)), v))
    return ", ".join("x".join(map(str, v)) if isinstance(v, tuple) else str(v) for v in found)
  notes = [(label, values(build(preset)[name].runs, flag), values(paper[name].runs, flag))
           for flag, label in _SHRINK_FLAGS]
  return [f"{label} {a} (paper {b})" for label, a, b in notes if a != b]
