"""Runs a primitive eagerly and records its backward node (the eager half of the registry)."""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable
from typing import Any

import numpy as np

from .. import _dtype as D
from .. import _profiling, _quiet
from .._device import array_module, device_guard
from ..autograd import anomaly
from ..autograd.grad_mode import _state as _grad_state
from ..autograd.node import (
    ERR_BACKWARD_TWICE,
    ERR_INFERENCE_SAVED,
    NO_GRAD_VIEW,
    Edge,
    Meta,
    Node,
    SavedTensor,
    _seq,
    gradient_edge,
)
from ..tensor import Tensor
from ..tracing import GraphBreak, MetaArray
from ..tracing import _state as _trace_state
from .shapes import ShapeError, broadcast_shapes
from .registry import PROMOTE_BOOL_OUT, PROMOTE_FLOAT, PROMOTE_NONE, REGISTRY, Primitive

_NP2DT = {d.np: d for d in D.DTYPES}
_ndarray = np.ndarray
_np_scalar = np.generic
_tnew = tuple.__new__  # builds Edge/Meta without NamedTuple's Python-level __new__
_BF16 = D.bfloat16
_BF16_NP = D.bfloat16.np
_F32_NP = np.dtype(np.float32)
_make = Tensor._make
_PY_NUMBERS = frozenset((bool, int, float))


# the names PyTorch's nodes give what they saved: the first two operands and the output
_SAVED_NAMES: dict[int | str, str] = {0: "self", 1: "other", "out": "result"}


class PrimitiveBackward(Node):
    """The backward node of one primitive call; its formula comes from the registry."""

    __slots__ = ("prim", "attrs", "metas", "saved")
    # set in the instance once a backward without retain_graph has freed what it saved; its
    # scalar operands at saved positions count as freed too (PyTorch saves them as tensors)
    _released = False
    # a node whose op PyTorch saves nothing for (tril's mask is a constant): nothing is freed
    _keeps_saved = False

    def __init__(self, prim: Primitive, metas: list[Any], attrs: dict[str, Any],
                 next_edges: list[Edge | None], out_metas: list[Meta]) -> None:
        # Node.__init__'s body, inlined: a frame fewer on every recorded op
        self.next_edges = next_edges
        self._seq_nr = next(_seq.counter)
        topo = 0
        for e in next_edges:
            if e is not None and e[0].topological_nr >= topo:
                topo = e[0].topological_nr + 1
        self.topological_nr = topo
        self.input_metas = out_metas
        if anomaly._global_enabled:
            anomaly.record(self)
        self.prim = prim
        self.attrs = attrs
        self.metas = metas  # per argument: its Meta if a tensor, else the constant itself
        self.saved: dict[int | str, SavedTensor] = {}

    # --- PyTorch's view of what it saved: _saved_self, _saved_other, _saved_result ---------
    def _names_saved(self) -> dict[str, int | str]:
        names: dict[str, int | str] = {}
        for key in self.prim.saves:
            name = _SAVED_NAMES.get(key)
            if name is not None and (key in self.saved or key != "out" and key < len(self.metas)):
                names[name] = key
        return names

    def _saved_value(self, name: str, raw: bool) -> Any:
        key = self._names_saved().get(name)
        if key is None:
            prefix = "_raw_saved_" if raw else "_saved_"
            raise AttributeError(f"'{type(self).__name__}' object has no attribute "
                                 f"'{prefix}{name}'")
        if raw:
            return self.saved.get(key)
        only_if = self.prim.saves_if_grad
        if only_if is not None and key in only_if and key not in self.saved:
            return None  # not needed, so not saved: PyTorch's undefined saved variable
        return self.output() if key == "out" else self.input(key)  # type: ignore[arg-type]

    # properties, not a __getattr__: a class with one loses the interpreter's fast attribute
    # loads on every node (1.8% of an eager training step)
    _saved_self = property(lambda self: self._saved_value("self", False))
    _saved_other = property(lambda self: self._saved_value("other", False))
    _saved_result = property(lambda self: self._saved_value("result", False))
    _raw_saved_self = property(lambda self: self._saved_value("self", True))
    _raw_saved_other = property(lambda self: self._saved_value("other", True))
    _raw_saved_result = property(lambda self: self._saved_value("result", True))

    def __dir__(self) -> list[str]:
        saved = self._names_saved()
        return sorted(n for n in super().__dir__()
                      if not n.startswith(("_saved_", "_raw_saved_"))
                      or n.split("saved_", 1)[1] in saved)

    # --- what a backward formula reads ------------------------------------------------------
    def input(self, i: int) -> Any:
        s = self.saved.get(i)
        if s is not None:
            return s.unpack(self) if s._packed is None else self._unpack_hooked(i, s)
        m = self.metas[i]
        if isinstance(m, Meta):
            raise RuntimeError(f"{self.name()}: argument {i} was not saved for backward")
        if self._released and i in self.prim.saves:
            raise RuntimeError(ERR_BACKWARD_TWICE)
        return m

    def output(self) -> Tensor:
        s = self.saved["out"]
        return s.unpack(self) if s._packed is None else self._unpack_hooked("out", s)

    def _unpack_hooked(self, key: int | str, s: SavedTensor) -> Tensor:
        """A tensor saved through saved_tensors_hooks, unpacked once per backward run, as
        PyTorch's node unpacks each saved variable once per call (a formula here may read
        it twice; a checkpoint's unpack hook hands each value out once)."""
        from ..autograd.engine import current_graph_task_id

        gid = current_graph_task_id()
        if gid == -1:  # outside a backward: every read unpacks
            return s.unpack(self)
        cached = self.__dict__.get("_hooked_reads")
        if cached is None or cached[0] != gid:
            cached = self._hooked_reads = (gid, {})
        value = cached[1].get(key)
        if value is None:
            value = cached[1][key] = s.unpack(self)
        return value

    def shape(self, i: int) -> tuple[int, ...]:
        return self.metas[i].shape

    def dtype(self, i: int) -> D.DType:
        return self.metas[i].dtype

    def needs(self, i: int) -> bool:
        return self.next_edges[i] is not None

    def apply(self, grads: list[Any]) -> list[Any]:
        g = grads[0]
        if g is None:
            return [None] * len(self.next_edges)
        out = self.prim.backward(self, g)  # type: ignore[misc]
        return [o if self.next_edges[i] is not None else None for i, o in enumerate(out)]

    def release_variables(self) -> None:
        if self._keeps_saved:
            return
        for s in self.saved.values():
            s.release()
        self._released = True
        self.__dict__.pop("_hooked_reads", None)


_NODE_CLASSES: dict[str, type[PrimitiveBackward]] = {}


def node_class(name: str) -> type[PrimitiveBackward]:
    """The PrimitiveBackward subclass called ``name`` (PyTorch's ``MmBackward0``), made once:
    ``type(t.grad_fn).__name__``, ``.name()`` and the repr all say it."""
    cls = _NODE_CLASSES.get(name)
    if cls is None:
        cls = _NODE_CLASSES[name] = type(name, (PrimitiveBackward,), {"__slots__": ()})
    return cls


def named(t: Tensor, name: str) -> Tensor:
    """``t`` with its backward node renamed to PyTorch's ``name`` (the node of a composite op,
    or of a primitive PyTorch names by the call: ``mm`` for a 2-d matmul); a tensor without a
    node of its own primitive is returned as it is."""
    fn = t._grad_fn
    if fn is not None and isinstance(fn, PrimitiveBackward):
        fn.__class__ = node_class(name)
        tracer = _trace_state.tracer
        if tracer is not None and type(t._data) is MetaArray:  # the capture's record of it
            tracer.annotate(t._data.node, t)
    return t


def refuse_saved_inference(out: Tensor, *saved: Any) -> None:
    """PyTorch's error where the node of ``out`` would save an inference tensor among
    ``saved`` (what PyTorch's backward node of the op saves, where ours saves other
    tensors)."""
    if out._grad_fn is not None and any(isinstance(t, Tensor) and t._vc.inference
                                        for t in saved):
        raise RuntimeError(ERR_INFERENCE_SAVED)


def named_backward(name: str, saves_inputs: bool = False
                   ) -> Callable[[Callable[..., Tensor]], Callable[..., Tensor]]:
    """A composite op whose result's backward node is PyTorch's ``name`` (``ReluBackward0``);
    a result that is its first argument keeps that argument's node. ``saves_inputs``: that
    node saves every tensor argument (a loss's input, target and weights), so an inference
    tensor among them is PyTorch's error."""

    def decorate(fn: Callable[..., Tensor]) -> Callable[..., Tensor]:
        @functools.wraps(fn)
        def op(*args: Any, **kwargs: Any) -> Tensor:
            out = fn(*args, **kwargs)
            if out._grad_fn is not None and not (args and out is args[0]):
                if saves_inputs:
                    refuse_saved_inference(out, *args, *kwargs.values())
                named(out, name)
            return out

        return op

    return decorate


def keeps_saved(t: Tensor) -> Tensor:
    """``t`` with its backward node keeping what it saved after a backward, where PyTorch's op
    saves nothing (tril's mask, add's alpha): a second backward through it does not raise."""
    fn = t._grad_fn
    if fn is not None and isinstance(fn, PrimitiveBackward):
        fn._keeps_saved = True
    return t


def _promoted_dtype(prim: Primitive, args: tuple[Any, ...], weak: Any = ()
                    ) -> D.DType | None:
    """The dtype ``prim``'s promoting arguments are cast to (None: no tensor among them).
    ``weak``: positions of tensors that stand for Python numbers (a compiled step's float or
    int argument, planner.capture: Tracer.add_scalar_input), promoted as the numbers they are
    (a float64 one as a float, an int64 one as an int, a bool as a bool)."""
    positions = prim.promote_args if prim.promote_args is not None else range(len(args))
    dts: list[D.DType] = []
    ndims: list[int] = []
    scalars: list[Any] = []
    first = None
    uniform = True  # every tensor of the first one's dtype, every scalar a Python number
    for i in positions:
        a = args[i]
        if i in weak:
            kind = args[i].dtype
            scalars.append(0.5 if kind.is_floating_point else True if kind is D.bool_ else 1)
        elif isinstance(a, Tensor):
            dt = a.dtype
            if first is None:
                first = dt
            elif dt is not first:
                uniform = False
            dts.append(dt)
            ndims.append(a._data.ndim)
        elif a is not None:
            if type(a) not in _PY_NUMBERS:
                uniform = False
            scalars.append(a)
    if first is None:
        return None
    if uniform and first.is_floating_point:
        # tensors of one floating dtype: no number lifts them (relu's where(x <= 0, 0.0, x))
        return first
    rdt = D.result_dtype(dts, scalars, ndims)
    if prim.promote == PROMOTE_FLOAT and not rdt.is_floating_point:
        rdt = D.default_float
    return rdt


# ops whose bool arguments stay bools among Python numbers (Python's ``True & False`` and
# ``True == 1`` are bools or compare as ints either way); elsewhere Python counts a bool as an int
_BOOL_OPS = frozenset(("eq", "ne", "logical_and", "logical_or", "logical_xor", "bitwise_and",
                       "bitwise_or", "bitwise_xor"))


def _as_python_numbers(prim: Primitive, args: tuple[Any, ...], weak: Any) -> tuple[Any, ...]:
    """``prim``'s arguments where every tensor among them stands for a Python number (a
    compiled step's number arguments and what they compute, ``weak``), cast so that the op
    computes what Python would: ints and bools as float64 where Python's result is a float (a
    true division, a float among them: ``n / 2``, ``n * 0.1``), bools as int64 where Python
    counts them (``True + True`` is 2)."""
    positions = prim.promote_args if prim.promote_args is not None else range(len(args))
    kinds = {args[i].dtype for i in positions if i in weak}
    if D.float64 in kinds or prim.promote == PROMOTE_FLOAT or any(
            type(args[i]) is float for i in positions):
        target = D.float64
    elif D.bool_ in kinds and prim.name not in _BOOL_OPS:
        target = D.int64
    else:
        return args
    cast = [i for i in positions if i in weak and args[i].dtype is not target
            and (target is D.float64 or args[i].dtype is D.bool_)]
    if not cast:
        return args
    return tuple(apply(REGISTRY["cast"], a, dtype=target) if i in cast else a
                 for i, a in enumerate(args))


def _promote(prim: Primitive, args: tuple[Any, ...], arrays: list[Any]) -> None:
    """Casts ``arrays`` in place to the promoted dtype."""
    rdt = _promoted_dtype(prim, args)
    if rdt is None:
        return
    positions = prim.promote_args if prim.promote_args is not None else range(len(args))
    for i in positions:
        a = args[i]
        if isinstance(a, Tensor) and a.dtype is not rdt:
            arrays[i] = arrays[i].astype(rdt.np)
    if rdt in _NARROW_INTS:
        _wrap_ints(arrays, positions, rdt)


# elementwise primitives whose Python-number operand PyTorch's CPU kernels keep in float32
# (their scalar fast path); add, sub, pow... convert it to bfloat16 first (0.3 is 0.30078125)
_OPMATH_SCALAR = frozenset(("mul", "div"))
_bf16_scalar = _BF16_NP.type
_REDUCED_FLOATS = frozenset((D.float16, _BF16))


def opmath_scalar(prim: Primitive, args: tuple[Any, ...], rdt: D.DType | None) -> Any:
    """mul's or div's second operand where PyTorch's CPU kernel reads its value in float32
    (``iter.is_scalar(2)`` and ``original_scalar_value<opmath_t>``): a one-element tensor of
    another dtype than the float16 or bfloat16 result (a 0-d int64 70000 times a float16 0.
    is 0., not 0. times 70000's float16 inf); None elsewhere."""
    if rdt not in _REDUCED_FLOATS or prim.name not in _OPMATH_SCALAR or len(args) != 2:
        return None
    b = args[1]
    if not isinstance(b, Tensor) or b.dtype is rdt or b.dtype is D.bool_ or b._data.size != 1:
        return None
    return b


def _half_opmath_impl(prim: Primitive, scalar: Tensor) -> Callable[..., Any]:
    """``prim`` (mul or div) of a float16 array and ``scalar``'s value in float32 (see
    ``opmath_scalar``), rounded to float16 once."""
    def impl(xp: Any, a: Any, b: Any, **attrs: Any) -> Any:
        b32 = xp.asarray(scalar._data).astype(_F32_NP)
        return prim.impl(xp, a.astype(_F32_NP), b32, **attrs).astype(np.float16)

    return impl


def _bf16_impl(prim: Primitive, args: tuple[Any, ...]) -> Callable[..., Any]:
    """``prim``'s impl on bfloat16 operands: they are widened to float32 (exactly) and a
    bfloat16 result is rounded once, as PyTorch's CPU kernels compute bfloat16 (numpy's sums
    and products over ml_dtypes' bfloat16 would round at every step). A Python number of an
    elementwise op with a bfloat16 result is converted as PyTorch converts it."""
    first = next(a.dtype for a in args if isinstance(a, Tensor))
    rdt = _promoted_dtype(prim, args) if prim.promote != PROMOTE_NONE else first
    narrow = rdt is _BF16
    round_numbers = narrow and prim.elementwise and prim.name not in _OPMATH_SCALAR
    # mul's and div's second operand as one element of another dtype: PyTorch's CPU scalar,
    # its value in float32 (the promotion rounded it to bfloat16)
    scalar = opmath_scalar(prim, args, rdt) if narrow else None

    def impl(xp: Any, *arrays: Any, **attrs: Any) -> Any:
        wide = list(arrays)
        for i, a in enumerate(wide):
            if getattr(a, "dtype", None) == _BF16_NP:
                wide[i] = a.astype(_F32_NP)
            elif round_numbers and type(a) in (float, int):
                wide[i] = float(_bf16_scalar(a))
        if scalar is not None:
            wide[1] = xp.asarray(scalar._data).astype(_F32_NP)
        out = prim.impl(xp, *wide, **attrs)
        if not narrow:
            return out
        out = xp.asarray(out)
        # a float32 result is rounded, but where a cast or dtype= asked for float32
        if out.dtype == _F32_NP and attrs.get("dtype") is not D.float32:
            return out.astype(_BF16_NP)
        return out

    return impl


# the integer dtypes a Python int operand may not fit
_NARROW_INTS = frozenset(d for d in D.DTYPES if d.category == 1 and d is not D.int64)


def _wrap_ints(values: list[Any], positions: Any, rdt: D.DType) -> None:
    """The Python ints among ``values`` as elements of the narrow integer dtype ``rdt``,
    wrapped round as PyTorch converts them (int8's 300 is 44; numpy 2 refuses an int out of
    its array's range)."""
    for i in positions:
        if type(values[i]) is int:
            values[i] = D.wrapped_int(values[i], rdt)


def _describe(args: tuple[Any, ...]) -> str:
    parts = []
    for a in args:
        if isinstance(a, Tensor):
            parts.append(f"tensor of shape {tuple(a.shape)} and dtype {a.dtype.name}")
        else:
            parts.append(repr(a))
    return ", ".join(parts)


def apply(prim: Primitive, *args: Any, **attrs: Any) -> Tensor:
    """Run ``prim`` on tensors and scalars; record a backward node when grad is needed."""
    tracer = _trace_state.tracer
    if tracer is not None:
        return _trace_apply(tracer, prim, args, attrs)
    if _profiling.ACTIVE is not None and not _profiled_state.inside:  # runtime.profiler
        return _profiled(prim, args, attrs)
    arrays = list(args)
    device = None
    req = False
    dt0 = None  # the first tensor's dtype; bfloat16 where any tensor's is (see _bf16_impl)
    promote_needed = False
    past_int64 = False
    i = 0  # by index, not enumerate: one object fewer an op
    for a in args:
        if isinstance(a, Tensor):
            if device is None:
                device = a.device
                dt0 = a.dtype
            else:
                if a.device != device:
                    return apply(prim, *_placed(prim, args, _eager_device), **attrs)
                if a.dtype is not dt0:
                    promote_needed = True
                    if a.dtype is _BF16:
                        dt0 = _BF16
            arrays[i] = a._data
            if a._rg:
                req = True
        elif a is not None and type(a) is not float:
            promote_needed = True  # ints and bools may lift an integer or bool tensor
            if isinstance(a, _np_scalar):  # a Python scalar's weak type in numpy too
                arrays[i] = a.item()
            elif type(a) not in _PY_NUMBERS and isinstance(a, (int, float)):
                # an int or float subclass (an IntEnum member): numpy would take it as an
                # int64 or float64 array, lifting a float32 tensor; PyTorch, as the number
                arrays[i] = float(a) if isinstance(a, float) else int(a)
            elif type(a) is int and not _I64_MIN <= a <= _I64_MAX:
                past_int64 = True
        i += 1
    if device is None:
        raise TypeError(f"{prim.name}: expected at least one tensor argument, got "
                        f"({_describe(args)})")
    if past_int64 and prim.elementwise:
        args = _unsigned_ints(args)
        arrays = [arrays[i] if isinstance(a, Tensor) else a for i, a in enumerate(args)]
    impl = prim.impl
    if promote_needed and prim.name in _OPMATH_SCALAR and _promoted_dtype(prim, args) is (
            D.float16) and (scalar := opmath_scalar(prim, args, D.float16)) is not None:
        # a float16 tensor and the scalar, read as they are (the scalar in float16 might
        # overflow, with numpy's warning)
        impl = _half_opmath_impl(prim, scalar)
    else:
        if prim.promote != PROMOTE_NONE and (
                promote_needed or dt0.category < 2 or prim.promote_args is not None):  # type: ignore[union-attr]
            _promote(prim, args, arrays)
        if dt0 is _BF16 and not prim.view and not prim.transfer:
            impl = _bf16_impl(prim, args)
    try:
        if device == "cpu":
            quiet = _quiet.current()  # numpy's floating-point warnings: PyTorch gives none
            try:
                _quiet.ignore()
                out = impl(np, *arrays, **attrs)
            finally:
                _quiet.restore(quiet)
        else:
            with device_guard(device):
                out = impl(array_module(device), *arrays, **attrs)
    except (ValueError, IndexError) as e:
        if prim.check or isinstance(e, ShapeError):
            raise  # a check's error is the user-facing one (PyTorch's type and text)
        if prim.elementwise:  # operands that do not broadcast: PyTorch's text
            broadcast_shapes(*(a.shape for a in args if isinstance(a, Tensor)))
        raise ValueError(f"{prim.name}: {e} (arguments: {_describe(args)})") from None
    except TypeError as e:
        raise TypeError(f"{prim.name}: {e} (arguments: {_describe(args)})") from None
    out_device = attrs["device"] if prim.transfer else device
    if type(out) is not _ndarray and out_device == "cpu":
        out = np.asarray(out)
    try:
        dt = _NP2DT[out.dtype]
    except KeyError:
        raise TypeError(f"{prim.name}: produced unsupported dtype {out.dtype} "
                        f"(arguments: {_describe(args)})") from None
    if prim.promote == PROMOTE_BOOL_OUT:
        req = False
    if req and _grad_state.enabled and prim.differentiable and dt.is_floating_point:
        return _record(prim, args, attrs, out, dt, out_device)
    t = _make(out, dt, out_device)
    if prim.view:
        _mark_view(t, args[0], prim, attrs)
        src = args[0]
        if src._rg and t._base is not None and not _grad_state.enabled:
            # PyTorch's view made in no_grad mode (creation meta NO_GRAD_MODE): it requires
            # grad as its base does, has no history, and is not to be written in place with
            # grad mode enabled (ops.inplace)
            t._rg = True
            if t._creation is None:
                t._creation = NO_GRAD_VIEW
    return t


class _Profiled(threading.local):
    inside = False  # this thread is in the op's own apply: no second event


_profiled_state = _Profiled()


def _profiled(prim: Primitive, args: tuple[Any, ...], attrs: dict[str, Any]) -> Tensor:
    """``apply`` inside an event of the recording profiler (``runtime.profiler``), named
    as PyTorch's operator events are (``aten::<primitive>``)."""
    recorder = _profiling.ACTIVE
    event = recorder.begin(f"aten::{prim.name}", "op", args)
    _profiled_state.inside = True
    try:
        return apply(prim, *args, **attrs)
    finally:
        _profiled_state.inside = False
        recorder.end(event)


_I64_MIN, _I64_MAX = -(1 << 63), (1 << 63) - 1


def _unsigned_ints(args: tuple[Any, ...]) -> tuple[Any, ...]:
    """An elementwise op's Python ints past int64's range as PyTorch's scalars take them: one
    up to 2 ** 64 - 1 as a uint64, its value in a float op and wrapped into int64 in an
    integer or bool one (int64 - 2 ** 63 is int64 + INT64_MIN; numpy raised its
    OverflowError, or compared the int exactly: arange(3) < 2 ** 63 was True, PyTorch's
    False); beyond, PyTorch's OverflowError."""
    tensors = [a for a in args if isinstance(a, Tensor)]
    floating = any(t.dtype.is_floating_point for t in tensors)
    if tensors and all(t.dtype is D.bool_ for t in tensors) and any(
            type(a) is int and (1 << 63) <= a < (1 << 64) for a in args):
        # the scalar is PyTorch's uint64, which bool does not promote with
        raise RuntimeError("Promotion for uint16, uint32, uint64 types is not supported, "
                           "attempted to promote Bool and UInt64")
    out = []
    for a in args:
        if type(a) is int and not _I64_MIN <= a <= _I64_MAX:
            if a < 0:
                raise OverflowError("can't convert negative int to unsigned")
            if a >> 64:
                raise OverflowError("int too big to convert")
            a = float(a) if floating else a - (1 << 64)
        out.append(a)
    return tuple(out)


def _trace_apply(tracer: Any, prim: Primitive, args: tuple[Any, ...],
                 attrs: dict[str, Any]) -> Tensor:
    """Capture: record ``prim`` in the tracer's graph; the result holds a MetaArray."""
    device = None
    req = False
    mixed = False  # tensors on more than one device
    rare = False  # a numpy scalar, or an int past int64's range
    dt0 = None  # the first tensor's dtype
    uniform = True  # every tensor of dtype dt0, every other argument a Python number or None
    target = tracer.target_device
    scanned = args
    metas = list(args)  # each tensor's Meta for prim.infer (made again if args change below)
    i = 0
    for a in args:  # one pass: each argument's type looked at once
        if isinstance(a, Tensor):
            dev = a.device if target is None else tracer.device_of(a)
            if device is None:
                device = dev
                dt0 = a.dtype
            else:
                if dev != device:
                    mixed = True
                if a.dtype is not dt0:
                    uniform = False
            if a._rg:
                req = True
            metas[i] = _tnew(Meta, (a._data.shape, a.dtype, device))
        elif a is not None and type(a) not in _PY_NUMBERS:
            uniform = False
            if isinstance(a, _np_scalar):
                rare = True
        elif type(a) is int and not _I64_MIN <= a <= _I64_MAX:
            rare = True
        i += 1
    if rare:
        uniform = False
        if any(isinstance(a, _np_scalar) for a in args):  # recorded as the Python scalars
            args = tuple(a.item() if isinstance(a, _np_scalar) else a for a in args)
        if prim.elementwise and any(type(a) is int and not _I64_MIN <= a <= _I64_MAX
                                    for a in args):
            args = _unsigned_ints(args)
    if mixed:
        return apply(prim, *_placed(prim, args, tracer.device_of), **attrs)
    if device is None:
        raise TypeError(f"{prim.name}: expected at least one tensor argument, got "
                        f"({_describe(args)})")
    # the positions of tensors standing for Python floats (float arguments): promoted as floats
    weak_nodes = tracer.weak_nodes
    weak = {i for i, a in enumerate(args) if isinstance(a, Tensor)
            and type(a._data) is MetaArray and a._data.node in weak_nodes} if weak_nodes else ()
    if weak_nodes and any(isinstance(v, Tensor) for v in attrs.values()):
        # an op's number setting (addcmul's value=, a slope) a constant of its kernel: a
        # compiled step's number argument there is read as a value
        raise GraphBreak(f"{prim.name} takes a number argument's value as a setting")
    # tensors of one floating dtype among Python numbers: _promoted_dtype's answer is theirs,
    # and nothing is cast (nor is an operand of another dtype read as a float16 opmath scalar)
    settled = (uniform and not weak and prim.promote_args is None
               and dt0.is_floating_point)  # type: ignore[union-attr]
    if prim.promote == PROMOTE_NONE:
        rdt = None
    elif settled:
        rdt = dt0
    else:
        rdt = _promoted_dtype(prim, args, weak)
    if rdt is None and weak and prim.promote != PROMOTE_NONE:
        args = _as_python_numbers(prim, args, weak)
    if rdt is not None and not settled:  # None: Python numbers only (weak), as float64, int64
        positions = prim.promote_args if prim.promote_args is not None else range(len(args))
        cast = [i for i in positions if isinstance(args[i], Tensor) and args[i].dtype is not rdt]
        scalar = opmath_scalar(prim, args, rdt)
        if rdt is _BF16 and scalar is not None:
            cast.remove(1)  # its value in float32, as eager's (_bf16_impl; planner.bf16)
        elif rdt is D.float16 and (scalar is not None or (
                prim.name in _OPMATH_SCALAR and len(args) == 2
                and _half_with_number(prim, args, weak))):
            # a float16 tensor times (over) a Python number or a one-element tensor of
            # another dtype: computed in float32 and rounded once, as eager's
            # (prims._half_scalar_impl, _half_opmath_impl), not with the number in float16
            wide = tuple(apply(REGISTRY["cast"], a, dtype=D.float32) for a in args)
            return apply(REGISTRY["cast"], apply(prim, *wide, **attrs), dtype=D.float16)
        if cast:
            args = tuple(apply(REGISTRY["cast"], a, dtype=rdt) if i in cast else a
                         for i, a in enumerate(args))
        if rdt in _NARROW_INTS:
            wrapped = list(args)
            _wrap_ints(wrapped, positions, rdt)
            args = tuple(wrapped)
    if args is not scanned:  # cast, or numbers converted
        metas = [_tnew(Meta, (a._data.shape, a.dtype, device)) if isinstance(a, Tensor) else a
                 for a in args]
    try:
        shape, dt = prim.infer(*metas, **attrs)
    except ShapeError:
        raise  # PyTorch's type and text, as in eager mode
    except (ValueError, IndexError) as e:
        raise ValueError(f"{prim.name}: {e} (arguments: {_describe(args)})") from None
    except TypeError as e:
        raise TypeError(f"{prim.name}: {e} (arguments: {_describe(args)})") from None
    # a graph value lives where its step writes it: a copy's is the device it copies to
    device = attrs["device"] if prim.transfer else device
    if tracer.weak_views:
        _check_weak_views(tracer, args)
    if weak and prim.name in _DIVIDING and 1 in weak and all(
            i in weak for i, a in enumerate(args) if isinstance(a, Tensor)):
        # Python's ``1 / n``, ``7 // n``, ``7 % n`` raise ZeroDivisionError for a zero n,
        # where the plan's division would give inf or nan: read as a value
        raise GraphBreak(f"{prim.name} of Python numbers by a number argument")
    if weak and prim.name == "remainder" and dt.is_floating_point and all(
            i in weak for i, a in enumerate(args) if isinstance(a, Tensor)):
        # Python's float % gives a zero the divisor's sign (-0.0 % 0.1 is 0.0), the plan's
        # the dividend's
        raise GraphBreak("remainder of Python floats")
    if weak and prim.name == "pow" and 0 in weak and dt.is_floating_point and (
            1 in weak and args[1].dtype.is_floating_point or type(args[1]) is float) and all(
            i in weak for i, a in enumerate(args) if isinstance(a, Tensor)):
        # Python's ``f ** 0.5`` is a complex number for a negative f, the plan's nan
        raise GraphBreak("a Python float argument to a fractional power")
    if weak and prim.name == "pow" and 1 in weak and not dt.is_floating_point:
        # an integer tensor to a negative int's power is an error in eager mode (PyTorch's
        # check of the Python number), where the plan's power would give 0
        raise GraphBreak("pow of an integer tensor to an int argument")
    node = tracer.add_op(prim, args, attrs, tuple(shape), dt, device)
    if weak and all(i in weak for i, a in enumerate(args) if isinstance(a, Tensor)):
        weak_nodes.add(node)  # arithmetic among Python numbers gives one
        if dt is D.int64:
            tracer.weak_bounds[node] = _python_int_bound(tracer, prim, args, attrs)
    view_of = (tracer.storage_of(args[0])
               if prim.view and isinstance(args[0], Tensor)
               and (len(args) == 1 or not _takes_index_tensors(args)) else None)
    out = MetaArray(shape, dt.np, node, view_of)
    if view_of is not None:
        out.view_src = args[0]
        out.made_by = (prim, attrs)
    elif weak and prim.name == "getitem" and isinstance(args[0], Tensor) and all(
            i in weak for i, a in enumerate(args) if i and isinstance(a, Tensor)):
        # ``x[n]`` with an int argument n: eager mode's is a view of x, the plan's a copy
        # (an index tensor): a write through it, or a read of it after x was written,
        # reads n as a value (_check_weak_views, Tracer.write)
        base = tracer.storage_of(args[0])
        tracer.weak_views[id(out)] = (base, base.node)
    dims = attrs.get("dims")
    if view_of is not None and dims is not None and len(dims) >= 2:
        # a permutation that swaps the last two axes flips the layout, as numpy's would
        swapped = dims[-2:] == (len(dims) - 1, len(dims) - 2)
        out.transposed = view_of.transposed != swapped
    if (req and _grad_state.enabled and prim.differentiable and dt.is_floating_point
            and prim.promote != PROMOTE_BOOL_OUT):
        t = _record(prim, args, attrs, out, dt, device)
    else:
        t = Tensor._make(out, dt, device)
        if view_of is not None and args[0]._rg and not _grad_state.enabled:
            t._rg = True  # a view made in no_grad mode, as apply's
            t._creation = NO_GRAD_VIEW
    if view_of is not None and args[0]._creation is not None:
        t._creation = args[0]._creation  # a view of a multi-output (...) view is one too
    tracer.annotate(node, t)
    if view_of is not None and type(args[0]._data) is MetaArray and tracer.eager_view(out):
        # a view the step made of a value it made, where eager mode's is one (a reshape that
        # copies there is none: the tracer's ``eager_view``), linked as eager mode's: an
        # in-place write through either is seen by what autograd saved of the other, and its
        # history is made again from its base's where the base was written since
        _link_view(t, args[0], prim, attrs)
    return t


# the divisions Python raises ZeroDivisionError for
_DIVIDING = frozenset(("div", "floor_divide", "remainder", "fmod"))
# a bound on the magnitude of a compiled step's int argument read as an input of its plan
# (planner.compile keeps a larger one a constant), from which _python_int_bound bounds what
# Python int arithmetic computes from it
INT_INPUT_BOUND = 2 ** 48
_INT64_MAX = 2 ** 63 - 1


def _python_int_bound(tracer: Any, prim: Primitive, args: tuple[Any, ...],
                      attrs: dict[str, Any]) -> int:
    """A bound on the magnitude of the Python int that ``prim`` computes from ``args``
    (the step's int arguments, Python ints and what they compute): a GraphBreak where it
    may pass int64's, where the plan's int64 would wrap (``n * 2 ** 40``, ``1 << n``), or
    where Python's answer is no int64 at all (``2 ** n`` is a float for a negative n)."""
    bounds = []
    for a in args:
        if isinstance(a, Tensor):
            bounds.append(tracer.weak_bounds.get(a._data.node, 1))  # a bool's is 1
        elif isinstance(a, (int, float)):
            bounds.append(int(abs(a)))
    name = prim.name
    a = bounds[0] if bounds else 0
    b = bounds[1] if len(bounds) > 1 else 0
    if name in ("add", "sub"):
        bound = a + b
    elif name in ("add_scaled", "sub_scaled"):
        bound = a + b * (int(abs(attrs.get("alpha", 1))) + 1)
    elif name == "mul":
        bound = a * b
    elif name in ("neg", "abs", "sign", "cast", "floor_divide", "bitwise_right_shift"):
        bound = a
    elif name == "remainder":
        bound = b
    elif name in ("bitwise_and", "bitwise_or", "bitwise_xor"):
        bound = 2 * max(bounds, default=0)
    elif name in ("maximum", "minimum", "where"):
        bound = max(bounds, default=0)
    elif name == "bitwise_left_shift" and b < 64:
        bound = a << b
    else:
        bound = _INT64_MAX + 1
    if bound > _INT64_MAX:
        raise GraphBreak(f"{name} of Python ints may pass int64's range")
    return bound


def _check_weak_views(tracer: Any, args: tuple[Any, ...]) -> None:
    """A GraphBreak where an argument is ``x[n]`` indexed by an int argument (a copy in the
    plan, a view in eager mode) and x was written in place since: eager mode's shows the
    write."""
    for a in args:
        if isinstance(a, Tensor) and type(a._data) is MetaArray:
            stale_weak_view(tracer, a._data)


def stale_weak_view(tracer: Any, cell: MetaArray) -> None:
    """A GraphBreak where ``cell`` (or a view it was taken from: its ``detach()``) is
    ``x[n]`` indexed by an int argument, or by a 0-d integer tensor (functional.getitem's
    ``_note_select_by_tensor``), and x was written in place since."""
    while cell is not None:
        seen = tracer.weak_views.get(id(cell))
        if seen is not None and seen[0].node != seen[1]:
            raise GraphBreak("a tensor indexed by an int argument or a 0-d integer tensor "
                             "(a view in eager mode, a copy in the plan), whose base was "
                             "written in place since (eager mode's view shows the write)")
        cell = cell.view_of


def _half_with_number(prim: Primitive, args: tuple[Any, ...], weak: Any) -> bool:
    """Whether ``args`` are a float16 tensor and a number (a compiled step's number
    argument, ``weak``) that eager's mul or div computes in float32: the number after the
    tensor, or before it in a product (prims._half_scalar_impl)."""
    for i in ((1, 0) if prim.name == "mul" else (1,)):
        other = args[1 - i]
        if i in weak and 1 - i not in weak and isinstance(other, Tensor) \
                and other.dtype is D.float16:
            return True
    return False


def _eager_device(t: Tensor) -> str:
    return t.device


def _placed(prim: Primitive, args: tuple[Any, ...],
            device_of: Callable[[Tensor], str]) -> tuple[Any, ...]:
    """``args`` on one device, PyTorch's TensorIterator rule: the first device other than the
    CPU is the op's; a 0-d CPU tensor joins an elementwise op there as a scalar would (copied
    by a to_device step, whose backward copies its gradient back); any other tensor elsewhere
    is an error naming that device and the op's."""
    tensors = [a for a in args if isinstance(a, Tensor)]
    common = next((d for d in map(device_of, tensors) if d != "cpu"), "cpu")
    for t in tensors:
        dev = device_of(t)
        if dev != common and not (prim.elementwise and dev == "cpu" and not t.shape):
            raise RuntimeError("Expected all tensors to be on the same device, but found at "
                               f"least two devices, {common} and {dev}!")
    to_device = REGISTRY["to_device"]
    return tuple(apply(to_device, a, device=common)
                 if isinstance(a, Tensor) and device_of(a) != common else a for a in args)


def _takes_index_tensors(args: tuple[Any, ...]) -> bool:
    """Advanced indexing (index tensors after the data) copies; only basic keys make views."""
    return any(isinstance(a, Tensor) for a in args[1:])


def _record(prim: Primitive, args: tuple[Any, ...], attrs: dict[str, Any], out: Any,
            dt: D.DType, device: str) -> Tensor:
    # one pass over the arguments for each one's edge (None: no gradient flows to it) and
    # meta, by index: a comprehension is a frame of its own in Python 3.11
    edges: list[Edge | None] = [None] * len(args)
    metas = list(args)  # a constant stays as it is; a tensor's becomes its Meta
    i = 0
    for a in args:
        if isinstance(a, Tensor):
            metas[i] = _tnew(Meta, (a._data.shape, a.dtype, a.device))
            if a._rg:
                edges[i] = (_tnew(Edge, (a._grad_fn, a.output_nr))
                            if a._grad_fn is not None and a._base is None else gradient_edge(a))
        i += 1
    cls = _NODE_CLASSES.get(prim.backward_name) or node_class(prim.backward_name)
    node = cls(prim, metas, attrs, edges, [_tnew(Meta, (out.shape, dt, device))])
    t = _make(out, dt, device, node)
    if prim.view:
        _mark_view(t, args[0], prim, attrs)
    saved = node.saved
    only_if = prim.saves_if_grad
    for s in prim.saves:
        if s == "out":
            saved["out"] = SavedTensor(t, True)
        else:
            a = args[s]
            if isinstance(a, Tensor) and (only_if is None or _any_needs_grad(args, only_if[s])):
                saved[s] = SavedTensor(a, False)
    if prim.saves_from is not None:
        for i in range(prim.saves_from, len(args)):
            a = args[i]
            if isinstance(a, Tensor):
                saved[i] = SavedTensor(a, False)
    return t


def _any_needs_grad(args: tuple[Any, ...], positions: tuple[int, ...]) -> bool:
    for i in positions:
        a = args[i]
        if isinstance(a, Tensor) and a._rg:
            return True
    return False


def _mark_view(t: Tensor, src: Tensor, prim: Primitive, attrs: dict[str, Any]) -> None:
    """A view shares storage and version counter with its base (numpy decides if it is one)."""
    arr = src._data
    owner = arr if arr.base is None else arr.base
    base = t._data.base
    if base is not None and base is not owner and base.base is owner:
        base = owner  # (numpy's diagonal is a view of a view of the owner)
    if base is None or base is not owner:
        return
    _link_view(t, src, prim, attrs)


def _link_view(t: Tensor, src: Tensor, prim: Primitive, attrs: dict[str, Any]) -> None:
    """``t``, made of ``src`` by the view op ``prim``, as autograd's view of ``src``'s base:
    their version counter, its base and view chain (the history ``grad_fn`` makes again
    after an in-place write to the base)."""
    t._vc = src._vc
    t._base = src if src._base is None else src._base
    step = (prim, attrs, src._data.shape, t._data.shape, src.dtype)
    t._view_chain = src._view_chain + (step,)
    t._view_version = t._vc.v
    if src._creation is not None:  # a view of a multi-output view is one too
        t._creation = src._creation
