"""Differences from PyTorch 2.13 found by running PyTorch's OpInfo sample inputs through rt in
float16, bfloat16, int32, uint8, int8 and int16, each checked against torch's own result."""

from __future__ import annotations

import math

import numpy as np
import pytest

import runtime as rt

torch = pytest.importorskip("torch")


def _rt(t: torch.Tensor) -> rt.Tensor:
    """t as an rt tensor of the same dtype (bfloat16 through float32, which numpy lacks)."""
    if t.dtype == torch.bfloat16:
        return rt.tensor(t.float().numpy()).to(rt.bfloat16)
    return rt.tensor(t.numpy())


def _torch(r: rt.Tensor) -> torch.Tensor:
    if r.dtype is rt.bfloat16:
        return torch.from_numpy(np.array(r.float().numpy())).to(torch.bfloat16)
    return torch.from_numpy(np.array(r.numpy()))


def _assert_same(r: rt.Tensor, t: torch.Tensor) -> None:
    """rt's result is torch's, bit for bit (NaNs in the same places), in torch's dtype."""
    assert str(r.dtype).split(".")[-1] == str(t.dtype).split(".")[-1]
    assert torch.equal(_torch(r).isnan(), t.isnan()) if t.is_floating_point() else True
    assert torch.equal(_torch(r).nan_to_num(), t.nan_to_num())


@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "float64"])
def test_angle_keeps_a_floating_input_dtype(dtype):
    # PyTorch's angle of a float16/bfloat16 tensor is float16/bfloat16 (pi rounded to it),
    # a float64 one's pi is float64's
    values = [-1.5, 2.0, float("nan"), -0.0]
    t = torch.tensor(values, dtype=getattr(torch, dtype))
    _assert_same(rt.angle(_rt(t)), torch.angle(t))


def test_angle_of_float64_is_pi_in_float64():
    assert rt.angle(rt.tensor([-2.0], dtype=rt.float64)).item() == math.pi


@pytest.mark.parametrize(("dtype", "last"), [("uint8", 200), ("int8", -128)])
def test_softmin_negates_before_its_dtype_cast(dtype, last):
    # PyTorch's softmin is (-input).softmax(dim, dtype=dtype): -x wraps around in uint8 (and
    # -(-128) in int8)
    t = torch.tensor([[0, 1, 120], [3, 4, last]], dtype=getattr(torch, dtype))
    want = torch.nn.functional.softmin(t, 1, dtype=torch.float64)
    got = rt.nn.functional.softmin(_rt(t), 1, dtype=rt.float64)
    assert got.dtype is rt.float64
    assert torch.allclose(_torch(got), want, rtol=1e-12, atol=0)


@pytest.mark.parametrize("dtype", ["int32", "int16", "uint8"])
def test_addbmm_of_integers_keeps_their_dtype(dtype):
    g = torch.Generator().manual_seed(0)
    dt = getattr(torch, dtype)
    i, a, b = (torch.randint(0, 5, s, generator=g).to(dt) for s in ((2, 3), (4, 2, 3), (4, 3, 3)))
    _assert_same(rt.addbmm(_rt(i), _rt(a), _rt(b), beta=2), torch.addbmm(i, a, b, beta=2))


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
@pytest.mark.parametrize("p", [1, 2, 3, 4, 1.5, math.inf])
def test_dist_of_half_accumulates_in_float32(dtype, p):
    # PyTorch's norm kernel sums |d|^p in float32: a float16 sum of |d|^4 at |d| ~ 10 is inf
    g = torch.Generator().manual_seed(0)
    a, b = ((torch.randn(5, 5, 5, generator=g) * 9).to(getattr(torch, dtype)) for _ in "ab")
    _assert_same(rt.dist(_rt(a), _rt(b), p), torch.dist(a, b, p))


def test_dist_of_float16_backward_is_the_float32_one_rounded():
    # (PyTorch's own float16 norm backward overflows here: norm^3 is inf, its gradient 0)
    g = torch.Generator().manual_seed(1)
    a = (torch.randn(4, 6, generator=g) * 9).half()
    b = (torch.randn(4, 6, generator=g) * 9).half()
    wide = a.float().requires_grad_()
    torch.dist(wide, b.float(), 4).backward()
    ra = _rt(a).requires_grad_()
    rt.dist(ra, _rt(b), 4).backward()
    assert ra.grad.dtype is rt.float16
    assert torch.allclose(_torch(ra.grad).float(), wide.grad, rtol=2e-3, atol=1e-4)


@pytest.mark.parametrize(("dtype", "shape"), [("int32", (4, 1 << 30)), ("uint8", (6, 7, 8, 9)),
                                              ("int16", (3, 300)), ("int8", (2, 100))])
def test_unravel_index_of_narrow_integers_compares_in_int64(dtype, shape):
    t = torch.tensor([[3, 8, 13], [0, 5, -10 if dtype != "uint8" else 255]],
                     dtype=getattr(torch, dtype))
    want = torch.unravel_index(t, shape)
    got = rt.unravel_index(_rt(t), shape)
    assert len(got) == len(want)
    for r, w in zip(got, want):
        _assert_same(r, w)


@pytest.mark.parametrize(("dtype", "weights"), [("float16", "float32"), ("bfloat16", "float64"),
                                                ("int32", "float16"), ("uint8", None)])
def test_cov_promotes_with_the_weights_as_given(dtype, weights):
    # PyTorch's cov multiplies the input by the weights uncast: float32 aweights make a float16
    # input's cov float32, float16 ones an integer input's float16
    g = torch.Generator().manual_seed(0)
    x = (torch.rand(3, 4, generator=g) * 9).to(getattr(torch, dtype))
    if weights is None:
        fw, aw = torch.tensor([1, 3, 2, 1]), None
        want = torch.cov(x, correction=1, fweights=fw)
        got = rt.cov(_rt(x), correction=1, fweights=_rt(fw))
    else:
        aw = (torch.rand(4, generator=g) + 0.5).to(getattr(torch, weights))
        want = torch.cov(x, correction=1, aweights=aw)
        got = rt.cov(_rt(x), correction=1, aweights=_rt(aw))
    assert str(got.dtype).split(".")[-1] == str(want.dtype).split(".")[-1]
    assert torch.allclose(_torch(got).double(), want.double(), rtol=1e-2, atol=1e-2)


def _scaled_randn(*shape: int, seed: int = 0) -> torch.Tensor:
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed)) * 3


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
@pytest.mark.parametrize(("shape", "dim"), [((16, 40), 1), ((16, 40), -1), ((40,), 0),
                                            ((16, 40), 0), ((2, 8, 40), 1)])
def test_log_softmax_of_half_is_torchs_bit_for_bit(dtype, shape, dim):
    # along the last dim PyTorch's kernel rounds the sum of exps and its log to the input's
    # dtype; along another it computes in float32 and rounds once
    t = _scaled_randn(*shape).to(getattr(torch, dtype))
    _assert_same(rt.log_softmax(_rt(t), dim), torch.log_softmax(t, dim))


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_cross_entropy_of_half_rows_is_torchs(dtype):
    t = _scaled_randn(16, 40).to(getattr(torch, dtype))
    y = torch.randint(0, 40, (16,), generator=torch.Generator().manual_seed(1))
    _assert_same(rt.nn.functional.cross_entropy(_rt(t), _rt(y), reduction="none"),
                 torch.nn.functional.cross_entropy(t, y, reduction="none"))


def test_compiled_bfloat16_log_softmax_equals_eager():
    import warnings

    import planner

    def step(a: rt.Tensor) -> rt.Tensor:
        return rt.log_softmax(a, 1)

    a = _rt(_scaled_randn(4, 24).to(torch.bfloat16))
    b = _rt(_scaled_randn(4, 24, seed=2).to(torch.bfloat16))
    compiled = planner.compile(step)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a fallback to eager warns
        compiled(a)
        got = compiled(b)
    assert torch.equal(_torch(got), _torch(step(b)))


@pytest.mark.parametrize("dtype", ["int32", "uint8", "int16", "bool", "float16"])
@pytest.mark.parametrize("shape", [(), (2, 3)])
def test_sum_to_size_of_no_dims_is_a_sum(dtype, shape):
    # PyTorch's sum_to of an empty size is self.sum(): an integer or bool self's is int64,
    # a 0-d one's too
    t = torch.ones(shape, dtype=getattr(torch, dtype))
    _assert_same(_rt(t).sum_to_size(()), t.sum_to_size(()))
    _assert_same(_rt(t).sum_to_size(shape), t.sum_to_size(shape))


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_grid_sample_3d_of_half_indexes_in_int64(dtype):
    # flat positions past 2048 are not float16 integers: rt's rounded out of bounds
    g = torch.Generator().manual_seed(0)
    x = torch.randn(1, 1, 20, 21, 22, generator=g).to(getattr(torch, dtype))
    grid = (torch.rand(1, 3, 4, 5, 3, generator=g) * 2 - 1).to(getattr(torch, dtype))
    grid[0, 0, 0, 0] = 1.0  # the far corner
    want = torch.nn.functional.grid_sample(x, grid, align_corners=True)
    got = rt.nn.functional.grid_sample(_rt(x), _rt(grid), align_corners=True)
    assert str(got.dtype).split(".")[-1] == dtype
    assert torch.allclose(_torch(got).float(), want.float(), rtol=2e-2, atol=2e-2)


@pytest.mark.parametrize(("dtype", "bounds"), [("uint8", (-1, 2, 2)), ("uint8", (-4, 3, 2)),
                                               ("int8", (120, 130, 4)), ("int16", (-5, 5, 3)),
                                               ("uint8", (0.0, -8.000001, -4.0)),
                                               ("int32", (0.5, 7.2, 1.5))])
def test_arange_of_a_narrow_integer_dtype_wraps_as_torch(dtype, bounds):
    want = torch.arange(*bounds, dtype=getattr(torch, dtype))
    _assert_same(rt.arange(*bounds, dtype=getattr(rt, dtype)), want)


@pytest.mark.parametrize("dtype", ["uint8", "int16", "float32"])
def test_gather_and_scatter_take_an_empty_index_of_any_dtype(dtype):
    x = torch.arange(5.0)
    empty = torch.tensor([], dtype=getattr(torch, dtype))
    _assert_same(rt.gather(_rt(x), 0, _rt(empty)), torch.gather(x, 0, empty))
    src = torch.zeros(0)
    _assert_same(_rt(x).scatter(0, _rt(empty), _rt(src)), x.scatter(0, empty, src))
    with pytest.raises(RuntimeError, match="gather\\(\\): Expected dtype int32/int64 for index"):
        rt.gather(_rt(x), 0, _rt(torch.tensor([1], dtype=getattr(torch, dtype))))
