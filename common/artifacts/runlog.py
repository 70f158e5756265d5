"""The run record every program writes (`<results_dir>/<run_name>.json`) and the exported weights.

Record layout (docs/programs.md, "The run record"):
  {"strategy", "config": {all flag values}, "environment": {tensorflow, device_kind, devices, thread_pool,
   kernels, precision, cpu_count, usable_cores, cpu_model, commit, commit_dirty, code_digest, hostname, ...;
   in a cluster also cluster, cluster_manager},
   "pretrain_seconds", "layers": [{"index", "units", "device",
   "epochs": [{"loss", "seconds"}, ...]}, ...], "timing": {phase: seconds}, "finetune": {...},
   "total_seconds", "input_drift": {per layer n > 1 and epoch, how far the codes it read were from the final
   codes below it: `common.model.input_drift`}}
plus, written by `common.run.lifecycle.finish`: "process_seconds" (= "total_seconds", this process's wall
seconds), "run_seconds" and "run_processes" (the whole run, over its resumed processes), "resumed",
"resumed_from" and "skipped_checkpoints" (docs/troubleshooting.md), "warnings" and "diverged" (a run that
learned nothing).
"""

import datetime
import json
import os
import platform
import socket
from typing import Any, Dict, Iterable, List, Optional

import numpy as np
import tensorflow as tf

from common.data import sources as datasets
from common.distribute import devices as devices_lib
from common.distribute import slurm
from common.measure import provenance
from common.settings import config as config_lib

REQUIRED_FIELDS = ("strategy", "config", "environment", "pretrain_seconds", "layers", "timing",
                   "finetune", "total_seconds", "input_drift")


def environment(device_setup: devices_lib.DeviceSetup, precision: str = "float32") -> Dict[str, Any]:
  """The hardware and software a run used: TensorFlow version, devices, cores (all, and those this process may
  use), processor, host, time (UTC), precision, and the code (`common.measure.provenance`: commit, dirty tree, digest);
  in a cluster also "cluster" (`DeviceSetup.to_record`) and "cluster_manager" (`common.distribute.slurm.manager`:
  slurm, TF_CONFIG or in_process, with every task's host)."""
  env = {
      "tensorflow": tf.__version__,
      "python": platform.python_version(),
      "cpu_count": os.cpu_count(),
      **provenance.fields(),
      "precision": precision,
      "hostname": socket.gethostname(),
      "platform": platform.platform(),
      "date_utc": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
  }
  env.update(device_setup.to_record())
  if device_setup.cluster is not None:  # Who started the tasks, and every task's host.
    env["cluster_manager"] = slurm.manager(device_setup.cluster)
  return env


def new_record(config: config_lib.Config, device_setup: devices_lib.DeviceSetup) -> Dict[str, Any]:
  """A record with every contract field present; the program fills in the results."""
  return {"strategy": config.program, "config": config.to_dict(),
          "environment": environment(device_setup, config.precision),
          "pretrain_seconds": 0.0, "layers": [], "timing": {}, "finetune": None, "total_seconds": 0.0,
          "input_drift": None}


def record_path(record: Dict[str, Any], config: config_lib.Config) -> str:
  """Where `write_record` puts `record`: <results_dir>/<run_name>.json."""
  return os.path.join(config.results_dir or ".", f"{record.get('run_name') or config.effective_run_name}.json")


def write_record(record: Dict[str, Any], config: config_lib.Config, path: Optional[str] = None) -> Optional[str]:
  """Writes `record` as JSON to `path` (default `record_path`), atomically; returns the path.

  Returns None (and writes nothing) when `config.results_dir` is None.

  Raises:
    OSError: the file cannot be written.
  """
  if not config.results_dir:
    return None
  path = path or record_path(record, config)
  os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
  tmp = path + ".tmp"
  with open(tmp, "w") as f:
    json.dump(record, f, indent=1, sort_keys=False)
    f.write("\n")
  os.replace(tmp, path)
  return path


def layer_weights(layers: Iterable) -> Dict[str, np.ndarray]:
  """{"layerN/kernel", "layerN/bias", "layerN/decoder_bias": float32 array} of `DenoisingAutoencoder`s."""
  arrays: Dict[str, np.ndarray] = {}
  for layer in layers:
    arrays.update(layer.numpy_weights())
  return arrays


def export_weights(path: str, arrays: Dict[str, np.ndarray]) -> str:
  """Writes weights to `path` (.npz): the pretrained "layerN/kernel", "layerN/bias", "layerN/decoder_bias"
  (`layer_weights`) and, after finetuning, the classifier's "finetuned/..." keys (`common.model.export.classifier_weights`),
  float32.

  Returns:
    The file written: `path`, with ".npz" appended when it lacks it (as `numpy.savez` does).

  Raises:
    OSError: the file cannot be written.
  """
  path = path if path.endswith(".npz") else path + ".npz"
  directory = os.path.dirname(os.path.abspath(path))
  os.makedirs(directory, exist_ok=True)
  np.savez(path, **arrays)
  return path


def load_weights(path: str) -> Dict[str, np.ndarray]:
  """Reads an `export_weights` file into {key: float32 array}."""
  with np.load(path) as f:
    return {k: f[k] for k in f.files}


def health_warnings(record: Dict[str, Any]) -> List[str]:
  """Signs that a run that ended normally learned nothing: the messages, or [] for a healthy run.

  Two checks on the record, made once at the end (nothing is added to a training step):
    - layer 1's reconstruction loss never fell below its first epoch's (layer 1's input, the images,
      never moves, so its loss falls in any working run of two or more epochs): a finite divergence,
      e.g. a learning rate so high the sigmoids saturate;
    - the finetuned test accuracy is at chance (at most `common.data.sources.chance_accuracy` of the data's K classes:
      0.12 for 10).

  Args:
    record: a run record with "layers" (per epoch "loss") and "finetune" (None or with "test_accuracy").
  """
  warnings = []
  layers = record.get("layers") or []
  losses = [e["loss"] for e in layers[0].get("epochs", [])] if layers else []
  if len(losses) >= 2 and not min(losses[1:]) < losses[0]:
    warnings.append(
        f"Layer 1's reconstruction loss never fell below its first epoch's ({losses[0]:.4g} in epoch 1, "
        f"{losses[-1]:.4g} in epoch {len(losses)}): pretraining diverged without overflowing; lower "
        "--pretrain_learning_rate.")
  accuracy = (record.get("finetune") or {}).get("test_accuracy")
  classes = (record.get("dataset") or {}).get("classes") or datasets.known(datasets.DEFAULT).num_classes
  if accuracy is not None and accuracy <= datasets.chance_accuracy(classes):
    warnings.append(
        f"The finetuned test accuracy {accuracy:.4f} is at chance ({1 / classes:.3g} for {classes} classes): the model "
        "learned nothing; check the learning rates (--pretrain_learning_rate, --finetune_learning_rate).")
  return warnings
