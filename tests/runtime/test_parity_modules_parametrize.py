"""Parity with PyTorch of ``nn.utils.parametrize``, ``nn.utils.parametrizations``
(weight_norm, spectral_norm) and the older hook-based ``nn.utils.weight_norm``."""

from __future__ import annotations

import copy

import numpy as np
import pytest

import runtime as rt

nn = rt.nn
P = rt.nn.utils.parametrize
PZ = rt.nn.utils.parametrizations


def _np(t: object) -> np.ndarray:
    return t.detach().numpy()  # type: ignore[attr-defined]


class _Double(nn.Module):
    def forward(self, x: rt.Tensor) -> rt.Tensor:
        return x * 2

    def right_inverse(self, x: rt.Tensor) -> rt.Tensor:
        return x / 2


class _Symmetric(nn.Module):
    def forward(self, x: rt.Tensor) -> rt.Tensor:
        return x.triu() + x.triu(1).transpose(0, 1)


def test_register_parametrization_property_state_dict_and_removal():
    lin = nn.Linear(2, 2)
    with rt.no_grad():
        lin.weight.copy_(rt.tensor([[1.0, 2.0], [3.0, 4.0]]))
    original = lin.weight
    P.register_parametrization(lin, "weight", _Symmetric())
    assert type(lin).__name__ == "ParametrizedLinear"
    assert P.is_parametrized(lin) and P.is_parametrized(lin, "weight")
    assert not P.is_parametrized(lin, "bias")
    assert lin.weight.tolist() == [[1.0, 2.0], [2.0, 4.0]]
    assert lin.parametrizations.weight.original is original  # the same parameter object
    assert list(lin.state_dict()) == ["bias", "parametrizations.weight.original"]
    assert [n for n, _ in lin.named_parameters()] == ["bias",
                                                      "parametrizations.weight.original"]
    lin(rt.ones(1, 2)).sum().backward()
    assert original.grad.tolist() == [[1.0, 2.0], [0.0, 1.0]]  # d(sym)/d(upper triangle)
    with pytest.raises(RuntimeError, match="_Symmetric does not implement right_inverse"):
        lin.weight = rt.zeros(2, 2)
    P.register_parametrization(lin, "bias", _Double())
    lin.bias = rt.tensor([4.0, 6.0])  # through right_inverse
    assert lin.parametrizations.bias.original.tolist() == [2.0, 3.0]
    P.register_parametrization(lin, "bias", _Double())  # chained: x * 2 * 2
    assert lin.bias.tolist() == [8.0, 12.0]
    replica = copy.deepcopy(lin)
    assert replica.weight.tolist() == lin.weight.tolist() and replica is not lin
    P.remove_parametrizations(lin, "weight", leave_parametrized=False)
    assert lin.weight is original and lin.weight.tolist() == [[1.0, 2.0], [3.0, 4.0]]
    P.remove_parametrizations(lin, "bias")
    assert type(lin) is nn.Linear and not hasattr(lin, "parametrizations")
    assert isinstance(lin.bias, nn.Parameter) and lin.bias.tolist() == [8.0, 12.0]
    with pytest.raises(ValueError, match="does not have a parametrization on bias"):
        P.remove_parametrizations(lin, "bias")


def test_parametrize_refuses_shape_changes_and_unknown_names():
    class First(nn.Module):
        def forward(self, x: rt.Tensor) -> rt.Tensor:
            return x[0]

    with pytest.raises(ValueError, match="may not change the shape of the tensor, unless "
                                         "`unsafe` flag is enabled.\nunparametrized shape"):
        P.register_parametrization(nn.Linear(2, 2), "weight", First())
    with pytest.raises(ValueError, match="does not have a parameter, a buffer, or a "
                                         "parametrized element with name 'nope'"):
        P.register_parametrization(nn.Linear(2, 2), "nope", _Double())


def test_cached_computes_a_parametrization_once():
    lin = P.register_parametrization(nn.Linear(2, 2), "weight", _Double())
    assert lin.weight is not lin.weight
    with P.cached():
        assert lin.weight is lin.weight


def test_weight_norm_by_hand_and_its_state_dict():
    lin = nn.Linear(2, 2, bias=False)
    with rt.no_grad():
        lin.weight.copy_(rt.tensor([[3.0, 4.0], [0.0, 2.0]]))
    PZ.weight_norm(lin)
    g = lin.parametrizations.weight.original0
    v = lin.parametrizations.weight.original1
    assert g.tolist() == [[5.0], [2.0]] and v.tolist() == [[3.0, 4.0], [0.0, 2.0]]
    with rt.no_grad():
        g.copy_(rt.tensor([[10.0], [1.0]]))
    np.testing.assert_allclose(_np(lin.weight), [[6.0, 8.0], [0.0, 1.0]], rtol=1e-6)
    assert list(lin.state_dict()) == ["parametrizations.weight.original0",
                                      "parametrizations.weight.original1"]
    whole = PZ.weight_norm(nn.Linear(2, 2), dim=None)
    assert whole.parametrizations.weight.original0.shape == ()


def test_old_weight_norm_hook_and_its_checkpoint_loading_into_the_parametrization():
    conv = nn.Conv1d(2, 3, 3)
    w = conv.weight.detach().clone()
    with pytest.warns(FutureWarning, match="parametrizations.weight_norm"):
        nn.utils.weight_norm(conv)
    assert list(conv.state_dict()) == ["bias", "weight_g", "weight_v"]
    assert conv.weight_g.shape == (3, 1, 1)
    np.testing.assert_allclose(_np(conv.weight), _np(w), rtol=1e-6)
    x = rt.randn(2, 2, 5)
    y = conv(x)
    y.sum().backward()
    assert conv.weight_g.grad is not None and conv.weight_v.grad is not None
    new = PZ.weight_norm(nn.Conv1d(2, 3, 3))
    assert repr(new.load_state_dict(conv.state_dict())) == "<All keys matched successfully>"
    np.testing.assert_allclose(_np(new(x)), _np(y), rtol=1e-5, atol=1e-6)
    nn.utils.remove_weight_norm(conv)
    assert list(conv.state_dict()) == ["bias", "weight"]
    with pytest.raises(ValueError, match="weight_norm of 'weight' not found in"):
        nn.utils.remove_weight_norm(conv)


def test_spectral_norm_divides_by_the_largest_singular_value():
    lin = nn.Linear(3, 2, bias=False)
    with rt.no_grad():
        lin.weight.copy_(rt.tensor([[3.0, 0.0, 0.0], [0.0, 1.0, 0.0]]))
    PZ.spectral_norm(lin)  # 15 power iterations at registration: sigma = 3
    np.testing.assert_allclose(_np(lin.weight), [[1.0, 0, 0], [0, 1 / 3, 0]], atol=1e-5)
    assert sorted(k for k, _ in lin.named_buffers()) == ["parametrizations.weight.0._u",
                                                        "parametrizations.weight.0._v"]
    conv_t = PZ.spectral_norm(nn.ConvTranspose2d(2, 3, 3))
    assert conv_t.parametrizations.weight[0].dim == 1  # a transposed conv's output dim


def test_old_spectral_norm_hook_buffers_and_removal():
    lin = nn.Linear(3, 2, bias=False)
    with rt.no_grad():
        lin.weight.copy_(rt.tensor([[3.0, 0.0, 0.0], [0.0, 1.0, 0.0]]))
    nn.utils.spectral_norm(lin, n_power_iterations=20)
    assert list(lin.state_dict()) == ["weight_orig", "weight_u", "weight_v"]
    lin(rt.ones(1, 3))  # training: 20 power iterations, then sigma = 3
    np.testing.assert_allclose(_np(lin.weight), [[1.0, 0, 0], [0, 1 / 3, 0]], atol=1e-5)
    lin.eval()
    u = lin.weight_u.clone()
    lin(rt.ones(1, 3))
    assert lin.weight_u.tolist() == u.tolist()  # no power iteration in eval
    nn.utils.remove_spectral_norm(lin)
    assert list(lin.state_dict()) == ["weight"] and isinstance(lin.weight, nn.Parameter)
    with pytest.raises(ValueError, match="spectral_norm of 'weight' not found in"):
        nn.utils.remove_spectral_norm(lin)


@pytest.mark.filterwarnings("ignore:`torch.nn.utils.weight_norm` is deprecated")
@pytest.mark.parametrize("which", ["weight_norm", "spectral_norm", "old_weight_norm",
                                   "old_spectral_norm"])
def test_parametrizations_match_torch(which):
    torch = pytest.importorskip("torch")
    apply_t = {"weight_norm": torch.nn.utils.parametrizations.weight_norm,
               "spectral_norm": torch.nn.utils.parametrizations.spectral_norm,
               "old_weight_norm": torch.nn.utils.weight_norm,
               "old_spectral_norm": torch.nn.utils.spectral_norm}[which]
    apply_r = {"weight_norm": PZ.weight_norm, "spectral_norm": PZ.spectral_norm,
               "old_weight_norm": nn.utils.weight_norm,
               "old_spectral_norm": nn.utils.spectral_norm}[which]
    torch.manual_seed(0)
    tm, rm = apply_t(torch.nn.Conv2d(2, 3, 3)), apply_r(nn.Conv2d(2, 3, 3))
    assert list(rm.state_dict()) == list(tm.state_dict())
    assert repr(rm) == repr(tm)
    rm.load_state_dict({k: rt.tensor(v.numpy()) for k, v in tm.state_dict().items()})
    x = torch.randn(2, 2, 5, 5)
    for _ in range(2):  # spectral_norm: a power iteration per training forward
        yt, yr = tm(x), rm(rt.tensor(x.numpy()))
        np.testing.assert_allclose(_np(yr), yt.detach().numpy(), rtol=1e-4, atol=1e-5)
    (yt ** 2).sum().backward()
    (yr ** 2).sum().backward()
    grads = dict(rm.named_parameters())
    for name, p in tm.named_parameters():
        np.testing.assert_allclose(_np(grads[name].grad), p.grad.numpy(), rtol=1e-3, atol=1e-4)
    for name, b in tm.named_buffers():
        np.testing.assert_allclose(_np(dict(rm.named_buffers())[name]), b.numpy(), rtol=1e-4,
                                   atol=1e-5)


def test_weight_norm_gradcheck():
    v = rt.randn(3, 2, dtype=rt.float64, requires_grad=True)
    g = rt.rand(3, 1, dtype=rt.float64, requires_grad=True)
    assert rt.autograd.gradcheck(lambda g, v: PZ._weight_norm(v, g, 0), (g, v))
