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
