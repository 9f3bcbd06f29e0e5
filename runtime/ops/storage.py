"""Tensor methods about storage: ``share_memory_``/``is_shared`` and ``set_``.

A CPU tensor's storage is a numpy array. ``share_memory_`` moves it into an anonymous shared
mapping (``mmap``, MAP_SHARED), which a process forked afterwards writes through, as
PyTorch's shared-memory storage; ``is_shared`` says whether the array lives in one. A storage
is moved only as a whole: a view (whose array is part of a larger one) or an array other
tensors hold too is refused, where moving it would silently part them (PyTorch moves the
storage under all of them). A GPU tensor is shared already (CUDA IPC), as in PyTorch."""

from __future__ import annotations

import math
import mmap
import sys
import weakref
from typing import Any

import numpy as np

from .._determinism import alert_not_deterministic, uninitialized_fill
from ..autograd.grad_mode import is_grad_enabled
from ..tensor import Tensor
from ..tracing import GraphBreak
from ..tracing import _state as _trace_state
from .inplace import ERR_LEAF_INPLACE, check_no_overlap
from .memory_names import UntypedStorage, storage_dtype_check, storage_elements

# the references an array the tensor alone holds has in share_memory_: the tensor's slot,
# the local name and getrefcount's argument
_SOLE_HOLDER_REFS = 3


def _in_shared_mapping(arr: Any) -> bool:
    base = arr
    while base is not None:
        if isinstance(base, mmap.mmap):
            return True
        base = getattr(base, "base", None) if isinstance(base, np.ndarray) else getattr(
            base, "obj", None)
    return False


def is_shared(self: Tensor) -> bool:
    """Whether the storage is in shared memory (a GPU tensor's always is)."""
    if self.device.type != "cpu":
        return True
    return _in_shared_mapping(self._data)


def share_memory_(self: Tensor) -> Tensor:
    """The storage moved into shared memory (a no-op where it is there already, and for a GPU
    tensor); returns self."""
    if self.device.type != "cpu" or is_shared(self):
        return self
    if _trace_state.tracer is not None:
        raise GraphBreak("share_memory_ moves a tensor's storage")
    arr = self._data
    if arr.base is not None or sys.getrefcount(arr) > _SOLE_HOLDER_REFS:
        raise RuntimeError(
            "share_memory_: this tensor's storage is also another tensor's (a view of it, or "
            "it of another): runtime moves a numpy storage into shared memory only as a whole, "
            "which would part them; call share_memory_ on the tensor that owns the storage "
            "before taking views of it")
    buffer = mmap.mmap(-1, max(arr.nbytes, 1))
    shared = np.frombuffer(buffer, dtype=arr.dtype, count=arr.size).reshape(arr.shape)
    shared[...] = arr
    self._data = shared
    return self


def set_(self: Tensor, source: Any = None, storage_offset: Any = None, size: Any = None,
         stride: Any = None) -> Tensor:
    """self made to share ``source``'s storage, shape and strides (``set_()``: an empty
    tensor), as PyTorch's in-place ``set_``."""
    if storage_offset is not None or size is not None or stride is not None:
        raise NotImplementedError("set_(source, storage_offset, size, stride) is not supported "
                                  "here: runtime's storages are numpy arrays, not typed storages "
                                  "with offsets")
    if self._rg and is_grad_enabled():
        if self._grad_fn is None:
            raise RuntimeError(ERR_LEAF_INPLACE)
        raise NotImplementedError("set_ of a tensor with autograd history is not supported "
                                  "here (PyTorch's graph through it cannot be differentiated)")
    if _trace_state.tracer is not None:
        raise GraphBreak("set_ replaces a tensor's storage")
    if source is None:
        self._data = self.xp.empty((0,), dtype=self.dtype.np)
    elif isinstance(source, UntypedStorage):  # all of its elements, as a 1-d tensor
        storage_dtype_check(source, self.dtype, "set_")
        self._data = storage_elements(source._root, self.dtype)
    else:
        if not isinstance(source, Tensor):
            raise TypeError(f"set_() received an invalid combination of arguments - got "
                            f"({type(source).__name__}), but expected one of: (), "
                            "(Storage source), (Tensor source)")
        if source.dtype is not self.dtype:
            from .. import _dtype as D

            raise RuntimeError(f"Could not set tensor of type {D.type_meta_name(source.dtype)} "
                               f"to a tensor of type {D.type_meta_name(self.dtype)}")
        if source.device != self.device:
            raise RuntimeError(f"Attempted to set the storage of a tensor on device "
                               f"\"{self.device}\" to a storage on different device "
                               f"\"{source.device}\".  This is no longer allowed; the devices "
                               "must match.")
        self._data = source._data
    # PyTorch's set_ gives a leaf a new grad accumulator: a graph recorded before it reaches
    # the old one, so grad() of that graph to the leaf finds it unused (its GradientEdge,
    # taken before, still works)
    self._grad_acc = None
    self._vc.v += 1
    return self


def data_ptr(self: Tensor) -> int:
    """The address of the tensor's first element (a numpy array's from its array interface:
    its buffer, ``.data``, refuses a bfloat16 array)."""
    from .memory_names import _address

    return _address(self._data)


def storage_offset(self: Tensor) -> int:
    """How many elements into its storage (the base array) the tensor starts."""
    data, base = self._data, self._data
    while isinstance(getattr(base, "base", None), np.ndarray):
        base = base.base
    if base is data or not isinstance(data, np.ndarray):
        return 0
    start = data.__array_interface__["data"][0] - base.__array_interface__["data"][0]
    return start // data.itemsize


def get_device(self: Tensor) -> int:
    """-1 for a CPU tensor, else the GPU's index."""
    return -1 if self.device.type == "cpu" else int(self.device.index or 0)


def is_pinned(self: Tensor, device: Any = None) -> bool:
    """False: runtime has no pinned host memory."""
    return False


# the storages (root arrays, by id, with a weak reference telling a reused id apart) that
# belong to numpy: ``from_numpy``'s, which PyTorch marks not resizable
_NOT_RESIZABLE: dict[int, weakref.ref[np.ndarray]] = {}


def mark_not_resizable(arr: np.ndarray) -> None:
    """Marks the storage of ``arr`` (its root array) as one resize_ may not replace."""
    from .memory_names import _root_array

    root = _root_array(arr)
    key = id(root)
    ref = _NOT_RESIZABLE.get(key)
    if ref is not None and ref() is root:  # marked already (a batch converted each step)
        return
    _NOT_RESIZABLE[key] = weakref.ref(root, lambda _: _NOT_RESIZABLE.pop(key, None))


def _is_resizable(arr: Any) -> bool:
    from .memory_names import _root_array

    root = _root_array(arr)
    ref = _NOT_RESIZABLE.get(id(root))
    return ref is None or ref() is not root


def resize_(self: Tensor, *sizes: Any, memory_format: Any = None) -> Tensor:
    """self given the shape ``sizes`` in place: the elements it had kept in order as far as
    they go, the rest uninitialized (as PyTorch's resize_)."""
    from ..creation import _INT64_MAX, _size, check_storage_size

    if self.requires_grad:
        raise RuntimeError("cannot resize variables that require grad")
    if _trace_state.tracer is not None:
        raise GraphBreak("resize_ replaces a tensor's storage")
    shape = _size(sizes, None, "resize_")
    if tuple(shape) == tuple(self.shape):
        return self  # PyTorch's early return: strides and version kept
    n = math.prod(shape)
    if n > _INT64_MAX:
        raise RuntimeError("numel: integer multiplication overflow")
    check_storage_size(shape, self._data.dtype.itemsize)
    self._data = _resized(self.xp, self._data, tuple(shape), n)
    self._vc.v += 1
    return self


def _resized(xp: Any, data: Any, shape: tuple[int, ...], n: int) -> Any:
    """``data`` resized as PyTorch resizes a tensor: row-major from its storage offset, in the
    same storage where that holds ``n`` elements from there (a view of the storage sees the
    writes after it), else in a new storage, at the same offset, that starts with the old
    storage's elements."""
    from .memory_names import _storage_geometry

    geometry = _storage_geometry(data)
    offset, old = 0, data.reshape(-1)
    if geometry is not None:
        root, offset, _ = geometry
        old = root.reshape(-1, order="A").view(data.dtype)
        if offset + n <= old.size and old.flags.writeable:
            return old[offset:offset + n].reshape(shape)
    if not _is_resizable(data):
        raise RuntimeError("Trying to resize storage that is not resizable")
    new = xp.empty(offset + n, dtype=data.dtype)
    keep = min(offset + n, old.size)
    new[:keep] = old[:keep]
    fill = uninitialized_fill(data.dtype)
    if fill is not None:  # PyTorch fills the bytes past the old storage's only
        new[keep:] = fill
    return new[offset:].reshape(shape)


def resize_as_(self: Tensor, the_template: Tensor, *, memory_format: Any = None) -> Tensor:
    return resize_(self, tuple(the_template.shape))


def put_(self: Tensor, index: Tensor, source: Tensor, accumulate: bool = False) -> Tensor:
    """source's values written (or added) at the flat positions ``index`` of self."""
    from . import functional as F

    if not accumulate:
        alert_not_deterministic("put_")
    if source.numel() != index.numel():
        raise IndexError(f"put_(): Expected source and index to have the same number of "
                         f"elements, but got source.numel() = {source.numel()}, index.numel() = "
                         f"{index.numel()}")
    flat = F.reshape(self, (-1,))
    n = flat.shape[0]
    if index.numel():  # a check step (as take's): a compiled step keeps it, reading no value
        F.check_bounds(F.reshape(index, (-1,)), -n, n, f"out of range: tried to access index "
                       f"{{}} on a tensor of {n} elements.")
    positions = F.where(F.lt(index, 0), F.add(index, n), index)
    values = F.reshape(source, (-1,))
    check_no_overlap(self, index, source)  # PyTorch's assert_no_overlap
    if accumulate:
        updated = flat.index_add(0, F.reshape(positions, (-1,)), values)
    else:
        updated = flat.index_put((F.reshape(positions, (-1,)),), values)
    return F.copy_(self, F.reshape(updated, tuple(self.shape)))
