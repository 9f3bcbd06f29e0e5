"""Adamax, NAdam, RAdam and Adadelta: torch 2.13's single-tensor updates, written (as Adam's)
so that no tensor data is read in Python: the step count is a tensor, every quantity that
depends on it is a float64 tensor op rounded once to the parameter's dtype, and RAdam's
rectification branch is a ``where``. A step using them captures into a plan, and their
hyperparameters are replay-time inputs (``Optimizer._hyper``)."""

from __future__ import annotations

from typing import Any

import runtime as rt
from runtime.optim.adam import AdamHypers
from runtime.optim.optimizer import (Optimizer, Params, Scalars, add_scaled, addcdiv_,
                                      addcmul_, check_tensor_lr, lerp_, sub_scaled_, subcdiv_)
from runtime.tensor import Tensor


def _check(lr: float, eps: float, weight_decay: float,
           betas: tuple[float, float] | None = None) -> None:
    check_tensor_lr(lr)
    if not 0.0 <= lr:
        raise ValueError(f"Invalid learning rate: {lr}")
    if not 0.0 <= eps:
        raise ValueError(f"Invalid epsilon value: {eps}")
    if betas is not None:
        if not 0.0 <= betas[0] < 1.0:
            raise ValueError(f"Invalid beta parameter at index 0: {betas[0]}")
        if not 0.0 <= betas[1] < 1.0:
            raise ValueError(f"Invalid beta parameter at index 1: {betas[1]}")
    if not 0.0 <= weight_decay:
        raise ValueError(f"Invalid weight_decay value: {weight_decay}")


def _zeros_state(p: Any, *names: str) -> dict[str, Any]:
    state = {"step": rt.tensor(0.0, device=p.device)}
    state.update((name, rt.zeros_like(p)) for name in names)
    return state


class Adamax(Optimizer):
    """Adam with the infinity norm: exp_inf = max(beta2 * exp_inf, |g| + eps)."""
    _loaded_defaults = {"foreach": None, "maximize": False, "differentiable": False,
                        "capturable": False}
    _loaded_tensors = ("step",)

    _state_made_lazily = True

    def __init__(self, params: Params, lr: float = 2e-3,
                 betas: tuple[float, float] = (0.9, 0.999), eps: float = 1e-8,
                 weight_decay: float = 0, foreach: bool | None = None, *,
                 maximize: bool = False, differentiable: bool = False,
                 capturable: bool = False) -> None:
        _check(lr, eps, weight_decay, betas)
        super().__init__(params, {"lr": lr, "betas": betas, "eps": eps,
                                  "weight_decay": weight_decay, "foreach": foreach,
                                  "maximize": maximize, "differentiable": differentiable,
                                  "capturable": capturable})

    def _step_group(self, group: dict[str, Any]) -> None:
        h = AdamHypers.of(self, group)
        scalar = Scalars()
        for p, grad in self._grads(group):
            state = self._lazy_state(p, lambda p=p: _zeros_state(p, "exp_avg", "exp_inf"))
            exp_avg, exp_inf, step_t = state["exp_avg"], state["exp_inf"], state["step"]
            step_t.add_(1)
            grad = h.weight_decay_(group, p, grad, scalar)  # always coupled in Adamax
            lerp_(exp_avg, grad, scalar(h.one_minus_beta1, p), h.number_betas)
            exp_inf.copy_(rt.maximum(exp_inf * scalar(h.beta2, p),
                                     grad.abs() + scalar(h.eps, p)))
            bias_correction = 1 - h.beta1 ** step_t.double()
            if isinstance(group["lr"], Tensor):  # torch: lr / a float, in lr's dtype
                bias_correction = bias_correction.to(group["lr"].dtype)
            clr = (h.lr / bias_correction).to(p.dtype)
            subcdiv_(p, exp_avg, exp_inf, clr)


class NAdam(Optimizer):
    """Adam with Nesterov momentum and a momentum schedule (mu_t from ``momentum_decay``)."""
    _loaded_defaults = {"maximize": False, "foreach": None, "capturable": False,
                        "differentiable": False, "decoupled_weight_decay": False}
    _loaded_tensors = ("step", "mu_product")

    _state_made_lazily = True

    def __init__(self, params: Params, lr: float = 2e-3,
                 betas: tuple[float, float] = (0.9, 0.999), eps: float = 1e-8,
                 weight_decay: float = 0, momentum_decay: float = 4e-3,
                 decoupled_weight_decay: bool = False, *, foreach: bool | None = None,
                 maximize: bool = False, capturable: bool = False,
                 differentiable: bool = False) -> None:
        _check(lr, eps, weight_decay, betas)
        if not 0.0 <= momentum_decay:
            raise ValueError(f"Invalid momentum_decay value: {momentum_decay}")
        super().__init__(params, {"lr": lr, "betas": betas, "eps": eps,
                                  "weight_decay": weight_decay,
                                  "momentum_decay": momentum_decay,
                                  "decoupled_weight_decay": decoupled_weight_decay,
                                  "maximize": maximize, "foreach": foreach,
                                  "capturable": capturable, "differentiable": differentiable})

    def _step_group(self, group: dict[str, Any]) -> None:
        h = AdamHypers.of(self, group)
        lr, beta1 = h.lr, h.beta1
        momentum_decay = self._hyper(group, "momentum_decay")
        scalar = Scalars()
        for p, grad in self._grads(group):
            state = self._lazy_state(p, lambda p=p: {  # torch's key order
                "step": rt.tensor(0.0, device=p.device),
                "mu_product": rt.tensor(1.0, device=p.device),
                "exp_avg": rt.zeros_like(p), "exp_avg_sq": rt.zeros_like(p)})
            exp_avg, exp_avg_sq = state["exp_avg"], state["exp_avg_sq"]
            step_t, mu_product = state["step"], state["mu_product"]
            step_t.add_(1)
            step = step_t.double()
            bias_correction2 = (1 - h.beta2 ** step).to(p.dtype)
            grad = h.weight_decay_(group, p, grad, scalar)
            mu = beta1 * (1.0 - 0.5 * 0.96 ** (step * momentum_decay))
            mu_next = beta1 * (1.0 - 0.5 * 0.96 ** ((step + 1) * momentum_decay))
            mu_product.mul_(mu.to(mu_product.dtype))  # torch: a float32 tensor *= a float
            h.update_moments(exp_avg, exp_avg_sq, grad, p, scalar)
            denom = (exp_avg_sq / bias_correction2).sqrt().add_(scalar(h.eps, p))
            product = mu_product.double()  # as torch reads its value: a float32 made double
            one_minus_mu, mu_n, rest, rest_next = 1.0 - mu, mu_next, 1.0 - product, \
                1.0 - product * mu_next
            if isinstance(group["lr"], Tensor):  # torch: a tensor lr's arithmetic with floats
                one_minus_mu, mu_n, rest, rest_next = (  # is in lr's dtype
                    v.to(group["lr"].dtype) for v in (one_minus_mu, mu_n, rest, rest_next))
            grad_step = (-lr * one_minus_mu / rest).to(p.dtype)
            avg_step = (-lr * mu_n / rest_next).to(p.dtype)
            addcdiv_(p, grad, denom, grad_step)
            addcdiv_(p, exp_avg, denom, avg_step)


class RAdam(Optimizer):
    """Rectified Adam: the adaptive step only once the variance of its estimate is tractable
    (rho_t > 5), the momentum step alone before."""
    _loaded_defaults = {"foreach": None, "maximize": False, "differentiable": False,
                        "decoupled_weight_decay": False, "capturable": False}
    _loaded_tensors = ("step",)

    _state_made_lazily = True

    def __init__(self, params: Params, lr: float = 1e-3,
                 betas: tuple[float, float] = (0.9, 0.999), eps: float = 1e-8,
                 weight_decay: float = 0, decoupled_weight_decay: bool = False, *,
                 foreach: bool | None = None, maximize: bool = False,
                 capturable: bool = False, differentiable: bool = False) -> None:
        _check(lr, eps, weight_decay, betas)
        super().__init__(params, {"lr": lr, "betas": betas, "eps": eps,
                                  "weight_decay": weight_decay, "maximize": maximize,
                                  "foreach": foreach, "capturable": capturable,
                                  "decoupled_weight_decay": decoupled_weight_decay,
                                  "differentiable": differentiable})

    def _step_group(self, group: dict[str, Any]) -> None:
        h = AdamHypers.of(self, group)
        beta1, beta2 = h.beta1, h.beta2
        rho_inf = 2 / h.one_minus_beta2 - 1
        scalar = Scalars()
        for p, grad in self._grads(group):
            state = self._lazy_state(p, lambda p=p: _zeros_state(p, "exp_avg", "exp_avg_sq"))
            exp_avg, exp_avg_sq, step_t = state["exp_avg"], state["exp_avg_sq"], state["step"]
            step_t.add_(1)
            step = step_t.double()
            grad = h.weight_decay_(group, p, grad, scalar)
            h.update_moments(exp_avg, exp_avg_sq, grad, p, scalar)
            bias_correction1 = 1 - beta1 ** step
            bias_correction2 = 1 - beta2 ** step
            corrected = exp_avg / bias_correction1.to(p.dtype)
            rho_t = rho_inf - 2 * step * beta2 ** step / bias_correction2
            tractable = rho_t > 5.0
            # rho_t <= 4 makes the root's argument negative: a nan the where leaves unused
            rect = rt.where(tractable, ((rho_t - 4) * (rho_t - 2) * rho_inf
                                        / ((rho_inf - 4) * (rho_inf - 2) * rho_t)), 1.0).sqrt()
            # torch's number / tensor: the tensor's reciprocal times the number (__rdiv__)
            adaptive = (exp_avg_sq.sqrt() + scalar(h.eps, p)).reciprocal() * \
                bias_correction2.sqrt().to(p.dtype)
            step_lr = corrected * scalar(h.lr, p)
            update = rt.where(tractable, step_lr * adaptive * rect.to(p.dtype), step_lr)
            p.sub_(update)


class Adadelta(Optimizer):
    """Per-element steps from running averages of squared gradients and squared updates."""
    _loaded_defaults = {"foreach": None, "maximize": False, "differentiable": False,
                        "capturable": False}
    _loaded_tensors = ("step",)

    _state_made_lazily = True

    def __init__(self, params: Params, lr: float = 1.0, rho: float = 0.9, eps: float = 1e-6,
                 weight_decay: float = 0, foreach: bool | None = None, *,
                 capturable: bool = False, maximize: bool = False,
                 differentiable: bool = False) -> None:
        _check(lr, eps, weight_decay)
        if not 0.0 <= rho <= 1.0:
            raise ValueError(f"Invalid rho value: {rho}")
        super().__init__(params, {"lr": lr, "rho": rho, "eps": eps,
                                  "weight_decay": weight_decay, "maximize": maximize,
                                  "capturable": capturable, "foreach": foreach,
                                  "differentiable": differentiable})

    def _step_group(self, group: dict[str, Any]) -> None:
        lr, eps = self._hyper(group, "lr"), self._hyper(group, "eps")
        weight_decay, rho = self._hyper(group, "weight_decay"), self._hyper(group, "rho")
        one_minus_rho = 1 - rho
        scalar = Scalars()
        for p, grad in self._grads(group):
            state = self._lazy_state(p, lambda p=p: _zeros_state(p, "square_avg", "acc_delta"))
            square_avg, acc_delta = state["square_avg"], state["acc_delta"]
            state["step"].add_(1)
            if group["weight_decay"] != 0:
                grad = add_scaled(grad, p, scalar(weight_decay, p))
            addcmul_(square_avg.mul_(scalar(rho, p)), grad, grad, scalar(one_minus_rho, p))
            std = (square_avg + scalar(eps, p)).sqrt()
            delta = (acc_delta + scalar(eps, p)).sqrt().div_(std).mul_(grad)
            addcmul_(acc_delta.mul_(scalar(rho, p)), delta, delta, scalar(one_minus_rho, p))
            sub_scaled_(p, delta, scalar(lr, p))
