"""Adam and AdamW (torch's single-tensor update, its capturable form: no tensor data is read
in Python, so a step can be captured into a graph)."""

from __future__ import annotations

from typing import Any

import runtime as rt
from runtime.optim.optimizer import (Optimizer, Params, Scalars, add_scaled, addcmul_,
                                      check_tensor_lr, lerp_, subcdiv_, to_scalar)
from runtime.tensor import Tensor


class AdamHypers:
    """One group's Adam-style hyperparameters for an update (``Optimizer._hyper``: numbers, or
    replay-time inputs of a compiled step), with what every parameter's update derives from
    them computed once; and the two steps Adam, NAdam and RAdam share. Branches read the group
    itself: whether a number is zero is part of a compiled step's guard."""

    def __init__(self, lr: Any, eps: Any, weight_decay: Any, beta1: Any, beta2: Any,
                 number_betas: bool = True) -> None:
        self.lr, self.eps, self.weight_decay = lr, eps, weight_decay
        self.number_betas = number_betas  # the group's betas are numbers (captured or not)
        self.beta1, self.beta2 = beta1, beta2
        self.decay = 1 - lr * weight_decay  # decoupled weight decay's factor
        self.one_minus_beta1 = 1 - beta1
        self.one_minus_beta2 = 1 - beta2

    @classmethod
    def of(cls, opt: Optimizer, group: dict[str, Any]) -> AdamHypers:
        return cls(opt._hyper(group, "lr"), opt._hyper(group, "eps"),
                   opt._hyper(group, "weight_decay"), opt._hyper(group, "betas", 0),
                   opt._hyper(group, "betas", 1),
                   not isinstance(to_scalar(group["betas"][0]), Tensor))

    def weight_decay_(self, group: dict[str, Any], p: Tensor, grad: Tensor,
                      scalar: Scalars) -> Tensor:
        """The gradient with weight decay: added to it, or (decoupled) applied to ``p``."""
        if group["weight_decay"] != 0:
            if group.get("decoupled_weight_decay"):
                p.mul_(scalar(self.decay, p))
            else:
                grad = add_scaled(grad, p, scalar(self.weight_decay, p))
        return grad

    def update_moments(self, exp_avg: Tensor, exp_avg_sq: Tensor, grad: Tensor, p: Tensor,
                       scalar: Scalars) -> None:
        """The running first and second moments of the gradient, in place."""
        lerp_(exp_avg, grad, scalar(self.one_minus_beta1, p), self.number_betas)
        addcmul_(exp_avg_sq.mul_(scalar(self.beta2, p)), grad, grad,
                 scalar(self.one_minus_beta2, p))


def _initial_state(p: Tensor, amsgrad: bool) -> dict[str, Tensor]:
    state = {"step": rt.tensor(0.0, device=p.device), "exp_avg": rt.zeros_like(p),
             "exp_avg_sq": rt.zeros_like(p)}
    if amsgrad:
        state["max_exp_avg_sq"] = rt.zeros_like(p)
    return state


def _check_betas(betas: Any, foreach: bool | None, capturable: bool) -> None:
    """torch's Adam (and AdamW): both betas Python floats or both tensors (an int, or a numpy
    float32, is neither), a tensor one of one element, and not with foreach unless
    capturable."""
    if not (all(isinstance(b, float) for b in betas[:2])
            or all(isinstance(b, Tensor) for b in betas[:2])):
        raise ValueError("betas must be either both floats or both Tensors")
    for i, beta in enumerate(betas[:2]):
        if isinstance(beta, Tensor):
            if not capturable and foreach:
                raise ValueError(f"betas[{i}] as a Tensor is not supported for "
                                 "capturable=False and foreach=True")
            if beta.numel() != 1:
                raise ValueError(f"Tensor betas[{i}] must be 1-element")


class Adam(Optimizer):
    _loaded_defaults = {"amsgrad": False, "maximize": False, "foreach": None, "capturable": False,
                        "differentiable": False, "decoupled_weight_decay": False, "fused": None}
    _loaded_tensors = ("step",)
    _state_made_lazily = True

    def __init__(
        self,
        params: Params,
        lr: float = 1e-3,
        betas: tuple[float, float] = (0.9, 0.999),
        eps: float = 1e-8,
        weight_decay: float = 0,
        amsgrad: bool = False,
        *,
        foreach: bool | None = None,
        maximize: bool = False,
        capturable: bool = False,
        differentiable: bool = False,
        fused: bool | None = None,
        decoupled_weight_decay: bool = False,
    ) -> None:
        check_tensor_lr(lr, foreach, capturable)
        if not 0.0 <= lr:
            raise ValueError(f"Invalid learning rate: {lr}")
        if not 0.0 <= eps:
            raise ValueError(f"Invalid epsilon value: {eps}")
        if not 0.0 <= betas[0] < 1.0:
            raise ValueError(f"Invalid beta parameter at index 0: {betas[0]}")
        if not 0.0 <= betas[1] < 1.0:
            raise ValueError(f"Invalid beta parameter at index 1: {betas[1]}")
        if not 0.0 <= weight_decay:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        _check_betas(betas, foreach, capturable)
        defaults = {
            "lr": lr,
            "betas": tuple(map(to_scalar, betas)),  # torch's: a tuple, tensors made 0-d
            "eps": eps,
            "weight_decay": weight_decay,
            "amsgrad": amsgrad,
            "maximize": maximize,
            "foreach": foreach,
            "capturable": capturable,
            "differentiable": differentiable,
            "fused": fused,
            "decoupled_weight_decay": decoupled_weight_decay,
        }
        super().__init__(params, defaults)

    def _step_group(self, group: dict[str, Any]) -> None:
        h = AdamHypers.of(self, group)
        amsgrad = group["amsgrad"]
        scalar = Scalars()
        for p, grad in self._grads(group):
            state = self._lazy_state(p, lambda p=p: _initial_state(p, amsgrad))
            exp_avg, exp_avg_sq, step_t = state["exp_avg"], state["exp_avg_sq"], state["step"]

            step_t.add_(1)
            grad = h.weight_decay_(group, p, grad, scalar)
            h.update_moments(exp_avg, exp_avg_sq, grad, p, scalar)

            # torch's capturable branch: the bias corrections are tensor ops on the step
            # tensor, so the step reads no tensor data in Python and captures as a graph.
            # They are computed in float64 (1 - 0.999 loses 5 digits in float32) and rounded
            # once to the parameter's dtype, as the non-capturable update's Python floats are
            step64 = step_t.double()
            bias_correction1 = 1 - h.beta1**step64
            bias_correction2 = 1 - h.beta2**step64
            if isinstance(group["lr"], Tensor):  # torch: lr / a float, in lr's dtype
                bias_correction1 = bias_correction1.to(group["lr"].dtype)
            step_size = (h.lr / bias_correction1).to(p.dtype)
            bias_correction2_sqrt = bias_correction2.sqrt().to(p.dtype)

            if amsgrad:
                max_exp_avg_sq = state["max_exp_avg_sq"]
                max_exp_avg_sq.copy_(rt.maximum(max_exp_avg_sq, exp_avg_sq))
                denom = (max_exp_avg_sq.sqrt() / bias_correction2_sqrt).add_(scalar(h.eps, p))
            else:
                denom = (exp_avg_sq.sqrt() / bias_correction2_sqrt).add_(scalar(h.eps, p))
            subcdiv_(p, exp_avg, denom, step_size)


class AdamW(Adam):
    """Adam with decoupled weight decay: p <- p * (1 - lr * weight_decay) before the Adam update."""

    def _fill_loaded(self) -> None:
        super()._fill_loaded()
        for group in self.param_groups:  # torch's AdamW.__setstate__
            group["decoupled_weight_decay"] = True

    def __init__(
        self,
        params: Params,
        lr: float = 1e-3,
        betas: tuple[float, float] = (0.9, 0.999),
        eps: float = 1e-8,
        weight_decay: float = 1e-2,
        amsgrad: bool = False,
        *,
        maximize: bool = False,
        foreach: bool | None = None,
        capturable: bool = False,
        differentiable: bool = False,
        fused: bool | None = None,
    ) -> None:
        super().__init__(
            params,
            lr,
            betas,
            eps,
            weight_decay,
            amsgrad,
            foreach=foreach,
            maximize=maximize,
            capturable=capturable,
            differentiable=differentiable,
            fused=fused,
            decoupled_weight_decay=True,
        )
