"""Adam and AdamW (torch's single-tensor update, its capturable form: no tensor data is read
in Python, so a step can be captured into a graph)."""

from __future__ import annotations

from typing import Any

import runtime as rt
from runtime.optim.optimizer import Optimizer, Params, Scalars


class Adam(Optimizer):
    def __init__(
        self,
        params: Params,
        lr: float = 1e-3,
        betas: tuple[float, float] = (0.9, 0.999),
        eps: float = 1e-8,
        weight_decay: float = 0,
        amsgrad: bool = False,
        *,
        maximize: bool = False,
        decoupled_weight_decay: bool = False,
    ) -> None:
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
        defaults = {
            "lr": lr,
            "betas": tuple(betas),
            "eps": eps,
            "weight_decay": weight_decay,
            "amsgrad": amsgrad,
            "maximize": maximize,
            "decoupled_weight_decay": decoupled_weight_decay,
        }
        super().__init__(params, defaults)

    def _step_group(self, group: dict[str, Any]) -> None:
        # numbers from _hyper (replay-time inputs of a compiled step); branches read the
        # group itself: whether a number is zero is part of a compiled step's guard
        lr, eps = self._hyper(group, "lr"), self._hyper(group, "eps")
        weight_decay, amsgrad = self._hyper(group, "weight_decay"), group["amsgrad"]
        beta1, beta2 = self._hyper(group, "betas", 0), self._hyper(group, "betas", 1)
        decay = 1 - lr * weight_decay
        one_minus_beta1 = 1 - beta1
        one_minus_beta2 = 1 - beta2
        scalar = Scalars()
        for p in group["params"]:
            if p.grad is None:
                continue
            grad = -p.grad if group["maximize"] else p.grad
            state = self.state[p]
            if not state:
                state["step"] = rt.tensor(0.0, device=p.device)
                state["exp_avg"] = rt.zeros_like(p)
                state["exp_avg_sq"] = rt.zeros_like(p)
                if amsgrad:
                    state["max_exp_avg_sq"] = rt.zeros_like(p)
            exp_avg, exp_avg_sq, step_t = state["exp_avg"], state["exp_avg_sq"], state["step"]

            step_t.add_(1)
            if group["weight_decay"] != 0:
                if group["decoupled_weight_decay"]:
                    p.mul_(scalar(decay, p))
                else:
                    grad = grad.add(p * scalar(weight_decay, p))

            exp_avg.lerp_(grad, scalar(one_minus_beta1, p))
            exp_avg_sq.mul_(scalar(beta2, p)).add_(grad * scalar(one_minus_beta2, p) * grad)

            # torch's capturable branch: the bias corrections are tensor ops on the step
            # tensor, so the step reads no tensor data in Python and captures as a graph.
            # They are computed in float64 (1 - 0.999 loses 5 digits in float32) and rounded
            # once to the parameter's dtype, as the non-capturable update's Python floats are
            step64 = step_t.double()
            bias_correction1 = 1 - beta1**step64
            bias_correction2 = 1 - beta2**step64
            step_size = (lr / bias_correction1).to(p.dtype)
            bias_correction2_sqrt = bias_correction2.sqrt().to(p.dtype)

            if amsgrad:
                max_exp_avg_sq = state["max_exp_avg_sq"]
                max_exp_avg_sq.copy_(rt.maximum(max_exp_avg_sq, exp_avg_sq))
                denom = (max_exp_avg_sq.sqrt() / bias_correction2_sqrt).add_(scalar(eps, p))
            else:
                denom = (exp_avg_sq.sqrt() / bias_correction2_sqrt).add_(scalar(eps, p))
            # p.addcdiv_(exp_avg, denom, value=-step_size), with a tensor step size
            p.sub_((exp_avg / denom).mul_(step_size))


class AdamW(Adam):
    """Adam with decoupled weight decay: p <- p * (1 - lr * weight_decay) before the Adam update."""

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
    ) -> None:
        super().__init__(
            params,
            lr,
            betas,
            eps,
            weight_decay,
            amsgrad,
            maximize=maximize,
            decoupled_weight_decay=True,
        )
