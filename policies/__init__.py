"""Placement policies. Importing the package registers every policy module in it."""

import importlib
import pkgutil

from policies.base import get_policy, policy_names, register

for _module in pkgutil.iter_modules(__path__):
    if _module.name != "base":
        importlib.import_module(f"{__name__}.{_module.name}")

__all__ = ["get_policy", "policy_names", "register"]
