"""F.multi_head_attention_forward against torch: the tensors of a torch MultiheadAttention
passed to both functions (packed or separate projections, bias_k/bias_v, add_zero_attn,
masks, static keys and values, unbatched, need_weights and average_attn_weights); outputs,
weights and float64 gradients; and its own checks."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import runtime as rt

torch = pytest.importorskip("torch")

E, H, L, S, N = 8, 2, 3, 4, 2


def _arguments(lib: Any, module: Any, kw: dict[str, Any], shapes: dict[str, Any]
               ) -> tuple[list[Any], dict[str, Any], list[Any]]:
    """The positional and keyword arguments, in ``lib``'s tensors, and the leaves whose
    gradients are compared."""
    def t(x: Any) -> Any:
        return None if x is None else lib.tensor(x.detach().numpy(), requires_grad=True)

    rng = np.random.default_rng(0)
    q = lib.tensor(rng.standard_normal(shapes["q"]), requires_grad=True)
    k = q if shapes.get("self") else lib.tensor(rng.standard_normal(shapes["k"]),
                                               requires_grad=True)
    v = q if shapes.get("self") else lib.tensor(rng.standard_normal(shapes["v"]),
                                               requires_grad=True)
    params = [t(module.in_proj_weight), t(module.in_proj_bias), t(module.bias_k),
              t(module.bias_v)]
    out_w, out_b = t(module.out_proj.weight), t(module.out_proj.bias)
    args = [q, k, v, E, H, *params, module.add_zero_attn, 0.0, out_w, out_b]
    extra: dict[str, Any] = {}
    for name in ("q_proj_weight", "k_proj_weight", "v_proj_weight"):
        extra[name] = t(getattr(module, name))
    extra["use_separate_proj_weight"] = not module._qkv_same_embed_dim
    for name in ("static_k", "static_v"):
        if name in shapes:
            extra[name] = lib.tensor(np.random.default_rng(1).standard_normal(shapes[name]),
                                     requires_grad=True)
    for name in ("attn_mask", "key_padding_mask"):
        if name in kw:
            extra[name] = lib.tensor(kw[name])
    for name in ("need_weights", "average_attn_weights"):
        if name in kw:
            extra[name] = kw[name]
    leaves = [a for a in [q, k, v, *params, out_w, out_b, *extra.values()]
              if isinstance(a, (torch.Tensor, rt.Tensor)) and a.requires_grad]
    return args, extra, leaves


CASES = [
    ("packed self-attention", {}, {}, {"q": (L, N, E), "self": True}),
    ("cross", {}, {}, {"q": (L, N, E), "k": (S, N, E), "v": (S, N, E)}),
    ("separate kdim vdim", {"kdim": 5, "vdim": 6}, {},
     {"q": (L, N, E), "k": (S, N, 5), "v": (S, N, 6)}),
    ("bias_kv zero_attn masks", {"add_bias_kv": True, "add_zero_attn": True},
     {"attn_mask": np.triu(np.ones((L, S), bool), 1),
      "key_padding_mask": np.array([[False] * S, [False] * (S - 1) + [True]])},
     {"q": (L, N, E), "k": (S, N, E), "v": (S, N, E)}),
    ("per-head weights float mask", {},
     {"attn_mask": np.random.default_rng(3).standard_normal((N * H, L, S)),
      "average_attn_weights": False}, {"q": (L, N, E), "k": (S, N, E), "v": (S, N, E)}),
    ("static k and v, no weights", {}, {"need_weights": False},
     {"q": (L, N, E), "k": (S, N, E), "v": (S, N, E), "static_k": (N * H, 5, E // H),
      "static_v": (N * H, 5, E // H)}),
    ("unbatched", {}, {}, {"q": (L, E), "k": (S, E), "v": (S, E)}),
]


@pytest.mark.parametrize("name,init,kw,shapes", CASES, ids=[c[0] for c in CASES])
def test_multi_head_attention_forward_matches_torch(name, init, kw, shapes):
    torch.manual_seed(0)
    module = torch.nn.MultiheadAttention(E, H, **init).double()
    if module.in_proj_bias is not None:  # not all zeros, so its gradient path is seen
        with torch.no_grad():
            module.in_proj_bias.normal_()
            module.out_proj.bias.normal_()
    results = []
    for lib in (torch, rt):
        args, extra, leaves = _arguments(lib, module, kw, shapes)
        out, weights = lib.nn.functional.multi_head_attention_forward(*args, **extra)
        loss = (out * lib.tensor(np.random.default_rng(4).standard_normal(tuple(out.shape)))
                ).sum()
        if weights is not None:
            loss = loss + (weights ** 2).sum()
        loss.backward()
        results.append((out.detach().numpy(), None if weights is None else
                        weights.detach().numpy(),
                        [None if x.grad is None else x.grad.numpy() for x in leaves]))
    (t_out, t_w, t_grads), (r_out, r_w, r_grads) = results
    np.testing.assert_allclose(r_out, t_out, rtol=1e-10, atol=1e-12)
    assert (r_w is None) == (t_w is None)
    if t_w is not None:
        np.testing.assert_allclose(r_w, t_w, rtol=1e-10, atol=1e-12)
    assert len(r_grads) == len(t_grads)
    for a, b in zip(r_grads, t_grads):
        assert (a is None) == (b is None)
        if b is not None:
            np.testing.assert_allclose(a, b, rtol=1e-9, atol=1e-11)


@pytest.mark.parametrize("change", [
    {"embed_dim_to_check": 6},
    {"num_heads": 3},
    {"use_separate_proj_weight": True},
    {"in_proj_weight": None},
    {"static_k": "bad0"},
    {"static_k": "bad2"},
    {"bias_kv_static": True},
])
def test_multi_head_attention_forward_errors_match_torch(change):
    def run(lib: Any) -> str:
        rng = np.random.default_rng(0)

        def r(*shape: int) -> Any:
            return lib.tensor(rng.standard_normal(shape))

        kw: dict[str, Any] = dict(
            query=r(L, N, E), key=r(S, N, E), value=r(S, N, E), embed_dim_to_check=E,
            num_heads=H, in_proj_weight=r(3 * E, E), in_proj_bias=r(3 * E), bias_k=None,
            bias_v=None, add_zero_attn=False, dropout_p=0.0, out_proj_weight=r(E, E),
            out_proj_bias=r(E))
        for key, value in change.items():
            if key == "static_k":
                kw["static_k"] = r(N * H + 1, S, E // H) if value == "bad0" else r(N * H, S, 3)
            elif key == "bias_kv_static":
                kw.update(bias_k=r(1, 1, E), bias_v=r(1, 1, E), static_k=r(N * H, S, E // H))
            else:
                kw[key] = value
        with pytest.raises(Exception) as info:
            lib.nn.functional.multi_head_attention_forward(**kw)
        return f"{type(info.value).__name__}: {info.value}"

    assert run(rt) == run(torch)
