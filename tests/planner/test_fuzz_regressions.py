"""Regressions a differential fuzzer of planner.compile against eager mode found: each a
minimised step, compiled equal to eager (and to a value worked out by hand)."""

from __future__ import annotations

import warnings
from collections.abc import Callable

import numpy as np
import pytest

import planner
import runtime as rt


def f32(values: object) -> rt.Tensor:
    return rt.tensor(np.asarray(values, np.float32))


def shift_in_place(x: rt.Tensor, y: rt.Tensor) -> rt.Tensor:
    x.add_(1)
    return (y * 1).sum()


def test_a_write_to_an_argument_overlapping_another_runs_eagerly() -> None:
    # a[1:] and a[:2] share a[1]: the write through the first shows in the second
    a = f32([1.0, 2.0, 3.0])
    step = planner.compile(shift_in_place)
    with pytest.warns(RuntimeWarning, match="argument 0, whose memory overlaps"):
        got = step(a[1:], a[:2])
    assert got.item() == 1.0 + 3.0
    np.testing.assert_array_equal(a.numpy(), [1.0, 3.0, 4.0])
    b = f32([1.0, 2.0, 3.0])
    assert shift_in_place(b[1:], b[:2]).item() == got.item()


def test_overlapping_arguments_read_only_are_captured() -> None:
    # a language model's inputs and targets: two views of one batch of tokens
    def make() -> tuple[rt.Tensor, rt.optim.SGD, Callable[..., rt.Tensor]]:
        w = rt.tensor(np.linspace(-1.0, 1.0, 12, dtype=np.float32).reshape(4, 3),
                      requires_grad=True)
        opt = rt.optim.SGD([w], lr=0.5)

        def step(inputs: rt.Tensor, targets: rt.Tensor) -> rt.Tensor:
            logits = rt.nn.functional.embedding(inputs, w)
            loss = rt.nn.functional.cross_entropy(logits.reshape(-1, 3),
                                                  targets.reshape(-1).remainder(3))
            opt.zero_grad()
            loss.backward()
            opt.step()
            return loss.detach()

        return w, opt, step

    w_eager, _, eager = make()
    w, _, step = make()
    compiled = planner.compile(step)
    rng = np.random.default_rng(0)
    for _ in range(3):
        tokens = rt.tensor(rng.integers(0, 4, (2, 6)))
        with warnings.catch_warnings():
            warnings.simplefilter("error", RuntimeWarning)
            got = compiled(tokens[:, :-1], tokens[:, 1:])
        expected = eager(tokens[:, :-1], tokens[:, 1:])
        np.testing.assert_allclose(got.numpy(), expected.numpy(), rtol=1e-6)
        np.testing.assert_allclose(w.detach().numpy(), w_eager.detach().numpy(), rtol=1e-6,
                                   atol=1e-7)
    assert compiled.captures == 1
