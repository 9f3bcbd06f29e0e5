"""numpy's arrays of 4 KiB or more start on 64-byte boundaries once a compiled step is built
(codegen.allocator): in the thread that built it, through numpy's own handler API; smaller
ones, np.zeros and other threads as numpy makes them; memory still traced; opt-out."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import tracemalloc
from pathlib import Path

import numpy as np
import pytest

from codegen import allocator

ROOT = Path(__file__).parents[2]
pytestmark = pytest.mark.skipif(not allocator.available(), reason="glibc only")

PROBE = """
import numpy as np
import planner, runtime as rt
x = rt.tensor(np.ones((64, 64), np.float32), requires_grad=True)

@planner.compile(backend="llvm")
def step(x):
    y = (x * 2).tanh().sum()
    y.backward()
    return y

step(x)
sizes = (4096 // 4, 10_000, 333_333)
print(np._core.multiarray.get_handler_name(),
      all(np.empty(n, np.float32).ctypes.data % 64 == 0 for n in sizes for _ in range(20)))
"""


def _pythonpath() -> str:
    """ROOT, then the PYTHONPATH inherited (the suite's shared bytecode: tests/conftest.py)."""
    return os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))


def _probe(**env: str) -> str:
    done = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True,
                          cwd=ROOT, env={**os.environ, "PYTHONPATH": _pythonpath(), **env})
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def test_a_built_step_aligns_the_threads_large_arrays() -> None:
    assert _probe() == f"{allocator.NAME.decode()} True"


def test_the_switch_leaves_numpys_allocator() -> None:
    assert _probe(BACKPLAN_ALIGNED_ARRAYS="0").split()[0] == "default_allocator"


def test_sizes_threads_and_tracing() -> None:
    assert allocator.install() and allocator.install()  # idempotent
    for n in (1024, 5000, 1 << 20):
        for _ in range(10):
            assert np.empty(n, np.float32).ctypes.data % allocator.ALIGNMENT == 0
    grown = np.empty(1 << 16, np.float64)
    grown.resize(1 << 17, refcheck=False)  # realloc: glibc's, freed by the same handler
    assert grown.shape == (1 << 17,)
    assert np.zeros((1000, 1000)).sum() == 0.0  # calloc's zeros
    seen: list[str] = []
    worker = threading.Thread(target=lambda: seen.append(
        np._core.multiarray.get_handler_name()))
    worker.start()
    worker.join()
    assert seen == ["default_allocator"]  # numpy's handler is per context
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        big = np.empty(1 << 20, np.uint8)
        assert tracemalloc.get_traced_memory()[0] - before >= big.nbytes
    finally:
        tracemalloc.stop()
