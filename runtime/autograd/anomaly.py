"""Anomaly mode: remember each node's forward stack; check backward outputs for NaN."""

from __future__ import annotations

import os
import traceback

_global_enabled = False


def is_anomaly_enabled() -> bool:
    return _global_enabled


def set_detect_anomaly(mode: bool) -> None:
    global _global_enabled
    _global_enabled = bool(mode)


class detect_anomaly:  # noqa: N801 - PyTorch's name
    def __init__(self, check_nan: bool = True) -> None:
        self.check_nan = check_nan

    def __enter__(self) -> None:
        global _global_enabled
        self._prev = _global_enabled
        _global_enabled = True

    def __exit__(self, *exc: object) -> None:
        global _global_enabled
        _global_enabled = self._prev


_PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def forward_trace() -> str:
    """The user's stack at the forward call, without this package's own frames."""
    frames = [f for f in traceback.extract_stack() if not f.filename.startswith(_PACKAGE_DIR)]
    return "".join(traceback.format_list(frames))
