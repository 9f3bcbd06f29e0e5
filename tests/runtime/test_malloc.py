"""runtime._malloc: with glibc, importing runtime keeps large arrays in the heap (no mmap per
array, so a step's buffers are not fresh pages every iteration); BACKPLAN_MALLOC_TUNING=0
leaves glibc's defaults."""

from __future__ import annotations

import os
import platform
import subprocess
import sys

import pytest

pytestmark = pytest.mark.skipif(
    sys.platform != "linux" or platform.libc_ver()[0] != "glibc",
    reason="mallopt and mallinfo2 are glibc's")

PROBE = """
import ctypes
import numpy as np
import runtime

class Info(ctypes.Structure):  # glibc's struct mallinfo2
    _fields_ = [(n, ctypes.c_size_t) for n in ("arena", "ordblks", "smblks", "hblks", "hblkhd",
                                             "usmblks", "fsmblks", "uordblks", "fordblks",
                                             "keepcost")]

mallinfo2 = ctypes.CDLL(None).mallinfo2
mallinfo2.restype = Info
before = mallinfo2().hblkhd
a = np.empty(64 << 20, np.uint8)  # 64 MiB: above glibc's largest dynamic mmap threshold
mapped = mallinfo2().hblkhd - before
del a
print(runtime.MALLOC_TUNED, mapped >= 64 << 20)
"""


def _probe(**env: str) -> str:
    done = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True,
                          env={**os.environ, **env}, check=True)
    return done.stdout.strip()


def test_large_arrays_come_from_the_heap() -> None:
    assert _probe() == "True False"


def test_opt_out_keeps_glibc_defaults() -> None:
    assert _probe(BACKPLAN_MALLOC_TUNING="0") == "False True"
