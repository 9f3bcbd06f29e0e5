"""Parity with PyTorch of nn layers: convolutions' padding modes with padding='same', 1-d
pools with indices, and the other layer fixes of the nn differential check."""

from __future__ import annotations

import numpy as np
import pytest

import runtime as rt

F = rt.nn.functional


def _np(t: object) -> np.ndarray:
    return t.detach().numpy()  # type: ignore[attr-defined]


def _load_from_torch(mod: rt.nn.Module, tmod: object) -> None:
    mod.load_state_dict({k: rt.tensor(v.detach().numpy().copy())
                         for k, v in tmod.state_dict().items()})  # type: ignore[attr-defined]


# --------------------------------------------------------------------------- convolution


def test_conv_same_with_a_padding_mode_pads_by_the_mode_left_low_right_high():
    # kernel (1, 2): 'same' pads the width by 0 on the left and 1 on the right, by reflection
    conv = rt.nn.Conv2d(1, 1, (1, 2), padding="same", padding_mode="reflect", bias=False)
    with rt.no_grad():
        conv.weight.copy_(rt.tensor([[[[1.0, 10.0]]]]))
    x = rt.tensor([[[[1.0, 2.0, 3.0]]]])
    # padded row: 1 2 3 2 -> 1+20, 2+30, 3+20
    np.testing.assert_allclose(_np(conv(x)), [[[[21.0, 32.0, 23.0]]]])
    assert conv._reversed_padding_repeated_twice == [0, 1, 0, 0]


@pytest.mark.parametrize("mode", ["reflect", "replicate", "circular"])
@pytest.mark.parametrize("dims", [1, 2])
def test_conv_same_padding_modes_match_torch(mode, dims):
    torch = pytest.importorskip("torch")
    tcls = getattr(torch.nn, f"Conv{dims}d")
    rcls = getattr(rt.nn, f"Conv{dims}d")
    kernel = (4,) if dims == 1 else (3, 4)
    kw = dict(padding="same", padding_mode=mode, dilation=1)
    torch.manual_seed(0)
    tm, rm = tcls(2, 3, kernel, **kw), rcls(2, 3, kernel, **kw)
    _load_from_torch(rm, tm)
    xt = torch.randn(2, 2, *(7,) * dims, requires_grad=True)
    xr = rt.tensor(xt.detach().numpy(), requires_grad=True)
    yt, yr = tm(xt), rm(xr)
    np.testing.assert_allclose(_np(yr), yt.detach().numpy(), rtol=1e-5, atol=1e-5)
    (yt * yt).sum().backward()
    (yr * yr).sum().backward()
    np.testing.assert_allclose(_np(xr.grad), xt.grad.numpy(), rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(_np(rm.weight.grad), tm.weight.grad.numpy(), rtol=1e-4, atol=1e-4)


# ------------------------------------------------------------------------------ pooling


def test_max_pool1d_returns_indices_along_the_length():
    x = rt.tensor([[[1.0, 5.0, 2.0, 0.0, 7.0, 3.0]]])
    values, indices = rt.nn.MaxPool1d(2, return_indices=True)(x)
    assert values.tolist() == [[[5.0, 2.0, 7.0]]]
    assert indices.tolist() == [[[1, 2, 4]]]
    assert indices.dtype == rt.int64
    v, i = F.max_pool1d(x[0], 3, 2, 1, ceil_mode=True, return_indices=True)
    assert v.tolist() == [[5.0, 5.0, 7.0, 3.0]] and i.tolist() == [[1, 1, 4, 5]]


def test_adaptive_pools_1d_values_and_indices():
    x = rt.tensor([[[1.0, 5.0, 2.0, 0.0, 7.0]]], requires_grad=True)
    avg = rt.nn.AdaptiveAvgPool1d(2)(x)  # windows [0, 3) and [2, 5)
    np.testing.assert_allclose(_np(avg), [[[8 / 3, 3.0]]])
    values, indices = rt.nn.AdaptiveMaxPool1d(3, return_indices=True)(x)  # [0,2) [1,4) [3,5)
    assert values.tolist() == [[[5.0, 5.0, 7.0]]] and indices.tolist() == [[[1, 1, 4]]]
    values.sum().backward()
    assert x.grad.tolist() == [[[0.0, 2.0, 0.0, 0.0, 1.0]]]


@pytest.mark.parametrize("size", [1, 3, 4, 10])
def test_adaptive_pools_1d_match_torch(size):
    torch = pytest.importorskip("torch")
    xt = torch.randn(2, 3, 10)
    xr = rt.tensor(xt.numpy())
    np.testing.assert_allclose(_np(F.adaptive_avg_pool1d(xr, size)),
                               torch.nn.functional.adaptive_avg_pool1d(xt, size).numpy(),
                               rtol=1e-6, atol=1e-6)
    vt, it = torch.nn.functional.adaptive_max_pool1d(xt[0], size, return_indices=True)
    vr, ir = F.adaptive_max_pool1d(xr[0], size, return_indices=True)
    np.testing.assert_array_equal(_np(vr), vt.numpy())
    np.testing.assert_array_equal(_np(ir), it.numpy())
