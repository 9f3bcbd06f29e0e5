"""Runtime parity with PyTorch found by the compiled-step sweep (h5)."""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
import pytest

import planner
import runtime as rt

torch = pytest.importorskip("torch")


@pytest.mark.parametrize("x_dtype, p_dtype", [("float32", "float64"), ("float64", "float32"),
                                              ("float16", "float64"), ("bfloat16", "float64")])
def test_bernoulli_inplace_with_tensor_p_draws_in_ps_precision(x_dtype: str, p_dtype: str
                                                               ) -> None:
    """x.bernoulli_(p) with p a tensor: PyTorch draws float64 uniforms where p is float64 and
    float32 ones otherwise, whatever x's dtype; ours drew in x's dtype (other numbers, the
    generator left elsewhere), eagerly and compiled alike."""
    def fn(lib: Any, p: Any) -> Any:
        return lib.empty(5, 8, dtype=getattr(lib, x_dtype)).bernoulli_(p).float() * 2

    p = np.random.default_rng(0).random((5, 8)).astype(p_dtype)
    torch.manual_seed(0)
    expected = [fn(torch, torch.tensor(p)).numpy() for _ in range(3)]
    after = torch.rand(4).numpy()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for step in (lambda t: fn(rt, t), planner.compile(lambda t: fn(rt, t))):
            rt.manual_seed(0)
            got = [step(rt.tensor(p)).numpy() for _ in range(3)]
            for g, e in zip(got, expected, strict=True):
                np.testing.assert_array_equal(g, e)
            np.testing.assert_array_equal(rt.rand(4).numpy(), after)
