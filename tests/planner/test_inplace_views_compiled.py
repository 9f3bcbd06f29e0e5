"""In-place ops on views inside a captured step are functionalized (out of place, plus a
write-back through the view's inverse to the base) instead of falling back to eager."""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np

import planner
import runtime as rt


def build() -> tuple[Any, Any]:
    rt.manual_seed(0)
    model = rt.nn.Sequential(rt.nn.Linear(4, 8), rt.nn.ReLU(), rt.nn.Linear(8, 1))
    return model, rt.optim.SGD(model.parameters(), lr=0.1)


def hand_clipped(model: Any, opt: Any, x: Any, y: Any) -> Any:
    """What PyTorch's clip does by hand: the weight grads are transposed views."""
    opt.zero_grad()
    loss = ((model(x) - y) ** 2).mean()
    loss.backward()
    sq = sum((p.grad * p.grad).sum() for p in model.parameters())
    coef = (0.1 / (sq.sqrt() + 1e-6)).clamp(max=1.0)
    for p in model.parameters():
        p.grad.mul_(coef)
    opt.step()
    return loss


def test_hand_written_clip_on_grad_views_is_captured() -> None:
    (model, opt), (ref, ref_opt) = build(), build()
    step = planner.compile(hand_clipped)
    rng = np.random.default_rng(0)
    x = rt.from_numpy(rng.standard_normal((16, 4)).astype(np.float32))
    y = rt.from_numpy(rng.standard_normal((16, 1)).astype(np.float32))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for _ in range(3):
            np.testing.assert_allclose(step(model, opt, x, y).item(),
                                       hand_clipped(ref, ref_opt, x, y).item(), rtol=1e-5)
    assert step.captures == 1
    for p, q in zip(model.parameters(), ref.parameters(), strict=True):
        np.testing.assert_allclose(p.detach().numpy(), q.detach().numpy(), rtol=1e-5, atol=1e-7)
        np.testing.assert_allclose(p.grad.numpy(), q.grad.numpy(), rtol=1e-5, atol=1e-8)


def test_write_through_a_transposed_view_reaches_the_base() -> None:
    def f(w: Any, b: Any) -> Any:
        with rt.no_grad():
            v = w.t()  # a view of a parameter-like state tensor
            v.add_(b)
            v.mul_(2.0)
        return (w * 1.0).sum(), v * 1.0

    rng = np.random.default_rng(1)
    a = rng.standard_normal((3, 2)).astype(np.float32)
    b = rng.standard_normal((2, 3)).astype(np.float32)
    w_c, w_e = rt.tensor(a.copy()), rt.tensor(a.copy())
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        (got_sum, got_v) = planner.compile(f)(w_c, rt.tensor(b))
    want_sum, want_v = f(w_e, rt.tensor(b))
    np.testing.assert_allclose(w_c.numpy(), w_e.numpy(), rtol=1e-6)
    np.testing.assert_allclose(w_c.numpy(), (a + b.T) * 2, rtol=1e-6)
    np.testing.assert_allclose(got_v.numpy(), want_v.numpy(), rtol=1e-6)
    np.testing.assert_allclose(got_sum.item(), want_sum.item(), rtol=1e-6)


def test_partial_view_of_a_grad_is_captured() -> None:
    """A row of a .grad (a partial view of the transposed grad view) updated in place: the
    grad becomes a copy with that row replaced; parameters equal eager step for step."""
    (model, opt), (ref, ref_opt) = build(), build()

    def f(model: Any, opt: Any, x: Any) -> Any:
        opt.zero_grad()
        loss = model(x).sum()
        loss.backward()
        model[0].weight.grad[0].mul_(0.5)  # a row: a partial view
        opt.step()
        return loss

    step = planner.compile(f)
    x = rt.from_numpy(np.random.default_rng(0).standard_normal((2, 4)).astype(np.float32))
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a fallback to eager warns
        for _ in range(3):
            np.testing.assert_allclose(step(model, opt, x).item(), f(ref, ref_opt, x).item(),
                                       rtol=1e-6)
    for p, q in zip(model.parameters(), ref.parameters(), strict=True):
        np.testing.assert_allclose(p.detach().numpy(), q.detach().numpy(), rtol=1e-6,
                                   atol=1e-7)
    assert step.captures == 1
