"""Autocast's thread-local state (PyTorch's: per device type, read by every autocast op)."""

from __future__ import annotations

import threading
from typing import Any

from .. import _dtype as D

# the device types autocast keeps a state for (PyTorch's ``is_autocast_available``), with
# PyTorch's default lower-precision dtype of each
DEFAULT_DTYPES = {"cpu": D.bfloat16, "cuda": D.float16, "ipu": D.float16, "xpu": D.float16,
                  "maia": D.bfloat16, "xla": D.bfloat16, "mps": D.float16, "hpu": D.bfloat16,
                  "mtia": D.float16, "privateuseone": D.float16}


# how many threads have autocast on: an op's check reads this global first (a thread-local
# read costs 90 ns a call, measured, where the op wrapper itself costs 150)
active_threads = 0
_lock = threading.Lock()


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
        global active_threads
        on = any(self.enabled.values())
        if on != self.on:
            with _lock:
                active_threads += 1 if on else -1
        self.on = on


state = _State()
