"""SGD with momentum, dampening, Nesterov and weight decay (torch's single-tensor update order)."""

from __future__ import annotations

from typing import Any

import runtime as rt
from runtime.optim.optimizer import (Optimizer, Params, Scalars, add_scaled, add_scaled_,
                                      check_tensor_lr, sub_scaled_)
from runtime.tracing import is_tracing


class SGD(Optimizer):
    _loaded_defaults = {"nesterov": False, "maximize": False, "foreach": None,
                        "differentiable": False, "fused": False}
    def __init__(
        self,
        params: Params,
        lr: float = 1e-3,
        momentum: float = 0,
        dampening: float = 0,
        weight_decay: float = 0,
        nesterov: bool = False,
        *,
        maximize: bool = False,
        foreach: bool | None = None,
        differentiable: bool = False,
        fused: bool | None = None,
    ) -> None:
        check_tensor_lr(lr)
        if lr < 0.0:
            raise ValueError(f"Invalid learning rate: {lr}")
        if momentum < 0.0:
            raise ValueError(f"Invalid momentum value: {momentum}")
        if weight_decay < 0.0:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        if nesterov and (momentum <= 0 or dampening != 0):
            raise ValueError("Nesterov momentum requires a momentum and zero dampening")
        defaults = {
            "lr": lr,
            "momentum": momentum,
            "dampening": dampening,
            "weight_decay": weight_decay,
            "nesterov": nesterov,
            "maximize": maximize,
            "foreach": foreach,
            "differentiable": differentiable,
            "fused": fused,
        }
        super().__init__(params, defaults)

    def _steps_make_state(self, group: dict[str, Any]) -> bool:
        # the momentum buffers, made inside a capture where a first step's buffer (the
        # gradient) is not what an update of a zero buffer gives (dampening)
        return group["momentum"] != 0 and group["dampening"] != 0

    def _step_group(self, group: dict[str, Any]) -> None:
        # numbers from _hyper (replay-time inputs of a compiled step); branches read the
        # group itself: whether a number is zero is part of a compiled step's guard
        lr, momentum = self._hyper(group, "lr"), self._hyper(group, "momentum")
        dampening, weight_decay = self._hyper(group, "dampening"), self._hyper(group, "weight_decay")
        undamped = 1 - dampening
        scalar = Scalars()
        for p, grad in self._grads(group):
            if group["weight_decay"] != 0:
                grad = add_scaled(grad, p, scalar(weight_decay, p))
            if group["momentum"] != 0:
                state = self.state[p]
                buf = state.get("momentum_buffer")
                if buf is None and is_tracing() and group["dampening"] == 0:
                    # a zero buffer updated is the gradient without dampening: made outside
                    # the capture (Optimizer._lazy_state), the first call's plan fits the next
                    buf = self._lazy_state(p, lambda p=p: {
                        "momentum_buffer": rt.zeros_like(p)})["momentum_buffer"]
                if buf is None:
                    buf = grad.detach().clone()
                    state["momentum_buffer"] = buf
                else:
                    add_scaled_(buf.mul_(scalar(momentum, p)), grad, scalar(undamped, p))
                grad = add_scaled(grad, buf, scalar(momentum, p)) if group["nesterov"] else buf
            sub_scaled_(p, grad, scalar(lr, p))
