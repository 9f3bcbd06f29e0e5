"""A binding's common replay as straight-line code (``_Replayer._written_out``): the same
write-back as the general loop, kept for calls with no draws and no effects around them."""

from __future__ import annotations

from typing import Any

import numpy as np

import planner
import runtime as rt


def _setup(dropout: float) -> tuple[Any, Any, Any, tuple[Any, ...]]:
    rt.manual_seed(0)
    model = rt.nn.Sequential(rt.nn.Linear(6, 8), rt.nn.Tanh(), rt.nn.Dropout(dropout),
                             rt.nn.Linear(8, 3))
    opt = rt.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)

    def step(x: Any, y: Any) -> Any:
        opt.zero_grad()
        loss = rt.nn.functional.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        return loss

    rng = np.random.default_rng(1)
    args = (rt.from_numpy(rng.standard_normal((5, 6)).astype(np.float32)),
            rt.from_numpy(rng.integers(0, 3, 5)))
    return model, opt, step, args


def _replayer(compiled: Any) -> Any:
    (entry,) = compiled._cache.values()
    return entry.bindings[0]._replayer()


def test_written_out_replay_writes_back_what_the_loop_does() -> None:
    runs = []
    for written_out in (True, False):
        model, opt, step, args = _setup(0.0)
        compiled = planner.compile(step, backend="llvm")
        compiled(*args)  # eager: creates the momentum buffers
        compiled(*args)
        replayer = _replayer(compiled)
        assert replayer.fast is not None
        if not written_out:
            replayer.fast = None
        losses = [float(compiled(*args)) for _ in range(3)]
        grads = [p.grad.numpy().copy() for p in model.parameters()]
        buffers = [opt.state[p]["momentum_buffer"].numpy().copy() for p in model.parameters()]
        runs.append((losses, [p.detach().numpy().copy() for p in model.parameters()], grads,
                     buffers))
    for a, b in zip(*runs, strict=True):
        for x, y in zip(a, b, strict=True):
            np.testing.assert_array_equal(x, y)


def test_a_step_that_draws_keeps_the_general_replay() -> None:
    _, _, step, args = _setup(0.5)
    compiled = planner.compile(step, backend="llvm")
    for _ in range(3):
        compiled(*args)
    assert _replayer(compiled).fast is None  # its draws commit with the write-back


def test_a_step_that_writes_nothing_replays_written_out() -> None:
    """A step returning gradients (no state written) takes the straight-line replay too, and
    returns what the general loop returns; an interrupt-safe write-back has nothing to hold."""
    x = rt.tensor(np.arange(6, dtype=np.float32).reshape(2, 3), requires_grad=True)
    w = rt.tensor(np.linspace(-1, 1, 3, dtype=np.float32), requires_grad=True)

    def step(x: Any, w: Any) -> Any:
        loss = ((x * w).tanh() ** 2).sum()
        gx, gw = rt.autograd.grad(loss, [x, w])
        return loss, {"gx": gx, "gw": gw}

    compiled = planner.compile(step, backend="llvm")
    compiled(x, w)
    replayer = _replayer(compiled)
    assert replayer.fast is not None
    assert "_hold" not in replayer.fast.source
    outs = []
    for written_out in (True, False):
        if not written_out:
            replayer.fast = None
        loss, grads = compiled(x, w)
        outs.append((loss.detach().numpy(), grads["gx"].numpy(), grads["gw"].numpy()))
        assert loss.dtype == rt.float32 and grads["gx"].shape == (2, 3)
    eager_loss, eager = step(x, w)
    for a, b in zip(*outs, strict=True):
        np.testing.assert_array_equal(a, b)
    np.testing.assert_allclose(outs[0][0], eager_loss.detach().numpy(), rtol=1e-6)
    np.testing.assert_allclose(outs[0][1], eager["gx"].numpy(), rtol=1e-5, atol=1e-6)
