"""Every benchmark: each module of this package that declares `BENCHMARK`, in their `order` (results/README.md and
the campaign show them so). A new benchmark is one file here."""

import importlib
import pkgutil

from experiments import benchmarks


def _discovered() -> tuple:
  found = [getattr(importlib.import_module(f"{benchmarks.__name__}.{m.name}"), "BENCHMARK", None)
           for m in pkgutil.iter_modules(benchmarks.__path__) if m.name != "catalog"]
  found = sorted((b for b in found if b is not None), key=lambda b: b.order)
  orders = [b.order for b in found]
  if len(set(orders)) != len(orders):
    raise ValueError(f"two benchmarks share an order: {sorted(b.name for b in found if orders.count(b.order) > 1)}")
  return tuple(found)


BENCHMARKS = _discovered()
