"""`torch.nn.utils.init.skip_init`: a module built without initializing its parameters."""

from __future__ import annotations

import inspect
from typing import Any

from runtime.nn.module import Module

__all__ = ["skip_init"]


def skip_init(module_cls: Any, *args: Any, **kwargs: Any) -> Module:
    """``module_cls(*args, **kwargs)`` with uninitialized (empty) parameters and buffers on
    ``device``, as PyTorch's. PyTorch builds it on the meta device, which allocates nothing;
    here it is built, then ``to_empty`` replaces its tensors (the same result)."""
    if not issubclass(module_cls, Module):  # a non-class: issubclass's TypeError, as torch
        raise RuntimeError(f"Expected a Module; got {module_cls}")
    if "device" not in inspect.signature(module_cls).parameters:
        raise RuntimeError("Module must support a 'device' arg to skip initialization")
    final_device = kwargs.pop("device", "cpu")
    return module_cls(*args, **kwargs).to_empty(device=final_device)
