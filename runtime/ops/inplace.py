"""In-place ops and views: version counters, leaf checks, and CopySlices (rebasing a base's
history when one of its views is written in place)."""

from __future__ import annotations

from typing import Any

import numpy as np

from .. import _dtype as D
from .. import _quiet
from .._device import array_module, device_guard
from ..autograd.engine import validate_outputs
from ..autograd.grad_mode import _state as _grad_state
from ..autograd.grad_mode import is_inference_mode_enabled
from ..autograd.node import _BACKWARD_SUFFIX, NO_GRAD_VIEW, Edge, Meta, Node, gradient_edge
from ..tensor import Tensor, check_not_captured, func_levels
from ..tracing import GraphBreak, MetaArray
from ..tracing import _state as _trace_state
from .dispatch import PrimitiveBackward, _bf16_impl, apply, node_class
from .registry import PROMOTE_SAME, REGISTRY, Primitive
from .shapes import broadcast_shapes

ERR_LEAF_INPLACE = "a leaf Variable that requires grad is being used in an in-place operation."
ERR_VIEW_OF_LEAF_INPLACE = (
    "a view of a leaf Variable that requires grad is being used in an in-place operation.")
ERR_INFERENCE_INPLACE = (
    "Inplace update to inference tensor outside InferenceMode is not allowed.You can make a "
    "clone to get a normal tensor before doing inplace update.See "
    "https://github.com/pytorch/rfcs/pull/17 for more details.")
ERR_INTERNAL_OVERLAP = (
    "unsupported operation: more than one element of the written-to tensor refers to a single "
    "memory location. Please clone() the tensor before performing the operation.")


def _same_dtype(t: Tensor, args: tuple[Any, ...]) -> bool:
    for a in args:
        if isinstance(a, Tensor):
            if a.dtype is not t.dtype:
                return False
        elif type(a) is not float or not t.dtype.is_floating_point:
            return False
    return True


def _written_view(prim: Primitive, args: tuple[Any, ...], attrs: dict[str, Any]) -> str | None:
    """The view PyTorch writes for ``t[key] = value`` with a basic key (no index tensors):
    the last of its select (an int), slice or unsqueeze (None) steps (a full slice and ``...``
    take none); None where it writes t itself."""
    if prim.name != "setitem" or len(args) != 1:
        return None
    name = None
    for item in attrs.get("key", ()):
        if item is None:
            name = "Unsqueeze"
        elif isinstance(item, slice):
            if item != slice(None):
                name = "Slice"
        elif item is not Ellipsis:
            name = "Select"
    return name


def view_rebase_error(t: Tensor, indirect: bool, written: str | None = None) -> str:
    """PyTorch's error (handle_view_on_rebase) for a multi-output view (or one a custom
    Function returned) written in place
    (``indirect``: its base or another view of it was, and its history is asked for;
    ``written``: the op of the view of t an indexed assignment writes, output 0)."""
    fn = t._grad_fn
    modified = "its base or another view of its base has been" if indirect else "is being"
    if t._creation == NO_GRAD_VIEW:
        if fn is None:
            msg = f"A view was created in no_grad mode and {modified} modified inplace with " \
                  "grad mode enabled."
        else:
            name = written or _BACKWARD_SUFFIX.sub("", fn.name())
            nr = 0 if written else t.output_nr
            msg = f"Output {nr} of {name} is a view of a view which was created in no_grad " \
                  f"mode and {modified} modified inplace with grad mode enabled."
        return msg + (" Given that this use case is ambiguous and error-prone, it is forbidden. "
                      "You can clarify your code by moving both the view and the inplace either "
                      "both inside the no_grad block (if you don't want the inplace to be "
                      "tracked) or both outside (if you want the inplace to be tracked).")
    if fn is None:
        msg = f"A view was created in no_grad mode and {modified} modified inplace with grad " \
              "mode enabled."
    elif written is not None:
        msg = f"Output 0 of {written} is a view and {modified} modified inplace."
    else:
        msg = (f"Output {t.output_nr} of {_BACKWARD_SUFFIX.sub('', fn.name())} is a view and "
               f"{modified} modified inplace.")
    if t._creation == "custom_function":
        return msg + (" This view was created inside a custom Function (or because an input was "
                      "returned as-is) and the autograd logic to handle view+inplace would "
                      "override the custom backward associated with the custom Function, leading "
                      "to incorrect gradients. This behavior is forbidden. You can fix this by "
                      "cloning the output of the custom Function.")
    return msg + (" This view is the output of a function that returns multiple views. Such "
                  "functions do not allow the output views to be modified inplace. You should "
                  "replace the inplace operation by an out-of-place one.")


def check_fits(t: Tensor, shape: tuple[int, ...], dtype: D.DType) -> None:
    """An out-of-place result of ``shape`` and ``dtype`` must fit the tensor written in place
    (PyTorch's errors, in its order: the shape, then the dtype)."""
    if tuple(shape) != tuple(t.shape):
        raise RuntimeError(f"output with shape {list(t.shape)} doesn't match the broadcast "
                           f"shape {list(shape)}")
    if dtype.category > t.dtype.category:
        raise RuntimeError(f"result type {D.scalar_type_name(dtype)} can't be cast to "
                           f"the desired output type {D.scalar_type_name(t.dtype)}")


ERR_INPUT_OVERLAP = (
    "unsupported operation: some elements of the input tensor and the written-to tensor refer "
    "to a single memory location. Please clone() the tensor before performing the operation.")


def check_no_overlap(out: Tensor, *inputs: Any) -> None:
    """PyTorch's assert_no_overlap of a written-to tensor with each input tensor (others, a
    number or None, skipped): the same tensor, or two dense ones whose memory ranges meet
    (tensors of other layouts it does not judge)."""
    a = out._data
    for t in inputs:
        if not isinstance(t, Tensor):
            continue
        if out is t:
            raise RuntimeError(ERR_INPUT_OVERLAP)
        b = t._data
        if not a.size or not b.size or not isinstance(a, np.ndarray) \
                or not isinstance(b, np.ndarray):
            continue
        if a.flags.c_contiguous and b.flags.c_contiguous and _may_overlap(a, b):
            raise RuntimeError(ERR_INPUT_OVERLAP)


def _may_overlap(a: np.ndarray, b: np.ndarray) -> bool:
    """Whether two arrays' memory ranges may meet: not where each is, or views, an array of
    its own memory (numpy's ``base`` is the owner of a view's memory; one whose base is None
    is its own), two owners apart; else numpy's bounds test (in C, behind its dispatcher)."""
    ra = a.base
    if ra is None:
        ra = a
    rb = b.base
    if rb is None:
        rb = b
    if ra is not rb and type(ra) is np.ndarray and type(rb) is np.ndarray \
            and ra.base is None and rb.base is None:
        return False
    return bool(np.may_share_memory(a, b))


def check_no_partial_overlap(out: Tensor, *inputs: Any) -> None:
    """PyTorch's assert_no_partial_overlap of an elementwise op's written-to tensor with each
    input tensor: the very same elements (same start, shape and strides) are allowed, memory
    ranges that meet otherwise (a shifted slice, a transpose) are its error; tensors that are
    not dense and free of internal overlap it does not judge."""
    a = out._data
    if not isinstance(a, np.ndarray):
        return
    for t in inputs:
        b = t._data if isinstance(t, Tensor) else None
        # whether their memory ranges meet first: the usual call, two tensors apart, pays
        # nothing more (copy_ took 48 us for 1000 floats, 10 without it)
        if t is out or not isinstance(b, np.ndarray) or not _may_overlap(a, b) \
                or not _dense(a) or not _dense(b):
            continue
        same = (a.__array_interface__["data"][0] == b.__array_interface__["data"][0]
                and a.shape == b.shape and a.strides == b.strides and a.dtype == b.dtype)
        if not same:
            raise RuntimeError(ERR_INPUT_OVERLAP)


def _byte_range(data: np.ndarray) -> tuple[int, int]:
    start = int(data.__array_interface__["data"][0])
    low = sum((n - 1) * s for n, s in zip(data.shape, data.strides) if s < 0)
    high = sum((n - 1) * s for n, s in zip(data.shape, data.strides) if s > 0)
    return start + low, start + high + data.itemsize


def _dense(data: np.ndarray) -> bool:
    """PyTorch's is_non_overlapping_and_dense: its elements fill their memory range exactly."""
    if not data.size:
        return False
    low, high = _byte_range(data)
    return high - low == data.size * data.itemsize and not overlaps_internally(data)


def overlaps_internally(data: Any) -> bool:
    """Whether elements of the array share memory: a stride 0 over more than one element (an
    expand()ed tensor's; an empty array has no element to overlap, though numpy gives every
    axis of it stride 0)."""
    return bool(data.size) and any(s == 0 and n > 1 for s, n in zip(data.strides, data.shape))


def writable_alias(data: Any) -> Any:
    """A writable array of ``data``'s elements (its strides kept): numpy's broadcast views
    (an expand()) are read-only, so the alias is made over its storage's root; PyTorch's
    error where that root is not one writable block."""
    if not isinstance(data, np.ndarray) or data.flags.writeable:
        return data  # (a CuPy view is writable as it is)
    from .memory_names import _storage_geometry

    geometry = _storage_geometry(data)
    if geometry is None or not geometry[0].flags.writeable:
        raise RuntimeError(ERR_INTERNAL_OVERLAP)
    root, offset, _ = geometry
    flat = root.reshape(-1, order="A").view(data.dtype)
    return np.ndarray(data.shape, data.dtype, buffer=flat,
                      offset=offset * data.dtype.itemsize, strides=data.strides)


def _overlap_region(prim: Primitive, t: Tensor, args: tuple[Any, ...],
                    attrs: dict[str, Any]) -> Any:
    """The part of ``t`` (whose elements share memory: an expand()) that ``prim`` writes, as
    PyTorch allows it: ``t[key] = v``'s key, where a basic key's view (what PyTorch's copy_
    writes) has no element twice or the key has index tensors (PyTorch's index_put_, which
    F.setitem warns of); PyTorch's error for any other op."""
    if prim.name != "setitem":
        raise RuntimeError(ERR_INTERNAL_OVERLAP)
    from .prims import fill_key

    key = attrs["key"]
    if len(args) > 1:
        return fill_key(key, [a._data for a in args[1:]])
    if overlaps_internally(t._data[key]):
        raise RuntimeError(ERR_INTERNAL_OVERLAP)
    return key


def _write(t: Tensor, out: Any, region: Any) -> None:
    """``out`` (t's new value) into t's storage: all of it, or only ``region`` of it (a key
    of a tensor whose elements share memory: _overlap_region); a view of an expand() that
    has no element twice (``x.expand(2, 3)[0]``) is written as PyTorch writes it."""
    data = t._data
    if not getattr(data.flags, "writeable", True):  # a view of an expand() (numpy's are
        data = writable_alias(data)  # read-only)
    if region is None:
        data[...] = out
    else:
        data[region] = out[region]


def apply_inplace(prim: Primitive, t: Tensor, *args: Any, **attrs: Any) -> Tensor:
    """Compute ``prim(t, *args)`` out of place, write it into ``t``'s storage, bump the version
    and move ``t``'s history onto the new node (or its base's, through CopySlices)."""
    if func_levels.stack:  # inside a runtime.func grad/jvp level
        check_not_captured(t, prim.name)
    tracer = _trace_state.tracer
    if tracer is not None:
        return _trace_inplace(tracer, prim, t, args, attrs)
    grad_on = _grad_state.enabled
    base = t._base
    if grad_on:
        if t._creation is not None and (t._rg or any(isinstance(a, Tensor) and a._rg
                                                     for a in args)):
            raise RuntimeError(view_rebase_error(t, indirect=False,
                                                 written=_written_view(prim, args, attrs)))
        if t._rg and t._grad_fn is None and base is None:
            # ``leaf[0] = v`` writes PyTorch's select view of the leaf
            raise RuntimeError(ERR_LEAF_INPLACE if _written_view(prim, args, attrs) is None
                               else ERR_VIEW_OF_LEAF_INPLACE)
        if base is not None and base._rg and base._grad_fn is None:
            raise RuntimeError(ERR_VIEW_OF_LEAF_INPLACE)
    if t._vc.inference and not is_inference_mode_enabled():
        raise RuntimeError(ERR_INFERENCE_INPLACE)
    if prim.elementwise:  # TensorIterator's assert_no_partial_overlap of t with each input
        for a in args:
            if isinstance(a, Tensor):
                check_no_partial_overlap(t, *args)
                break
    region = _overlap_region(prim, t, args, attrs) if overlaps_internally(t._data) else None
    needs_graph = grad_on and prim.differentiable and (
        t._rg or any(isinstance(a, Tensor) and a._rg for a in args))
    if not needs_graph and prim.promote == PROMOTE_SAME and _same_dtype(t, args):
        # no history to record (optimizer steps, no_grad): write straight into the storage
        arrays = [a._data if isinstance(a, Tensor) else a for a in args]
        # a bfloat16 tensor's impl is apply's: in float32, rounded once (numpy's floor, trunc
        # and round of ml_dtypes' bfloat16 returned it unchanged, its sign kept a nan)
        impl = _bf16_impl(prim, (t, *args)) if t.dtype is D.bfloat16 else prim.impl
        for a in args:
            if isinstance(a, Tensor) and a.device != t.device:
                break
        else:
            try:
                if t.device == "cpu":
                    quiet = _quiet.current()  # numpy's floating-point warnings: none
                    try:
                        _quiet.ignore()
                        out = impl(np, t._data, *arrays, **attrs)
                    finally:
                        _quiet.restore(quiet)
                else:
                    with device_guard(t.device):
                        out = impl(array_module(t.device), t._data, *arrays, **attrs)
            except ValueError:
                if prim.elementwise:  # operands that do not broadcast: PyTorch's text
                    broadcast_shapes(t.shape, *(a.shape for a in args if isinstance(a, Tensor)))
                raise
            if out.shape == t.shape:
                _write(t, out, region)
                t._vc.v += 1
                if base is not None and t._creation is None:  # (a multi-output view's
                    t._view_version = t._vc.v  # history is PyTorch's error when next asked)
                return t
    src = t
    if needs_graph and 0 in prim.saves:
        # the backward needs the value before the write: keep a private copy of it
        src = Tensor._make(t._data.copy(), t.dtype, t.device, t.grad_fn, t.output_nr)
        src._rg = t._rg
    result = apply(prim, src, *args, **attrs)
    check_fits(t, result.shape, result.dtype)
    _write(t, result._data, region)
    t._vc.v += 1
    if needs_graph:
        node = result._grad_fn
        if base is None:
            old, old_nr = t._grad_fn, t.output_nr
            t._grad_fn = node
            t.output_nr = 0
            t._rg = True
            _move_retains_grad(t, old, old_nr)
        else:
            _copy_slices(t, node)  # type: ignore[arg-type]
    elif base is not None and t._creation is None:
        t._view_version = t._vc.v
    return t


def _trace_inplace(tracer: Any, prim: Primitive, t: Tensor, args: tuple[Any, ...],
                   attrs: dict[str, Any]) -> Tensor:
    """Capture: an in-place op becomes a new graph value that the storage now holds."""
    grad_on = _grad_state.enabled
    if grad_on and t._creation is not None and (
            t._rg or any(isinstance(a, Tensor) and a._rg for a in args)):
        raise RuntimeError(view_rebase_error(t, indirect=False,
                                             written=_written_view(prim, args, attrs)))
    if grad_on and t._rg and t._grad_fn is None:
        raise RuntimeError(ERR_LEAF_INPLACE)
    meta = type(t._data) is MetaArray
    if not meta and overlaps_internally(t._data):  # an argument that is an expand()
        if prim.name == "fill":  # allowed, as PyTorch's (functional._fill_overlapping)
            raise GraphBreak("fill_ of a tensor whose elements share memory (an expand())")
        raise RuntimeError(ERR_INTERNAL_OVERLAP)
    storage = tracer.storage_of(t)
    needs_graph = grad_on and prim.differentiable and (
        t._rg or any(isinstance(a, Tensor) and a._rg for a in args))
    if needs_graph and not meta:
        raise GraphBreak(f"in-place {prim.name}_ recording history on a tensor from outside "
                         "the step")
    src = t
    if needs_graph and 0 in prim.saves:
        # the backward needs the value before the write: an alias of the old graph value
        src = Tensor._make(MetaArray(t.shape, t.dtype.np, storage.node), t.dtype,
                           tracer.device_of(t), t.grad_fn, t.output_nr)
        src._rg = t._rg
    result = apply(prim, src, *args, **attrs)
    check_fits(t, result.shape, result.dtype)
    value = result if result.dtype is t.dtype else apply(REGISTRY["cast"], result, dtype=t.dtype)
    if storage.view_of is not None:
        tracer.write_view(t, value, f"in-place {prim.name}_", history=needs_graph)
    else:
        tracer.write(t, value)
    if not meta:
        tracer.bump_version(t)
    else:
        t._vc.v += 1
        if needs_graph:
            old, old_nr = t._grad_fn, t.output_nr
            t._grad_fn = value._grad_fn
            t.output_nr = 0
            t._rg = True
            _move_retains_grad(t, old, old_nr)
    return t


def _move_retains_grad(t: Tensor, old: Node | None, old_nr: int) -> None:
    """PyTorch's rebase_history: a tensor that retains its grad (``retain_grad``) keeps the
    hook that stores it on the node its in-place write made it the output of, so its .grad is
    the gradient of its new value (on the old node, it was the old value's)."""
    if not t._retains_grad or old is None or old is t._grad_fn:
        return
    hooks = old._retains_grad_hooks
    hook = hooks.pop(old_nr, None) if hooks else None
    if hook is not None and t._grad_fn is not None:
        t._grad_fn.set_retains_grad_hook(t.output_nr, hook)


def _view_ctx(step: tuple[Any, ...], edge: Edge | None, device: str) -> PrimitiveBackward:
    prim, attrs, in_shape, out_shape, dtype = step
    node = PrimitiveBackward.__new__(node_class(prim.backward_name))
    Node.__init__(node, [edge], [Meta(out_shape, dtype, device)])
    node.prim = prim
    node.attrs = attrs
    node.metas = [Meta(in_shape, dtype, device)]
    node.saved = {}
    return node


def _view_of(chain: tuple[Any, ...], g: Tensor) -> Tensor:
    for prim, attrs, *_ in chain:
        g = apply(prim, g, **attrs)
    return g


def view_inverse(step: tuple[Any, ...], value: Tensor) -> Tensor:
    """The base that a view ``step`` maps onto ``value``, for a view that shows every element
    of its base once (a transpose, permute or reshape): its adjoint is its inverse."""
    return _view_adjoint((step,), value)


def _view_adjoint(chain: tuple[Any, ...], g: Tensor) -> Tensor:
    for step in reversed(chain):
        ctx = _view_ctx(step, None, g.device)
        g = step[0].backward(ctx, g)[0]
    return g


class CopySlices(Node):
    """History of a base after an in-place op on its view: outside the view the gradient
    passes through; inside, it goes through the in-place op's backward ``fn``."""

    __slots__ = ("chain", "fn")

    def __init__(self, base: Tensor, chain: tuple[Any, ...], fn: Node) -> None:
        base_edge = gradient_edge(base) if base._rg else None
        super().__init__([base_edge, *fn.next_edges[1:]],
                         [Meta(base.shape, base.dtype, base.device)])
        self.chain = chain
        self.fn = fn

    def apply(self, grads: list[Any]) -> list[Any]:
        g = grads[0]
        if g is None:
            return [None] * len(self.next_edges)
        sub = _view_of(self.chain, g)
        res = validate_outputs(self.fn, list(self.fn.apply([sub])))
        base_grad = g - _view_adjoint(self.chain, sub)
        if res[0] is not None:
            base_grad = base_grad + _view_adjoint(self.chain, res[0])
        return [base_grad, *res[1:]]

    def release_variables(self) -> None:
        self.fn.release_variables()


def _copy_slices(view: Tensor, fn: Node) -> None:
    base = view._base
    assert base is not None
    old, old_nr = base._grad_fn, base.output_nr
    base._grad_fn = CopySlices(base, view._view_chain, fn)
    base.output_nr = 0
    base._rg = True
    _move_retains_grad(base, old, old_nr)
    regenerate_view_history(view)


def regenerate_view_history(view: Tensor) -> None:
    """Rebuild a view's grad_fn from its base's current history (after an in-place write)."""
    base = view._base
    assert base is not None
    if view._creation is not None and (view._grad_fn is not None or base._rg):
        raise RuntimeError(view_rebase_error(view, indirect=True))
    view._view_version = view._vc.v
    if not base._rg or base._grad_fn is None:
        return
    edge: Edge = gradient_edge(base)
    for step in view._view_chain:
        node = _view_ctx(step, edge, base.device)
        edge = Edge(node, 0)
    edge.function.__class__ = node_class("AsStridedBackward0")  # PyTorch's name for it
    old, old_nr = view._grad_fn, view.output_nr
    view._grad_fn = edge.function
    view.output_nr = 0
    view._rg = True
    _move_retains_grad(view, old, old_nr)
