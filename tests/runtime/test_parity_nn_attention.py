"""scaled_dot_product_attention with attn_mask and is_causal together, against PyTorch 2.13:
its CPU flash kernel (4-D inputs of matching batch, heads and head size, no dropout, a mask of
shape (L, S) or (B, H, L, S)) applies both masks, its math kernel refuses the pair."""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
import pytest

import runtime as rt

torch = pytest.importorskip("torch")
F = rt.nn.functional
TF = torch.nn.functional

# (query, key, value, mask shape, mask kind, keywords)
CASES: dict[str, tuple[tuple[int, ...], tuple[int, ...], tuple[int, ...], tuple[int, ...],
                       str, dict[str, Any]]] = {
    "float_mask": ((2, 3, 4, 8), (2, 3, 4, 8), (2, 3, 4, 8), (4, 4), "float", {}),
    "bool_mask": ((2, 3, 4, 8), (2, 3, 4, 8), (2, 3, 4, 8), (4, 4), "bool", {}),
    "batch_1": ((1, 1, 4, 8), (1, 1, 4, 8), (1, 1, 4, 8), (4, 4), "bool", {}),
    "fewer_queries": ((2, 3, 4, 8), (2, 3, 6, 8), (2, 3, 6, 8), (4, 6), "float", {}),
    "more_queries": ((2, 3, 6, 8), (2, 3, 4, 8), (2, 3, 4, 8), (6, 4), "bool", {}),
    "mask_4d": ((2, 3, 4, 8), (2, 3, 4, 8), (2, 3, 4, 8), (2, 3, 4, 4), "float", {}),
    "mask_4d_broadcast": ((2, 3, 4, 8), (2, 3, 4, 8), (2, 3, 4, 8), (2, 1, 1, 4), "bool", {}),
    "mask_row": ((2, 3, 4, 8), (2, 3, 4, 8), (2, 3, 4, 8), (4, 1), "float", {}),
    "scale": ((2, 3, 4, 8), (2, 3, 4, 8), (2, 3, 4, 8), (4, 4), "float", {"scale": 0.3}),
    "gqa": ((2, 4, 4, 8), (2, 2, 4, 8), (2, 2, 4, 8), (4, 4), "bool", {"enable_gqa": True}),
    "float32_mask": ((2, 3, 4, 8), (2, 3, 4, 8), (2, 3, 4, 8), (4, 4), "float32", {}),
    # the math kernel: PyTorch's error
    "3d": ((3, 4, 8), (3, 4, 8), (3, 4, 8), (4, 4), "float", {}),
    "2d": ((4, 8), (4, 8), (4, 8), (4, 4), "bool", {}),
    "5d": ((2, 2, 3, 4, 8), (2, 2, 3, 4, 8), (2, 2, 3, 4, 8), (4, 4), "float", {}),
    "dropout": ((2, 3, 4, 8), (2, 3, 4, 8), (2, 3, 4, 8), (4, 4), "float", {"dropout_p": 0.5}),
    "mask_3d": ((2, 3, 4, 8), (2, 3, 4, 8), (2, 3, 4, 8), (3, 4, 4), "float", {}),
    "mask_5d": ((2, 3, 4, 8), (2, 3, 4, 8), (2, 3, 4, 8), (1, 2, 3, 4, 4), "float", {}),
    "mask_other_batch": ((2, 3, 4, 8), (2, 3, 4, 8), (2, 3, 4, 8), (3, 3, 4, 4), "float", {}),
    "value_head_size": ((2, 3, 4, 8), (2, 3, 4, 8), (2, 3, 4, 5), (4, 4), "float", {}),
    "key_batch_broadcast": ((2, 3, 4, 8), (1, 3, 4, 8), (1, 3, 4, 8), (4, 4), "float", {}),
    "gqa_off": ((2, 4, 4, 8), (2, 2, 4, 8), (2, 2, 4, 8), (4, 4), "float", {}),
    "mask_1d": ((2, 3, 4, 8), (2, 3, 4, 8), (2, 3, 4, 8), (4,), "float", {}),
    "mask_0d": ((2, 3, 4, 8), (2, 3, 4, 8), (2, 3, 4, 8), (), "float", {}),
}


def make_mask(shape: tuple[int, ...], kind: str, rng: np.random.Generator) -> np.ndarray:
    if kind == "bool":
        m = rng.random(shape) > 0.3
        m[..., 0] = True  # no query without a key (both kernels give it 0, tested elsewhere)
        return m
    return rng.standard_normal(shape).astype(np.float32 if kind == "float32" else np.float64)


def run(lib: Any, tensor: Any, arrays: list[np.ndarray], mask: np.ndarray,
        kw: dict[str, Any]) -> tuple[str, list[np.ndarray]]:
    """The error text, or the output and q/k/v gradients, of one library."""
    qkv = [tensor(a, requires_grad=True) for a in arrays]
    fn = lib.nn.functional.scaled_dot_product_attention
    try:
        out = fn(*qkv, attn_mask=tensor(mask), is_causal=True, **kw)
    except (RuntimeError, IndexError) as e:
        return f"{type(e).__name__}: {e}", []
    up = np.random.default_rng(1).standard_normal(tuple(out.shape))
    (out * tensor(up)).sum().backward()
    return "", [out.detach().numpy()] + [t.grad.numpy() for t in qkv]


@pytest.mark.parametrize("case", CASES)
def test_sdpa_mask_with_is_causal_matches_torch(case: str) -> None:
    qs, ks, vs, ms, kind, kw = CASES[case]
    rng = np.random.default_rng(0)
    arrays = [rng.standard_normal(s) for s in (qs, ks, vs)]
    mask = make_mask(ms, kind, rng)
    if kw.get("dropout_p"):
        torch.manual_seed(0)
    want_err, want = run(torch, torch.tensor, arrays, mask, kw)
    got_err, got = run(rt, rt.tensor, arrays, mask, kw)
    assert got_err == want_err
    for g, w in zip(got, want, strict=True):
        np.testing.assert_allclose(g, w, rtol=1e-10, atol=1e-12)


def test_sdpa_mask_with_is_causal_is_both_masks() -> None:
    # the pair is the causal mask and the mask together, checked without PyTorch's kernel
    rng = np.random.default_rng(2)
    q, k, v = (rt.tensor(rng.standard_normal((1, 2, 5, 4))) for _ in range(3))
    m = rng.random((5, 5)) > 0.5
    m[:, 0] = True
    both = F.scaled_dot_product_attention(q, k, v, attn_mask=rt.tensor(m), is_causal=True)
    one = F.scaled_dot_product_attention(q, k, v, attn_mask=rt.tensor(m & np.tri(5, dtype=bool)))
    np.testing.assert_array_equal(both.numpy(), one.numpy())


def test_sdpa_mask_requiring_grad_with_is_causal_is_refused() -> None:
    # a mask that requires grad sends PyTorch to its math kernel
    q = rt.zeros(1, 1, 4, 8)
    with pytest.raises(RuntimeError, match="^_scaled_dot_product_attention: Explicit attn_mask "
                       "should not be set when is_causal=True$"):
        F.scaled_dot_product_attention(q, q, q, attn_mask=rt.zeros(4, 4, requires_grad=True),
                                       is_causal=True)


@pytest.mark.parametrize("dtype", ["float32", "float16", "int64"])
def test_sdpa_float32_mask_for_a_float64_query(dtype: str) -> None:
    # PyTorch takes a float32 mask for any query dtype (converted to it); other dtypes are
    # refused with their C++ names
    rng = np.random.default_rng(3)
    q = rng.standard_normal((2, 4, 8))
    m = rng.standard_normal((4, 4))
    try:
        want = TF.scaled_dot_product_attention(*(torch.tensor(q),) * 3,
                                               attn_mask=torch.tensor(m).to(getattr(torch, dtype)))
    except RuntimeError as e:
        with pytest.raises(RuntimeError) as info:
            F.scaled_dot_product_attention(*(rt.tensor(q),) * 3,
                                           attn_mask=rt.tensor(m).to(getattr(rt, dtype)))
        assert str(info.value) == str(e)
        return
    got = F.scaled_dot_product_attention(*(rt.tensor(q),) * 3,
                                         attn_mask=rt.tensor(m).to(getattr(rt, dtype)))
    assert got.dtype is rt.float64
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-12, atol=1e-12)


# MultiheadAttention's mask and shape checks: (query, key, value shapes, keywords); a mask is
# ("dtype", shape)
MHA_CASES: dict[str, tuple[tuple[tuple[int, ...], ...], dict[str, Any]]] = {
    "int_attn_mask": (((5, 2, 8),) * 3, {"attn_mask": ("int64", (5, 5))}),
    "int_padding_mask": (((5, 2, 8),) * 3, {"key_padding_mask": ("int64", (2, 5))}),
    "float32_padding_mask": (((5, 2, 8),) * 3, {"key_padding_mask": ("float32", (2, 5))}),
    "float32_padding_mask_no_weights": (((5, 2, 8),) * 3, {
        "key_padding_mask": ("float32", (2, 5)), "need_weights": False}),
    "float32_attn_mask": (((5, 2, 8),) * 3, {"attn_mask": ("float32", (5, 5))}),
    "float32_attn_mask_no_weights": (((5, 2, 8),) * 3, {
        "attn_mask": ("float32", (5, 5)), "need_weights": False}),
    "float32_and_bool": (((5, 2, 8),) * 3, {"attn_mask": ("float32", (5, 5)),
                                           "key_padding_mask": ("bool", (2, 5))}),
    "float32_and_float64": (((5, 2, 8),) * 3, {"attn_mask": ("float32", (5, 5)),
                                              "key_padding_mask": ("float64", (2, 5))}),
    "both_float32": (((5, 2, 8),) * 3, {"attn_mask": ("float32", (5, 5)),
                                       "key_padding_mask": ("float32", (2, 5))}),
    "padding_mask_3d": (((5, 2, 8),) * 3, {"key_padding_mask": ("bool", (2, 5, 3))}),
    "attn_mask_4d": (((5, 2, 8),) * 3, {"attn_mask": ("bool", (1, 5, 5, 5))}),
    "unbatched_padding_mask_2d": (((5, 8),) * 3, {"key_padding_mask": ("bool", (1, 5))}),
    "unbatched_attn_mask_4d": (((5, 8),) * 3, {"attn_mask": ("bool", (1, 5, 5, 5))}),
    "unbatched_attn_mask_heads": (((5, 8),) * 3, {"attn_mask": ("bool", (3, 5, 5))}),
    "unbatched_attn_mask_3d": (((5, 8),) * 3, {"attn_mask": ("bool", (2, 5, 5))}),
    "attn_mask_3d_wrong": (((5, 2, 8),) * 3, {"attn_mask": ("bool", (3, 5, 5))}),
    "attn_mask_2d_wrong": (((5, 2, 8),) * 3, {"attn_mask": ("bool", (5, 4))}),
    "padding_mask_short": (((5, 2, 8),) * 3, {"key_padding_mask": ("bool", (2, 4))}),
    "padding_mask_batch": (((5, 2, 8),) * 3, {"key_padding_mask": ("bool", (3, 5))}),
    "key_2d": (((5, 2, 8), (5, 8), (5, 2, 8)), {}),
    "unbatched_key_3d": (((5, 8), (5, 2, 8), (5, 2, 8)), {}),
    "query_4d": (((1, 1, 2, 8), (5, 2, 8), (5, 2, 8)), {}),
    "key_value_lengths": (((5, 2, 8), (4, 2, 8), (5, 2, 8)), {}),
}


def mha_outcome(lib: Any, shapes: tuple[tuple[int, ...], ...],
                kw: dict[str, Any]) -> tuple[str, set[str], list[np.ndarray]]:
    """(error text, warning texts, [output, weights]) of a float64 MultiheadAttention(8, 2)."""
    lib.manual_seed(0)
    module = lib.nn.MultiheadAttention(8, 2).double()
    if lib is rt:
        state = torch_mha(shapes, kw).state_dict()
        module.load_state_dict({k: rt.tensor(v.numpy()) for k, v in state.items()})
    rng = np.random.default_rng(0)
    args = [lib.tensor(rng.standard_normal(s)) for s in shapes]
    kwargs = {k: lib.zeros(*v[1], dtype=getattr(lib, v[0])) if isinstance(v, tuple) else v
              for k, v in kw.items()}
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            out, weights = module(*args, **kwargs)
        except (AssertionError, RuntimeError) as e:
            return f"{type(e).__name__}: {str(e).replace('torch', 'runtime')}", set(), []
    values = [out.detach().numpy()] + ([] if weights is None else [weights.detach().numpy()])
    return "", {str(w.message) for w in caught}, values


def torch_mha(shapes: Any, kw: Any) -> Any:
    torch.manual_seed(0)
    return torch.nn.MultiheadAttention(8, 2).double()


@pytest.mark.parametrize("case", MHA_CASES)
def test_mha_mask_checks(case: str) -> None:
    shapes, kw = MHA_CASES[case]
    want = mha_outcome(torch, shapes, kw)
    got = mha_outcome(rt, shapes, kw)
    assert got[:2] == want[:2]
    for g, w in zip(got[2], want[2], strict=True):
        np.testing.assert_allclose(g, w, rtol=1e-10, atol=1e-12)
