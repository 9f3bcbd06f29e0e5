"""Module backward hooks (``register_full_backward_hook`` and
``register_full_backward_pre_hook``), built as PyTorch builds them (``torch.utils.hooks.
BackwardHook``): the tensors going into a module's forward, and those coming out, pass
through an identity autograd Function each. The output's identity node sees the gradients
w.r.t. the outputs (``grad_output``) first, and runs the pre-hooks on them; the input's node
then sees the gradients w.r.t. the inputs (``grad_input``), and runs the hooks with both."""

from __future__ import annotations

import warnings
from collections.abc import Callable, Sequence
from typing import Any

from runtime.autograd import is_grad_enabled
from runtime.autograd.function import Function, FunctionCtx
from runtime.creation import zeros_like
from runtime.tensor import Tensor

Hook = Callable[..., Any]


class BackwardHookFunction(Function):
    """The identity, as a node of the graph that hooks can be put on."""

    @staticmethod
    def forward(ctx: FunctionCtx, *args: Tensor) -> tuple[Tensor, ...]:
        ctx.mark_non_differentiable(*[a for a in args if not a.requires_grad])
        return args

    @staticmethod
    def backward(ctx: FunctionCtx, *grads: Any) -> tuple[Any, ...]:
        return grads


def _pack_with_none(indices: Sequence[int], values: Sequence[Any], size: int) -> tuple[Any, ...]:
    res: list[Any] = [None] * size
    for i, v in zip(indices, values, strict=True):
        res[i] = v
    return tuple(res)


class BackwardHook:
    """One forward call's hooks: the gradients w.r.t. its outputs are kept from the moment
    the output node runs until the input node runs the user hooks."""

    def __init__(self, module: Any, hooks: list[Hook], pre_hooks: list[Hook]) -> None:
        self.module, self.hooks, self.pre_hooks = module, hooks, pre_hooks
        self.grad_outputs: tuple[Any, ...] | None = None
        self.n_inputs = self.n_outputs = -1
        self.input_index: list[int] | None = None
        self.output_index: list[int] | None = None
        self.constant_inputs: dict[int, Tensor] = {}  # position -> input needing no gradient

    def _wrap(self, args: tuple[Any, ...], on_node: Callable[[Any], None]
              ) -> tuple[tuple[Any, ...], list[int] | None]:
        """``args`` with its tensors passed through one BackwardHookFunction (whose node gets
        ``on_node``), and their positions; unchanged and None where none needs a gradient."""
        index = [i for i, a in enumerate(args) if isinstance(a, Tensor)]
        tensors = [args[i] for i in index]
        if not (any(t.requires_grad for t in tensors) and is_grad_enabled()):
            return args, None
        wrapped = BackwardHookFunction.apply(*tensors)
        node = next(t.grad_fn for t in wrapped if t.grad_fn is not None)
        on_node(node)
        out = list(args)
        for i, t in zip(index, wrapped, strict=True):
            out[i] = t
        return tuple(out), index

    def setup_input_hook(self, args: tuple[Any, ...]) -> tuple[Any, ...]:
        def on_node(node: Any) -> None:
            node.register_hook(self._input_grads)

        res, self.input_index = self._wrap(args, on_node)
        self.n_inputs = len(args)
        if self.input_index is not None:
            self.constant_inputs = {k: args[i] for k, i in enumerate(self.input_index)
                                    if not args[i].requires_grad}
        return res

    def _input_grads(self, grad_input: tuple[Any, ...], _: tuple[Any, ...]) -> Any:
        if self.grad_outputs is None:  # reached without passing the outputs (double backward)
            return None
        assert self.input_index is not None
        # PyTorch's identity node passes back the zeros it was given for a tensor that
        # needs no gradient; the engine here gives None there: the hooks see PyTorch's zeros
        grad_input = tuple(zeros_like(self.constant_inputs[k]) if k in self.constant_inputs
                           else g for k, g in enumerate(grad_input))
        res = _pack_with_none(self.input_index, grad_input, self.n_inputs)
        for hook in self.hooks:
            out = hook(self.module, res, self.grad_outputs)
            if out is None:
                continue
            if len(out) != len(res):
                raise RuntimeError("Backward hook returned an invalid number of grad_input, "
                                   f"got {len(out)}, but expected {len(res)}")
            res = out
        self.grad_outputs = None
        return tuple(res[i] for i in self.input_index)

    # the engine's checks of a node hook's result are for users' hooks: this one passes
    # PyTorch's zeros where the engine here gives None
    _input_grads._runtime_internal = True  # type: ignore[attr-defined]

    def setup_output_hook(self, result: Any) -> Any:
        def on_node(node: Any) -> None:
            node.register_hook(self._output_grads)

        single = not isinstance(result, tuple)
        outputs = (result,) if single else result
        res, self.output_index = self._wrap(outputs, on_node)
        self.n_outputs = len(outputs)
        return res[0] if single else res

    def _output_grads(self, _: tuple[Any, ...], grad_output: tuple[Any, ...]) -> Any:
        assert self.output_index is not None
        self.grad_outputs = _pack_with_none(self.output_index, grad_output, self.n_outputs)
        for pre_hook in self.pre_hooks:
            new = pre_hook(self.module, self.grad_outputs)
            if new is None:
                continue
            if len(new) != len(self.grad_outputs):
                raise RuntimeError("Backward pre hook returned an invalid number of "
                                   f"grad_output, got {len(new)}, but expected "
                                   f"{len(self.grad_outputs)}")
            self.grad_outputs = new
        local = self.grad_outputs
        if self.input_index is None:  # no input needs a gradient: the hooks run here
            warnings.warn(
                "Full backward hook is firing when gradients are computed with respect to "
                "module outputs since no inputs require gradients. See "
                "https://docs.pytorch.org/docs/main/generated/torch.nn.Module.html"
                "#torch.nn.Module.register_full_backward_hook for more details.", stacklevel=5)
            grad_inputs = _pack_with_none([], [], self.n_inputs)
            for hook in self.hooks:
                res = hook(self.module, grad_inputs, self.grad_outputs)
                if res is not None and not (isinstance(res, tuple)
                                            and all(r is None for r in res)):
                    raise RuntimeError("Backward hook for Modules where no input requires "
                                       "gradient should always return None or None for all "
                                       "gradients.")
            self.grad_outputs = None
        return tuple(local[i] for i in self.output_index)
