"""Queue disciplines. Importing the package registers every discipline module in it."""

import importlib
import pkgutil

from sim.queues.base import get_queue, parse_queue, queue_names, register

for _module in pkgutil.iter_modules(__path__):
    if _module.name != "base":
        importlib.import_module(f"{__name__}.{_module.name}")

__all__ = ["get_queue", "parse_queue", "queue_names", "register"]
