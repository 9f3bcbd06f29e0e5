"""Autocast's thread-local state (PyTorch's: per device type, read by every autocast op)."""

from __future__ import annotations

import threading
from typing import Any

from .. import _dtype as D

# the device types autocast knows, with PyTorch's default lower-precision dtype of each
DEFAULT_DTYPES = {"cpu": D.bfloat16, "cuda": D.float16}


class _State(threading.local):
    def __init__(self) -> None:
        self.on = False  # autocast enabled for some device type: the only check when off
        self.enabled = dict.fromkeys(DEFAULT_DTYPES, False)
        self.dtype = dict(DEFAULT_DTYPES)
        self.cache_enabled = True
        self.nesting = 0
        # a leaf's lower-precision copy per autocast region: id -> (leaf, copy)
        self.cache: dict[int, tuple[Any, Any]] = {}

    def refresh(self) -> None:
        self.on = any(self.enabled.values())


state = _State()
