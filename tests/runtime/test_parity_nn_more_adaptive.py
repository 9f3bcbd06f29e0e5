"""nn.AdaptiveLogSoftmaxWithLoss against torch: with torch's weights, the outputs, loss,
float64 gradients (a tail without rows gets none), log_prob and predict; repr and state
dict keys; the constructor's and forward's errors."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import runtime as rt

torch = pytest.importorskip("torch")

CASES = [([3, 6], 10, 2.0, False, (7,)), ([2], 5, 4.0, True, (6,)),
         ([4, 5, 8], 9, 1.5, True, ()), ([3, 6], 10, 2.0, False, (4,))]


def _pair(cutoffs: list[int], n: int, div_value: float, head_bias: bool) -> tuple[Any, Any]:
    torch.manual_seed(0)
    tm = torch.nn.AdaptiveLogSoftmaxWithLoss(12, n, cutoffs, div_value=div_value,
                                             head_bias=head_bias).double()
    rm = rt.nn.AdaptiveLogSoftmaxWithLoss(12, n, cutoffs, div_value=div_value,
                                          head_bias=head_bias).double()
    assert repr(rm) == repr(tm)
    assert list(rm.state_dict()) == list(tm.state_dict())
    rm.load_state_dict({k: rt.tensor(v.numpy()) for k, v in tm.state_dict().items()})
    return tm, rm


@pytest.mark.parametrize("cutoffs,n,div_value,head_bias,shape", CASES)
def test_adaptive_log_softmax_matches_torch(cutoffs, n, div_value, head_bias, shape):
    tm, rm = _pair(cutoffs, n, div_value, head_bias)
    rng = np.random.default_rng(0)
    x = rng.standard_normal((*shape, 12))
    y = np.array([0, 1, 2, 1]) if shape == (4,) else rng.integers(0, n, shape)  # (4,): no tail rows
    tx, rx = torch.tensor(x, requires_grad=True), rt.tensor(x, requires_grad=True)
    want, got = tm(tx, torch.tensor(y)), rm(rx, rt.tensor(y))
    np.testing.assert_allclose(got.output.detach().numpy(), want.output.detach().numpy(),
                               rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(got.loss.item(), want.loss.item(), rtol=1e-10)
    want.loss.backward()
    got.loss.backward()
    np.testing.assert_allclose(rx.grad.numpy(), tx.grad.numpy(), rtol=1e-9, atol=1e-12)
    ours = dict(rm.named_parameters())
    for name, p in tm.named_parameters():
        assert (ours[name].grad is None) == (p.grad is None), name
        if p.grad is not None:
            np.testing.assert_allclose(ours[name].grad.numpy(), p.grad.numpy(), rtol=1e-9,
                                       atol=1e-12)
    if shape:
        np.testing.assert_allclose(rm.log_prob(rt.tensor(x)).detach().numpy(),
                                   tm.log_prob(torch.tensor(x)).detach().numpy(), rtol=1e-10,
                                   atol=1e-12)


def test_predict_mixes_the_head_and_the_clusters_as_torch():
    tm, rm = _pair([3, 6], 10, 2.0, True)
    with torch.no_grad():  # rows 0-3 favour the head's classes, rows 4-7 its clusters
        tm.head.bias.copy_(torch.tensor([0.0, 0, 0, 0, 0]))
    rng = np.random.default_rng(1)
    x = rng.standard_normal((8, 12))
    x[4:] *= 3.0
    bias = np.array([0.0, 0.0, 0.0, 5.0, 5.0])
    for lib, m in ((torch, tm), (rt, rm)):
        with lib.no_grad():
            m.head.bias.copy_(lib.tensor(bias))
    want, got = tm.predict(torch.tensor(x)).numpy(), rm.predict(rt.tensor(x)).numpy()
    np.testing.assert_array_equal(got, want)
    assert (want >= 3).any()
    x[:] = 0.0
    for lib, m in ((torch, tm), (rt, rm)):
        with lib.no_grad():
            m.head.bias.copy_(lib.tensor([5.0, 0, 0, 0, 0]))
    np.testing.assert_array_equal(rm.predict(rt.tensor(x)).numpy(),
                                  tm.predict(torch.tensor(x)).numpy())


@pytest.mark.parametrize("call", [
    "nn.AdaptiveLogSoftmaxWithLoss(8, 10, [])",
    "nn.AdaptiveLogSoftmaxWithLoss(8, 10, [5, 3])",
    "nn.AdaptiveLogSoftmaxWithLoss(8, 10, [3, 10])",
    "nn.AdaptiveLogSoftmaxWithLoss(8, 10, [3, 3])",
    "nn.AdaptiveLogSoftmaxWithLoss(8, 10, [0, 3])",
    "m(r(3, 8), L(1, 2))",
    "m(r(3, 2, 8), L(1, 2, 3))",
    "m(r(3, 8), L(1, 2, 3).reshape(3, 1))",
    "m(r(2, 8), T.tensor(1))",
    "m(r(3, 8), L(1, 2, 10))",
    "m(r(3, 8), L(-1, 2, 3))",
])
def test_errors_match_torch(call):
    def run(lib: Any) -> str:
        lib.manual_seed(0)
        env = {"nn": lib.nn, "T": lib, "m": lib.nn.AdaptiveLogSoftmaxWithLoss(8, 10, [3, 6]),
               "r": lambda *s: lib.tensor(np.ones(s, dtype=np.float32)),
               "L": lambda *v: lib.tensor(list(v))}
        with pytest.raises(Exception) as info:
            eval(call, env)  # noqa: S307
        return f"{type(info.value).__name__}: {info.value}"

    assert run(rt) == run(torch)


@pytest.mark.parametrize("init", ["kaiming_uniform_", "kaiming_normal_"])
def test_kaiming_init_of_an_empty_tensor_warns_as_torch(init):
    """A tail of width 0 (in_features // div_value**k == 0) is a Linear(0, n): torch warns,
    the fan of 0 divided by zero here."""
    with pytest.warns(UserWarning, match="Initializing zero-element tensors is a no-op"):
        out = getattr(rt.nn.init, init)(rt.empty(4, 0))
    assert out.shape == (4, 0)
    with pytest.warns(UserWarning, match="Initializing zero-element tensors is a no-op"):
        assert rt.nn.Linear(0, 4).weight.shape == (4, 0)
