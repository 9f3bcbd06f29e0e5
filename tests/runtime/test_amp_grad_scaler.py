"""rt.amp.GradScaler against torch.amp.GradScaler on the CPU: the same losses, scales, skipped
steps and parameters over a run with an injected inf, growth, state_dict, and the misuse
errors."""

from __future__ import annotations

import pickle
from typing import Any

import numpy as np
import pytest

import runtime as rt


def _torch() -> Any:
    return pytest.importorskip("torch")


def _run(lib: Any, steps: int, inf_at: set[int], **scaler_kw: Any) -> dict[str, Any]:
    g = np.random.default_rng(0)
    w1 = lib.tensor((g.standard_normal((16, 8)) * 0.3).astype(np.float32), requires_grad=True)
    w2 = lib.tensor((g.standard_normal((4, 16)) * 0.3).astype(np.float32), requires_grad=True)
    xs = g.standard_normal((steps, 6, 8)).astype(np.float32)
    ys = g.integers(0, 4, (steps, 6))
    opt = lib.optim.SGD([w1, w2], lr=0.1, momentum=0.9)
    scaler = lib.amp.GradScaler("cpu", **scaler_kw)
    scales, losses, skipped = [], [], []
    for i in range(steps):
        opt.zero_grad()
        with lib.autocast("cpu"):
            h = lib.nn.functional.relu(lib.nn.functional.linear(lib.tensor(xs[i]), w1))
            out = lib.nn.functional.linear(h, w2)
            loss = lib.nn.functional.cross_entropy(out, lib.tensor(ys[i]))
        scaler.scale(loss).backward()
        if i in inf_at:
            w1.grad[0, 0] = float("inf")
        before = w2.detach().clone()
        scaler.step(opt)
        skipped.append(bool((w2 == before).all()))
        scaler.update()
        scales.append(scaler.get_scale())
        losses.append(loss.item())
    return {"scales": scales, "losses": losses, "skipped": skipped,
            "w1": w1.detach().numpy().copy(), "w2": w2.detach().numpy().copy(),
            "state": scaler.state_dict()}


def test_run_with_an_injected_inf_as_torch() -> None:
    torch = _torch()
    kw = {"init_scale": 2.0 ** 10, "growth_interval": 3}
    got = _run(rt, 9, {2, 6}, **kw)
    want = _run(torch, 9, {2, 6}, **kw)
    assert got["scales"] == want["scales"] == [1024.0, 1024.0, 512.0, 512.0, 512.0, 1024.0,
                                                512.0, 512.0, 512.0]
    assert got["skipped"] == want["skipped"]
    assert got["skipped"][2] and got["skipped"][6] and not any(got["skipped"][:2])
    assert got["state"] == want["state"]
    np.testing.assert_allclose(got["losses"], want["losses"], rtol=2 ** -6)
    np.testing.assert_allclose(got["w1"], want["w1"], atol=2 ** -6)
    np.testing.assert_allclose(got["w2"], want["w2"], atol=2 ** -6)


def test_scale_multiplies_nested_outputs_and_unscale_divides() -> None:
    scaler = rt.amp.GradScaler("cpu", init_scale=8.0)
    a, b = rt.ones(2), rt.full((3,), 2.0)
    out = scaler.scale([a, (b, a)])
    assert isinstance(out, list) and isinstance(out[1], tuple)
    assert out[0].tolist() == [8.0, 8.0] and out[1][0].tolist() == [16.0] * 3
    w = rt.ones(2, requires_grad=True)
    opt = rt.optim.SGD([w], lr=1.0)
    scaler.scale((w * 3).sum()).backward()
    assert w.grad.tolist() == [24.0, 24.0]
    scaler.unscale_(opt)
    assert w.grad.tolist() == [3.0, 3.0]
    with pytest.raises(RuntimeError, match="unscale_\\(\\) has already been called on this "
                                           "optimizer since the last update\\(\\)."):
        scaler.unscale_(opt)
    scaler.step(opt)  # the gradients are not unscaled twice
    assert w.tolist() == [-2.0, -2.0]
    with pytest.raises(RuntimeError, match="step\\(\\) has already been called since the "
                                           "last update\\(\\)."):
        scaler.step(opt)
    with pytest.raises(RuntimeError, match="unscale_\\(\\) is being called after step\\(\\)."):
        scaler.unscale_(opt)
    scaler.update()
    assert scaler.get_scale() == 8.0


def test_growth_keeps_the_scale_finite() -> None:
    scaler = rt.amp.GradScaler("cpu", init_scale=2.0 ** 127, growth_interval=1)
    w = rt.ones(1, requires_grad=True)
    opt = rt.optim.SGD([w], lr=0.0)
    for _ in range(2):
        scaler.scale(w.sum()).backward()
        scaler.step(opt)
        scaler.update()
    assert scaler.get_scale() == 2.0 ** 127  # 2**128 overflows float32: not taken


def test_errors_and_disabled_as_torch() -> None:
    scaler = rt.amp.GradScaler("cpu")
    opt = rt.optim.SGD([rt.ones(1, requires_grad=True)], lr=0.1)
    with pytest.raises(AssertionError, match="Attempted step but _scale is None."):
        scaler.step(opt)
    with pytest.raises(RuntimeError, match="Closure use is not currently supported"):
        scaler.step(opt, closure=lambda: None)
    with pytest.raises(AssertionError, match="The growth factor must be > 1.0."):
        rt.amp.GradScaler("cpu", growth_factor=1.0)
    off = rt.amp.GradScaler("cpu", enabled=False)
    t = rt.ones(2)
    assert off.scale(t) is t and off.get_scale() == 1.0 and off.state_dict() == {}
    with pytest.raises(RuntimeError, match="The source state dict is empty"):
        scaler.load_state_dict({})


def test_state_dict_round_trip_and_pickle() -> None:
    torch = _torch()
    scaler = rt.amp.GradScaler("cpu", init_scale=4.0, growth_interval=7)
    theirs = torch.amp.GradScaler("cpu", init_scale=4.0, growth_interval=7)
    assert scaler.state_dict() == theirs.state_dict()
    scaler.scale(rt.ones(1))
    other = rt.amp.GradScaler("cpu")
    other.load_state_dict({**scaler.state_dict(), "scale": 32.0, "_growth_tracker": 5})
    assert other.get_scale() == 32.0 and other._get_growth_tracker() == 5
    assert other.get_growth_interval() == 7
    back = pickle.loads(pickle.dumps(scaler))
    assert back.state_dict() == scaler.state_dict()
