"""nn.RNN / LSTM / GRU and their cells against PyTorch: same weights (a state dict moved
across), same inputs and initial states; outputs, final states, gradients, reprs, errors."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import runtime as rt

torch = pytest.importorskip("torch")

CONFIGS = [
    {},
    {"num_layers": 2, "bidirectional": True, "batch_first": True},
    {"bias": False},
    {"num_layers": 3},
]


def _pair(name: str, kw: dict[str, Any], dtype: str) -> tuple[Any, Any]:
    theirs = getattr(torch.nn, name)(5, 7, **kw)
    theirs = theirs.double() if dtype == "float64" else theirs
    ours = getattr(rt.nn, name)(5, 7, **kw)
    ours = ours.double() if dtype == "float64" else ours
    ours.load_state_dict({k: rt.tensor(v.detach().numpy())
                          for k, v in theirs.state_dict().items()})
    return ours, theirs


def _total(out: Any, h: Any) -> Any:
    hs = h if isinstance(h, tuple) else (h,)
    total = (out * out).sum()
    for t in hs:
        total = total + (t * 3).sum()
    return total


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("kw", CONFIGS)
@pytest.mark.parametrize("name", ["RNN", "LSTM", "GRU", "RNN-relu"])
def test_layers_match_torch(name: str, kw: dict[str, Any], dtype: str) -> None:
    if name == "RNN-relu":
        name, kw = "RNN", {**kw, "nonlinearity": "relu"}
    ours, theirs = _pair(name, kw, dtype)
    assert repr(ours) == repr(theirs)
    g = np.random.default_rng(0)
    d = 2 if kw.get("bidirectional") else 1
    layers = kw.get("num_layers", 1) * d
    x = g.standard_normal((3, 6, 5) if kw.get("batch_first") else (6, 3, 5)).astype(dtype)
    h0 = g.standard_normal((layers, 3, 7)).astype(dtype)
    c0 = g.standard_normal((layers, 3, 7)).astype(dtype)
    xr, xt = rt.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    hr, ht = rt.tensor(h0, requires_grad=True), torch.tensor(h0, requires_grad=True)
    if name == "LSTM":
        out_r, h_r = ours(xr, (hr, rt.tensor(c0)))
        out_t, h_t = theirs(xt, (ht, torch.tensor(c0)))
    else:
        out_r, h_r = ours(xr, hr)
        out_t, h_t = theirs(xt, ht)

    def close(a: Any, b: Any, what: str = "") -> None:
        # float32: sums of terms far larger than the result (a gradient over 6 steps) round
        # differently in any two orders; the bound is relative to the array's scale
        scale = float(np.abs(b).max()) or 1.0
        rtol, atol = (1e-9, 1e-11 * scale) if dtype == "float64" else (1e-5, 2e-6 * scale)
        np.testing.assert_allclose(a, b, rtol=rtol, atol=atol, err_msg=what)

    close(out_r.detach().numpy(), out_t.detach().numpy())
    for a, b in zip(h_r if name == "LSTM" else (h_r,), h_t if name == "LSTM" else (h_t,)):
        close(a.detach().numpy(), b.detach().numpy())
    _total(out_r, h_r).backward()
    _total(out_t, h_t).backward()
    close(xr.grad.numpy(), xt.grad.numpy())
    close(hr.grad.numpy(), ht.grad.numpy())
    theirs_grads = dict(theirs.named_parameters())
    for n, p in ours.named_parameters():
        close(p.grad.numpy(), theirs_grads[n].grad.numpy(), n)


@pytest.mark.parametrize("name", ["RNNCell", "LSTMCell", "GRUCell", "RNNCell-relu"])
@pytest.mark.parametrize("batched", [True, False])
def test_cells_match_torch(name: str, batched: bool) -> None:
    kw = {"nonlinearity": "relu"} if name == "RNNCell-relu" else {}
    name = name.removesuffix("-relu")
    theirs = getattr(torch.nn, name)(5, 7, **kw).double()
    ours = getattr(rt.nn, name)(5, 7, **kw).double()
    ours.load_state_dict({k: rt.tensor(v.detach().numpy())
                          for k, v in theirs.state_dict().items()})
    assert repr(ours) == repr(theirs)
    g = np.random.default_rng(1)
    x = g.standard_normal((3, 5) if batched else (5,))
    h = g.standard_normal((3, 7) if batched else (7,))
    xr, xt = rt.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    hx_r: Any = rt.tensor(h)
    hx_t: Any = torch.tensor(h)
    if name == "LSTMCell":
        hx_r, hx_t = (hx_r, rt.tensor(h * 0.5)), (hx_t, torch.tensor(h * 0.5))
    a, b = ours(xr, hx_r), theirs(xt, hx_t)
    a = a if isinstance(a, tuple) else (a,)
    b = b if isinstance(b, tuple) else (b,)
    for u, v in zip(a, b, strict=True):
        np.testing.assert_allclose(u.detach().numpy(), v.detach().numpy(), rtol=1e-10)
    sum(((u * u).sum() for u in a), rt.tensor(0.0, dtype=rt.float64)).backward()
    sum(((v * v).sum() for v in b), torch.tensor(0.0, dtype=torch.float64)).backward()
    np.testing.assert_allclose(xr.grad.numpy(), xt.grad.numpy(), rtol=1e-9, atol=1e-12)


def _message(fn: Any) -> tuple[type, str]:
    try:
        fn()
    except Exception as e:  # noqa: BLE001 - the error is what is compared
        return type(e), str(e)
    raise AssertionError("no error")


@pytest.mark.parametrize("case", ["rank", "size", "hidden"])
def test_errors_match_torch(case: str) -> None:
    def call(lib: Any) -> Any:
        m = lib.nn.GRU(4, 6)
        if case == "rank":
            return m(lib.zeros(1, 2, 3, 4))
        if case == "size":
            return m(lib.zeros(3, 2, 5))
        return m(lib.zeros(3, 2, 4), lib.zeros(1, 3, 6))

    ours, theirs = _message(lambda: call(rt)), _message(lambda: call(torch))
    assert ours == theirs
