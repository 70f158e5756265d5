# make train: the main job with defaults that finish in minutes on 2 CPU cores, printing the test accuracy.
# make test: the import contracts (lint-imports on .importlinter with the registry's programs:
# tests/import_contracts.py), then the test suite (-rs prints every skipped test's
# reason, e.g. Slurm not installed). make reproduce: every figure and table (see results/README.md).
# Each target creates .venv from requirements.txt first if it is missing or out of date.

PYTHON3 ?= python3
VENV := .venv
PY := $(VENV)/bin/python
# Offline MNIST: the prepared copy beside the project, unless TFDS_DATA_DIR is already set.
SHARED_DATA := $(wildcard ../shared/tensorflow_datasets)
ifneq ($(SHARED_DATA),)
export TFDS_DATA_DIR ?= $(abspath $(SHARED_DATA))
endif

# The main job: model-parallel pretraining, one layer per device, on every core (logical CPU devices), with the tuned
# recipe (docs/pretraining.md).
# Its record, pictures, SavedModel and weights go to runs/ (ignored by git); the committed
# results/quickstart/make_train.json was made with `make train RESULTS_DIR=results/quickstart` on 2 cores.
NUM_DEVICES ?= $(shell nproc 2>/dev/null || echo 2)
RESULTS_DIR ?= runs
TRAIN_PROGRAM ?= model_parallel
TRAIN_FLAGS ?= --recipe=tuned --hidden_units=1000,1000 --pretrain_epochs=10 --finetune_epochs=10 --batch_size=100 \
	--num_devices=$(NUM_DEVICES) --results_dir=$(RESULTS_DIR) --run_name=make_train \
	--export_model=$(RESULTS_DIR)/make_train_model --export_weights=$(RESULTS_DIR)/make_train.npz
# Test processes: each test process runs TensorFlow on one intra-op thread, so 2 fill a 2-core machine.
TEST_WORKERS ?= 2
# More pytest options, e.g. PYTEST_FLAGS="-k greedy" or "--durations=0" (every test's seconds).
PYTEST_FLAGS ?=
# Every figure and table of the report (about an hour on 2 cores with the cpu preset; see results/README.md).
REPRODUCE_FLAGS ?= --preset=cpu

.PHONY: venv train test reproduce clean
venv: $(VENV)/.installed

$(VENV)/.installed: requirements.txt
	test -x $(PY) || $(PYTHON3) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -r requirements.txt
	touch $@

train: venv
	$(PY) -m $(TRAIN_PROGRAM).train $(TRAIN_FLAGS)

test: venv
	$(PY) tests/import_contracts.py
	$(PY) -m pytest -q -rs -n $(TEST_WORKERS) --dist loadfile --durations=10 $(PYTEST_FLAGS) tests

reproduce: venv
	$(PY) -m experiments.reproduce $(REPRODUCE_FLAGS) --output_dir=results

clean:
	rm -rf runs models scratch .pytest_cache
