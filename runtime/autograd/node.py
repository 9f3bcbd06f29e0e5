"""The backward graph: Node, Edge, saved tensors, AccumulateGrad, GraphRoot.

Follows torch/csrc/autograd/function.h: a Node takes the gradients of its forward outputs
and returns the gradients of its forward inputs, routed along ``next_edges``.
"""

from __future__ import annotations

import itertools
import re
import sys
import threading
import weakref
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, NamedTuple

from ..tracing import _state as _trace_state
from . import anomaly
from .grad_mode import no_grad

if TYPE_CHECKING:
    from ..tensor import Tensor

ERR_BACKWARD_TWICE = (
    "Trying to backward through the graph a second time (or directly access saved tensors after "
    "they have already been freed). Saved intermediate values of the graph are freed when you call "
    ".backward() or autograd.grad(). Specify retain_graph=True if you need to backward through the "
    "graph a second time or if you need to access saved tensors after calling backward."
)

ERR_INFERENCE_SAVED = (
    "Inference tensors cannot be saved for backward. Please do not use Tensors created in "
    "inference mode in computation tracked by autograd. To work around this, you can make a "
    "clone to get a normal tensor and use it in autograd, or use `torch.no_grad()` instead of "
    "`torch.inference_mode()`."
)

UINT64_MAX = (1 << 64) - 1

_BACKWARD_SUFFIX = re.compile(r"Backward\d*$")


class Edge(NamedTuple):
    function: Node
    input_nr: int


class _Seq(threading.local):
    def __init__(self) -> None:
        self.counter = itertools.count()


_seq = _Seq()


class RemovableHandle:
    _ids = itertools.count()

    def __init__(self, hooks: dict[int, Callable[..., Any]]) -> None:
        self._hooks_ref = weakref.ref(hooks) if hooks is not None else None
        self.id = next(RemovableHandle._ids)
        if _trace_state.tracer is not None:  # registered by a step being captured
            _trace_state.tracer.on_hook(self)

    def remove(self) -> None:
        hooks = self._hooks_ref() if self._hooks_ref else None
        if hooks is not None and hooks.pop(self.id, None) is not None \
                and type(hooks) is LeafHookDict:
            _leaf_hooks_version[0] += 1

    def __enter__(self) -> RemovableHandle:
        return self

    def __exit__(self, *exc: object) -> None:
        self.remove()


class _HookDict(dict):  # weakref-able dict of hooks, ordered by registration
    pass


class LeafHookDict(_HookDict):
    """A leaf tensor's hooks (``register_hook``, ``register_post_accumulate_grad_hook``):
    each one added or removed counts (``leaf_hooks_version``), so that a compiled step, whose
    plan ran the hooks its leaves had when captured, captures again."""


_leaf_hooks_version = [0]


def leaf_hooks_version() -> int:
    """Bumped by every hook added to or removed from a leaf tensor."""
    return _leaf_hooks_version[0]


def add_hook(hooks: _HookDict, fn: Callable[..., Any]) -> RemovableHandle:
    handle = RemovableHandle(hooks)
    hooks[handle.id] = fn
    if type(hooks) is LeafHookDict:
        _leaf_hooks_version[0] += 1
    return handle


# PyTorch's nodes written by hand in C++, whose name() is namespaced (their Python type's
# __name__ is not)
CPP_NODE_NAMES = frozenset({"AccumulateGrad", "CopySlices", "CopyBackwards", "GraphRoot",
                            "Error", "NotImplemented", "DelayedError", "Identity"})


class Meta(NamedTuple):
    """What a gradient flowing into a node's input must look like."""

    shape: tuple[int, ...]
    dtype: Any
    device: str


class Node:
    """A backward function. Subclasses implement ``apply(grads) -> grads``."""

    # hot fields in slots; hooks and the anomaly trace are rare, so they default at class
    # level and land in the instance __dict__ only when set
    __slots__ = ("next_edges", "_seq_nr", "topological_nr", "input_metas", "__weakref__",
                 "__dict__")
    _pre_hooks: _HookDict | None = None
    _post_hooks: _HookDict | None = None
    _tensor_pre_hooks: dict[int, _HookDict] | None = None
    _retains_grad_hooks: dict[int, Callable[[Any], None]] | None = None
    _trace: str | None = None

    def __init__(self, next_edges: list[Edge | None], input_metas: list[Meta]) -> None:
        self.next_edges = next_edges
        self._seq_nr = next(_seq.counter)
        topo = 0
        for e in next_edges:
            if e is not None and e[0].topological_nr >= topo:
                topo = e[0].topological_nr + 1
        self.topological_nr = topo
        self.input_metas = input_metas
        if anomaly._global_enabled:
            anomaly.record(self)

    # --- identity -------------------------------------------------------------------------
    def name(self) -> str:
        """PyTorch's node name: its class's, qualified as PyTorch's hand-written C++ nodes
        are (``torch::autograd::AccumulateGrad``)."""
        name = type(self).__name__
        return f"torch::autograd::{name}" if name in CPP_NODE_NAMES else name

    def sequence_nr(self) -> int:
        return self._seq_nr

    def _sequence_nr(self) -> int:  # PyTorch's Python name for it
        return self._seq_nr

    @property
    def num_inputs(self) -> int:
        return len(self.input_metas)

    @property
    def metadata(self) -> dict[Any, Any]:
        """A dict that stays with the node, for the user's own annotations (PyTorch's)."""
        return self.__dict__.setdefault("_metadata", {})

    @property
    def _input_metadata(self) -> list[Meta]:
        """PyTorch's: what each gradient flowing into the node must look like (its shape,
        dtype and device), one per output of the forward."""
        return list(self.input_metas)

    @property
    def next_functions(self) -> tuple[tuple[Node | None, int], ...]:
        return tuple((e.function, e.input_nr) if e else (None, 0) for e in self.next_edges)

    def __repr__(self) -> str:
        return f"<{type(self).__name__} object at {id(self):#x}>"

    # --- work -----------------------------------------------------------------------------
    def __call__(self, *grads: Any) -> Any:
        """PyTorch's ``grad_fn(*grads)``: the node's backward applied to one gradient per
        output of its forward (None for an undefined one), without hooks; a lone result is
        returned as it is, several as a tuple."""
        from ..tensor import Tensor

        n = len(self.input_metas)
        if len(grads) != n:
            raise TypeError(f"expected {n} arguments, got {len(grads)} instead")
        for i, g in enumerate(grads):
            if g is not None and not isinstance(g, Tensor):
                raise TypeError(f"argument {i} is not a Variable")
        if all(g is None for g in grads):
            out: list[Any] = [None] * len(self.next_edges)
        else:
            out = list(self.apply(list(grads)))
        return out[0] if len(out) == 1 else tuple(out)

    def apply(self, grads: list[Any]) -> list[Any]:
        raise NotImplementedError(f"{self.name()} does not implement apply")

    def release_variables(self) -> None:
        """Free saved tensors after a backward without retain_graph."""

    # --- hooks ----------------------------------------------------------------------------
    def register_prehook(self, fn: Callable[..., Any]) -> RemovableHandle:
        if self._pre_hooks is None:
            self._pre_hooks = _HookDict()
        return add_hook(self._pre_hooks, fn)

    def register_hook(self, fn: Callable[..., Any]) -> RemovableHandle:
        if self._post_hooks is None:
            self._post_hooks = _HookDict()
        return add_hook(self._post_hooks, fn)

    def add_tensor_pre_hook(self, output_nr: int, fn: Callable[..., Any]) -> RemovableHandle:
        if self._tensor_pre_hooks is None:
            self._tensor_pre_hooks = {}
        hooks = self._tensor_pre_hooks.setdefault(output_nr, _HookDict())
        return add_hook(hooks, fn)

    def set_retains_grad_hook(self, output_nr: int, fn: Callable[[Any], None] | None) -> None:
        if self._retains_grad_hooks is None:
            self._retains_grad_hooks = {}
        if fn is None:
            self._retains_grad_hooks.pop(output_nr, None)
        else:
            self._retains_grad_hooks[output_nr] = fn


class _SavedTensorsHooks(threading.local):
    """This thread's saved_tensors_hooks (pack, unpack) pairs, innermost last, and the message
    of an active disable_saved_tensors_hooks."""

    def __init__(self) -> None:
        self.stack: list[tuple[Callable[[Any], Any], Callable[[Any], Any]]] = []
        self.disabled: str | None = None


saved_tensors_hooks_state = _SavedTensorsHooks()


ERR_PACK_INPLACE = (
    "A saved tensor pack hook is modifying its input in place. Tensors provided as input to "
    "pack hook cannot be modified by in-place operations as this can lead to unexpected "
    "side-effects. Please open an issue if you need to perform in-place operations on the "
    "input to a pack hook.")


class SavedTensor:
    """A tensor saved for backward, with the version it had when saved (SavedVariable).

    An output of the node that saves it is kept as its array only, so no reference cycle
    node -> tensor -> node forms; unpacking rebuilds the tensor with the node as grad_fn.
    Under saved_tensors_hooks only what the pack hook returned is kept (see _pack).
    """

    __slots__ = ("_tensor", "_vc", "_version", "_out", "_packed", "_had_grad_fn")

    def __init__(self, t: Tensor, is_output: bool) -> None:
        vc = self._vc = t._vc
        if vc.inference:
            raise RuntimeError(ERR_INFERENCE_SAVED)
        self._version = vc.v
        self._packed: tuple[Any, ...] | None = None
        # an input that had history then (PyTorch's not is_leaf_): detach_ of it is refused
        self._had_grad_fn = t._grad_fn is not None
        if saved_tensors_hooks_state.stack:
            self._pack(t, is_output, *saved_tensors_hooks_state.stack[-1])
        elif is_output:
            self._tensor = None
            self._out = (t._data, t._rg, t.output_nr, t.dtype, t.device)
        else:
            self._tensor = t
            self._out = None

    def _pack(self, t: Tensor, is_output: bool, pack: Callable[[Any], Any],
              unpack: Callable[[Any], Any]) -> None:
        """Keep the pack hook's result, and where the unpacked tensor's gradient goes: the
        saving node (an output), t's grad_fn, or a leaf's accumulator (held weakly, as
        PyTorch's). Versions are not checked through hooks (nor by PyTorch); a pack hook
        that writes into its input is refused."""
        if _trace_state.tracer is not None:
            from ..tracing import GraphBreak

            raise GraphBreak("saved_tensors_hooks run Python on every tensor saved for backward")
        self._tensor = None
        self._out = None
        grad_fn = None if is_output else t.grad_fn
        acc = (weakref.ref(grad_accumulator(t)) if t._rg and not is_output and grad_fn is None
               else None)
        version = t._vc.v
        with no_grad():  # as PyTorch: what the pack hook computes is not recorded
            packed = pack(t)
        if t._vc.v != version:
            raise RuntimeError(ERR_PACK_INPLACE)
        self._packed = (unpack, packed, is_output and t._rg, grad_fn, t.output_nr, acc)

    def register_hooks(self, pack_hook: Callable[[Any], Any],
                       unpack_hook: Callable[[Any], Any]) -> None:
        """PyTorch's SavedTensor.register_hooks (``grad_fn._raw_saved_self``): the saved
        tensor packed now by ``pack_hook``, and unpacked by ``unpack_hook`` when read."""
        if not (callable(pack_hook) and callable(unpack_hook)):
            raise TypeError("register_hooks(): incompatible function arguments: pack_hook and "
                            "unpack_hook must be callables")
        if self._vc is None:
            raise RuntimeError(
                "Calling register_hooks on a saved tensor after it has been freed. Saved "
                "intermediate values of the graph are freed when you call .backward() or "
                "autograd.grad(). Specify retain_graph=True if you need to backward through the "
                "graph a second time or if you need to access saved variables after calling "
                "backward.")
        if self._packed is not None:
            raise RuntimeError("Calling register_hooks on a saved tensor whose hooks have "
                               "already been set. Hint: only one pair of hooks is allowed at a "
                               "time.")
        is_output = self._out is not None
        t = self.peek()
        if is_output:
            t._rg = self._out[1]  # type: ignore[index]
        self._pack(t, is_output, pack_hook, unpack_hook)

    def _unpack_hooked(self, node: Node) -> Tensor:
        from ..tensor import Tensor

        unpack, packed, from_node, grad_fn, output_nr, acc = self._packed  # type: ignore[misc]
        data = unpack(packed)
        if not isinstance(data, Tensor):
            raise TypeError("Output of saved tensor unpack_hook expected to be a Tensor but got "
                            f"result of type {type(data).__name__}")
        if from_node:
            grad_fn = node
        if grad_fn is None and acc is None:
            return data
        # its own version counter, not the saved tensor's (PyTorch's: an in-place change of
        # what unpack returned does not bump the original's version)
        t = Tensor._make(data._data, data.dtype, data.device, grad_fn, output_nr, data._vc)
        if acc is not None:
            t._rg = True
            t._grad_acc = acc  # gradients reach the saved leaf's .grad
        return t

    def unpack(self, node: Node) -> Tensor:
        if self._vc is None:
            raise RuntimeError(ERR_BACKWARD_TWICE)
        if self._packed is not None:
            return self._unpack_hooked(node)
        if self._vc.v != self._version:
            raise RuntimeError(self._modified_error(node))
        if self._out is None:
            t = self._tensor
            if t._grad_fn is None and self._had_grad_fn:  # type: ignore[union-attr]
                raise RuntimeError(
                    "Trying to use a saved tensor that has been detached in-place, i.e. with "
                    ".detach_().This is not supported, please use out-of-place `.detach()` "
                    "instead")
            return t  # type: ignore[return-value]
        from ..tensor import Tensor

        data, requires_grad, output_nr, dtype, device = self._out
        return Tensor._make(data, dtype, device, node if requires_grad else None, output_nr,
                            self._vc)

    def _modified_error(self, node: Node) -> str:
        """PyTorch's text for a saved tensor changed in place since it was saved: an output
        names the node that saved it, any other tensor its grad_fn now (a leaf, none); the
        forward op's name is the node's without "Backward"."""
        t = self.peek()
        fn = node if self._out else self._tensor.grad_fn  # type: ignore[union-attr]
        which = (f", which is output {t.output_nr} of {_BACKWARD_SUFFIX.sub('', fn.name())},"
                 if fn is not None else "")
        hint = ("the backtrace further above shows the operation that failed to compute its "
                "gradient. The variable in question was changed in there or anywhere later. Good "
                "luck!" if anomaly._global_enabled else
                "enable anomaly detection to find the operation that failed to compute its "
                "gradient, with runtime.autograd.set_detect_anomaly(True, check_nan=False).")
        return ("one of the variables needed for gradient computation has been modified by an "
                f"inplace operation: [{t.type()} {list(t.shape)}]{which} is at version "
                f"{self._vc.v}; expected version {self._version} instead. Hint: {hint}")

    def peek(self) -> Tensor:
        from ..tensor import Tensor

        if self._out is None:
            return self._tensor  # type: ignore[return-value]
        data, _, output_nr, dtype, device = self._out
        return Tensor._make(data, dtype, device, None, output_nr, self._vc)

    def release(self) -> None:
        self._vc = None  # type: ignore[assignment]
        self._tensor = None
        self._out = None
        self._packed = None


# Tensor._grad_dtype of a tensor whose grad_dtype was never set: its own dtype
_DEFAULT_GRAD_DTYPE: Any = object()


class AccumulateGrad(Node):
    """Sink of a leaf: adds the incoming gradient into ``variable.grad`` (PyTorch's rules).

    Backward calls on one graph from several threads meet here: the read-modify-write of
    ``.grad`` holds the node's lock, as PyTorch holds its mutex, so no gradient is lost."""

    __slots__ = ("variable", "lock")

    def __init__(self, variable: Tensor) -> None:
        # Node.__init__ less its work for edges: a leaf's sink has none, and takes no sequence
        # number (PyTorch's is UINT64_MAX), so making one does not shift later nodes' numbers.
        # An accumulator lives as long as the graph that holds it (a weak reference from the
        # leaf, as PyTorch's), so one is made per leaf per forward: on the hot path.
        self.next_edges = []
        self._seq_nr = UINT64_MAX
        self.topological_nr = 0
        grad_dtype = variable._grad_dtype  # PyTorch's grad_dtype: a class default unless set
        self.input_metas = [tuple.__new__(Meta, (
            variable._data.shape,
            variable.dtype if grad_dtype is _DEFAULT_GRAD_DTYPE else grad_dtype,
            variable.device))]
        if anomaly._global_enabled:
            anomaly.record(self)
        self.variable = variable
        self.lock = threading.Lock()

    def apply(self, grads: list[Any]) -> list[Any]:
        if grads[0] is None:
            return []
        with self.lock:
            self._accumulate(grads[0])
        hooks = self.variable.__dict__.get("_post_accumulate_grad_hooks")
        if hooks:
            for hook in list(hooks.values()):
                r = hook(self.variable)
                if r is not None:  # PyTorch's texts for a hook that returns something
                    from ..tensor import Tensor

                    if not isinstance(r, Tensor):
                        raise TypeError("expected Variable, but hook returned "
                                        f"'{type(r).__name__}'")
                    raise RuntimeError("Tensor post accumulate grad hooks should return None.")
        return []

    def _accumulate(self, new: Tensor) -> None:
        from .grad_mode import is_grad_enabled

        var = self.variable
        old = var.grad
        tracer = _trace_state.tracer
        if tracer is not None:
            # capturing: .grad writes go to the tracer, which plans them as state updates. A
            # first .grad is memory of its own in eager mode (a copy, or a buffer nobody else
            # sees), so it is a storage of its own in the capture too: ``(a + b).backward()``
            # gives a and b one gradient value, and an in-place write to a.grad (a clipping
            # loop's mul_) must not show through b.grad
            var.grad = tracer.own_storage(new if is_grad_enabled() else new.detach()) \
                if old is None else old + new
            return
        if old is None:
            # create_graph keeps the new grad's history; otherwise store a detached value,
            # stealing the buffer when nobody else can see it (PyTorch's rule), else a copy
            if is_grad_enabled():
                # PyTorch copies it into the parameter's layout, recording the copy
                # (CopyBackwards), whose history the new grad keeps
                grad = _clone_obey_contract(new, var, fill=False)
                grad.copy_(new)
                var.grad = grad
            elif _exclusively_owned(new) and _obeys_layout_contract(new._data, var._data):
                var.grad = new.detach()
            else:
                var.grad = _clone_obey_contract(new, var)
        elif is_grad_enabled():
            var.grad = old + new
        else:
            data = old._data
            if not getattr(getattr(data, "flags", None), "writeable", True):
                from ..ops.inplace import ERR_INTERNAL_OVERLAP, overlaps_internally, \
                    writable_alias

                if overlaps_internally(data):  # a .grad set to an expand(): PyTorch's add_
                    raise RuntimeError(ERR_INTERNAL_OVERLAP)
                data = writable_alias(data)  # (numpy's broadcast views are read-only)
            data += new._data  # in place, as PyTorch does outside create_graph
            old._vc.v += 1


def register_post_accumulate_grad_hook(t: Tensor, hook: Callable[[Tensor], None]
                                       ) -> RemovableHandle:
    """PyTorch's Tensor.register_post_accumulate_grad_hook: ``hook(t)`` runs after each
    backward has accumulated into the leaf's ``.grad``."""
    if not t.requires_grad:
        raise RuntimeError("cannot register a hook on a tensor that doesn't require gradient")
    if t.grad_fn is not None:
        raise RuntimeError("post accumulate grad hooks cannot be registered on non-leaf tensors")
    hooks = t.__dict__.setdefault("_post_accumulate_grad_hooks", LeafHookDict())
    return add_hook(hooks, hook)


def _dense_order(arr: Any) -> bool:
    """PyTorch's is_non_overlapping_and_dense: the elements tile one block, in some order of
    the dims."""
    if arr.size == 0:
        return True
    expected = arr.itemsize
    for stride, size in sorted((abs(st), n) for st, n in zip(arr.strides, arr.shape) if n != 1):
        if stride != expected:
            return False
        expected *= size
    return all(st >= 0 for st in arr.strides)


def _obeys_layout_contract(grad: Any, var: Any) -> bool:
    """PyTorch's gradient layout contract: a dense parameter's .grad has its strides (dims of
    size 1 aside); another's is contiguous."""
    if not _dense_order(var):
        return bool(grad.flags.c_contiguous)
    for n, gs, vs in zip(grad.shape, grad.strides, var.strides):
        if n != 1 and gs != vs:
            return False
        if n == 1 and (gs == 0 or vs == 0):
            return False
    return True


def _clone_obey_contract(new: Tensor, var: Tensor, fill: bool = True) -> Tensor:
    """A copy of ``new`` laid out as PyTorch's clone_obey_contract: the dense parameter's
    strides (channels_last, transposed), else contiguous."""
    from .._device import array_module

    xp = array_module(new.device)
    src = var._data
    # (order K: a dense array's strides, its dims' order kept)
    dtype = new._data.dtype  # a grad_dtype other than the parameter's: the grad's own
    out = (xp.empty_like(src, dtype=dtype, order="K") if _dense_order(src)
           else xp.empty(src.shape, dtype))
    if fill:
        out[...] = new._data
    from ..tensor import Tensor

    return Tensor._make(out, new.dtype, new.device)


def _exclusively_owned(t: Tensor) -> bool:
    """Whether nobody else can see ``t``'s memory, so AccumulateGrad may keep it as .grad."""
    # references to t: the engine's input buffer, apply's ``new``, this frame, the call;
    # to data and base: their owner, this frame's local, the call
    data = t._data
    if sys.getrefcount(t) > 4 or sys.getrefcount(data) > 3:
        return False
    flags = getattr(data, "flags", None)
    # CuPy's flags have no writeable (its arrays always are)
    if flags is None or not getattr(flags, "writeable", True) or not flags.c_contiguous:
        return False
    base = data.base
    if base is None:
        return True
    # a contiguous view of a whole array that nobody else sees is as good; the view's own
    # base tensor (kept by the view alone) may hold that array too
    owner = t._base
    owner_refs = 1 if owner is not None and owner._data is base else 0
    if owner_refs and sys.getrefcount(owner) > 3:  # t._base, this local, the call
        return False
    return (type(base) is type(data) and base.size == data.size
            and sys.getrefcount(base) <= 3 + owner_refs)


class GraphRoot(Node):
    """Dummy root that hands the initial gradients to several roots."""

    __slots__ = ("outputs",)

    def __init__(self, edges: list[Edge], grads: list[Any]) -> None:
        super().__init__(list(edges), [])
        self.outputs = grads

    def apply(self, grads: list[Any]) -> list[Any]:
        return list(self.outputs)


def gradient_edge(t: Tensor) -> Edge | None:
    """Where a gradient for ``t`` goes: its grad_fn, or its leaf's AccumulateGrad; None for
    a view made in no_grad mode of a tensor that requires grad (PyTorch's view with creation
    meta NO_GRAD_MODE: it requires grad, but it is no leaf with an accumulator, and the
    gradient of an op on it goes nowhere)."""
    fn = t._grad_fn if t._base is None else t.grad_fn  # a view may need its history rebuilt
    if fn is not None:
        return tuple.__new__(Edge, (fn, t.output_nr))
    if t._creation == NO_GRAD_VIEW:
        return None
    return tuple.__new__(Edge, (grad_accumulator(t), 0))


# Tensor._creation of a view made in no_grad mode of a tensor that requires grad
NO_GRAD_VIEW = "no_grad"


class Unreached(Node):
    """The node an input of ``grad()`` or ``backward(inputs=)`` without a gradient edge stands
    for (a view made in no_grad mode): no graph reaches it, so its gradient is None (PyTorch's
    Identity node there)."""

    __slots__ = ()

    def __init__(self) -> None:
        super().__init__([], [])

    def apply(self, grads: list[Any]) -> list[Any]:
        return list(grads)


def input_edge(t: Tensor) -> Edge:
    """The edge whose gradient ``grad()`` or ``backward(inputs=)`` captures for ``t``."""
    edge = gradient_edge(t)
    return tuple.__new__(Edge, (Unreached(), 0)) if edge is None else edge


# one lock for making accumulators (PyTorch's grad_accumulator_lock): a double backward run
# from two threads must not give one leaf two AccumulateGrads, whose locks would not exclude
# each other
_accumulator_lock = threading.Lock()


def grad_accumulator(t: Tensor) -> AccumulateGrad:
    ref = t._grad_acc
    acc = ref() if ref is not None else None
    if acc is None:
        with _accumulator_lock:
            ref = t._grad_acc
            acc = ref() if ref is not None else None
            if acc is None:
                acc = AccumulateGrad(t)
                t._grad_acc = weakref.ref(acc)
    return acc
