"""Adagrad (torch's single-tensor update; the state exists from construction, as in torch)."""

from __future__ import annotations

from typing import Any

import runtime as rt
from runtime.optim.optimizer import (Optimizer, Params, Scalars, add_scaled, addcmul_,
                                      check_tensor_lr, subcdiv_)
from runtime.tensor import Tensor


class Adagrad(Optimizer):
    _loaded_defaults = {"foreach": None, "maximize": False, "differentiable": False, "fused": None}
    _loaded_tensors = ("step",)
    _state_made_lazily = True

    def __init__(
        self,
        params: Params,
        lr: float = 1e-2,
        lr_decay: float = 0,
        weight_decay: float = 0,
        initial_accumulator_value: float = 0,
        eps: float = 1e-10,
        foreach: bool | None = None,
        *,
        maximize: bool = False,
        differentiable: bool = False,
        fused: bool | None = None,
    ) -> None:
        check_tensor_lr(lr)
        if not 0.0 <= lr:
            raise ValueError(f"Invalid learning rate: {lr}")
        if not 0.0 <= lr_decay:
            raise ValueError(f"Invalid lr_decay value: {lr_decay}")
        if not 0.0 <= weight_decay:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        if not 0.0 <= initial_accumulator_value:
            raise ValueError(
                f"Invalid initial_accumulator_value value: {initial_accumulator_value}")
        if not 0.0 <= eps:
            raise ValueError(f"Invalid epsilon value: {eps}")
        defaults = {
            "lr": lr,
            "lr_decay": lr_decay,
            "eps": eps,
            "weight_decay": weight_decay,
            "initial_accumulator_value": initial_accumulator_value,
            "foreach": foreach,
            "maximize": maximize,
            "differentiable": differentiable,
            "fused": fused,
        }
        super().__init__(params, defaults)
        for group in self.param_groups:
            for p in group["params"]:
                self.state[p].update(self._initial_state(p))

    def _initial_state(self, p: Tensor) -> dict[str, Tensor]:
        """A parameter's state: made at construction, or at its first step (a parameter of
        a group added later), from the optimizer's initial_accumulator_value (torch's: not
        the group's)."""
        return {"step": rt.tensor(0.0),
                "sum": rt.full_like(p, self.defaults["initial_accumulator_value"])}

    def share_memory(self) -> None:
        """``share_memory_()`` of each parameter's state sum, as torch's."""
        for group in self.param_groups:
            for p in group["params"]:
                self.state[p]["sum"].share_memory_()

    def _step_group(self, group: dict[str, Any]) -> None:
        # numbers from _hyper (replay-time inputs of a compiled step); branches read the
        # group itself: whether a number is zero is part of a compiled step's guard
        lr, lr_decay = self._hyper(group, "lr"), self._hyper(group, "lr_decay")
        weight_decay, eps = self._hyper(group, "weight_decay"), self._hyper(group, "eps")
        scalar = Scalars()
        for p, grad in self._grads(group):
            state = self._lazy_state(p, lambda p=p: self._initial_state(p))
            step_t, state_sum = state["step"], state["sum"]
            step_t.add_(1)
            if group["weight_decay"] != 0:
                grad = add_scaled(grad, p, scalar(weight_decay, p))
            # torch's clr = lr / (1 + (step - 1) * lr_decay), on the step tensor in float64
            # (so that a compiled step reads no tensor data in Python)
            clr = (lr / (1 + (step_t.double() - 1) * lr_decay)).to(p.dtype)
            addcmul_(state_sum, grad, grad, 1)
            std = state_sum.sqrt().add_(scalar(eps, p))
            subcdiv_(p, grad, std, clr)
