"""Model parallel against data parallel at a large batch (the report's conres1.png)."""

from typing import Dict, List, Tuple

from experiments import presets, records
from experiments.presets import CONFIG_1, CONFIG_2, DP, Study, MP, Run, spec
from experiments.render import series
from experiments.render.figures import REPORT_LABEL, bars, color, finish, new
from experiments.render.tables import Others, SINGLE, Table, _seconds, fmt, md_table

# The report's model vs data parallel at batch 7000 on 4 GPUs (conres1.png): {(epochs, config): {program: seconds}}.
REPORTED = {(30, "c1"): {DP.name: 193, MP.name: 283}, (30, "c2"): {DP.name: 181, MP.name: 259},
            (60, "c1"): {DP.name: 400, MP.name: 662}, (60, "c2"): {DP.name: 371, MP.name: 493}}


def mp_vs_dp_groups(data: records.StudyRecords) -> List[Tuple[str, series.Runs]]:
  """[(group label "E epochs - Config n", {program: record})] in the report's order."""
  groups: Dict[Tuple[int, str], series.Runs] = {}
  for name, r in data.runs.items():
    config, epochs, _ = name.split("_")
    groups.setdefault((int(epochs[1:]), config), {})[series.program_of(r)] = r
  return [(f"{e} epochs - Config {c[1]}", groups[(e, c)]) for e, c in sorted(groups)]


def _mp_vs_dp(s) -> List[Run]:
  configs = {"c1": s["config_1"], "c2": s["config_2"]}
  return [spec(f"{c}_e{e}_{p.run_name}", p, configs[c], e, s["batch"], s["devices"], s["examples"],
               settings=s["dp_settings"] if p is DP else {})
          for e in s["epochs"] for c in ("c1", "c2") for p in (DP, MP)]


def table(data: records.StudyRecords, others: Others) -> Table:
  """Data vs model parallel seconds per setting, ours and the report's."""
  rep, rows = [REPORTED[k] for k in sorted(REPORTED)], []
  for i, (label, g) in enumerate(mp_vs_dp_groups(data)):
    dp, mp, r = g.get(DP.name), g.get(MP.name), rep[i] if i < len(rep) else {}
    rows.append([label, _seconds(dp), _seconds(mp), fmt(records.ratio(mp, dp) if dp and mp else None, "×"),
                 r.get(DP.name, "—"), r.get(MP.name, "—"), fmt(r[MP.name] / r[DP.name] if r else None, "×")])
  return md_table(["setting (ours)", "ours DP s", "ours MP s", "ours MP/DP", "report DP s", "report MP s",
                   "report MP/DP"], rows), [f"Ours: {series.batch_label(list(data.runs.values()))}; the report: "
                                           f"batch 7000 ({presets.REPORT_DP_BATCH_NOTE}). {SINGLE}"]


def figure(data: records.StudyRecords, others=None):
  """Grouped bars: data parallel vs model parallel seconds; ours (left), the report's (right)."""
  fig, (left, right) = new(2)
  groups, keys = mp_vs_dp_groups(data), sorted(REPORTED)
  for j, program in enumerate((DP.name, MP.name)):
    rs = [g.get(program) for _, g in groups]
    bars(left, [i + (j - 0.5) * 0.35 for i in range(len(groups))], [r["pretrain_seconds"] if r else 0.0 for r in rs],
         0.35, color(program), series.program_name(program), [bool(r) and records.oversubscribed(r) for r in rs])
    bars(right, [i + (j - 0.5) * 0.35 for i in range(len(keys))], [REPORTED[k][program] for k in keys], 0.35,
         color(program), series.program_name(program))
  ours = f"ours: {series.batch_label(list(data.runs.values()))}"
  for ax, labels, title in ((left, [label for label, _ in groups], ours),
                            (right, [f"{e} epochs - Config {c[1]}" for e, c in keys],
                             f"{REPORT_LABEL}: batch 7000 (data parallel: per tower)")):
    ax.set_xticks(range(len(labels)), labels, fontsize=8)
    ax.set_title(title, fontsize=8)
    ax.set(ylabel="pretraining seconds")
    ax.legend(fontsize=8)
  configs = sorted({"-".join(map(str, r["config"]["hidden_units"])) for _, g in groups for r in g.values()},
                   key=lambda c: (len(set(c.split("-"))), c))
  finish(fig, data, f"ours: Config 1 / Config 2 = {' / '.join(configs)}; report: 2000-2000-2000-2000 / "
         "2000-1000-500-100")
  return fig


STUDIES = (Study("mp_vs_dp", "Model parallel vs data parallel at a large batch", dict(
    paper=dict(examples=55_000, epochs=(30, 60), batch=7000, devices=4, config_1=CONFIG_1, config_2=CONFIG_2),
    cpu=dict(examples=14_000, epochs=(5, 10), batch=7000, devices=2, config_1=(1000,) * 4,
             config_2=(1000, 500, 250, 50)),
    smoke=dict(examples=400, epochs=(2,), batch=200, devices=2, config_1=(32, 32), config_2=(32, 16))), _mp_vs_dp,
    table, figure, order=5, reported=REPORTED, shares=("dp_scaling", "mp_scaling_b5000")),)
