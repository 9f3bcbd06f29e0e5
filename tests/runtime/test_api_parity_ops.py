"""PyTorch parity of the tensor API: dimension checks, error types and texts, the ops and
arguments added for it (prod, cumprod, scatter_reduce, div's rounding modes, nonzero, ...),
rt.Size, dtype inference and the generators' state. Each check states its expectation by
hand, so it runs without torch too, and compares with torch where torch is installed."""

from __future__ import annotations

import importlib.util
import warnings
from typing import Any

import numpy as np
import pytest

import planner
import runtime as rt


def _torch() -> Any:
    return pytest.importorskip("torch")


def _raises(fn: Any) -> tuple[type, str]:
    try:
        fn()
    except Exception as e:  # noqa: BLE001 - the type and text are what is compared
        return type(e), str(e)
    raise AssertionError("no exception")


def _grad_of(lib: Any, fn: Any, *arrays: np.ndarray, grad_out: Any = None) -> tuple[Any, ...]:
    """fn's value and the gradients of its float64 inputs, as numpy arrays."""
    xs = [lib.tensor(a, requires_grad=a.dtype.kind == "f") for a in arrays]
    out = fn(lib, *xs)
    g = lib.ones_like(out) if grad_out is None else lib.tensor(grad_out)
    out.backward(g)
    return (out.detach().numpy(),) + tuple(x.grad.numpy() for x in xs if x.requires_grad)


def _same_as_torch(fn: Any, *arrays: np.ndarray, grad_out: Any = None) -> None:
    torch = _torch()
    ours = _grad_of(rt, fn, *arrays, grad_out=grad_out)
    theirs = _grad_of(torch, fn, *arrays, grad_out=grad_out)
    for a, b in zip(ours, theirs, strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-12)


# --- 1. dimensions out of range, and named twice ----------------------------------------------

M = "Dimension out of range (expected to be in range of [{}, {}], but got {})"
DIM_ERRORS = [
    ("transpose", lambda m: m.ones(2, 3).transpose(0, 2), M.format(-2, 1, 2)),
    ("unsqueeze", lambda m: m.ones(2, 3).unsqueeze(3), M.format(-3, 2, 3)),
    ("unsqueeze_neg", lambda m: m.ones(2, 3).unsqueeze(-4), M.format(-3, 2, -4)),
    ("cat", lambda m: m.cat([m.ones(2, 3)] * 2, dim=2), M.format(-2, 1, 2)),
    ("stack", lambda m: m.stack([m.ones(2, 3)] * 2, 3), M.format(-3, 2, 3)),
    ("flatten", lambda m: m.ones(2, 3).flatten(0, 2), M.format(-2, 1, 2)),
    ("swapaxes", lambda m: m.swapaxes(m.ones(2, 3), 0, 5), M.format(-2, 1, 5)),
    ("permute", lambda m: m.ones(2, 3).permute(0, 2), M.format(-2, 1, 2)),
    ("size", lambda m: m.ones(2, 3).size(-3), M.format(-2, 1, -3)),
    ("cumsum", lambda m: m.ones(2, 3).cumsum(2), M.format(-2, 1, 2)),
    ("cumprod", lambda m: m.ones(2, 3).cumprod(2), M.format(-2, 1, 2)),
    ("prod", lambda m: m.ones(2, 3).prod(2), M.format(-2, 1, 2)),
    ("flip", lambda m: m.ones(2, 3).flip(2), M.format(-2, 1, 2)),
    ("movedim", lambda m: m.movedim(m.ones(2, 3), 0, 2), M.format(-2, 1, 2)),
    ("squeeze_0d", lambda m: m.tensor(5.0).squeeze(1), M.format(-1, 0, 1)),
    ("unsqueeze_0d", lambda m: m.tensor(5.0).unsqueeze(-2), M.format(-1, 0, -2)),
    ("glu", lambda m: m.nn.functional.glu(m.ones(2, 4), 2), M.format(-2, 1, 2)),
    ("diagonal", lambda m: m.diagonal(m.ones(2, 3), 0, 0, 2), M.format(-2, 1, 2)),
]


@pytest.mark.parametrize("fn,text", [pytest.param(f, t, id=i) for i, f, t in DIM_ERRORS])
def test_dim_out_of_range_is_torchs_index_error(fn: Any, text: str) -> None:
    assert _raises(lambda: fn(rt)) == (IndexError, text)
    torch = _torch()
    assert _raises(lambda: fn(torch)) == (IndexError, text)


DUPLICATE_DIMS = [
    ("sum", lambda m: m.ones(2, 3).sum((0, 0))),
    ("sum_wrapped", lambda m: m.ones(2, 3).sum((0, -2))),
    ("mean", lambda m: m.ones(2, 3).mean((1, -1))),
    ("flip", lambda m: m.ones(2, 3).flip(0, 0)),
    ("amax", lambda m: m.ones(2, 3).amax((0, 0))),
]


@pytest.mark.parametrize("fn", [pytest.param(f, id=i) for i, f in DUPLICATE_DIMS])
def test_a_dim_named_twice_is_torchs_runtime_error(fn: Any) -> None:
    kind, text = _raises(lambda: fn(rt))
    assert issubclass(kind, RuntimeError) and text.startswith("dim ") \
        and text.endswith(" appears multiple times in the list of dims")
    torch = _torch()
    assert _raises(lambda: fn(torch))[1] == text


def test_a_0d_tensor_takes_dims_minus_one_and_zero() -> None:
    x = rt.tensor(5.0)
    for d in (0, -1):
        assert x.sum(d).item() == 5.0 and x.transpose(d, 0).item() == 5.0
        assert x.unsqueeze(d).shape == (1,) and x.flatten(d, 0).shape == (1,)
        assert x.cumprod(d).item() == 5.0 and x.prod(d).item() == 5.0
        assert rt.movedim(x, d, 0).item() == 5.0 and x.flip(d).item() == 5.0
    assert _raises(lambda: x.size(0)) == (IndexError, "Dimension specified as 0 but tensor has "
                                                       "no dimensions")


def test_movedim_takes_sequences() -> None:
    x = rt.zeros(2, 3, 4)
    assert rt.movedim(x, (0, 1), (2, 0)).shape == (3, 4, 2)
    assert rt.movedim(x, -1, 0).shape == (4, 2, 3)


# --- 3. error types and texts ---------------------------------------------------------------


def _setitem(m: Any, key: Any, value_shape: tuple[int, ...]) -> None:
    x = m.ones(2, 3)
    x[key] = m.ones(*value_shape)


EXPAND = ("The expanded size of the tensor ({}) must match the existing size ({}) at "
          "non-singleton dimension {}.  Target sizes: {}.  Tensor sizes: {}")
ERRORS = [
    ("view", lambda m: m.ones(2, 3).view(4, 2), RuntimeError,
     "shape '[4, 2]' is invalid for input of size 6"),
    ("view_infer", lambda m: m.ones(2, 3).view(-1, 4), RuntimeError,
     "shape '[-1, 4]' is invalid for input of size 6"),
    ("view_two_infer", lambda m: m.ones(2, 3).view(-1, -1), RuntimeError,
     "only one dimension can be inferred"),
    ("reshape", lambda m: m.ones(2, 3).reshape(4, 2), RuntimeError,
     "shape '[4, 2]' is invalid for input of size 6"),
    ("cat_sizes", lambda m: m.cat([m.ones(2, 3), m.ones(2, 4)]), RuntimeError,
     "Sizes of tensors must match except in dimension 0. Expected size 3 but got size 4 for "
     "tensor number 1 in the list."),
    ("cat_ndim", lambda m: m.cat([m.ones(2, 3), m.ones(2, 3, 1)]), RuntimeError,
     "Tensors must have same number of dimensions: got 2 and 3"),
    ("cat_0d", lambda m: m.cat([m.tensor(1.0), m.tensor(2.0)]), RuntimeError,
     "zero-dimensional tensor (at position 0) cannot be concatenated"),
    ("cat_empty", lambda m: m.cat([]), ValueError,
     "torch.cat(): expected a non-empty list of Tensors"),
    ("stack_sizes", lambda m: m.stack([m.ones(2, 3), m.ones(2, 3), m.ones(3)]), RuntimeError,
     "stack expects each tensor to be equal size, but got [2, 3] at entry 0 and [3] at "
     "entry 2"),
    ("too_many_indices", lambda m: m.ones(2)[0, 0], IndexError,
     "too many indices for tensor of dimension 1"),
    ("too_many_ellipsis", lambda m: m.ones(2)[..., 0, 0], IndexError,
     "too many indices for tensor of dimension 1"),
    ("arange_step", lambda m: m.arange(0, 5, 0), RuntimeError, "step must be nonzero"),
    ("arange_sign", lambda m: m.arange(5, 0, 1), RuntimeError,
     "upper bound and lower bound inconsistent with step sign"),
    ("expand", lambda m: m.ones(2).expand(3, 3), RuntimeError,
     EXPAND.format(3, 2, 1, [3, 3], [2])),
    ("expand_fewer", lambda m: m.ones(2, 3).expand(3), RuntimeError,
     "expand(torch.FloatTensor{[2, 3]}, size=[3]): the number of sizes provided (1) must be "
     "greater or equal to the number of dimensions in the tensor (2)"),
    ("expand_leading_minus_one", lambda m: m.ones(2).expand(-1, 2), RuntimeError,
     "The expanded size of the tensor (-1) isn't allowed in a leading, non-existing "
     "dimension 0"),
    ("broadcast_to", lambda m: m.broadcast_to(m.ones(3), (2, 4)), RuntimeError,
     EXPAND.format(4, 3, 1, [2, 4], [3])),
    ("permute_twice", lambda m: m.ones(2, 3).permute(0, 0), RuntimeError,
     "permute(): duplicate dims are not allowed."),
    ("permute_length", lambda m: m.ones(2, 3).permute(0), RuntimeError,
     "permute(sparse_coo): number of dimensions in the tensor input does not match the length "
     "of the desired ordering of dimensions i.e. input.dim() = 2 is not equal to len(dims) = 1"),
    ("setitem", lambda m: _setitem(m, 0, (2,)), RuntimeError, EXPAND.format(3, 2, 0, [3], [2])),
    ("setitem_slice", lambda m: _setitem(m, (slice(None), slice(0, 2)), (3,)), RuntimeError,
     EXPAND.format(2, 3, 1, [2, 2], [3])),
    ("setitem_advanced", lambda m: _setitem(m, m.tensor([0, 1]), (2,)), RuntimeError,
     "shape mismatch: value tensor of shape [2] cannot be broadcast to indexing result of "
     "shape [2, 3]"),
    ("zeros_negative", lambda m: m.zeros(-1), RuntimeError,
     "zeros: Dimension size must be non-negative."),
    ("ones_negative", lambda m: m.ones(2, -3), RuntimeError,
     "Trying to create tensor with negative dimension -3: [2, -3]"),
    ("randn_negative", lambda m: m.randn(-1), RuntimeError,
     "Trying to create tensor with negative dimension -1: [-1]"),
    ("ragged", lambda m: m.tensor([[1, 2], [3]]), ValueError,
     "expected sequence of length 2 at dim 1 (got 1)"),
    ("ragged_deep", lambda m: m.tensor([[[1], [2]], [[3], [4, 5]]]), ValueError,
     "expected sequence of length 1 at dim 2 (got 2)"),
    ("index_select", lambda m: m.ones(3).index_select(0, m.tensor([5])), IndexError,
     "index out of range in self"),
    ("matmul_dtype", lambda m: m.ones(2, 2) @ m.ones(2, 2, dtype=m.float64), RuntimeError,
     "expected m1 and m2 to have the same dtype, but got: float != double"),
    ("matmul_dtype_dot", lambda m: m.ones(2) @ m.ones(2, dtype=m.int64), RuntimeError,
     "dot : expected both vectors to have same dtype, but found Float and Long"),
    ("matmul_dtype_mv", lambda m: m.ones(2, 2) @ m.ones(2, dtype=m.float64), RuntimeError,
     "addmv input tensors must have the same dtype, but got Double, Float, and Double"),
    ("matmul_dtype_bmm", lambda m: m.ones(3, 2, 2) @ m.ones(3, 2, 2, dtype=m.float64),
     RuntimeError, "expected scalar type Float but found Double"),
    ("linear_dtype", lambda m: m.nn.Linear(2, 2)(m.ones(1, 2, dtype=m.float64)), RuntimeError,
     "mat1 and mat2 must have the same dtype, but got Double and Float"),
    ("linear_bias_dtype", lambda m: m.nn.functional.linear(m.ones(1, 2), m.ones(2, 2),
                                                           m.ones(2, dtype=m.float64)),
     RuntimeError, "self and mat2 must have the same dtype, but got Double and Float"),
    ("linear_no_bias_dtype", lambda m: m.nn.functional.linear(m.ones(3, 1, 2, dtype=m.float64),
                                                              m.ones(2, 2)),
     RuntimeError, "expected m1 and m2 to have the same dtype, but got: double != float"),
    ("div_mode", lambda m: m.div(m.ones(2), 2, rounding_mode="bad"), RuntimeError,
     "div expected rounding_mode to be one of None, 'trunc', or 'floor' but found 'bad'"),
    ("div_int_zero", lambda m: m.div(m.tensor([7, -7]), 0, rounding_mode="trunc"),
     RuntimeError, "ZeroDivisionError"),
    ("scatter_reduce_mode", lambda m: m.ones(3).scatter_reduce(0, m.tensor([0]), m.ones(1),
                                                               "bad"),
     RuntimeError, "reduce argument must be either sum, prod, mean, amax or amin, got bad"),
    ("scatter_mode", lambda m: m.ones(3).scatter(0, m.tensor([0]), m.ones(1), reduce="mean"),
     RuntimeError, "reduce argument must be either add or multiply."),
    ("masked_select_dtype", lambda m: m.masked_select(m.ones(2), m.tensor([1, 0])),
     RuntimeError, "masked_select: expected BoolTensor for mask"),
    ("masked_select_shape", lambda m: m.masked_select(m.ones(3, 4), m.ones(2, dtype=m.bool)),
     RuntimeError,
     "The size of tensor a (2) must match the size of tensor b (4) at non-singleton "
     "dimension 1"),
    ("mv_ndim", lambda m: m.mv(m.ones(3, 4), m.ones(4, 1)), RuntimeError,
     "vector + matrix @ vector expected, got 1, 2, 2"),
    ("mv_size", lambda m: m.mv(m.ones(3, 4), m.ones(3)), RuntimeError,
     "size mismatch, got input (3), mat (3x4), vec (3)"),
    ("diagonal_same", lambda m: m.diagonal(m.ones(2, 2), 0, 0, 0), RuntimeError,
     "diagonal dimensions cannot be identical 0, 0"),
    ("take_along_dim_ndim", lambda m: m.take_along_dim(m.ones(3, 4), m.tensor([0]), 1),
     RuntimeError, "torch.take_along_dim(): input and indices should have the same number of "
     "dimensions, but got 2 dimensions for input, and 1 dimensions for indices"),
    ("take_along_dim_dtype", lambda m: m.take_along_dim(m.ones(3, 4), m.tensor([[0.0]]), 1),
     RuntimeError, "torch.take_along_dim(): dtype of indices should be Long but got Float"),
    ("take_along_dim_shape", lambda m: m.take_along_dim(m.ones(3, 4), m.tensor([[0], [1]]), 1),
     RuntimeError, "The size of tensor a (3) must match the size of tensor b (2) at "
     "non-singleton dimension 0"),
    ("randint_order", lambda m: m.randint(3, 2, (2,)), RuntimeError,
     "random_ expects 'from' to be less than 'to', but got from=3 >= to=2"),
    ("randint_size", lambda m: m.randint(5, 3), TypeError,
     "randint(): argument 'size' (position 2) must be tuple of ints, not int"),
    ("zeros_size_twice", lambda m: m.zeros((2, 3), size=(2,)), TypeError,
     "zeros() got multiple values for argument 'size'"),
]


@pytest.mark.parametrize("fn,kind,text", [pytest.param(f, k, t, id=i) for i, f, k, t in ERRORS])
def test_error_type_and_text_are_torchs(fn: Any, kind: type, text: str) -> None:
    ours, got = _raises(lambda: fn(rt))
    assert issubclass(ours, kind) and got == text
    torch = _torch()
    theirs, expected = _raises(lambda: fn(torch))
    assert issubclass(theirs, kind) and expected == text


def test_shape_errors_stay_value_errors() -> None:
    """What raised a ValueError here still does (a ShapeError is both)."""
    for fn in (lambda: rt.ones(2, 3).view(4, 2), lambda: rt.cat([rt.ones(2), rt.ones(2, 1)]),
               lambda: rt.ones(2).expand(3), lambda: rt.ones(2, 3).permute(0, 0),
               lambda: rt.zeros(-1)):
        with pytest.raises(ValueError):
            fn()


def test_cat_skips_empty_1d_tensors_as_torch() -> None:
    out = rt.cat([rt.tensor([]), rt.ones(2, 3, dtype=rt.float64)])
    assert out.shape == (2, 3) and out.dtype is rt.float64
    assert rt.cat([rt.ones(0), rt.ones(2, 3)], 1).shape == (2, 3)


def test_compiled_step_raises_the_same_texts() -> None:
    def bad_cat(x: rt.Tensor) -> rt.Tensor:
        return rt.cat([x, x.sum(1, keepdim=True)], 2).sum()

    def bad_matmul(x: rt.Tensor) -> rt.Tensor:
        return (x @ x.double()).sum()

    x = rt.ones(2, 3, requires_grad=True)
    with pytest.raises(IndexError, match=r"\[-2, 1\], but got 2"):
        planner.compile(bad_cat)(x)
    with pytest.raises(RuntimeError, match="expected scalar type|expected m1 and m2"):
        planner.compile(bad_matmul)(rt.ones(2, 2, requires_grad=True))


# --- 2. new ops and arguments -----------------------------------------------------------------

R = np.random.default_rng(3)
WITH_ZEROS = np.array([[1.5, 0.0, 3.0, -2.0], [0.0, 0.0, 2.0, 1.0], [0.5, -1.0, 2.0, 4.0]])


def test_prod_values_and_gradient_with_zeros() -> None:
    x = rt.tensor(WITH_ZEROS, requires_grad=True)
    x.prod(1).backward(rt.tensor([1.0, 2.0, 3.0]))
    # row 0 has one zero: only it gets a gradient (the product of the others); row 1 two: none
    np.testing.assert_allclose(x.grad.numpy(), [[0, -9, 0, 0], [0, 0, 0, 0],
                                                [-24, 12, -6, -3]])
    assert x.prod().item() == 0.0
    assert rt.tensor([1, 2, 3]).prod().item() == 6 and rt.tensor([1, 2, 3]).prod().dtype is rt.int64
    assert rt.tensor([True, False]).prod(0).dtype is rt.int64
    assert rt.ones(2, 0).prod(1).tolist() == [1.0, 1.0]
    assert rt.ones(2, 3).prod(1, keepdim=True).shape == (2, 1)
    assert rt.ones(2, 3).prod(dtype=rt.float64).dtype is rt.float64
    for dim in (0, 1, -1):
        _same_as_torch(lambda m, a, d=dim: m.prod(a, d), WITH_ZEROS)
    _same_as_torch(lambda m, a: a.prod(), WITH_ZEROS)
    _same_as_torch(lambda m, a: a.prod(0, keepdim=True), R.standard_normal((3, 4)))


def test_cumprod_values_and_gradient_with_zeros() -> None:
    x = rt.tensor([[1.0, 0.0, 3.0], [0.0, 0.0, 2.0]], requires_grad=True)
    x.cumprod(1).backward(rt.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]))
    np.testing.assert_allclose(x.grad.numpy(), [[1, 11, 0], [4, 0, 0]])
    assert rt.cumprod(rt.tensor([1, 2, 3]), 0).tolist() == [1, 2, 6]
    assert rt.cumprod(rt.tensor([True, False]), 0).dtype is rt.int64
    assert rt.ones(2, 3).cumprod(1, dtype=rt.float64).dtype is rt.float64
    for dim in (0, 1):
        _same_as_torch(lambda m, a, d=dim: m.cumprod(a, d), WITH_ZEROS,
                       grad_out=R.standard_normal((3, 4)))


@pytest.mark.parametrize("fn", [
    lambda a: a.prod(1), lambda a: a.prod(), lambda a: a.cumprod(0), lambda a: a.cumprod(1),
])
def test_prod_cumprod_gradcheck(fn: Any) -> None:
    for data in (WITH_ZEROS, R.standard_normal((3, 4))):
        x = rt.tensor(data, requires_grad=True)
        assert rt.autograd.gradcheck(fn, (x,))
    assert rt.autograd.gradgradcheck(fn, (rt.tensor(R.standard_normal((3, 4)),
                                                     requires_grad=True),))


IDX = np.array([[0, 1, 0], [2, 2, 1]])


@pytest.mark.parametrize("reduce", ["sum", "prod", "mean", "amax", "amin"])
@pytest.mark.parametrize("include_self", [True, False])
def test_scatter_reduce(reduce: str, include_self: bool) -> None:
    x, src = np.array([1.0, 2.0, 3.0]), np.array([2.0, 3.0, 0.0])
    expected = {("sum", True): [6, 2, 3], ("sum", False): [5, 0, 3],
                ("prod", True): [6, 0, 3], ("prod", False): [6, 0, 3],
                ("mean", True): [2, 1, 3], ("mean", False): [2.5, 0, 3],
                ("amax", True): [3, 2, 3], ("amax", False): [3, 0, 3],
                ("amin", True): [1, 0, 3], ("amin", False): [2, 0, 3]}[reduce, include_self]
    out = rt.tensor(x).scatter_reduce(0, rt.tensor([0, 0, 1]), rt.tensor(src), reduce,
                                      include_self=include_self)
    np.testing.assert_allclose(out.numpy(), expected)

    def fn(m: Any, a: Any, s: Any) -> Any:
        return a.scatter_reduce(1, m.tensor(IDX), s, reduce, include_self=include_self)

    a, s = R.standard_normal((2, 4)), R.standard_normal((2, 3))
    assert rt.autograd.gradcheck(lambda p, q: fn(rt, p, q),
                                 (rt.tensor(a, requires_grad=True),
                                  rt.tensor(s, requires_grad=True)))
    _same_as_torch(fn, a, s, grad_out=R.standard_normal((2, 4)))
    _same_as_torch(lambda m, p, q: m.tensor(x).scatter_reduce(0, m.tensor([0, 0, 1]), q, reduce,
                                                            include_self=include_self) * p,
                   x, src, grad_out=np.array([1.0, 2.0, 3.0]))


def test_scatter_reduce_integer_mean_rounds_down() -> None:
    out = rt.tensor([4, 5, 6]).scatter_reduce(0, rt.tensor([0, 0, 1]), rt.tensor([2, 3, 4]),
                                              "mean")
    assert out.tolist() == [3, 4, 6]


def test_scatter_with_reduce() -> None:
    idx = rt.tensor([0, 0, 1])
    assert rt.zeros(3).scatter(0, idx, 2.0, reduce="add").tolist() == [4.0, 2.0, 0.0]
    assert rt.ones(3).scatter(0, idx, 2.0, reduce="multiply").tolist() == [4.0, 2.0, 1.0]
    with pytest.warns(UserWarning, match="scatter_reduce instead"):
        out = rt.ones(3).scatter(0, idx, rt.tensor([2.0, 3.0, 4.0]), reduce="multiply")
    assert out.tolist() == [6.0, 4.0, 1.0]
    x = rt.ones(3).requires_grad_()
    y = x.scatter(0, idx, 2.0, reduce="add")
    with pytest.raises(RuntimeError, match="derivative for aten::scatter is not implemented"):
        y.sum().backward()
    x = rt.ones(3)
    x.scatter_(0, idx, 2.0, reduce="add")
    assert x.tolist() == [5.0, 3.0, 1.0]


@pytest.mark.parametrize("mode", ["trunc", "floor"])
def test_div_rounding_mode(mode: str) -> None:
    ints = rt.div(rt.tensor([7, -7, 6, -6]), 2, rounding_mode=mode)
    assert ints.dtype is rt.int64
    assert ints.tolist() == ([3, -3, 3, -3] if mode == "trunc" else [3, -4, 3, -3])
    assert rt.tensor([7, -7]).div(rt.tensor([-2, 2]), rounding_mode=mode).tolist() == (
        [-3, -3] if mode == "trunc" else [-4, -4])
    floats = rt.div(rt.tensor([7.5, -7.5]), 2, rounding_mode=mode)
    assert floats.dtype is rt.float32
    assert floats.tolist() == ([3.0, -3.0] if mode == "trunc" else [3.0, -4.0])
    assert rt.div(rt.tensor([5]), 2.5, rounding_mode=mode).dtype is rt.float32
    x = rt.tensor([1.5, -2.5], requires_grad=True)
    y = x.div(0.5, rounding_mode=mode)
    assert y.requires_grad
    y.sum().backward()
    assert x.grad.tolist() == [0.0, 0.0]  # PyTorch's: a rounded quotient has no slope
    t = rt.tensor([7, -7, 5])
    t.div_(2, rounding_mode=mode)
    assert t.tolist() == ([3, -3, 2] if mode == "trunc" else [3, -4, 2])
    torch = _torch()
    a = np.array([7.0, -7.0, 0.5, -0.1, 1.0, -1.0])
    b = np.array([2.0, 2.0, -0.3, 0.1, 0.1, 0.0])
    with np.errstate(divide="ignore", invalid="ignore"):
        np.testing.assert_array_equal(
            rt.div(rt.tensor(a), rt.tensor(b), rounding_mode=mode).numpy(),
            torch.div(torch.tensor(a), torch.tensor(b), rounding_mode=mode).numpy())
    ai, bi = np.array([7, -7, 9, -9, 0]), np.array([2, 3, -4, -5, 7])
    assert rt.div(rt.tensor(ai), rt.tensor(bi), rounding_mode=mode).tolist() == torch.div(
        torch.tensor(ai), torch.tensor(bi), rounding_mode=mode).tolist()


def test_nonzero_argwhere_and_one_argument_where() -> None:
    m = rt.tensor([[1, 0, 2], [0, 3, 0]])
    assert m.nonzero().tolist() == [[0, 0], [0, 2], [1, 1]]
    assert rt.argwhere(m).tolist() == [[0, 0], [0, 2], [1, 1]]
    rows, cols = rt.where(m > 0)
    assert rows.tolist() == [0, 0, 1] and cols.tolist() == [0, 2, 1]
    assert [t.tolist() for t in rt.nonzero(m, as_tuple=True)] == [[0, 0, 1], [0, 2, 1]]
    assert rt.nonzero(rt.tensor(5)).shape == (1, 0) and rt.nonzero(rt.tensor(0)).shape == (0, 0)
    assert rt.nonzero(rt.tensor(5), as_tuple=True)[0].tolist() == [0]
    assert rt.nonzero(m).dtype is rt.int64


def test_unique() -> None:
    x = rt.tensor([3, 1, 2, 1, 3])
    assert rt.unique(x).tolist() == [1, 2, 3]
    values, inverse, counts = rt.unique(x, return_inverse=True, return_counts=True)
    assert inverse.tolist() == [2, 0, 1, 0, 2] and counts.tolist() == [2, 1, 2]
    rows, inv, cnt = rt.unique(rt.tensor([[1, 2], [1, 2], [0, 5]]), dim=0, return_inverse=True,
                               return_counts=True)
    assert rows.tolist() == [[0, 5], [1, 2]] and inv.tolist() == [1, 1, 0]
    assert cnt.tolist() == [1, 2]
    assert rt.unique(rt.tensor([[3, 1], [1, 2]]), return_inverse=True)[1].tolist() == [[2, 0],
                                                                                      [0, 1]]
    assert np.isnan(rt.unique(rt.tensor([1.0, float("nan"), float("nan")])).numpy()[1:]).all()
    assert rt.tensor([2.0, 1.0]).unique().dtype is rt.float32


def test_masked_select() -> None:
    data = R.standard_normal((3, 4))
    mask = data > 0.2
    out = rt.masked_select(rt.tensor(data), rt.tensor(mask))
    np.testing.assert_array_equal(out.numpy(), data[mask])
    assert rt.masked_select(rt.ones(4), rt.ones(3, 1, dtype=rt.bool)).shape == (12,)
    x = rt.tensor(data, requires_grad=True)
    assert rt.autograd.gradcheck(lambda a: a.masked_select(rt.tensor(mask)), (x,))
    _same_as_torch(lambda m, a: m.masked_select(a, m.tensor([True, False, True, True])), data)


def test_mv_diagonal_take_along_dim_broadcast_tensors() -> None:
    m = np.arange(12.0).reshape(3, 4)
    assert rt.tensor(m).mv(rt.ones(4, dtype=rt.float64)).tolist() == [6.0, 22.0, 38.0]
    assert rt.diagonal(rt.tensor(m)).tolist() == [0.0, 5.0, 10.0]
    assert rt.tensor(m).diagonal(1).tolist() == [1.0, 6.0, 11.0]
    assert rt.tensor(m).diagonal(offset=1, dim1=1, dim2=0).tolist() == [4.0, 9.0]
    assert rt.diagonal(rt.tensor(m), 5).shape == (0,)
    assert rt.diagonal(rt.ones(2, 3, 4), 0, 0, 2).shape == (3, 2)
    idx = rt.tensor([[0], [1], [2]])
    assert rt.take_along_dim(rt.tensor(m), idx, 1).tolist() == [[0.0], [5.0], [10.0]]
    assert rt.take_along_dim(rt.tensor(m), rt.tensor([0, 5])).tolist() == [0.0, 5.0]
    a, b = rt.broadcast_tensors(rt.ones(2, 1), rt.zeros(3))
    assert a.shape == b.shape == (2, 3)
    data, v = R.standard_normal((2, 3, 4)), R.standard_normal(4)
    vec = rt.tensor(v)
    for fn in (lambda x: x.diagonal(1, -1, 0), lambda x: rt.take_along_dim(
            x, rt.tensor([[[1]], [[0]]]), 0), lambda x: x[0].mv(vec)):
        assert rt.autograd.gradcheck(fn, (rt.tensor(data, requires_grad=True),))
    _same_as_torch(lambda t, x, y: t.mv(x, y), m, v)
    _same_as_torch(lambda t, x: t.diagonal(x, -1, 2, 0), data)
    _same_as_torch(lambda t, x: x.take_along_dim(t.tensor([[[0, 3]], [[2, 2]]]), 2), data)
    _same_as_torch(lambda t, x, y: t.broadcast_tensors(x, y)[0] * t.broadcast_tensors(x, y)[1],
                   R.standard_normal((3, 1)), R.standard_normal(4))


def test_flip_forms() -> None:
    x = rt.tensor([[1, 2], [3, 4]])
    assert x.flip(0, 1).tolist() == x.flip((0, 1)).tolist() == [[4, 3], [2, 1]]
    assert rt.flip(x, [1]).tolist() == [[2, 1], [4, 3]]
    with pytest.raises(TypeError, match="missing 1 required positional"):
        x.flip()


def test_is_floating_point_is_tensor_itemsize() -> None:
    assert rt.ones(2).is_floating_point() and not rt.is_floating_point(rt.tensor([1]))
    assert rt.is_tensor(rt.ones(1)) and not rt.is_tensor(3)
    assert [d.itemsize for d in (rt.bool, rt.int64, rt.float16, rt.float32, rt.float64)] == [
        1, 8, 2, 4, 8]
    x = rt.ones(2, 3)
    assert x.element_size() == 4 and x.nbytes == 24 and x.itemsize == 4
    assert rt.ones(2, 3, dtype=rt.float64).nbytes == 48


def test_size() -> None:
    s = rt.ones(2, 3).shape
    assert isinstance(s, rt.Size) and isinstance(s, tuple) and s == (2, 3)
    assert s.numel() == 6 and rt.Size([]).numel() == 1 and rt.Size((0, 3)).numel() == 0
    assert repr(s) == "torch.Size([2, 3])" and repr(rt.tensor(1.0).size()) == "torch.Size([])"
    assert rt.ones(4, 5).size() == (4, 5) and isinstance(rt.ones(4).size(), rt.Size)
    assert hash(s) == hash((2, 3)) and s[1] == 3
    import pickle

    assert pickle.loads(pickle.dumps(s)) == (2, 3)
    torch = _torch()
    assert repr(s) == repr(torch.ones(2, 3).shape)


def test_randint_overloads() -> None:
    g = rt.Generator().manual_seed(3)
    a = rt.randint(5, (1000,), generator=g)
    assert a.dtype is rt.int64 and a.shape == (1000,) and 0 <= a.min().item() <= a.max().item() < 5
    b = rt.randint(2, 5, (10,))
    assert 2 <= b.min().item() and b.max().item() < 5
    assert rt.randint(low=1, high=2, size=(3,)).tolist() == [1, 1, 1]
    assert rt.randint(high=1, size=(2,)).tolist() == [0, 0]
    assert rt.randint(5, (3,), dtype=rt.float32).dtype is rt.float32
    same = [rt.randint(0, 100, (5,), generator=rt.Generator().manual_seed(9)).tolist()
            for _ in range(2)]
    assert same[0] == same[1]


def test_size_keywords() -> None:
    assert rt.zeros(size=(2,)).tolist() == [0.0, 0.0]
    assert rt.ones(size=[2, 1]).shape == (2, 1)
    assert rt.empty(size=(0,)).shape == (0,)
    assert rt.rand(size=(2,)).shape == (2,) and rt.randn(size=(3,)).shape == (3,)
    f = rt.full(size=(2,), fill_value=3)
    assert f.tolist() == [3, 3] and f.dtype is rt.int64
    assert rt.full((2,), True).dtype is rt.bool and rt.full((2,), 1.5).dtype is rt.float32


def test_generator_state_round_trips() -> None:
    g = rt.Generator()
    assert g.initial_seed() == 67280421310721  # PyTorch's seed of a new generator
    g.manual_seed(11)
    assert g.initial_seed() == 11
    rt.rand(3, generator=g)
    state = g.get_state()
    assert state.dtype is rt.uint8 and state.ndim == 1  # PyTorch's ByteTensor
    first = rt.randn(5, generator=g).tolist(), rt.randint(0, 10, (4,), generator=g).tolist()
    g.set_state(state)
    assert (rt.randn(5, generator=g).tolist(), rt.randint(0, 10, (4,), generator=g).tolist()) \
        == first
    other = rt.Generator().manual_seed(99)
    other.set_state(state)
    assert rt.randn(5, generator=other).tolist() == first[0]
    saved = rt.get_rng_state()
    draws = rt.rand(4).tolist()
    rt.set_rng_state(saved)
    assert rt.rand(4).tolist() == draws
    rt.manual_seed(5)
    assert rt.initial_seed() == 5
    with pytest.raises(TypeError, match="RNG state must be a torch.ByteTensor"):
        g.set_state(rt.zeros(3, dtype=rt.int64))
    with pytest.raises(RuntimeError, match="CPUGeneratorImplState of size 5056 but found the "
                       "input RNG state size to be 3"):
        g.set_state(rt.zeros(3, dtype=rt.uint8))


# --- 4. dtype inference -----------------------------------------------------------------------


@pytest.mark.parametrize("data,dtype", [
    (np.float64(1.5), rt.float64), ([np.float64(1.5)], rt.float64), (np.float32(1.5), rt.float32),
    ([1.5, np.float64(2)], rt.float64), ([[np.float64(2)], [1.5]], rt.float64),
    ([1, np.float64(2)], rt.float64), ([np.int64(1), 2.5], rt.float32), ([True, 2.5], rt.float32),
    ([np.float16(1)], rt.float16), ([np.float16(1), 1.5], rt.float32), (1.5, rt.float32),
    ([rt.tensor(1.0, dtype=rt.float64)], rt.float64), (np.ones(2), rt.float64),
])
def test_float_dtype_inference(data: Any, dtype: rt.dtype) -> None:
    assert rt.tensor(data).dtype is dtype
    torch = _torch()
    converted = [torch.tensor(1.0, dtype=torch.float64)] if isinstance(data, list) and any(
        isinstance(v, rt.Tensor) for v in data) else data
    assert str(torch.tensor(converted).dtype) == f"torch.{dtype.name}"


def test_int_is_int32() -> None:  # PyTorch's Tensor.int(), now that the runtime has int32
    assert rt.ones(2).int().dtype is rt.int32
    assert "int32" in rt.Tensor.int.__doc__


# --- a compiled step ----------------------------------------------------------------------------


def _step(x: rt.Tensor, idx: rt.Tensor) -> Any:
    y = (x.prod(1) + x.cumprod(0).sum(0)[:3]).sum()
    y = y + x.scatter_reduce(1, idx, x[:, :2] * 2, "amax").sum()
    y = y + x.scatter_reduce(1, idx, x[:, :2], "mean", include_self=False).sum()
    y = y + x.diagonal().sum() + rt.take_along_dim(x, idx, 1).sum()
    y = y + x.div(0.7, rounding_mode="floor").sum() + x.div(0.7, rounding_mode="trunc").sum()
    y = y + rt.mv(x, x[0]).sum() + rt.broadcast_tensors(x[:, :1], x[0])[0].sum()
    y.backward()
    return y, x.grad


def test_new_ops_in_a_compiled_step_equal_eager() -> None:
    r = np.random.default_rng(0)
    data = r.standard_normal((3, 3))
    data[1, 1] = 0.0
    idx = rt.tensor([[0, 2], [1, 1], [2, 0]])
    eager_x, comp_x = (rt.tensor(data, requires_grad=True) for _ in range(2))
    expected = _step(eager_x, idx)
    step = planner.compile(_step)
    for _ in range(2):
        comp_x.grad = None
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # a fallback to eager warns
            got = step(comp_x, idx)
        for a, e in zip(got, expected, strict=True):
            np.testing.assert_allclose(a.detach().numpy(), e.detach().numpy(), rtol=1e-12,
                                       atol=1e-12)
    assert step.captures == 1


def test_data_dependent_ops_break_a_capture() -> None:
    def step(x: rt.Tensor) -> rt.Tensor:
        return x.masked_select(x > 0).sum() + x.nonzero().shape[0]

    x = rt.tensor([[1.0, -1.0], [2.0, 0.0]])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert planner.compile(step)(x).item() == 6.0  # 1 + 2, and three nonzeros


@pytest.mark.parametrize(("fn", "shapes"), [("mm", ((2, 2), (2, 2))), ("bmm", ((1, 2, 2), (1, 2, 2))),
                                            ("matmul", ((2, 2), (2, 2)))])
def test_product_dtype_mismatch_texts(fn: str, shapes: Any) -> None:
    want = {"mm": "expected m1 and m2 to have the same dtype, but got: float != double",
            "matmul": "expected m1 and m2 to have the same dtype, but got: float != double",
            "bmm": "expected scalar type Float but found Double"}[fn]
    a, b = rt.ones(*shapes[0]), rt.ones(*shapes[1], dtype=rt.float64)
    with pytest.raises(RuntimeError) as got:
        getattr(rt, fn)(a, b)
    assert str(got.value) == want
    if importlib.util.find_spec("torch") is not None:
        import torch

        with pytest.raises(RuntimeError) as ref:
            getattr(torch, fn)(torch.ones(*shapes[0]), torch.ones(*shapes[1], dtype=torch.float64))
        assert str(ref.value) == want


def test_unflatten_checks_its_dim() -> None:
    assert rt.nn.Unflatten(-1, (2, 2))(rt.ones(3, 4)).shape == (3, 2, 2)
    with pytest.raises(IndexError, match=r"expected to be in range of \[-2, 1\], but got 5"):
        rt.nn.Unflatten(5, (2, 2))(rt.ones(3, 4))


NAN = float("nan")


def _value_and_grad(fn: Any, values: list[Any], lib: Any) -> tuple[np.ndarray, np.ndarray]:
    x = lib.tensor(values, requires_grad=True)
    y = fn(x)
    y.sum().backward()
    return y.detach().numpy(), x.grad.numpy()


@pytest.mark.parametrize("name", ["relu", "threshold"])
def test_relu_and_threshold_keep_nan(name: str) -> None:
    """PyTorch's ``x <= t ? v : x``: NaN passes through (a diverging run shows its NaN loss),
    and so does its gradient."""
    def fn(lib: Any) -> Any:
        if name == "relu":
            return lib.relu
        return lambda x: lib.nn.functional.threshold(x, 0.5, -3.0)

    values = [NAN, -1.0, 0.0, 0.5, 2.0]
    y, g = _value_and_grad(fn(rt), values, rt)
    want_y = [NAN, 0.0, 0.0, 0.5, 2.0] if name == "relu" else [NAN, -3.0, -3.0, -3.0, 2.0]
    np.testing.assert_array_equal(y, np.array(want_y, np.float32))
    np.testing.assert_array_equal(g, [1.0, 0.0, 0.0, 1.0 if name == "relu" else 0.0, 1.0])
    if importlib.util.find_spec("torch") is not None:
        import torch

        ty, tg = _value_and_grad(fn(torch), values, torch)
        np.testing.assert_array_equal(y, ty)
        np.testing.assert_array_equal(g, tg)


@pytest.mark.parametrize("fn", ["max", "min"])
@pytest.mark.parametrize("keepdim", [False, True])
def test_max_min_over_a_dim_give_the_gradient_to_the_returned_index(fn: str,
                                                                    keepdim: bool) -> None:
    """Ties: the whole gradient goes to the element whose index is returned (amax and
    max() without a dim share it, as PyTorch's do)."""
    values = [[3.0, 1.0, 3.0], [0.0, 0.0, 1.0], [2.0, NAN, 2.0]]
    x = rt.tensor(values, requires_grad=True)
    v, i = getattr(x, fn)(1, keepdim=keepdim)
    v.sum().backward()
    grad = np.zeros((3, 3), np.float32)
    grad[np.arange(3), i.numpy().reshape(3)] = 1.0
    np.testing.assert_array_equal(x.grad.numpy(), grad)
    assert grad.sum(1).tolist() == [1.0, 1.0, 1.0]
    if importlib.util.find_spec("torch") is not None:
        import torch

        t = torch.tensor(values, requires_grad=True)
        tv, ti = getattr(t, fn)(1, keepdim=keepdim)
        tv.sum().backward()
        np.testing.assert_array_equal(i.numpy(), ti.numpy())
        np.testing.assert_array_equal(v.detach().numpy(), tv.detach().numpy())
        np.testing.assert_array_equal(x.grad.numpy(), t.grad.numpy())


def test_descending_sorts_and_topk_put_nan_first() -> None:
    values = [1.0, NAN, 3.0, 3.0, NAN, -np.inf, np.inf]
    s = rt.tensor(values).sort(descending=True)
    assert s.indices.tolist() == [1, 4, 6, 2, 3, 0, 5]
    assert rt.tensor(values).argsort(descending=True).tolist() == [1, 4, 6, 2, 3, 0, 5]
    assert rt.tensor(values).sort().indices.tolist() == [5, 0, 2, 3, 6, 1, 4]
    top = rt.tensor(values).topk(3)
    assert top.indices.tolist() == [1, 4, 6]
    m = np.array([[1.0, NAN, 3.0], [NAN, 2.0, NAN]])
    assert rt.tensor(m).argsort(dim=1, descending=True).tolist() == [[1, 2, 0], [0, 2, 1]]
    assert rt.tensor(m).argsort(dim=0, descending=True).tolist() == [[1, 0, 1], [0, 1, 0]]
    if importlib.util.find_spec("torch") is not None:
        import torch

        ts = torch.tensor(values).sort(descending=True, stable=True)
        assert ts.indices.tolist() == s.indices.tolist()
        assert torch.tensor(values).topk(3).indices.tolist() == top.indices.tolist()


@pytest.mark.parametrize(("rt_fn", "xs", "want"), [
    (lambda x, lib: x ** 0, [0.0, 2.0], [0.0, 0.0]),
    (lambda x, lib: x ** lib.tensor([0.0, 1.0]), [0.0, 2.0], [0.0, 1.0]),
    (lambda x, lib: 0.0 ** x, [0.0, 2.0], [0.0, 0.0]),
    (lambda x, lib: 0.0 ** x, [-1.0, 2.0], [-np.inf, 0.0]),
    (lambda x, lib: (-2.0) ** x, [1.0, 2.0], [NAN, NAN]),
    (lambda x, lib: 2.0 ** x, [1.0, 2.0], [2 * np.log(2), 4 * np.log(2)]),
])
def test_pow_gradients_at_zero_and_negative_bases(rt_fn: Any, xs: list[float],
                                                  want: list[float]) -> None:
    """PyTorch's conventions: d(x**0)/dx = 0 at x = 0; d(0**e)/de = 0 for e >= 0; a negative
    scalar base gives nan (it raised 'math domain error')."""
    with np.errstate(all="ignore"):
        _, g = _value_and_grad(lambda x: rt_fn(x, rt), xs, rt)
    np.testing.assert_allclose(g, np.array(want, np.float32), rtol=1e-6)
    if importlib.util.find_spec("torch") is not None:
        import torch

        _, tg = _value_and_grad(lambda x: rt_fn(x, torch), xs, torch)
        np.testing.assert_allclose(g, tg, rtol=1e-6)


@pytest.mark.parametrize(("name", "kwargs", "want_grad"), [
    ("relu6", {}, [1.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0]),
    ("hardtanh", {}, [1.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0]),
    ("elu", {}, None), ("celu", {"alpha": 0.5}, None), ("selu", {}, None),
])
def test_clamping_and_exponential_activations_pass_the_gradient_at_nan(
        name: str, kwargs: dict[str, Any], want_grad: list[float] | None) -> None:
    """PyTorch's backwards test ``x <= lo`` / ``x >= hi`` (or ``x <= 0``): a NaN is in
    neither, so it gets the identity branch's gradient (1; selu's scale), where it got 0; values
    stay NaN."""
    values = [NAN, -7.0, -1.0, 0.0, 1.0, 6.0, 7.0]
    fn = getattr(rt.nn.functional, name)
    y, g = _value_and_grad(lambda x: fn(x, **kwargs), values, rt)
    assert np.isnan(y[0]) and g[0] == np.float32(1.0507009873554805 if name == "selu" else 1.0)
    if want_grad is not None:
        np.testing.assert_array_equal(g, want_grad)
    if importlib.util.find_spec("torch") is not None:
        import torch

        ty, tg = _value_and_grad(lambda x: getattr(torch.nn.functional, name)(x, **kwargs),
                                 values, torch)
        np.testing.assert_allclose(y, ty, rtol=1e-6, equal_nan=True)
        np.testing.assert_allclose(g, tg, rtol=1e-4, atol=1e-8)
