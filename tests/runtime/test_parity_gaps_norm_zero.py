"""The norms of order 0 (counts of nonzeros): PyTorch records a node whose backward gives no
gradient for norm, linalg.vector_norm, dist and pairwise_distance (``.grad`` stays None),
and zeros for cdist and pdist."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import runtime as rt

torch = pytest.importorskip("torch")

A = np.random.default_rng(1).standard_normal((3, 4))
B = np.random.default_rng(2).standard_normal((3, 4))
B[0, 1] = A[0, 1]

CASES: dict[str, Callable[[Any, Any, Any], Any]] = {
    "norm": lambda m, a, b: m.norm(a, p=0),
    "norm_dim": lambda m, a, b: a.norm(0, dim=1, keepdim=True),
    "vector_norm": lambda m, a, b: m.linalg.vector_norm(a, ord=0, dim=0),
    "linalg_norm": lambda m, a, b: m.linalg.norm(a, ord=0, dim=1),
    "dist": lambda m, a, b: m.dist(a, b, p=0),
    "pairwise_distance": lambda m, a, b: m.nn.functional.pairwise_distance(a, b, p=0),
    "cdist": lambda m, a, b: m.cdist(a, b, p=0),
    "pdist": lambda m, a, b: m.nn.functional.pdist(a, p=0),
}


def _run(mod: Any, name: str) -> tuple[np.ndarray, bool, np.ndarray | None]:
    a = mod.tensor(A, requires_grad=True)
    y = CASES[name](mod, a, mod.tensor(B))
    recorded = y.requires_grad
    y.sum().backward()
    return (np.asarray(y.detach().numpy()), recorded,
            None if a.grad is None else np.asarray(a.grad.numpy()))


@pytest.mark.parametrize("name", list(CASES))
def test_order_zero_norm_gradient(name: str) -> None:
    values, recorded, grad = _run(rt, name)
    t_values, t_recorded, t_grad = _run(torch, name)
    np.testing.assert_array_equal(values, t_values)
    assert recorded == t_recorded
    assert (grad is None) == (t_grad is None)
    if grad is not None:
        np.testing.assert_array_equal(grad, t_grad)


def test_order_zero_norm_without_grad_is_a_plain_count() -> None:
    y = rt.linalg.vector_norm(rt.tensor(A), ord=0)
    assert not y.requires_grad and y.item() == 12.0
