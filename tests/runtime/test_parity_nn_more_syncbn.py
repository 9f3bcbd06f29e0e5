"""nn.SyncBatchNorm against torch without a process group (a BatchNorm of any rank, train
and eval, values, buffers and float64 gradients), convert_sync_batchnorm, and its checks:
with a group initialized, a CPU input in training is torch's error."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import runtime as rt

torch = pytest.importorskip("torch")


@pytest.mark.parametrize("shape", [(4, 3), (2, 3, 5), (2, 3, 4, 4), (2, 3, 2, 3, 2)])
@pytest.mark.parametrize("train", [True, False])
@pytest.mark.parametrize("kw", [{}, {"momentum": None}, {"affine": False},
                                {"track_running_stats": False}])
def test_sync_batch_norm_without_a_group_matches_torch(shape, train, kw):
    rng = np.random.default_rng(0)
    x = rng.standard_normal(shape)
    results = []
    for lib in (torch, rt):
        m = lib.nn.SyncBatchNorm(3, **kw).double()
        if m.running_mean is not None:
            with lib.no_grad():
                m.running_mean.copy_(lib.tensor([0.1, -0.2, 0.3]))
                m.running_var.copy_(lib.tensor([1.5, 0.5, 2.0]))
        m.train(train)
        xt = lib.tensor(x, requires_grad=True)
        out = m(xt)
        cotangent = np.random.default_rng(1).standard_normal(shape)
        (out * lib.tensor(cotangent)).sum().backward()
        results.append((repr(m), out.detach().numpy(), xt.grad.numpy(),
                        {k: v.numpy().copy() for k, v in m.state_dict().items()}))
    (t_repr, t_out, t_grad, t_state), (r_repr, r_out, r_grad, r_state) = results
    assert r_repr == t_repr
    np.testing.assert_allclose(r_out, t_out, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(r_grad, t_grad, rtol=1e-9, atol=1e-10)
    assert list(r_state) == list(t_state)
    for k in t_state:
        np.testing.assert_allclose(r_state[k], t_state[k], rtol=1e-10, atol=1e-12)


def test_convert_sync_batchnorm_matches_torch():
    def convert(lib: Any) -> Any:
        m = lib.nn.Sequential(lib.nn.Conv2d(2, 3, 1), lib.nn.BatchNorm2d(3),
                              lib.nn.Sequential(lib.nn.BatchNorm1d(4, affine=False)))
        m.eval()
        out = lib.nn.SyncBatchNorm.convert_sync_batchnorm(m)
        assert out[1].weight is m[1].weight and out[1].running_mean is m[1].running_mean
        return repr(out), list(out.state_dict()), [x.training for x in out.modules()]

    assert convert(rt) == convert(torch)


@pytest.mark.parametrize("call", ["nn.SyncBatchNorm(3)(r(3))", "nn.SyncBatchNorm(0)(r(2, 0))"])
def test_sync_batch_norm_errors_match_torch(call):
    def run(lib: Any) -> str:
        env = {"nn": lib.nn, "r": lambda *s: lib.tensor(np.ones(s))}
        with pytest.raises(Exception) as info:
            eval(call, env)  # noqa: S307
        return f"{type(info.value).__name__}: {info.value}"

    assert run(rt) == run(torch)


def test_sync_batch_norm_in_a_group_refuses_a_cpu_input_as_torch(monkeypatch):
    monkeypatch.setattr(rt.distributed, "is_initialized", lambda: True)
    m = rt.nn.SyncBatchNorm(3)
    with pytest.raises(ValueError, match="^SyncBatchNorm expected input tensor to be on GPU "
                                         "or XPU or privateuseone$"):
        m(rt.randn(4, 3))
    m.eval()  # evaluation does not synchronize
    assert m(rt.randn(4, 3)).shape == (4, 3)
