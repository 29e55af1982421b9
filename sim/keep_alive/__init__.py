"""Keep-alive policies. Importing the package registers every policy module in it."""

import importlib
import pkgutil

from sim.keep_alive.base import (
    Idle,
    KeepAlive,
    keep_alive_names,
    make_keep_alive,
    parse_keep_alive,
    register,
)

for _module in pkgutil.iter_modules(__path__):
    if _module.name not in ("base", "params"):
        importlib.import_module(f"{__name__}.{_module.name}")

__all__ = [
    "Idle",
    "KeepAlive",
    "keep_alive_names",
    "make_keep_alive",
    "parse_keep_alive",
    "register",
]
