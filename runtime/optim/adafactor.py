"""Adafactor, torch 2.13's single-tensor update (``torch.optim.Adafactor``), written as the
other updates here: no tensor data is read in Python (torch reads the step, the parameter's
norm and the update's norm with ``.item()``; here they are float64 tensor ops, rounded to
the parameter's dtype where torch's Python floats meet a tensor), so a step captures into a
plan."""

from __future__ import annotations

from typing import Any

import runtime as rt
from runtime.optim.optimizer import Optimizer, Params, Scalars, check_tensor_lr
from runtime.tensor import Tensor


class Adafactor(Optimizer):
    """Second moments factored into row and column statistics for matrices (full for
    vectors); a relative step min(lr, 1 / sqrt(t)) scaled by the parameter's RMS (at least
    ``eps[1]``); updates clipped to RMS ``d``; decoupled weight decay by lr."""
    _loaded_defaults = {"foreach": None}
    _loaded_tensors = ("step",)

    _state_made_lazily = True

    def __init__(self, params: Params, lr: float = 1e-2, beta2_decay: float = -0.8,
                 eps: tuple[float | None, float] = (None, 1e-3), d: float = 1.0,
                 weight_decay: float = 0.0, *, foreach: bool | None = None,
                 maximize: bool = False) -> None:
        check_tensor_lr(lr)
        if not 0.0 <= lr:
            raise ValueError(f"Learning rate should be >= 0 but is: {lr}")
        if not 0.0 >= beta2_decay:
            raise ValueError(f"beta2_decay should be <= 0 but is: {beta2_decay}")
        if eps[0] is not None and not 0.0 <= eps[0]:
            raise ValueError(f"epsilon1 should be >= 0 but is: {eps[0]}")
        if not 0.0 <= eps[1]:
            raise ValueError(f"epsilon2 should be >= 0 but is: {eps[1]}")
        if not 1.0 <= d:
            raise ValueError(f"Clipping threshold d should be >= 1 but is: {d}")
        if not 0.0 <= weight_decay:
            raise ValueError(f"weight_decay should be >= 0 but is: {weight_decay}")
        super().__init__(params, {"lr": lr, "beta2_decay": beta2_decay, "eps": eps, "d": d,
                                  "weight_decay": weight_decay, "foreach": foreach,
                                  "maximize": maximize})

    def _step_group(self, group: dict[str, Any]) -> None:
        lr, beta2_decay = self._hyper(group, "lr"), self._hyper(group, "beta2_decay")
        d, weight_decay = self._hyper(group, "d"), self._hyper(group, "weight_decay")
        eps2 = self._hyper(group, "eps", 1)
        decay = 1 - lr * weight_decay
        scalar = Scalars()
        for p, grad in self._grads(group):
            state = self._lazy_state(p, lambda p=p: _initial_state(p))
            eps1 = (rt.finfo(p.dtype).eps if group["eps"][0] is None
                    else self._hyper(group, "eps", 0))
            step_t = state["step"]
            step_t.add_(1)
            step = step_t.double()
            one_minus_beta2 = (step ** beta2_decay).to(p.dtype)
            rho = (1 / step ** 0.5).clamp(max=lr)
            alpha = (p.norm(2).double() / p.numel() ** 0.5).clamp(min=eps2) * rho
            if group["weight_decay"] != 0:
                p.mul_(scalar(decay, p))
            if grad.dim() > 1:
                row_var, col_var = state["row_var"], state["col_var"]
                row_var.lerp_(grad.norm(dim=-1, keepdim=True).square() / grad.size(-1),
                              one_minus_beta2)
                col_var.lerp_(grad.norm(dim=-2, keepdim=True).square() / grad.size(-2),
                              one_minus_beta2)
                var_estimate = (row_var @ col_var).div_(
                    row_var.mean(dim=-2, keepdim=True).clamp(min=scalar(eps1, p)))
            else:
                variance = state["variance"]
                variance.lerp_(grad * grad, one_minus_beta2)
                var_estimate = variance.clone()
            update = var_estimate.clamp_(min=scalar(eps1 * eps1, p)).rsqrt() * grad
            denom = (update.norm(2).double() / (update.numel() ** 0.5 * d)).clamp(min=1.0)
            p.sub_(update * (alpha / denom).to(p.dtype))


def _initial_state(p: Tensor) -> dict[str, Tensor]:
    """A parameter's state (the shapes and dtype of its gradient, which are its own)."""
    state = {"step": rt.tensor(0.0)}
    if p.dim() > 1:
        state["row_var"] = p.new_zeros((*p.shape[:-1], 1))
        state["col_var"] = p.new_zeros((*p.shape[:-2], 1, p.shape[-1]))
    else:
        state["variance"] = rt.zeros_like(p)
    return state
