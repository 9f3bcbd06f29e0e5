"""Keep large numpy buffers in the C heap between steps (glibc only).

glibc serves an allocation above its mmap threshold (128 KiB at start, raised dynamically up
to 32 MiB) with a fresh ``mmap`` and gives it back with ``munmap`` when freed, and returns
free memory at the top of the heap past its trim threshold with ``sbrk``. A training step
allocates and frees the same large arrays every iteration, so each one came back as fresh
pages, zeroed by the kernel on first touch: on the gpt workload a fused GELU kernel writing
8 MiB took 4.6 ms, 2.8 of them page faults (1.8 ms into buffers already mapped). Raising both
thresholds keeps freed buffers in the heap for the next step, as the caching allocators of
PyTorch (on GPUs) and XLA do for their own buffers; what the heap holds stays bounded by the
process's peak. It applies to every allocation of the process (numpy's, and PyTorch's CPU
tensors alike), once, when ``runtime`` is imported; ``BACKPLAN_MALLOC_TUNING=0`` leaves glibc's
defaults alone.
"""

from __future__ import annotations

import ctypes
import os
import platform
import sys

M_TRIM_THRESHOLD = -1  # glibc's mallopt parameters (malloc.h)
M_MMAP_THRESHOLD = -3
MMAP_THRESHOLD = 256 << 20  # arrays below 256 MiB come from the heap
TRIM_THRESHOLD = 1 << 30  # up to 1 GiB free at the heap's top stays there


def tune_malloc() -> bool:
    """Raise glibc's mmap and trim thresholds; False where not applied (another C library,
    another OS, or ``BACKPLAN_MALLOC_TUNING=0``)."""
    if os.environ.get("BACKPLAN_MALLOC_TUNING", "1").strip() == "0":
        return False
    if sys.platform != "linux" or platform.libc_ver()[0] != "glibc":
        return False
    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):
        return False
    mallopt.argtypes = (ctypes.c_int, ctypes.c_int)
    mallopt.restype = ctypes.c_int
    return bool(mallopt(M_MMAP_THRESHOLD, MMAP_THRESHOLD)
                and mallopt(M_TRIM_THRESHOLD, TRIM_THRESHOLD))


MALLOC_TUNED = tune_malloc()
