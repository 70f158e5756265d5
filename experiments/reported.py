"""The report's numbers, from its text and read off its figures (named by its image files; about 1-2% of an axis).
Hardware: AWS g2.8xlarge, 4 x GRID K520; its data-parallel batch was per GPU (global batch = 4 x batch). Apart from
them, `PUBLISHED_BASELINES`: other datasets' published numbers, for context."""

from common.settings import programs

GREEDY, MP, DP = programs.GREEDY.name, programs.MODEL_PARALLEL.name, programs.DATA_PARALLEL.name
HARDWARE = "report (4× GRID K520)"

# Pretraining seconds, {hidden layers: {GPUs: seconds}}. Endpoints from the text; the points in
# between read off mpres1.png / mpres2.png.
MP_SCALING_B100 = {2: {1: 236, 2: 238}, 3: {1: 408, 2: 431, 3: 329}, 4: {1: 611, 2: 430, 3: 548, 4: 472}}
MP_SCALING_B5000 = {2: {1: 530, 2: 385}, 3: {1: 960, 2: 1097, 3: 522}, 4: {1: 1475, 2: 1100, 3: 1085, 4: 702}}
MP_SCALING = {"mp_scaling_b100": MP_SCALING_B100, "mp_scaling_b5000": MP_SCALING_B5000}  # by study

# Data parallel, 40 epochs, batch 5000, 4 x 2000: the report gives no numbers, only "near linear".
DP_SCALING_TEXT = "near linear in the number of GPUs (no numbers given)"

# Seconds per epoch of one 2000-unit layer on 4 GPUs vs batch size, read off dpres2.png (milliseconds
# on the plot). The original's batch was per GPU (global batch = 4 x batch).
DP_BATCH_SWEEP = {50: 131.3, 100: 45.3, 200: 20.5, 300: 14.0, 400: 11.4, 500: 9.8, 600: 8.7, 700: 8.1, 800: 7.7,
                  900: 7.3, 1000: 7.0, 2000: 5.8, 3000: 5.5, 4000: 4.6, 5000: 4.6, 6000: 4.4, 7000: 4.2, 8000: 4.3,
                  9000: 4.4}

# Op profile, seconds per phase vs GPUs, read off dpres3.png (milliseconds on the plot). The report's
# phases map to ours: computing loss -> forward_loss, computing gradient -> gradients, accumulating and
# averaging gradient -> allreduce, applying gradient -> apply (too small to read), initialising weights
# (~0.2 s) has no counterpart per epoch.
DP_OP_PROFILE = {g: dict(forward_loss=f, gradients=d, allreduce=a, apply=0.0) for g, f, d, a in (
    (1, 63.7, 4.4, 13.7), (2, 24.1, 2.8, 10.1), (3, 14.9, 1.8, 10.5), (4, 11.4, 1.3, 10.6))}
DP_OP_PROFILE_TOTAL = {1: 82.0, 2: 37.2, 3: 27.4, 4: 23.5}

# Model parallel vs data parallel at batch 7000, 4 GPUs: {(epochs, config): {program: seconds}} (conres1.png).
MP_VS_DP = {(30, "c1"): {DP: 193, MP: 283}, (30, "c2"): {DP: 181, MP: 259},
            (60, "c1"): {DP: 400, MP: 662}, (60, "c2"): {DP: 371, MP: 493}}

# Test accuracy after E pretraining + E finetuning epochs (conres2.png; greedy endpoints and "around
# 96.62%" from the text; greedy's middle points read off the plot).
ACCURACY = {GREEDY: {10: 0.940, 20: 0.952, 30: 0.957, 40: 0.961, 50: 0.966, 60: 0.969},
            MP: {10: 0.765, 20: 0.953, 30: 0.959, 40: 0.962, 50: 0.967, 60: 0.859}}
MP_ACCURACY_TEXT = 0.9662

# Data parallel at batch 5000 per GPU (text): E pretraining + E finetuning epochs -> test accuracy, and how the
# report's data-parallel batches compare with ours (ours are global batches).
DP_ACCURACY = {30: 0.7472, 60: 0.8162}
DP_BATCH_NOTE = ("the report's data-parallel batch was per tower in the original code (global batch = GPUs x "
                 "batch, e.g. 20,000 for its batch 5000 on 4 GPUs); ours is the global batch, split over the devices")

# 60 epochs, batch 5000, 4 x 2000 (conres3.png): pretraining seconds per program.
STRATEGY_COMPARISON = {GREEDY: 1105, MP: 702, DP: 1007}

# Published baselines, not the report's numbers: {dataset: {model: test accuracy}}, of other models, for context
# (Fashion-MNIST: its benchmark table, zalandoresearch/fashion-mnist).
PUBLISHED_BASELINES = {"fashion_mnist": {"MLP 256-128-100": 0.8833, "SVC (C=10, RBF)": 0.897}}
