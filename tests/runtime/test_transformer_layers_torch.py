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


@pytest.mark.parametrize("kw", [{}, {"norm_first": True, "batch_first": True},
                                {"activation": "gelu", "bias": False}])
def test_decoder_and_transformer_match_torch(kw: dict[str, Any]) -> None:
    def build(lib: Any) -> Any:
        return lib.nn.Transformer(16, 4, num_encoder_layers=2, num_decoder_layers=2,
                                  dim_feedforward=32, dropout=0.0, **kw).double()

    theirs, ours = build(torch), build(rt)
    assert [n for n, _ in ours.named_parameters()] == [n for n, _ in theirs.named_parameters()]
    ours.load_state_dict({k: rt.tensor(v.detach().numpy())
                          for k, v in theirs.state_dict().items()})
    g = np.random.default_rng(3)
    bf = kw.get("batch_first", False)
    src = g.standard_normal((2, 5, 16) if bf else (5, 2, 16))
    tgt = g.standard_normal((2, 4, 16) if bf else (4, 2, 16))
    pad = np.zeros((2, 5), dtype=bool)
    pad[0, 4] = True
    sr, st = rt.tensor(src, requires_grad=True), torch.tensor(src, requires_grad=True)
    tr, tt = rt.tensor(tgt, requires_grad=True), torch.tensor(tgt, requires_grad=True)
    mask_r = rt.nn.Transformer.generate_square_subsequent_mask(4, dtype=rt.float64)
    mask_t = torch.nn.Transformer.generate_square_subsequent_mask(4, dtype=torch.float64)
    np.testing.assert_array_equal(mask_r.numpy(), mask_t.numpy())
    a = ours(sr, tr, tgt_mask=mask_r, src_key_padding_mask=rt.tensor(pad),
             memory_key_padding_mask=rt.tensor(pad), tgt_is_causal=True)
    b = theirs(st, tt, tgt_mask=mask_t, src_key_padding_mask=torch.tensor(pad),
               memory_key_padding_mask=torch.tensor(pad), tgt_is_causal=True)
    np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), rtol=1e-9, atol=1e-11)
    up = g.standard_normal(tuple(b.shape))
    (a * rt.tensor(up)).sum().backward()
    (b * torch.tensor(up)).sum().backward()
    np.testing.assert_allclose(sr.grad.numpy(), st.grad.numpy(), rtol=1e-8, atol=1e-10)
    np.testing.assert_allclose(tr.grad.numpy(), tt.grad.numpy(), rtol=1e-8, atol=1e-10)
    theirs_grads = dict(theirs.named_parameters())
    for n, p in ours.named_parameters():
        np.testing.assert_allclose(p.grad.numpy(), theirs_grads[n].grad.numpy(), rtol=1e-8,
                                   atol=1e-10, err_msg=n)


def test_transformer_init_and_checks_match_torch() -> None:
    m = rt.nn.Transformer(16, 4, 1, 1, 32)
    bound = np.sqrt(6 / (16 + 48))  # xavier_uniform_ of the (48, 16) in_proj_weight
    w = m.encoder.layers[0].self_attn.in_proj_weight.detach().numpy()
    assert np.abs(w).max() <= bound and np.abs(w).max() > 0.8 * bound
    for lib in (rt, torch):
        model = lib.nn.Transformer(16, 4, 1, 1, 32)
        with pytest.raises(RuntimeError, match="the batch number of src and tgt must be "
                                               "equal"):
            model(lib.zeros(5, 2, 16), lib.zeros(4, 3, 16))
        with pytest.raises(RuntimeError, match="the feature number of src and tgt must be "
                                               "equal to d_model"):
            model(lib.zeros(5, 2, 16), lib.zeros(4, 2, 8))
