"""scatter_reduce on a device whose ufunc has ``at`` but refuses to run it (CuPy 14's
multiply.at raises NotImplementedError, maximum.at for some dtypes): the host computes it,
as where the module has no ``at`` at all."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import runtime as rt
from tests.fakecuda import fake_cuda_fixture, fake_only  # noqa: F401


@pytest.mark.parametrize("reduce", ["prod", "amax", "amin", "sum"])
def test_a_refused_ufunc_at_falls_back_to_the_host(fake_cuda: Any, reduce: str,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    fake_only("CuPy's ufunc.at cannot be replaced")
    ufunc = getattr(fake_cuda, {"prod": "multiply", "amax": "maximum", "amin": "minimum",
                                "sum": "add"}[reduce])

    def refuse(*args: Any, **kwargs: Any) -> None:
        raise NotImplementedError("not supported on this device")

    monkeypatch.setattr(ufunc, "at", refuse, raising=False)
    x = rt.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
    index = rt.tensor([[0, 1, 0], [1, 0, 1]])
    src = rt.tensor([[2.0, 3.0, 4.0], [5.0, 6.0, 7.0]])
    want = x.scatter_reduce(1, index, src, reduce)
    got = x.to("cuda").scatter_reduce(1, index.to("cuda"), src.to("cuda"), reduce)
    assert got.device.type == "cuda"
    np.testing.assert_array_equal(got.cpu().numpy(), want.numpy())


@pytest.mark.parametrize("dtype", ["float64", "float32", "float16", "bfloat16", "int64",
                                   "int32", "uint8", "bool"])
@pytest.mark.parametrize("reduce", ["amax", "amin"])
@pytest.mark.parametrize("include_self", [True, False])
def test_amax_and_amin_on_a_device_are_exact_and_nan_wins(fake_cuda: Any, dtype: str,
                                                           reduce: str,
                                                           include_self: bool) -> None:
    """On a GPU, amax and amin scatter order-preserving integer keys: CuPy's float64
    ``maximum.at`` rounded through float32 (its atomicMax calls fmaxf) and dropped NaN, so a
    value equal to no input came out and amax's gradient, shared among the inputs equal to
    it, was NaN everywhere (seen on an H200)."""
    rng = np.random.default_rng(1)
    dt = getattr(rt, dtype)
    if dt.is_floating_point:
        values = rng.standard_normal((4, 9)) * 1e3 + rng.standard_normal((4, 9)) * 1e-9
        values[0, :5] = [np.nan, np.inf, -np.inf, -0.0, 0.0]
        values[2, 3] = np.nan
    else:
        values = rng.integers(-100, 100, (4, 9))
    x = rt.tensor(values[:, :4]).to(dt)
    src = rt.tensor(values[:, 4:8]).to(dt)
    index = rt.tensor(rng.integers(0, 4, (4, 4)))
    want = x.scatter_reduce(1, index, src, reduce, include_self=include_self)
    got = x.to("cuda").scatter_reduce(1, index.to("cuda"), src.to("cuda"), reduce,
                                      include_self=include_self)
    assert got.dtype == want.dtype and got.device.type == "cuda"
    np.testing.assert_array_equal(got.float().cpu().numpy() if dt.is_floating_point
                                  else got.cpu().numpy(),
                                  want.float().numpy() if dt.is_floating_point else want.numpy())


def test_amax_gradient_on_a_device_equals_the_hosts(fake_cuda: Any) -> None:
    x = np.random.default_rng(2).standard_normal((3, 4))
    grads = []
    for device in ("cpu", "cuda"):
        t = rt.tensor(x, device=device, requires_grad=True)
        t.index_reduce(0, rt.tensor([0, 2, 0], device=device), t * 3, "amax").sum().backward()
        grads.append(t.grad.cpu().numpy())
    assert np.isfinite(grads[0]).all()
    np.testing.assert_array_equal(grads[1], grads[0])
