"""Does parallelism help? Pretraining time per program (the report's conres3.png)."""

from common.settings import programs
from experiments import presets, records
from experiments.render import series, tables
from experiments.render.figures import REPORT_LABEL, bars, color, finish, new
from experiments.render.series import program_records
from experiments.render.tables import Others, Table, _seconds, cores_note, fmt, md_table

REPORTED = presets.COMPARISON_REPORTED


def table(data: records.StudyRecords, others: Others) -> Table:
  """Seconds and speedup over greedy per program, ours and the report's."""
  rs, rep = program_records(data), REPORTED
  base = rs.get(programs.baseline().run_name)
  rows = [[series.program_name(p), series.batch_label([r]), _seconds(r),
           fmt(records.ratio(base, r) if base else None, "×"), rep.get(p, "—"),
           fmt(rep[presets.GREEDY.name] / rep[p], "×") if p in rep else "—"]
          for r in rs.values() for p in [series.program_of(r)]]
  return md_table(["program", "ours batch", "ours s", "ours speedup", "report s", "report speedup"], rows), [
      "Single runs; the benchmarks in the Benchmarks section repeat the comparison with spread.",
      f"The report ran batch 5000 ({presets.REPORT_DP_BATCH_NOTE}).", cores_note(data, others)]


def figure(data: records.StudyRecords, others=None):
  """Bars of pretraining seconds per program with speedups over greedy; ours and the report's."""
  fig, (left, right) = new(2, width=5.5)
  rs, rep = program_records(data), REPORTED
  base = rs.get(programs.baseline().run_name)
  ours = [(series.program_of(r), r["pretrain_seconds"], records.oversubscribed(r),
           tables.fmt(records.ratio(base, r), "×")[:-1] if base else "") for r in rs.values()]
  theirs = [(p, s, False, f"{rep[presets.GREEDY.name] / s:.2f}") for p, s in rep.items()]
  for ax, shown, title in ((left, ours, "ours, single runs (speedup over greedy inside the bars)"),
                           (right, theirs, REPORT_LABEL)):
    for i, (program, s, over, speedup) in enumerate(shown):
      bars(ax, [i], [s], 0.6, color(program), series.program_name(program), [over])
      if speedup:  # readable on any bar: dark text on a white box
        ax.annotate(f"{speedup}x", (i, s / 2), ha="center", fontsize=9,
                    bbox=dict(boxstyle="round", fc="white", ec="none", alpha=0.8))
    ax.set_xticks(range(len(shown)), [series.program_name(p) for p, *_ in shown], fontsize=8)
    ax.set_title(title, fontsize=9)
    ax.set_ylabel("pretraining seconds")
  finish(fig, data, f"ours: {series.batch_label(list(rs.values()))}; report: batch 5000 (data parallel: per tower)")
  return fig


STUDIES = (presets.Study("strategy_comparison", "Does parallelism help? Pretraining time per program",
                         presets.COMPARISON_SIZES, presets.comparison_runs, table, figure, order=9, reported=REPORTED),)
