"""nn.RNN / LSTM / GRU and their cells: PyTorch's parameters, gradients checked numerically,
shape and size errors, and a compiled training step that equals eager without falling back.
(Values against PyTorch itself: test_rnn_layers_torch.py.)"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
import pytest

import planner
import runtime as rt
from runtime.autograd.gradcheck import gradcheck

LAYERS = ["RNN", "LSTM", "GRU"]
GATES = {"RNN": 1, "LSTM": 4, "GRU": 3}


@pytest.mark.parametrize("name", LAYERS)
def test_parameters_are_pytorchs(name: str) -> None:
    m = getattr(rt.nn, name)(5, 7, num_layers=2, bidirectional=True)
    g = GATES[name] * 7
    shapes = {n: tuple(p.shape) for n, p in m.named_parameters()}
    assert list(shapes)[:4] == ["weight_ih_l0", "weight_hh_l0", "bias_ih_l0", "bias_hh_l0"]
    assert shapes["weight_ih_l0"] == (g, 5) and shapes["weight_ih_l1"] == (g, 14)
    assert shapes["weight_hh_l1_reverse"] == (g, 7) and shapes["bias_ih_l1_reverse"] == (g,)
    assert len(shapes) == 16 and len(m.all_weights) == 4
    bound = 1 / np.sqrt(7)
    assert all(np.abs(p.detach().numpy()).max() <= bound for p in m.parameters())
    assert len(list(getattr(rt.nn, name)(5, 7, bias=False).parameters())) == 2


@pytest.mark.parametrize("name", LAYERS)
@pytest.mark.parametrize("kw", [{}, {"num_layers": 2, "bidirectional": True},
                                {"batch_first": True}])
def test_output_shapes(name: str, kw: dict[str, Any]) -> None:
    m = getattr(rt.nn, name)(4, 6, **kw)
    d = 2 if kw.get("bidirectional") else 1
    layers = kw.get("num_layers", 1) * d
    x = rt.randn(3, 5, 4)  # (L, N) or, batch_first, (N, L)
    out, h = m(x)
    assert tuple(out.shape) == (3, 5, 6 * d)
    hs = h if name == "LSTM" else (h,)
    for t in hs:
        assert tuple(t.shape) == (layers, 3 if kw.get("batch_first") else 5, 6)
    out1, h1 = m(rt.randn(3, 4))  # unbatched
    assert tuple(out1.shape) == (3, 6 * d)
    assert tuple((h1[0] if name == "LSTM" else h1).shape) == (layers, 6)


@pytest.mark.parametrize("name", LAYERS)
def test_gradients_are_checked_numerically(name: str) -> None:
    rt.manual_seed(0)
    m = getattr(rt.nn, name)(3, 4, num_layers=2, bidirectional=True).double()
    x = rt.randn(4, 2, 3, dtype=rt.float64, requires_grad=True)
    h0 = rt.randn(4, 2, 4, dtype=rt.float64, requires_grad=True)
    w = m.weight_hh_l0

    def f(x: Any, h0: Any, w: Any) -> Any:
        hx = (h0, h0 * 0.5) if name == "LSTM" else h0
        out, h = m(x, hx)
        return out.sum() + (h[1] if name == "LSTM" else h).square().sum()

    assert gradcheck(f, (x, h0, w))


@pytest.mark.parametrize("name", ["RNNCell", "LSTMCell", "GRUCell"])
def test_cells_step_like_the_layers(name: str) -> None:
    rt.manual_seed(1)
    layer_name = name.removesuffix("Cell")
    cell = getattr(rt.nn, name)(3, 4)
    layer = getattr(rt.nn, layer_name)(3, 4)
    layer.load_state_dict({f"{k}_l0": v for k, v in cell.state_dict().items()})
    x = rt.randn(5, 2, 3)
    out, h_n = layer(x)
    h = None
    for t in range(5):
        h = cell(x[t], h)
        got = h[0] if name == "LSTMCell" else h
        np.testing.assert_allclose(got.detach().numpy(), out[t].detach().numpy(), rtol=1e-6,
                                   atol=1e-7)
    one = cell(x[0, 0])  # unbatched
    assert tuple((one[0] if name == "LSTMCell" else one).shape) == (4,)


def test_errors() -> None:
    m = rt.nn.GRU(4, 6)
    with pytest.raises(ValueError, match="GRU: Expected input to be 2D or 3D, got 4D instead"):
        m(rt.randn(1, 2, 3, 4))
    with pytest.raises(RuntimeError, match="input.size\\(-1\\) must be equal to input_size. "
                                           "Expected 4, got 5"):
        m(rt.randn(3, 2, 5))
    with pytest.raises(RuntimeError, match=r"Expected hidden size \(1, 2, 6\), got \[1, 3, 6\]"):
        m(rt.randn(3, 2, 4), rt.randn(1, 3, 6))
    with pytest.raises(ValueError, match="Unknown nonlinearity 'gelu'"):
        rt.nn.RNN(4, 6, nonlinearity="gelu")
    with pytest.raises(ValueError, match="dropout should be a number in range"):
        rt.nn.LSTM(4, 6, dropout=2.0)
    with pytest.raises(ValueError, match="proj_size has to be smaller than hidden_size"):
        rt.nn.LSTM(4, 6, proj_size=6)
    with pytest.raises(RuntimeError, match="input has inconsistent input_size: got 5 expected 4"):
        rt.nn.LSTMCell(4, 6)(rt.randn(2, 5))


def test_dropout_between_layers_only_while_training() -> None:
    rt.manual_seed(2)
    m = rt.nn.LSTM(3, 5, num_layers=2, dropout=0.5)
    x = rt.randn(4, 2, 3)
    m.eval()
    a, b = m(x)[0], m(x)[0]
    np.testing.assert_array_equal(a.detach().numpy(), b.detach().numpy())
    m.train()
    c = m(x)[0]
    assert not np.array_equal(a.detach().numpy(), c.detach().numpy())


@pytest.mark.parametrize("name", LAYERS)
def test_a_compiled_training_step_equals_eager(name: str) -> None:
    def build() -> tuple[Any, Any]:
        rt.manual_seed(3)
        rnn = getattr(rt.nn, name)(6, 16, num_layers=2, batch_first=True)
        head = rt.nn.Linear(16, 4)
        params = [*rnn.parameters(), *head.parameters()]
        opt = rt.optim.Adam(params, lr=1e-2)

        def step(x: Any, y: Any) -> Any:
            opt.zero_grad()
            out, _ = rnn(x)
            loss = rt.nn.functional.cross_entropy(head(out[:, -1]), y)
            loss.backward()
            rt.nn.utils.clip_grad_norm_(params, 1.0)
            opt.step()
            return loss

        return step, params

    g = np.random.default_rng(0)
    x = rt.tensor(g.standard_normal((8, 10, 6)).astype(np.float32))
    y = rt.tensor(g.integers(0, 4, 8))
    eager_step, eager_params = build()
    fn, params = build()
    step = planner.compile(fn)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a fallback to eager would warn
        got = [float(step(x, y)) for _ in range(4)]
    want = [float(eager_step(x, y)) for _ in range(4)]
    assert step.captures == 1
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
    for a, b in zip(params, eager_params):
        np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), rtol=1e-4,
                                   atol=1e-6)
