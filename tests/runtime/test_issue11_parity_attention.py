"""F.scaled_dot_product_attention and nn.MultiheadAttention against PyTorch 2.13 over seeded
random shapes and arguments: batch dims (none, empty, broadcast), heads with enable_gqa,
empty query and key lengths, bool and float masks of every broadcastable (and some wrong)
shape, is_causal, scale, float32 and float64; MultiheadAttention with batch_first,
kdim/vdim, bias, add_bias_kv, add_zero_attn, key_padding_mask, 2-D and 3-D attn_mask,
need_weights, average_attn_weights, train and eval, unbatched inputs and wrong shapes.
Values, gradients of every input and parameter, error types and texts.

Left out: masks that mask every key of a query in MultiheadAttention with need_weights (NaN
in both; which gradient entries turn NaN depends on the order of the sums)."""

from __future__ import annotations

import random
import warnings
from typing import Any

import numpy as np
import pytest

import runtime as rt

torch = pytest.importorskip("torch")


def _error(e: Exception) -> str:
    return f"{type(e).__name__}: {str(e).replace('torch', 'runtime')}"


def _sdpa_case(r: random.Random, i: int) -> tuple[Any, ...]:
    batch = tuple(r.randint(0 if r.random() < 0.1 else 1, 3) for _ in range(r.randint(0, 2)))
    heads, gqa = r.choice([1, 2, 4]), r.random() < 0.3
    kv_heads = r.choice([1, 2]) if gqa else heads
    length, source, e, ev = r.randint(1, 5), r.randint(1, 5), r.randint(1, 4), r.randint(1, 4)
    if r.random() < 0.1:
        source = 0
    if r.random() < 0.05:
        length = 0
    shapes = [batch + (heads, length, e),
              batch + (kv_heads, source, e if r.random() < 0.95 else e + 1),
              batch + (kv_heads, source, ev)]
    if r.random() < 0.2:
        shapes = [s[-3:] for s in shapes]
    kw: dict[str, Any] = {}
    mask = None
    kind = r.choice([None, None, "bool", "float", "causal"])
    rng = np.random.default_rng(i)
    if kind == "causal":
        kw["is_causal"] = True
    elif kind:
        full = shapes[0][:-1] + (source,)
        shape = tuple(d if r.random() < 0.6 else 1 for d in full)[r.randint(0, len(full) - 1):]
        if r.random() < 0.1:
            shape = (length + 1, source)
        mask = rng.random(shape) < 0.7 if kind == "bool" else rng.standard_normal(shape)
    if r.random() < 0.3:
        kw["scale"] = r.choice([0.5, 2.0, None])
    if gqa or r.random() < 0.1:
        kw["enable_gqa"] = True
    if r.random() < 0.05:
        kw["is_causal"] = True
    dtype = r.choice([np.float64, np.float32])
    arrays = [rng.standard_normal(s).astype(dtype) for s in shapes]
    if mask is not None and mask.dtype.kind == "f":
        mask = mask.astype(dtype)
    return arrays, mask, kw


def _sdpa(lib: Any, arrays: list[np.ndarray], mask: Any, kw: dict[str, Any]
          ) -> tuple[str, Any]:
    ts = [lib.tensor(a, requires_grad=True) for a in arrays]
    m = None if mask is None else lib.tensor(mask, requires_grad=mask.dtype.kind == "f")
    try:
        y = lib.nn.functional.scaled_dot_product_attention(*ts, attn_mask=m, **kw)
    except Exception as e:  # noqa: BLE001 - the texts are compared
        return _error(e), None
    (y * lib.tensor(np.random.default_rng(1).standard_normal(tuple(y.shape)))).sum().backward()
    grads = [t.grad for t in ts] + ([m.grad] if m is not None and m.requires_grad else [])
    return "", [y.detach().numpy()] + [None if g is None else g.numpy() for g in grads]


@pytest.mark.parametrize("seed", range(4))
def test_sdpa_matches_torch(seed: int) -> None:
    r = random.Random(f"sdpa{seed}")
    for i in range(100):
        arrays, mask, kw = _sdpa_case(r, i)
        what = f"{[a.shape for a in arrays]} mask {None if mask is None else mask.shape} {kw}"
        want, got = _sdpa(torch, arrays, mask, kw), _sdpa(rt, arrays, mask, kw)
        assert got[0] == want[0], what
        if want[1] is None:
            continue
        tol = 1e-9 if arrays[0].dtype == np.float64 else 2e-4
        for a, b in zip(want[1], got[1], strict=True):
            assert (a is None) == (b is None), what
            if a is not None:
                assert a.shape == b.shape and a.dtype == b.dtype, what
                np.testing.assert_allclose(b, a, rtol=tol, atol=tol, err_msg=what)


def test_sdpa_with_no_query_or_value_element_is_zeros_tied_to_the_inputs() -> None:
    # torch returns before any shape check but the mask's dtype: q's shape, v's last size
    for shapes in (((2, 3, 1), (2, 0, 2), (3, 0, 3)), ((2, 0, 1), (2, 4, 2), (2, 4, 3))):
        ts = [rt.randn(*s, requires_grad=True) for s in shapes]
        y = rt.nn.functional.scaled_dot_product_attention(*ts, attn_mask=rt.randn(5, 7))
        assert tuple(y.shape) == (*shapes[0][:-1], shapes[2][-1])
        assert not y.detach().numpy().any()
        y.sum().backward()
        assert all(t.grad is not None and not t.grad.numpy().any() for t in ts)
    with pytest.raises(RuntimeError, match="Expected attn_mask dtype to be bool or float"):
        rt.nn.functional.scaled_dot_product_attention(
            rt.randn(2, 0, 1), rt.randn(2, 4, 1), rt.randn(2, 4, 3),
            attn_mask=rt.zeros(5, 7, dtype=rt.int64))


def _mha_case(r: random.Random, i: int) -> tuple[Any, ...]:
    e = r.choice([2, 4, 6])
    heads = r.choice([h for h in (1, 2, 3) if e % h == 0])
    kw: dict[str, Any] = {}
    for name, p in (("bias", 0.3), ("add_bias_kv", 0.3), ("add_zero_attn", 0.3)):
        if r.random() < p:
            kw[name] = name != "bias"
    if r.random() < 0.3:
        kw.update(kdim=r.choice([3, e]), vdim=r.choice([5, e]))
    batch_first = r.random() < 0.5
    if batch_first:
        kw["batch_first"] = True
    ctor = f"MultiheadAttention({e}, {heads}" + "".join(f", {a}={b!r}" for a, b in kw.items()) \
        + ")"
    n, length, source = r.choice([None, 1, 2, 3]), r.randint(1, 4), r.randint(1, 4)

    def shape(count: int, d: int) -> tuple[int, ...]:
        if n is None:
            return (count, d)
        return (n, count, d) if batch_first else (count, n, d)

    kd, vd = kw.get("kdim", e), kw.get("vdim", e)
    self_attention = r.random() < 0.3 and kd == e and vd == e
    rng = np.random.default_rng(i)
    q = rng.standard_normal(shape(length, e))
    k = q if self_attention else rng.standard_normal(shape(source, kd))
    v = q if self_attention else rng.standard_normal(shape(source, vd))
    source = length if self_attention else source
    call: dict[str, Any] = {}
    if r.random() < 0.4:
        kpm = rng.random((n, source) if n is not None else (source,)) < 0.7
        if r.random() < 0.3:
            kpm = rng.standard_normal(kpm.shape)
        else:
            kpm[..., 0] = False  # some key left to each query (see the module's text)
        call["key_padding_mask"] = kpm
    if r.random() < 0.4:
        mshape = r.choice([(length, source), ((n or 1) * heads, length, source)])
        am = rng.random(mshape) < 0.7 if r.random() < 0.5 else rng.standard_normal(mshape)
        if am.dtype == bool:
            am[..., 0] = False
        call["attn_mask"] = am
    for name in ("need_weights", "average_attn_weights"):
        if r.random() < 0.5:
            call[name] = r.random() < 0.5
    if r.random() < 0.25:  # a wrong shape
        bad = r.choice(["attn_mask", "attn_mask_3d", "key_padding_mask", "query", "key"])
        if bad == "attn_mask":
            call["attn_mask"] = rng.random((length + 1, source)) < 0.5
        elif bad == "attn_mask_3d":
            call["attn_mask"] = rng.standard_normal(((n or 1) * heads + 1, length, source))
        elif bad == "key_padding_mask":
            call["key_padding_mask"] = rng.random((n or 1, source + 1)) < 0.5
        elif bad == "query":
            q = rng.standard_normal(shape(length, e + 1))
        elif not self_attention:
            k = rng.standard_normal(shape(source + 1, kd))
    return ctor, (q, k, v), self_attention, call, r.random() < 0.5


def _mha(lib: Any, ctor: str, arrays: tuple[np.ndarray, ...], self_attention: bool,
         call: dict[str, Any], train: bool, state: Any) -> tuple[Any, str, Any]:
    lib.manual_seed(0)
    m = eval("lib.nn." + ctor).double()  # noqa: S307 - built above
    if state is not None:
        m.load_state_dict({n: rt.tensor(t.detach().numpy().copy()) for n, t in state.items()})
    m.train(train)
    ts = [lib.tensor(arrays[0], requires_grad=True)] * 3 if self_attention else \
        [lib.tensor(a, requires_grad=True) for a in arrays]
    kw = {a: lib.tensor(b) if isinstance(b, np.ndarray) else b for a, b in call.items()}
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            out, w = m(*ts, **kw)
    except Exception as e:  # noqa: BLE001 - the texts are compared
        return m, _error(e), None
    rng = np.random.default_rng(3)
    loss = (out * lib.tensor(rng.standard_normal(tuple(out.shape)))).sum()
    if w is not None:
        loss = loss + (w * lib.tensor(rng.standard_normal(tuple(w.shape)))).sum()
    loss.backward()
    values = [out.detach().numpy(), None if w is None else w.detach().numpy()]
    values += [t.grad.numpy() for t in ts]
    values += [None if p.grad is None else p.grad.numpy()
               for _, p in sorted(m.named_parameters())]
    return m, "", values


@pytest.mark.parametrize("seed", range(4))
def test_multihead_attention_matches_torch(seed: int) -> None:
    r = random.Random(f"mha{seed}")
    for i in range(50):
        ctor, arrays, self_attention, call, train = _mha_case(r, i)
        what = f"{ctor} {[a.shape for a in arrays]} {list(call)} train={train}"
        theirs, torch_err, want = _mha(torch, ctor, arrays, self_attention, call, train, None)
        _, our_err, got = _mha(rt, ctor, arrays, self_attention, call, train,
                               theirs.state_dict())
        assert our_err == torch_err, what
        if want is None:
            continue
        for a, b in zip(want, got, strict=True):
            assert (a is None) == (b is None), what
            if a is not None:
                assert a.shape == b.shape, what
                np.testing.assert_allclose(b, a, rtol=1e-7, atol=1e-9, err_msg=what)
