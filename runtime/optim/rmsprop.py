"""RMSprop (torch's single-tensor update: smoothing alpha, optional centering and momentum)."""

from __future__ import annotations

from typing import Any

import runtime as rt
from runtime.optim.optimizer import (Optimizer, Params, Scalars, add_scaled, addcmul, addcmul_,
                                      check_tensor_lr, lerp_, sub_scaled_, subcdiv_)


def _initial_state(p: Any, group: dict[str, Any]) -> dict[str, Any]:
    state = {"step": rt.tensor(0.0), "square_avg": rt.zeros_like(p)}
    if group["momentum"] > 0:
        state["momentum_buffer"] = rt.zeros_like(p)
    if group["centered"]:
        state["grad_avg"] = rt.zeros_like(p)
    return state


class RMSprop(Optimizer):
    _loaded_defaults = {"momentum": 0, "centered": False, "foreach": None, "maximize": False,
                        "differentiable": False, "capturable": False}
    _loaded_tensors = ("step",)
    _state_made_lazily = True

    def __init__(
        self,
        params: Params,
        lr: float = 1e-2,
        alpha: float = 0.99,
        eps: float = 1e-8,
        weight_decay: float = 0,
        momentum: float = 0,
        centered: bool = False,
        capturable: bool = False,
        foreach: bool | None = None,
        maximize: bool = False,
        differentiable: bool = False,
    ) -> None:
        check_tensor_lr(lr)
        if not 0.0 <= lr:
            raise ValueError(f"Invalid learning rate: {lr}")
        if not 0.0 <= eps:
            raise ValueError(f"Invalid epsilon value: {eps}")
        if not 0.0 <= momentum:
            raise ValueError(f"Invalid momentum value: {momentum}")
        if not 0.0 <= weight_decay:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        if not 0.0 <= alpha:
            raise ValueError(f"Invalid alpha value: {alpha}")
        defaults = {
            "lr": lr,
            "momentum": momentum,
            "alpha": alpha,
            "eps": eps,
            "centered": centered,
            "weight_decay": weight_decay,
            "capturable": capturable,
            "foreach": foreach,
            "maximize": maximize,
            "differentiable": differentiable,
        }
        super().__init__(params, defaults)

    def _step_group(self, group: dict[str, Any]) -> None:
        # numbers from _hyper (replay-time inputs of a compiled step); branches read the
        # group itself: whether a number is zero is part of a compiled step's guard
        lr, alpha, eps = self._hyper(group, "lr"), self._hyper(group, "alpha"), self._hyper(group, "eps")
        weight_decay, momentum = self._hyper(group, "weight_decay"), self._hyper(group, "momentum")
        one_minus_alpha = 1 - alpha
        scalar = Scalars()
        for p, grad in self._grads(group):
            state = self._lazy_state(p, lambda p=p: _initial_state(p, group))
            square_avg = state["square_avg"]
            state["step"].add_(1)
            if group["weight_decay"] != 0:
                grad = add_scaled(grad, p, scalar(weight_decay, p))
            addcmul_(square_avg.mul_(scalar(alpha, p)), grad, grad, scalar(one_minus_alpha, p))
            if group["centered"]:
                grad_avg = state["grad_avg"]
                lerp_(grad_avg, grad, scalar(one_minus_alpha, p),
                      not isinstance(group["alpha"], rt.Tensor))
                avg = addcmul(square_avg, grad_avg, grad_avg, -1).sqrt_()
            else:
                avg = square_avg.sqrt()
            avg = avg.add_(scalar(eps, p))
            if group["momentum"] > 0:
                buf = state["momentum_buffer"]
                buf.mul_(scalar(momentum, p)).addcdiv_(grad, avg)
                sub_scaled_(p, buf, scalar(lr, p))
            else:
                subcdiv_(p, grad, avg, scalar(lr, p))
