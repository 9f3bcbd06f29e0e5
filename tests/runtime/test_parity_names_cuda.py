"""The names added for PyTorch parity on "cuda" tensors (the strict fake CuPy on machines
without a GPU): each gives the CPU's values and stays on its device."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import runtime as rt
from tests.fakecuda import fake_cuda_fixture  # noqa: F401 - the fake_cuda fixture

g = np.random.default_rng(5)
X = g.uniform(0.1, 0.9, (3, 4))
W_IH = g.standard_normal((4, 2))
W_HH = g.standard_normal((4, 1))


def _grad_of(device: str, f: Callable[[Any], Any]) -> tuple[Any, Any]:
    x = rt.tensor(X, device=device, requires_grad=True)
    y = f(x)
    y.sum().backward()
    return y, x.grad


CASES: dict[str, Callable[[str], Any]] = {
    "tan_": lambda d: _grad_of(d, lambda x: (x * 1.0).tan_()),
    "lt_": lambda d: _grad_of(d, lambda x: (x * 2.0).lt_(1.0)),
    "copysign_": lambda d: _grad_of(d, lambda x: (x * 1.0).copysign_(x - 0.5)),
    "tril_view": lambda d: _grad_of(d, lambda x: (x * 1.0)[:, :3].tril_() * 2),
    "rsub": lambda d: _grad_of(d, lambda x: rt.rsub(x, 1.0, alpha=2)),
    "sum_to_size": lambda d: _grad_of(d, lambda x: x.sum_to_size(1, 4)),
    "diagonal_scatter": lambda d: _grad_of(d, lambda x: rt.diagonal_scatter(x, x[0, :3] * 2)),
    "index_reduce_amax": lambda d: _grad_of(d, lambda x: x.index_reduce(
        0, rt.tensor([0, 2, 0], device=d), x * 3, "amax")),
    "as_strided_copy": lambda d: _grad_of(d, lambda x: rt.as_strided_copy(x, (2, 2), (1, 2), 1)),
    "as_strided_scatter": lambda d: _grad_of(d, lambda x: rt.as_strided_scatter(
        x, x[0, :2] * 3, (2,), (5,), 1)),
    "gradient": lambda d: _grad_of(d, lambda x: rt.gradient(x, edge_order=2)[1]),
    "mvlgamma": lambda d: _grad_of(d, lambda x: rt.mvlgamma(x + 2, 2)),
    "igamma": lambda d: _grad_of(d, lambda x: rt.igamma(rt.tensor(X * 3, device=d), x)),
    "kl_div": lambda d: _grad_of(d, lambda x: rt.kl_div(x.log(), rt.tensor(X, device=d), 1)),
    "norm_except_dim": lambda d: _grad_of(d, lambda x: rt.norm_except_dim(x, 2, 1)),
    "lstm_cell": lambda d: rt.lstm_cell(
        rt.tensor(X[:, :2], device=d), (rt.tensor(X[:, :1], device=d),
                                         rt.tensor(X[:, 1:2], device=d)),
        rt.tensor(W_IH, device=d), rt.tensor(W_HH, device=d)),
    "native_layer_norm": lambda d: rt.native_layer_norm(rt.tensor(X, device=d), [4], None,
                                                        None, 1e-5),
    "hann_window": lambda d: rt.hann_window(8, device=d),
    "range": lambda d: rt.range(0, 2, 0.5, device=d),
    "histogram": lambda d: rt.histogram(rt.tensor(X, device=d), 4),
    "empty_strided": lambda d: rt.empty_strided((2, 3), (1, 2), device=d).fill_(1.0),
    "nonzero_static": lambda d: rt.nonzero_static(rt.tensor([0, 1, 2], device=d), size=3),
}


def _host(value: Any) -> list[np.ndarray]:
    values = value if isinstance(value, tuple) else (value,)
    return [v.detach().cpu().numpy() for v in values]


@pytest.mark.parametrize("name", sorted(CASES))
def test_cuda_matches_cpu(name: str, fake_cuda: Any) -> None:
    cpu = CASES[name]("cpu")
    gpu = CASES[name]("cuda")
    first = gpu[0] if isinstance(gpu, tuple) else gpu
    assert first.device.type == "cuda"
    for a, b in zip(_host(cpu), _host(gpu)):
        np.testing.assert_allclose(a, b, rtol=1e-7, atol=1e-12)


def test_cuda_refusals(fake_cuda: Any) -> None:
    x = rt.ones(2, device="cuda")
    with pytest.raises(TypeError, match="apply_ is only implemented on CPU tensors"):
        x.apply_(lambda v: v)
    with pytest.raises(NotImplementedError, match="only the CPU here"):
        rt.from_dlpack(np.ones(2), device="cuda")


def test_cuda_protocols_and_storage(fake_cuda: Any) -> None:
    x = rt.tensor(X, device="cuda")
    assert 0.5 not in x and float(X[0, 0]) in x
    rows = list(x)
    assert len(rows) == 3 and rows[0].device.type == "cuda"
    storage = x[1:].untyped_storage()
    assert storage.data_ptr() == x.untyped_storage().data_ptr() and storage.nbytes() == X.nbytes
    assert storage.get_device() == 0 and storage.is_cuda
    sub = x.as_subclass(type("Sub", (rt.Tensor,), {}))
    assert sub.device.type == "cuda" and sub.data_ptr() == x.data_ptr()
    with pytest.raises(TypeError, match="can't convert cuda"):
        np.asarray(x)
