"""nn.TransformerEncoderLayer / TransformerEncoder against PyTorch (same weights through a
state dict): outputs and gradients with post- and pre-norm, batch_first, relu and gelu, causal
and padding masks; parameter names; errors. (Compiled: test_transformer_layers.py.)"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import runtime as rt

torch = pytest.importorskip("torch")


def _pair(kw: dict[str, Any], layers: int | None) -> tuple[Any, Any]:
    def build(lib: Any) -> Any:
        layer = lib.nn.TransformerEncoderLayer(16, 4, dim_feedforward=32, dropout=0.0, **kw)
        if layers is None:
            return layer
        return lib.nn.TransformerEncoder(layer, layers, norm=lib.nn.LayerNorm(16),
                                         enable_nested_tensor=False)

    theirs = build(torch).double()
    ours = build(rt).double()
    assert [n for n, _ in ours.named_parameters()] == [n for n, _ in theirs.named_parameters()]
    ours.load_state_dict({k: rt.tensor(v.detach().numpy())
                          for k, v in theirs.state_dict().items()})
    return ours, theirs


@pytest.mark.parametrize("layers", [None, 2])
@pytest.mark.parametrize("kw", [{}, {"norm_first": True}, {"batch_first": True},
                                {"activation": "gelu", "norm_first": True},
                                {"activation": "gelu", "batch_first": True, "bias": False}])
@pytest.mark.parametrize("mask", ["none", "causal", "padding"])
def test_matches_torch(kw: dict[str, Any], layers: int | None, mask: str) -> None:
    ours, theirs = _pair(kw, layers)
    g = np.random.default_rng(0)
    shape = (3, 5, 16) if kw.get("batch_first") else (5, 3, 16)
    x = g.standard_normal(shape)
    xr, xt = rt.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    args_r: dict[str, Any] = {}
    args_t: dict[str, Any] = {}
    key = "src_mask" if layers is None else "mask"
    if mask == "causal":
        m = np.triu(np.full((5, 5), -np.inf), 1)
        args_r, args_t = {key: rt.tensor(m), "is_causal": True}, {key: torch.tensor(m),
                                                                   "is_causal": True}
    elif mask == "padding":
        pad = np.zeros((3, 5), dtype=bool)
        pad[1, 3:] = True
        args_r = {"src_key_padding_mask": rt.tensor(pad)}
        args_t = {"src_key_padding_mask": torch.tensor(pad)}
    a, b = ours(xr, **args_r), theirs(xt, **args_t)
    np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), rtol=1e-9, atol=1e-11)
    up = g.standard_normal(shape)
    (a * rt.tensor(up)).sum().backward()
    (b * torch.tensor(up)).sum().backward()
    np.testing.assert_allclose(xr.grad.numpy(), xt.grad.numpy(), rtol=1e-8, atol=1e-10)
    theirs_grads = dict(theirs.named_parameters())
    for n, p in ours.named_parameters():
        np.testing.assert_allclose(p.grad.numpy(), theirs_grads[n].grad.numpy(), rtol=1e-8,
                                   atol=1e-10, err_msg=n)


def test_errors_match_torch() -> None:
    for lib in (rt, torch):
        with pytest.raises(RuntimeError, match="activation should be relu/gelu, not tanh"):
            lib.nn.TransformerEncoderLayer(16, 4, activation="tanh")
