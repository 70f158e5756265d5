"""Test accuracy on Fashion-MNIST beside MNIST (beyond the report): the accuracy study's programs."""

from typing import Dict, List

from experiments import presets, records
from experiments.presets import Study, FASHION, MNIST, Run
from experiments.render import series
from experiments.render.figures import COLORS, bars, finish, new
from experiments.render.tables import Others, SINGLE, Table, fmt, md_table

PUBLISHED_BASELINES, PUBLISHED = presets.PUBLISHED_BASELINES, presets.PUBLISHED


def dataset_accuracy(data: records.StudyRecords) -> Dict[str, Dict[str, float]]:
  """{dataset: {program: test accuracy}} of `fashion_mnist_accuracy`'s shown preset, in the study's order of datasets
  and of programs (`presets.ACCURACY_COMPARED`); a program without a record (or accuracy) is left out."""
  found = {(records.dataset(r), series.program_of(r)): records.accuracy(r) for r in data.runs.values()}
  return {d: {p.name: found[(d, p.name)] for p in presets.ACCURACY_COMPARED if found.get((d, p.name)) is not None}
          for d in data.declared.sizes[data.preset]["datasets"]}


def _dataset_accuracy(s) -> List[Run]:  # MNIST's are accuracy_vs_epochs' runs of these sizes (shared)
  return [r for d in s["datasets"] for r in presets.accuracy_runs(dict(s, dataset=d))]


def table(data: records.StudyRecords, others: Others) -> Table:
  """Test accuracy per program on each dataset (MNIST's: accuracy_vs_epochs' runs), the published baselines beside."""
  acc, e = dataset_accuracy(data), max(data.declared.sizes[data.preset]["epochs"])
  baselines = dict.fromkeys(m for d in acc for m in PUBLISHED_BASELINES.get(d, {}))
  rows = [[series.program_name(p.name), f"{e}+{e}"] + [fmt(a[p.name], "acc") if p.name in a else "not run yet"
                                                      for a in acc.values()] for p in presets.ACCURACY_COMPARED]
  rows += [[f"published: {m}", "—"] + [PUBLISHED_BASELINES.get(d, {}).get(m, "—") for d in acc] for m in baselines]
  return md_table(["program", "epochs"] + [f"{records.dataset_label(d)} test accuracy" for d in acc], rows), [
      "The programs of `accuracy_vs_epochs` at its size and most epochs on each dataset; MNIST's runs are that "
      f"study's (shared records). {SINGLE} {PUBLISHED}"]


def figure(data: records.StudyRecords, others=None):
  """Bars of test accuracy per program, each dataset of the study side by side; the published baselines dashed."""
  fig, (ax,) = new(1, width=8)
  acc, names = dataset_accuracy(data), [p.name for p in presets.ACCURACY_COMPARED]
  e = max(data.declared.sizes[data.preset]["epochs"])
  for j, (dataset, by) in enumerate(acc.items()):
    bars(ax, [i + (j + 0.5 - len(acc) / 2) * 0.8 / len(acc) for i, n in enumerate(names) if n in by],
         [by[n] for n in names if n in by], 0.8 / len(acc), COLORS[j], f"ours, {records.dataset_label(dataset)}",
         annotate="{:.3f}")
  for k, (d, m, a) in enumerate((d, m, a) for d in acc for m, a in PUBLISHED_BASELINES.get(d, {}).items()):
    ax.axhline(a, ls=("--", ":")[k % 2], color="0.3", lw=1, label=f"published, {records.dataset_label(d)}: {m} {a}")
  ax.set_xticks(range(len(names)), [series.program_name(n) for n in names], fontsize=8)
  ax.set(ylim=(min([0.85] + [a for by in acc.values() for a in by.values()]) - 0.05, 1.06), ylabel="test accuracy")
  ax.legend(fontsize=7, loc="upper center", ncol=2)
  finish(fig, data, f"{e}+{e} epochs, single runs; MNIST: accuracy_vs_epochs' runs; published baselines: other models "
                    "(the Fashion-MNIST benchmark table), not the report's numbers")
  return fig


STUDIES = (Study(
    "fashion_mnist_accuracy", "Test accuracy on Fashion-MNIST beside MNIST (beyond the report): the accuracy study's "
    "programs", dict(cpu=dict(presets.ACCURACY_SIZES["cpu"], epochs=(12,), datasets=(MNIST, FASHION)),
                     smoke=dict(presets.ACCURACY_SIZES["smoke"], datasets=(MNIST, FASHION))),
    _dataset_accuracy, table, figure, kind="beyond", timed=False, order=7, shares=("accuracy_vs_epochs",)),)
