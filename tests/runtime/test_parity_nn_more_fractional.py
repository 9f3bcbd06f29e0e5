"""F.fractional_max_pool2d/3d and nn.FractionalMaxPool2d/3d against torch: with the same
``_random_samples`` the same windows, values, indices and gradients (float64 and float32,
batched and unbatched, output_size and output_ratio), gradcheck, and torch's errors."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import runtime as rt
from runtime.autograd import gradcheck

torch = pytest.importorskip("torch")

CASES = [
    (2, (2, 3, 7, 8), dict(kernel_size=2, output_size=3)),
    (2, (2, 3, 7, 8), dict(kernel_size=(3, 2), output_size=(4, 5))),
    (2, (3, 9, 9), dict(kernel_size=2, output_ratio=(0.5, 0.7))),
    (2, (1, 2, 10, 10), dict(kernel_size=3, output_size=(8, 1))),
    (3, (1, 2, 5, 6, 7), dict(kernel_size=2, output_size=3)),
    (3, (2, 5, 6, 7), dict(kernel_size=(2, 1, 3), output_ratio=0.5)),
]


@pytest.mark.parametrize("dims,shape,kw", CASES)
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_fractional_max_pool_matches_torch(dims, shape, kw, dtype):
    rng = np.random.default_rng(len(shape) + dims)
    x = rng.standard_normal(shape).astype(dtype)
    batch = 1 if len(shape) == dims + 1 else shape[0]
    samples = rng.random((batch, shape[-dims - 1], dims)).astype(dtype)
    name = f"fractional_max_pool{dims}d"
    tx, rx = torch.tensor(x, requires_grad=True), rt.tensor(x, requires_grad=True)
    want, want_idx = getattr(torch.nn.functional, name)(
        tx, return_indices=True, _random_samples=torch.tensor(samples), **kw)
    got, got_idx = getattr(rt.nn.functional, name)(
        rx, return_indices=True, _random_samples=rt.tensor(samples), **kw)
    assert got.shape == tuple(want.shape) and got.dtype == rt.tensor(x).dtype
    np.testing.assert_array_equal(got.detach().numpy(), want.detach().numpy())
    np.testing.assert_array_equal(got_idx.numpy(), want_idx.numpy())
    w = rng.standard_normal(tuple(want.shape)).astype(dtype)
    (want * torch.tensor(w)).sum().backward()
    (got * rt.tensor(w)).sum().backward()
    np.testing.assert_allclose(rx.grad.numpy(), tx.grad.numpy(), rtol=1e-6, atol=1e-6)


def test_fractional_max_pool_gradcheck_and_drawn_samples():
    x = rt.tensor(np.random.default_rng(0).standard_normal((2, 2, 6, 6)), requires_grad=True)
    samples = rt.tensor(np.random.default_rng(1).random((2, 2, 2)))
    assert gradcheck(lambda a: rt.nn.functional.fractional_max_pool2d(
        a, 2, output_size=3, _random_samples=samples), (x,))
    # drawn samples: every output is the max of a 2 x 2 window of its plane, at its index
    out, idx = rt.nn.functional.fractional_max_pool2d(x, 2, output_size=4,
                                                      return_indices=True)
    flat = x.detach().numpy().reshape(2, 2, -1)
    np.testing.assert_array_equal(np.take_along_axis(flat, idx.numpy().reshape(2, 2, -1), -1),
                                  out.detach().numpy().reshape(2, 2, -1))


@pytest.mark.parametrize("dims", [2, 3])
def test_fractional_max_pool_module_matches_torch(dims):
    shape = (2, 3, 7, 8) if dims == 2 else (2, 2, 5, 6, 7)
    rng = np.random.default_rng(4)
    x, samples = rng.standard_normal(shape), rng.random((2, shape[1], dims))

    def run(lib: Any) -> Any:
        cls = getattr(lib.nn, f"FractionalMaxPool{dims}d")
        module = cls(2, output_ratio=0.5, return_indices=True,
                     _random_samples=lib.tensor(samples))
        assert list(module.state_dict()) == ["_random_samples"]
        return repr(module), module(lib.tensor(x))

    (t_repr, (tv, ti)), (r_repr, (rv, ri)) = run(torch), run(rt)
    assert r_repr == t_repr
    np.testing.assert_array_equal(rv.numpy(), tv.numpy())
    np.testing.assert_array_equal(ri.numpy(), ti.numpy())


@pytest.mark.parametrize("call", [
    "F.fractional_max_pool2d(r(1, 2, 7, 7), 2, output_ratio=0.5)",
    "F.fractional_max_pool2d(r(1, 2, 7, 7), 2)",
    "F.fractional_max_pool2d(r(1, 2, 7, 7), 2, output_size=7)",
    "F.fractional_max_pool2d(r(1, 2, 7, 7), 8, output_size=1)",
    "F.fractional_max_pool2d(r(7, 7), 2, output_size=3)",
    "F.fractional_max_pool2d(r(1, 0, 7, 7), 2, output_size=3)",
    "F.fractional_max_pool2d(r(1, 2, 7, 7), 2, output_size=3, _random_samples=r(1, 2, 3))",
    "F.fractional_max_pool2d(r(1, 2, 7, 7), 2, output_size=3, _random_samples=r(1, 2, 2).float())",
    "F.fractional_max_pool2d(r(1, 2, 7, 7), 2, output_size=3, _random_samples=r(1, 3, 2))",
    "F.fractional_max_pool2d(r(3, 2, 7, 7), 2, output_size=3, _random_samples=r(1, 2, 2))",
    "F.fractional_max_pool2d(r(1, 2, 7, 7), (2, 2, 2), output_size=3)",
    "F.fractional_max_pool2d(r(1, 2, 7, 7), 2, output_size=(3, 3, 3))",
    "F.fractional_max_pool3d(r(5, 5, 5), 2, output_size=2)",
    "F.fractional_max_pool3d(r(1, 2, 5, 5, 5), 2, output_size=(2, 5, 2))",
    "F.fractional_max_pool3d(r(2, 2, 5, 5, 5, 5), 2, output_size=2, _random_samples=r(2, 2, 3))",
    "F.fractional_max_pool3d(r(1, 0, 5, 5, 5), 2, output_size=2)",
    "F.fractional_max_pool3d(r(1, 2, 5, 5, 5), (2, 2), output_size=2)",
    "F.fractional_max_pool3d(r(1, 2, 5, 5, 5), 2, output_size=(2, 2))",
    "F.fractional_max_pool2d(r(2, 1, 2, 7, 7), 2, output_size=2, _random_samples=r(2, 1, 2, 5))",
    "F.fractional_max_pool2d(r(1, 2, 7, 7), 2, output_size=2, _random_samples=r(1, 2, 2, 1))",
    "F.fractional_max_pool2d(r(1, 2, 7, 7), 2, output_size=7, _random_samples=r(1, 2, 3))",
    "F.fractional_max_pool3d(r(3, 2, 5, 5, 5), 2, output_size=2, _random_samples=r(1, 2, 3))",
    "nn.FractionalMaxPool2d(2)",
    "nn.FractionalMaxPool2d(2, output_size=2, output_ratio=0.5)",
    "nn.FractionalMaxPool2d(2, output_ratio=1.5)",
    "nn.FractionalMaxPool3d(0, output_size=2)",
    "nn.FractionalMaxPool3d(2, output_ratio=(0.5, 0.5, 1.0))",
])
def test_fractional_max_pool_errors_match_torch(call):
    def run(lib: Any) -> str:
        def r(*shape: int) -> Any:
            return lib.tensor(np.random.default_rng(0).random(shape))

        with pytest.raises(Exception) as info:
            eval(call, {"F": lib.nn.functional, "nn": lib.nn, "r": r})  # noqa: S307
        return f"{type(info.value).__name__}: {info.value}"

    assert run(rt) == run(torch)
