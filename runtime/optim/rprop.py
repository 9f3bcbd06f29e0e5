"""Rprop: resilient backpropagation (torch's single-tensor update, its capturable form: the
sign cases are ``where``s, so no tensor data is read in Python)."""

from __future__ import annotations

from typing import Any

import runtime as rt
from runtime.optim.optimizer import Optimizer, Params, Scalars, check_tensor_lr


class Rprop(Optimizer):
    """Per-element step sizes, times ``etas[1]`` while the gradient keeps its sign and times
    ``etas[0]`` when it flips (that step then skipped), clamped to ``step_sizes``; the
    parameter moves by the step size against the gradient's sign."""
    _loaded_defaults = {"foreach": None, "maximize": False, "differentiable": False,
                        "capturable": False}
    _loaded_tensors = ("step",)

    _state_made_lazily = True

    def __init__(self, params: Params, lr: float = 1e-2,
                 etas: tuple[float, float] = (0.5, 1.2),
                 step_sizes: tuple[float, float] = (1e-6, 50), *, capturable: bool = False,
                 foreach: bool | None = None, maximize: bool = False,
                 differentiable: bool = False) -> None:
        check_tensor_lr(lr)
        if not 0.0 <= lr:
            raise ValueError(f"Invalid learning rate: {lr}")
        if not 0.0 < etas[0] < 1.0 < etas[1]:
            raise ValueError(f"Invalid eta values: {etas[0]}, {etas[1]}")
        super().__init__(params, {"lr": lr, "etas": etas,  # as given, as torch's
                                  "step_sizes": step_sizes, "foreach": foreach,
                                  "maximize": maximize, "differentiable": differentiable,
                                  "capturable": capturable})

    def _step_group(self, group: dict[str, Any]) -> None:
        etaminus, etaplus = self._hyper(group, "etas", 0), self._hyper(group, "etas", 1)
        least, most = self._hyper(group, "step_sizes", 0), self._hyper(group, "step_sizes", 1)
        scalar = Scalars()
        for p, grad in self._grads(group):
            state = self._lazy_state(p, lambda p=p: {
                "step": rt.tensor(0.0, device=p.device), "prev": rt.zeros_like(p),
                "step_size": rt.full_like(p, group["lr"])})  # the gradient's shape and dtype
            prev, step_size = state["prev"], state["step_size"]
            state["step"].add_(1)
            # torch's capturable branch: the sign's three cases replaced in turn
            factor = (grad * prev).sign()
            factor = rt.where(factor > 0, scalar(etaplus, p), factor)
            factor = rt.where(factor < 0, scalar(etaminus, p), factor)
            factor = rt.where(factor == 0, 1.0, factor)
            step_size.mul_(factor).clamp_(min=scalar(least, p), max=scalar(most, p))
            grad = rt.where(factor == scalar(etaminus, p), 0.0, grad)
            p.sub_(grad.sign() * step_size)
            prev.copy_(grad)
