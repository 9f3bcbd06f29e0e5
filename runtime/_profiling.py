"""The hook the profiler (``runtime.profiler``) sets while it records: the dispatcher, the
autograd engine and compiled steps ask ``ACTIVE`` (one global read a call) and, where it is
set, run their work inside one of its ranges. Kept apart from the profiler so that the
dispatcher imports nothing more."""

from __future__ import annotations

from typing import Any

ACTIVE: Any = None  # runtime.profiler._Recorder while a profile records, else None
