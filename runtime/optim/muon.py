"""Muon, torch 2.13's update (``torch.optim.Muon``): Nesterov momentum, then the update
orthogonalized by a quintic Newton-Schulz iteration in bfloat16, decoupled weight decay and a
learning rate scaled by the matrix's shape. For 2-D parameters only."""

from __future__ import annotations

import math
from typing import Any

import runtime as rt
from runtime.optim.optimizer import Optimizer, Params, Scalars, lerp, lerp_
from runtime.tensor import Tensor

# Keller Jordan's constants, torch's defaults
EPS = 1e-7
DEFAULT_A = 3.4445
DEFAULT_B = -4.7750
DEFAULT_C = 2.0315
DEFAULT_NS_STEPS = 5


def _rounded(x: Tensor) -> Tensor:
    """x rounded to bfloat16 and held in float32: torch's bfloat16 matmul and addmm on the CPU
    accumulate and scale in float32 and round their result once, which this reproduces
    exactly (a product of bfloat16 tensors rounded at each step does not)."""
    return x.to(rt.bfloat16).float()


def zeropower_via_newtonschulz(grad: Tensor, ns_coefficients: tuple[float, float, float],
                               ns_steps: int, eps: float) -> Tensor:
    """The Newton-Schulz orthogonalization of a matrix (U S' V^T, S' near 1), in bfloat16 as
    torch's: X = G / max(|G|, eps) (transposed when tall), then ``ns_steps`` times
    X <- a X + (b A + c A^2) X with A = X X^T."""
    if ns_steps >= 100:
        raise ValueError("Number of steps must be less than 100 for computational efficiency")
    if len(grad.shape) != 2:
        raise ValueError("Input tensor gradient must be a 2D matrix")
    if len(ns_coefficients) != 3:
        raise ValueError("Coefficients must be a tuple of exactly 3 values")
    a, b, c = ns_coefficients
    tall = grad.size(0) > grad.size(1)
    x = grad.to(rt.bfloat16)
    if tall:
        x = x.T
    x = (x / x.norm().clamp(min=eps)).float()
    for _ in range(ns_steps):
        gram = _rounded(x @ x.T)
        x = _rounded(x * a + _rounded(gram * b + (gram @ gram) * c) @ x)
    return (x.T if tall else x).to(rt.bfloat16)


def adjusted_lr(lr: Any, adjust_lr_fn: str | None, shape: tuple[int, ...]) -> Any:
    """lr scaled so that the orthogonalized update's RMS is alike across shapes: by
    sqrt(max(1, A / B)) ("original", Keller Jordan's) or 0.2 sqrt(max(A, B))
    ("match_rms_adamw", Moonshot's)."""
    rows, cols = shape[:2]
    if adjust_lr_fn is None or adjust_lr_fn == "original":
        ratio = math.sqrt(max(1, rows / cols))
    elif adjust_lr_fn == "match_rms_adamw":
        ratio = 0.2 * math.sqrt(max(rows, cols))
    else:
        ratio = 1.0
    return lr * ratio


class Muon(Optimizer):
    """Momentum orthogonalized by Newton-Schulz, torch's hyperparameters and defaults."""

    _state_made_lazily = True
    # read as Python numbers by the Newton-Schulz iteration
    _plan_constants = ("eps", "ns_coefficients", "ns_steps")

    def __init__(self, params: Params, lr: float = 1e-3, weight_decay: float = 0.1,
                 momentum: float = 0.95, nesterov: bool = True,
                 ns_coefficients: tuple[float, float, float] = (DEFAULT_A, DEFAULT_B,
                                                                DEFAULT_C),
                 eps: float = EPS, ns_steps: int = DEFAULT_NS_STEPS,
                 adjust_lr_fn: str | None = None) -> None:
        if isinstance(lr, Tensor) and lr.numel() != 1:
            raise ValueError("Tensor lr must be 1-element")
        if not 0.0 <= lr:
            raise ValueError(f"Learning rate should be >= 0 but is: {lr}")
        if not 0.0 <= momentum:
            raise ValueError(f"momentum should be >= 0 but is: {momentum}")
        if not 0.0 <= weight_decay:
            raise ValueError(f"weight decay should be >= 0 but is: {weight_decay}")
        if adjust_lr_fn is not None and adjust_lr_fn not in ("original", "match_rms_adamw"):
            raise ValueError(f"Adjust learning rate function {adjust_lr_fn} is not supported")
        defaults = {"lr": lr, "weight_decay": weight_decay, "momentum": momentum,
                    "nesterov": nesterov, "ns_coefficients": ns_coefficients, "eps": eps,
                    "ns_steps": ns_steps, "adjust_lr_fn": adjust_lr_fn}
        super().__init__(params, defaults)
        for group in self.param_groups:
            for p in group["params"]:
                if p.ndim != 2:
                    raise ValueError(f"Muon only supports 2D parameters whereas we found a "
                                     f"parameter with size: {p.size()}")

    def _step_group(self, group: dict[str, Any]) -> None:
        lr, momentum = self._hyper(group, "lr"), self._hyper(group, "momentum")
        decay = 1 - lr * self._hyper(group, "weight_decay")
        scalar = Scalars()
        for p in group["params"]:
            grad = p.grad
            if grad is None:
                continue
            if grad.ndim != 2:
                raise ValueError("Param gradient must be a 2D matrix")
            buf = self._lazy_state(p, lambda p=p: {
                "momentum_buffer": rt.zeros_like(p)})["momentum_buffer"]
            number = not isinstance(group["momentum"], Tensor)
            lerp_(buf, grad, scalar(1 - momentum, p), number)
            update = lerp(grad, buf, scalar(momentum, p), number) if group["nesterov"] else buf
            update = zeropower_via_newtonschulz(update, group["ns_coefficients"],
                                                group["ns_steps"], group["eps"])
            step = adjusted_lr(lr, group["adjust_lr_fn"], tuple(p.shape))
            p.mul_(scalar(decay, p))
            p.sub_(update.to(p.dtype) * scalar(step, p))
