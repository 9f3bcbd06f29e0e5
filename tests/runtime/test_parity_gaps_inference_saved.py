"""An inference tensor that PyTorch's backward node would save (a loss's target, a class
weight, a divisor's dividend, a tensor bound of clamp) is its error, "Inference tensors
cannot be saved for backward", where our composite saves other tensors; where PyTorch saves
none of them (l1_loss, add, where) both run."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

import runtime as rt

torch = pytest.importorskip("torch")


def _f(m: Any) -> Any:
    return m.nn.functional


CASES: dict[str, Callable[[Any, Any, Any, Any], Any]] = {
    "mse_loss": lambda m, x, y, w: _f(m).mse_loss(x * 2, y),
    "mse_loss_inference_input": lambda m, x, y, w: _f(m).mse_loss(y, x),
    "smooth_l1_loss": lambda m, x, y, w: _f(m).smooth_l1_loss(x * 2, y),
    "huber_loss": lambda m, x, y, w: _f(m).huber_loss(x * 2, y),
    "bce_with_logits": lambda m, x, y, w: _f(m).binary_cross_entropy_with_logits(x, y),
    "bce": lambda m, x, y, w: _f(m).binary_cross_entropy(x * 0.5, y),
    "cross_entropy_weight": lambda m, x, y, w: _f(m).cross_entropy(x, m.tensor([0, 1]),
                                                                   weight=w),
    "nll_loss_weight": lambda m, x, y, w: _f(m).nll_loss(x, m.tensor([0, 1]), weight=w),
    "div_dividend": lambda m, x, y, w: y / x,
    "div_divisor": lambda m, x, y, w: x / y,
    "clamp_tensor_min": lambda m, x, y, w: m.clamp(x, min=y),
    "mul": lambda m, x, y, w: x * y,
    # PyTorch saves none of these inference tensors
    "l1_loss": lambda m, x, y, w: _f(m).l1_loss(x * 2, y),
    "add": lambda m, x, y, w: x + y,
    "where": lambda m, x, y, w: m.where(y > 0, x, y),
    "cross_entropy_probs": lambda m, x, y, w: _f(m).cross_entropy(x, y.softmax(1)),
    "div_by_constant": lambda m, x, y, w: x.detach() / y,
}


def _outcome(m: Any, name: str) -> str:
    with m.inference_mode():
        y, w = m.ones(2, 3), m.ones(3)
    x = m.ones(2, 3, requires_grad=True)
    try:
        out = CASES[name](m, x, y, w)
    except RuntimeError as e:
        return str(e)
    return f"ran, requires_grad={out.requires_grad}"


@pytest.mark.parametrize("name", list(CASES))
def test_inference_tensor_saved_for_backward(name: str) -> None:
    assert _outcome(rt, name) == _outcome(torch, name)


def test_no_error_without_grad() -> None:
    with rt.inference_mode():
        y = rt.ones(2, 3)
    x = rt.ones(2, 3, requires_grad=True)
    with rt.no_grad():
        assert rt.nn.functional.mse_loss(x, y).item() == 0.0
