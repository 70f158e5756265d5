"""Model parallel: pretraining time against devices at batch 100 and 5000 (the report's mpres1.png, mpres2.png)."""

from typing import List

from experiments.presets import Study, MP, Run, spec
from experiments.report import figures
from experiments.report import tables


def _mp_scaling(s) -> List[Run]:
  return [spec(f"h{h}_g{g}", MP, (s["units"],) * h, s["epochs"], s["batch"], g, s["examples"])
          for h in s["layers"] for g in range(1, h + 1)]


MP_SCALING_B100 = Study("mp_scaling_b100", "Model parallel: pretraining time vs devices (batch 100)", dict(
    paper=dict(examples=55_000, epochs=30, batch=100, units=2000, layers=(2, 3, 4)),
    cpu=dict(examples=5500, epochs=5, batch=100, units=1000, layers=(2, 3, 4)),
    smoke=dict(examples=400, epochs=2, batch=40, units=32, layers=(2,))), _mp_scaling, tables.scaling, figures.scaling,
    order=0)

MP_SCALING_B5000 = Study("mp_scaling_b5000", "Model parallel: pretraining time vs devices (batch 5000)", dict(
    paper=dict(examples=55_000, epochs=60, batch=5000, units=2000, layers=(2, 3, 4)),
    cpu=dict(examples=10_000, epochs=10, batch=5000, units=1000, layers=(2, 3, 4)),
    smoke=dict(examples=400, epochs=2, batch=200, units=32, layers=(2,))), _mp_scaling, tables.scaling,
    figures.scaling, order=1)

STUDIES = (MP_SCALING_B100, MP_SCALING_B5000)
