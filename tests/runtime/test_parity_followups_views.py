"""``Tensor.view(dtype)`` as PyTorch's: the same memory read as another dtype (the last dim
scaled by the element sizes' ratio), sharing storage and version counter; its errors."""

from __future__ import annotations

import numpy as np
import pytest

import runtime as rt

torch = pytest.importorskip("torch")

DTYPES = ["float32", "int32", "float16", "float64", "uint8", "bool", "bfloat16", "int64"]


def _outcome(fn):
    try:
        r = fn()
    except RuntimeError as e:
        return ("error", str(e))
    return (tuple(r.shape), str(r.dtype).split(".")[-1], r.float().tolist())


@pytest.mark.parametrize("dtype", DTYPES)
def test_view_dtype_matches_torch(dtype):
    a = np.random.default_rng(0).standard_normal((2, 4)).astype(np.float32)
    got = [_outcome(lambda: m.tensor(a).view(getattr(m, dtype))) for m in (torch, rt)]
    assert got[0] == got[1]


@pytest.mark.parametrize("call", [
    lambda m: m.arange(6, dtype=m.int32).reshape(2, 3).view(m.int64),
    lambda m: m.ones(4, 2).t().view(m.float16),
    lambda m: m.tensor(1.0).view(m.float16),
    lambda m: m.tensor(1.0).view(m.int32),
    lambda m: m.arange(8, dtype=m.int16).view(m.int64),
])
def test_view_dtype_errors_and_edges_match_torch(call):
    assert _outcome(lambda: call(rt)) == _outcome(lambda: call(torch))


def test_view_dtype_shares_storage_and_version():
    got = []
    for m in (torch, rt):
        z = m.zeros(4)
        w = z.view(m.int32)
        w[0] = 1
        got.append((z[0].item(), z._version, w._version, w.requires_grad))
    assert got[0] == got[1]
