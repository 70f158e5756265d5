"""Data-parallel finetuning at a large batch from fixed pretrained weights: which learning rate and warm-up.

Finetuning is where the large batch costs the report its accuracy (0.7472 after 30+30 epochs at batch
5000); this experiment isolates it: every variant finetunes the same pretrained stack (a .npz written by
`--export_weights`) on the same replicas and batch, with the library's data-parallel finetuning
(`common.finetune.run_finetuning`), and reports validation and test accuracy.

Usage (accuracies, not timings: a shared CPU lock is enough):
  flock -s /work/cpu.lock .venv/bin/python -m experiments.dp_finetune_sweep --weights=pretrained.npz \
      --variants=lr0.5_w2:0.5:2,lr1_w2:1.0:2 --output=results/large_batch/mid/finetune_sweep.json
A variant is name:learning_rate:warmup_epochs[:momentum] (warm-up from the reference 0.1 to learning_rate;
momentum 0 by default: plain SGD; "adam" instead of a momentum: Adam, warm-up from learning_rate / sqrt(k),
k = batch / 100, as in the large-batch recipe).
"""

import json
import os
import sys
import types

from absl import app
from absl import flags
from absl import logging

from common import config as common_config
from common import data
from common import devices
from common import finetune
from common import runlog
from common import sgd
from common import timing
from data_parallel import config as config_lib
from data_parallel import replicas

_WEIGHTS = flags.DEFINE_string("weights", None, "Pretrained weights (.npz from --export_weights).", required=True)
_VARIANTS = flags.DEFINE_list("variants", ["lr0.5_w2:0.5:2", "lr1_w2:1.0:2", "lr2_w2:2.0:2"],
                              "name:learning_rate:warmup_epochs[:momentum], ...")
_BATCH = flags.DEFINE_integer("batch_size", 5000, "Global finetuning batch.")
_EPOCHS = flags.DEFINE_integer("finetune_epochs", 10, "Finetuning epochs.")
_DEVICES = flags.DEFINE_integer("num_devices", 2, "Replicas.")
_REFERENCE_LR = flags.DEFINE_float("reference_learning_rate", 0.1, "Where the warm-up starts (the report's rate).")
_OUTPUT = flags.DEFINE_string("output", None, "JSON file for the results.", required=True)


def main(argv):
  del argv
  logging.set_verbosity(logging.WARNING)
  setup = devices.setup(_DEVICES.value, 1)
  weights = runlog.load_weights(_WEIGHTS.value)
  hidden = [weights[f"layer{i}/bias"].shape[0] for i in range(1, len(weights) // 3 + 1)]
  layers = [types.SimpleNamespace(kernel=weights[f"layer{i}/kernel"], bias=weights[f"layer{i}/bias"])
            for i in range(1, len(hidden) + 1)]
  mnist = data.load_mnist()
  strategy = replicas.make_strategy(setup.names)
  config = common_config.Config(hidden_units=tuple(hidden), finetune_epochs=_EPOCHS.value, batch_size=_BATCH.value,
                                num_devices=_DEVICES.value)
  steps = mnist.num_train // _BATCH.value
  results = []
  for variant in _VARIANTS.value:
    name, lr, warmup_epochs, momentum = (variant.split(":") + ["0"])[:4]
    if momentum == "adam":
      rule, lr, warmup_epochs = sgd.UpdateRule("adam"), float(lr), float(warmup_epochs)
      factor = config_lib.scale("sqrt", _BATCH.value, 100)  # As --finetune_lr_scaling=sqrt warms up.
    else:
      lr, warmup_epochs, momentum = float(lr), float(warmup_epochs), float(momentum)
      rule = sgd.UpdateRule("momentum", momentum) if momentum else sgd.SGD
      # The warm-up starts at the reference effective rate: lr / (1 - momentum) = reference.
      factor = lr / (_REFERENCE_LR.value * (1 - momentum))
    with strategy.scope():
      classifier = finetune.Classifier(hidden, config.seed)
    schedule = config_lib.warmup(factor, warmup_epochs, steps)
    out = finetune.run_finetuning(classifier, layers, mnist, config, {}, lambda _: 0.0, timing.PhaseTimer(),
                                  strategy=strategy, learning_rate=lr, schedule=schedule, rule=rule)
    results.append({"name": name, "learning_rate": lr, "warmup_epochs": warmup_epochs, **out})
    print(f"{name}: test accuracy {out['test_accuracy']:.4f}, validation {out['validation_accuracy']:.4f}, "
          f"last loss {out['history'][-1]['loss']:.4f}", flush=True)
  os.makedirs(os.path.dirname(os.path.abspath(_OUTPUT.value)), exist_ok=True)
  with open(_OUTPUT.value, "w") as f:
    json.dump({"command": "python -m experiments.dp_finetune_sweep " + " ".join(sys.argv[1:]),
               "weights": _WEIGHTS.value, "hidden_units": hidden, "batch_size": _BATCH.value,
               "num_devices": _DEVICES.value, "finetune_epochs": _EPOCHS.value, "variants": results}, f, indent=1)


if __name__ == "__main__":
  app.run(main)
