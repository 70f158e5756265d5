"""The pipeline's parts, below the programs so that a new schedule is built from them: the layer schedule (when each
layer trains, at which rate: `schedule`), the placement of contiguous stages by cost and the chunks and ticks
(`placement`), the compiled stages and the tick that runs them side by side (`stages`), and the codes handed over
between stages across ticks (`handover`). pipeline_parallel is made of them (docs/experiments.md, "Adding a
program"). Above `common.run` and beside `common.layerwise` (.importlinter)."""
