"""The lazy transposed convolutions and instance norms against torch (their first input
fixes in_channels / num_features; then the module becomes its plain class), and a lazy
module moved to another dtype before its first call stays lazy, as torch's."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import runtime as rt

torch = pytest.importorskip("torch")

CASES = [
    ("LazyConvTranspose1d(4, 3, stride=2)", (2, 3, 5)),
    ("LazyConvTranspose2d(6, 3, groups=3, output_padding=1, stride=2)", (2, 3, 4, 4)),
    ("LazyConvTranspose2d(4, 2, bias=False)", (3, 4, 4)),
    ("LazyConvTranspose3d(2, 2, dilation=2)", (1, 2, 3, 3, 3)),
    ("LazyInstanceNorm1d()", (2, 3, 5)),
    ("LazyInstanceNorm2d(affine=False)", (2, 3, 4, 4)),
    ("LazyInstanceNorm2d(momentum=0.3)", (3, 4, 5)),  # unbatched: num_features is dim 1
    ("LazyInstanceNorm3d(track_running_stats=False)", (1, 2, 3, 3, 3)),
    ("LazyBatchNorm1d()", (4, 3)),
]


def _first_call(lib: Any, call: str, shape: tuple[int, ...]) -> tuple[Any, Any, Any]:
    lib.manual_seed(0)
    module = eval("lib.nn." + call, {"lib": lib}).to(lib.float64)  # noqa: S307 - the table
    before = repr(module)
    x = lib.tensor(np.random.default_rng(0).standard_normal(shape), requires_grad=True)
    try:
        return before, module, module(x)
    except Exception as e:  # noqa: BLE001 - the texts are compared
        return before, module, f"{type(e).__name__}: {e}"


@pytest.mark.parametrize("call,shape", CASES)
def test_lazy_module_matches_torch(call: str, shape: tuple[int, ...]) -> None:
    t_repr, tm, ty = _first_call(torch, call, shape)
    r_repr, rm, ry = _first_call(rt, call, shape)
    assert r_repr == t_repr
    if isinstance(ty, str):  # torch refuses the input: so do we, with its text
        assert ry == ty
        return
    assert type(rm).__name__ == type(tm).__name__
    assert repr(rm) == repr(tm)
    assert {k: tuple(v.shape) for k, v in rm.state_dict().items()} == \
        {k: tuple(v.shape) for k, v in tm.state_dict().items()}
    # the same weights: the same outputs and gradients
    rm.load_state_dict({k: rt.tensor(v.detach().numpy()) for k, v in tm.state_dict().items()})
    x = np.random.default_rng(1).standard_normal(shape)
    tx, rx = torch.tensor(x, requires_grad=True), rt.tensor(x, requires_grad=True)
    tout, rout = tm(tx), rm(rx)
    np.testing.assert_allclose(rout.detach().numpy(), tout.detach().numpy(), rtol=1e-10,
                               atol=1e-12)
    w = np.random.default_rng(2).standard_normal(tuple(tout.shape))
    (tout * torch.tensor(w)).sum().backward()
    (rout * rt.tensor(w)).sum().backward()
    np.testing.assert_allclose(rx.grad.numpy(), tx.grad.numpy(), rtol=1e-9, atol=1e-12)
    for name, p in tm.named_parameters():
        np.testing.assert_allclose(dict(rm.named_parameters())[name].grad.numpy(),
                                   p.grad.numpy(), rtol=1e-9, atol=1e-12)


def test_a_lazy_buffer_moved_to_another_dtype_stays_lazy():
    m = rt.nn.LazyBatchNorm1d().double()
    assert m.has_uninitialized_params()
    assert m.running_mean.dtype == rt.float64
    out = m(rt.randn(4, 3, dtype=rt.float64))
    assert out.dtype == m.running_mean.dtype == rt.float64
    assert type(m) is rt.nn.BatchNorm1d and m.running_mean.shape == (3,)
