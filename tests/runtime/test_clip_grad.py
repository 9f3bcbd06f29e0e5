"""nn.utils.clip_grad_norm_ / clip_grad_value_ against torch, and captured without fallback."""

from __future__ import annotations

import math
import warnings
from typing import Any

import numpy as np
import pytest

import planner
import runtime as rt

torch = pytest.importorskip("torch")


def pair(seed: int = 0, scale: float = 1.0) -> tuple[list[Any], list[Any]]:
    rng = np.random.default_rng(seed)
    shapes = [(3, 4), (4,), (2, 3)]
    ours, theirs = [], []
    for shape in shapes:
        w, g = rng.standard_normal(shape).astype(np.float32), rng.standard_normal(shape)
        g = (g * scale).astype(np.float32)
        p, q = rt.tensor(w, requires_grad=True), torch.tensor(w, requires_grad=True)
        p.grad, q.grad = rt.tensor(g), torch.tensor(g)
        ours.append(p)
        theirs.append(q)
    return ours, theirs


@pytest.mark.parametrize("norm_type", [2.0, 1, 3.5, math.inf, -math.inf, 0])
@pytest.mark.parametrize("max_norm", [0.5, 100.0])
def test_clip_grad_norm_matches_torch(norm_type: float, max_norm: float) -> None:
    ours, theirs = pair()
    got = rt.nn.utils.clip_grad_norm_(ours, max_norm, norm_type=norm_type, foreach=False)
    want = torch.nn.utils.clip_grad_norm_(theirs, max_norm, norm_type=norm_type, foreach=False)
    np.testing.assert_allclose(got.item(), want.item(), rtol=1e-5)
    for p, q in zip(ours, theirs, strict=True):
        np.testing.assert_allclose(p.grad.numpy(), q.grad.numpy(), rtol=1e-5, atol=1e-7)


def test_clip_grad_norm_edge_cases() -> None:
    assert rt.nn.utils.clip_grad_norm_([rt.zeros(2, requires_grad=True)], 1.0).item() == 0.0
    ours, _ = pair(scale=math.inf)
    with pytest.raises(RuntimeError, match="The total norm of order 2.0 for gradients"):
        rt.nn.utils.clip_grad_norm_(ours, 1.0, error_if_nonfinite=True)
    single, _ = pair()
    norm = rt.nn.utils.clip_grad_norm_(single[0], 1.0)  # one tensor, not a list
    assert abs(norm.item() - float(np.linalg.norm(pair()[0][0].grad.numpy()))) < 1e-5
    with pytest.raises(TypeError, match="foreach must be a bool or None"):
        rt.nn.utils.clip_grad_norm_(single, 1.0, foreach="yes")  # type: ignore[arg-type]


def test_clip_grad_value_matches_torch() -> None:
    ours, theirs = pair(scale=3.0)
    assert rt.nn.utils.clip_grad_value_(ours, 0.7) is None
    torch.nn.utils.clip_grad_value_(theirs, 0.7)
    for p, q in zip(ours, theirs, strict=True):
        np.testing.assert_array_equal(p.grad.numpy(), q.grad.numpy())


def build() -> tuple[Any, Any]:
    rt.manual_seed(0)
    model = rt.nn.Sequential(rt.nn.Linear(5, 8), rt.nn.ReLU(), rt.nn.Linear(8, 1))
    return model, rt.optim.AdamW(model.parameters(), lr=1e-2)


@pytest.mark.parametrize("clip", ["norm", "norm_inf", "value"])
def test_clipping_in_a_compiled_step_equals_eager(clip: str) -> None:
    def train(model: Any, opt: Any, x: Any, y: Any) -> Any:
        opt.zero_grad()
        loss = ((model(x) - y) ** 2).mean()
        loss.backward()
        if clip == "value":
            rt.nn.utils.clip_grad_value_(model.parameters(), 0.05)
        else:
            rt.nn.utils.clip_grad_norm_(model.parameters(), 0.1,
                                        norm_type=math.inf if clip == "norm_inf" else 2)
        opt.step()
        return loss

    (model, opt), (ref, ref_opt) = build(), build()
    step = planner.compile(train)
    rng = np.random.default_rng(3)
    x = rt.from_numpy(rng.standard_normal((16, 5)).astype(np.float32))
    y = rt.from_numpy(rng.standard_normal((16, 1)).astype(np.float32))
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a fallback to eager warns
        for _ in range(4):
            np.testing.assert_allclose(step(model, opt, x, y).item(),
                                       train(ref, ref_opt, x, y).item(), rtol=1e-5)
    for p, q in zip(model.parameters(), ref.parameters(), strict=True):
        np.testing.assert_allclose(p.detach().numpy(), q.detach().numpy(), rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(p.grad.numpy(), q.grad.numpy(), rtol=1e-5, atol=1e-7)
    # AdamW's state is made outside the capture (Optimizer._lazy_state): one capture, and
    # the first call runs its plan
    assert (step.captures, step.warmups) == (1, 0)
