"""Differential sweep h4 against PyTorch: pools over NaN, sdpa's mask with is_causal, sort and
topk ties, binary ops with a Python number, reductions over no dims, serialized views,
leaky_relu's infinite slopes, Tensor.new_* keywords and BatchNorm's gradients in eval mode."""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
import pytest

import planner
import runtime as rt

torch = pytest.importorskip("torch")
TF = torch.nn.functional
F = rt.nn.functional
NAN = float("nan")


def _rt(t: Any, requires_grad: bool = False) -> rt.Tensor:
    return rt.tensor(t.detach().numpy(), requires_grad=requires_grad)


def _same(ours: Any, theirs: Any, tol: float = 1e-12) -> None:
    a = ours.detach().numpy() if isinstance(ours, rt.Tensor) else np.asarray(ours)
    b = theirs.detach().numpy()
    assert a.shape == b.shape, (a.shape, b.shape)
    assert str(a.dtype) == str(b.dtype), (a.dtype, b.dtype)
    np.testing.assert_allclose(a, b, rtol=tol, atol=tol, equal_nan=True)


def _nan_input(shape: tuple[int, ...], seed: int) -> Any:
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(shape, dtype=torch.float64, generator=g)
    x[torch.rand(shape, generator=g) < 0.2] = NAN
    return x


def _check_pool(ours: Any, theirs: Any, x: Any) -> None:
    """values, indices and the gradient (weighted per output) of a pool with indices."""
    t = x.clone().requires_grad_()
    r = _rt(x, True)
    tv, ti = theirs(t)
    rv, ri = ours(r)
    weight = torch.arange(1.0, tv.numel() + 1, dtype=torch.float64).reshape(tv.shape)
    (tv * weight).sum().backward()
    (rv * _rt(weight)).sum().backward()
    _same(rv, tv)
    _same(ri, ti)
    _same(r.grad, t.grad)


# --- 1. max pools over windows holding NaN: the last NaN of the window (values, index, grad)


@pytest.mark.parametrize("k,s,p,d,ceil", [(2, 2, 0, 1, False), (3, 1, 1, 1, False),
                                          (2, 1, 0, 2, False), (3, 2, 1, 1, True)])
def test_max_pool_nan_picks_the_last_nan(k: int, s: int, p: int, d: int, ceil: bool) -> None:
    x1 = torch.tensor([[1.0, NAN, 3.0, NAN, 2.0, 0.0], [NAN, NAN, NAN, NAN, 1.0, 1.0]],
                      dtype=torch.float64)
    _check_pool(lambda r: F.max_pool1d(r, k, s, p, d, ceil, True),
                lambda t: TF.max_pool1d(t, k, s, p, d, ceil, True), x1)
    x2 = _nan_input((2, 3, 6, 7), 1)
    _check_pool(lambda r: F.max_pool2d(r, k, s, p, d, ceil, True),
                lambda t: TF.max_pool2d(t, k, s, p, d, ceil, True), x2)
    x3 = _nan_input((2, 2, 5, 6, 7), 2)
    _check_pool(lambda r: F.max_pool3d(r, k, s, p, d, ceil, True),
                lambda t: TF.max_pool3d(t, k, s, p, d, ceil, True), x3)
    module = rt.nn.MaxPool2d(k, s, p, d, return_indices=True, ceil_mode=ceil)
    _check_pool(module, torch.nn.MaxPool2d(k, s, p, d, return_indices=True, ceil_mode=ceil), x2)


@pytest.mark.parametrize("size", [(3, 4), (2, 3), (5, 2), (7, 9)])
def test_adaptive_max_pool_nan_picks_the_last_nan(size: tuple[int, int]) -> None:
    x = _nan_input((2, 3, 7, 9), 3)
    _check_pool(lambda r: F.adaptive_max_pool2d(r, size, True),
                lambda t: TF.adaptive_max_pool2d(t, size, True), x)
    _check_pool(lambda r: F.adaptive_max_pool1d(r, size[1], True),
                lambda t: TF.adaptive_max_pool1d(t, size[1], True), x[0])
    x3 = _nan_input((2, 2, 5, 6, 7), 4)
    _check_pool(lambda r: F.adaptive_max_pool3d(r, (2, *size), True),
                lambda t: TF.adaptive_max_pool3d(t, (2, *size), True), x3)


@pytest.mark.parametrize("backend", ["interpreter", "auto"])
def test_max_pools_over_nan_compiled_equal_eager(backend: str) -> None:
    x0 = _nan_input((2, 3, 6, 7), 5).float().numpy()

    def step(x: rt.Tensor) -> Any:
        v, i = F.max_pool2d(x, 3, 2, 1, return_indices=True)
        a, j = F.adaptive_max_pool2d(x, (4, 5), return_indices=True)
        loss = rt.nan_to_num(v, 0.0).sum() * 2 + rt.nan_to_num(a, 0.0).sum()
        loss.backward()
        return loss, i, j, x.grad

    t = torch.tensor(x0, requires_grad=True)
    tv, ti = TF.max_pool2d(t, 3, 2, 1, return_indices=True)
    ta, tj = TF.adaptive_max_pool2d(t, (4, 5), return_indices=True)
    (torch.nan_to_num(tv, 0.0).sum() * 2 + torch.nan_to_num(ta, 0.0).sum()).backward()
    compiled = planner.compile(step, backend=backend)
    for _ in range(2):
        x = rt.tensor(x0, requires_grad=True)
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # a fallback to eager warns: a failure here
            _, i, j, grad = compiled(x)
        _same(i, ti)
        _same(j, tj)
        _same(grad, t.grad, 1e-6)
    assert compiled.captures == 1


# --- 2. sdpa: attn_mask with is_causal (PyTorch's CPU flash kernel applies both)


def test_sdpa_mask_and_causal_takes_bfloat16() -> None:
    g = torch.Generator().manual_seed(0)
    q, k = (torch.randn(2, 3, 4, 8, generator=g).bfloat16(),
            torch.randn(2, 3, 5, 8, generator=g).bfloat16())
    m = torch.randn(4, 5, generator=g).bfloat16()
    want = TF.scaled_dot_product_attention(q, k, k, attn_mask=m, is_causal=True)
    got = F.scaled_dot_product_attention(_rt(q.float()).bfloat16(), _rt(k.float()).bfloat16(),
                                         _rt(k.float()).bfloat16(),
                                         attn_mask=_rt(m.float()).bfloat16(), is_causal=True)
    assert got.dtype is rt.bfloat16
    np.testing.assert_allclose(got.float().numpy(), want.float().numpy(), atol=3e-2)


@pytest.mark.parametrize("mask", ["float", "bool", "expanded"])
@pytest.mark.parametrize("backend", ["interpreter", "auto"])
def test_sdpa_mask_and_causal_of_head_views_compiled(mask: str, backend: str) -> None:
    """q, k and v as a GPT block makes them (views of one projection, heads transposed): their
    last stride is 1, so the mask and the causal mask both apply, compiled as eager (the step
    ran eagerly: the stride check read strides while capturing)."""
    r = np.random.default_rng(0)
    x0 = r.standard_normal((2, 4, 24)).astype(np.float32)
    w0 = (r.standard_normal((24, 72)) * 0.2).astype(np.float32)
    m0 = r.standard_normal((2, 1, 4, 4)).astype(np.float32)

    def step(x: rt.Tensor, w: rt.Tensor, m: rt.Tensor) -> Any:
        b, n, _ = x.shape
        q, k, v = (t.view(b, n, 3, 8).transpose(1, 2) for t in (x @ w).split(24, dim=-1))
        am = m if mask == "float" else (m > 0) if mask == "bool" else (m > 0).expand(2, 3, 4, 4)
        o = F.scaled_dot_product_attention(q, k, v, attn_mask=am, is_causal=True)
        loss = (o.transpose(1, 2).reshape(b, n, 24) ** 2).sum()
        loss.backward()
        return loss, x.grad, w.grad

    eager = step(*(rt.tensor(a, requires_grad=rg) for a, rg in ((x0, True), (w0, True),
                                                                 (m0, False))))
    compiled = planner.compile(step, backend=backend)
    for _ in range(2):
        args = [rt.tensor(a, requires_grad=rg) for a, rg in ((x0, True), (w0, True),
                                                              (m0, False))]
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            got = compiled(*args)
        for a, e in zip(got, eager, strict=True):
            np.testing.assert_allclose(a.detach().numpy(), e.detach().numpy(), rtol=2e-5,
                                       atol=2e-5)
    assert compiled.captures == 1


def test_sdpa_mask_and_causal_refused_for_a_transposed_query_compiled() -> None:
    def step(q: rt.Tensor, k: rt.Tensor, m: rt.Tensor) -> rt.Tensor:
        return F.scaled_dot_product_attention(q.transpose(-1, -2), k, k, attn_mask=m,
                                              is_causal=True).sum()

    compiled = planner.compile(step)
    q, k, m = rt.randn(1, 2, 8, 4), rt.randn(1, 2, 5, 8), rt.randn(4, 5)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # raised by the capture, with no fallback to eager
        with pytest.raises(RuntimeError, match="Explicit attn_mask should not be set when "
                                               "is_causal=True"):
            compiled(q, k, m)


# --- 4. sort and argsort: stable is keyword-only, with dim and descending as keywords


def _error_of(fn: Any) -> tuple[str, str]:
    try:
        fn()
    except Exception as e:  # noqa: BLE001 (the type and text compared)
        return type(e).__name__, str(e)
    return "", ""


@pytest.mark.parametrize("call", [
    lambda m, x: m.argsort(x, -1, True, True),
    lambda m, x: m.argsort(x, -1, stable=True),
    lambda m, x: m.argsort(x, stable=None),
    lambda m, x: m.argsort(x, descending=None),
    lambda m, x: m.argsort(x, True),
    lambda m, x: m.argsort(x, 0, descending=True, stable=True),
    lambda m, x: m.argsort(x, -1, foo=1),
    lambda m, x: m.argsort(x, stable=1),
    lambda m, x: m.sort(x, -1, True, True),
    lambda m, x: m.sort(x, True),
    lambda m, x: m.sort(x, -1, stable=True),
    lambda m, x: m.sort(x, stable=1),
    lambda m, x: x.argsort(-1, True, True),
    lambda m, x: x.argsort(-1, stable=True),
    lambda m, x: x.argsort(stable=None),
    lambda m, x: x.sort(-1, True, True),
    lambda m, x: x.sort(0, stable=True),
    lambda m, x: x.sort(True),
])
def test_sort_argsort_overload_errors(call: Any) -> None:
    want = _error_of(lambda: call(torch, torch.tensor([[3.0, 1.0, 2.0, 1.0]])))
    assert want[0] == "TypeError"
    assert _error_of(lambda: call(rt, rt.tensor([[3.0, 1.0, 2.0, 1.0]]))) == want


@pytest.mark.parametrize("taken,refused", [
    (lambda m, x: m.argsort(x, stable=True, dim=0, descending=True),
     lambda m, x: m.argsort(x, 0, True, True)),
    (lambda m, x: m.sort(x, stable=None, descending=True)[1],
     lambda m, x: m.sort(x, -1, True, None)),
    (lambda m, x: x.argsort(stable=True, descending=True), lambda m, x: x.argsort(-1, True, True)),
    (lambda m, x: x.sort(stable=False, dim=0)[1], lambda m, x: x.sort(0, stable=False)),
])
def test_sort_argsort_stable_as_keyword_only(taken: Any, refused: Any) -> None:
    x = [[3.0, 1.0, 2.0, 1.0], [0.0, 0.0, 5.0, 0.0]]
    np.testing.assert_array_equal(taken(rt, rt.tensor(x)).numpy(),
                                  taken(torch, torch.tensor(x)).numpy())
    want = _error_of(lambda: refused(torch, torch.tensor(x)))
    assert want[0] == "TypeError"
    assert _error_of(lambda: refused(rt, rt.tensor(x))) == want


# --- 5. binary ops PyTorch takes tensors only for: a Python number is its TypeError


@pytest.mark.parametrize("name", [
    "maximum", "minimum", "fmax", "fmin", "atan2", "arctan2", "hypot", "nextafter", "ldexp",
    "logaddexp", "logaddexp2", "heaviside", "gcd", "lcm", "logical_and", "logical_or",
    "logical_xor", "dist", "kron", "isclose"])
def test_tensor_only_binary_ops_refuse_numbers(name: str) -> None:
    def calls(m: Any) -> list[Any]:
        t, i = m.tensor([1.5, -2.0, 3.0]), m.tensor([1, 2, 3])
        fn = getattr(m, name)
        out = [lambda: fn(t, 2.0), lambda: fn(2.0, t), lambda: fn(i, 2), lambda: fn(t, True),
               lambda: fn(t, np.float64(2.0)), lambda: fn(t, None)]
        if name != "heaviside":
            out.append(lambda: fn(t, other=2.0))
        if hasattr(t, name):
            out += [lambda: getattr(t, name)(2.0), lambda: getattr(i, name)(2)]
        if hasattr(t, name + "_"):
            out.append(lambda: getattr(t.clone(), name + "_")(2.0))
        return out

    for ours, theirs in zip(calls(rt), calls(torch), strict=True):
        want = _error_of(theirs)
        assert want[0] == "TypeError", want
        assert _error_of(ours) == want


@pytest.mark.parametrize("name", ["copysign", "fmod", "eq", "ne", "lt", "gt", "le", "ge", "rsub"])
def test_number_first_is_an_invalid_combination(name: str) -> None:
    for first in (2.0, 2):
        want = _error_of(lambda: getattr(torch, name)(first, torch.tensor([1.5, -2.0])))
        assert want[0] == "TypeError"
        assert _error_of(lambda: getattr(rt, name)(first, rt.tensor([1.5, -2.0]))) == want


# --- 6. reductions over dim=[] / ()


@pytest.mark.parametrize("dim", [[], ()])
def test_logsumexp_over_no_dims_without_keepdim_raises(dim: Any) -> None:
    for shape in ((2, 3), (3,)):
        x = np.random.default_rng(0).standard_normal(shape).astype(np.float32)
        want = _error_of(lambda: torch.logsumexp(torch.tensor(x), dim))
        assert want[0] == "RuntimeError"
        assert _error_of(lambda: rt.logsumexp(rt.tensor(x), dim)) == want
        assert _error_of(lambda: rt.tensor(x).logsumexp(dim)) == want
        _same(rt.logsumexp(rt.tensor(x), dim, keepdim=True),
              torch.logsumexp(torch.tensor(x), dim, keepdim=True), 1e-6)
    _same(rt.logsumexp(rt.tensor(2.0), dim), torch.logsumexp(torch.tensor(2.0), dim))


# --- 7. rt.save of a lone view: the whole storage, the view's offset and strides


def _layouts(m: Any, obj: Any) -> list[Any]:
    import io

    buf = io.BytesIO()
    m.save(obj, buf)
    buf.seek(0)
    back = m.load(buf)
    items = list(back.values()) if isinstance(back, dict) else [back]
    return [(tuple(t.shape), t.stride(), t.storage_offset(), t.is_contiguous(),
             t.untyped_storage().nbytes(), t.tolist()) for t in items]


@pytest.mark.parametrize("make", [
    lambda m, x: x[1:3], lambda m, x: x[:, 1], lambda m, x: x.t(), lambda m, x: x[:, ::2],
    lambda m, x: x.view(-1)[3:7], lambda m, x: x[1, 2], lambda m, x: {"a": x.t()},
    lambda m, x: m.arange(3.0).expand(2, 3)])
def test_save_of_a_view_keeps_its_storage_and_layout(make: Any) -> None:
    got = _layouts(rt, make(rt, rt.arange(12.0).reshape(3, 4)))
    assert got == _layouts(torch, make(torch, torch.arange(12.0).reshape(3, 4)))


# --- 8. leaky_relu with an infinite or NaN slope; a slope past float32's range


@pytest.mark.parametrize("slope", [float("inf"), float("-inf"), float("nan")])
@pytest.mark.parametrize("dtype", ["float64", "float32", "float16"])
def test_leaky_relu_non_finite_slope_gradient(slope: float, dtype: str) -> None:
    vals = [-2.0, -0.0, 0.0, 1.5, float("inf"), float("-inf"), float("nan")]
    t = torch.tensor(vals, dtype=getattr(torch, dtype), requires_grad=True)
    r = rt.tensor(np.array(vals), dtype=getattr(rt, dtype), requires_grad=True)
    TF.leaky_relu(t, slope).backward(torch.ones(len(vals), dtype=t.dtype))
    out = F.leaky_relu(r, slope)
    out.backward(rt.ones(len(vals), dtype=r.dtype))
    _same(out, TF.leaky_relu(t.detach(), slope))
    _same(r.grad, t.grad)
    _same(rt.nn.LeakyReLU(slope)(r.detach()), torch.nn.LeakyReLU(slope)(t.detach()))


@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "float32"])
def test_leaky_relu_slope_past_float32_range(dtype: str) -> None:
    for slope in (1e39, -1e308):
        want = _error_of(lambda: TF.leaky_relu(torch.ones(2, dtype=getattr(torch, dtype)), slope))
        assert want[0] == "RuntimeError"
        assert _error_of(lambda: F.leaky_relu(rt.ones(2, dtype=getattr(rt, dtype)), slope)) == want
    _same(F.leaky_relu(rt.tensor([-1.0], dtype=rt.float64), 1e39),
          TF.leaky_relu(torch.tensor([-1.0], dtype=torch.float64), 1e39))


# --- 9. Tensor.new_*: layout= and pin_memory= as PyTorch's factories take them


def _described(t: Any) -> tuple[Any, ...]:
    return (str(t.dtype).rsplit(".", 1)[-1], tuple(t.shape), t.requires_grad, t.is_leaf)


@pytest.mark.parametrize("call", [
    lambda m, x: x.new_empty((2,), layout=m.strided),
    lambda m, x: x.new_empty(2, 3, pin_memory=False),
    lambda m, x: x.new_zeros(2, 3, layout=m.strided, pin_memory=False, device="cpu",
                             dtype=m.int32, requires_grad=False),
    lambda m, x: x.new_zeros((2,), layout=None, pin_memory=None),
    lambda m, x: x.new_ones((2,), layout=m.strided, requires_grad=True),
    lambda m, x: x.new_full((2,), 3, layout=m.strided, pin_memory=False),
])
def test_new_factories_take_layout_and_pin_memory(call: Any) -> None:
    got = call(rt, rt.tensor([[1.5, 2.0]], dtype=rt.float64))
    want = call(torch, torch.tensor([[1.5, 2.0]], dtype=torch.float64))
    assert _described(got) == _described(want)
    assert got.layout is rt.strided


@pytest.mark.parametrize("call", [
    lambda m: m.empty(2, pin_memory=True), lambda m: m.zeros(2).new_empty(2, pin_memory=True),
    lambda m: m.zeros(2).new_full((2,), 1.0, pin_memory=True)])
def test_pin_memory_without_an_accelerator_is_pytorchs_error(call: Any) -> None:
    want = _error_of(lambda: call(torch))
    assert want[0] == "RuntimeError"
    assert _error_of(lambda: call(rt)) == want


def test_new_tensor_of_a_tensor_warns() -> None:
    with pytest.warns(UserWarning, match=r"rather than tensor\.new_tensor\(sourceTensor\)"):
        rt.zeros(2).new_tensor(rt.ones(2))


# --- order statistics: mode past 16 elements and with NaN, nanmedian of NaNs only


@pytest.mark.parametrize("shape,dim,dtype", [
    (shape, dim, dtype) for shape, dim in (((5, 30), 1), ((30, 4), 0), ((3, 20, 2), 1),
                                           ((2, 17), -1), ((4, 5), 1))
    for dtype in ("float64", "float32", "int64") if shape[dim] > 16 or dtype != "int64"])
def test_mode_index_as_pytorchs_std_sort(shape: tuple[int, ...], dim: int, dtype: str) -> None:
    g = torch.Generator().manual_seed(3)
    x = torch.randint(0, 4, shape, generator=g).to(getattr(torch, dtype))
    if x.dtype.is_floating_point:
        x[torch.rand(shape, generator=g) < 0.2] = NAN
    for keepdim in (False, True):
        want = torch.mode(x, dim, keepdim)
        got = rt.mode(rt.tensor(x.numpy()), dim, keepdim)
        _same(got.values, want.values)
        _same(got.indices, want.indices)


def test_mode_gradient_goes_to_pytorchs_index() -> None:
    x = torch.randint(0, 3, (3, 25), generator=torch.Generator().manual_seed(0)).double()
    t, r = x.clone().requires_grad_(), _rt(x, True)
    torch.mode(t, 1).values.sum().backward()
    rt.mode(r, 1).values.sum().backward()
    _same(r.grad, t.grad)


@pytest.mark.parametrize("n", [4, 5, 7, 13, 40, 257])
def test_nanmedian_of_nans_only_index(n: int) -> None:
    x = torch.randn(3, n, dtype=torch.float64)
    x[1] = NAN
    for dim in (1, -1):
        want = torch.nanmedian(x, dim)
        got = rt.nanmedian(rt.tensor(x.numpy()), dim)
        _same(got.values, want.values)
        _same(got.indices, want.indices)
    want = torch.nanmedian(x.t(), 0, keepdim=True)
    got = rt.nanmedian(rt.tensor(x.numpy()).t(), 0, keepdim=True)
    _same(got.indices, want.indices)


# --- 3. topk: ties, NaNs and sorted=False in PyTorch's order (libstdc++'s selection)


@pytest.mark.parametrize("shape,dim", [((200, 3), 0), ((3, 70), 1), ((2, 130, 2), 1),
                                       ((4, 9), -1)])
@pytest.mark.parametrize("dtype", ["float64", "float32", "int64"])
def test_topk_ties_and_unsorted_order(shape: tuple[int, ...], dim: int, dtype: str) -> None:
    g = torch.Generator().manual_seed(5)
    x = torch.randint(0, 4, shape, generator=g).to(getattr(torch, dtype))
    if x.dtype.is_floating_point:
        x[torch.rand(shape, generator=g) < 0.15] = NAN
    n = shape[dim]
    for k in sorted({1, 2, n // 2, n}):
        for largest in (True, False):
            for srt in (True, False):
                want = torch.topk(x, k, dim, largest, srt)
                got = rt.topk(rt.tensor(x.numpy()), k, dim, largest, srt)
                _same(got.indices, want.indices)
                _same(got.values, want.values)


def test_topk_distinct_values_unsorted_order_and_gradient() -> None:
    x = torch.randn(3, 50, dtype=torch.float64, generator=torch.Generator().manual_seed(1))
    want = torch.topk(x, 20, 1, sorted=False)
    got = rt.topk(rt.tensor(x.numpy()), 20, 1, sorted=False)
    _same(got.indices, want.indices)
    t, r = x.round().requires_grad_(), _rt(x.round(), True)
    weight = torch.arange(20.0, dtype=torch.float64)
    (torch.topk(t, 20, 1).values * weight).sum().backward()
    (rt.topk(r, 20, 1).values * _rt(weight)).sum().backward()
    _same(r.grad, t.grad)


# --- in-place ops whose float result an integer tensor cannot hold


@pytest.mark.parametrize("call", [
    lambda m: m.tensor([1, 2, 3]).xlogy_(m.tensor([2, 2, 2])),
    lambda m: m.tensor([1, 2, 3]).xlogy_(2),
    lambda m: m.tensor([1, 2, 3]).igamma_(m.tensor([0.5, 1.5, 2.5])),
    lambda m: m.tensor([1, 2, 3]).sigmoid_(),
    lambda m: m.tensor([1, 2, 3]).erfc_(),
    lambda m: m.tensor([1, 2, 3]).logit_(),
])
def test_in_place_float_result_into_integers_raises(call: Any) -> None:
    want = _error_of(lambda: call(torch))
    assert want[0] == "RuntimeError"
    assert _error_of(lambda: call(rt)) == want


@pytest.mark.parametrize("k,size", [(2, (4, 4)), (3, (5, 5)), (2, (7, 6))])
def test_fractional_max_pool_nan_picks_the_last_nan(k: int, size: tuple[int, int]) -> None:
    g = torch.Generator().manual_seed(0)
    x = _nan_input((2, 3, 9, 9), 6)
    s = torch.rand(2, 3, 2, dtype=torch.float64, generator=g)
    _check_pool(lambda r: F.fractional_max_pool2d(r, k, output_size=size, return_indices=True,
                                                  _random_samples=_rt(s)),
                lambda t: TF.fractional_max_pool2d(t, k, output_size=size, return_indices=True,
                                                   _random_samples=s), x)
    x3 = _nan_input((1, 2, 6, 6, 6), 7)
    s3 = torch.rand(1, 2, 3, dtype=torch.float64, generator=g)
    _check_pool(lambda r: F.fractional_max_pool3d(r, 2, output_size=(3, 3, 3),
                                                  return_indices=True, _random_samples=_rt(s3)),
                lambda t: TF.fractional_max_pool3d(t, 2, output_size=(3, 3, 3),
                                                   return_indices=True, _random_samples=s3), x3)


@pytest.mark.parametrize("call", [
    lambda m, x: m.var(x, []), lambda m, x: m.var(x, (), correction=0),
    lambda m, x: m.std(x, [], keepdim=True), lambda m, x: m.std(x, (), correction=2),
    lambda m, x: m.var_mean(x, [])[0] * 2 + m.var_mean(x, [])[1],
    lambda m, x: m.std_mean(x, (), correction=0)[0]])
def test_var_std_over_no_dims_gradient_is_pytorchs(call: Any) -> None:
    """PyTorch's var_backward over dim=[] divides by 1 - correction (its size of no dims):
    an infinite gradient for the default correction, twice (x - mean) for none."""
    x = np.array([[1.5, -2.0, 3.0], [3.0, 1.0, -1.0]])
    t, r = torch.tensor(x, requires_grad=True), rt.tensor(x, requires_grad=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # degrees of freedom <= 0
        want, got = call(torch, t), call(rt, r)
    want.sum().backward()
    got.sum().backward()
    _same(got, want)
    assert type(got.grad_fn).__name__ == type(want.grad_fn).__name__
    _same(r.grad, t.grad)


@pytest.mark.parametrize("call", [
    lambda m: m.add(2, 3), lambda m: m.add(2, 3, alpha=2), lambda m: m.mul(2.5, 2),
    lambda m: m.sub(7, 2.5), lambda m: m.div(7, 2), lambda m: m.div(7, 2, rounding_mode="floor"),
    lambda m: m.true_divide(1, 4), lambda m: m.floor_divide(7, 2)])
def test_arithmetic_of_two_numbers_gives_a_tensor(call: Any) -> None:
    _same(call(rt), call(torch))


@pytest.mark.parametrize("call", [
    lambda m: m.clamp(2, m.tensor([1.5, -2.0])), lambda m: m.clip(2.0, m.tensor([1.5, -2.0])),
    lambda m: m.clamp(2, 3), lambda m: m.lerp(2, m.tensor([1.5, -2.0]), 0.5),
    lambda m: m.xlogy(2, 3), lambda m: m.special.xlogy(2, 3.0), lambda m: m.special.xlog1py(2, 3),
    lambda m: m.topk(m.tensor([1.0, 2.0]), 1.5), lambda m: m.topk(m.tensor([1.0, 2.0]), True)])
def test_number_where_pytorch_takes_a_tensor_first(call: Any) -> None:
    want = _error_of(lambda: call(torch))
    assert want[0] == "TypeError"
    assert _error_of(lambda: call(rt)) == want
    _same(rt.xlogy(2, rt.tensor([3.0])), torch.xlogy(2, torch.tensor([3.0])))


@pytest.mark.parametrize("call", [
    lambda m, x: m.median(x, dim=None), lambda m, x: m.nanmedian(x, dim=None),
    lambda m, x: m.prod(x, dim=None), lambda m, x: x.median(dim=None),
    lambda m, x: m.prod(x, dim=None, keepdim=True)])
def test_an_explicit_none_dim_is_pytorchs_type_error(call: Any) -> None:
    want = _error_of(lambda: call(torch, torch.tensor([[1.0, 2.0], [3.0, 4.0]])))
    assert want[0] == "TypeError"
    assert _error_of(lambda: call(rt, rt.tensor([[1.0, 2.0], [3.0, 4.0]]))) == want
    _same(rt.median(rt.tensor([3.0, 1.0, 2.0])), torch.median(torch.tensor([3.0, 1.0, 2.0])))
    _same(rt.prod(rt.tensor([3.0, 1.0, 2.0]), dtype=rt.float64),
          torch.prod(torch.tensor([3.0, 1.0, 2.0]), dtype=torch.float64))


@pytest.mark.parametrize("dims", [1, 2, 3])
def test_max_unpool_names_the_last_invalid_index(dims: int) -> None:
    """PyTorch's kernel keeps the last invalid index it meets: deterministic on one thread
    (its threads race for it otherwise)."""
    shape = (2, 2) + (3,) * dims
    idx = np.zeros(shape, np.int64)
    idx.flat[1], idx.flat[-2] = 6 ** dims + 5, 6 ** dims + 9  # the output: 6 per dim
    name = f"max_unpool{dims}d"
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        want = _error_of(lambda: getattr(TF, name)(torch.ones(shape), torch.tensor(idx), 2))
    finally:
        torch.set_num_threads(threads)
    assert want[0] == "RuntimeError" and str(6 ** dims + 9) in want[1]
    assert _error_of(lambda: getattr(F, name)(rt.ones(shape), rt.tensor(idx), 2)) == want


@pytest.mark.parametrize("call", [
    lambda m: m.zeros(2).new_zeros(2, -1), lambda m: m.zeros(2).new_ones((-3,)),
    lambda m: m.zeros(2).new_empty(2.0), lambda m: m.zeros(2).new_full(3, 1.0),
    lambda m: m.zeros(2).new_full((2, -1), 1.0),
    lambda m: m.zeros(2, dtype=m.float16).new_full((2,), 1e6),
    lambda m: m.full((2,), 1e39), lambda m: m.zeros(2).fill_(-1e39),
    lambda m: m.zeros(2).masked_fill(m.tensor([True, False]), 1e39)])
def test_new_factories_sizes_and_overflowing_fills(call: Any) -> None:
    want = _error_of(lambda: call(torch))
    assert want[0] in ("TypeError", "RuntimeError")
    assert _error_of(lambda: call(rt)) == want
