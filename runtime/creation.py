"""Tensor constructors and the seeded random generator."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from . import _dtype as D
from ._device import array_module, canonical_device, device_guard, device_of_array, move_array
from .tensor import Tensor
from .tracing import GraphBreak, active_tracer


class Generator:
    """A seeded random source (numpy's PCG64; the streams differ from PyTorch's)."""

    def __init__(self, device: str = "cpu") -> None:
        self.device = canonical_device(device)
        self._rng = np.random.default_rng()

    def manual_seed(self, seed: int) -> Generator:
        self._rng = np.random.default_rng(int(seed))
        return self

    def seed(self) -> int:
        s = int(np.random.SeedSequence().entropy % (1 << 63))
        self.manual_seed(s)
        return s


default_generator = Generator()


def manual_seed(seed: int) -> Generator:
    return default_generator.manual_seed(seed)


def _size(size: Sequence[Any]) -> tuple[int, ...]:
    if len(size) == 1 and isinstance(size[0], (tuple, list)):
        size = size[0]
    return tuple(int(s) for s in size)


def _as_array(data: Any, dtype: Any, device: Any) -> tuple[Any, D.DType, str]:
    dev = canonical_device(device)
    if isinstance(data, Tensor):
        arr = data._data
    else:
        arr = data
    if hasattr(arr, "__cuda_array_interface__") and not isinstance(arr, np.ndarray):
        src_dev = device_of_array(arr)
        arr = arr.copy()
    else:
        src_dev = "cpu"
        if isinstance(arr, (list, tuple)) and any(isinstance(v, Tensor) for v in arr):
            arr = [v.item() if isinstance(v, Tensor) else v for v in arr]
        arr = np.array(arr)
    if dtype is not None:
        dt = D.as_dtype(dtype)
    elif arr.dtype.kind == "f":
        dt = D.float32 if not isinstance(data, np.ndarray) else D.as_dtype(arr.dtype)
    elif arr.dtype.kind in "iu":
        dt = D.int64
    elif arr.dtype.kind == "b":
        dt = D.bool_
    else:
        raise TypeError(f"can't convert data of dtype {arr.dtype} to a tensor")
    if arr.dtype != dt.np:
        arr = arr.astype(dt.np)
    if dev != src_dev:
        arr = move_array(arr, dev)
    return arr, dt, dev


def tensor(data: Any, dtype: Any = None, device: Any = None,
           requires_grad: bool = False) -> Tensor:
    return Tensor(data, dtype=dtype, device=device, requires_grad=requires_grad)


def as_tensor(data: Any, dtype: Any = None, device: Any = None) -> Tensor:
    """``data`` as a tensor without a copy where it can be: a tensor of that dtype and device
    is returned as it is (else converted, as ``Tensor.to``), a CPU numpy array of a supported
    dtype shares its memory (as ``from_numpy``), anything else is copied (as ``tensor``)."""
    if isinstance(data, Tensor):
        return data.to(device=device if device is not None else data.device,
                       dtype=dtype if dtype is not None else data.dtype)
    if isinstance(data, np.ndarray) and canonical_device(device) == "cpu" \
            and data.dtype in D._BY_NP \
            and (dtype is None or D.as_dtype(dtype).np == data.dtype) \
            and active_tracer() is None:
        return from_numpy(data)
    return tensor(data, dtype=dtype, device=device)


def from_numpy(a: np.ndarray) -> Tensor:
    """Shares memory with ``a``."""
    if not isinstance(a, np.ndarray):
        raise TypeError(f"expected np.ndarray (got {type(a).__name__})")
    return Tensor._make(a, D.from_numpy_dtype(a.dtype), "cpu")


def _filled(size: Sequence[Any], value: Any, dtype: Any, device: Any,
            requires_grad: bool) -> Tensor:
    dev = canonical_device(device)
    if dtype is None:
        dt = D.float32 if isinstance(value, float) or value is None else (
            D.bool_ if isinstance(value, bool) else D.int64 if isinstance(value, int)
            else D.float32)
    else:
        dt = D.as_dtype(dtype)
    shape = _size(size)
    tracer = active_tracer()
    if tracer is not None:
        arr = np.zeros(shape, dtype=dt.np) if value is None else np.full(shape, value, dt.np)
        return tracer.constant(arr, dt, dev).requires_grad_(requires_grad)
    xp = array_module(dev)
    with device_guard(dev):
        arr = xp.empty(shape, dtype=dt.np) if value is None else xp.full(shape, value, dt.np)
    return Tensor._make(arr, dt, dev).requires_grad_(requires_grad)


def zeros(*size: Any, dtype: Any = None, device: Any = None,
          requires_grad: bool = False) -> Tensor:
    return _filled(size, 0.0, dtype, device, requires_grad)


def ones(*size: Any, dtype: Any = None, device: Any = None,
         requires_grad: bool = False) -> Tensor:
    return _filled(size, 1.0, dtype, device, requires_grad)


def empty(*size: Any, dtype: Any = None, device: Any = None,
          requires_grad: bool = False) -> Tensor:
    return _filled(size, None, dtype, device, requires_grad)


def full(size: Sequence[int], fill_value: Any, *, dtype: Any = None, device: Any = None,
         requires_grad: bool = False) -> Tensor:
    return _filled((size,), fill_value, dtype, device, requires_grad)


def zeros_like(t: Tensor, *, dtype: Any = None, device: Any = None,
               requires_grad: bool = False) -> Tensor:
    return zeros(t.shape, dtype=dtype or t.dtype, device=device or t.device,
                 requires_grad=requires_grad)


def ones_like(t: Tensor, *, dtype: Any = None, device: Any = None,
              requires_grad: bool = False) -> Tensor:
    return ones(t.shape, dtype=dtype or t.dtype, device=device or t.device,
                requires_grad=requires_grad)


def full_like(t: Tensor, fill_value: Any, *, dtype: Any = None, device: Any = None) -> Tensor:
    return full(t.shape, fill_value, dtype=dtype or t.dtype, device=device or t.device)


def _random(kind: str, size: Sequence[Any], generator: Generator | None, dtype: Any,
            device: Any, requires_grad: bool) -> Tensor:
    g = generator or default_generator
    dt = D.as_dtype(dtype) if dtype is not None else D.float32
    if not dt.is_floating_point:
        raise TypeError(f"{kind} expects a floating point dtype, got {dt.name}")
    shape = _size(size)
    dev = canonical_device(device)
    tracer = active_tracer()
    if tracer is not None:
        return tracer.random(kind, shape, dt, dev, g).requires_grad_(requires_grad)
    arr = draw(g, kind, shape, dt)
    return Tensor._make(move_array(arr, dev), dt, dev).requires_grad_(requires_grad)


def draw(generator: Generator, kind: str, shape: tuple[int, ...], dtype: D.DType) -> np.ndarray:
    """A host array of ``dtype`` from ``generator``: standard normal ("randn") or uniform on
    [0, 1) ("rand"); eager calls and a compiled plan's random steps draw through it alike."""
    # numpy draws float32 or float64: float16 is drawn in float32 and rounded
    wide = dtype.np if dtype is not D.float16 else np.dtype(np.float32)
    if kind == "randn":
        arr = generator._rng.standard_normal(shape, dtype=wide)
    else:
        arr = generator._rng.random(shape, dtype=wide)
    return arr.astype(dtype.np, copy=False)


def randn(*size: Any, generator: Generator | None = None, dtype: Any = None,
          device: Any = None, requires_grad: bool = False) -> Tensor:
    return _random("randn", size, generator, dtype, device, requires_grad)


def rand(*size: Any, generator: Generator | None = None, dtype: Any = None,
         device: Any = None, requires_grad: bool = False) -> Tensor:
    return _random("rand", size, generator, dtype, device, requires_grad)


def randint(low: int, high: int, size: Sequence[int], *, generator: Generator | None = None,
            device: Any = None) -> Tensor:
    g = generator or default_generator
    if active_tracer() is not None:
        raise GraphBreak("randint inside a captured step")
    arr = g._rng.integers(low, high, size=tuple(size), dtype=np.int64)
    dev = canonical_device(device)
    return Tensor._make(move_array(arr, dev), D.int64, dev)


_TORCH_NAMES = {"int64": "Long", "bool": "Bool"}


def multinomial(input: Tensor, num_samples: int, replacement: bool = False, *,
                generator: Generator | None = None) -> Tensor:
    """Indices drawn from the categories of each row of ``input`` (non-negative weights, not
    necessarily normalised), ``num_samples`` a row; without ``replacement`` each category
    once (by exponential keys: a category of weight 0 comes after every other, as in
    PyTorch). Reads the weights' values, so a compiled step runs it eagerly."""
    if active_tracer() is not None:
        raise GraphBreak("multinomial inside a captured step")
    if not input.dtype.is_floating_point:
        raise RuntimeError("multinomial only supports floating-point dtypes for input, got: "
                           + _TORCH_NAMES.get(input.dtype.name, input.dtype.name))
    if input.ndim not in (1, 2):
        raise RuntimeError("prob_dist must be 1 or 2 dim")
    if num_samples <= 0:
        raise RuntimeError("cannot sample n_sample <= 0 samples")
    n = input.shape[-1]
    if not replacement and num_samples > n:
        raise RuntimeError("cannot sample n_sample > prob_dist.size(-1) samples without "
                           "replacement")
    rows = np.asarray(input.detach().cpu().numpy(), dtype=np.float64).reshape(-1, n)
    if not np.all(np.isfinite(rows)) or np.any(rows < 0):
        raise RuntimeError("probability tensor contains either `inf`, `nan` or element < 0")
    totals = rows.sum(axis=1)
    if np.any(totals <= 0):
        raise RuntimeError("invalid multinomial distribution (sum of probabilities <= 0)")
    rng = (generator or default_generator)._rng
    if replacement:
        out = np.stack([rng.choice(n, size=num_samples, replace=True, p=row / total)
                        for row, total in zip(rows, totals)])
    else:
        with np.errstate(divide="ignore"):
            keys = rng.standard_exponential(rows.shape) / rows  # weight 0: an infinite key
        out = np.argsort(keys, axis=1, kind="stable")[:, :num_samples]
    out = out.astype(np.int64).reshape(*input.shape[:-1], num_samples)
    return Tensor._make(move_array(out, input.device), D.int64, input.device)


def arange(start: Any, end: Any = None, step: Any = 1, *, dtype: Any = None,
           device: Any = None, requires_grad: bool = False) -> Tensor:
    if end is None:
        start, end = 0, start
    if dtype is None:
        is_float = any(isinstance(v, float) for v in (start, end, step))
        dt = D.float32 if is_float else D.int64
    else:
        dt = D.as_dtype(dtype)
    dev = canonical_device(device)
    tracer = active_tracer()
    if tracer is not None:
        arr = np.arange(start, end, step, dtype=dt.np)
        return tracer.constant(arr, dt, dev).requires_grad_(requires_grad)
    with device_guard(dev):
        arr = array_module(dev).arange(start, end, step, dtype=dt.np)
    return Tensor._make(arr, dt, dev).requires_grad_(requires_grad)


def _constant(arr: np.ndarray, dt: D.DType, dev: str, requires_grad: bool) -> Tensor:
    """A tensor of a value computed on the host: a graph constant while capturing."""
    tracer = active_tracer()
    if tracer is not None:
        return tracer.constant(arr, dt, dev).requires_grad_(requires_grad)
    return Tensor._make(move_array(arr, dev), dt, dev).requires_grad_(requires_grad)


def eye(n: int, m: int | None = None, *, dtype: Any = None, device: Any = None,
        requires_grad: bool = False) -> Tensor:
    if n < 0:
        raise RuntimeError(f"n must be greater or equal to 0, got {n}")
    if m is not None and m < 0:
        raise RuntimeError(f"m must be greater or equal to 0, got {m}")
    dt = D.as_dtype(dtype) if dtype is not None else D.float32
    return _constant(np.eye(n, m, dtype=dt.np), dt, canonical_device(device), requires_grad)


def linspace(start: Any, end: Any, steps: int, *, dtype: Any = None, device: Any = None,
             requires_grad: bool = False) -> Tensor:
    if steps < 0:
        raise RuntimeError("number of steps must be non-negative")
    dt = D.as_dtype(dtype) if dtype is not None else D.float32
    # computed in float64, then cast, so float32 points match PyTorch's to rounding
    arr = np.linspace(float(start), float(end), int(steps)).astype(dt.np)
    return _constant(arr, dt, canonical_device(device), requires_grad)


def randn_like(t: Tensor, *, generator: Generator | None = None, dtype: Any = None,
               device: Any = None, requires_grad: bool = False) -> Tensor:
    return randn(t.shape, generator=generator, dtype=dtype or t.dtype,
                 device=device or t.device, requires_grad=requires_grad)


def rand_like(t: Tensor, *, generator: Generator | None = None, dtype: Any = None,
              device: Any = None, requires_grad: bool = False) -> Tensor:
    return rand(t.shape, generator=generator, dtype=dtype or t.dtype,
                device=device or t.device, requires_grad=requires_grad)


def randperm(n: int, *, generator: Generator | None = None, dtype: Any = None,
             device: Any = None) -> Tensor:
    """A random permutation of 0..n-1 from ``generator`` (the default one if None)."""
    if n < 0:
        raise RuntimeError(f"Trying to create tensor with negative dimension {n}: [{n}]")
    if active_tracer() is not None:
        raise GraphBreak("randperm inside a captured step")
    g = generator or default_generator
    dt = D.as_dtype(dtype) if dtype is not None else D.int64
    dev = canonical_device(device)
    return Tensor._make(move_array(g._rng.permutation(int(n)).astype(dt.np), dev), dt, dev)
