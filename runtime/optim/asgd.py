"""ASGD: averaged SGD (torch's single-tensor update, its capturable form: eta and mu are
float32 scalar tensors updated by tensor ops on the step, so no tensor data is read in
Python and a step captures into a plan)."""

from __future__ import annotations

from typing import Any

import runtime as rt
from runtime.optim.optimizer import Optimizer, Params, Scalars, check_tensor_lr


class ASGD(Optimizer):
    """SGD with a decaying step eta_t = lr / (1 + lambd * lr * t) ** alpha and a running
    average ``ax`` of the parameters from step ``t0`` on (mu_t = 1 / max(1, t - t0))."""
    _loaded_defaults = {"foreach": None, "maximize": False, "differentiable": False,
                        "capturable": False}
    _loaded_tensors = ("step", "eta", "mu")
    _loaded_on_device = True

    _state_made_lazily = True

    def __init__(self, params: Params, lr: float = 1e-2, lambd: float = 1e-4,
                 alpha: float = 0.75, t0: float = 1e6, weight_decay: float = 0,
                 foreach: bool | None = None, maximize: bool = False,
                 differentiable: bool = False, capturable: bool = False) -> None:
        check_tensor_lr(lr)
        if not 0.0 <= lr:
            raise ValueError(f"Invalid learning rate: {lr}")
        if not 0.0 <= weight_decay:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        super().__init__(params, {"lr": lr, "lambd": lambd, "alpha": alpha, "t0": t0,
                                  "weight_decay": weight_decay, "foreach": foreach,
                                  "maximize": maximize, "differentiable": differentiable,
                                  "capturable": capturable})

    def _step_group(self, group: dict[str, Any]) -> None:
        lr, lambd, alpha = (self._hyper(group, k) for k in ("lr", "lambd", "alpha"))
        t0, weight_decay = self._hyper(group, "t0"), self._hyper(group, "weight_decay")
        scalar = Scalars()
        for p, grad in self._grads(group):
            state = self._lazy_state(p, lambda p=p: {
                "step": rt.tensor(0.0, device=p.device),
                "eta": rt.tensor(float(group["lr"]), device=p.device),
                "mu": rt.tensor(1.0, device=p.device), "ax": rt.zeros_like(p)})
            step_t, eta, mu, ax = state["step"], state["eta"], state["mu"], state["ax"]
            step_t.add_(1)
            if group["weight_decay"] != 0:
                grad = grad.add(p * scalar(weight_decay, p))
            # torch reads eta's (float32) value as a Python float: the decay's arithmetic is
            # float64, rounded once to the parameter's dtype
            p.mul_((1 - lambd * eta.double()).to(p.dtype))
            p.sub_(grad * eta.to(p.dtype))
            # torch copies the parameter while mu is 1, else moves ax towards it by mu
            ax.copy_(rt.where(mu == 1, p, ax + (p - ax) * mu.to(p.dtype)))
            # torch makes each new value a tensor of the default dtype, then copies it in
            # (into a float64 eta or mu after a state dict was loaded into float64 params)
            step, scalar_dtype = step_t.double(), rt.get_default_dtype()
            eta.copy_((lr / (1 + lambd * lr * step) ** alpha).to(scalar_dtype))
            mu.copy_((1 / (step - t0).clamp(min=1)).to(scalar_dtype))
