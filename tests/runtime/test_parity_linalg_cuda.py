"""runtime.linalg's new solvers and factorizations on "cuda" tensors, proven without a GPU (the
strict fake CuPy): they compute on an explicit host copy and give their results and gradients
back on the device."""

from __future__ import annotations

import numpy as np
import pytest

import runtime as rt
from tests.fakecuda import fake_cuda_fixture  # noqa: F401 - the fake_cuda fixture

pytestmark = pytest.mark.usefixtures("fake_cuda")


def test_linalg_on_the_device() -> None:
    a = rt.tensor(np.random.default_rng(0).standard_normal((3, 3)) + 3 * np.eye(3),
                  device="cuda", requires_grad=True)
    b = rt.ones(3, 2, device="cuda", dtype=rt.float64)
    lu, piv = rt.linalg.lu_factor(a)
    x = rt.linalg.lu_solve(lu, piv, b)
    y = rt.linalg.solve_triangular(a, b, upper=True)
    z = rt.linalg.matrix_exp(a * 0.1)
    (x.sum() + y.sum() + z.sum()).backward()
    assert x.device == y.device == z.device == a.grad.device == "cuda:0"
    want = np.linalg.solve(a.detach().cpu().numpy(), np.ones((3, 2)))
    np.testing.assert_allclose(x.detach().cpu().numpy(), want, atol=1e-12)
    ld, pivots = rt.linalg.ldl_factor(a.detach() + a.detach().mT)
    assert ld.device == pivots.device == "cuda:0"
