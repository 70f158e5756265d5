"""Model parallel: pretraining time against devices at batch 100 and 5000 (the report's mpres1.png, mpres2.png)."""

from typing import List

from experiments.presets import Study, MP, Run, spec
from experiments.render import figures, tables

# The report's pretraining seconds, {hidden layers: {GPUs: seconds}}. Endpoints from the text; the points in between
# read off mpres1.png / mpres2.png (about 1-2% of an axis).
REPORTED_B100 = {2: {1: 236, 2: 238}, 3: {1: 408, 2: 431, 3: 329}, 4: {1: 611, 2: 430, 3: 548, 4: 472}}
REPORTED_B5000 = {2: {1: 530, 2: 385}, 3: {1: 960, 2: 1097, 3: 522}, 4: {1: 1475, 2: 1100, 3: 1085, 4: 702}}


def _mp_scaling(s) -> List[Run]:
  return [spec(f"h{h}_g{g}", MP, (s["units"],) * h, s["epochs"], s["batch"], g, s["examples"])
          for h in s["layers"] for g in range(1, h + 1)]


STUDIES = (Study("mp_scaling_b100", "Model parallel: pretraining time vs devices (batch 100)", dict(
    paper=dict(examples=55_000, epochs=30, batch=100, units=2000, layers=(2, 3, 4)),
    cpu=dict(examples=5500, epochs=5, batch=100, units=1000, layers=(2, 3, 4)),
    smoke=dict(examples=400, epochs=2, batch=40, units=32, layers=(2,))), _mp_scaling, tables.scaling, figures.scaling,
    order=0, reported=REPORTED_B100),
    Study("mp_scaling_b5000", "Model parallel: pretraining time vs devices (batch 5000)", dict(
    paper=dict(examples=55_000, epochs=60, batch=5000, units=2000, layers=(2, 3, 4)),
    cpu=dict(examples=10_000, epochs=10, batch=5000, units=1000, layers=(2, 3, 4)),
    smoke=dict(examples=400, epochs=2, batch=200, units=32, layers=(2,))), _mp_scaling, tables.scaling,
    figures.scaling, order=1, reported=REPORTED_B5000),)
