"""F.scaled_dot_product_attention and nn.MultiheadAttention against PyTorch: outputs, weights
and gradients for every mask kind, PyTorch's error texts, and a compiled step equal to eager
with no fallback."""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
import pytest

import planner
import runtime as rt

torch = pytest.importorskip("torch")
F = rt.nn.functional
TF = torch.nn.functional
TOL = dict(rtol=1e-5, atol=2e-6)


def both(a: np.ndarray) -> tuple[rt.Tensor, Any]:
    return rt.tensor(a, requires_grad=True), torch.tensor(a, requires_grad=True)


def np_of(t: Any) -> np.ndarray:
    return t.detach().numpy()


def mask_for(kind: str, rng: np.random.Generator) -> np.ndarray | None:
    if kind == "bool":
        m = rng.random((5, 6)) > 0.4
        m[:, 0] = True  # every query sees a key: no all -inf row
        return m
    if kind == "float":
        return rng.standard_normal((3, 1, 6)).astype(np.float32)  # broadcast over batch, rows
    return None


@pytest.mark.parametrize(("mask", "causal", "scale"), [
    (None, False, None), (None, True, None), ("bool", False, None), ("float", False, 0.3),
    (None, True, 0.5)])
def test_sdpa_matches_torch(mask: str | None, causal: bool, scale: float | None) -> None:
    rng = np.random.default_rng(0)
    q = rng.standard_normal((2, 3, 5, 8)).astype(np.float32)
    k, v = (rng.standard_normal((2, 3, 6, 8)).astype(np.float32) for _ in range(2))
    m = mask_for(mask, rng) if mask else None
    up = rng.standard_normal((2, 3, 5, 8)).astype(np.float32)
    pairs = [both(a) for a in (q, k, v)]
    ours_r, theirs = [r for r, _ in pairs], [t for _, t in pairs]
    a = F.scaled_dot_product_attention(*ours_r, attn_mask=None if m is None else rt.tensor(m),
                                       is_causal=causal, scale=scale)
    b = TF.scaled_dot_product_attention(*theirs, attn_mask=None if m is None else torch.tensor(m),
                                        is_causal=causal, scale=scale)
    (a * rt.tensor(up)).sum().backward()
    (b * torch.tensor(up)).sum().backward()
    np.testing.assert_allclose(np_of(a), np_of(b), **TOL)
    for r, t in zip(ours_r, theirs, strict=True):
        np.testing.assert_allclose(np_of(r.grad), np_of(t.grad), **TOL)


def test_sdpa_dropout_drops_weights_and_rescales() -> None:
    rng = np.random.default_rng(1)
    q, k = (rt.tensor(rng.standard_normal((1, 1, 4, 8)).astype(np.float32)) for _ in range(2))
    v = rt.tensor(np.eye(4, dtype=np.float32)[None, None])  # the output is the weights
    rt.manual_seed(0)
    dropped = F.scaled_dot_product_attention(q, k, v, dropout_p=0.5).numpy()
    full = F.scaled_dot_product_attention(q, k, v).numpy()
    kept = dropped != 0
    assert 0 < kept.sum() < kept.size
    np.testing.assert_allclose(dropped[kept], 2 * full[kept], rtol=1e-6)
    assert not F.scaled_dot_product_attention(q, k, v, dropout_p=1.0).numpy().any()


def errors(fn: Any) -> str:
    with pytest.raises(Exception) as info:  # noqa: PT011 - the text is what is compared
        fn()
    return f"{type(info.value).__name__}: {info.value}"


@pytest.mark.parametrize("case", ["mask_shape", "mask_dtype", "dropout", "one_dim",
                                  "head_dim"])
def test_sdpa_errors_are_torch_texts(case: str) -> None:
    rng = np.random.default_rng(2)
    arrays = [rng.standard_normal(s).astype(np.float32) for s in ((2, 3, 4, 8), (2, 3, 6, 8))]
    kwargs: dict[str, Any] = {}
    q_shape_k = None
    if case == "mask_shape":
        kwargs["attn_mask"] = np.ones((4, 5), bool)
    elif case == "mask_dtype":
        kwargs["attn_mask"] = np.ones((4, 6), np.int64)
    elif case == "dropout":
        kwargs["dropout_p"] = 1.5
    elif case == "one_dim":
        arrays = [a[0, 0, 0] for a in arrays]
    else:
        q_shape_k = rng.standard_normal((2, 3, 6, 7)).astype(np.float32)

    def call(lib: Any, tensor: Any) -> Any:
        q, k = (tensor(a) for a in arrays)
        kk = k if q_shape_k is None else tensor(q_shape_k)
        kw = {n: tensor(v) if isinstance(v, np.ndarray) else v for n, v in kwargs.items()}
        return lib.nn.functional.scaled_dot_product_attention(q, kk, k, **kw)

    theirs = errors(lambda: call(torch, torch.tensor))
    ours = errors(lambda: call(rt, rt.tensor))
    # dtype names differ (long int / int64): compare up to the names
    if case == "mask_dtype":
        assert ours.startswith(theirs.split("attn_mask.dtype:")[0]), (ours, theirs)
    else:
        assert ours == theirs


def test_sdpa_refuses_a_mask_with_is_causal() -> None:
    # PyTorch's math kernel (here: 3-D inputs) raises it; its flash kernel applies both masks
    # (test_parity_nn_attention)
    q = rt.zeros(1, 4, 8)
    with pytest.raises(RuntimeError, match="^_scaled_dot_product_attention: Explicit attn_mask "
                       "should not be set when is_causal=True$"):
        F.scaled_dot_product_attention(q, q, q, attn_mask=rt.ones(4, 4, dtype=rt.bool),
                                       is_causal=True)


def copy_mha(theirs: Any, batch_first: bool) -> rt.nn.MultiheadAttention:
    ours = rt.nn.MultiheadAttention(theirs.embed_dim, theirs.num_heads, batch_first=batch_first,
                                    bias=theirs.in_proj_bias is not None)
    ours.load_state_dict({k: rt.tensor(np_of(v)) for k, v in theirs.state_dict().items()})
    return ours


@pytest.mark.parametrize("batch_first", [False, True])
@pytest.mark.parametrize("average", [True, False])
@pytest.mark.parametrize("masks", ["none", "bool", "float", "bool3d_kpm"])
def test_mha_self_attention_matches_torch(batch_first: bool, average: bool, masks: str) -> None:
    rng = np.random.default_rng(3)
    torch.manual_seed(0)
    theirs = torch.nn.MultiheadAttention(12, 3, batch_first=batch_first)
    ours = copy_mha(theirs, batch_first)
    n, length = 2, 5
    x = rng.standard_normal((n, length, 12) if batch_first else (length, n, 12))
    xr, xt = both(x.astype(np.float32))
    kw_r: dict[str, Any] = {"average_attn_weights": average}
    kw_t: dict[str, Any] = {"average_attn_weights": average}
    causal = np.triu(np.ones((length, length), bool), 1)  # True: not attended
    if masks == "bool":
        kw_r["attn_mask"], kw_t["attn_mask"] = rt.tensor(causal), torch.tensor(causal)
    elif masks == "float":
        m = rng.standard_normal((length, length)).astype(np.float32)
        kw_r["attn_mask"], kw_t["attn_mask"] = rt.tensor(m), torch.tensor(m)
    elif masks == "bool3d_kpm":
        m3 = np.broadcast_to(causal, (n * 3, length, length)).copy()
        kpm = np.zeros((n, length), bool)
        kpm[0, -2:] = True
        kw_r.update(attn_mask=rt.tensor(m3), key_padding_mask=rt.tensor(kpm))
        kw_t.update(attn_mask=torch.tensor(m3), key_padding_mask=torch.tensor(kpm))
    oa, wa = ours(xr, xr, xr, **kw_r)
    ob, wb = theirs(xt, xt, xt, **kw_t)
    assert tuple(wa.shape) == tuple(wb.shape)
    (oa.sum() + (wa * wa).sum()).backward()
    (ob.sum() + (wb * wb).sum()).backward()
    np.testing.assert_allclose(np_of(oa), np_of(ob), **TOL)
    np.testing.assert_allclose(np_of(wa), np_of(wb), **TOL)
    np.testing.assert_allclose(np_of(xr.grad), np_of(xt.grad), **TOL)
    for (name, pr), pt in zip(ours.named_parameters(), theirs.parameters(), strict=True):
        np.testing.assert_allclose(np_of(pr.grad), np_of(pt.grad), **TOL, err_msg=name)


def test_mha_cross_attention_unbatched_and_need_weights() -> None:
    rng = np.random.default_rng(4)
    torch.manual_seed(1)
    theirs = torch.nn.MultiheadAttention(8, 2, bias=False)
    ours = copy_mha(theirs, False)
    q, kv = rng.standard_normal((3, 8)), rng.standard_normal((5, 8))
    (qr, qt), (kr, kt) = both(q.astype(np.float32)), both(kv.astype(np.float32))
    oa, wa = ours(qr, kr, kr)
    ob, wb = theirs(qt, kt, kt)
    assert wa.shape == (3, 5)
    np.testing.assert_allclose(np_of(oa), np_of(ob), **TOL)
    np.testing.assert_allclose(np_of(wa), np_of(wb), **TOL)
    out, none = ours(qr, kr, kr, need_weights=False)
    assert none is None
    np.testing.assert_allclose(np_of(out), np_of(ob), **TOL)
    assert repr(ours) == repr(theirs)


def test_mha_init_matches_torch_statistics() -> None:
    rt.manual_seed(0)
    mha = rt.nn.MultiheadAttention(64, 4)
    assert [n for n, _ in mha.named_parameters()] == [
        n for n, _ in torch.nn.MultiheadAttention(64, 4).named_parameters()]
    w = mha.in_proj_weight.detach().numpy()
    bound = np.sqrt(6 / (64 + 192))  # xavier_uniform over (3E, E)
    assert np.abs(w).max() <= bound and np.abs(w).max() > 0.9 * bound
    assert not mha.in_proj_bias.detach().numpy().any()
    assert not mha.out_proj.bias.detach().numpy().any()


@pytest.mark.parametrize("case", ["heads", "mask2d", "mask3d", "mask4d", "kpm", "embed",
                                  "kv", "causal"])
def test_mha_errors_are_torch_texts(case: str) -> None:
    x = np.zeros((4, 2, 12), np.float32)

    def call(lib: Any) -> Any:
        t = lib.tensor
        if case == "heads":
            return lib.nn.MultiheadAttention(10, 3)
        m = lib.nn.MultiheadAttention(12, 3)
        xs = t(x)
        if case == "embed":
            return m(t(np.zeros((4, 2, 10), np.float32)), xs, xs)
        if case == "kv":
            return m(xs, t(np.zeros((5, 2, 12), np.float32)), xs)
        if case == "causal":
            return m(xs, xs, xs, is_causal=True)
        if case == "kpm":
            return m(xs, xs, xs, key_padding_mask=t(np.zeros((4, 2), bool)))
        shape = {"mask2d": (3, 4), "mask3d": (5, 4, 4), "mask4d": (1, 1, 4, 4)}[case]
        return m(xs, xs, xs, attn_mask=t(np.zeros(shape, bool)))

    assert errors(lambda: call(rt)) == errors(lambda: call(torch))


def test_compiled_mha_step_equals_eager_without_fallback() -> None:
    rng = np.random.default_rng(5)
    x = rt.tensor(rng.standard_normal((2, 6, 16)).astype(np.float32))
    causal = rt.tensor(np.triu(np.ones((6, 6), bool), 1))
    models = []
    for _ in range(2):
        rt.manual_seed(2)
        models.append(rt.nn.MultiheadAttention(16, 4, batch_first=True))
    opts = [rt.optim.SGD(m.parameters(), lr=0.1) for m in models]

    def make_step(m: Any, opt: Any) -> Any:
        def step(x: rt.Tensor) -> rt.Tensor:
            opt.zero_grad()
            out, w = m(x, x, x, attn_mask=causal, is_causal=True)
            loss = (out * out).mean() + w.sum()
            loss.backward()
            opt.step()
            return loss
        return step

    eager = make_step(models[0], opts[0])
    compiled = planner.compile(make_step(models[1], opts[1]))
    for _ in range(3):
        want = float(eager(x))
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            got = float(compiled(x))
        assert got == pytest.approx(want, rel=1e-5)
    for (name, a), b in zip(models[0].named_parameters(), models[1].parameters(), strict=True):
        np.testing.assert_allclose(np_of(b), np_of(a), rtol=1e-5, atol=1e-6, err_msg=name)


def test_compiled_causal_sdpa_equals_eager() -> None:
    rng = np.random.default_rng(6)
    q, k, v = (rt.tensor(rng.standard_normal((2, 2, 8, 4)).astype(np.float32),
                         requires_grad=True) for _ in range(3))

    def step(q: rt.Tensor, k: rt.Tensor, v: rt.Tensor) -> tuple[rt.Tensor, ...]:
        out = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        return (out,) + tuple(rt.autograd.grad((out * out).sum(), [q, k, v]))

    want = step(q, k, v)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        got = planner.compile(step)(q, k, v)
    for a, b in zip(got, want, strict=True):
        np.testing.assert_allclose(np_of(a), np_of(b), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize(("q_shape", "kv_shape"), [((2, 4, 5, 8), (2, 2, 6, 8)),
                                                    ((6, 5, 8), (3, 6, 8)),
                                                    ((1, 3, 4, 8), (1, 1, 4, 8))])
def test_sdpa_grouped_query_attention_matches_torch(q_shape: tuple[int, ...],
                                                    kv_shape: tuple[int, ...]) -> None:
    rng = np.random.default_rng(7)
    arrays = [rng.standard_normal(s).astype(np.float32) for s in (q_shape, kv_shape, kv_shape)]
    pairs = [both(a) for a in arrays]
    ours_r, theirs = [r for r, _ in pairs], [t for _, t in pairs]
    causal = q_shape[-2] == kv_shape[-2]
    a = F.scaled_dot_product_attention(*ours_r, is_causal=causal, enable_gqa=True)
    b = TF.scaled_dot_product_attention(*theirs, is_causal=causal, enable_gqa=True)
    up = rng.standard_normal(tuple(b.shape)).astype(np.float32)
    (a * rt.tensor(up)).sum().backward()
    (b * torch.tensor(up)).sum().backward()
    np.testing.assert_allclose(np_of(a), np_of(b), **TOL)
    for r, t in zip(ours_r, theirs, strict=True):
        np.testing.assert_allclose(np_of(r.grad), np_of(t.grad), **TOL)


def test_sdpa_grouped_heads_must_divide() -> None:
    arrays = [np.zeros(s, np.float32) for s in ((1, 4, 2, 8), (1, 3, 2, 8))]
    theirs = errors(lambda: TF.scaled_dot_product_attention(
        *(torch.tensor(a) for a in (arrays[0], arrays[1], arrays[1])), enable_gqa=True))
    ours = errors(lambda: F.scaled_dot_product_attention(
        *(rt.tensor(a) for a in (arrays[0], arrays[1], arrays[1])), enable_gqa=True))
    assert ours == theirs
    with pytest.raises(RuntimeError):  # without enable_gqa the heads must broadcast
        F.scaled_dot_product_attention(*(rt.tensor(a) for a in (arrays[0], arrays[1],
                                                                   arrays[1])))


@pytest.mark.parametrize("batch_first", [False, True])
def test_mha_keys_and_values_of_their_own_widths_match_torch(batch_first: bool) -> None:
    rng = np.random.default_rng(8)
    torch.manual_seed(3)
    theirs = torch.nn.MultiheadAttention(8, 2, kdim=5, vdim=3, batch_first=batch_first)
    ours = rt.nn.MultiheadAttention(8, 2, kdim=5, vdim=3, batch_first=batch_first)
    assert [n for n, _ in ours.named_parameters()] == [n for n, _ in theirs.named_parameters()]
    assert ours.in_proj_weight is None and not ours._qkv_same_embed_dim
    ours.load_state_dict({k: rt.tensor(np_of(v)) for k, v in theirs.state_dict().items()})
    lead = (2, 4) if batch_first else (4, 2)
    src = (2, 6) if batch_first else (6, 2)
    q, k, v = (rng.standard_normal(s).astype(np.float32)
               for s in ((*lead, 8), (*src, 5), (*src, 3)))
    (qr, qt), (kr, kt), (vr, vt) = both(q), both(k), both(v)
    kpm = np.zeros((2, 6), bool)
    kpm[1, -2:] = True
    oa, wa = ours(qr, kr, vr, key_padding_mask=rt.tensor(kpm))
    ob, wb = theirs(qt, kt, vt, key_padding_mask=torch.tensor(kpm))
    (oa.sum() + (wa * wa).sum()).backward()
    (ob.sum() + (wb * wb).sum()).backward()
    np.testing.assert_allclose(np_of(oa), np_of(ob), **TOL)
    np.testing.assert_allclose(np_of(wa), np_of(wb), **TOL)
    for r, t in ((qr, qt), (kr, kt), (vr, vt)):
        np.testing.assert_allclose(np_of(r.grad), np_of(t.grad), **TOL)
    for (name, pr), pt in zip(ours.named_parameters(), theirs.parameters(), strict=True):
        np.testing.assert_allclose(np_of(pr.grad), np_of(pt.grad), **TOL, err_msg=name)


def test_mha_own_widths_init_and_checks() -> None:
    rt.manual_seed(0)
    mha = rt.nn.MultiheadAttention(16, 4, kdim=6, vdim=6)
    for w, fan_in in ((mha.q_proj_weight, 16), (mha.k_proj_weight, 6), (mha.v_proj_weight, 6)):
        bound = np.sqrt(6 / (16 + fan_in))  # xavier_uniform over (E, kdim)
        assert 0.8 * bound < np.abs(w.detach().numpy()).max() <= bound
    q = rt.zeros(3, 1, 16)
    with pytest.raises(AssertionError, match="sequence and batch dims"):
        mha(q, rt.zeros(5, 1, 6), rt.zeros(4, 1, 6))
    with pytest.raises(AssertionError, match=r"expecting key weights shape of \(16, 16\), "
                       r"but got torch.Size\(\[16, 6\]\)"):  # torch's _in_projection
        mha(q, rt.zeros(5, 1, 16), rt.zeros(5, 1, 6))
