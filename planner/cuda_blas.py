"""Matrix products (and concatenations) a CUDA graph can record: cuBLAS called through
ctypes on a handle of our own.

CuPy refuses any cuBLAS call while a stream captures ("calling cuBLAS API during stream
capture is currently unsupported": its ``setStream`` checks, before every call), although
cuBLAS itself records into graphs. During a capture (planner.cuda_graph) ``cupy.matmul`` is
this module's ``matmul`` on the capturing thread: the same library CuPy loaded, a handle
whose stream and workspace are set before the capture begins, and gemm (strided-batched
where there is a batch) with no host synchronisation. A product it does not cover (1-D
operands, broadcast batches that are not one stride, other dtypes) goes to CuPy's own, which
then refuses the capture: the plan runs its program as before. ``cupy.concatenate`` is
replaced the same way: for many arrays, CuPy's uploads their addresses from the host.
"""

from __future__ import annotations

import contextlib
import ctypes
import math
import threading
from collections.abc import Iterator
from ctypes import util as ctypes_util
from typing import Any

import numpy as np

WORKSPACE_BYTES = 32 << 20  # cuBLAS's recommendation for graphs on Hopper (32 MiB)
_OP = {"N": 0, "T": 1}


def _library() -> ctypes.CDLL:
    """The libcublas CuPy loaded into this process (found by its path in /proc/self/maps),
    else the one the loader finds."""
    try:
        with open("/proc/self/maps") as f:
            for line in f:
                path = line.rsplit(None, 1)[-1]
                name = path.rsplit("/", 1)[-1]
                if name.startswith("libcublas.so"):
                    return ctypes.CDLL(path)
    except OSError:
        pass
    found = ctypes_util.find_library("cublas")
    if found is None:
        raise OSError("libcublas is not loaded and cannot be found")
    return ctypes.CDLL(found)


def _check(status: int, what: str) -> None:
    if status != 0:
        raise RuntimeError(f"{what} failed with cuBLAS status {status}")


class Blas:
    """One cuBLAS handle with its own workspace, for products recorded on one stream."""

    def __init__(self, xp: Any) -> None:
        xp.cuda.device.get_cublas_handle()  # CuPy loads libcublas (and initialises it)
        self.xp = xp
        self.lib = lib = _library()
        handle = ctypes.c_void_p()
        _check(lib.cublasCreate_v2(ctypes.byref(handle)), "cublasCreate")
        self.handle = handle
        self.workspace = xp.empty(WORKSPACE_BYTES, xp.uint8)
        _check(lib.cublasSetWorkspace_v2(handle, ctypes.c_void_p(self.workspace.data.ptr),
                                         ctypes.c_size_t(WORKSPACE_BYTES)),
               "cublasSetWorkspace")
        self.thread: int | None = None  # the capturing thread, while one captures
        self.lock = threading.Lock()

    def __del__(self) -> None:
        handle = getattr(self, "handle", None)
        if handle is not None and handle.value:
            with contextlib.suppress(Exception):
                self.lib.cublasDestroy_v2(handle)

    @contextlib.contextmanager
    def recording(self, stream: Any) -> Iterator[None]:
        """``cupy.matmul`` routed here on this thread while the block runs (the capture);
        the handle bound to ``stream`` before it begins capturing. One capture at a time
        records on a handle."""
        with self.lock:
            yield from self._recording(stream)

    def _recording(self, stream: Any) -> Iterator[None]:
        _check(self.lib.cublasSetStream_v2(self.handle, ctypes.c_void_p(stream.ptr)),
               "cublasSetStream")
        xp = self.xp
        original = xp.matmul
        self.thread = threading.get_ident()

        def matmul(a: Any, b: Any, out: Any = None, **kwargs: Any) -> Any:
            if threading.get_ident() == self.thread and out is None and not kwargs:
                done = self.matmul(a, b)
                if done is not None:
                    return done
            return original(a, b, out=out, **kwargs)

        concatenate = xp.concatenate

        def concatenated(arrays: Any, axis: int | None = 0, out: Any = None,
                         **kwargs: Any) -> Any:
            if threading.get_ident() == self.thread and out is None and not kwargs:
                done = _concatenate(xp, arrays, axis)
                if done is not None:
                    return done
            return concatenate(arrays, axis=axis, out=out, **kwargs)

        xp.matmul, xp.concatenate = matmul, concatenated
        try:
            yield
        finally:
            xp.matmul, xp.concatenate = original, concatenate
            self.thread = None

    def matmul(self, a: Any, b: Any) -> Any:
        """``a @ b`` (numpy's matmul semantics) by gemm on the handle's stream, or None where
        this does not cover it (other dtypes, 0-d operands, shapes that do not broadcast)."""
        xp = self.xp
        if a.dtype != b.dtype or a.dtype.char not in "fd" or a.ndim < 1 or b.ndim < 1:
            return None
        if a.ndim == 1 or b.ndim == 1:  # a row (column) matrix, its axis dropped after
            out = self.matmul(a[None, :] if a.ndim == 1 else a, b[:, None] if b.ndim == 1 else b)
            if out is None:
                return None
            if a.ndim == 1:
                out = out[..., 0, :]
            return xp.ascontiguousarray(out[..., 0] if b.ndim == 1 else out)
        m, k = a.shape[-2:]
        k2, n = b.shape[-2:]
        if k != k2:
            return None
        try:
            batch = tuple(np.broadcast_shapes(a.shape[:-2], b.shape[:-2]))
        except ValueError:
            return None
        if a.ndim > 2 and b.ndim == 2 and a.flags.c_contiguous:  # (..., m, k) @ (k, n)
            rows = math.prod(batch) * m
            out = xp.empty((*batch, m, n), a.dtype)
            self._gemm(a.reshape(rows, k), b, out.reshape(rows, n), 1, 0, 0)
            return out
        count = math.prod(batch)
        (a, sa), (b, sb) = self._batched(a, batch, count), self._batched(b, batch, count)
        out = xp.empty((*batch, m, n), a.dtype)
        self._gemm(a, b, out, count, sa, sb)
        return out

    def _batched(self, x: Any, batch: tuple[int, ...], count: int) -> tuple[Any, int]:
        """``x`` as ``count`` matrices one stride apart (that stride, in elements; 0 for one
        matrix shared by the batch): broadcast and made contiguous where it is not."""
        if x.ndim == 2:
            return x, 0
        if x.shape[:-2] != batch:
            x = self.xp.broadcast_to(x, batch + x.shape[-2:])
        stride = _batch_stride(x, count)
        if stride is None:
            x = self.xp.ascontiguousarray(x)
            stride = x.shape[-2] * x.shape[-1]
        return x, stride

    def _gemm(self, a: Any, b: Any, out: Any, count: int, stride_a: int, stride_b: int
              ) -> None:
        """out = a @ b over ``count`` matrices (batch strides in elements); row-major C is
        column-major C^T = B^T A^T, so cuBLAS is given b first."""
        la, lb = _layout(a), _layout(b)
        if la is None or lb is None:
            a, b = (self.xp.ascontiguousarray(x) if lay is None else x
                    for x, lay in ((a, la), (b, lb)))
            la, lb = _layout(a), _layout(b)
            stride_a = stride_a if count == 1 else a.shape[-2] * a.shape[-1]
            stride_b = stride_b if count == 1 else b.shape[-2] * b.shape[-1]
            assert la is not None and lb is not None
        m, k = a.shape[-2:]
        n = b.shape[-1]
        if m == 0 or n == 0:
            return
        if k == 0:
            out.fill(0)
            return
        double = a.dtype.char == "d"
        scalar = ctypes.c_double if double else ctypes.c_float
        one, zero = scalar(1.0), scalar(0.0)
        ptr = ctypes.c_void_p
        common = (self.handle, _OP[lb[0]], _OP[la[0]], n, m, k, ctypes.byref(one))
        if count == 1:
            fn = self.lib.cublasDgemm_v2 if double else self.lib.cublasSgemm_v2
            status = fn(*common, ptr(b.data.ptr), lb[1], ptr(a.data.ptr), la[1],
                        ctypes.byref(zero), ptr(out.data.ptr), n)
        else:
            fn = (self.lib.cublasDgemmStridedBatched if double
                  else self.lib.cublasSgemmStridedBatched)
            status = fn(*common, ptr(b.data.ptr), lb[1], ctypes.c_longlong(stride_b),
                        ptr(a.data.ptr), la[1], ctypes.c_longlong(stride_a),
                        ctypes.byref(zero), ptr(out.data.ptr), n, ctypes.c_longlong(m * n),
                        count)
        _check(status, "gemm")


_BLAS: dict[int, Blas] = {}
_BLAS_LOCK = threading.Lock()


def blas_for(xp: Any) -> Blas:
    """The current device's Blas (one handle and workspace a device, shared by every graph
    recorded on it: graphs launch in order on the caller's stream)."""
    device = xp.cuda.runtime.getDevice()
    with _BLAS_LOCK:
        blas = _BLAS.get(device)
        if blas is None:
            blas = _BLAS[device] = Blas(xp)
    return blas


def _concatenate(xp: Any, arrays: Any, axis: int | None) -> Any:
    """``xp.concatenate`` of arrays of one dtype and rank as a copy into each one's slice of
    the result: CuPy's own, for many arrays, uploads their addresses from the host, which a
    capture refuses. None where this does not cover it."""
    arrays = list(arrays)
    if axis is None or not arrays or any(not isinstance(a, xp.ndarray) for a in arrays):
        return None
    first = arrays[0]
    if first.ndim == 0 or any(a.dtype != first.dtype or a.ndim != first.ndim for a in arrays):
        return None
    axis = axis % first.ndim
    rest = [s for i, s in enumerate(first.shape) if i != axis]
    if any([s for i, s in enumerate(a.shape) if i != axis] != rest for a in arrays):
        return None
    shape = list(first.shape)
    shape[axis] = sum(a.shape[axis] for a in arrays)
    out = xp.empty(tuple(shape), first.dtype)
    start = 0
    for a in arrays:
        key = (slice(None),) * axis + (slice(start, start + a.shape[axis]),)
        out[key] = a
        start += a.shape[axis]
    return out


def _layout(x: Any) -> tuple[str, int] | None:
    """How cuBLAS reads the row-major matrices of ``x`` (its last two axes, (r, c)):
    ("N", leading dimension) for rows of contiguous elements, ("T", ld) for a transposed
    view, None for anything else (a copy is made)."""
    r, c = x.shape[-2:]
    item = x.itemsize
    sr, sc = x.strides[-2], x.strides[-1]
    if sr % item or sc % item or sr < 0 or sc < 0:
        return None
    sr, sc = sr // item, sc // item
    if c == 1 or sc == 1:
        ld = sr if r > 1 else c
        if ld >= max(1, c):
            return "N", ld
    if r == 1 or sr == 1:
        ld = sc if c > 1 else r
        if ld >= max(1, r):
            return "T", ld
    return None


def _batch_stride(x: Any, count: int) -> int | None:
    """The one stride (in elements) between the matrices of ``x``'s batch axes, 0 for an
    unbatched operand; None where the batch axes are not one stride apart."""
    if x.ndim == 2:
        return 0
    item = x.itemsize
    dims = [(d, s) for d, s in zip(x.shape[:-2], x.strides[:-2]) if d != 1]
    if not dims:
        return 0
    step = dims[-1][1]
    expected = step
    for d, s in reversed(dims):
        if s != expected:
            return None
        expected = s * d
    if step % item or step < 0 or math.prod(x.shape[:-2]) != count:
        return None
    return step // item
