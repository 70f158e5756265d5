"""The report: results/README.md, the top README's generated blocks (`readme`) and every figure (`draw`), from the
records alone, for the studies and benchmarks it is given (`presets.Registry`); it imports none of them."""
