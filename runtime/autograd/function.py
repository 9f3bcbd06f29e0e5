"""rt.autograd.Function: user-defined forward/backward (PyTorch's custom Function)."""

from __future__ import annotations

import threading
import warnings
from typing import Any

from .grad_mode import _state as _grad_state
from .node import Meta, Node, SavedTensor, gradient_edge


class FunctionCtx:
    def __init__(self) -> None:
        self._to_save: tuple[Any, ...] = ()
        self._saved: list[SavedTensor | None] | None = None
        self._dirty: tuple[Any, ...] = ()
        self._non_differentiable: tuple[Any, ...] = ()
        self.materialize_grads = True
        # PyTorch's: False leaves the grads of non-differentiable outputs None
        self._materialize_non_diff_grads = True
        self.needs_input_grad: tuple[bool, ...] = ()
        self._node: BackwardCFunction | None = None

    def save_for_backward(self, *tensors: Any) -> None:
        self._to_save = tensors

    def save_for_forward(self, *tensors: Any) -> None:
        """PyTorch's: tensors kept for a forward-mode jvp (there is none here to use them)."""
        from ..tensor import Tensor

        for t in tensors:
            if t is not None and not isinstance(t, Tensor):
                raise AssertionError("save_for_forward expects all arguments to be tensors; you "
                                     "should save non-tensors as attributes on ctx.")
        self.saved_for_forward = tensors

    def mark_dirty(self, *tensors: Any) -> None:
        self._dirty = tensors

    def mark_non_differentiable(self, *tensors: Any) -> None:
        self._non_differentiable = tensors

    def set_materialize_grads(self, value: bool) -> None:
        self.materialize_grads = value

    @property
    def saved_variables(self) -> tuple[Any, ...]:
        """PyTorch's deprecated name for saved_tensors."""
        warnings.warn("'saved_variables' is deprecated; use 'saved_tensors'", DeprecationWarning,
                      stacklevel=2)
        return self.saved_tensors

    @property
    def saved_tensors(self) -> tuple[Any, ...]:
        if self._saved is None:  # PyTorch's: until forward has returned, what
            return tuple(getattr(self, "saved_for_forward", ()))  # save_for_forward kept
        return tuple(s.unpack(self._node) if s is not None else None  # type: ignore[arg-type]
                     for s in self._saved)


class BackwardCFunction(Node):
    """The node of one Function.apply call; its name is the Function's plus 'Backward'. It has
    an edge per tensor argument of forward; ``is_tensor`` marks which arguments those were."""

    __slots__ = ("fn_cls", "ctx", "is_tensor", "non_diff")

    def __init__(self, fn_cls: type, ctx: FunctionCtx, next_edges: list[Any],
                 metas: list[Meta], is_tensor: tuple[bool, ...]) -> None:
        super().__init__(next_edges, metas)
        self.fn_cls = fn_cls
        self.ctx = ctx
        self.is_tensor = is_tensor
        # outputs without a gradient (non-tensors, non-differentiable tensors): PyTorch's
        # undefined input metadata
        self.non_diff: frozenset[int] = frozenset()

    def name(self) -> str:
        return f"{self.fn_cls.__name__}Backward"

    def __repr__(self) -> str:  # a Python class's repr, as PyTorch's
        return f"<{type(self).__module__}.{type(self).__qualname__} object at {id(self):#x}>"

    @property
    def saved_tensors(self) -> tuple[Any, ...]:
        return self.ctx.saved_tensors

    @property
    def needs_input_grad(self) -> tuple[bool, ...]:
        """PyTorch's node is the ctx: ``y.grad_fn.needs_input_grad`` is forward's."""
        return self.ctx.needs_input_grad

    def apply(self, grads: list[Any]) -> list[Any]:
        from ..creation import zeros

        ctx = self.ctx
        if ctx.materialize_grads:
            grads = [g if g is not None or not self._materializes(i)
                     else zeros(m.shape, dtype=m.dtype, device=m.device)
                     for i, (g, m) in enumerate(zip(grads, self.input_metas))]
        out = self.fn_cls._backward_fn()(ctx, *grads)
        if not isinstance(out, tuple):
            out = (out,)
        from ..tensor import Tensor

        for o in out:
            if o is not None and not isinstance(o, Tensor):
                raise RuntimeError(f"expected Variable or None (got {type(o).__name__})")
        n = len(self.is_tensor)
        if len(out) != n:
            if len(out) > n and all(o is None for o in out[n:]):
                out = out[:n]
            else:
                raise RuntimeError(f"function {self.name()} returned an incorrect number of "
                                   f"gradients (expected {n}, got {len(out)})")
        grads = []
        for i, (o, is_tensor) in enumerate(zip(out, self.is_tensor)):
            if is_tensor:
                grads.append(o)
            elif o is not None:
                raise RuntimeError(f"function {self.name()} returned a gradient different than "
                                   f"None at position {i + 1}, but the corresponding forward "
                                   "input was not a Variable")
        return [g if e is not None else None for g, e in zip(grads, self.next_edges)]

    def _materializes(self, i: int) -> bool:
        """PyTorch's PyNode::apply: a missing grad becomes zeros, but a non-tensor output's
        stays None, and a non-differentiable output's too under
        ``ctx._materialize_non_diff_grads = False``."""
        if self.input_metas[i].dtype is None:
            return False
        return i not in self.non_diff or self.ctx._materialize_non_diff_grads

    def release_variables(self) -> None:
        if self.ctx._saved is not None:
            for s in self.ctx._saved:
                if s is not None:
                    s.release()


class _FuncTransforms(threading.local):
    """Per thread, the runtime.func transforms running now, outermost first ("grad" for a
    reverse-mode level, "jvp" for a forward-mode one, "vmap"): PyTorch's functorch interpreter
    stack, as far as a custom Function's checks read it."""

    def __init__(self) -> None:
        self.stack: list[str] = []


func_transforms = _FuncTransforms()

_EXTENDING_FUNC = ("For more details, please see "
                   "https://pytorch.org/docs/main/notes/extending.func.html")


def _check_func_transforms(cls: type[Function], separate: bool) -> None:
    """PyTorch's refusals of a Function inside functorch transforms: one without
    setup_context in any of them; inside vmap, one with neither a vmap rule nor
    generate_vmap_rule, or with both; inside forward mode, one without a jvp."""
    if not separate:
        raise RuntimeError("In order to use an autograd.Function with functorch transforms (vmap, "
                           "grad, jvp, jacrev, ...), it must override the setup_context "
                           f"staticmethod. {_EXTENDING_FUNC}")
    if "vmap" in func_transforms.stack:
        _check_vmap_support(cls)
    if "jvp" in func_transforms.stack and cls.jvp is Function.jvp:
        raise NotImplementedError("You must implement the jvp function for custom "
                                  "autograd.Function to use it with forward mode AD.")


def _check_vmap_support(cls: type[Function]) -> None:
    """PyTorch's: inside vmap, a Function has a vmap staticmethod or generate_vmap_rule=True,
    one of the two."""
    own_vmap = cls.vmap is not Function.vmap
    if cls.generate_vmap_rule and own_vmap:
        raise RuntimeError(f"You tried to vmap over {cls.__name__}, but it has both "
                           "generate_vmap_rule=True and an overridden vmap staticmethod. Please "
                           "set generate_vmap_rule=False or delete the overridden vmap "
                           f"staticmethod to avoid ambiguity. {_EXTENDING_FUNC}")
    if not (cls.generate_vmap_rule or own_vmap):
        raise RuntimeError(f"You tried to vmap over {cls.__name__}, but it does not have vmap "
                           "support. Please override and implement the vmap staticmethod or set "
                           f"generate_vmap_rule=True. {_EXTENDING_FUNC}")


class Function:
    """Subclass with static ``forward(ctx, *args)`` and ``backward(ctx, *grads)``.

    Each subclass gets its node class, as PyTorch's FunctionMeta makes it: ``_backward_cls``,
    a BackwardCFunction named the Function's name plus 'Backward' (``type(y.grad_fn)``),
    whose ``_forward_cls`` is the Function."""

    _backward_cls: type[BackwardCFunction]

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        cls._backward_cls = type(f"{cls.__name__}Backward", (BackwardCFunction,),
                                 {"__slots__": (), "_forward_cls": cls,
                                  "__module__": BackwardCFunction.__module__})

    @staticmethod
    def forward(ctx: FunctionCtx, *args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError("You must implement the forward function for custom "
                                  "autograd.Function.")

    @staticmethod
    def backward(ctx: FunctionCtx, *grads: Any) -> Any:
        raise NotImplementedError("You must implement either the backward or vjp method for "
                                  "your custom autograd.Function to use it with backward mode AD.")

    vjp = backward  # PyTorch's other name: a Function defines one of the two

    @staticmethod
    def jvp(ctx: FunctionCtx, *grad_inputs: Any) -> Any:
        """PyTorch's forward-mode formula; runtime.func's jvp differentiates with the
        backward, yet asks for it as PyTorch does."""
        raise NotImplementedError("You must implement the jvp function for custom "
                                  "autograd.Function to use it with forward mode AD.")

    # PyTorch's vmap support: a Function sets generate_vmap_rule or overrides vmap
    generate_vmap_rule = False

    @staticmethod
    def vmap(info: Any, in_dims: Any, *args: Any) -> Any:
        raise NotImplementedError("To use autograd.Function with vmap, you must either override "
                                  "the vmap staticmethod or set generate_vmap_rule=True.")

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        warnings.warn(f"{self.__class__} should not be instantiated. Methods on autograd "
                      "functions are all static, so you should invoke them on the class itself. "
                      "Instantiating an autograd function will raise an error in a future "
                      "version of PyTorch.", DeprecationWarning, stacklevel=2)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        raise RuntimeError(
            "Legacy autograd function with non-static forward method is deprecated. Please use "
            "new-style autograd function with static forward method. (Example: "
            "https://pytorch.org/docs/stable/autograd.html#torch.autograd.Function)")

    @classmethod
    def _backward_fn(cls) -> Any:
        """The user's backward: ``backward`` or ``vjp``, whichever the subclass defines."""
        if cls.vjp is Function.vjp:
            return cls.backward
        if cls.backward is not Function.backward:
            raise RuntimeError("Implementing both 'backward' and 'vjp' for a custom Function is "
                               "not allowed. You should only implement one of them.")
        return cls.vjp

    @staticmethod
    def setup_context(ctx: FunctionCtx, inputs: tuple[Any, ...], output: Any) -> Any:
        """PyTorch >= 2.0's style: a Function that defines this has a ``forward(*args)``
        without ctx, and saves what backward needs here, after forward ran."""
        raise NotImplementedError("setup_context is not implemented.")

    @classmethod
    def apply(cls, *args: Any, **kwargs: Any) -> Any:
        from ..tensor import Tensor

        ctx = FunctionCtx()
        ctx.needs_input_grad = tuple(isinstance(a, Tensor) and a.requires_grad for a in args)
        is_diff = _grad_state.enabled and any(ctx.needs_input_grad)
        separate = cls.setup_context is not Function.setup_context
        if func_transforms.stack:
            _check_func_transforms(cls, separate)
        prev = _grad_state.enabled
        _grad_state.enabled = False
        try:
            if separate:
                raw = cls.forward(*args, **kwargs)
                cls.setup_context(ctx, args, raw)
            else:
                raw = cls.forward(ctx, *args, **kwargs)
        finally:
            _grad_state.enabled = prev
        outputs = raw if isinstance(raw, tuple) else (raw,)
        node = None
        if is_diff:
            _check_ctx(ctx, outputs)
            edges = [gradient_edge(a) if a.requires_grad else None
                     for a in args if isinstance(a, Tensor)]
            metas = [Meta(o.shape, o.dtype, o.device) if isinstance(o, Tensor) else
                     Meta((), None, "cpu") for o in outputs]
            node = cls._backward_cls(cls, ctx, edges, metas,
                                     tuple(isinstance(a, Tensor) for a in args))
            ctx._node = node
        dirty = {id(t) for t in ctx._dirty}
        non_diff = {id(t) for t in ctx._non_differentiable}
        inputs = {id(a) for a in args if isinstance(a, Tensor)}
        # setup_context style: the tensors it saved, which an input returned as-is must not be
        saved = ({id(t) for t in (*ctx._to_save, *getattr(ctx, "saved_for_forward", ()))
                  if isinstance(t, Tensor)} if separate else set())
        wrapped: list[Any] = []
        n_diff = 0
        non_diff_idx: list[int] = []
        for i, o in enumerate(outputs):
            if not isinstance(o, Tensor):
                wrapped.append(o)
                non_diff_idx.append(i)
                continue
            is_input, is_dirty = id(o) in inputs, id(o) in dirty
            differentiable = (node is not None and id(o) not in non_diff
                              and o.dtype.is_floating_point)
            if not differentiable:
                non_diff_idx.append(i)
            if is_dirty:
                o._vc.v += 1  # PyTorch's _mark_dirty bumps the version, grad or not
            if is_dirty and differentiable:
                if o.is_leaf and o.requires_grad:
                    raise RuntimeError("a leaf Variable that requires grad has been used in an "
                                       "in-place operation.")
                base = o._base
                if base is not None and base._rg and base._grad_fn is None:
                    from ..ops.inplace import ERR_VIEW_OF_LEAF_INPLACE

                    raise RuntimeError(ERR_VIEW_OF_LEAF_INPLACE)
                if not is_input:
                    # a view's history cannot be rebased through the node (PyTorch raises)
                    if o._base is not None:
                        raise RuntimeError(_ERR_DIRTY_NOT_INPUT)
                    warnings.warn(_ERR_DIRTY_NOT_INPUT, UserWarning, stacklevel=2)
                if o._base is not None and len(outputs) > 1:
                    raise RuntimeError(_ERR_DIRTY_VIEW_MULTI)
                _refuse_captured_dirty_view(o)
            if is_input and not is_dirty and id(o) in saved and (differentiable or not o._rg):
                raise RuntimeError(_ERR_INPUT_RETURNED_AS_IS)
            if not differentiable:
                if not o._rg:  # PyTorch (_wrap_outputs): an input returned as-is is an alias
                    out = _view_as_self(o) if is_input and not is_dirty else o
                elif not is_input and o._base is not None:
                    # a view of an input made with grad off (node None: no_grad) stays one that
                    # requires grad, as x[:] under no_grad does (PyTorch's _wrap_outputs)
                    out = o
                else:
                    out = o.detach()
                    out._rg = False
            elif is_dirty:
                out = o
            elif is_input:
                out = _view_as_self(o)  # a fresh alias (a view, as PyTorch's)
            else:
                out = o
            if differentiable and is_dirty and o._base is not None:
                # a view written in place: its base's history goes through the node, as an
                # in-place op's (PyTorch's rebase_history: CopySlices)
                from ..ops.inplace import _copy_slices

                _copy_slices(out, node)  # type: ignore[arg-type]
                n_diff += 1
            elif differentiable:
                old_fn, old_nr = out._grad_fn, out.output_nr
                out._grad_fn = node
                out.output_nr = i
                out._rg = True
                n_diff += 1
                if is_dirty:  # its retain_grad follows it onto the node, as an in-place op's
                    from ..ops.inplace import _move_retains_grad

                    _move_retains_grad(out, old_fn, old_nr)
            if not (is_input and is_dirty) and out._base is not None:
                out._creation = "custom_function"  # PyTorch's CreationMeta::IN_CUSTOM_FUNCTION
            wrapped.append(out)
        if node is not None:
            node.non_diff = frozenset(non_diff_idx)
        if n_diff > 1:  # several differentiable outputs: their views are multi-output ones
            for out in wrapped:
                if isinstance(out, Tensor) and out._base is not None:
                    out._creation = "multi_output"
        if node is None:
            return tuple(wrapped) if isinstance(raw, tuple) else wrapped[0]
        try:
            ctx._saved = [SavedTensor(t, t._grad_fn is node) if isinstance(t, Tensor) else None
                          for t in ctx._to_save]
        finally:  # (a pack hook may raise: a checkpoint's recomputation stopping early)
            ctx._to_save = ()
        return tuple(wrapped) if isinstance(raw, tuple) else wrapped[0]


_ERR_INPUT_RETURNED_AS_IS = (
    "An input that has been returned as-is as output is being saved for backward. This is not "
    "supported if you override setup_context. You should return and save a view of the input "
    "instead, e.g. with x.view_as(x) or setup ctx inside the forward function itself.")

_ERR_DIRTY_NOT_INPUT = ("ctx.mark_dirty() received a tensor that was not an input. Only input "
                        "Tensors that have been mutated should be passed to ctx.mark_dirty().")

_ERR_DIRTY_VIEW_MULTI = (
    "If your Function modifies inplace an input that is a view of another Tensor, your Function "
    "cannot return more than one Tensor. This is not supported by the current autograd engine. "
    "You should either make sure the input is not a view (using .clone() for example) or make "
    "your Function only return one Tensor (potentially splitting it into two Functions: one "
    "doing the inplace that returns a single Tensor and a second one that does the other "
    "operations). You can ask on the forum https://discuss.pytorch.org/ if you need help to do "
    "this change.")


def _refuse_captured_dirty_view(t: Any) -> None:
    """While planner.compile captures a step: an input marked dirty that is a view of another
    tensor needs its base's history rebased through the node (CopySlices), which the capture
    does not do; the step runs eagerly, saying so."""
    from ..tracing import GraphBreak
    from ..tracing import _state as trace_state

    tracer = trace_state.tracer
    if tracer is not None and getattr(tracer.storage_of(t), "view_of", None) is not None:
        raise GraphBreak("a custom autograd.Function marking dirty (ctx.mark_dirty) an input "
                         "that is a view of another tensor")


def _view_as_self(t: Any) -> Any:
    """PyTorch's _view_as_self_with_no_grad: ``t.view_as(t)`` with grad disabled (a new
    tensor, a view of ``t``, even where nothing requires grad)."""
    from ..ops import prims as P
    from ..ops.dispatch import apply

    prev = _grad_state.enabled
    _grad_state.enabled = False
    try:
        return apply(P.RESHAPE, t, shape=t.shape)
    finally:
        _grad_state.enabled = prev


def _check_ctx(ctx: FunctionCtx, outputs: tuple[Any, ...]) -> None:
    """PyTorch's checks of what forward told ctx: only tensors (or None) saved, and every
    tensor marked dirty returned."""
    from ..tensor import Tensor

    for i, t in enumerate(ctx._to_save):
        if t is not None and not isinstance(t, Tensor):
            raise TypeError(f"save_for_backward can only save variables, but argument {i} is of "
                            f"type {type(t).__name__}")
    returned = {id(o) for o in outputs}
    if any(id(t) not in returned for t in ctx._dirty):
        raise RuntimeError("Some elements marked as dirty during the forward method were not "
                           "returned as output. The inputs that are modified inplace must all be "
                           "outputs of the Function.")


def once_differentiable(fn: Any) -> Any:
    """Marks a backward that cannot itself be differentiated (it runs with grad disabled)."""
    import functools

    @functools.wraps(fn)
    def wrapper(ctx: FunctionCtx, *args: Any) -> Any:
        from ..tensor import Tensor

        prev = _grad_state.enabled
        _grad_state.enabled = False
        try:
            outputs = fn(ctx, *args)
        finally:
            _grad_state.enabled = prev
        # like torch: under create_graph with grads that require grad, wire the results to an
        # Error node so that differentiating them again raises
        if not prev or not any(isinstance(a, Tensor) and a.requires_grad for a in args):
            return outputs
        outs = outputs if isinstance(outputs, tuple) else (outputs,)
        wrapped = _delayed_error(_ERR_TWICE, outs)
        return wrapped if len(wrapped) != 1 else wrapped[0]

    return wrapper


_ERR_TWICE = ("trying to differentiate twice a function that was marked with "
              "@once_differentiable")


class Error(Node):
    """PyTorch's Error node (functions/basic_ops.h): the grad_fn of a once_differentiable
    backward's results under create_graph, with an edge per result (None for an undefined
    one); running it raises."""

    __slots__ = ("msg",)

    def __init__(self, msg: str, next_edges: list[Any], metas: list[Meta]) -> None:
        super().__init__(next_edges, metas)
        self.msg = msg

    def apply(self, grads: list[Any]) -> list[Any]:
        raise RuntimeError(self.msg)


def _delayed_error(msg: str, outputs: tuple[Any, ...]) -> tuple[Any, ...]:
    """PyTorch's DelayedError applied to ``outputs``: each tensor is aliased by a fresh leaf
    that requires grad (once_differentiable's fake_requires_grad), and the results are those
    leaves' data with an Error node as their grad_fn."""
    from ..tensor import Tensor

    fakes = [o.detach().requires_grad_() if isinstance(o, Tensor) else None for o in outputs]
    edges = [gradient_edge(f) if f is not None else None for f in fakes]
    metas = [Meta(f.shape, f.dtype, f.device) if f is not None else Meta((), None, "cpu")
             for f in fakes]
    node = Error(msg, edges, metas)
    wrapped: list[Any] = []
    for i, f in enumerate(fakes):
        if f is None:
            wrapped.append(outputs[i])
            continue
        out = f.detach()
        out._grad_fn = node
        out.output_nr = i
        out._rg = True
        wrapped.append(out)
    return tuple(wrapped)
