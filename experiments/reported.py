"""What the report says of itself as a whole, for every study that sets its numbers beside ours (each study's own
numbers are declared in its file, `Study.reported`): its hardware, AWS g2.8xlarge with 4 x GRID K520, and its
data-parallel batch, per GPU (global batch = 4 x batch). Apart from them, `PUBLISHED_BASELINES`: other datasets'
published numbers, for context."""

HARDWARE = "report (4× GRID K520)"

DP_BATCH_NOTE = ("the report's data-parallel batch was per tower in the original code (global batch = GPUs x "
                 "batch, e.g. 20,000 for its batch 5000 on 4 GPUs); ours is the global batch, split over the devices")

# Published baselines, not the report's numbers: {dataset: {model: test accuracy}}, of other models, for context
# (Fashion-MNIST: its benchmark table, zalandoresearch/fashion-mnist).
PUBLISHED_BASELINES = {"fashion_mnist": {"MLP 256-128-100": 0.8833, "SVC (C=10, RBF)": 0.897}}
