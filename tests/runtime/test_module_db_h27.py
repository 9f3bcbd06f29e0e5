"""nn modules against PyTorch's ModuleInfo database (common_modules.module_db): the
differences a differential run over it found, each compared with torch."""
from __future__ import annotations

import numpy as np
import pytest

import runtime as rt

torch = pytest.importorskip("torch")


def _rt(t: torch.Tensor) -> rt.Tensor:
    out = rt.from_numpy(t.detach().numpy().copy())
    return out.requires_grad_(t.requires_grad)


def test_kl_div_is_nan_where_the_target_is_negative_and_its_grad_as_torchs() -> None:
    """aten's kl_div is xlogy(target, target) - target * input: NaN at a negative target, and
    the target's gradient NaN at 0 (the masked log gave finite numbers at both)."""
    target = torch.tensor([[0.0, -0.5, 0.25], [0.7, 0.0, -1.0]], dtype=torch.float64,
                          requires_grad=True)
    x = torch.tensor([[-1.0, -2.0, -0.3], [-0.1, -4.0, -0.9]], dtype=torch.float64,
                     requires_grad=True)
    rx, rtarget = _rt(x), _rt(target)
    for reduction in ("none", "sum"):
        want = torch.nn.KLDivLoss(reduction=reduction)(x, target)
        got = rt.nn.KLDivLoss(reduction=reduction)(rx, rtarget)
        np.testing.assert_array_equal(got.detach().numpy(), want.detach().numpy())
    cot = torch.tensor([[1.0, 2.0, -1.0], [0.5, 3.0, 1.5]], dtype=torch.float64)
    torch.nn.functional.kl_div(x, target, reduction="none").backward(cot)
    rt.nn.functional.kl_div(rx, rtarget, reduction="none").backward(_rt(cot))
    np.testing.assert_allclose(rtarget.grad.numpy(), target.grad.numpy(), rtol=1e-14)
    np.testing.assert_allclose(rx.grad.numpy(), x.grad.numpy(), rtol=1e-14)


def test_kl_div_gradcheck_on_positive_targets() -> None:
    gen = np.random.default_rng(0)
    x = rt.from_numpy(gen.standard_normal((3, 4))).requires_grad_()
    t = rt.from_numpy(gen.uniform(0.1, 1.0, (3, 4))).requires_grad_()
    assert rt.autograd.gradcheck(
        lambda a, b: rt.nn.functional.kl_div(a, b, reduction="batchmean"), (x, t))


@pytest.mark.parametrize("name", ["RNN", "GRU", "LSTM"])
def test_rnn_refuses_an_input_of_another_dtype_in_torchs_words(name: str) -> None:
    x = torch.zeros(2, 3, 4)
    tm = getattr(torch.nn, name)(4, 5).double()
    rm = getattr(rt.nn, name)(4, 5).double()
    with pytest.raises(ValueError) as want:
        tm(x)
    with pytest.raises(ValueError) as got:
        rm(_rt(x))
    assert str(got.value) == str(want.value)
    packed = torch.nn.utils.rnn.pack_padded_sequence(x, [2, 1, 1])
    rpacked = rt.nn.utils.rnn.pack_padded_sequence(_rt(x), [2, 1, 1])
    # PyTorch's LSTM skips the check for a packed input without hx: its matmul refuses
    error = RuntimeError if name == "LSTM" else ValueError
    with pytest.raises(error) as want:
        tm(packed)
    with pytest.raises(error) as got:
        rm(rpacked)
    assert type(got.value) is type(want.value)
    assert str(got.value) == str(want.value)


def test_rnn_of_another_dtype_runs_under_autocast() -> None:
    """The check stands aside under autocast, as PyTorch's (its matmuls cast)."""
    rm = rt.nn.RNN(4, 5)
    with rt.autocast("cpu", dtype=rt.bfloat16):
        out, _ = rm(rt.zeros(2, 3, 4, dtype=rt.bfloat16))
    assert out.shape == (2, 3, 5)


def test_huber_loss_refuses_a_delta_that_is_not_a_number() -> None:
    with pytest.raises(TypeError) as want:
        torch.nn.HuberLoss(delta=1j)
    with pytest.raises(TypeError) as got:
        rt.nn.HuberLoss(delta=1j)
    assert str(got.value) == str(want.value)
    assert rt.nn.HuberLoss(delta=2).delta == 2


def test_rnn_cell_refuses_an_unknown_nonlinearity_in_forward_as_torchs() -> None:
    """PyTorch's RNNCell takes any nonlinearity name and refuses it in forward (reading the
    attribute then: a cell switched to relu after construction runs relu)."""
    tm, rm = torch.nn.RNNCell(3, 4, nonlinearity="foo"), rt.nn.RNNCell(3, 4, nonlinearity="foo")
    x = torch.from_numpy(np.random.default_rng(0).standard_normal((2, 3), dtype=np.float32))
    with pytest.raises(RuntimeError) as want:
        tm(x)
    with pytest.raises(RuntimeError) as got:
        rm(_rt(x))
    assert str(got.value) == str(want.value)
    assert repr(rm) == repr(tm)
    tm.nonlinearity = rm.nonlinearity = "relu"
    rm.load_state_dict({k: _rt(v) for k, v in tm.state_dict().items()})
    np.testing.assert_allclose(rm(_rt(x)).detach().numpy(), tm(x).detach().numpy(), rtol=1e-6,
                               atol=1e-6)
    assert repr(rm) == repr(tm)


def test_bilinear_refuses_no_first_input_features_as_torchs() -> None:
    with pytest.raises(ValueError) as want:
        torch.nn.Bilinear(0, 3, 4)
    with pytest.raises(ValueError) as got:
        rt.nn.Bilinear(0, 3, 4)
    assert str(got.value) == str(want.value)
