"""The smaller torch.nn names that were missing, against torch: F.conv_tbc,
F.native_channel_shuffle, nn.NLLLoss2d (deprecated, with its warning) and nn.DataParallel
(on a machine without GPUs: the module's own forward, keys ``module.*``)."""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
import pytest

import runtime as rt
from runtime.autograd import gradcheck

torch = pytest.importorskip("torch")


@pytest.mark.parametrize("shapes,pad", [(((5, 2, 3), (2, 3, 4), (4,)), 0),
                                        (((5, 2, 3), (3, 3, 4), (4,)), 1),
                                        (((4, 1, 2), (1, 2, 3), (3,)), 2),
                                        (((1, 2, 3), (2, 3, 4), (4,)), 0)])
def test_conv_tbc_matches_torch(shapes, pad):
    rng = np.random.default_rng(0)
    arrays = [rng.standard_normal(s) for s in shapes]
    ts = [torch.tensor(a, requires_grad=True) for a in arrays]
    rs = [rt.tensor(a, requires_grad=True) for a in arrays]
    want, got = torch.nn.functional.conv_tbc(*ts, pad), rt.nn.functional.conv_tbc(*rs, pad)
    assert got.shape == tuple(want.shape)
    np.testing.assert_allclose(got.detach().numpy(), want.detach().numpy(), rtol=1e-10,
                               atol=1e-12)
    if want.numel():
        w = rng.standard_normal(tuple(want.shape))
        (want * torch.tensor(w)).sum().backward()
        (got * rt.tensor(w)).sum().backward()
        for r, t in zip(rs, ts):
            np.testing.assert_allclose(r.grad.numpy(), t.grad.numpy(), rtol=1e-10,
                                       atol=1e-12)
        assert gradcheck(lambda *a: rt.nn.functional.conv_tbc(*a, pad),
                         tuple(rt.tensor(a, requires_grad=True) for a in arrays))


@pytest.mark.parametrize("call", [
    "F.conv_tbc(r(2, 3), r(2, 3, 4), r(4))",
    "F.conv_tbc(r(5, 2, 3), r(3, 4), r(4))",
    "F.conv_tbc(r(5, 2, 3), r(2, 3, 4), r(4, 1))",
    "F.conv_tbc(r(5, 2, 3), r(2, 5, 4), r(4))",
    "F.conv_tbc(r(5, 2, 3), r(2, 3, 4), r(5))",
    "F.native_channel_shuffle(r(1, 3, 2, 2), 2)",
])
def test_errors_match_torch(call):
    def run(lib: Any) -> str:
        def r(*shape: int) -> Any:
            return lib.tensor(np.ones(shape))

        with pytest.raises(Exception) as info:
            eval(call, {"F": lib.nn.functional, "r": r})  # noqa: S307
        return f"{type(info.value).__name__}: {info.value}"

    assert run(rt) == run(torch)


def test_native_channel_shuffle_is_channel_shuffle():
    x = np.arange(48.0).reshape(1, 6, 2, 4)
    np.testing.assert_array_equal(
        rt.nn.functional.native_channel_shuffle(rt.tensor(x), 3).numpy(),
        torch.nn.functional.native_channel_shuffle(torch.tensor(x), 3).numpy())


def test_nll_loss_2d_warns_and_is_nll_loss():
    def make(lib: Any) -> tuple[list[str], Any]:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            loss = lib.nn.NLLLoss2d(ignore_index=1)
        return [f"{w.category.__name__}: {w.message}" for w in caught], loss

    (t_warn, tl), (r_warn, rl) = make(torch), make(rt)
    assert r_warn == t_warn and len(r_warn) == 1
    x = np.log(np.random.default_rng(0).dirichlet(np.ones(3), size=(2, 4, 5)).transpose(0, 3, 1, 2))
    y = np.random.default_rng(1).integers(0, 3, (2, 4, 5))
    np.testing.assert_allclose(rl(rt.tensor(x), rt.tensor(y)).item(),
                               tl(torch.tensor(x), torch.tensor(y)).item(), rtol=1e-12)


def test_data_parallel_without_gpus_is_the_module():
    assert not rt.cuda.is_available()
    inner = rt.nn.Linear(3, 2)
    dp = rt.nn.DataParallel(inner)
    assert dp.module is inner and dp.device_ids == []
    assert list(dp.state_dict()) == ["module.weight", "module.bias"]
    x = rt.randn(4, 3)
    np.testing.assert_array_equal(dp(x).detach().numpy(), inner(x).detach().numpy())
    dp(x).sum().backward()
    assert inner.weight.grad is not None
    assert repr(dp) == repr(torch.nn.DataParallel(torch.nn.Linear(3, 2)))


@pytest.mark.parametrize("channels", [1, 3, 7])
@pytest.mark.parametrize("size", [1, 2, 3, 4, 8])
def test_cross_map_lrn2d_matches_torch(channels, size):
    """PyTorch's legacy formulas as they are: the forward's window keeps channel 0 past the
    first few channels, so it is not F.local_response_norm; its backward is its own formula
    (which fails in torch for size 1: only the forward is compared there)."""
    rng = np.random.default_rng(channels * 10 + size)
    x = rng.standard_normal((2, channels, 3, 2))
    tx, rx = torch.tensor(x, requires_grad=True), rt.tensor(x, requires_grad=True)
    tm, rm = torch.nn.CrossMapLRN2d(size, 1e-2, 0.75, 1.5), rt.nn.CrossMapLRN2d(size, 1e-2,
                                                                                0.75, 1.5)
    assert repr(rm) == repr(tm)
    want, got = tm(tx), rm(rx)
    np.testing.assert_allclose(got.detach().numpy(), want.detach().numpy(), rtol=1e-12)
    if size > 1:
        g = rng.standard_normal(x.shape)
        (want * torch.tensor(g)).sum().backward()
        (got * rt.tensor(g)).sum().backward()
        np.testing.assert_allclose(rx.grad.numpy(), tx.grad.numpy(), rtol=1e-10, atol=1e-12)


def test_cross_map_lrn2d_takes_4d_inputs_only():
    for lib in (torch, rt):
        with pytest.raises(ValueError, match="CrossMapLRN2d: Expected input to be 4D, got 3D "
                                             "instead."):
            lib.nn.CrossMapLRN2d(3)(lib.ones(2, 3, 4))


def test_container_is_deprecated_and_holds_its_modules_as_torch():
    def make(lib: Any) -> tuple[list[str], str, list[str]]:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            c = lib.nn.Container(a=lib.nn.Linear(2, 3), b=lib.nn.ReLU())
        return ([f"{w.category.__name__}: {w.message}" for w in caught], repr(c),
                list(c.state_dict()))

    assert make(rt) == make(torch)
