"""The cnn and rnn workloads: 20 steps equal PyTorch's (same weights and data), compiled
equals eager, and neither falls back."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import planner
import runtime as rt
from benchmarks.workloads import WORKLOADS

STEPS = 20


def _run(case, steps: int = STEPS) -> tuple[list[float], dict[str, np.ndarray]]:
    losses, out = [], {}
    for _ in range(steps):
        ret = case.run()
        out = case.outputs(ret)
        losses.append(float(out["loss"]))
    return losses, out


@pytest.mark.parametrize("name", ["cnn", "rnn"])
def test_compiled_equals_eager_and_pytorch(name):
    w = WORKLOADS[name]
    arrays = w.make_arrays(0)
    eager = w.build(rt, arrays)
    compiled_case = w.build(rt, arrays)
    compiled_case.fn = planner.compile(compiled_case.fn)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a fallback warns
        got, got_out = _run(compiled_case)
    want, want_out = _run(eager)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
    for k in want_out:
        np.testing.assert_allclose(got_out[k], want_out[k], rtol=1e-4, atol=1e-5, err_msg=k)
    assert want[-1] < want[0]  # it trains
    torch = pytest.importorskip("torch")
    torch.manual_seed(0)
    theirs, theirs_out = _run(w.build(torch, arrays))
    np.testing.assert_allclose(want, theirs, rtol=1e-4, atol=1e-5)
    for k in theirs_out:
        np.testing.assert_allclose(want_out[k], theirs_out[k], rtol=1e-3, atol=1e-4, err_msg=k)
