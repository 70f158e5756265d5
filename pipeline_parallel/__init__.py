"""Layer-pipelined pretraining: every layer trains at once on activations streamed from the layer below."""
