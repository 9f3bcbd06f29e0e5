"""numpy's arrays of 4 KiB or more start on a 64-byte boundary, once compiled code is in use.

numpy takes an array's memory from ``malloc``, which glibc aligns to 16 bytes, so where an
array starts within a cache line depends on what the process allocated before it. A kernel's
64-byte vector loads and stores from an array that starts 16, 32 or 48 bytes past a line
each span two lines: eltwise's kernel alone, its arrays placed by hand, ran in 1.54 ms with
every array on a boundary, 1.60 with its inputs 32 bytes past one, 1.59 with its outputs and
1.63 with both; across processes its step moved by as much, whatever the code.

numpy lets a process choose the functions its arrays' memory comes from (its
``PyDataMem_SetHandler``, API slot 304 since numpy 1.22): ``install()`` gives it a handler
whose ``malloc`` takes an allocation of ``ALIGNED_FROM`` bytes or more from glibc's
``posix_memalign`` (64-byte aligned) and a smaller one from ``malloc``; ``calloc``,
``realloc`` and ``free`` are glibc's (``free`` releases either kind; np.zeros keeps calloc's
lazily zeroed pages). The four functions are a few lines of LLVM IR in the builtin
trampolines' module (``codegen.pyentry.ALLOCATOR_IR``), which a step with kernels or products
loads anyway, their machine code held for the life of the process: arrays freed while the
interpreter shuts down still call them. numpy keeps the handler per context: the thread that
installs it (the one that builds such a step, which runs the step's program) and contexts
copied from it allocate through it; other threads keep numpy's default. Only where glibc runs
(posix_memalign, free of an aligned block), numpy's API has the slot (1.22 on), and
``BACKPLAN_ALIGNED_ARRAYS`` is not 0.
"""

from __future__ import annotations

import ctypes
import functools
import os
import threading
from typing import Any

import numpy as np

from codegen import pyentry

# the functions' policy, as the trampolines' module compiles it
ALIGNMENT, ALIGNED_FROM = pyentry.ALIGNMENT, pyentry.ALIGNED_FROM

NAME = b"backplan_aligned"  # the handler's name, as np.get_handler_name() shows it
_SET_HANDLER = 304  # PyDataMem_SetHandler's slot in numpy's C API table


class _Allocator(ctypes.Structure):
    _fields_ = [("ctx", ctypes.c_void_p), ("malloc", ctypes.c_void_p),
                ("calloc", ctypes.c_void_p), ("realloc", ctypes.c_void_p),
                ("free", ctypes.c_void_p)]


class _Handler(ctypes.Structure):  # numpy's PyDataMem_Handler, version 1
    _fields_ = [("name", ctypes.c_char * 127), ("version", ctypes.c_uint8),
                ("allocator", _Allocator)]


_lock = threading.Lock()
# what must outlive every array allocated through the handler: never released
_KEPT: list[Any] = []


def available() -> bool:
    """Whether ``install`` can work here: glibc, and not switched off."""
    if os.environ.get("BACKPLAN_ALIGNED_ARRAYS", "1").strip() == "0":
        return False
    return pyentry.glibc()


@functools.cache
def _handler() -> Any:
    """The handler capsule (made once per process) over the four functions, which are part of
    the builtin trampolines' module (``codegen.pyentry``)."""
    code = pyentry._code()
    if not all(code.allocator):
        raise RuntimeError("the aligned allocator's functions are not in the trampolines")
    handler = _Handler(NAME, 1, _Allocator(None, *code.allocator))
    name = ctypes.c_char_p(b"mem_handler")
    new_capsule = ctypes.pythonapi.PyCapsule_New
    new_capsule.restype = ctypes.py_object
    new_capsule.argtypes = (ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p)
    capsule = new_capsule(ctypes.addressof(handler), name, None)
    # the machine code, the struct and the capsule's name stay for good; an extra reference
    # keeps the engine from being disposed at shutdown, while arrays still free through it
    ctypes.pythonapi.Py_IncRef(ctypes.py_object(code.engine))
    _KEPT.extend([code.engine, handler, name, capsule])
    return capsule


def _numpy_core() -> Any:
    """numpy's core package: ``numpy._core`` (numpy 2), ``numpy.core`` before."""
    return getattr(np, "_core", None) or np.core


def _api_function(slot: int, restype: Any, *argtypes: Any) -> Any:
    """numpy's C API function at ``slot`` of its table, callable with the GIL held."""
    table_capsule = _numpy_core()._multiarray_umath._ARRAY_API
    get_pointer = ctypes.pythonapi.PyCapsule_GetPointer
    get_pointer.restype = ctypes.c_void_p
    get_pointer.argtypes = (ctypes.py_object, ctypes.c_char_p)
    table = get_pointer(table_capsule, None)
    address = ctypes.c_void_p.from_address(table + slot * ctypes.sizeof(ctypes.c_void_p))
    return ctypes.PYFUNCTYPE(restype, *argtypes)(address.value)


def handler_name() -> str | None:
    """The name of the handler this thread's numpy arrays come from (None where numpy does
    not say)."""
    get = getattr(getattr(_numpy_core(), "multiarray", None), "get_handler_name", None)
    return None if get is None else get()


def install() -> bool:
    """Make the calling thread's context allocate numpy arrays through the aligned handler;
    False where it is not available here. Idempotent."""
    if not available():
        return False
    with _lock:
        name = handler_name()
        if name is None:
            return False
        if name == NAME.decode():
            return True
        try:
            capsule = _handler()
            set_handler = _api_function(_SET_HANDLER, ctypes.py_object, ctypes.py_object)
        except (AttributeError, OSError, RuntimeError, ValueError):
            return False
        set_handler(capsule)
        return handler_name() == NAME.decode()
