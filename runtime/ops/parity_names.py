"""Installs the PyTorch names the runtime lacked: each module listed here holds
``FUNCTIONS`` (torch-level names: functions, and a few constants and types) and ``METHODS``
(Tensor methods and properties); a name the runtime already has keeps its own."""

from __future__ import annotations

from typing import Any

from ..tensor import Tensor
from . import (control_flow, dunders, functional_names, inplace_variants, layouts,
               legacy_types, memory_names, numeric_names, settings, torch_names)

MODULES = (inplace_variants, torch_names, memory_names, functional_names, numeric_names,
           settings, layouts, control_flow, dunders, legacy_types)


def install(namespace: dict[str, Any]) -> list[str]:
    """The modules' methods on Tensor and their functions in ``namespace`` (runtime's
    globals); the names of the functions added."""
    added = []
    for module in MODULES:
        for name, method in module.METHODS.items():
            if name not in Tensor.__dict__:
                setattr(Tensor, name, method)
        for name, fn in module.FUNCTIONS.items():
            if name not in namespace:
                namespace[name] = fn
                added.append(name)
    for module in MODULES:  # what needs every module's methods and functions in place
        finish = getattr(module, "finish", None)
        if finish is not None:
            finish()
    return added
