"""Differential parity against PyTorch for tensor ops and free functions (issue 11, item 2):
cases an earlier sweep left uncovered, each of which once differed from PyTorch."""

from __future__ import annotations

import numpy as np
import pytest

import runtime as rt

torch = pytest.importorskip("torch")


def _np(t: object) -> np.ndarray:
    return np.asarray(t.detach().numpy())  # type: ignore[attr-defined]


def _error(fn: object, lib: object) -> tuple[type, str]:
    try:
        fn(lib)  # type: ignore[operator]
    except Exception as e:  # noqa: BLE001
        return type(e), str(e)
    raise AssertionError("no error")


def test_split_negative_size_is_pytorchs_error_before_the_sum() -> None:
    def f(lib: object) -> object:
        return lib.split(lib.zeros(7, 4), [8, -1])  # type: ignore[attr-defined]

    (te, tm), (re, rm) = _error(f, torch), _error(f, rt)
    assert re is te and rm == tm


@pytest.mark.parametrize("dim", [0, 1])
def test_chunk_of_an_empty_dimension_gives_chunks_pieces(dim: int) -> None:
    shape = (0, 2) if dim == 0 else (2, 0)
    x = torch.zeros(shape, requires_grad=True)
    y = rt.zeros(shape, requires_grad=True)
    want, got = torch.chunk(x, 3, dim), rt.chunk(y, 3, dim)
    assert [tuple(p.shape) for p in got] == [tuple(p.shape) for p in want]
    assert type(got[0].grad_fn).__name__ == type(want[0].grad_fn).__name__
    torch.cat(want, dim).sum().backward()
    rt.cat(got, dim).sum().backward()
    assert tuple(y.grad.shape) == tuple(x.grad.shape)


def test_number_remainder_by_tensor_has_no_derivative() -> None:
    x = torch.tensor([7.0, 3.0, 2.0], requires_grad=True)
    y = rt.tensor([7.0, 3.0, 2.0], requires_grad=True)
    want, got = 2.0 % x, 2.0 % y
    np.testing.assert_array_equal(_np(got), _np(want))
    assert type(got.grad_fn).__name__ == type(want.grad_fn).__name__
    (te, tm) = _error(lambda _: want.sum().backward(), torch)
    (re, rm) = _error(lambda _: got.sum().backward(), rt)
    assert re is te and rm == tm
    # the tensor-first remainder keeps its derivative
    got2 = rt.remainder(y, 2.0)
    got2.sum().backward()
    np.testing.assert_array_equal(_np(y.grad), [1.0, 1.0, 1.0])


@pytest.mark.parametrize("dtype,values,number", [
    ("uint8", [7, 3, 0, 2, 9], -2), ("int8", [7, -3, 2, -9, 0], 200)])
def test_div_trunc_integer_by_number_takes_the_number_in_the_tensors_dtype(
        dtype: str, values: list[int], number: int) -> None:
    want = torch.div(torch.tensor(values, dtype=getattr(torch, dtype)), number,
                     rounding_mode="trunc")
    got = rt.div(rt.tensor(values, dtype=getattr(rt, dtype)), number, rounding_mode="trunc")
    assert str(got.dtype).split(".")[-1] == str(want.dtype).split(".")[-1]
    np.testing.assert_array_equal(_np(got), _np(want))


@pytest.mark.parametrize("fn", ["any", "all"])
@pytest.mark.parametrize("dims", [(), []])
@pytest.mark.parametrize("dtype", ["float32", "uint8", "bool"])
def test_any_all_over_no_dims_reduce_nothing(fn: str, dims: object, dtype: str) -> None:
    values = np.array([[0.0, 1.0, 2.0], [0.0, 0.0, 0.0]])
    for keepdim in (False, True):
        want = getattr(torch, fn)(torch.tensor(values).to(getattr(torch, dtype)), dims, keepdim)
        got = getattr(rt, fn)(rt.tensor(values).to(getattr(rt, dtype)), dims, keepdim)
        assert str(got.dtype).split(".")[-1] == str(want.dtype).split(".")[-1]
        np.testing.assert_array_equal(_np(got), _np(want))


def test_svdvals_gradient_at_a_zero_singular_value_of_a_non_square_matrix() -> None:
    values = np.array([[0.0, 0.0, 0.0], [1.0, -2.0, 0.0]])
    for f in (lambda lib, a: lib.linalg.svdvals(a).sum(),
              lambda lib, a: lib.linalg.svdvals(a.t()).sum(),
              lambda lib, a: lib.linalg.matrix_norm(a, 2),
              lambda lib, a: lib.linalg.matrix_norm(a.t(), "nuc"),
              lambda lib, a: lib.linalg.matrix_norm(a, -2, dim=(-1, -2), keepdim=True).sum()):
        x = torch.tensor(values, requires_grad=True)
        y = rt.tensor(values, requires_grad=True)
        f(torch, x).backward()
        f(rt, y).backward()
        np.testing.assert_allclose(_np(y.grad), _np(x.grad), rtol=1e-6, atol=1e-7)


_NORM_CASES = [
    lambda L, x, x3: L.norm(x, "nuc"),
    lambda L, x, x3: L.norm(x, "nuc", keepdim=True),
    lambda L, x, x3: L.norm(x3, "nuc", dim=(0, 2)),
    lambda L, x, x3: L.norm(x, "nuc", dtype=L.float64),
    lambda L, x, x3: L.norm(x, p=None),
    lambda L, x, x3: L.norm(x, None, 1, True),
    lambda L, x, x3: x.norm(None),
    lambda L, x, x3: L.norm(x3, "nuc"),
    lambda L, x, x3: L.norm(x, "nuc", dim=1),
    lambda L, x, x3: L.norm(x, "fro", dim=(0, 1, 0)),
    lambda L, x, x3: L.norm(x, "abc"),
    lambda L, x, x3: L.norm(x, []),
    lambda L, x, x3: L.norm(x, 2, dtype=L.half),
    lambda L, x, x3: L.linalg.vector_norm(x, dtype=L.half),
    lambda L, x, x3: L.linalg.vector_norm(x, dtype=L.long),
    lambda L, x, x3: L.linalg.vector_norm(L.arange(4), dtype=L.float32),
    lambda L, x, x3: L.linalg.vector_norm(x, "fro"),
    lambda L, x, x3: L.linalg.vector_norm(L.zeros(0, 3), -1),
    lambda L, x, x3: L.linalg.vector_norm(L.zeros(0, 3), -0.5),
    lambda L, x, x3: L.linalg.vector_norm(L.zeros(0, 3), -1, 0),
    lambda L, x, x3: L.linalg.matrix_norm(x, dim=(1, -1)),
    lambda L, x, x3: L.linalg.matrix_norm(x, dim=(1,)),
    lambda L, x, x3: L.linalg.matrix_norm(x, dim=(0, 1, 2)),
    lambda L, x, x3: L.linalg.matrix_norm(L.ones(2, 2, dtype=L.long), dtype=L.float32),
    lambda L, x, x3: L.linalg.matrix_norm(x, dtype=L.half),
    lambda L, x, x3: L.linalg.matrix_norm(x.half(), 2),
    lambda L, x, x3: L.linalg.matrix_norm(x.half(), "nuc"),
    lambda L, x, x3: L.linalg.norm(x, dim=(0, 1, 1)),
    lambda L, x, x3: L.linalg.norm(L.ones(2, 2, 2), "nuc"),
    lambda L, x, x3: L.linalg.norm(x, "fro", dim=1),
    lambda L, x, x3: L.linalg.norm(x[0], "fro"),
    lambda L, x, x3: L.linalg.norm(x, "fro", dim=(0, 1), dtype=L.half),
    lambda L, x, x3: L.logsumexp(x, None),
]


@pytest.mark.parametrize("case", range(len(_NORM_CASES)))
def test_norm_options_and_errors_as_pytorchs(case: int) -> None:
    """torch.norm's routing (a string p other than "fro" is linalg.matrix_norm's, None is 2),
    the norms' dtype and dim checks and their texts, and no identity over no elements."""
    results = []
    for lib in (torch, rt):
        x = lib.tensor([[1.0, -2.0, 3.0, 0.0], [0.5, 2.0, -1.0, 4.0], [3.0, 3.0, -3.0, 1.0]])
        x3 = lib.arange(24.0).reshape(2, 3, 4) % 5
        try:
            v = _NORM_CASES[case](lib, x, x3)
            results.append(("ok", str(v.dtype).split(".")[-1], tuple(v.shape),
                            np.round(_np(v).astype(np.float64), 4).tolist()))
        except Exception as e:  # noqa: BLE001
            results.append(("err", type(e).__name__, str(e)))
    assert results[1] == results[0]


def _same_outcome(case: object) -> None:
    """case(lib, x) (x = arange(12.).reshape(3, 4)) gives PyTorch's values and dtype, or its
    error type and text."""
    import warnings

    results = []
    for lib in (torch, rt):
        x = lib.arange(12.0).reshape(3, 4)
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                v = case(lib, x)  # type: ignore[operator]
            results.append(("ok", str(v.dtype).split(".")[-1], tuple(v.shape),
                            _np(v).tolist()))
        except Exception as e:  # noqa: BLE001
            results.append(("err", type(e).__name__, str(e)))
    assert results[1] == results[0]


_INDEX_CASES = [
    # index_add / index_reduce: source's slices must match x's, its dtype x's
    lambda L, x: L.index_add(x, 0, L.tensor([1]), L.ones(1, 3)),
    lambda L, x: L.index_add(x, 0, L.tensor([1]), L.ones(1, 4, 2)),
    lambda L, x: L.index_add(x, 0, L.tensor([1]), L.ones(1, 4, dtype=L.float64)),
    lambda L, x: L.index_add(x, 1, L.tensor([1]), L.ones(4)),
    lambda L, x: L.index_add(x[0], 0, L.tensor(1), L.tensor(3.0)),
    lambda L, x: L.zeros(()).index_add(0, L.tensor([0]), L.ones(()) * 2, alpha=3),
    lambda L, x: L.index_reduce(x, 0, L.tensor([1]), L.ones(1, 3), "prod"),
    lambda L, x: L.index_reduce(x, 0, L.tensor([1, 1]), L.ones(1, 4), "prod"),
    # index_copy: PyTorch's checks, in its order
    lambda L, x: L.index_copy(x, 0, L.tensor([1]), L.ones(1, 3)),
    lambda L, x: L.index_copy(x, 0, L.tensor([1, 2]), L.ones(1, 4)),
    lambda L, x: L.index_copy(x, 0, L.tensor([1]), L.ones(4)),
    lambda L, x: L.index_copy(x, 0, L.tensor([1, 0]), L.ones(())),
    lambda L, x: L.index_copy(x, 0, L.tensor([[1]]), L.ones(1, 4)),
    lambda L, x: L.zeros(3).index_copy(0, L.tensor([1]), L.ones(()) * 2),
    lambda L, x: L.index_fill(x, 0, L.tensor([[1]]), 1.0),
    # masked_scatter: source of x's dtype; out of place, x broadcasts with the mask
    lambda L, x: L.masked_scatter(x, x > 0, L.ones(12, dtype=L.float64)),
    lambda L, x: L.masked_scatter(x[0], x > 0, L.arange(12.0)),
    lambda L, x: L.masked_scatter(x[:1], x[:, :1] > 3, L.arange(12.0)),
    # gather / scatter's shape texts
    lambda L, x: L.gather(x, 1, L.zeros(4, 1, dtype=L.long)),
    lambda L, x: L.scatter(x, 1, L.zeros(4, 1, dtype=L.long), 1.0),
    lambda L, x: L.scatter(x, 1, L.zeros(1, 2, dtype=L.long), L.ones(1, 1)),
    lambda L, x: L.scatter_add(x, 1, L.zeros(1, 2, dtype=L.long), L.ones(1, 1)),
    lambda L, x: L.scatter(x, 0, L.zeros(1, 1, dtype=L.long), L.tensor(1.0)),
    lambda L, x: L.scatter(x, 1, L.zeros(2, 2, dtype=L.long), L.ones(2)),
    lambda L, x: L.scatter(x, 1, L.zeros(0, dtype=L.long), L.ones(1, 1)),
    # scatter_reduce takes "max" and "min" as amax and amin
    lambda L, x: L.scatter_reduce(x, 0, L.tensor([[0]]), L.ones(1, 1) * 100, "max"),
    lambda L, x: L.scatter_reduce(x, 0, L.tensor([[0, 0]]), L.tensor([[-5.0, 7.0]]), "min",
                                  include_self=False),
    # an in-place write whose broadcast shape is larger than x's
    lambda L, x: x[0].clone().masked_fill_(x > 0, 1.0),
    lambda L, x: x[0].clone().clamp_(x),
    lambda L, x: x[0].clone().copy_(x),
]


@pytest.mark.parametrize("case", range(len(_INDEX_CASES)))
def test_index_ops_shapes_dtypes_and_errors_as_pytorchs(case: int) -> None:
    _same_outcome(_INDEX_CASES[case])


def test_scatter_reduce_max_has_no_derivative() -> None:
    def run(lib: object) -> tuple[str, tuple[type, str]]:
        x = lib.arange(12.0).reshape(3, 4).requires_grad_()  # type: ignore[attr-defined]
        y = lib.scatter_reduce(x, 0, lib.tensor([[0, 0]]),  # type: ignore[attr-defined]
                               lib.tensor([[100.0, -1.0]]), "max")
        return type(y.grad_fn).__name__, _error(lambda _: y.sum().backward(), lib)

    (tn, (te, tm)), (rn, (re, rm)) = run(torch), run(rt)
    assert rn == tn and re is te and rm == tm


_REPEAT_CASES = [
    lambda L, x: x.repeat(-1, 1),
    lambda L, x: x.repeat(2, -1),
    lambda L, x: L.zeros(0, 3).repeat(-1, 1),
    lambda L, x: x.tile((-1,)),
    lambda L, x: x.repeat_interleave(-1),
    lambda L, x: x.repeat_interleave(2, 0, output_size=5),
    lambda L, x: x.repeat_interleave(L.tensor([1, 2, 0]), 0, output_size=2),
    # a NaN mode is at a NaN (its index was -1)
    lambda L, x: L.mode(L.tensor([[3.0, 1.0, float("nan"), 1.0]]), 0)[1],
    lambda L, x: L.mode(L.tensor([float("nan")] * 3))[1],
]


@pytest.mark.parametrize("case", range(len(_REPEAT_CASES)))
def test_repeat_and_mode_as_pytorchs(case: int) -> None:
    _same_outcome(_REPEAT_CASES[case])


@pytest.mark.parametrize("repeats", [[2], 2])
def test_repeat_interleave_by_a_tensor_is_an_index_select(repeats: object) -> None:
    names = []
    for lib in (torch, rt):
        x = lib.arange(12.0).reshape(3, 4).requires_grad_()
        y = x.repeat_interleave(lib.tensor(repeats), 0)
        y.sum().backward()
        names.append((type(y.grad_fn).__name__, _np(y.detach()).tolist(), _np(x.grad).tolist()))
    assert names[1] == names[0]


_PRODUCT_CASES = [
    # the sublist format
    lambda L, x: L.einsum(x, [0, 1], L.ones(4, 2), [1, 2]),
    lambda L, x: L.einsum(x, [30, 1], L.ones(4, 2), [1, 2]),
    lambda L, x: L.einsum(x, [Ellipsis, 1], [1]),
    lambda L, x: L.einsum(x, [0, 1], L.ones(4, 2), [1, 52]),
    # the output's subscripts checked
    lambda L, x: L.einsum("ij,jk->il", x, L.ones(4, 2)),
    lambda L, x: L.einsum("ij->ii", x),
    lambda L, x: L.einsum("ij->i.", x),
    # outer / addr take vectors only
    lambda L, x: L.outer(x, L.ones(4)),
    lambda L, x: L.outer(L.ones(3), x),
    lambda L, x: L.addr(L.zeros(3, 2), L.ones(3, 1), L.ones(2)),
]


@pytest.mark.parametrize("case", range(len(_PRODUCT_CASES)))
def test_einsum_and_outer_as_pytorchs(case: int) -> None:
    _same_outcome(_PRODUCT_CASES[case])


_ADD_PRODUCTS = {
    "addmm": lambda L, c, beta, alpha: L.addmm(c(3, 5), L.ones(3, 4), L.ones(4, 5),
                                              beta=beta, alpha=alpha),
    "addmm_bcast": lambda L, c, beta, alpha: L.addmm(c(5), L.ones(3, 4), L.ones(4, 5),
                                                    beta=beta, alpha=alpha),
    "addmv": lambda L, c, beta, alpha: L.addmv(c(3), L.ones(3, 4), L.ones(4), beta=beta,
                                              alpha=alpha),
    "addr": lambda L, c, beta, alpha: L.addr(c(4, 3), L.ones(4), L.ones(3), beta=beta,
                                            alpha=alpha),
    "baddbmm": lambda L, c, beta, alpha: L.baddbmm(c(3, 1), L.ones(2, 3, 4), L.ones(2, 4, 5),
                                                  beta=beta, alpha=alpha),
    "addbmm": lambda L, c, beta, alpha: L.addbmm(c(3, 5), L.ones(2, 3, 4), L.ones(2, 4, 5),
                                                beta=beta, alpha=alpha),
}


@pytest.mark.parametrize("op", sorted(_ADD_PRODUCTS))
@pytest.mark.parametrize("beta,alpha", [(0, 1), (0, 2.5), (2, 3)])
def test_add_product_family_node_and_input_gradient(op: str, beta: float, alpha: float) -> None:
    """beta * input + alpha * product is one node of PyTorch's name; with beta 0 the input's
    values (NaN here) are ignored, and its gradient is zeros (it was None)."""
    results = []
    for lib in (torch, rt):
        leaves = []

        def c(*shape: int, lib: object = lib) -> object:
            t = lib.full(shape, float("nan") if beta == 0 else 1.5,  # type: ignore[attr-defined]
                         requires_grad=True)
            leaves.append(t)
            return t

        y = _ADD_PRODUCTS[op](lib, c, beta, alpha)
        y.sum().backward()
        results.append((type(y.grad_fn).__name__, _np(y).tolist(),
                        None if leaves[0].grad is None else _np(leaves[0].grad).tolist()))
    assert results[1] == results[0]


_CREATION_CASES = [
    # integer logspace: the ends truncated, the powers truncated (they were rounded)
    lambda L, x: L.logspace(0, 2, 4, dtype=L.int64),
    lambda L, x: L.logspace(0, 3, 7, base=2, dtype=L.int32),
    lambda L, x: L.logspace(0.5, 2.5, 3, dtype=L.int64),
    lambda L, x: L.logspace(-2, 5.5, 33, base=0.5, dtype=L.uint8),
    # float logspace: PyTorch's kernel's exponents, bit for bit
    lambda L, x: L.logspace(0.1, 1.3, 7, dtype=L.float16),
    lambda L, x: L.logspace(0.1, 1.3, 7, dtype=L.bfloat16).float(),
    lambda L, x: L.logspace(0.1, 1.3, 7),
    lambda L, x: L.logspace(-2, 5.5, 33, dtype=L.float64),
    lambda L, x: L.logspace(0, 1, 3, dtype=L.bool),
    lambda L, x: L.linspace(0, 1, 3, dtype=L.bool),
    lambda L, x: L.linspace(L.tensor([0.0]), 1, 3),
    lambda L, x: L.linspace(L.tensor([0.0]), L.tensor([1.0]), 3),
    lambda L, x: L.arange(5, dtype=L.bool),
    lambda L, x: L.arange(float("nan")),
    lambda L, x: L.arange(float("-inf"), 0),
    lambda L, x: L.arange(0, 1, float("nan")),
    lambda L, x: L.randn(2, dtype=L.int64),
    lambda L, x: L.rand(2, dtype=L.uint8),
    lambda L, x: L.randn_like(L.ones(2, dtype=L.bool)),
    lambda L, x: L.randint(0, 300, (2,), dtype=L.uint8),
    lambda L, x: L.randint(-1, 3, (2,), dtype=L.uint8),
    lambda L, x: L.randint(0, 3, (2,), dtype=L.bool),
    lambda L, x: L.randint_like(L.ones(2, dtype=L.int8), -200, 5),
    # layout=, pin_memory=, memory_format= taken (row-major storage here)
    lambda L, x: L.zeros_like(x, memory_format=L.preserve_format),
    lambda L, x: L.ones_like(x.t(), memory_format=L.contiguous_format),
    lambda L, x: L.empty_like(x, memory_format=L.preserve_format).shape and L.ones(1),
    lambda L, x: L.full_like(x, 2.0, memory_format=L.preserve_format, requires_grad=True),
    lambda L, x: L.zeros_like(x, memory_format="a"),
    lambda L, x: L.empty_like(x, memory_format=L.channels_last),
    lambda L, x: L.zeros(2, layout=L.strided, pin_memory=False),
    lambda L, x: L.empty(1, 2, 1, 1, memory_format=L.channels_last).shape and L.ones(1),
    lambda L, x: L.full((2,), 1.0, layout=L.strided),
    lambda L, x: L.arange(3, layout=L.strided),
    lambda L, x: L.linspace(0, 1, 3, layout=L.strided),
    lambda L, x: L.eye(2, layout=L.strided),
    lambda L, x: L.clone(x.t(), memory_format=L.contiguous_format),
    lambda L, x: x.clone(memory_format=L.channels_last),
    lambda L, x: x.clone(memory_format=1),
]


@pytest.mark.parametrize("case", range(len(_CREATION_CASES)))
def test_creation_as_pytorchs(case: int) -> None:
    _same_outcome(_CREATION_CASES[case])


_PROMOTION_CASES = [
    # a half's or bfloat16's pow by a number out of its range is PyTorch's overflow error
    lambda L, x: x.half() ** 1e5,
    lambda L, x: L.pow(x.half(), -70000.0),
    lambda L, x: x.bfloat16() ** 1e39,
    lambda L, x: x.half().pow_(1e5),
    # where of two bools is bool
    lambda L, x: L.where(x > 3, True, False),
    lambda L, x: L.where(x > 3, False, True),
    # matmul's dtype errors name the tensors' dtypes, after the shape checks
    lambda L, x: x.bfloat16() @ L.ones(4, 2, dtype=L.long),
    lambda L, x: x @ L.ones(3, 2).double(),
    lambda L, x: x.unsqueeze(0) @ L.ones(2, 3, 2).double(),
]


@pytest.mark.parametrize("case", range(len(_PROMOTION_CASES)))
def test_half_pow_where_bools_and_matmul_dtypes_as_pytorchs(case: int) -> None:
    import re

    def outcome(lib: object) -> object:
        x = lib.arange(12.0).reshape(3, 4)  # type: ignore[attr-defined]
        try:
            v = _PROMOTION_CASES[case](lib, x)
            return ("ok", str(v.dtype).split(".")[-1], _np(v.float()).tolist())
        except RuntimeError as e:  # DTypeError, ShapeError: RuntimeErrors
            return ("err", re.sub(r"\\s+", " ", str(e)))

    assert outcome(rt) == outcome(torch)


_DOF_CASES = [
    lambda L: L.var(L.ones(1)),
    lambda L: L.ones(2, 1).std(1),
    lambda L: L.var_mean(L.ones(1))[0],
    lambda L: L.std_mean(L.ones(3), 0, correction=3)[0],
    lambda L: L.var(L.ones(3), correction=5),
]


@pytest.mark.parametrize("case", range(len(_DOF_CASES)))
def test_var_family_warns_of_no_degrees_of_freedom(case: int) -> None:
    """var/std (and var_mean/std_mean, by their own names) warn where the correction leaves
    no degrees of freedom, at the caller's line, as PyTorch."""
    import warnings

    seen = []
    for lib in (torch, rt):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            v = _DOF_CASES[case](lib)
        seen.append((str(_np(v).tolist()), [str(w.message).split(" (Triggered")[0] for w in caught],
                     [w.filename for w in caught]))
    assert seen[1][:2] == seen[0][:2]
    assert seen[1][2] == [__file__]


@pytest.mark.parametrize("inplace", [False, True])
def test_index_copy_with_a_repeated_index_writes_the_last_slice(inplace: bool) -> None:
    """A repeated index writes its last slice (PyTorch's CPU loop; it was their sum), each
    source slice's gradient still its place's; the node is IndexCopyBackward0."""
    results = []
    for lib in (torch, rt):
        x = lib.zeros(2, 5, requires_grad=True)
        s = lib.arange(8.0).reshape(2, 4).requires_grad_()
        index = lib.tensor([1, 3, 1, 1])
        y = x.clone().index_copy_(1, index, s) if inplace else lib.index_copy(x, 1, index, s)
        (y * lib.arange(10.0).reshape(2, 5)).sum().backward()
        results.append((y.grad_fn.name(), _np(y).tolist(), _np(x.grad).tolist(),
                        _np(s.grad).tolist()))
    assert results[1] == results[0]


_ARG_OUT_CASES = [
    lambda L, x: L.argmax(x, 1, out=L.empty(3, dtype=L.long)),
    lambda L, x: L.argmin(x, 0, True, out=L.empty(1, 4, dtype=L.long)),
    lambda L, x: L.argmax(x, 1, out=L.empty(3)),
    lambda L, x: L.argmin(x, out=L.empty((), dtype=L.long)),
]


@pytest.mark.parametrize("case", range(len(_ARG_OUT_CASES)))
def test_argmax_argmin_take_out(case: int) -> None:
    _same_outcome(_ARG_OUT_CASES[case])


@pytest.mark.parametrize("dtype,ord", [("float16", 2), ("float16", 3), ("bfloat16", 0.5),
                                       ("float16", "fro")])
def test_low_precision_norm_accumulates_in_float32(dtype: str, ord: object) -> None:
    """A half's 2-norm of values past 256 was inf (its squares overflowed float16). (The
    gradient, which PyTorch computes in the low precision, is float32's rounded here.)"""
    results = []
    for lib in (torch, rt):
        t = lib.tensor(np.linspace(0, 300, 1000)).to(getattr(lib, dtype)).requires_grad_()
        y = lib.norm(t, ord) if ord == "fro" else lib.linalg.vector_norm(t, ord)
        results.append((str(y.dtype).split(".")[-1], y.grad_fn.name(), float(y.detach())))
    assert results[1] == results[0]


_KEYWORD_CASES = [
    lambda L, x: L.arange(end=3),
    lambda L, x: x.expand(size=(2, 3, 4)),
    lambda L, x: x.expand(size=(2, 3, 4), implicit=True),
    lambda L, x: L.tensor_split(x, tensor_indices_or_sections=L.tensor(2), dim=1)[1],
    lambda L, x: L.tensor_split(x, tensor_indices_or_sections=L.tensor([1, 3]), dim=1)[2],
]


@pytest.mark.parametrize("case", range(len(_KEYWORD_CASES)))
def test_keyword_forms_as_pytorchs(case: int) -> None:
    _same_outcome(_KEYWORD_CASES[case])


_RETURN_TYPE_CASES = {
    "max": lambda L, x: L.max(x, 1), "min": lambda L, x: x.min(0, keepdim=True),
    "sort": lambda L, x: L.sort(x, 1), "topk": lambda L, x: x.topk(2),
    "median": lambda L, x: L.median(x, 1), "nanmedian": lambda L, x: L.nanmedian(x, 0),
    "kthvalue": lambda L, x: L.kthvalue(x, 2), "mode": lambda L, x: x.mode(0),
    "cummax": lambda L, x: L.cummax(x, 1), "cummin": lambda L, x: L.cummin(x, 0),
    "aminmax": lambda L, x: L.aminmax(x, dim=1),
    "sort_out": lambda L, x: L.sort(x, out=(L.empty(0), L.empty(0, dtype=L.long))),
    "max_out": lambda L, x: L.max(x, 1, out=(L.empty(0), L.empty(0, dtype=L.long))),
}


@pytest.mark.parametrize("name", sorted(_RETURN_TYPE_CASES))
def test_multi_result_ops_return_pytorchs_return_types(name: str) -> None:
    """max/sort/topk ... return return_types.<op> (<op>_out with out=), printed as PyTorch's
    (they were MaxResult, MedianResult ... for several ops)."""
    import pickle

    results = []
    for lib in (torch, rt):
        x = lib.tensor([[1.0, 3.0, 2.0], [0.0, 5.0, 1.0]])
        r = _RETURN_TYPE_CASES[name](lib, x)
        assert isinstance(r, getattr(lib.return_types, name))
        assert type(pickle.loads(pickle.dumps(r))) is type(r)
        results.append((type(r).__name__, repr(r).replace(lib.__name__ + ".", "")))
    assert results[1] == results[0]
