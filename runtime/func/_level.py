"""One level of a reverse-mode transform (``grad``, ``vjp``, ``jacrev``) on the eager
autograd engine, in place of functorch's wrapped tensors.

The differentiated inputs become fresh tensors the transform owns: a detached leaf that
requires grad, or, where the caller's autograd (an outer transform, or the user's own
``requires_grad``) tracks the input and grad mode is on, a differentiable alias
(``view_as``), so the gradient the level computes with ``create_graph`` stays a function of
the outer input and an outer transform can differentiate it again. Results leave the level
"unwrapped": a result whose graph reaches no leaf but the level's own is detached (PyTorch's
``grad(f)(x)`` of an ``x`` that does not require grad gives a plain tensor), one that
reaches an outer leaf keeps its graph."""

from __future__ import annotations

import contextlib
import itertools
from collections.abc import Iterator, Sequence
from typing import Any

from ..autograd.api import grad as autograd_grad
from ..autograd.function import func_transforms
from ..autograd.grad_mode import inference_mode, is_grad_enabled
from ..autograd.node import AccumulateGrad
from ..creation import zeros_like
from ..tensor import Tensor, enter_func_level, exit_func_level
from ._pytree import tree_leaves, tree_map

_serials = itertools.count(1)

__all__ = ["GradLevel", "check_tensor_outputs", "level_grad_mode", "transform_level"]


def check_tensor_outputs(flat_out: list[Any], api: str) -> None:
    """PyTorch's ``assert_non_empty_tensor_output``: a function's flat outputs are tensors,
    at least one (an output of ``None`` flattens to ``[None]`` and counts as empty)."""
    if not flat_out or (len(flat_out) == 1 and flat_out[0] is None):
        raise RuntimeError(f"{api}: Expected f to be a function that has non-empty output (got "
                           f"output = {flat_out})")
    for out in flat_out:
        if not isinstance(out, Tensor):
            raise RuntimeError(f"{api}: expected f(*primals) to return only tensors, got "
                               f"unsupported type {type(out)}")


@contextlib.contextmanager
def transform_level(kind: str) -> Iterator[None]:
    """A transform running on this thread (``kind``: "grad", "jvp" or "vmap"), as custom
    Functions' checks read them (``runtime.autograd.function.func_transforms``)."""
    func_transforms.stack.append(kind)
    try:
        yield
    finally:
        func_transforms.stack.pop()


@contextlib.contextmanager
def level_grad_mode(level: GradLevel, kind: str = "grad") -> Iterator[None]:
    """The mode ``level`` runs in: grad mode on and inference mode off (PyTorch's grad levels
    leave an outer ``inference_mode`` as they leave an outer ``no_grad``); a ``kind`` ("grad"
    or "jvp") transform while it runs, which refuses in-place writes into tensors made before
    it but its own inputs (``runtime.tensor.check_not_captured``)."""
    enter_func_level(level.serial, level.input_storages)
    try:
        with inference_mode(False), transform_level(kind):
            yield
    finally:
        exit_func_level()


class GradLevel:
    """The fresh inputs of one transform call and whether its caller tracks gradients."""

    def __init__(self) -> None:
        self.outer_tracking = is_grad_enabled()  # read before the transform enables grad
        self.serial = next(_serials)
        # the version counters (storages) of its inputs: written in place, not captured ones
        self.input_storages: set[int] = set()
        self._held: list[Any] = []  # the counters, held: ids stay theirs
        self._fresh: list[Tensor] = []
        self._fresh_ids: set[int] = set()
        # graph nodes found to reach no outer leaf, by id (held, so no id is reused)
        self._inner_only: dict[int, Any] = {}

    def differentiable(self, x: Any) -> Tensor:
        """``x`` as an input this level differentiates (PyTorch's error for a non-tensor;
        the engine's for an integer tensor)."""
        if not isinstance(x, Tensor):
            raise ValueError(f"Thing passed to transform API must be Tensor, got {type(x)}")
        if x.requires_grad:  # even under no_grad: a vjp_fn called later may track it
            fresh = x.view_as(x)
        elif x.is_inference():  # made under inference_mode: a normal copy can require grad
            fresh = x.clone().requires_grad_(True)
        else:
            fresh = x.detach().requires_grad_(True)
        return self.own(fresh)

    def note_inputs(self, tree: Any) -> None:
        """The tensors among the transform's arguments (all wrapped at the level in PyTorch,
        differentiated or not): writes into them are not writes into captured tensors."""
        for leaf in tree_leaves(tree):
            if isinstance(leaf, Tensor):
                self.input_storages.add(id(leaf._vc))
                self._held.append(leaf._vc)

    def own(self, fresh: Tensor) -> Tensor:
        """Count ``fresh`` (a tensor this level made) among the level's own leaves."""
        self.input_storages.add(id(fresh._vc))
        self._held.append(fresh._vc)
        self._fresh.append(fresh)
        self._fresh_ids.add(id(fresh))
        return fresh

    def differentiable_tree(self, tree: Any) -> Any:
        return tree_map(self.differentiable, tree)

    # --- leaving the level ------------------------------------------------------------
    def _reaches_outer_leaf(self, t: Tensor) -> bool:
        if t.grad_fn is None:
            return id(t) not in self._fresh_ids
        seen: dict[int, Any] = {}
        stack = [t.grad_fn]
        while stack:
            node = stack.pop()
            if id(node) in seen or id(node) in self._inner_only:
                continue
            seen[id(node)] = node
            if isinstance(node, AccumulateGrad):
                if id(node.variable) not in self._fresh_ids:
                    return True
                continue
            stack.extend(fn for fn, _ in node.next_functions if fn is not None)
        # every node walked reaches the level's own leaves only: later results sharing the
        # graph (the gradients of many parameters) stop there
        self._inner_only.update(seen)
        return False

    def unwrap(self, t: Any, tracking: bool | None = None) -> Any:
        """A result as the caller sees it (see the module's docstring); ``tracking``: whether
        the caller tracks gradients now, when not at the level's start (a ``vjp_fn`` called
        after its ``vjp``)."""
        if not isinstance(t, Tensor) or not t.requires_grad:
            return t
        if tracking is None:
            tracking = self.outer_tracking
        if tracking and self._reaches_outer_leaf(t):
            return t
        return t.detach()

    def unwrap_tree(self, tree: Any, tracking: bool | None = None) -> Any:
        return tree_map(lambda t: self.unwrap(t, tracking), tree)

    def unwrap_aux(self, aux: Any) -> Any:
        """``has_aux``'s second value unwrapped; tensors only, as PyTorch's."""
        def one(t: Any) -> Any:
            if not isinstance(t, Tensor):
                raise RuntimeError(f"Expected tensors, got unsupported type {type(t)}")
            return self.unwrap(t)
        return tree_map(one, aux)

    # --- the gradient ----------------------------------------------------------------------
    def grad(self, outputs: Sequence[Tensor], inputs: Sequence[Tensor],
             grad_outputs: Sequence[Tensor] | None = None, *, retain_graph: bool,
             create_graph: bool) -> tuple[Tensor, ...]:
        """PyTorch's ``_autograd_grad``: ``autograd.grad`` where outputs that do not require
        grad are dropped and inputs they do not reach get zeros."""
        pairs = [(o, g) for o, g in zip(outputs, grad_outputs or [None] * len(outputs))
                 if o.requires_grad]
        if not pairs:
            return tuple(zeros_like(inp) for inp in inputs)
        outs = [o for o, _ in pairs]
        gos = None if grad_outputs is None else [g for _, g in pairs]
        grads = autograd_grad(outs, list(inputs), gos, retain_graph=retain_graph,
                              create_graph=create_graph, allow_unused=True)
        return tuple(zeros_like(inp) if g is None else g for g, inp in zip(grads, inputs))
