"""Tensor constructors and the seeded random generator."""

from __future__ import annotations

import copy
import functools
import itertools
import math
import operator
import threading
import warnings
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from . import _dtype as D
from . import _torch_rng
from ._determinism import uninitialized_fill
from ._device import (
    array_module,
    canonical_device,
    device_guard,
    device_of_array,
    factory_device,
    move_array,
)
from .tensor import Tensor  # noqa: I001 - first: it loads the ops, shapes among them
from .ops.shapes import ShapeError
from .tracing import GraphBreak, active_tracer
from .ops.int_arguments import int_list_error
from .ops.layouts import factory_options


# the seed of a new Generator, as PyTorch's (its default generator is seeded from entropy)
DEFAULT_SEED = 67280421310721


class Generator:
    """A seeded random source: PyTorch's CPU stream, a Mersenne Twister seeded as PyTorch
    seeds it, drawn as PyTorch's CPU kernels draw it where PyTorch's numbers are known
    (``runtime._torch_rng``: rand, randn, randint, uniform_, normal_, randperm, the samplers),
    so after the same ``manual_seed`` those give PyTorch's numbers. Everything else draws
    from the same stream through numpy's ``Generator`` methods (``_rng``)."""

    def __init__(self, device: str = "cpu") -> None:
        self.device = canonical_device(device)
        self.manual_seed(DEFAULT_SEED)

    def manual_seed(self, seed: int) -> Generator:
        self._seed = int(seed)
        self._rng = np.random.Generator(_mt19937(self._seed))
        # the sine of normal_distribution<double>'s last pair, for its next draw (PyTorch's
        # next_double_normal_sample)
        self._normal_cache: float | None = None
        return self

    def _torch_random64(self) -> int:
        """PyTorch's random_() of an int64 from this stream: two 32-bit draws, high first,
        below 2**63."""
        return int(_torch_rng.raw64(self._rng, 1)[0]) & ((1 << 63) - 1)

    def seed(self) -> int:
        """Seeds from fresh entropy; returns the seed (as ``initial_seed()`` then does)."""
        s = int(np.random.SeedSequence().entropy % (1 << 63))
        self.manual_seed(s)
        return s

    def initial_seed(self) -> int:
        """The seed of the last ``manual_seed`` or ``seed``."""
        return self._seed

    def get_state(self) -> Tensor:
        """The state as a uint8 tensor of PyTorch's 5056 bytes (``torch.get_rng_state()``'s
        layout: the Mersenne Twister's words and position, the kept normal sample), which
        ``set_state`` here or PyTorch's takes."""
        raw = _torch_rng.state_bytes(self._seed, self._rng, self._normal_cache)
        return Tensor._make(np.frombuffer(raw, np.uint8).copy(), D.uint8, "cpu")

    def set_state(self, new_state: Tensor) -> Generator:
        """Restores a state from ``get_state`` (or PyTorch's ``get_rng_state``)."""
        if not isinstance(new_state, Tensor) or new_state.dtype is not D.uint8:
            raise TypeError("RNG state must be a torch.ByteTensor")
        values = np.asarray(new_state.detach().cpu().numpy()).reshape(-1)
        if values.size != _STATE_BYTES:
            raise RuntimeError(f"Expected a CPUGeneratorImplState of size {_STATE_BYTES} but "
                               f"found the input RNG state size to be {values.size}")
        seed, state, cache = _torch_rng.from_state_bytes(values.tobytes())
        self._rng.bit_generator.state = state
        self._seed, self._normal_cache = seed, cache
        return self


def _mt19937(seed: int) -> np.random.MT19937:
    """A Mersenne Twister seeded as PyTorch's ``at::mt19937`` (the seed's low 32 bits, Knuth's
    initialisation: numpy's legacy seeding)."""
    return np.random.RandomState(seed & 0xFFFFFFFF)._bit_generator


_STATE_BYTES = _torch_rng.STATE_BYTES
default_generator = Generator()
default_generator.seed()


class _ThreadGenerator(threading.local):
    """The CPU default generator a thread uses in place of ``default_generator``."""

    generator: Generator | None = None


_thread_generator = _ThreadGenerator()


def cpu_default_generator() -> Generator:
    """The CPU default generator of the calling thread: ``default_generator``, or in a
    DataLoader worker thread that worker's own (PyTorch's workers are processes, each
    drawing from its own default generator seeded with its worker seed; threads sharing
    one would draw in whatever order they run, so no seed would reproduce a batch)."""
    own = _thread_generator.generator
    return default_generator if own is None else own


class ThreadDefaultGenerator(Generator):
    """Stands for the CPU default generator of whichever thread uses it: what a compiled
    step's draws from the default generator name, so that, replayed in a DataLoader worker
    thread, they draw from that worker's generator as eager mode's do there. Every field
    of the generator (``_rng``, ``_seed``, ``_normal_cache``) is the calling thread's."""

    def __init__(self) -> None:
        self.device = "cpu"

    def _own(self) -> Generator:
        return cpu_default_generator()

    def __deepcopy__(self, memo: dict[int, Any]) -> Generator:
        """A copy of the calling thread's generator as it is now (a snapshot to draw from,
        as a deep copy of any generator is), not another stand-in for the live one."""
        return copy.deepcopy(self._own(), memo)

    @property  # type: ignore[override]
    def _rng(self) -> np.random.Generator:
        return self._own()._rng

    @_rng.setter
    def _rng(self, rng: np.random.Generator) -> None:
        self._own()._rng = rng

    @property  # type: ignore[override]
    def _seed(self) -> int:
        return self._own()._seed

    @_seed.setter
    def _seed(self, seed: int) -> None:
        self._own()._seed = seed

    @property  # type: ignore[override]
    def _normal_cache(self) -> float | None:
        return self._own().__dict__.get("_normal_cache")

    @_normal_cache.setter
    def _normal_cache(self, value: float | None) -> None:
        self._own()._normal_cache = value


thread_default_generator = ThreadDefaultGenerator()


def use_as_thread_default(generator: Generator | None) -> None:
    """Make ``generator`` the calling thread's CPU default generator (None: the process's):
    ``rt.manual_seed``, ``rt.initial_seed``, ``rt.rand`` and the other draws there use it."""
    _thread_generator.generator = generator


def manual_seed(seed: int) -> Generator:
    """Seed the CPU's default generator and every GPU's (``cuda.manual_seed_all``), as
    PyTorch's ``manual_seed``. In a DataLoader worker thread, the worker's own CPU
    generator only: a PyTorch worker is a process, whose seeding reaches no generator of
    the main one, and the GPUs' generators are the main thread's too."""
    from . import cuda

    if _thread_generator.generator is None:
        cuda.manual_seed_all(seed)
    return cpu_default_generator().manual_seed(seed)


def _device_generator(device: str) -> Generator:
    """The default generator of ``device``: the CPU's, or that GPU's (``cuda.default_generators``),
    as PyTorch draws a tensor made on a GPU from that GPU's generator."""
    if device == "cpu":
        return cpu_default_generator()
    from . import cuda

    return cuda.default_generators[int(device.partition(":")[2] or 0)]


def initial_seed() -> int:
    """The default generator's seed."""
    return cpu_default_generator().initial_seed()


def seed() -> int:
    """Seeds the default generator from fresh entropy; returns the seed."""
    return cpu_default_generator().seed()


def get_rng_state() -> Tensor:
    """The default generator's state (``Generator.get_state``)."""
    return cpu_default_generator().get_state()


def set_rng_state(new_state: Tensor) -> None:
    """Restores the default generator's state from ``get_rng_state``."""
    cpu_default_generator().set_state(new_state)


def _size(size: Sequence[Any], kwargs: dict[str, Any] | None = None, fn: str = "zeros"
          ) -> tuple[int, ...]:
    """A creation function's shape: its sizes as arguments, as one sequence, or as the
    keyword ``size`` (in ``kwargs``, the function's other keywords), as PyTorch's
    overloads take them."""
    if kwargs:
        unexpected = sorted(set(kwargs) - {"size"})
        if unexpected:
            raise TypeError(f"{fn}() got an unexpected keyword argument '{unexpected[0]}'")
        if size:
            raise TypeError(f"{fn}() got multiple values for argument 'size'")
        size = (kwargs["size"],)
    elif not size:
        raise TypeError(_NO_SIZE[fn] if fn in _NO_SIZE
                        else f'{fn}() missing 1 required positional arguments: "size"')
    items = size[0] if len(size) == 1 and isinstance(size[0], (tuple, list)) else size
    if all(type(s) is int for s in items):  # the usual call: no conversion, no check
        return tuple(items)
    # an int, or what converts to one as an index (np.int64, an integer tensor, a tensor of
    # one element as PyTorch's parser takes it); not a float: its texts (int_list_error)
    err = int_list_error(fn, "size", tuple(size), 1, accepts=_index_like)
    if err is not None:
        raise err
    return tuple(operator.index(s) for s in items)


# PyTorch's texts for rand() and randn() without a size (their overloads' list)
_RANDOM_OVERLOADS = (
    " * (tuple of ints size, *, torch.Generator generator, Tensor out = None, torch.dtype dtype "
    "= None, torch.layout layout = None, torch.device device = None, bool pin_memory = False, "
    "bool requires_grad = False)\n"
    " * (tuple of ints size, *, Tensor out = None, torch.dtype dtype = None, torch.layout "
    "layout = None, torch.device device = None, bool pin_memory = False, bool requires_grad = "
    "False)\n")
_NO_SIZE = {fn: f"{fn}() received an invalid combination of arguments - got (), but expected "
                f"one of:\n{_RANDOM_OVERLOADS}" for fn in ("rand", "randn")}


def _index_like(value: Any) -> bool:
    return hasattr(type(value), "__index__")


def _check_sizes(shape: tuple[int, ...], fn: str) -> None:
    """PyTorch's error for a negative size (zeros words it its own way)."""
    if any(s < 0 for s in shape):
        if fn == "zeros":
            raise ShapeError("zeros: Dimension size must be non-negative.")
        raise ShapeError(f"Trying to create tensor with negative dimension {min(shape)}: "
                         f"{list(shape)}")


_INT64_MAX = 2 ** 63 - 1


def check_storage_size(shape: tuple[int, ...], itemsize: int) -> None:
    """PyTorch's error where a contiguous storage of ``shape`` needs more bytes than an int64
    counts (numpy's is a ValueError 'array is too big')."""
    if math.prod(shape) * itemsize > _INT64_MAX:
        raise RuntimeError(f"Storage size calculation overflowed with sizes={list(shape)}")


# numpy's float scalar types, as PyTorch infers a dtype from each (a Python float: the
# default dtype)
_FLOAT_SCALARS = {np.float16: D.float16, np.float32: D.float32, np.float64: D.float64,
                  D.bfloat16.np.type: D.bfloat16}


def _leaf_types(data: Any, found: dict[type, None]) -> dict[type, None]:
    """The types of the scalars of a nested list/tuple, in the order first met (``found``
    extended; an array's are its dtype's scalar type)."""
    kinds = dict.fromkeys(map(type, data))
    if kinds.keys() & {list, tuple, np.ndarray}:
        for v in data:
            if isinstance(v, (list, tuple)):
                _leaf_types(v, found)
            else:
                found.setdefault(v.dtype.type if isinstance(v, np.ndarray) else type(v))
    else:
        found.update(kinds)
    return found


def _string_error(data: Any) -> Exception | None:
    """PyTorch's error for text in a tensor's data: a str or bytes alone is an invalid data
    type; a str as the first scalar of a list is read as one more dimension, without end
    ("too many dimensions"); text later in it is an invalid data type."""
    if isinstance(data, (str, bytes)):
        return TypeError(f"new(): invalid data type '{type(data).__name__}'")
    first = data
    while isinstance(first, (list, tuple)) and first:
        first = first[0]
    if isinstance(first, str):
        return ValueError("too many dimensions 'str'")
    text = next((t for t in _leaf_types(data, {}) if issubclass(t, (str, bytes))), None)
    return None if text is None else TypeError(f"new(): invalid data type '{text.__name__}'")


def _only_ints(data: Any) -> bool:
    """Whether every scalar of a nested list/tuple is an int (a bool, a numpy integer)."""
    return all(issubclass(t, (int, np.integer, np.bool_)) for t in _leaf_types(data, {}))


def _float_dtype(data: Any) -> D.DType:
    """The float dtype PyTorch infers for data that numpy made float: the widest of its
    scalars' (a numpy float64 scalar is float64, a Python float the default dtype)."""
    types = {type(data)} if not isinstance(data, (list, tuple)) else _leaf_types(data, {})
    found = [_FLOAT_SCALARS.get(t, D.default_float) for t in types
             if t in _FLOAT_SCALARS or t is float]
    return functools.reduce(D.promote, found) if found else D.default_float


def _int_dtype(data: Any) -> D.DType:
    """The integer dtype PyTorch infers for a list that numpy made integer: its scalars'
    dtypes promoted in the list's order, as PyTorch's (a numpy int16 scalar is int16, a
    Python int int64, a bool bool)."""
    if not isinstance(data, (list, tuple)):
        return D.int64
    found = [D._BY_NP.get(np.dtype(t), D.int64) if issubclass(t, (np.integer, np.bool_))
             else D.bool_ if t is bool else D.int64 for t in _leaf_types(data, {})]
    return functools.reduce(D.promote, found) if found else D.int64


_LIST_OF_NDARRAYS_WARNED = False


def _nested_types(seq: list[Any] | tuple[Any, ...]) -> set[type]:
    """The types of ``seq``'s items at every depth of lists and tuples, read a level at a time
    in C (``map(type, ...)``, each level's sequences joined by ``chain``): item by item in
    Python, a list of 1000 floats cost 240 us."""
    found: set[type] = set()
    level: Any = seq
    while level:
        kinds = set(map(type, level))
        found |= kinds
        nested = [k for k in kinds if issubclass(k, (list, tuple))]
        if not nested:
            break
        inner = level if len(nested) == len(kinds) else [
            v for v in level if isinstance(v, (list, tuple))]
        level = list(itertools.chain.from_iterable(inner))
    return found


def _first_sizes(seq: list[Any] | tuple[Any, ...]) -> list[int]:
    """The sizes PyTorch reads along the first items of nested sequences and arrays; its error
    where that meets a 0-d array (as a sequence, it has no length; one elsewhere is read as a
    number)."""
    sizes = []
    first: Any = seq
    while isinstance(first, (list, tuple)) and first:
        sizes.append(len(first))
        first = first[0]
    if isinstance(first, (list, tuple)):
        sizes.append(0)
    elif isinstance(first, np.ndarray):
        if first.ndim == 0:
            raise TypeError("len() of unsized object")
        sizes.extend(first.shape)
    return sizes


def _arrays_met(seq: list[Any] | tuple[Any, ...]) -> int:
    """How many arrays PyTorch's copy of ``seq``'s items meets: each array item, and within
    it each sub-array it reads as a sequence (an array of shape (2, 3): itself and its 2
    rows)."""
    total = 0
    for v in seq:
        if isinstance(v, np.ndarray):
            total += 1 + sum(math.prod(v.shape[:j]) for j in range(1, v.ndim))
        elif isinstance(v, (list, tuple)):
            total += _arrays_met(v)
    return total


def _warn_list_of_ndarrays(seq: list[Any] | tuple[Any, ...]) -> None:
    """PyTorch's warning for a sequence holding arrays: once a program (TORCH_WARN_ONCE), or
    with warn_always once for each array its copy of the items meets (``_arrays_met``)."""
    global _LIST_OF_NDARRAYS_WARNED
    from .ops.settings import is_warn_always_enabled

    always = is_warn_always_enabled()
    if _LIST_OF_NDARRAYS_WARNED and not always:
        return
    _LIST_OF_NDARRAYS_WARNED = True
    for _ in range(_arrays_met(seq) if always else 1):
        warnings.warn("Creating a tensor from a list of numpy.ndarrays is extremely slow. "
                      "Please consider converting the list to a single numpy.ndarray with "
                      "numpy.array() before converting to a tensor.", UserWarning, stacklevel=5)


def _ragged_error(data: Any) -> Exception | None:
    """PyTorch's error for a nested list that is not rectangular: the sizes along the first
    elements, then the first sequence of another length."""
    def is_seq(v: Any) -> bool:  # an array of any dims but 0 is one, as PyTorch reads it
        return isinstance(v, (list, tuple)) or isinstance(v, np.ndarray) and v.ndim > 0

    sizes = []
    probe = data
    while is_seq(probe):
        sizes.append(len(probe))
        probe = probe[0] if len(probe) else None

    def walk(seq: Any, dim: int) -> Exception | None:
        if dim == len(sizes):
            if is_seq(seq):
                return TypeError("'list' object cannot be interpreted as an integer")
            return None
        if not is_seq(seq):
            return TypeError("not a sequence")
        if len(seq) != sizes[dim]:
            return ValueError(f"expected sequence of length {sizes[dim]} at dim {dim} "
                              f"(got {len(seq)})")
        for v in seq:
            err = walk(v, dim + 1)
            if err is not None:
                return err
        return None

    return walk(data, 0)


def _tensor_scalars(seq: list[Any] | tuple[Any, ...]) -> list[Any] | tuple[Any, ...]:
    """``seq`` with its tensors, at any depth, as numpy scalars of their dtype (which the
    dtype inference reads): PyTorch reads a tensor inside a sequence as a number, so
    ``tensor([t])`` of a one-element ``t`` of shape (1,) is of shape (1,), and refuses one
    of more elements. ``seq`` itself where it holds no tensor."""
    out, changed = [], False
    for v in seq:
        if isinstance(v, Tensor):
            if v.numel() != 1:
                raise ValueError("only one element tensors can be converted to Python scalars")
            v, changed = np.asarray(move_array(v.detach()._data, "cpu")).reshape(())[()], True
        elif isinstance(v, (list, tuple)):
            inner = _tensor_scalars(v)
            v, changed = inner, changed or inner is not v
        out.append(v)
    return out if changed else seq


def _is_other_sequence(data: Any) -> bool:
    """A sequence (PySequence_Check: ``__len__`` and ``__getitem__``) that is no list, tuple,
    string, array or tensor: PyTorch reads it item by item."""
    return (hasattr(type(data), "__len__") and hasattr(type(data), "__getitem__")
            and not isinstance(data, (list, tuple, str, bytes, np.ndarray, Tensor, dict))
            and not hasattr(data, "__cuda_array_interface__"))


def _sequence_items(data: Any) -> list[Any]:
    """A sequence's items as a list, or PyTorch's error where they cannot be read."""
    try:
        return [data[i] for i in range(len(data))]
    except Exception:
        raise ValueError(f"could not determine the shape of object type "
                         f"'{type(data).__name__}'") from None


def _uint64_array(data: Any) -> np.ndarray:
    """Python values as uint64 directly: numpy infers float64 for a list mixing ints past
    int64's range with others (2**64 - 1 rounded to 2**64, stored as 0); PyTorch's errors for
    an int that is negative or too big."""
    try:
        return np.array(data, dtype=np.uint64)
    except OverflowError:
        negative = bool((np.array(data, dtype=object) < 0).any())
        raise OverflowError("can't convert negative int to unsigned" if negative
                            else "int too big to convert") from None


def _as_array(data: Any, dtype: Any, device: Any) -> tuple[Any, D.DType, str]:
    # data that is no tensor or device array goes to the default device where none is named
    dev = canonical_device(device) if device is not None or isinstance(data, Tensor) or \
        hasattr(data, "__cuda_array_interface__") else factory_device(None)
    if isinstance(data, Tensor):
        arr = data._data
    else:
        arr = data
    if hasattr(arr, "__cuda_array_interface__") and not isinstance(arr, np.ndarray):
        src_dev = device_of_array(arr)
        arr = arr.copy()
    else:
        src_dev = "cpu"
        if _is_other_sequence(arr):
            data = arr = _sequence_items(arr)
        sizes = None  # along the first items, where arrays are among the items
        if isinstance(arr, (list, tuple)):
            kinds = _nested_types(arr)
            if any(issubclass(k, Tensor) for k in kinds):
                data = arr = _tensor_scalars(arr)
            if any(issubclass(k, np.ndarray) for k in kinds):
                sizes = _first_sizes(arr)
                if all(sizes):  # PyTorch's, as it copies a nonempty tensor's items
                    _warn_list_of_ndarrays(arr)
        try:
            arr = _uint64_array(arr) if dtype is not None and D.as_dtype(dtype) is D.uint64 \
                else np.array(arr)
        except ValueError:
            err = _ragged_error(arr) if isinstance(arr, (list, tuple)) else None
            if err is None:
                raise
            raise err from None
        if sizes is not None and 0 in sizes and arr.ndim > sizes.index(0) + 1:
            # PyTorch's sizes end at the first empty one: [ones((0, 3))] * 2 is of (2, 0)
            arr = arr.reshape(sizes[:sizes.index(0) + 1])
    if isinstance(data, np.ndarray) and data.dtype not in D._BY_NP and data.dtype.kind != "c":
        raise _unsupported_numpy(data)  # before any dtype= conversion, as PyTorch's
    if isinstance(data, np.ndarray):
        _check_numpy_strides(data)
    if arr.dtype.kind in "USO" and isinstance(data, (str, bytes, list, tuple)):
        err = _string_error(data)
        if err is not None:
            raise err
    if dtype is None and isinstance(data, (list, tuple)) and arr.dtype.kind in "fO" \
            and arr.size and _only_ints(data):
        # numpy makes a list of ints with one past int64 float64 (or objects, past uint64):
        # PyTorch infers int64, which cannot hold it
        raise ValueError("Overflow when unpacking long long")
    if dtype is not None:
        dt = D.as_dtype(dtype)
    elif arr.dtype.kind == "f" or arr.dtype == D.bfloat16.np:  # ml_dtypes: kind "V"
        # a tensor or an array keeps its dtype (rt.tensor(t) of a float64 t made float32)
        dt = D.as_dtype(arr.dtype) if isinstance(data, (np.ndarray, Tensor)) \
            else _float_dtype(data)
    elif arr.dtype.kind in "iu":
        if arr.dtype == np.uint64 and not isinstance(data, (np.ndarray, Tensor)):
            # Python ints past int64's range (numpy's uint64 would wrap round)
            raise ValueError("Overflow when unpacking long long")
        # a tensor, numpy array or scalar keeps its integer dtype, as PyTorch's; a list's
        # is its scalars' promoted, a Python int's int64
        dt = D._BY_NP.get(arr.dtype, D.int64) \
            if isinstance(data, (np.ndarray, np.generic, Tensor)) else _int_dtype(data)
    elif arr.dtype.kind == "b":
        dt = D.bool_
    else:
        raise TypeError(f"can't convert data of dtype {arr.dtype} to a tensor")
    if dt.category == 1 and arr.dtype != dt.np and not isinstance(data, (np.ndarray,
                                                                          np.generic)):
        _check_fits(arr, dt)
    if arr.dtype != dt.np:
        arr = arr.astype(dt.np)
    if dev != src_dev:
        arr = move_array(arr, dev)
    return arr, dt, dev


def _check_fits(arr: np.ndarray, dt: D.DType) -> None:
    """PyTorch's error where a Python number of ``arr`` does not convert into the integer
    dtype ``dt`` (``tensor([300], dtype=uint8)``; its -1 is 255)."""
    if arr.dtype.kind not in "iuf" or not arr.size:
        return
    if arr.dtype == np.uint64:  # Python ints past int64's range
        raise ValueError("Overflow when unpacking long long")
    low, high = D.int_bounds(dt, arr.dtype.kind != "f")
    if not bool(((arr >= low) & (arr <= high)).all()):  # NaN fails both
        raise RuntimeError(f"value cannot be converted to type {dt.name} without overflow")


def tensor(data: Any, dtype: Any = None, device: Any = None,
           requires_grad: bool = False) -> Tensor:
    if not isinstance(data, _NOT_STORAGE):  # (an import in every call cost 1 us)
        from .ops.memory_names import UntypedStorage

        if isinstance(data, UntypedStorage):
            return _tensor_of_storage(data, dtype, device, requires_grad)
    if type(data) is np.ndarray and not requires_grad and data.dtype in D._BY_NP \
            and active_tracer() is not None:
        # capturing: a copy, made at each replay, of the array as it is then (a buffer the
        # caller refills in place between calls), not of the array as the capture met it
        return _read_array(data, dtype, device, copy=True)
    return Tensor._of(data, dtype=dtype, device=device, requires_grad=requires_grad)


# what rt.tensor is given most often, none of them a storage
_NOT_STORAGE = (list, tuple, np.ndarray, np.generic, float, int, bool, Tensor)


def _tensor_of_storage(storage: Any, dtype: Any, device: Any, requires_grad: bool) -> Tensor:
    """PyTorch's ``tensor(storage)``: a 1-d tensor over all of the storage's elements, sharing
    its memory, of ``dtype`` (the default one where None; a typed storage must be of it)."""
    from .ops.memory_names import storage_dtype_check, storage_elements

    dt = D.default_float if dtype is None else D.as_dtype(dtype)
    storage_dtype_check(storage, dt, "tensor")
    out = Tensor._make(storage_elements(storage._root, dt), dt, storage.device)
    if device is not None:
        out = out.to(factory_device(device))
    return out._factory_requires_grad_(requires_grad)


def _read_array(data: np.ndarray, dtype: Any, device: Any, copy: bool) -> Tensor:
    """A captured step's tensor of a numpy array: the array read at each replay (a tensor
    sharing its memory, as ``from_numpy``), converted to ``dtype`` and ``device``, and copied
    where ``copy`` asks it and no conversion did."""
    shared = from_numpy(data)
    out = shared.to(device=factory_device(device),
                    dtype=D.as_dtype(dtype) if dtype is not None else shared.dtype)
    return out.clone() if copy and out is shared else out


def as_tensor(data: Any, dtype: Any = None, device: Any = None) -> Tensor:
    """``data`` as a tensor without a copy where it can be: a tensor of that dtype and device
    is returned as it is (else converted, as ``Tensor.to``), a CPU numpy array of a supported
    dtype shares its memory (as ``from_numpy``), anything else is copied (as ``tensor``)."""
    if isinstance(data, Tensor):
        return data.to(device=device if device is not None else data.device,
                       dtype=dtype if dtype is not None else data.dtype)
    if isinstance(data, np.ndarray) and data.dtype in D._BY_NP:
        if active_tracer() is not None:
            return _read_array(data, dtype, device, copy=False)  # shared where eager's is
        if factory_device(device) == "cpu" and (dtype is None
                                                or D.as_dtype(dtype).np == data.dtype):
            return from_numpy(data)
    return tensor(data, dtype=dtype, device=device)


# the numpy dtypes PyTorch's tensor(), as_tensor() and from_numpy() take, as its error lists
# them (rt has no complex dtype: a complex array gets rt's own error)
_TORCH_NUMPY_TYPES = ("float64, float32, float16, complex64, complex128, int64, int32, int16, "
                      "int8, uint64, uint32, uint16, uint8, and bool")


def _unsupported_numpy(a: np.ndarray) -> Exception:
    """PyTorch's error for an array of a dtype no tensor has (strings, objects, datetimes,
    long doubles), or of the other byte order."""
    if not a.dtype.isnative:
        return ValueError("given numpy array has byte order different from the native byte "
                          "order. Conversion between byte orders is currently not supported.")
    return TypeError(f"can't convert np.ndarray of type numpy.{a.dtype.type.__name__}. The "
                     f"only supported types are: {_TORCH_NUMPY_TYPES}.")


def _check_numpy_strides(a: np.ndarray) -> None:
    """PyTorch's errors for an array no tensor can share or read as it is: a stride that is
    negative, or that is no whole number of elements."""
    if any(s < 0 for s in a.strides):
        raise ValueError("At least one stride in the given numpy array is negative, and "
                         "tensors with negative strides are not currently supported. (You can "
                         "probably work around this by making a copy of your array  with "
                         "array.copy().) ")
    if a.itemsize and any(s % a.itemsize for s in a.strides):
        raise ValueError("given numpy array strides not a multiple of the element byte size. "
                         "Copy the numpy array to reallocate the memory.")


_NOT_WRITABLE_WARNED = False


def _warn_not_writable(a: np.ndarray) -> None:
    """PyTorch's warning, once a program (TORCH_WARN_ONCE), for an array it cannot write."""
    global _NOT_WRITABLE_WARNED
    if a.flags.writeable:  # (the usual array: nothing to import or say)
        return
    from .ops.settings import is_warn_always_enabled

    if not _NOT_WRITABLE_WARNED or is_warn_always_enabled():
        _NOT_WRITABLE_WARNED = True
        warnings.warn("The given NumPy array is not writable, and PyTorch does not support "
                      "non-writable tensors. This means writing to this tensor will result in "
                      "undefined behavior. You may want to copy the array to protect its data "
                      "or make it writable before converting it to a tensor. This type of "
                      "warning will be suppressed for the rest of this program.", UserWarning,
                      stacklevel=3)


def from_numpy(a: np.ndarray) -> Tensor:
    """Shares memory with ``a``."""
    if not isinstance(a, np.ndarray):
        raise TypeError(f"expected np.ndarray (got {type(a).__name__})")
    if a.dtype not in D._BY_NP and a.dtype.kind != "c":
        raise _unsupported_numpy(a)
    _check_numpy_strides(a)
    _warn_not_writable(a)
    from .ops.storage import mark_not_resizable

    mark_not_resizable(a)
    return Tensor._make(a, D.from_numpy_dtype(a.dtype), "cpu")


def _filled(shape: tuple[int, ...], value: Any, dtype: Any, device: Any,
            requires_grad: bool, fn: str) -> Tensor:
    _check_sizes(shape, fn)
    dev = factory_device(device)
    if dtype is None:
        dt = D.default_float if isinstance(value, float) or value is None else (
            D.bool_ if isinstance(value, bool) else D.int64 if isinstance(value, int)
            else D.default_float)
    else:
        dt = D.as_dtype(dtype)
    check_storage_size(shape, dt.np.itemsize)
    if value is not None and (dt.category == 1 or (  # PyTorch's overflow error, uint8's -1
            dt.is_floating_point and isinstance(value, (int, float, np.number)))):  # 255
        value = D.scalar_as(value, dt)
    if value is None:  # PyTorch's deterministic fill of uninitialized memory, where it is on
        value = uninitialized_fill(dt.np)
    tracer = active_tracer()
    if tracer is not None:
        arr = np.zeros(shape, dtype=dt.np) if value is None else np.full(shape, value, dt.np)
        return tracer.constant(arr, dt, dev)._factory_requires_grad_(requires_grad)
    xp = array_module(dev)
    with device_guard(dev):
        arr = xp.empty(shape, dtype=dt.np) if value is None else xp.full(shape, value, dt.np)
    return Tensor._make(arr, dt, dev)._factory_requires_grad_(requires_grad)


def _made_into(out: Any, dtype: Any, requires_grad: bool, fn: str,
               make: Callable[[Any], Tensor]) -> Tensor:
    """PyTorch's ``out=`` of a factory: ``make(dtype)`` in out's dtype (a ``dtype`` given must
    be it), written into ``out`` (resized, silently, as the factories' resize_ does), and
    ``out`` returned with ``requires_grad`` set."""
    from .autograd.grad_mode import is_grad_enabled
    from .ops.functional import copy_

    if not isinstance(out, Tensor):
        raise TypeError(f"{fn}(): argument 'out' must be Tensor, not {type(out).__name__}")
    if dtype is not None and D.as_dtype(dtype) is not out.dtype:
        raise RuntimeError(f"dtype {D.scalar_type_name(D.as_dtype(dtype))} does not match dtype "
                           f"of out parameter ({D.scalar_type_name(out.dtype)})")
    if out.requires_grad and is_grad_enabled():
        raise RuntimeError(f"aten::{fn}(): functions with out=... arguments don't support "
                           "automatic differentiation, but one of the arguments requires grad.")
    if active_tracer() is not None:
        raise GraphBreak(f"{fn}(out=...) inside a captured step")
    result = make(out.dtype)
    if tuple(out.shape) != tuple(result.shape):
        if fn == "arange" and out.numel():
            warnings.warn(f"The number of elements in the out tensor of shape {list(out.shape)} "
                          f"is {out.numel()} which does not match the computed number of "
                          f"elements {result.numel()}. Note that this may occur as a result of "
                          "rounding error. The out tensor will be resized to a tensor of shape "
                          f"({', '.join(map(str, result.shape))}{',' if result.ndim == 1 else ''}"
                          ").", UserWarning, stacklevel=3)
        out._data = out.xp.empty(tuple(result.shape), dtype=out._data.dtype)
    from .autograd.grad_mode import no_grad

    with no_grad():
        copy_(out, result)
    # PyTorch's factories set out's requires_grad, False included
    return out._factory_requires_grad_(requires_grad) if out.requires_grad != requires_grad else out


@factory_options()
def zeros(*size: Any, dtype: Any = None, device: Any = None, requires_grad: bool = False,
          out: Tensor | None = None, **kwargs: Any) -> Tensor:
    """Zeros of the shape given as sizes, one sequence or ``size=``."""
    shape = _size(size, kwargs, "zeros")
    if out is not None:
        return _made_into(out, dtype, requires_grad, "zeros",
                          lambda dt: _filled(shape, 0.0, dt, out.device, False, "zeros"))
    return _filled(shape, 0.0, dtype, device, requires_grad, "zeros")


@factory_options()
def ones(*size: Any, dtype: Any = None, device: Any = None, requires_grad: bool = False,
         out: Tensor | None = None, **kwargs: Any) -> Tensor:
    shape = _size(size, kwargs, "ones")
    if out is not None:
        return _made_into(out, dtype, requires_grad, "ones",
                          lambda dt: _filled(shape, 1.0, dt, out.device, False, "ones"))
    return _filled(shape, 1.0, dtype, device, requires_grad, "ones")


@factory_options(formats=True)
def empty(*size: Any, dtype: Any = None, device: Any = None, requires_grad: bool = False,
          out: Tensor | None = None, **kwargs: Any) -> Tensor:
    shape = _size(size, kwargs, "empty")
    if out is not None:
        return _made_into(out, dtype, requires_grad, "empty",
                          lambda dt: _filled(shape, None, dt, out.device, False, "empty"))
    return _filled(shape, None, dtype, device, requires_grad, "empty")


@factory_options()
def full(size: Sequence[int], fill_value: Any, *, dtype: Any = None, device: Any = None,
         requires_grad: bool = False, out: Tensor | None = None) -> Tensor:
    """``fill_value`` everywhere; its dtype from the value where not given (a bool: bool, an
    int: int64, a float: float32), as PyTorch's."""
    shape = _size((size,), fn="full")
    if out is not None:
        return _made_into(out, dtype, requires_grad, "full", lambda dt: _filled(
            shape, fill_value, dt, out.device, False, "full"))
    return _filled(shape, fill_value, dtype, device, requires_grad, "full")


@factory_options(formats=True)
def zeros_like(input: Tensor, *, dtype: Any = None, device: Any = None,
               requires_grad: bool = False) -> Tensor:
    return zeros(input.shape, dtype=dtype or input.dtype, device=device or input.device,
                 requires_grad=requires_grad)


@factory_options(formats=True)
def ones_like(input: Tensor, *, dtype: Any = None, device: Any = None,
              requires_grad: bool = False) -> Tensor:
    return ones(input.shape, dtype=dtype or input.dtype, device=device or input.device,
                requires_grad=requires_grad)


@factory_options(formats=True)
def full_like(input: Tensor, fill_value: Any, *, dtype: Any = None, device: Any = None,  # noqa: A002
              requires_grad: bool = False) -> Tensor:
    return full(input.shape, fill_value, dtype=dtype or input.dtype, device=device or input.device,
                requires_grad=requires_grad)


def _random(kind: str, shape: tuple[int, ...], generator: Generator | None, dtype: Any,
            device: Any, requires_grad: bool) -> Tensor:
    dev = factory_device(device)
    g = generator or _device_generator(dev)
    dt = D.as_dtype(dtype) if dtype is not None else D.default_float
    if not dt.is_floating_point:  # PyTorch's kernels' error
        kernel = "normal_kernel_cpu" if kind.startswith("randn") else "check_uniform_bounds"
        raise NotImplementedError(f"\"{kernel}\" not implemented for "
                                  f"'{D.scalar_type_name(dt)}'")
    _check_sizes(shape, kind)
    tracer = active_tracer()
    if tracer is not None:
        return traced_random(tracer, kind, shape, dt, dev, g
                             )._factory_requires_grad_(requires_grad)
    arr = draw(g, kind, shape, dt)
    return Tensor._make(move_array(arr, dev), dt, dev)._factory_requires_grad_(requires_grad)


class _TracedDraws(threading.local):
    """Per thread, what sees a captured step's random draws before the tracer records them:
    runtime.func's vmap randomness modes while a vmap runs (None otherwise)."""

    hook: Callable[[Generator, tuple[Any, ...], Callable[[], Tensor]], Tensor] | None = None


traced_draws = _TracedDraws()


def traced_random(tracer: Any, kind: str, shape: tuple[int, ...], dtype: D.DType, device: str,
                  generator: Generator) -> Tensor:
    """A random step of the captured plan: ``tracer.random``, through ``traced_draws.hook``
    where one is set (a vmap's "error" refuses the draw, "same" hands back its first element's
    numbers), as eager mode's draws go through the generator's ``_rng``."""
    def make() -> Tensor:
        return tracer.random(kind, shape, dtype, device, generator)

    hook = traced_draws.hook
    return make() if hook is None else hook(generator, (kind, tuple(shape), dtype, device), make)


def draw(generator: Generator, kind: str, shape: tuple[int, ...], dtype: D.DType) -> np.ndarray:
    """A host array of ``dtype`` from ``generator``: standard normal ("randn"), uniform on
    [0, 1) ("rand"), integers in [low, high) ("randint:low:high") or a permutation of
    range(n) ("randperm", shape (n,)), PyTorch's numbers
    (``runtime._torch_rng``); eager calls and a compiled plan's random steps draw through it
    alike."""
    if kind == "randn":
        return _torch_rng.normal(generator, tuple(shape), dtype)
    if kind == "rand64":  # what PyTorch's bernoulli_(p) compares with p (float64, 53 bits)
        return _torch_rng.uniform(generator._rng, tuple(shape), D.float64)
    if kind == "randperm":  # randperm(n): shape (n,)
        return torch_permutation(shape[0], generator).astype(dtype.np)
    if kind.startswith("randint:"):  # randint(low, high, shape): "randint:low:high"
        _, low, high = kind.split(":")
        return _torch_rng.integers(generator._rng, tuple(shape), int(low), int(high), dtype)
    return _torch_rng.uniform(generator._rng, tuple(shape), dtype)


def bernoulli_uniforms(shape: tuple[int, ...], generator: Generator | None,
                       device: Any) -> Tensor:
    """The float64 uniforms PyTorch's CPU ``bernoulli_(p)`` of a number draws (one
    ``bernoulli_distribution<double>`` an element: ``u < p``; its MKL path, on Intel CPUs,
    draws another stream): dropout's masks and ``bernoulli_`` compare them with p."""
    return _random("rand64", tuple(shape), generator, D.float64, device, False)


@factory_options()
def randn(*size: Any, generator: Generator | None = None, dtype: Any = None,
          device: Any = None, requires_grad: bool = False, out: Tensor | None = None,
          **kwargs: Any) -> Tensor:
    shape = _size(size, kwargs, "randn")
    if out is not None:
        _random_out(out, '"normal_kernel_cpu" not implemented for')
        return _made_into(out, dtype, requires_grad, "randn", lambda dt: _random(
            "randn", shape, generator, dt, out.device, False))
    return _random("randn", shape, generator, dtype, device, requires_grad)


@factory_options()
def rand(*size: Any, generator: Generator | None = None, dtype: Any = None,
         device: Any = None, requires_grad: bool = False, out: Tensor | None = None,
         **kwargs: Any) -> Tensor:
    shape = _size(size, kwargs, "rand")
    if out is not None:
        _random_out(out, '"check_uniform_bounds" not implemented for')
        return _made_into(out, dtype, requires_grad, "rand", lambda dt: _random(
            "rand", shape, generator, dt, out.device, False))
    return _random("rand", shape, generator, dtype, device, requires_grad)


def _random_out(out: Any, text: str) -> None:
    """PyTorch's error for an ``out=`` of rand or randn its kernel has no case for."""
    if isinstance(out, Tensor) and not out.dtype.is_floating_point:
        raise NotImplementedError(f"{text} '{D.scalar_type_name(out.dtype)}'")


@factory_options()
def randint(*args: Any, generator: Generator | None = None, dtype: Any = None,
            device: Any = None, requires_grad: bool = False, out: Tensor | None = None,
            **kwargs: Any) -> Tensor:
    """Integers drawn uniformly from [low, high): PyTorch's overloads ``randint(high, size)``
    and ``randint(low, high, size)``, each argument positional or by name (int64 unless
    ``dtype``)."""
    if out is not None:
        return _made_into(out, dtype, requires_grad, "randint", lambda dt: randint(
            *args, generator=generator, dtype=dt, device=out.device, **kwargs))
    given = len(args) + sum(k in kwargs for k in ("low", "high", "size"))
    names = ("low", "high", "size") if given == 3 or "low" in kwargs else ("high", "size")
    bound = dict(zip(names, args))
    for k, v in kwargs.items():
        if k in bound or k not in names:
            raise TypeError(f"randint() got an unexpected keyword argument '{k}'" if k not in
                            names else f"randint() got multiple values for argument '{k}'")
        bound[k] = v
    if len(args) > 3 or set(bound) != set(names):
        raise TypeError(f"randint() received an invalid combination of arguments - got "
                        f"{len(args)} positional and {sorted(kwargs)} keyword arguments, but "
                        f"expected one of: (int high, tuple of ints size), "
                        f"(int low, int high, tuple of ints size)")
    low, high, size = int(bound.get("low", 0)), int(bound["high"]), bound["size"]
    if not isinstance(size, (tuple, list)):
        where = f" (position {len(args)})" if "size" not in kwargs else ""
        raise TypeError(f"randint(): argument 'size'{where} must be tuple of ints, not "
                        f"{type(size).__name__}")
    if low >= high:
        raise RuntimeError(f"random_ expects 'from' to be less than 'to', but got from={low} >= "
                           f"to={high}")
    shape = _size((size,), fn="randint")
    _check_sizes(shape, "randint")
    g = generator or cpu_default_generator()
    dt = D.as_dtype(dtype) if dtype is not None else D.int64
    if not dt.is_floating_point:  # PyTorch's check_from_to: both ends in the dtype's range
        lowest, highest = (0, 1) if dt is D.bool_ else (int(np.iinfo(dt.np).min),
                                                        int(np.iinfo(dt.np).max))
        for value, name in ((low, "from"), (high - 1, "to - 1")):
            if not lowest <= value <= highest:
                raise RuntimeError(f"{name} is out of bounds for {D.type_meta_name(dt)}")
    dev = factory_device(device)
    tracer = active_tracer()
    if tracer is not None:  # a random step of the plan (``draw``'s "randint:low:high")
        if dt is D.bool_ or dev != "cpu":
            raise GraphBreak("randint inside a captured step")
        return traced_random(tracer, f"randint:{low}:{high}", tuple(shape), dt, dev, g
                             )._factory_requires_grad_(requires_grad)
    arr = _torch_rng.integers(g._rng, tuple(shape), low, high, dt)
    return Tensor._make(move_array(arr, dev), dt, dev)._factory_requires_grad_(requires_grad)




def multinomial(input: Tensor, num_samples: int, replacement: bool = False, *,
                generator: Generator | None = None, out: Tensor | None = None) -> Tensor:
    """Indices drawn from the categories of each row of ``input`` (non-negative weights, not
    necessarily normalised), ``num_samples`` a row; without ``replacement`` each category
    once (by exponential keys: a category of weight 0 comes after every other, as in
    PyTorch). Reads the weights' values, so a compiled step runs it eagerly."""
    if out is not None:
        from .ops.functional import written_to

        return written_to(out, multinomial(input, num_samples, replacement,
                                           generator=generator), "multinomial")
    if active_tracer() is not None:
        raise GraphBreak("multinomial inside a captured step")
    if not input.dtype.is_floating_point:
        raise RuntimeError("multinomial only supports floating-point dtypes for input, got: "
                           + D.scalar_type_name(input.dtype))
    if input.ndim not in (1, 2):
        raise RuntimeError("prob_dist must be 1 or 2 dim")
    if num_samples <= 0:
        raise RuntimeError("cannot sample n_sample <= 0 samples")
    n = input.shape[-1]
    if not replacement and num_samples > n:
        raise RuntimeError("cannot sample n_sample > prob_dist.size(-1) samples without "
                           "replacement")
    if n == 0:  # no category to draw (a WeightedRandomSampler of no weights)
        raise RuntimeError("invalid multinomial distribution (sum of probabilities <= 0)")
    wide = np.float64 if input.dtype is D.float64 else np.float32
    rows = np.asarray(input.detach().cpu().numpy()).astype(wide).reshape(-1, n)
    if replacement and num_samples > 1:
        _check_rows_with_replacement(rows)
    else:
        if not np.all(np.isfinite(rows)) or np.any(rows < 0):
            raise RuntimeError("probability tensor contains either `inf`, `nan` or element < 0")
        if np.any(rows.sum(axis=1, dtype=np.float64) <= 0):
            raise RuntimeError("invalid multinomial distribution (sum of probabilities <= 0)")
    if not len(rows):  # no distribution: an empty result, nothing drawn
        out = np.empty((0, num_samples), np.int64)
    else:  # PyTorch's draws and search (runtime._torch_rng)
        out = _torch_rng.multinomial((generator or cpu_default_generator())._rng, rows,
                                     num_samples, replacement)
    out = out.astype(np.int64).reshape(*input.shape[:-1], num_samples)
    return Tensor._make(move_array(out, input.device), D.int64, input.device)


def _check_rows_with_replacement(rows: np.ndarray) -> None:
    """PyTorch's checks in its with-replacement kernel (more than one sample): row by row,
    entry by entry, a negative (or NaN) entry, then an infinite one, then the row's sum."""
    with np.errstate(invalid="ignore"):
        bad = ~(rows >= 0) | ~np.isfinite(rows)
        failing = bad.any(axis=1) | ~(rows.sum(axis=1, dtype=np.float64) > 0)
    if not failing.any():
        return
    row = int(np.argmax(failing))
    if not bad[row].any():
        raise RuntimeError("invalid multinomial distribution (sum of probabilities <= 0)")
    value = rows[row, int(np.argmax(bad[row]))]
    if not value >= 0:
        raise RuntimeError("invalid multinomial distribution (encountering probability entry < 0)")
    raise RuntimeError("invalid multinomial distribution (encountering probability entry = "
                       "infinity or NaN)")


@factory_options()
def arange(start: Any = None, end: Any = None, step: Any = 1, *, dtype: Any = None,
           device: Any = None, requires_grad: bool = False, out: Tensor | None = None
           ) -> Tensor:
    if start is None:  # PyTorch's arange(end=n)
        if end is None:
            raise TypeError('arange() missing 1 required positional arguments: "end"')
        start, end = end, None
    if out is not None:
        return _made_into(out, dtype, requires_grad, "arange", lambda dt: arange(
            start, end, step, dtype=dt, device=out.device))
    if end is None:
        start, end = 0, start
    start, end, step = (v.item() if isinstance(v, Tensor) else v for v in (start, end, step))
    if dtype is None:
        is_float = any(isinstance(v, (float, np.floating)) for v in (start, end, step))
        dt = D.default_float if is_float else D.int64
    else:
        dt = D.as_dtype(dtype)
    if dt is D.bool_:
        raise NotImplementedError("\"arange_cpu\" not implemented for 'Bool'")
    if not (step > 0 or step < 0):  # PyTorch's test: a NaN step too
        raise RuntimeError("step must be nonzero")
    if not (math.isfinite(start) and math.isfinite(end)):
        raise RuntimeError(f"unsupported range: {start} -> {end}")
    if dt is D.int64:  # PyTorch's: the bounds and step as int64 first (2.5 is 2)
        start, end, step = int(start), int(end), int(step)
    if step == 0:
        raise RuntimeError("step must be nonzero")
    if (end - start) * step < 0:
        raise RuntimeError("upper bound and lower bound inconsistent with step sign")
    dev = factory_device(device)
    tracer = active_tracer()
    if tracer is not None:
        arr = _arange_values(start, end, step, dt)
        return tracer.constant(arr, dt, dev)._factory_requires_grad_(requires_grad)
    if dev == "cpu" or dt in (D.float32, D.float64):
        return Tensor._make(move_array(_arange_values(start, end, step, dt), dev), dt,
                            dev)._factory_requires_grad_(requires_grad)
    with device_guard(dev):
        arr = array_module(dev).arange(start, end, step, dtype=dt.np)
    return Tensor._make(arr, dt, dev)._factory_requires_grad_(requires_grad)


# PyTorch's CPU arange fills a float tensor with its vectorized loop: 2 vectors at a time
# while 2 fit (8 float32 or 4 float64 lanes: its AVX2 kernels), the rest element by element
_ARANGE_LANES = {"float32": 8, "float64": 4}


def _arange_values(start: Any, end: Any, step: Any, dt: D.DType) -> np.ndarray:
    """PyTorch's CPU arange kernel for float32 and float64: element i is start + step * i in
    float64 (one fused multiply-add) where the scalar loop makes it, and in the vectorized
    loop base + k * step, base = start + step * c rounded to the dtype at the vector's first
    index c (k = i - c); numpy's arange for the other dtypes (exact there)."""
    lanes = _ARANGE_LANES.get(dt.name)
    if lanes is None and not dt.is_floating_point:
        # as PyTorch's integer kernel: the count of the bounds as given, each value start +
        # step * i in int64 (start and step truncated to it) wrapped into a narrower dtype:
        # arange(-1, 2, 2, dtype=uint8) is [255, 1]
        n = max(math.ceil((float(end) - float(start)) / float(step)), 0)
        return (int(start) + int(step) * np.arange(n, dtype=np.int64)).astype(dt.np)
    if lanes is None:
        return np.arange(start, end, step, dtype=dt.np)
    start, step = float(start), float(step)
    n = max(math.ceil((float(end) - start) / step), 0)  # numpy's and PyTorch's count
    i = np.arange(n, dtype=np.float64)
    out = _torch_rng._fma64(step, i, start)
    vectorized = n // (2 * lanes) * (2 * lanes)
    if vectorized:
        first = np.arange(vectorized) // lanes * lanes
        base = _torch_rng._fma64(step, first.astype(np.float64), start).astype(dt.np)
        k = (np.arange(vectorized) - first).astype(np.float64)
        out[:vectorized] = _torch_rng._fma64(k, step, base.astype(np.float64))
    return out.astype(dt.np)


def _constant(arr: np.ndarray, dt: D.DType, dev: str, requires_grad: bool) -> Tensor:
    """A tensor of a value computed on the host: a graph constant while capturing."""
    tracer = active_tracer()
    if tracer is not None:
        return tracer.constant(arr, dt, dev)._factory_requires_grad_(requires_grad)
    return Tensor._make(move_array(arr, dev), dt, dev)._factory_requires_grad_(requires_grad)


@factory_options()
def eye(n: int, m: int | None = None, *, dtype: Any = None, device: Any = None,
        requires_grad: bool = False, out: Tensor | None = None) -> Tensor:
    if out is not None:
        return _made_into(out, dtype, requires_grad, "eye", lambda dt: eye(
            n, m, dtype=dt, device=out.device))
    if n < 0:
        raise RuntimeError(f"n must be greater or equal to 0, got {n}")
    if m is not None and m < 0:
        raise RuntimeError(f"m must be greater or equal to 0, got {m}")
    dt = D.as_dtype(dtype) if dtype is not None else D.default_float
    return _constant(np.eye(n, m, dtype=dt.np), dt, factory_device(device), requires_grad)


@factory_options()
def linspace(start: Any, end: Any, steps: int, *, dtype: Any = None, device: Any = None,
             requires_grad: bool = False, out: Tensor | None = None) -> Tensor:
    if out is not None:
        return _made_into(out, dtype, requires_grad, "linspace", lambda dt: linspace(
            start, end, steps, dtype=dt, device=out.device))
    dt = D.as_dtype(dtype) if dtype is not None else D.default_float
    start, end, steps = check_space_args("linspace", start, end, steps, dt)
    if dt is D.int64:  # PyTorch's: the ends as int64 first (0.5 is 0), as arange's
        start, end = int(start), int(end)
    arr = _linspace_values(float(start), float(end), int(steps), dt)
    return _constant(arr, dt, factory_device(device), requires_grad)


def check_space_args(name: str, start: Any, end: Any, steps: Any, dt: D.DType
                     ) -> tuple[Any, Any, int]:
    """linspace / logspace's arguments, PyTorch's checks: 0-d tensor ends (their values
    taken), an int of steps, not negative, and no bool result; the ends and steps as
    numbers."""
    dims = [f"{which} with {v.ndim} dimension(s)" for which, v in (("start", start),
                                                                    ("end", end))
            if isinstance(v, Tensor) and v.ndim]
    if dims:
        raise RuntimeError(f"{name} only supports 0-dimensional start and end tensors, but got "
                           f"{' and '.join(dims)}.")
    if isinstance(steps, Tensor) and not steps.ndim and not steps.dtype.is_floating_point:
        steps = steps.item()
    if isinstance(steps, bool) or not isinstance(steps, (int, np.integer)):
        raise TypeError(f"{name}(): argument 'steps' (position 3) must be int, not "
                        f"{type(steps).__name__}")
    if steps < 0:
        raise RuntimeError("number of steps must be non-negative")
    if dt is D.bool_:
        raise NotImplementedError(f"\"{name}_cpu\" not implemented for 'Bool'")
    start, end = (v.item() if isinstance(v, Tensor) else v for v in (start, end))
    return start, end, int(steps)


def _linspace_values(start: float, end: float, steps: int, dt: D.DType) -> np.ndarray:
    """PyTorch's CPU linspace kernel: step = (end - start) / (steps - 1) in the dtype (float64
    for integers), the first half start + step * i and the rest end - step * (steps - 1 - i),
    each one fused multiply-add (as its build computes them), then cast (integers truncated);
    float16 and bfloat16 step by step in their own arithmetic, every operation rounded to the
    dtype (float16's are PyTorch's numbers; bfloat16's within their rounding of them)."""
    if steps <= 1:
        return np.full(steps, start).astype(dt.np)
    if dt in D.LOW_FLOATS:
        f32 = np.float32

        def r(v: Any) -> Any:
            return np.asarray(v, f32).astype(dt.np).astype(f32)

        first, last = r(start), r(end)
        step = r(r(last - first) / f32(steps - 1))
        idx = np.arange(steps)
        low = r(first + r(step * idx.astype(f32)))
        high = r(last - r(step * (steps - 1 - idx).astype(f32)))
        return np.where(idx < steps // 2, low, high).astype(dt.np)
    wide = np.dtype(np.float64) if dt is D.float64 or not dt.is_floating_point else \
        np.dtype(np.float32)
    t = wide.type
    first, last = t(start), t(end)
    step = (last - first) / t(steps - 1)
    idx = np.arange(steps)
    fma = _torch_rng._fma if wide == np.float32 else _torch_rng._fma64
    low = fma(step, idx.astype(wide), first)
    high = fma(-step, (steps - 1 - idx).astype(wide), last)
    return np.where(idx < steps // 2, low, high).astype(dt.np)


@factory_options(formats=True)
def randn_like(input: Tensor, *, generator: Generator | None = None, dtype: Any = None,
               device: Any = None, requires_grad: bool = False) -> Tensor:
    return randn(input.shape, generator=generator, dtype=dtype or input.dtype,
                 device=device or input.device, requires_grad=requires_grad)


@factory_options(formats=True)
def rand_like(input: Tensor, *, generator: Generator | None = None, dtype: Any = None,
              device: Any = None, requires_grad: bool = False) -> Tensor:
    return rand(input.shape, generator=generator, dtype=dtype or input.dtype,
                device=device or input.device, requires_grad=requires_grad)


@factory_options(formats=True)
def randint_like(input: Tensor, *args: Any, generator: Generator | None = None, dtype: Any = None,
                 device: Any = None, requires_grad: bool = False, **kwargs: Any) -> Tensor:
    """Integers from [low, high) in ``t``'s shape, of ``t``'s dtype unless ``dtype``:
    PyTorch's ``randint_like(input, high)`` and ``randint_like(input, low, high)``, each
    bound positional or by name."""
    return randint(*args, size=tuple(input.shape), generator=generator,
                   dtype=dtype or input.dtype, device=device or input.device,
                   requires_grad=requires_grad, **kwargs)


def torch_permutation(n: int, generator: Generator | None = None) -> np.ndarray:
    """PyTorch's CPU randperm: a Fisher-Yates shuffle of 0..n-1 by 32-bit draws of the
    generator's Mersenne Twister, position i swapped with i + draw % (n - i)."""
    g = generator or cpu_default_generator()
    draws = _torch_rng.raw32(g._rng, max(n - 1, 0)).tolist()
    perm = list(range(n))
    for i, z in enumerate(draws):
        j = i + z % (n - i)
        perm[i], perm[j] = perm[j], perm[i]
    return np.asarray(perm, dtype=np.int64).reshape(n)


def _check_randperm_dtype(n: int, dt: Any, requires_grad: bool) -> None:
    """PyTorch's checks of randperm's dtype: its kernels (no bool, complex or wide unsigned),
    the largest n a float type counts exactly, and an integer type's range."""
    if dt is D.bool_ or dt.is_complex or dt.name in ("uint32", "uint64"):
        raise NotImplementedError(f"\"randperm\" not implemented for "
                                  f"'{D.scalar_type_name(dt)}'")
    limits = {"float16": "2049", "float32": "2^24+1", "float64": "2^53+1"}
    if dt.name in limits and n > {"float16": 2049, "float32": 2**24 + 1,
                                  "float64": 2**53 + 1}[dt.name]:
        raise RuntimeError(f"n cannot be greater than {limits[dt.name]} for "
                           f"{D.scalar_type_name(dt)} type.")
    if dt.category == 1 and n - 1 > np.iinfo(dt.np).max:
        ctype = "int" if dt.name == "int32" else f"{dt.name}_t"
        raise RuntimeError(f"value cannot be converted to type {ctype} without overflow")
    if requires_grad and not dt.is_floating_point:
        raise RuntimeError("Only Tensors of floating point and complex dtype can require "
                           "gradients")


@factory_options()
def randperm(n: int, *, generator: Generator | None = None, dtype: Any = None,
             device: Any = None, requires_grad: bool = False, out: Tensor | None = None
             ) -> Tensor:
    """A random permutation of 0..n-1 from ``generator`` (the default one if None)."""
    if out is not None:
        return _made_into(out, dtype, requires_grad, "randperm", lambda dt: randperm(
            n, generator=generator, dtype=dt, device=out.device))
    if isinstance(n, Tensor) and n.ndim == 0 and n.dtype.category == 1:
        n = int(n.item())  # an integer tensor's __index__
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)):
        raise TypeError(f"randperm(): argument 'n' (position 1) must be int, not "
                        f"{type(n).__name__}")
    if n < 0:
        raise RuntimeError(f"Trying to create tensor with negative dimension {n}: [{n}]")
    dt = D.as_dtype(dtype) if dtype is not None else D.int64
    _check_randperm_dtype(int(n), dt, requires_grad)
    g = generator or cpu_default_generator()
    dev = factory_device(device)
    tracer = active_tracer()
    if tracer is not None:  # a random step of the plan (``draw``'s "randperm")
        if dt is D.bool_ or dev != "cpu":
            raise GraphBreak("randperm inside a captured step")
        return traced_random(tracer, "randperm", (int(n),), dt, dev, g
                             )._factory_requires_grad_(requires_grad)
    perm = torch_permutation(int(n), g).astype(dt.np)
    return Tensor._make(move_array(perm, dev), dt, dev)._factory_requires_grad_(requires_grad)
