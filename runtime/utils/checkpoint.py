"""``rt.utils.checkpoint``: activation checkpointing, as ``torch.utils.checkpoint``.

``checkpoint(fn, *args, use_reentrant=...)`` runs ``fn`` keeping none of the tensors its ops
save for backward, and runs it again when the backward needs them. ``use_reentrant=True``
(PyTorch's default, with a warning when not passed) is an autograd Function whose backward
reruns ``fn`` and backpropagates through it (a reentrant backward; gradients reach only what
``fn``'s tensor arguments and parameters lead to, and only when an argument requires grad);
``use_reentrant=False`` keeps a counter in place of each saved tensor (saved_tensors_hooks)
and reruns ``fn`` on the first unpack. Either reruns ``fn`` with the random state of the
first run (``preserve_rng_state``), so dropout draws the same masks.

While ``planner.compile`` captures a step, ``checkpoint`` runs ``fn`` once, as it is: the plan
keeps or recomputes activations itself (``planner.remat``), and the rerun would give the first
run's values anyway (its random draws too, which is why ``preserve_rng_state=False``, whose
rerun draws anew, is captured as eager runs it: saved_tensors_hooks or a reentrant backward,
which the planner refuses, saying so). A reentrant checkpoint none of whose tensor arguments
requires grad runs under ``no_grad`` there, as its eager output requires none.

As PyTorch's, a reentrant checkpoint refuses to run its backward inside ``autograd.grad`` or
``backward(inputs=...)`` (its rerun's backward would set every parameter's ``.grad``).
"""

from __future__ import annotations

import contextlib
import itertools
import warnings
import weakref
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from ..autograd import Function, backward, enable_grad, no_grad
from ..autograd.graph import saved_tensors_hooks
from ..creation import get_rng_state, set_rng_state
from ..tensor import Tensor
from ..autograd.grad_mode import is_grad_enabled
from ..tracing import GraphBreak, is_tracing
from ..tracing import _state as _trace_state

__all__ = ["CheckpointError", "CheckpointFunction", "check_backward_validity", "checkpoint",
           "checkpoint_sequential", "detach_variable", "noop_context_fn",
           "set_checkpoint_debug_enabled", "set_checkpoint_early_stop"]

_USE_REENTRANT_WARNING = (
    "torch.utils.checkpoint: the use_reentrant parameter should be passed explicitly. "
    "Starting in PyTorch 2.9, calling checkpoint without use_reentrant will raise an "
    "exception. use_reentrant=False is recommended, but if you need to preserve the current "
    "default behavior, you can pass use_reentrant=True. Refer to docs for more details on the "
    "differences between the two variants.")
_SEQUENTIAL_USE_REENTRANT_WARNING = (
    "torch.utils.checkpoint.checkpoint_sequential: the use_reentrant parameter should be "
    "passed explicitly. In version 2.9 we will raise an exception if use_reentrant is not "
    "passed. use_reentrant=False is recommended, but if you need to preserve the current "
    "default behavior, you can pass use_reentrant=True. Refer to docs for more details on the "
    "differences between the two variants.")


class CheckpointError(RuntimeError):
    """The rerun of a checkpointed function saved other tensors than its first run."""


def detach_variable(inputs: tuple[Any, ...]) -> tuple[Any, ...]:
    """Each tensor of ``inputs`` detached, requiring grad as it did; anything else as is."""
    if not isinstance(inputs, tuple):
        raise RuntimeError("Only tuple of tensors is supported. Got Unsupported input type: "
                           f"{type(inputs).__name__}")
    return tuple(x.detach().requires_grad_(x.requires_grad) if isinstance(x, Tensor) else x
                 for x in inputs)


def check_backward_validity(inputs: Sequence[Any]) -> None:
    if not any(isinstance(x, Tensor) and x.requires_grad for x in inputs):
        warnings.warn("None of the inputs have requires_grad=True. Gradients will be None",
                      stacklevel=2)


@contextlib.contextmanager
def _rng_of_first_run(state: Tensor | None) -> Iterator[None]:
    """The generator set to ``state`` inside (None: left alone), and as it was after."""
    if state is None:
        yield
        return
    outside = get_rng_state()
    set_rng_state(state)
    try:
        yield
    finally:
        set_rng_state(outside)


class CheckpointFunction(Function):
    """``use_reentrant=True``: no graph inside ``run_function`` until the backward reruns it."""

    @staticmethod
    def forward(ctx: Any, run_function: Callable[..., Any], preserve_rng_state: bool,
                *args: Any) -> Any:
        check_backward_validity(args)
        ctx.run_function = run_function
        ctx.rng_state = get_rng_state() if preserve_rng_state else None
        ctx.inputs = [None if isinstance(a, Tensor) else a for a in args]
        ctx.tensor_indices = [i for i, a in enumerate(args) if isinstance(a, Tensor)]
        ctx.save_for_backward(*(args[i] for i in ctx.tensor_indices))
        with no_grad():
            return run_function(*args)

    @staticmethod
    def backward(ctx: Any, *grads: Any) -> tuple[Any, ...]:
        from ..autograd.engine import is_checkpoint_valid

        if not is_checkpoint_valid():
            raise RuntimeError(
                "When use_reentrant=True, torch.utils.checkpoint is incompatible with .grad() or "
                "passing an `inputs` parameter to .backward(). To resolve this error, you can "
                "either set use_reentrant=False, or call .backward() without passing the "
                "`inputs` argument.")
        inputs = list(ctx.inputs)
        for i, t in zip(ctx.tensor_indices, ctx.saved_tensors):
            inputs[i] = t
        detached = detach_variable(tuple(inputs))
        with _rng_of_first_run(ctx.rng_state), enable_grad():
            outputs = ctx.run_function(*detached)
        if isinstance(outputs, Tensor):
            outputs = (outputs,)
        pairs = [(o, g) for o, g in zip(outputs, grads)
                 if isinstance(o, Tensor) and o.requires_grad]
        if not pairs:
            raise RuntimeError("none of output has requires_grad=True, this checkpoint() is "
                               "not necessary")
        backward([o for o, _ in pairs], [g for _, g in pairs])
        return (None, None, *(x.grad if isinstance(x, Tensor) else None for x in detached))


_DEBUG_TIP = """
Tip: To see a more detailed error message, either pass `debug=True` to
`torch.utils.checkpoint.checkpoint(...)` or wrap the code block
with `with torch.utils.checkpoint.set_checkpoint_debug_enabled(True):` to
enable checkpoint\u2011debug mode globally.
"""

_ERR_UNPACKED_TWICE = (
    "torch.utils.checkpoint: Unpack is being triggered for a tensor that was already unpacked "
    "once. If you are calling ctx.saved_tensors in backward, make sure to do so only once. "
    "Otherwise please open an issue with details on your use case.")

# PyTorch's set_checkpoint_early_stop / set_checkpoint_debug_enabled: None defers to the
# checkpoint call's own argument
_early_stop_override: list[bool | None] = [None]
_debug_override: list[bool | None] = [None]


@contextlib.contextmanager
def set_checkpoint_early_stop(enable: bool) -> Iterator[None]:
    """Whether the checkpoints made inside stop their recomputation as soon as it has made
    every tensor the backward needs (overrides ``early_stop``; needed at forward only)."""
    prev = _early_stop_override[0]
    _early_stop_override[0] = enable
    try:
        yield
    finally:
        _early_stop_override[0] = prev


@contextlib.contextmanager
def set_checkpoint_debug_enabled(enabled: bool | None) -> Iterator[None]:
    """Overrides the ``debug`` argument of the checkpoints made inside (None: defer to it)."""
    prev = _debug_override[0]
    _debug_override[0] = enabled
    try:
        yield
    finally:
        _debug_override[0] = prev


class _Handle:
    """One recomputed value's key: a holder keeps it until the value is unpacked."""


class _Holder:
    """What the forward's pack hook keeps in place of a saved tensor: per recomputation (a
    backward's graph task, or one unpack outside any backward), the key of its value."""

    def __init__(self) -> None:
        self.handles: dict[int, _Handle | None] = {}


class _StopRecomputation(Exception):  # noqa: N818 - PyTorch's _StopRecomputationError
    """Raised by the recomputation's pack hook once every saved tensor is remade."""


def _default_metadata(t: Tensor) -> dict[str, Any]:
    return {"shape": t.shape, "dtype": t.dtype, "device": t.device}


_METADATA_FNS: dict[str, Callable[[Tensor], Any]] = {"default": _default_metadata,
                                                     "none": lambda _: None}
_outside_backward_ids = itertools.count(-2, -1)  # graph task ids are >= 0, -1 is "none"


class _Recomputation:
    """``use_reentrant=False``, as PyTorch's _CheckpointFrame: the forward keeps a holder in
    place of each saved tensor; the first unpack of a backward reruns the function (with the
    forward's random and autocast state), keeping what it saves for that backward only, and
    each holder's value is handed out once. An unpack outside any backward reruns it each
    time. The rerun stops once it has remade every tensor (``early_stop``), and must save as
    many tensors, with the same metadata (``determinism_check``), as the forward did."""

    def __init__(self, fn: Callable[..., Any], rng_state: Tensor | None,
                 args: tuple[Any, ...], kwargs: dict[str, Any], context: Any,
                 early_stop: bool, metadata_fn: Callable[[Tensor], Any]) -> None:
        self.fn, self.rng_state, self.args, self.kwargs = fn, rng_state, args, kwargs
        self.context = context  # the context_fn's recomputation context
        self.early_stop, self.metadata_fn = early_stop, metadata_fn
        self.autocast = _autocast_state()
        self.weak_holders: list[weakref.ref[_Holder]] = []
        self.metadatas: list[Any] = []
        self.recomputed: dict[int, weakref.WeakKeyDictionary[_Handle, Tensor]] = {}
        self.counters: dict[int, int] = {}
        self.forward_completed = False
        self.ignore_saved_mismatch = False

    def pack(self, t: Tensor) -> _Holder:
        holder = _Holder()
        self.weak_holders.append(weakref.ref(holder))
        self.metadatas.append(self.metadata_fn(t))
        return holder

    def unpack(self, holder: _Holder) -> Tensor:
        from ..autograd.engine import current_graph_task_id

        gid = current_graph_task_id()
        if gid == -1:
            gid = next(_outside_backward_ids)
        if gid not in self.recomputed:
            self._rerun(gid)
            self._check(gid)
        handle = holder.handles.get(gid)
        if handle is None:
            raise CheckpointError(_ERR_UNPACKED_TWICE)
        holder.handles[gid] = None
        return self.recomputed[gid].pop(handle)

    def _rerun(self, gid: int) -> None:
        self.recomputed[gid] = weakref.WeakKeyDictionary()
        self.counters[gid] = 0

        def keep(t: Tensor) -> Tensor:
            t = t.detach() if t.requires_grad else t
            index = self.counters[gid]
            self.counters[gid] += 1
            if index >= len(self.weak_holders):
                if not self.forward_completed:  # a backward inside the checkpointed function
                    self.ignore_saved_mismatch = True
                    return t
                raise CheckpointError("torch.utils.checkpoint: trying to save more tensors "
                                      "during recomputation than during the original forward "
                                      f"pass.\n{_DEBUG_TIP}")
            holder = self.weak_holders[index]()
            if holder is not None:  # (None: its saved tensor is freed already)
                handle = holder.handles[gid] = _Handle()
                self.recomputed[gid][handle] = t
            if self.early_stop and self.counters[gid] == len(self.weak_holders):
                raise _StopRecomputation
            return t.detach()

        try:
            with (_rng_of_first_run(self.rng_state), enable_grad(), _autocast(self.autocast),
                  saved_tensors_hooks(keep, lambda t: t), self.context):
                self.fn(*self.args, **self.kwargs)
        except _StopRecomputation:
            pass

    def _check(self, gid: int) -> None:
        """PyTorch's check_recomputed_tensors_match."""
        if self.ignore_saved_mismatch:
            return
        if len(self.weak_holders) != self.counters[gid]:
            raise CheckpointError(
                "torch.utils.checkpoint: A different number of tensors was saved during the "
                f"original forward and recomputation.\nNumber of tensors saved during forward: "
                f"{len(self.weak_holders)}\nNumber of tensors saved during recomputation: "
                f"{self.counters[gid]}.\n{_DEBUG_TIP}")
        different = ""
        for index, ref in enumerate(self.weak_holders):
            holder = ref()
            if holder is None:
                continue
            saved = self.metadatas[index]
            recomputed = self.metadata_fn(self.recomputed[gid][holder.handles[gid]])
            if saved != recomputed:
                different += (f"tensor at position {index}:\nsaved metadata: {saved}\n"
                              f"recomputed metadata: {recomputed}\n")
        if different:
            raise CheckpointError(
                "torch.utils.checkpoint: Recomputed values for the following tensors have "
                f"different metadata than during the forward pass.\n{different}.\n{_DEBUG_TIP}")


def _autocast_state() -> tuple[tuple[str, bool, Any], ...]:
    """The autocast settings the forward runs under, per device type, for the rerun."""
    from .. import amp

    return tuple((device, amp.is_autocast_enabled(device), amp.get_autocast_dtype(device))
                 for device in ("cpu", "cuda"))


@contextlib.contextmanager
def _autocast(state: tuple[tuple[str, bool, Any], ...]) -> Iterator[None]:
    from .. import amp

    with contextlib.ExitStack() as stack:
        for device, enabled, dtype in state:
            stack.enter_context(amp.autocast(device_type=device, enabled=enabled, dtype=dtype))
        yield


def _captured_reentrant(function: Callable[..., Any], args: tuple[Any, ...]) -> Any:
    """What a reentrant checkpoint computes, run once: no graph (and the eager warning) when
    no tensor argument requires grad."""
    if any(isinstance(a, Tensor) and a.requires_grad for a in args):
        return function(*args)
    check_backward_validity(args)
    with no_grad():
        return function(*args)


def _captured_once(run: Callable[[], Any]) -> Any:
    """A checkpointed function captured by a compiled step: run once, its recomputation left
    out (the plan keeps what the backward needs). One that updates state in place (a
    BatchNorm's running statistics) would be updated again by the recomputation in eager mode,
    as in PyTorch: the step runs eagerly."""
    tracer = _trace_state.tracer
    before = tracer.state_nodes()
    out = run()
    if is_grad_enabled() and tracer.state_nodes() != before and any(
            isinstance(t, Tensor) and t.requires_grad
            for t in (out if isinstance(out, (tuple, list)) else (out,))):
        raise GraphBreak("a checkpointed function updates state in place (a BatchNorm's "
                         "running statistics), which its recomputation in the backward "
                         "updates again")
    return out


def noop_context_fn() -> tuple[Any, Any]:
    """PyTorch's default ``context_fn``: no context around the forward or the recomputation."""
    return contextlib.nullcontext(), contextlib.nullcontext()


_DETERMINISM_CHECKS = ("default", "none")


def checkpoint(function: Callable[..., Any], *args: Any, use_reentrant: bool | None = None,
               context_fn: Callable[[], tuple[Any, Any]] = noop_context_fn,
               determinism_check: str = "default", debug: bool = False, early_stop: bool = True,
               preserve_rng_state: bool = True, **kwargs: Any) -> Any:
    """``function(*args, **kwargs)``, its activations recomputed in the backward (see the
    module's docstring; keyword arguments reach ``function`` with ``use_reentrant=False``).
    PyTorch's options are taken, not passed on: ``context_fn`` (with ``use_reentrant=False``:
    the contexts the forward and the recomputation run in), ``determinism_check`` (the
    recomputed tensors' metadata checked against the forward's, or not) and ``early_stop``;
    ``debug=True`` raises NotImplementedError (see there)."""
    if use_reentrant is None:
        warnings.warn(_USE_REENTRANT_WARNING, stacklevel=2)
        use_reentrant = True
    if use_reentrant:
        if kwargs:
            raise ValueError("Unexpected keyword arguments: " + ",".join(kwargs))
        if context_fn is not noop_context_fn or debug is not False:
            raise ValueError("Passing `context_fn` or `debug` is only supported when "
                             "use_reentrant=False.")
        if is_tracing() and preserve_rng_state:
            return _captured_once(lambda: _captured_reentrant(function, args))
        return CheckpointFunction.apply(function, preserve_rng_state, *args)
    if determinism_check not in _DETERMINISM_CHECKS:
        raise ValueError(f"determinism_check should be one of {list(_DETERMINISM_CHECKS)}, but "
                         f"got {determinism_check}")
    if _debug_override[0] if _debug_override[0] is not None else debug:
        raise NotImplementedError(
            "torch.utils.checkpoint: debug=True (or set_checkpoint_debug_enabled(True)) is not "
            "supported here: its logs of the operators run in the forward and the "
            "recomputation come from PyTorch's dispatch-mode operator logging, which runtime "
            "has no counterpart of")
    forward_context, recompute_context = context_fn()
    if is_tracing() and preserve_rng_state:
        with forward_context:
            return _captured_once(lambda: function(*args, **kwargs))
    stop = _early_stop_override[0] if _early_stop_override[0] is not None else early_stop
    frame = _Recomputation(function, get_rng_state() if preserve_rng_state else None, args,
                           kwargs, recompute_context, stop, _METADATA_FNS[determinism_check])
    with saved_tensors_hooks(frame.pack, frame.unpack), forward_context:
        out = function(*args, **kwargs)
    frame.forward_completed = True
    return out


def checkpoint_sequential(functions: Any, segments: int, input: Any,  # noqa: A002
                          use_reentrant: bool | None = None, **kwargs: Any) -> Any:
    """``functions`` (a Sequential or a list of modules) run in ``segments`` parts, each but
    the last checkpointed."""
    if use_reentrant is None:
        warnings.warn(_SEQUENTIAL_USE_REENTRANT_WARNING, stacklevel=2)
        use_reentrant = True
    preserve = kwargs.pop("preserve_rng_state", True)
    if kwargs:
        raise ValueError("Unexpected keyword arguments: " + ",".join(kwargs))
    from ..nn import Sequential

    if isinstance(functions, Sequential):
        functions = list(functions.children())

    def run(start: int, end: int) -> Callable[[Any], Any]:
        def forward(x: Any) -> Any:
            for f in functions[start:end + 1]:
                x = f(x)
            return x
        return forward

    size = len(functions) // segments
    end = -1
    for start in range(0, size * (segments - 1), size):
        end = start + size - 1
        input = checkpoint(run(start, end), input, use_reentrant=use_reentrant,
                           preserve_rng_state=preserve)
    return run(end + 1, len(functions) - 1)(input)
