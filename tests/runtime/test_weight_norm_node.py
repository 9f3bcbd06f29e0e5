"""``_weight_norm``'s backward node named as PyTorch's: WeightNormInterfaceBackward0 where
PyTorch runs its fused kernel (dim the first or the last), its composite's MulBackward0
elsewhere (dim -1: the whole tensor's norm; a middle dim); through both weight_norm APIs."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import runtime as rt
from runtime.nn.utils.parametrizations import _weight_norm

torch = pytest.importorskip("torch")


@pytest.mark.parametrize(("shape", "dim"), [((3, 4), 0), ((3, 4), 1), ((3, 4), -1),
                                            ((3, 4, 5), 1), ((3, 4, 5), 2), ((4,), 0)])
def test_weight_norm_node_as_torch(shape: tuple[int, ...], dim: int) -> None:
    rng = np.random.default_rng(0)
    v = rng.standard_normal(shape)
    g_shape = () if dim == -1 else tuple(n if i == dim else 1 for i, n in enumerate(shape))
    g = rng.standard_normal(g_shape)
    tv, tg = (torch.tensor(a, requires_grad=True) for a in (v, g))
    rv, rg = (rt.tensor(a, requires_grad=True) for a in (v, g))
    want, got = torch._weight_norm(tv, tg, dim), _weight_norm(rv, rg, dim)
    assert got.grad_fn.name() == want.grad_fn.name()
    np.testing.assert_allclose(got.detach().numpy(), want.detach().numpy(), rtol=1e-12)
    got.sum().backward()
    want.sum().backward()
    for r, t in ((rv, tv), (rg, tg)):
        np.testing.assert_allclose(r.grad.numpy(), t.grad.numpy(), rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("api", ["old", "parametrizations"])
def test_weight_norm_modules_weight_node(api: str) -> None:
    def make(lib):  # noqa: ANN001, ANN202
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", FutureWarning)
            fn = lib.nn.utils.weight_norm if api == "old" else \
                lib.nn.utils.parametrizations.weight_norm
            return fn(lib.nn.Linear(4, 3))

    tm, rm = make(torch), make(rt)
    tm(torch.randn(2, 4))
    rm(rt.randn(2, 4))
    assert rm.weight.grad_fn.name() == tm.weight.grad_fn.name() == "WeightNormInterfaceBackward0"
