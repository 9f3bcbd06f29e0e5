"""The tensor ops of issue 11 against PyTorch: values and gradients (each case is written once
as ``fn(m, *xs)`` for m = runtime or torch), float64 gradchecks, and PyTorch's error texts."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import runtime as rt

try:
    from . import test_ops as T
except ImportError:  # run as a top-level module
    import test_ops as T

torch = pytest.importorskip("torch")

N, P = T.N, T.P
CASES: list[T.Case] = []


def case(id, fn, inputs, **kw):
    CASES.append(T.Case(id, fn, inputs, **kw))


def I(m, values):  # noqa: E743 - an index tensor
    return m.tensor(np.asarray(values, dtype=np.int64))


def distinct(*shape: int) -> np.ndarray:
    """Values without ties (sort/topk/max pick one element each)."""
    return (T._R.permutation(math.prod(shape)).reshape(shape) - 3.0) * 0.37


case("remainder_tensor", lambda m, a, b: m.remainder(a, b), [N(3, 4) * 3, P(3, 4) * 0.7])
case("remainder_neg_scalar", lambda m, a: a % -0.75, [N(3, 4) * 3])
# PyTorch has no gradient of a // b, nor of a number % a tensor: a detached divisor
case("floor_divide_then_mul", lambda m, a: (a.detach() // 0.5) * a, [N(3, 4) * 3])
case("split_int", lambda m, a: m.cat([p * (i + 1) for i, p in enumerate(a.split(2, 1))], 1),
     [N(3, 5)])
case("split_sizes", lambda m, a: sum(p.sum() * (i + 1) for i, p in enumerate(a.split([1, 2], 0))),
     [N(3, 4)])
case("chunk", lambda m, a: m.cat([p * (i + 1) for i, p in enumerate(a.chunk(3, -1))], -1),
     [N(2, 7)])
case("tril", lambda m, a: m.tril(a), [N(4, 5)])
case("triu_diag", lambda m, a: a.triu(1) + a.tril(-2), [N(2, 4, 3)])
case("cumsum_dim0", lambda m, a: m.cumsum(a, 0), [N(4, 3)])
case("cumsum_neg_dim", lambda m, a: a.cumsum(-1) * a, [N(2, 3, 4)])
case("norm_fro", lambda m, a: a.norm(), [N(3, 4)])
case("norm_p1_dim", lambda m, a: a.norm(p=1, dim=1), [T.NZ(3, 4)])
case("norm_p3_keepdim", lambda m, a: a.norm(3, 0, keepdim=True), [T.NZ(3, 4)])
case("norm_inf", lambda m, a: a.norm(float("inf"), dim=1), [distinct(3, 4)])
case("vector_norm", lambda m, a: m.linalg.vector_norm(a, 2, dim=(0, 2)), [N(2, 3, 4)])
case("var_all", lambda m, a: a.var(), [N(3, 4)])
case("var_dim_biased", lambda m, a: a.var(1, unbiased=False), [N(3, 4)])
case("var_correction", lambda m, a: m.var(a, dim=0, correction=2, keepdim=True), [N(5, 3)])
case("std_dim", lambda m, a: a.std(dim=(0, 1)), [N(3, 4, 2)])
case("logsumexp", lambda m, a: m.logsumexp(a, 1), [N(3, 4) * 5])
case("logsumexp_keepdim", lambda m, a: a.logsumexp((0, 2), keepdim=True), [N(2, 3, 4)])
case("gather", lambda m, a: a.gather(1, I(m, [[0, 2, 2], [1, 0, 3], [3, 3, 1]])), [N(3, 4)])
case("gather_dim0_small", lambda m, a: m.gather(a, 0, I(m, [[2, 0], [1, 1]])), [N(3, 4)])
case("scatter_src", lambda m, a, s: a.scatter(1, I(m, [[0, 2], [3, 1]]), s), [N(2, 4), N(2, 2)])
case("scatter_value", lambda m, a: a.scatter(0, I(m, [[1, 0, 1]]), value=2.5) * a, [N(2, 3)])
case("scatter_add_repeats", lambda m, a, s: m.scatter_add(a, 1, I(m, [[0, 0, 2], [1, 1, 1]]), s),
     [N(2, 3), N(2, 3)])
case("index_select", lambda m, a: a.index_select(1, I(m, [3, 0, 3])), [N(2, 4)])
case("index_select_dim0", lambda m, a: m.index_select(a, 0, I(m, [1, 1])), [N(3, 2)])
case("masked_fill", lambda m, a: a.masked_fill(a > 0.2, -1.5), [N(3, 4)])
case("masked_fill_fn", lambda m, a: m.masked_fill(a, m.tensor([True, False, True]), 0.0),
     [N(2, 3)])
case("repeat", lambda m, a: a.repeat(2, 3), [N(2, 3)])
case("repeat_lead", lambda m, a: a.repeat(2, 1, 2), [N(3)])
case("sort_asc", lambda m, a: m.sort(a, 0).values, [distinct(4, 3)])
case("sort_desc_last", lambda m, a: a.sort(descending=True)[0] * a, [distinct(3, 4)])
case("topk", lambda m, a: a.topk(2).values, [distinct(3, 5)])
case("topk_smallest_dim0", lambda m, a: m.topk(a, 3, dim=0, largest=False)[0], [distinct(4, 2)])
case("mm", lambda m, a, b: m.mm(a, b), [N(3, 4), N(4, 2)])
case("bmm", lambda m, a, b: a.bmm(b), [N(2, 3, 4), N(2, 4, 5)])
case("einsum_matmul", lambda m, a, b: m.einsum("ij,jk->ik", a, b), [N(3, 4), N(4, 2)])
case("einsum_batch_outer", lambda m, a, b: m.einsum("bi,bj->bij", a, b), [N(2, 3), N(2, 4)])
case("einsum_implicit", lambda m, a, b: m.einsum("ij,kj", a, b), [N(3, 4), N(2, 4)])
case("einsum_ellipsis_sum", lambda m, a: m.einsum("...ij->...j", a), [N(2, 3, 4)])
case("einsum_attention", lambda m, q, k: m.einsum("bhqd,bhkd->bhqk", q, k),
     [N(2, 2, 3, 4), N(2, 2, 5, 4)])
case("einsum_reorder_private", lambda m, a, b: m.einsum("abc,cd->db", a, b), [N(2, 3, 4), N(4, 5)])
case("einsum_bcast_size1", lambda m, a, b: m.einsum("ij,ij->i", a, b), [N(3, 4), N(1, 4)])
case("einsum_trace", lambda m, a: m.einsum("ii", a), [N(3, 3)])
case("einsum_diagonals", lambda m, a, b: m.einsum("bii,bi->bi", a, b), [N(2, 3, 3), N(2, 3)])
case("einsum_three", lambda m, a, b, c: m.einsum("ab,bc,c->a", a, b, c), [N(2, 3), N(3, 4), N(4)])
case("square_rsqrt", lambda m, a: m.square(a) + m.rsqrt(a) + a.square() * a.rsqrt()
     + a.clip(0.7, 1.5), [P(3, 4)])
case("free_functions", lambda m, a, b: m.softmax(m.mul(m.add(a, b), 2), 1)
     + m.log_softmax(m.sub(m.div(a, b), m.neg(a)), 0) + m.pow(m.sigmoid(a), 2)
     + m.relu(a) + m.clip(a, -0.5, 0.5), [N(3, 4), P(3, 4)])
case("small_compositions", lambda m, a, b, v: m.reciprocal(a).flip(0) + m.narrow(a, 1, 1, 3)
     .tile((1, 2))[:, :4] + sum(r * (i + 1) for i, r in enumerate(m.unbind(a, 1))).unsqueeze(1)
     + m.movedim(b, 0, 1) + m.outer(v, v)[:3] * m.dot(v, v) + a.amin(0) + a.clamp_min(0.8)
     + m.clamp_max(a, 1.2), [P(3, 4), N(4, 3), N(4)])
assert len({c.id for c in CASES}) == len(CASES), "duplicate case ids"


@pytest.mark.parametrize("c", [c.param() for c in CASES])
def test_gradcheck(c: T.Case):
    assert rt.autograd.gradcheck(lambda *a: c.fn(rt, *a), T._rt_inputs(c.inputs))


@pytest.mark.parametrize("dt", ["float32", "float64"])
@pytest.mark.parametrize("c", [c.param() for c in CASES])
def test_against_torch(c: T.Case, dt: str):
    T._compare_with_torch(c, dt)


def _both(fn, *arrays, dtype=None):
    """fn on runtime and on torch tensors of ``arrays``; both results as numpy."""
    out = []
    for m in (rt, torch):
        xs = [m.tensor(a) if dtype is None else m.tensor(a, dtype=getattr(m, dtype))
              for a in arrays]
        r = fn(m, *xs)
        r = r if isinstance(r, (tuple, list)) else (r,)
        out.append([np.asarray(v.detach().numpy() if hasattr(v, "detach") else v) for v in r])
    return out


def _assert_same(fn, *arrays, dtype=None):
    ours, theirs = _both(fn, *arrays, dtype=dtype)
    assert len(ours) == len(theirs)
    for a, b in zip(ours, theirs):
        assert a.shape == b.shape and a.dtype == b.dtype, (a, b)
        np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("fn", [
    lambda m, a: a.argmax(), lambda m, a: a.argmax(1), lambda m, a: m.argmin(a, 0, keepdim=True),
    lambda m, a: a.sort(1).indices, lambda m, a: a.topk(2, 0).indices,
    lambda m, a: m.argsort(a, descending=True), lambda m, a: a.any(), lambda m, a: (a > 0).all(1),
    lambda m, a: m.any(a > 0.5, 0, keepdim=True), lambda m, a: a.split(3, 1),
], ids=["argmax", "argmax_dim", "argmin_keepdim", "sort_indices", "topk_indices", "argsort_desc",
        "any", "all_dim", "any_keepdim", "split_uneven"])
def test_index_and_bool_results(fn):
    _assert_same(fn, distinct(3, 4), dtype="float32")


@pytest.mark.parametrize("fn", [
    lambda m, a, b: a % b, lambda m, a, b: a // b, lambda m, a, b: m.remainder(a, -3),
    lambda m, a, b: -7 // b, lambda m, a, b: 7 % b, lambda m, a, b: ~a, lambda m, a, b: ~(a > b),
    lambda m, a, b: a.cumsum(0), lambda m, a, b: (a > 0).cumsum(0), lambda m, a, b: m.tril(m.ones(3, 3, dtype=m.int64)),
], ids=["mod", "floordiv", "rem_scalar", "rfloordiv", "rmod", "invert_int", "invert_bool", "cumsum_int",
        "cumsum_bool", "tril_int"])
def test_integer_ops(fn):
    a = np.array([-7, -3, 0, 2, 5, 9], dtype=np.int64)
    b = np.array([3, -2, 4, -5, 2, 3], dtype=np.int64)
    _assert_same(fn, a, b)


@settings(max_examples=40, deadline=None)
@given(st.lists(st.floats(-50, 50), min_size=1, max_size=12),
       st.sampled_from([0.7, -1.3, 2.0, -0.25]))
def test_property_remainder_floor_divide_vs_torch(values, divisor):
    a = np.asarray(values, dtype=np.float64)
    _assert_same(lambda m, x: (x % divisor, x // divisor, divisor % x.clamp(min=0.5)), a,
                 dtype="float64")


@settings(max_examples=25, deadline=None)
@given(st.integers(1, 4), st.integers(1, 5), st.integers(-4, 4), st.integers(0, 2 ** 16))
def test_property_shape_ops_vs_torch(rows, cols, diagonal, seed):
    a = np.random.default_rng(seed).standard_normal((rows, cols))
    _assert_same(lambda m, x: (x.tril(diagonal), x.triu(diagonal), *x.chunk(3, 1),
                               x.repeat(1, 2), x.cumsum(1), x.var(0, unbiased=False),
                               x.logsumexp(1)), a, dtype="float64")


def test_scatter_reads_the_leading_block_of_a_larger_src():
    _assert_same(lambda m, a, s: a.scatter(1, I(m, [[0, 2], [3, 1]]), s), N(2, 4), N(2, 3))


def test_norm_gradient_at_zero_is_zero_as_in_torch():
    for p in (2, 3):
        grads = []
        for m in (rt, torch):
            x = m.zeros(2, 3, dtype=m.float64, requires_grad=True)
            (x.norm(p, dim=1).sum() + m.linalg.vector_norm(x, p)).backward()
            grads.append(x.grad.numpy())
        np.testing.assert_array_equal(*grads)


def test_predicates_and_aliases_match_torch():
    a = np.array([1.0, -np.inf, np.nan, np.inf, -2.5, 0.0])
    _assert_same(lambda m, x: (m.isnan(x), m.isinf(x), m.isfinite(x), m.logical_not(x),
                               x.isnan(), m.flip(x, (0,)), m.negative(x), m.absolute(x)), a,
                 dtype="float32")
    i = np.array([3, 0, -1])
    _assert_same(lambda m, x: (m.isinf(x), m.isfinite(x), m.isnan(x), x.logical_not()), i)
    x, y = rt.ones(2, 3), rt.ones(2, 3)
    assert rt.concat([x, y]).shape == (4, 3) and rt.concatenate([x, y], 1).shape == (2, 6)
    assert rt.is_tensor(x) and not rt.is_tensor(x.numpy()) and rt.numel(x) == 6
    assert rt.t(x).shape == (3, 2) and rt.swapaxes(x, 0, 1).shape == (3, 2)
    assert rt.broadcast_to(rt.ones(3), (2, 3)).shape == (2, 3)
    for fn in (rt.multiply, rt.subtract, rt.divide, rt.true_divide):
        assert fn(x, y).shape == (2, 3)


def test_creation_matches_torch():
    for fn in (lambda m: m.eye(3), lambda m: m.eye(2, 4, dtype=m.float64),
               lambda m: m.linspace(-1, 2, 7), lambda m: m.linspace(0, 1, 1),
               lambda m: m.linspace(3, 5, 0)):
        r, t = fn(rt), fn(torch)
        assert r.dtype.name == str(t.dtype).removeprefix("torch.")
        np.testing.assert_allclose(r.numpy(), t.numpy(), rtol=1e-6)


def test_random_likes_and_randperm():
    x = rt.zeros(3, 4, dtype=rt.float64)
    for fn in (rt.randn_like, rt.rand_like):
        y = fn(x)
        assert y.shape == x.shape and y.dtype is rt.float64
    assert rt.rand_like(x, dtype=rt.float32).dtype is rt.float32
    g1, g2 = rt.Generator().manual_seed(7), rt.Generator().manual_seed(7)
    p1, p2 = rt.randperm(10, generator=g1), rt.randperm(10, generator=g2)
    assert p1.dtype is rt.int64 and sorted(p1.tolist()) == list(range(10))
    assert p1.tolist() == p2.tolist()
    assert rt.randperm(3, dtype=rt.float32).dtype is rt.float32


def test_float16():
    assert rt.half is rt.float16 and rt.float16.is_floating_point
    x = rt.tensor([1.5, -2.25, 3.0]).half()
    assert x.dtype is rt.float16 and x.numpy().dtype == np.float16
    assert (x * 2).dtype is rt.float16  # a Python scalar keeps float16, as in PyTorch
    assert (x + rt.tensor([1.0, 1.0, 1.0])).dtype is rt.float32
    assert (rt.tensor([1, 2, 3]) * x).dtype is rt.float16
    assert x.to(rt.float32).dtype is rt.float32 and x.float().dtype is rt.float32
    assert rt.randn(4, dtype=rt.half).dtype is rt.float16
    w = rt.tensor([0.5, 1.0, 2.0], dtype=rt.float16, requires_grad=True)
    (w * w).sum().backward()
    assert w.grad.dtype is rt.float16
    np.testing.assert_allclose(w.grad.numpy(), [1.0, 2.0, 4.0])
    assert rt.tensor(np.ones(2, np.float16)).dtype is rt.float16


def test_view_after_transpose_raises_like_torch():
    x = rt.randn(3, 4)
    with pytest.raises(RuntimeError, match=r"view size is not compatible with input tensor's "
                       r"size and stride \(at least one dimension spans across two contiguous "
                       r"subspaces\)\. Use \.reshape\(\.\.\.\) instead\."):
        x.t().view(12)
    with pytest.raises(RuntimeError, match="view size is not compatible"):
        x.unsqueeze(0).permute(2, 0, 1).view(-1)
    assert x.t().reshape(12).shape == (12,)
    assert x.t().contiguous().view(12).shape == (12,)
    assert x.t().view(4, 3).shape == (4, 3)  # no dimension merged: a view, as in PyTorch
    assert x.view(2, 6).shape == (2, 6) and x.t().view_as(x.t()).shape == (4, 3)
    y = rt.randn(2, 3, 4).transpose(0, 1)
    assert y.view(3, 2, 2, 2).shape == (3, 2, 2, 2)  # the last axis splits, as PyTorch allows
    with pytest.raises(RuntimeError, match="view size is not compatible"):
        y.view(3, 8)


def test_device_objects():
    cpu, cuda1 = rt.device("cpu"), rt.device("cuda:1")
    assert (cpu.type, cpu.index, str(cpu)) == ("cpu", None, "cpu")
    assert (cuda1.type, cuda1.index, str(cuda1)) == ("cuda", 1, "cuda:1")
    assert repr(cuda1) == repr(torch.device("cuda:1")) == "device(type='cuda', index=1)"
    assert rt.device("cuda", 1) == cuda1 and rt.device(cuda1) == cuda1
    assert cpu == "cpu" and cpu != "cuda" and cuda1 != rt.device("cuda")
    assert len({cpu, rt.device("cpu")}) == 1
    x = rt.ones(2, device=cpu)
    assert x.device == "cpu" and x.to(cpu) is x and x.to(device=rt.device("cpu")) is x
    assert rt.zeros(2, device=rt.device("cpu")).device == cpu
    with pytest.raises(RuntimeError, match="Invalid device string: 'cuda:x'"):
        torch.device("cuda:x")
    with pytest.raises(RuntimeError, match="Invalid device string: 'cuda:x'"):
        rt.device("cuda:x")
    # PyTorch's text, which lists its twenty device types (two of which run here)
    for lib in (torch, rt):
        with pytest.raises(RuntimeError, match="Expected one of cpu, cuda, ipu, xpu, .*, "
                           "privateuseone device type at start of device string: tpu"):
            lib.device("tpu")
    with pytest.raises(RuntimeError, match="device type 'mps' is not supported here"):
        rt.device("mps")


def test_tensor_device_is_a_device_object():
    """As torch's: x.device is a device with .type and .index (and, ours, its string)."""
    import pickle

    x = rt.ones(2)
    assert isinstance(x.device, rt.device) and repr(x.device) == repr(torch.ones(2).device)
    assert (x.device.type, x.device.index) == ("cpu", None) == (torch.ones(2).device.type, None)
    assert x.device == rt.device("cpu") and x.device == "cpu" and str(x.device) == "cpu"
    assert (x + 1).device is x.device and x.detach().device.type == "cpu"
    assert rt.zeros(3, device=x.device).device == x.device
    assert pickle.loads(pickle.dumps(x.device)) == x.device
    assert rt.device("cuda", 2).index == 2 and rt.device("cuda", 2).type == "cuda"
    with pytest.raises(RuntimeError, match="must not be negative"):
        rt.device("cuda", -1)


def test_cuda_queries_match_the_machine():
    assert isinstance(rt.cuda.is_available(), bool)
    assert rt.cuda.device_count() >= 0
    assert rt.cuda.is_available() == (rt.cuda.device_count() > 0)
    try:
        import cupy  # noqa: F401
    except ImportError:
        assert not rt.cuda.is_available()


def test_num_threads_like_torch():
    before = rt.get_num_threads()
    assert isinstance(before, int) and before >= 1
    try:
        rt.set_num_threads(1)
        assert rt.get_num_threads() == 1
    finally:
        rt.set_num_threads(before)
    for bad in (0, -1, True, 1.5):
        kind, text = _torch_error(lambda m: m.set_num_threads(bad))
        with pytest.raises(kind) as info:
            rt.set_num_threads(bad)
        assert str(info.value) == text


def _torch_error(fn):
    with pytest.raises(Exception) as info:
        fn(torch)
    return type(info.value), str(info.value).splitlines()[0]


@pytest.mark.parametrize("fn", [
    lambda m: m.ones(3, 4).t().view(12),
    lambda m: m.mm(m.ones(3, 4), m.ones(3, 2)),
    lambda m: m.mm(m.ones(4), m.ones(4, 2)),
    lambda m: m.bmm(m.ones(3, 4), m.ones(3, 4)),
    lambda m: m.bmm(m.ones(2, 3, 4), m.ones(3, 4, 5)),
    lambda m: ~m.ones(2),
    lambda m: m.ones(3, 4).gather(1, m.tensor([[5]])),
    lambda m: m.ones(3, 4).index_select(0, m.tensor([7])),
    lambda m: m.ones(3, 4).repeat(2),
    lambda m: m.ones(3, 4).topk(9),
    lambda m: m.ones(3, 4).masked_fill(m.ones(3, 4), 2.0),
    lambda m: m.ones(3).split(0),
    lambda m: m.ones(3).chunk(0),
    lambda m: m.tril(m.ones(3)),
    lambda m: m.triu(m.ones(3)),
    lambda m: m.eye(-1),
    lambda m: m.linspace(0, 1, -1),
    lambda m: m.tensor([1, 2]) % 0,
    lambda m: m.tensor([1, 2]) // m.tensor([1, 0]),
    lambda m: m.ones(3, 4).cumsum(5),
    lambda m: m.randperm(-1),
    lambda m: m.einsum("ij,jk->ik", m.ones(3, 4), m.ones(3, 4)),
    lambda m: m.einsum("ii->i", m.ones(2, 3)),
    lambda m: m.ones(2, 3).scatter(1, m.tensor([[0]]), m.ones(1, 1, dtype=m.float64)),
    lambda m: m.ones(3, 4).argmax(2),
    lambda m: m.ones(3, 4).var(dim=3),
    lambda m: m.tensor([1, 2]).var(),
    lambda m: m.tensor([1, 2]).std(),
    lambda m: m.tensor([1, 2]).norm(),
    lambda m: m.linalg.vector_norm(m.tensor([True])),
    lambda m: m.ones(2).masked_fill(m.ones(2, dtype=m.float64), 1.0),
    lambda m: m.ones(2).masked_fill(m.ones(2, dtype=m.int64), 1.0),
    lambda m: m.narrow(m.ones(3), 0, 2, 2),
    lambda m: m.dot(m.ones(3), m.ones(2)),
    lambda m: m.dot(m.ones(3, 1), m.ones(2)),
], ids=["view", "mm_shapes", "mm_vector", "bmm_rank", "bmm_batch", "invert_float", "gather_oob",
        "index_select_oob", "repeat_rank", "topk_k", "masked_fill_float", "split_zero",
        "chunk_zero", "tril_1d", "triu_1d", "eye_negative", "linspace_negative", "int_mod_zero",
        "int_floordiv_zero", "cumsum_dim", "randperm_negative", "einsum_sizes", "einsum_diagonal", "scatter_dtype",
        "argmax_dim", "var_dim", "var_int", "std_int", "norm_int", "vector_norm_bool",
        "masked_fill_double", "masked_fill_long", "narrow_length", "dot_sizes", "dot_rank"])
def test_errors_match_torch(fn):
    kind, text = _torch_error(fn)
    with pytest.raises(Exception) as info:
        fn(rt)
    assert str(info.value).splitlines()[0] == text
    # PyTorch raises RuntimeError, a few IndexError/TypeError: ours are the same classes
    assert isinstance(info.value, kind), (type(info.value), kind)
