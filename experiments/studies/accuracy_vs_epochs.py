"""Test accuracy vs pretraining and finetuning epochs, greedy vs the parallel programs (the report's conres2.png)."""

from typing import Dict, List, Tuple

from common.settings import programs
from experiments import presets, records
from experiments.render import series
from experiments.render.figures import PRESET_MARKERS, REPORT_LABEL, color, finish, new, points, report_series
from experiments.render.tables import Others, Table, fmt, md_table

# The report's test accuracy after E + E epochs (conres2.png), its text's "around 96.62%" for model parallel.
REPORTED, REPORTED_MP_TEXT = presets.ACCURACY_REPORTED, presets.ACCURACY_REPORTED_MP_TEXT


def accuracy_series(runs: series.Runs) -> Dict[str, List[Tuple[int, float]]]:
  """{program: [(epochs, test accuracy)]} of one preset's records."""
  out: Dict[str, List[Tuple[int, float]]] = {}
  for r in runs.values():
    if records.accuracy(r) is not None:
      out.setdefault(series.program_of(r), []).append((r["config"]["pretrain_epochs"], records.accuracy(r)))
  return {k: sorted(v) for k, v in out.items()}


def table(data: records.StudyRecords, others: Others) -> Table:
  """Test accuracy per program and epochs, every preset present and the report's."""
  rows, sentences = [], []
  for preset, runs in series.by_preset(data).items():
    rows += [[preset, series.program_name(program), f"{e}+{e}", fmt(a, "acc")]
             for program, values in accuracy_series(runs).items() for e, a in values]
    # Each layer's held-out reconstruction loss at the end of pretraining against greedy's at the same epochs.
    runs, worst = runs.values(), {}
    greedy = {r["config"]["pretrain_epochs"]: r.get("heldout_reconstruction") for r in runs
              if series.program_of(r) == programs.baseline().name}
    for r in runs:
      e, program, ours = r["config"]["pretrain_epochs"], series.program_of(r), r.get("heldout_reconstruction")
      if program != programs.baseline().name and ours and greedy.get(e):
        worst[program] = max([worst.get(program, (0.0, 0))] + [
            (abs(a["loss"] / b["loss"] - 1), e) for a, b in zip(ours, greedy[e])])
    if worst:
      sentences.append(f"{preset}: held-out reconstruction loss at the end of pretraining, per layer, relative to "
                       "greedy's at the same epochs (test images through the stack below, fixed masks): " +
                       "; ".join(f"{series.program_name(p)} within {100 * w:.1f}% (largest gap at {e}+{e} epochs)"
                                 for p, (w, e) in sorted(worst.items())) + ".")
  rows += [["report", series.program_name(p), f"{e}+{e}", f"{a:.4f}"] for p in REPORTED
           for e, a in sorted(REPORTED[p].items())]
  return md_table(["preset", "program", "epochs", "test accuracy"], rows), sentences + [
      f"The report's text gives model parallel ~{REPORTED_MP_TEXT}."]


def figure(data: records.StudyRecords, others=None):
  """Test accuracy vs (pretraining, finetuning) epochs, every preset with records; x = the i-th setting of each."""
  fig, (ax,) = new(1, width=8)
  shown = series.by_preset(data)
  settings = {p: sorted(presets.ACCURACY_SIZES[p]["epochs"]) for p in ("paper", *shown)}  # each preset's epochs
  for preset, runs in shown.items():
    positions = {e: i + 1 for i, e in enumerate(settings[preset])}
    for program, pts in sorted(accuracy_series(runs).items()):
      points(ax, [positions[e] for e, _ in pts], [a for _, a in pts], [False] * len(pts), color(program),
             f"ours ({preset}), {series.program_name(program)}", "-" if preset == data.preset else "-.",
             PRESET_MARKERS[preset])
  for program, values in REPORTED.items():
    report_series(ax, range(1, len(values) + 1), [values[e] for e in sorted(values)],
                  f"{REPORT_LABEL}, {series.program_name(program)}", color(program))
  ax.axhline(REPORTED_MP_TEXT, color="0.7", linewidth=0.8)
  ax.annotate(f"report text: model parallel ~{REPORTED_MP_TEXT:.4f}", (0.6, REPORTED_MP_TEXT),
              fontsize=7, va="bottom", color="0.4")
  labels = [f"{e}+{e}" + "".join(f"\n({p}: {s[i]}+{s[i]})" for p, s in settings.items()
                                 if i < len(s) and p != "paper") for i, e in enumerate(settings["paper"])]
  ax.set_xticks(range(1, len(labels) + 1), labels, fontsize=8)
  ax.set(xlabel="pretraining + finetuning epochs (report's; shrunk presets in brackets)", ylabel="test accuracy")
  ax.legend(fontsize=7)
  finish(fig, data, presets_shown=list(shown))
  return fig


STUDIES = (presets.Study(
    "accuracy_vs_epochs", "Test accuracy vs pretraining/finetuning epochs: greedy vs model parallel",
    presets.ACCURACY_SIZES, presets.accuracy_runs, table, figure, timed=False, order=6, reported=REPORTED),)
