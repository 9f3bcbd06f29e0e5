"""nn.utils.fuse_conv_bn_eval / fuse_linear_bn_eval (and their _weights forms) and
nn.utils.skip_init against torch: the fused layer computes layer-then-batch-norm in eval mode,
with torch's weights, dtypes and requires_grad; their checks."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import runtime as rt

torch = pytest.importorskip("torch")


def _bn(lib: Any, n: int, affine: bool = True) -> Any:
    lib.manual_seed(0)
    bn = lib.nn.BatchNorm2d(n, affine=affine).double()
    rng = np.random.default_rng(n)
    with lib.no_grad():
        bn.running_mean.copy_(lib.tensor(rng.standard_normal(n)))
        bn.running_var.copy_(lib.tensor(rng.random(n) + 0.5))
        if affine:
            bn.weight.copy_(lib.tensor(rng.standard_normal(n)))
            bn.bias.copy_(lib.tensor(rng.standard_normal(n)))
    return bn.eval()


@pytest.mark.parametrize("transpose,bias,affine", [(False, True, True), (False, False, False),
                                                   (True, True, True), (True, False, True)])
def test_fuse_conv_bn_eval_matches_torch(transpose, bias, affine):
    x = np.random.default_rng(1).standard_normal((2, 4, 5, 5))
    results = []
    for lib in (torch, rt):
        lib.manual_seed(0)
        cls = lib.nn.ConvTranspose2d if transpose else lib.nn.Conv2d
        conv = cls(4, 6, 3, bias=bias).double().eval()
        conv.load_state_dict({k: lib.tensor(np.random.default_rng(2).standard_normal(
            tuple(v.shape))) for k, v in conv.state_dict().items()})
        bn = _bn(lib, 6, affine)
        fused = lib.nn.utils.fuse_conv_bn_eval(conv, bn, transpose=transpose)
        xt = lib.tensor(x)
        results.append((fused(xt).detach().numpy(), bn(conv(xt)).detach().numpy(),
                        fused.weight.requires_grad, type(fused.bias).__name__))
    (t_fused, t_ref, t_rg, t_bias), (r_fused, r_ref, r_rg, r_bias) = results
    np.testing.assert_allclose(r_fused, t_fused, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(r_fused, r_ref, rtol=1e-9, atol=1e-11)
    assert (r_rg, r_bias) == (t_rg, t_bias)


def test_fuse_linear_bn_eval_matches_torch():
    x = np.random.default_rng(1).standard_normal((3, 4))
    outs = []
    for lib in (torch, rt):
        lib.manual_seed(0)
        linear = lib.nn.Linear(4, 5).double().eval()
        linear.load_state_dict({k: lib.tensor(np.random.default_rng(3).standard_normal(
            tuple(v.shape))) for k, v in linear.state_dict().items()})
        bn = lib.nn.BatchNorm1d(5).double()
        with lib.no_grad():
            bn.running_mean.copy_(lib.tensor(np.arange(5.0)))
            bn.running_var.copy_(lib.tensor(np.arange(1.0, 6.0)))
        bn.eval()
        fused = lib.nn.utils.fuse_linear_bn_eval(linear, bn)
        outs.append((fused(lib.tensor(x)).detach().numpy(),
                     bn(linear(lib.tensor(x))).detach().numpy()))
    np.testing.assert_allclose(outs[1][0], outs[0][0], rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(outs[1][0], outs[1][1], rtol=1e-9, atol=1e-11)


@pytest.mark.parametrize("call", [
    "U.fuse_conv_bn_eval(nn.Conv2d(2, 3, 1), nn.BatchNorm2d(3).eval())",
    "U.fuse_linear_bn_eval(nn.Linear(2, 3).eval(), nn.BatchNorm1d(4).eval())",
    "U.fuse_linear_bn_eval(nn.Linear(2, 3).eval(), nn.BatchNorm1d(3, track_running_stats=False).eval())",
    "U.skip_init(nn.Linear(2, 3), 2, 3)",
    "U.skip_init(nn.ReLU)",
])
def test_fusion_and_skip_init_errors_match_torch(call):
    def run(lib: Any) -> str:
        with pytest.raises(Exception) as info:
            eval(call, {"U": lib.nn.utils, "nn": lib.nn})  # noqa: S307
        return f"{type(info.value).__name__}: {info.value}"

    assert run(rt) == run(torch)


def test_skip_init_gives_the_module_with_empty_tensors():
    m = rt.nn.utils.skip_init(rt.nn.Linear, 3, 4, bias=False)
    t = torch.nn.utils.skip_init(torch.nn.Linear, 3, 4, bias=False)
    assert repr(m) == repr(t)
    assert m.weight.shape == tuple(t.weight.shape) and m.weight.requires_grad
