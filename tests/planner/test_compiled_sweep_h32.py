"""Tensor methods fixed by h32 (tests/runtime/test_ported_torch_h32.py) inside
planner.compile'd training steps: a gather with a 0-d index, cdist/dist with p < 1 where a
difference is 0, a weighted cov, diff with prepend/append, a scatter_add of an empty index of
another rank, cummax, logcumsumexp. Compiled equals eager over two calls of an SGD step on the
same inputs (the losses and the parameters after each call), with no fallback warning."""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import planner
import runtime as rt

G = np.random.default_rng(32)
DATA = rt.tensor(G.normal(size=(3, 4)).astype(np.float32))
SHIFTED = DATA + rt.tensor([[1.0, 0.0, 0.0, 0.0]])  # zero differences in three columns
AWEIGHTS = rt.tensor(G.uniform(1.0, 3.0, size=4).astype(np.float32))
EMPTY_INDEX = rt.zeros((0, 4), dtype=rt.int64)

# name -> loss of (parameter w of shape (3, 4), data x of shape (3, 4))
CASES: dict[str, Callable[[rt.Tensor, rt.Tensor], rt.Tensor]] = {
    "gather_0d_index": lambda w, x: rt.gather((w * x).reshape(-1), 0, rt.tensor(5)) * 3
    + w.pow(2).sum(),
    "cdist_p_half": lambda w, x: rt.cdist(w, w.detach() + (SHIFTED - DATA), p=0.5).sum()
    + (w * x).sum(),
    "dist_p_half": lambda w, x: rt.dist(w, w.detach() + (SHIFTED - DATA), 0.5)
    + (w * x).mean(),
    "cov_aweights": lambda w, x: rt.cov(w * x, aweights=AWEIGHTS).sum(),
    "diff_prepend_append": lambda w, x: rt.diff(w * x, n=2, dim=1, prepend=w[:, :1],
                                                append=x[:, :1]).pow(2).sum(),
    "scatter_add_empty_index": lambda w, x: (w * x).reshape(-1)[:4].scatter_add(
        0, EMPTY_INDEX, rt.zeros(0, 4)).sum() + w.sum(),
    "cummax": lambda w, x: (w * x).cummax(1).values.sum(),
    "logcumsumexp": lambda w, x: (w * x).logcumsumexp(1).sum(),
}


def _fallbacks(caught: list[warnings.WarningMessage]) -> list[str]:
    return [str(w.message) for w in caught
            if w.category is RuntimeWarning and str(w.message).startswith("planner")]


def _train(loss_fn: Callable[[rt.Tensor, rt.Tensor], rt.Tensor], compiled: bool
           ) -> tuple[list[float], list[np.ndarray]]:
    w = rt.nn.Parameter(rt.tensor(np.linspace(-1.0, 1.0, 12, dtype=np.float32).reshape(3, 4)))
    opt = rt.optim.SGD([w], lr=0.05)

    def step(x: rt.Tensor) -> rt.Tensor:
        opt.zero_grad()
        loss = loss_fn(w, x)
        loss.backward()
        opt.step()
        return loss.detach()

    run: Any = planner.compile(step) if compiled else step
    losses, params = [], []
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for _ in range(2):
            losses.append(float(run(DATA)))
            params.append(w.detach().numpy().copy())
    assert not _fallbacks(caught)
    return losses, params


@pytest.mark.parametrize("name", sorted(CASES))
def test_compiled_equals_eager(name: str) -> None:
    got_losses, got_params = _train(CASES[name], compiled=True)
    want_losses, want_params = _train(CASES[name], compiled=False)
    np.testing.assert_allclose(got_losses, want_losses, rtol=1e-5, atol=1e-6)
    for g, w in zip(got_params, want_params, strict=True):
        assert np.isfinite(w).all()
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-6)
