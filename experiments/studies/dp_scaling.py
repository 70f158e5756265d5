"""Data parallel: pretraining time against devices (the report: "near linear")."""

from experiments import presets
from experiments.render import figures, tables

STUDIES = (presets.Study("dp_scaling", "Data parallel: pretraining time vs devices", dict(
    paper=dict(examples=55_000, epochs=40, batch=5000, hidden=presets.CONFIG_1, devices=(1, 2, 3, 4)),
    cpu=dict(examples=10_000, epochs=7, batch=5000, hidden=(1000,) * 4, devices=(1, 2, 3, 4)),
    smoke=dict(examples=400, epochs=2, batch=200, hidden=(32, 32), devices=(1, 2))), presets.dp_scaling_runs,
    tables.scaling, figures.scaling, order=2,
    reported="near linear in the number of GPUs (no numbers given)"),)  # the report's words (40 epochs, batch 5000)
