"""Empty tensors through reductions and composites, as PyTorch (compiled steps: the planner's
tests/planner/test_check_parity.py runs ``empty_values`` compiled).

PyTorch returns an empty softmax of a (0, 5) tensor along either dim, sums to 0 and means to
NaN over nothing, and refuses a max over nothing (no identity) with its own errors.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
import torch

import runtime as rt
from runtime.ops import functional as F
from runtime.ops.composite import cross_entropy, layer_norm, log_softmax, softmax

EMPTY_SHAPES = [((0, 5), 0), ((0, 5), 1), ((5, 0), 1), ((5, 0), -2), ((2, 0, 3), 1)]


def empty_values(lib: Any, x: Any, dim: int) -> list[Any]:
    """What each library computes for x (softmax & co. take ``dim`` in both)."""
    if lib is torch:
        sm, lsm, ln = torch.softmax, torch.log_softmax, torch.nn.functional.layer_norm
    else:
        sm, lsm, ln = softmax, log_softmax, layer_norm
    return [sm(x, dim), lsm(x, dim), x.sum(dim), x.sum(dim, keepdim=True), x.sum(),
            x.mean(dim), x.mean(), ln(x, x.shape[-1:]), sm(x * 2.0, dim).sum(dim)]


def compare_with_torch(ours: list[Any], theirs: list[Any]) -> None:
    for i, (a, t) in enumerate(zip(ours, theirs)):
        t = t.detach().numpy()
        a = a.detach().numpy()
        assert a.shape == t.shape and a.dtype == t.dtype, f"expression {i}"
        np.testing.assert_array_equal(a, t, err_msg=f"expression {i}")


@pytest.mark.parametrize(("shape", "dim"), EMPTY_SHAPES)
def test_eager_reductions_of_empty_tensors_match_torch(shape: tuple[int, ...], dim: int) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # numpy's "mean of empty slice"
        ours = empty_values(rt, rt.zeros(*shape), dim)
    compare_with_torch(ours, empty_values(torch, torch.zeros(*shape), dim))


def test_empty_tensor_has_an_empty_gradient_without_warnings() -> None:
    x = rt.zeros(0, 5, requires_grad=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # numpy's forward "mean of empty slice"
        loss = (softmax(x, 0) * 2.0).sum() + x.mean(0).sum() + x.mean()
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # MeanBackward divided by the zero count
        loss.backward()
    tx = torch.zeros(0, 5, requires_grad=True)
    ((torch.softmax(tx, 0) * 2.0).sum() + tx.mean(0).sum() + tx.mean()).backward()
    assert x.grad.shape == tuple(tx.grad.shape) == (0, 5)


def test_cross_entropy_of_no_rows_matches_torch() -> None:
    x, t = rt.zeros(0, 3), rt.tensor(np.zeros(0, dtype=np.int64))
    tx, tt = torch.zeros(0, 3), torch.zeros(0, dtype=torch.long)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        for reduction in ("mean", "sum", "none"):
            ours = cross_entropy(x, t, reduction=reduction).numpy()
            theirs = torch.nn.functional.cross_entropy(tx, tt, reduction=reduction).numpy()
            np.testing.assert_array_equal(ours, theirs)


ERRORS: list[tuple[str, Callable[[Any], Any]]] = [
    ("amax(x, 0)", lambda x: x.amax(0)),
    ("amax(x, (0, 1))", lambda x: x.amax((0, 1))),
    ("amax(x)", lambda x: x.amax()),
    ("max(x)", lambda x: x.max()),
    ("max(x, 0)", lambda x: x.max(0)),
    ("min(x)", lambda x: x.min()),
    ("min(x, 0)", lambda x: x.min(0)),
    ("argmax(x)", lambda x: x.argmax() if isinstance(x, torch.Tensor) else F.argmax(x)),
    ("argmin(x, 0)", lambda x: x.argmin(0) if isinstance(x, torch.Tensor) else F.argmin(x, 0)),
]


@pytest.mark.parametrize(("name", "fn"), ERRORS, ids=[n for n, _ in ERRORS])
def test_max_over_nothing_raises_torchs_error(name: str, fn: Callable[[Any], Any]) -> None:
    with pytest.raises(Exception) as theirs:
        fn(torch.zeros(0, 5))
    with pytest.raises(Exception) as ours:
        fn(rt.zeros(0, 5))
    assert type(ours.value) is type(theirs.value)
    assert str(ours.value) == str(theirs.value)


@pytest.mark.parametrize("name", ["amax", "argmax"])
def test_max_over_a_nonempty_dim_of_an_empty_tensor_is_empty(name: str) -> None:
    ours = getattr(F, name)(rt.zeros(0, 5), 1)
    theirs = getattr(torch, name)(torch.zeros(0, 5), 1)
    assert ours.shape == tuple(theirs.shape) == (0,)
    assert ours.dtype.name == str(theirs.dtype).removeprefix("torch.")
