"""Compiled training steps users write (module and training-loop level): equal to eager mode,
with no fallback, found by the h6 sweep."""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np

import planner
import runtime as rt

nn = rt.nn
F = rt.nn.functional


def _batches(n: int) -> list[tuple[rt.Tensor, rt.Tensor]]:
    r = np.random.default_rng(3)
    return [(rt.tensor(r.standard_normal((5, 6)).astype(np.float32)),
             rt.tensor(r.standard_normal((5, 3)).astype(np.float32))) for _ in range(n)]


def _bn_net() -> tuple[Any, Any]:
    rt.manual_seed(0)
    model = nn.Sequential(nn.Linear(6, 8), nn.ReLU(), nn.BatchNorm1d(8), nn.Linear(8, 3))
    return model, rt.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)


def test_module_to_float64_and_back_between_compiled_calls() -> None:
    """``model.to(float64)`` and back ``.to(float32)`` replace BatchNorm's running stats by new
    tensors: the plan captured before (float32, the old buffers) must not be replayed on the
    old objects (it was: the module's structure version did not change, so the buffers'
    identity was not re-checked, and the running stats stopped moving)."""
    runs = []
    for compiled in (False, True):
        model, opt = _bn_net()

        def step(x: rt.Tensor, y: rt.Tensor, model: Any = model, opt: Any = opt) -> Any:
            opt.zero_grad()
            dt = model[0].weight.dtype
            loss = F.mse_loss(model(x.to(dt)), y.to(dt))
            loss.backward()
            opt.step()
            return loss

        run = planner.compile(step) if compiled else step
        out = []
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            for i, (x, y) in enumerate(_batches(6)):
                if i == 2:
                    model.to(rt.float64)
                if i == 4:
                    model.float()
                out.append(float(run(x, y)))
                out += [t.detach().numpy().astype(np.float64).copy()
                        for t in (*model.parameters(), *model.buffers())]
        runs.append(out)
    for got, want in zip(runs[1], runs[0], strict=True):
        np.testing.assert_allclose(got, want, rtol=2e-5, atol=1e-6)
