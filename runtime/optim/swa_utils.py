"""`optim.swa_utils`, as in torch 2.13: stochastic weight averaging and exponential moving
averages of a model's parameters (AveragedModel and its averaging functions), update_bn to
recompute batch-norm statistics for the averaged weights, and the SWALR schedule."""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Iterable
from copy import deepcopy
from typing import Any

import runtime as rt
from runtime.autograd import no_grad
from runtime.nn.batchnorm import _BatchNorm
from runtime.nn.module import Module
from runtime.optim.lr_scheduler import LRScheduler, _per_group
from runtime.optim.optimizer import Optimizer
from runtime.tensor import Tensor
from runtime.tracing import is_tracing

__all__ = ["SWALR", "AveragedModel", "get_ema_avg_fn", "get_ema_multi_avg_fn",
           "get_swa_avg_fn", "get_swa_multi_avg_fn", "update_bn"]

AvgFn = Callable[[Tensor, Tensor, Any], Tensor]
MultiAvgFn = Callable[[list[Tensor], list[Tensor], Any], None]


def _check_decay(decay: float) -> None:
    if decay < 0.0 or decay > 1.0:
        raise ValueError(f"Invalid decay value {decay} provided. Please provide a value in "
                         "[0,1] range.")


def get_ema_multi_avg_fn(decay: float = 0.999) -> MultiAvgFn:
    """An in-place EMA of lists of tensors: ema <- decay * ema + (1 - decay) * current."""
    _check_decay(decay)

    def ema_update(ema_params: list[Tensor], current_params: list[Tensor], _: Any) -> None:
        with no_grad():
            for ema, current in zip(ema_params, current_params, strict=True):
                if ema.dtype.is_floating_point:
                    ema.lerp_(current, 1 - decay)
                else:
                    ema.copy_(ema * decay + current * (1 - decay))

    return ema_update


def get_swa_multi_avg_fn() -> MultiAvgFn:
    """An in-place running mean of lists of tensors (the n-th model weighs 1 / (n + 1))."""
    def swa_update(averaged_params: list[Tensor], current_params: list[Tensor],
                   num_averaged: Tensor | int) -> None:
        with no_grad():
            for averaged, current in zip(averaged_params, current_params, strict=True):
                if averaged.dtype.is_floating_point:
                    averaged.lerp_(current, float(1 / (num_averaged + 1)))
                else:
                    averaged.add_((current - averaged) / (num_averaged + 1))

    return swa_update


def get_ema_avg_fn(decay: float = 0.999) -> AvgFn:
    """The EMA of one tensor: decay * ema + (1 - decay) * current."""
    _check_decay(decay)

    def ema_update(ema_param: Tensor, current_param: Tensor, num_averaged: Any) -> Tensor:
        with no_grad():
            return decay * ema_param + (1 - decay) * current_param

    return ema_update


def get_swa_avg_fn() -> AvgFn:
    """The running mean of one tensor after ``num_averaged`` models."""
    def swa_update(averaged_param: Tensor, current_param: Tensor,
                   num_averaged: Tensor | int) -> Tensor:
        with no_grad():
            return averaged_param + (current_param - averaged_param) / (num_averaged + 1)

    return swa_update


class AveragedModel(Module):
    """A copy of ``model`` whose parameters (and, with ``use_buffers``, buffers) are a
    running average of ``model``'s at each ``update_parameters(model)``: the equal-weight
    mean (SWA) by default, or as ``avg_fn`` (per tensor) or ``multi_avg_fn`` (per list, in
    place) average, e.g. ``get_ema_multi_avg_fn(0.999)``. Without ``use_buffers`` the
    buffers are copied from ``model``. Its forward is the copy's."""

    def __init__(self, model: Module, device: Any = None, avg_fn: AvgFn | None = None,
                 multi_avg_fn: MultiAvgFn | None = None, use_buffers: bool = False) -> None:
        super().__init__()
        if avg_fn is not None and multi_avg_fn is not None:
            raise AssertionError("Only one of avg_fn and multi_avg_fn should be provided")
        self.module = deepcopy(model)
        if device is not None:
            self.module = self.module.to(device)
        self.register_buffer("n_averaged", rt.tensor(0, dtype=rt.int64, device=device))
        self.avg_fn = avg_fn
        self.multi_avg_fn = multi_avg_fn
        self.use_buffers = use_buffers

    def forward(self, *args: Any, **kwargs: Any) -> Any:
        return self.module(*args, **kwargs)

    def update_parameters(self, model: Module) -> None:
        if self.use_buffers:
            mine = itertools.chain(self.module.parameters(), self.module.buffers())
            theirs = itertools.chain(model.parameters(), model.buffers())
        else:
            mine, theirs = self.parameters(), model.parameters()
        pairs = [(a.detach(), c.detach().to(a.device))
                 for a, c in zip(mine, theirs, strict=False)]
        averaged, current = [a for a, _ in pairs], [c for _, c in pairs]
        with no_grad():
            if is_tracing():  # a plan's copy-or-average, chosen by the count (not read)
                self._captured_update(averaged, current)
            elif bool(self.n_averaged == 0):
                for a, c in zip(averaged, current, strict=True):
                    a.copy_(c)
            elif self.multi_avg_fn is not None:
                self.multi_avg_fn(averaged, current, self.n_averaged)
            else:  # torch's per-tensor update where it has no multi-tensor kernels (CPU)
                avg_fn = self.avg_fn or get_swa_avg_fn()
                for a, c in zip(averaged, current, strict=True):
                    a.copy_(avg_fn(a, c, self.n_averaged.to(a.device)))
            if not self.use_buffers:
                for b_swa, b_model in zip(self.module.buffers(), model.buffers(), strict=True):
                    b_swa.copy_(b_model.detach().to(b_swa.device))
            self.n_averaged += 1

    def _captured_update(self, averaged: list[Tensor], current: list[Tensor]) -> None:
        """update_parameters' branch on ``n_averaged == 0`` without reading the count, so
        that a compiled step replays it: each average is the model's value on the first
        update and ``avg_fn``'s (or ``multi_avg_fn``'s) after, the values eager mode gives."""
        first = self.n_averaged == 0
        if self.multi_avg_fn is not None:
            updated = [a.clone() for a in averaged]
            self.multi_avg_fn(updated, current, self.n_averaged)
        else:
            avg_fn = self.avg_fn or get_swa_avg_fn()
            updated = [avg_fn(a, c, self.n_averaged.to(a.device))
                       for a, c in zip(averaged, current, strict=True)]
        for a, c, u in zip(averaged, current, updated, strict=True):
            a.copy_(rt.where(first.to(a.device), c, u))


def update_bn(loader: Iterable[Any], model: Module, device: Any = None) -> None:
    """Recompute ``model``'s batch-norm running statistics: reset, then one pass over
    ``loader`` (a batch is a tensor, or a list or tuple whose first element is the input)
    with a cumulative average (momentum None); the modes and momenta are restored."""
    momenta = {}
    for module in model.modules():
        if isinstance(module, _BatchNorm):
            module.reset_running_stats()
            momenta[module] = module.momentum
    if not momenta:
        return
    was_training = model.training
    model.train()
    for module in momenta:
        module.momentum = None
    with no_grad():
        for batch in loader:
            if isinstance(batch, (list, tuple)):
                batch = batch[0]
            if device is not None:
                batch = batch.to(device)
            model(batch)
    for module, momentum in momenta.items():
        module.momentum = momentum
    model.train(was_training)


class SWALR(LRScheduler):
    """Anneals each group's lr to its ``swa_lr`` over ``anneal_epochs`` steps (cosine or
    linear), then keeps it there."""

    def __init__(self, optimizer: Optimizer, swa_lr: float | list[float],
                 anneal_epochs: int = 10, anneal_strategy: str = "cos",
                 last_epoch: int = -1) -> None:
        for lr, group in zip(_per_group("swa_lr", optimizer, swa_lr), optimizer.param_groups,
                             strict=True):
            group["swa_lr"] = lr
        if anneal_strategy not in ("cos", "linear"):
            raise ValueError(f"anneal_strategy must be one of 'cos' or 'linear', instead got "
                             f"{anneal_strategy}")
        self._anneal_strategy = anneal_strategy
        if not isinstance(anneal_epochs, int) or anneal_epochs < 0:
            raise ValueError(f"anneal_epochs must be equal or greater than 0, got "
                             f"{anneal_epochs}")
        self.anneal_epochs = anneal_epochs
        super().__init__(optimizer, last_epoch)

    def anneal_func(self, t: float) -> float:
        return t if self._anneal_strategy == "linear" else (1 - math.cos(math.pi * t)) / 2

    def get_lr(self) -> list[float]:
        step = self._step_count - 1
        if self.anneal_epochs == 0:
            step = max(1, step)
        # the lr before annealing, recovered from the current one (torch's chainable form)
        prev_alpha = self.anneal_func(max(0, min(1, (step - 1) / max(1, self.anneal_epochs))))
        groups = self.optimizer.param_groups
        prev_lrs = [group["swa_lr"] if prev_alpha == 1
                    else (group["lr"] - prev_alpha * group["swa_lr"]) / (1 - prev_alpha)
                    for group in groups]
        alpha = self.anneal_func(max(0, min(1, step / max(1, self.anneal_epochs))))
        return [group["swa_lr"] * alpha + lr * (1 - alpha)
                for group, lr in zip(groups, prev_lrs, strict=True)]
