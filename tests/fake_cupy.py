"""A strict, numpy-backed stand-in for the parts of CuPy this project calls, so that eager
mode and plans on "cuda" run (and are checked) on a machine without a GPU or CuPy.

Strict where CuPy is strict, and a little stricter, so that code passing here runs on CuPy:
- ``ndarray`` wraps a numpy array and is no numpy array: ``np.asarray(a)`` and every other
  implicit conversion raise CuPy's TypeError; ``a.get()`` is the explicit copy to the host;
- a numpy array mixed into an operation raises CuPy's "Unsupported type" TypeError;
- numpy's own functions and ufuncs refuse fake arrays (``__array_function__`` and
  ``__array_ufunc__`` raise). CuPy forwards the numpy ufuncs and functions it implements
  itself, but not all (``np.result_type``, ``np.frompyfunc`` ufuncs fail there too): code on a
  device array calls ``xp.<name>``, and this fake makes any ``np.<name>`` on one fail loudly;
- reductions and scalar indexing give 0-d arrays, never numpy scalars, as CuPy's do;
- an operation whose arrays sit on a device other than the current one raises CuPy's
  ValueError (``with cupy.cuda.Device(i):`` selects it, per thread, as in CuPy).

Everything runs synchronously on the host: streams and events are bookkeeping. Raw kernels
(``RawModule``) need a host launcher, plugged in with ``set_raw_module_backend``.
Install it for one test with the ``fake_cuda`` fixture of ``tests/fakecuda.py``.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Callable, Iterator
from types import ModuleType
from typing import Any

import numpy as np

IMPLICIT_CONVERSION = ("Implicit conversion to a NumPy array is not allowed. Please use "
                       "`.get()` to construct a NumPy array explicitly.")
DEVICE_COUNT = 2  # cuda:0 and cuda:1, so that cross-device placement can be tested
COMPUTE_CAPABILITY = "90"

_tls = threading.local()


def _current_device() -> int:
    return getattr(_tls, "device", 0)


class CUDARuntimeError(RuntimeError):
    pass


def _device_id(device: Any) -> int:
    index = _current_device() if device is None else int(device)
    if not 0 <= index < DEVICE_COUNT:
        raise CUDARuntimeError("cudaErrorInvalidDevice: invalid device ordinal")
    return index


# --- arrays ----------------------------------------------------------------------------------


def _root(a: np.ndarray) -> np.ndarray:
    """The numpy array that owns ``a``'s memory."""
    while isinstance(a.base, np.ndarray):
        a = a.base
    return a


def _unwrap(x: Any, device: int | None) -> Any:
    """The numpy value of an operand; ``device``: the device its arrays must sit on (None:
    no check, for a view made without a kernel)."""
    if isinstance(x, ndarray):
        if device is not None and x._device != device:
            raise ValueError(f"Array device must be same as the current device: array device = "
                             f"{x._device} while current = {device}")
        return x._a
    if isinstance(x, np.ndarray):
        raise TypeError(f"Unsupported type {type(x)}")
    if isinstance(x, (tuple, list)):
        return type(x)(_unwrap(v, device) for v in x)
    return x


def _wrap(res: Any, device: int, parents: tuple[Any, ...] = ()) -> Any:
    """A numpy result as CuPy returns it: an ndarray (a 0-d one for a scalar), which is a view
    of the parent whose memory it shares."""
    if isinstance(res, np.generic):
        return ndarray._of(np.asarray(res), device)
    if isinstance(res, np.ndarray):
        root = _root(res)
        for p in parents:
            if isinstance(p, ndarray) and _root(p._a) is root:
                return ndarray._of(res, p._device, p if p._base is None else p._base)
        return ndarray._of(res, device)
    if isinstance(res, tuple):
        return tuple(_wrap(r, device, parents) for r in res)
    return res


class MemoryPointer:
    """``a.data``: where the array's first element lives (here, a host address)."""

    def __init__(self, ptr: int, device_id: int) -> None:
        self.ptr = ptr
        self.device_id = device_id

    @property
    def device(self) -> Device:
        return Device(self.device_id)


class Flags:
    """CuPy's flags: contiguity and ownership only (CuPy arrays are always writeable, and
    ``flags.writeable`` does not exist)."""

    def __init__(self, a: ndarray) -> None:
        self.c_contiguous = bool(a._a.flags.c_contiguous)
        self.f_contiguous = bool(a._a.flags.f_contiguous)
        self.owndata = a._base is None


class ndarray:  # noqa: N801 - CuPy's name
    __slots__ = ("_a", "_device", "_base", "__weakref__")
    __module__ = "cupy"  # device_of_array and friends recognise CuPy arrays by their module

    def __init__(self, shape: Any, dtype: Any = float, order: str = "C") -> None:
        self._a = np.empty(shape, dtype=dtype, order=order)
        self._device = _current_device()
        self._base: ndarray | None = None

    @classmethod
    def _of(cls, a: np.ndarray, device: int, base: ndarray | None = None) -> ndarray:
        out = object.__new__(cls)
        out._a = a
        out._device = device
        out._base = base
        return out

    # --- what numpy must not do with it ----------------------------------------------------
    def __array__(self, *args: Any, **kwargs: Any) -> np.ndarray:
        raise TypeError(IMPLICIT_CONVERSION)

    def __array_ufunc__(self, ufunc: Any, method: str, *inputs: Any, **kwargs: Any) -> Any:
        name = getattr(ufunc, "__name__", repr(ufunc))
        raise TypeError(f"numpy.{name}{'' if method == '__call__' else '.' + method} was called "
                        "on a cupy array: call cupy's own (xp.<name>), numpy's may copy to the "
                        "host or not exist in CuPy")

    def __array_function__(self, func: Any, types: Any, args: Any, kwargs: Any) -> Any:
        raise TypeError(f"numpy.{func.__name__} was called on a cupy array: call cupy's own "
                        "(xp.<name>), numpy's may copy to the host or not exist in CuPy")

    __hash__ = None  # type: ignore[assignment]  # unhashable, as CuPy's

    # --- attributes ------------------------------------------------------------------------
    shape = property(lambda self: self._a.shape)
    dtype = property(lambda self: self._a.dtype)
    ndim = property(lambda self: self._a.ndim)
    size = property(lambda self: self._a.size)
    strides = property(lambda self: self._a.strides)
    itemsize = property(lambda self: self._a.itemsize)
    nbytes = property(lambda self: self._a.nbytes)
    base = property(lambda self: self._base)
    flags = property(Flags)

    @property
    def device(self) -> Device:
        return Device(self._device)

    @property
    def data(self) -> MemoryPointer:
        return MemoryPointer(self._a.ctypes.data, self._device)

    @property
    def __cuda_array_interface__(self) -> dict[str, Any]:
        return {"shape": self.shape, "typestr": self.dtype.str, "version": 3,
                "data": (self.data.ptr, False),
                "strides": None if self._a.flags.c_contiguous else self.strides}

    @property
    def T(self) -> ndarray:  # noqa: N802 - numpy's name
        return _wrap(self._a.T, self._device, (self,))

    # --- explicit transfers and Python scalars (CuPy syncs and copies for these) -----------
    def get(self, stream: Any = None, order: str = "C", out: Any = None) -> np.ndarray:
        if out is not None:
            out[...] = self._a
            return out
        return np.array(self._a, order=order)

    def item(self) -> Any:
        return self._a.item()

    def tolist(self) -> Any:
        return self._a.tolist()

    def __bool__(self) -> bool:
        return bool(self._a)

    def __float__(self) -> float:
        return float(self._a)

    def __int__(self) -> int:
        return int(self._a)

    def __complex__(self) -> complex:
        return complex(self._a)

    def __len__(self) -> int:
        return len(self._a)

    def __iter__(self) -> Iterator[ndarray]:
        if self.ndim == 0:
            raise TypeError("iteration over a 0-d array")
        return (self[i] for i in range(len(self)))

    def __repr__(self) -> str:
        return repr(self._a)

    def __str__(self) -> str:
        return str(self._a)

    # --- indexing --------------------------------------------------------------------------
    def __getitem__(self, key: Any) -> ndarray:
        return _wrap(self._a[_unwrap(key, self._device)], self._device, (self,))

    def __setitem__(self, key: Any, value: Any) -> None:
        self._a[_unwrap(key, self._device)] = _unwrap(value, self._device)


def _method(name: str, view: bool = False) -> Callable[..., Any]:
    """ndarray.<name>: numpy's method on the wrapped array. A view needs no kernel, so it
    works from any current device (and stays on the array's); other methods check it."""

    def method(self: ndarray, *args: Any, **kwargs: Any) -> Any:
        device = self._device if view else _device_id(None)
        args, kwargs = _unwrap(args, device), {k: _unwrap(v, device) for k, v in kwargs.items()}
        _unwrap(self, device)
        return _wrap(getattr(self._a, name)(*args, **kwargs), device, (self,))

    method.__name__ = name
    return method


for _name in ("reshape", "transpose", "swapaxes", "squeeze", "view"):
    setattr(ndarray, _name, _method(_name, view=True))


def _diagonal(self: ndarray, offset: int = 0, axis1: int = 0, axis2: int = 1) -> ndarray:
    """CuPy's diagonal: a view one can write through (numpy's is read-only)."""
    out = self._a.diagonal(offset, axis1, axis2)
    if self._a.flags.writeable:
        out.flags.writeable = True
    return _wrap(out, self._device, (self,))


ndarray.diagonal = _diagonal  # type: ignore[attr-defined]
for _name in ("astype", "copy", "ravel", "flatten", "fill", "sum", "mean", "prod", "max", "min",
              "argmax", "argmin", "any", "all", "nonzero", "clip", "round", "cumsum", "cumprod", "dot"):
    setattr(ndarray, _name, _method(_name))


# --- ufuncs (the operators go through them) ---------------------------------------------------


class ufunc:  # noqa: N801 - CuPy's name
    """cupy.<ufunc>: numpy's on unwrapped operands, ``out=`` a cupy array, results wrapped."""

    def __init__(self, np_ufunc: np.ufunc) -> None:
        self._np = np_ufunc
        self.__name__ = np_ufunc.__name__
        self.nin, self.nout = np_ufunc.nin, np_ufunc.nout

    def __call__(self, *args: Any, out: Any = None, **kwargs: Any) -> Any:
        device = _current_device()
        inputs = _unwrap(args, device)
        if out is not None:
            if not isinstance(out, ndarray):
                raise TypeError(f"Output arrays must be cupy.ndarray, got {type(out)}")
            self._np(*inputs, out=_unwrap(out, device), **kwargs)
            return out
        return _wrap(self._np(*inputs, **kwargs), device)

    def at(self, a: ndarray, indices: Any, b: Any = None) -> None:
        """CuPy 14's ``ufunc.at``: a scatter for add, maximum and minimum alone, of the dtypes
        its atomics take, the value cast to ``a``'s dtype; the float maximum and minimum as
        its atomics compute them, ``fmaxf``/``fminf`` of float32 operands (a float64 rounded
        to float32 wherever the scatter writes, NaN dropped)."""
        op = _SCATTER_OPS.get(self.__name__)
        if op is None:
            raise NotImplementedError(f"`cupy_{self.__name__}.at` is not supported yet")
        device = _current_device()
        arr, key = _unwrap(a, device), _unwrap(indices, device)
        allowed = _SCATTER_ADD_TYPES if op == "add" else _SCATTER_MAX_TYPES
        if not issubclass(arr.dtype.type, allowed):
            names = "int32, float16, float32, float64, uint32, uint64, " if op == "add" else \
                "int32, float32, float64, uint32, uint64 "
            raise TypeError(f"scatter_{op} only supports {names}as data type")
        value = np.asarray(_unwrap(b, device)).astype(arr.dtype, copy=False)
        if op == "add":
            np.add.at(arr, key, value)
        elif arr.dtype.kind == "f":
            work = arr.astype(np.float32)
            (np.fmax if op == "max" else np.fmin).at(work, key, value.astype(np.float32))
            written = np.zeros(arr.shape, dtype=bool)
            written[key] = True
            arr[written] = work[written]
        else:
            (np.maximum if op == "max" else np.minimum).at(arr, key, value)

    def __repr__(self) -> str:
        return f"<ufunc '{self.__name__}'>"


_SCATTER_OPS = {"add": "add", "maximum": "max", "minimum": "min"}
_SCATTER_MAX_TYPES = (np.int32, np.float32, np.float64, np.uint32, np.uint64, np.intc, np.uintc,
                      np.ulonglong)
_SCATTER_ADD_TYPES = (*_SCATTER_MAX_TYPES, np.float16)


_UFUNCS = ("add subtract multiply divide true_divide floor_divide power negative absolute sign "
           "exp log sin cos tan tanh sqrt square reciprocal maximum minimum fmax fmin equal "
           "not_equal less less_equal greater greater_equal logical_and logical_or logical_not "
           "logical_xor invert bitwise_and bitwise_or bitwise_xor isnan isinf isfinite floor "
           "ceil remainder mod log1p expm1 log2 log10 trunc rint arcsin arccos arctan "
           "arctan2 sinh cosh arcsinh arccosh arctanh fmod hypot left_shift right_shift").split()
UFUNCS = {name: ufunc(getattr(np, name)) for name in _UFUNCS}


def _binary_op(fn: str, reflected: bool = False, inplace: bool = False) -> Callable[..., Any]:
    def op(self: ndarray, other: Any) -> Any:
        if not isinstance(other, (ndarray, np.ndarray, np.generic, int, float, bool, complex)):
            return NotImplemented  # e.g. a Tensor: let its reflected operator answer
        u = UFUNCS[fn]
        if inplace:
            return u(self, other, out=self)
        return u(other, self) if reflected else u(self, other)

    return op


for _dunder, _fn in {"add": "add", "sub": "subtract", "mul": "multiply",
                     "truediv": "true_divide", "floordiv": "floor_divide", "pow": "power",
                     "mod": "remainder", "and": "bitwise_and", "or": "bitwise_or",
                     "xor": "bitwise_xor"}.items():
    setattr(ndarray, f"__{_dunder}__", _binary_op(_fn))
    setattr(ndarray, f"__r{_dunder}__", _binary_op(_fn, reflected=True))
    setattr(ndarray, f"__i{_dunder}__", _binary_op(_fn, inplace=True))
for _dunder, _fn in {"eq": "equal", "ne": "not_equal", "lt": "less", "le": "less_equal",
                     "gt": "greater", "ge": "greater_equal"}.items():
    setattr(ndarray, f"__{_dunder}__", _binary_op(_fn))
for _dunder, _fn in {"neg": "negative", "abs": "absolute", "invert": "invert"}.items():
    setattr(ndarray, f"__{_dunder}__", lambda self, _u=UFUNCS[_fn]: _u(self))
ndarray.__pos__ = lambda self: self.copy()  # type: ignore[attr-defined]


def _matmul_op(self: ndarray, other: Any) -> Any:
    return matmul(self, other) if isinstance(other, (ndarray, np.ndarray)) else NotImplemented


ndarray.__matmul__ = _matmul_op  # type: ignore[attr-defined]
ndarray.__rmatmul__ = lambda self, other: (  # type: ignore[attr-defined]
    matmul(other, self) if isinstance(other, np.ndarray) else NotImplemented)


# --- module functions ------------------------------------------------------------------------


def _function(np_fn: Callable[..., Any], view: bool = False) -> Callable[..., Any]:
    """cupy.<name>: numpy's function on unwrapped arguments, its results wrapped (a view of
    an argument stays that argument's view)."""

    def fn(*args: Any, **kwargs: Any) -> Any:
        device = _current_device()
        check = None if view else device
        out = kwargs.pop("out", None)
        res = np_fn(*_unwrap(args, check), **{k: _unwrap(v, check) for k, v in kwargs.items()},
                    **({} if out is None else {"out": _unwrap(out, device)}))
        if out is not None:
            return out
        parents = tuple(a for a in args if isinstance(a, ndarray))
        return _wrap(res, parents[0]._device if view and parents else device, parents)

    fn.__name__ = np_fn.__name__
    return fn


_FUNCTIONS = ("empty zeros ones full empty_like zeros_like ones_like full_like arange "
              "linspace eye where clip sum mean prod amax amin max min argmax argmin any all "
              "concatenate stack matmul dot allclose isclose array_equal count_nonzero "
              "cumsum cumprod sort argsort unique outer tensordot abs pad").split()
_VIEW_FUNCTIONS = "reshape transpose broadcast_to expand_dims squeeze swapaxes ravel".split()


def asarray(a: Any, dtype: Any = None, order: Any = None) -> ndarray:
    """To the current device: a host value or numpy array is copied there; a cupy array on
    another device is copied over (as CuPy does), one here is returned as it is (or cast)."""
    device = _current_device()
    if isinstance(a, ndarray):
        if a._device != device:
            return ndarray._of(np.array(a._a, dtype=dtype, order=order or "K"), device)
        if order == "C" and not a._a.flags.c_contiguous:  # CuPy copies to honour the order
            return ndarray._of(np.ascontiguousarray(a._a, dtype=dtype), device)
        return a if dtype is None or np.dtype(dtype) == a.dtype else a.astype(dtype)
    return ndarray._of(np.array(a, dtype=dtype, order=order or "K"), device)


def array(obj: Any, dtype: Any = None, copy: bool = True, order: str = "K") -> ndarray:
    out = asarray(obj, dtype, order)
    return out.copy() if copy and isinstance(obj, ndarray) and out is obj else out


def asnumpy(a: Any, stream: Any = None, order: str = "C", out: Any = None) -> np.ndarray:
    if isinstance(a, ndarray):
        return a.get(order=order, out=out)
    return np.asarray(a, order=order)


def ascontiguousarray(a: ndarray, dtype: Any = None) -> ndarray:
    return _wrap(np.ascontiguousarray(_unwrap(a, _current_device()), dtype=dtype),
                 _current_device(), (a,))


def get_array_module(*args: Any) -> ModuleType:
    import sys

    return sys.modules[__name__] if any(isinstance(a, ndarray) for a in args) else np


# --- cupy.cuda: devices, streams, events ---------------------------------------------------


class Device:
    """A CUDA device: ``use()`` makes it current for this thread; as a context manager, for a
    block."""

    def __init__(self, device: Any = None) -> None:
        self.id = _device_id(device)

    def use(self) -> None:
        _tls.device = self.id

    def __enter__(self) -> Device:
        stack = _tls.__dict__.setdefault("stack", [])
        stack.append(_current_device())
        self.use()
        return self

    def __exit__(self, *exc: Any) -> None:
        _tls.device = _tls.stack.pop()

    def synchronize(self) -> None:
        """Nothing queued: the fake computes on the host, synchronously."""

    @property
    def compute_capability(self) -> str:
        return COMPUTE_CAPABILITY

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Device) and other.id == self.id

    def __hash__(self) -> int:
        return self.id

    def __repr__(self) -> str:
        return f"<CUDA Device {self.id}>"


class Event:
    def __init__(self, block: bool = False, disable_timing: bool = False,
                 interprocess: bool = False) -> None:
        self.recorded_on: Stream | None = None

    def record(self, stream: Stream | None = None) -> None:
        self.recorded_on = stream if stream is not None else get_current_stream()

    def synchronize(self) -> None:
        """The work before the record is done: it ran on the host."""

    @property
    def done(self) -> bool:
        return True


class Stream:
    """A stream of one device; ``use()`` makes it this thread's current stream."""

    null: Stream

    def __init__(self, null: bool = False, non_blocking: bool = False, ptr: int = 0) -> None:
        self.device_id = _current_device()
        self.non_blocking = non_blocking
        self.waited: list[Event] = []

    def use(self) -> Stream:
        _tls.stream = self
        return self

    def wait_event(self, event: Event) -> None:
        self.waited.append(event)

    def record(self, event: Event | None = None) -> Event:
        event = event or Event()
        event.record(self)
        return event

    def synchronize(self) -> None:
        """Nothing queued: the fake computes on the host, synchronously."""

    @property
    def done(self) -> bool:
        return True


Stream.null = Stream(null=True)


def get_current_stream() -> Stream:
    return getattr(_tls, "stream", Stream.null)


def _device_properties(index: int) -> dict[str, Any]:
    """What cudaGetDeviceProperties reports for an H100 SXM, the part of it a launcher reads."""
    _device_id(index)
    return {"name": b"Fake CUDA device (numpy)", "major": int(COMPUTE_CAPABILITY[0]),
            "minor": int(COMPUTE_CAPABILITY[1]), "multiProcessorCount": 132,
            "maxThreadsPerBlock": 1024, "maxThreadsPerMultiProcessor": 2048,
            "maxThreadsDim": (1024, 1024, 64),
            "maxGridSize": (2147483647, 65535, 65535), "warpSize": 32,
            "sharedMemPerBlock": 49152, "totalGlobalMem": 80 * 2**30}


# --- raw kernels: the hook a host-emulated launch plugs into ---------------------------------

# backend(code, options) -> a module with ``get_function(name) -> launch(grid, block, args,
# shared_mem)``: CUDA C ``code`` built for the host (``codegen.cuda_host.HostModule``); an
# exception while building is NVRTC rejecting the code (CompileException)
RawModuleBackend = Callable[[str, tuple[str, ...]], Any]
_raw_backend: RawModuleBackend | None = None


def set_raw_module_backend(backend: RawModuleBackend | None) -> RawModuleBackend | None:
    """Plug a host launcher into RawModule (None unplugs it); returns the previous one."""
    global _raw_backend
    previous, _raw_backend = _raw_backend, backend
    return previous


class RawKernel:
    def __init__(self, module: RawModule, name: str, launch: Callable[..., None]) -> None:
        self.module, self.name, self._launch = module, name, launch

    def __call__(self, grid: tuple[int, ...], block: tuple[int, ...], args: tuple[Any, ...],
                 *, shared_mem: int = 0, stream: Any = None) -> None:
        for what, dims in (("grid", grid), ("block", block)):
            if not isinstance(dims, tuple) or not 1 <= len(dims) <= 3 or not all(
                    isinstance(d, int) and d > 0 for d in dims):
                raise ValueError(f"{self.name}: {what} must be a tuple of 1 to 3 positive ints, "
                                 f"got {dims!r}")
        if math.prod(block) > 1024:
            raise ValueError(f"{self.name}: block {block} has more than 1024 threads")
        device = _current_device()
        for i, a in enumerate(args):
            if isinstance(a, ndarray):
                _unwrap(a, device)
            elif not isinstance(a, np.generic):
                raise TypeError(f"{self.name}: argument {i} is a {type(a).__name__}: pass cupy "
                                "arrays and numpy scalars of the parameter types")
        self._launch(grid, block, args, shared_mem)


class RawModule:
    def __init__(self, code: str | None = None, *, path: str | None = None,
                 options: tuple[str, ...] = (), backend: str = "nvrtc",
                 translate_cucomplex: bool = False, enable_cooperative_groups: bool = False,
                 name_expressions: Any = None, jitify: bool = False) -> None:
        if code is None:
            raise TypeError("fake cupy: RawModule needs code= (path= is not emulated)")
        self.code, self.options, self.backend = code, tuple(options), backend
        self._built: Any = None

    def compile(self, log_stream: Any = None) -> None:
        """Build the code now (as NVRTC would), raising CompileException with the log."""
        if self._built is None:
            if _raw_backend is None:
                raise NotImplementedError(
                    "fake cupy: RawModule needs a host launcher to build its code; plug one in "
                    "with tests.fake_cupy.set_raw_module_backend(backend)")
            try:
                self._built = _raw_backend(self.code, self.options)
            except Exception as e:  # the host compiler's log stands for NVRTC's
                raise CompileException(str(e)) from e

    def get_function(self, name: str) -> RawKernel:
        self.compile()
        return RawKernel(self, name, self._built.get_function(name))


class CompileException(Exception):
    """cupy.cuda.compiler.CompileException: NVRTC rejected the code (the message is its log)."""


# --- cupyx ---------------------------------------------------------------------------------


def scatter_add(a: ndarray, slices: Any, value: Any) -> None:
    """cupyx.scatter_add: numpy's add.at (repeated indices accumulate)."""
    device = _current_device()
    np.add.at(_unwrap(a, device), _unwrap(slices, device), _unwrap(value, device))


_erf = np.vectorize(math.erf, otypes=[np.float64])


def erf(x: ndarray) -> ndarray:
    """cupyx.scipy.special.erf: the float dtype of its input kept."""
    device = _current_device()
    a = _unwrap(x, device)
    return ndarray._of(_erf(a).astype(a.dtype if a.dtype.kind == "f" else np.float64), device)


# --- the module objects --------------------------------------------------------------------


def _module(name: str, doc: str, **members: Any) -> ModuleType:
    m = ModuleType(name, doc)
    m.__dict__.update(members)
    return m


def matmul(a: Any, b: Any, out: Any = None) -> Any:
    return _function(np.matmul)(a, b, out=out)


def modules() -> dict[str, ModuleType]:
    """Fresh module objects for sys.modules: cupy, cupy.cuda, cupyx and its scipy.special."""
    runtime_api = _module("cupy.cuda.runtime", "fake CUDA runtime API",
                          CUDARuntimeError=CUDARuntimeError,
                          getDeviceCount=lambda: DEVICE_COUNT,
                          getDevice=_current_device,
                          getDeviceProperties=_device_properties)
    compiler = _module("cupy.cuda.compiler", "fake NVRTC front end",
                       CompileException=CompileException)
    cuda = _module("cupy.cuda", "fake cupy.cuda", Device=Device, Stream=Stream, Event=Event,
                   get_current_stream=get_current_stream, runtime=runtime_api,
                   MemoryPointer=MemoryPointer, compiler=compiler)
    members: dict[str, Any] = {name: getattr(np, name) for name in (
        "float16", "float32", "float64", "int8", "int16", "int32", "int64", "uint8", "bool_",
        "dtype", "newaxis", "pi", "inf", "nan", "result_type", "can_cast", "promote_types")}
    members.update(UFUNCS)
    members.update({name: _function(getattr(np, name)) for name in _FUNCTIONS})
    members.update({name: _function(getattr(np, name), view=True) for name in _VIEW_FUNCTIONS})
    members.update(ndarray=ndarray, ufunc=ufunc, asarray=asarray, array=array, asnumpy=asnumpy,
                   ascontiguousarray=ascontiguousarray, matmul=matmul, cuda=cuda,
                   RawModule=RawModule, RawKernel=RawKernel,
                   get_array_module=get_array_module, __version__="13.0.0-fake")
    stride_tricks = _module("cupy.lib.stride_tricks", "fake cupy.lib.stride_tricks",
                            as_strided=_function(np.lib.stride_tricks.as_strided, view=True))
    members.update(lib=_module("cupy.lib", "fake cupy.lib", stride_tricks=stride_tricks))
    cupy = _module("cupy", __doc__ or "", **members)
    special = _module("cupyx.scipy.special", "fake cupyx.scipy.special", erf=erf)
    scipy = _module("cupyx.scipy", "fake cupyx.scipy", special=special)
    cupyx = _module("cupyx", "fake cupyx", scipy=scipy, scatter_add=scatter_add)
    return {"cupy": cupy, "cupy.cuda": cuda, "cupy.cuda.runtime": runtime_api,
            "cupy.cuda.compiler": compiler, "cupyx": cupyx,
            "cupyx.scipy": scipy, "cupyx.scipy.special": special}

