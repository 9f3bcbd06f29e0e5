"""PyTorch's test/test_linalg.py, ported by hand for device 'cpu' and float32/float64 (int64
where a test is about ints) with ``import runtime as torch``; NumPy is the oracle where
PyTorch's test uses it, and PyTorch 2.13 (``ref``) where the test is about its error texts.

Left out, as outside this project's scope: CUDA/MAGMA/cuSOLVER/cuBLAS-only tests and
tf32/half/bfloat16 matmul precision settings, complex dtypes (the runtime has none), the
out= variants of functions without out= here, forward-mode AD, torch.jit and the profiler,
and the slow many-batch sizes (the same code paths on a few small batches instead). Not
ported: test_eig*/test_eigvals* and the old torch.eig tests (a general matrix's eigenvalues
are complex: rt's linalg.eig/eigvals raise NotImplementedError), the resize warnings of out=
tests (rt's F.written_to gives them; tested elsewhere), and det's create_graph gradient at a
singular matrix (PyTorch's SVD formula; rt's first-order rule is PyTorch's, tested below).
"""

from __future__ import annotations

import itertools
import math
import warnings
from math import inf, nan
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import runtime as torch
from tests.runtime.test_ported_tensor_ops_h18 import assert_equal, make_tensor


def _ref() -> Any:
    return pytest.importorskip("torch")


def _np(x: Any) -> np.ndarray:
    return x.detach().numpy() if isinstance(x, torch.Tensor) else np.asarray(x)


def _same_error(fn: Any, ref_fn: Any) -> None:
    """``fn`` (runtime) raises what ``ref_fn`` (PyTorch) raises: its type and message text."""
    with pytest.raises(Exception) as want:
        ref_fn()
    linalg_error = type(want.value).__name__ == "_LinAlgError"  # torch.linalg.LinAlgError
    with pytest.raises(torch.linalg.LinAlgError if linalg_error else type(want.value)) as got:
        fn()
    assert str(got.value) == str(want.value)


# ---------------------------------------------------------------- norms


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_norm_vector(dtype: torch.dtype) -> None:
    ord_vector = [0, 1, -1, 2, -2, 3, -3, 4.5, -4.5, inf, -inf]
    S = 6
    cases = [
        ((S,), None),
        ((S,), 0),
        ((S, S, S), 0),
        ((S, S, S), 1),
        ((S, S, S), 2),
        ((S, S, S), -1),
        ((S, S, S), -2),
    ]
    for keepdim in (True, False):
        for size, dim in cases:
            x = torch.randn(*size, dtype=dtype)
            for ord in ord_vector:
                result = torch.linalg.norm(x, ord, dim, keepdim)
                assert result.dtype == dtype
                assert_equal(
                    result,
                    np.linalg.norm(_np(x), ord, dim, keepdim),
                    exact_dtype=False,
                    rtol=1e-5 if dtype == torch.float32 else None,
                )


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_norm_matrix(dtype: torch.dtype) -> None:
    ord_matrix = [1, -1, 2, -2, inf, -inf, "nuc", "fro"]
    S = 5
    cases = [
        ((S, S), None),
        ((S, S), (0, 1)),
        ((S, S), (1, 0)),
        ((3, S, 2, S), (2, 0)),
        ((3, S, 2, S), (-1, -2)),
        ((3, S, 2, S), (-1, -3)),
        ((3, S, 2, S), (-3, 2)),
    ]
    for keepdim in (True, False):
        for size, dim in cases:
            x = torch.randn(*size, dtype=dtype)
            for ord in ord_matrix:
                expected = np.linalg.norm(_np(x), ord, dim, keepdim)
                ops = [torch.linalg.norm] + ([torch.linalg.matrix_norm] if dim else [])
                for op in ops:
                    result = op(x, ord, dim, keepdim) if dim else op(x, ord, dim, keepdim)
                    assert result.dtype == dtype
                    assert_equal(result, expected, exact_dtype=False, rtol=2e-5, atol=2e-5)


def test_norm_dtype() -> None:
    ord_vector = [0, 0.1, -0.1, 1, -1, 2, -2, 3, -3, 4.5, -4.5, inf, -inf, None]
    ord_matrix = ["fro", "nuc", 1, -1, 2, -2, inf, -inf, None]
    dtypes = [torch.float32, torch.float64]
    for keepdim in (True, False):
        for size, ords in (((5,), ord_vector), ((5, 5), ord_matrix)):
            for ord, from_dtype, to_dtype in itertools.product(ords, dtypes, dtypes):
                x = torch.randn(*size, dtype=from_dtype)
                result = torch.linalg.norm(x, ord, keepdim=keepdim)
                assert result.dtype == from_dtype
                if (from_dtype, to_dtype) == (torch.float64, torch.float32):
                    continue  # narrowing: PyTorch's error (below)
                with_dtype = torch.linalg.norm(x, ord, keepdim=keepdim, dtype=to_dtype)
                assert with_dtype.dtype == to_dtype
                assert_equal(result.to(torch.float32), with_dtype.to(torch.float32), rtol=1e-5)
    with pytest.raises(RuntimeError, match="should be convertible without narrowing"):
        torch.linalg.norm(torch.randn(3, dtype=torch.float64), dtype=torch.float32)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_vector_norm(dtype: torch.dtype) -> None:
    """linalg.vector_norm against linalg.norm of the flattened input; an empty input's errors
    for the orders without an identity (negative, inf over an empty dim)."""
    ord_vector = [0, 0.9, 1, 2, 3, inf, -0.5, -1, -2, -3, -inf]
    sizes = [(10,), (4, 5), (3, 4, 5), (0,), (0, 10), (0, 0), (10, 0, 10)]
    for size, ord, keepdim in itertools.product(sizes, ord_vector, (True, False)):
        x = make_tensor(size, dtype)
        for dim in (None, len(size) - 1):
            if x.numel() == 0 and (ord < 0 or ord == inf) and (dim is None or size[dim] == 0):
                with pytest.raises(
                    RuntimeError,
                    match="linalg.vector_norm (of negative order cannot|cannot compute the)",
                ):
                    torch.linalg.vector_norm(x, ord, dim=dim, keepdim=keepdim)
                continue
            flat = x.flatten(0, -1) if dim is None else x
            expected = torch.linalg.norm(flat, ord, dim=dim, keepdim=keepdim)
            if keepdim and dim is None:
                expected = expected.reshape([1] * x.dim())
            result = torch.linalg.vector_norm(x, ord, dim=dim, keepdim=keepdim)
            assert_equal(result, expected)
            for norm_dtype in (torch.float64,):
                assert_equal(
                    torch.linalg.vector_norm(x, ord, dim=dim, keepdim=keepdim, dtype=norm_dtype),
                    torch.linalg.vector_norm(x.to(norm_dtype), ord, dim=dim, keepdim=keepdim),
                )


def test_vector_norm_dim_tuple_arg() -> None:
    """PyTorch's errors for a bad ``dim``; a dim list's bad element named as its parser does
    (by keyword: "not tuple"; a later one: "failed to unpack")."""
    ref = _ref()
    cases = [
        ((4,), (0,), None),
        ((4,), (1,), IndexError),
        ((4,), (-2,), IndexError),
        ((4, 3), (0, -1), None),
        ((4, 3), (0, 0), RuntimeError),
        ((4, 3), (0, -2), RuntimeError),
        ((4, 3), (0, 1.0), TypeError),
        ((4, 3), (None,), TypeError),
        ((4, 3), (1.5,), TypeError),
        ((4, 3), 1.5, TypeError),
    ]
    for size, dim_tuple, error in cases:
        x = torch.randn(size)
        for dim in (dim_tuple, list(dim_tuple)) if isinstance(dim_tuple, tuple) else (dim_tuple,):
            if error is None:
                torch.linalg.vector_norm(x, dim=dim)
                continue
            _same_error(
                lambda: torch.linalg.vector_norm(x, dim=dim),
                lambda: ref.linalg.vector_norm(ref.randn(size), dim=dim),
            )
            _same_error(
                lambda: torch.linalg.vector_norm(x, 2, dim),
                lambda: ref.linalg.vector_norm(ref.randn(size), 2, dim),
            )


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_norm_errors(dtype: torch.dtype) -> None:
    ref = _ref()
    S = 4
    cases = [
        ((S,), ["fro", "nuc"], None),
        ((S, S), [3.5, 0, 3.0], None),
        ((S, S), ["nuc", "fro"], 0),
        ((S, S), ["nuc", "fro", 0], (0, 0)),
        ((S, S), ["fro", "nuc", 0], (0, 4)),
        ((S,), [0], (4,)),
        ((S,), [None], (0, 0)),
        ((S, S, S), [1], (0, 1, 2)),
        ((S, S, S), [1], None),
        ((S, S), ["garbage"], (0, 1)),
    ]
    for keepdim in (True, False):
        for size, ords, dim in cases:
            x = torch.randn(*size, dtype=dtype)
            for ord in ords:
                _same_error(
                    lambda: torch.linalg.norm(x, ord, dim, keepdim),
                    lambda: ref.linalg.norm(ref.randn(*size), ord, dim, keepdim),
                )
                with pytest.raises(Exception):
                    np.linalg.norm(_np(x), ord, dim, keepdim)


def test_vector_norm_extreme_values() -> None:
    """inf, -inf, 0 and nan as NumPy's norms give them: a negative order of infinities is
    inf (their |x| ** ord sum is 0, and 0 ** (1 / ord) inf)."""
    vector_ords = [0, 1, 2, 3, inf, -1, -2, -3, -inf, -0.5]
    for pair in itertools.product([inf, -inf, 0.0, nan, 1.0], repeat=2):
        x = torch.tensor(list(pair))
        for ord in vector_ords:
            assert_equal(
                torch.linalg.vector_norm(x, ord=ord),
                np.linalg.norm(_np(x), ord=ord),
                exact_dtype=False,
            )


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_matrix_norm(dtype: torch.dtype) -> None:
    A = make_tensor((2, 2, 2), dtype)
    with pytest.raises(RuntimeError, match=r"linalg.matrix_norm:.*must have at least 2 dim"):
        torch.linalg.matrix_norm(make_tensor((2,), dtype))
    with pytest.raises(RuntimeError, match=r"linalg.matrix_norm: dim must be a 2-tuple"):
        torch.linalg.matrix_norm(A, dim=(0,))
    with pytest.raises(RuntimeError, match=r"^linalg.matrix_norm: Order 0 not supported.$"):
        torch.linalg.matrix_norm(A, ord=0)
    with pytest.raises(RuntimeError, match=r"^linalg.matrix_norm: Order 3 not supported.$"):
        torch.linalg.matrix_norm(A, ord=3.0)
    assert_equal(torch.linalg.matrix_norm(A), torch.linalg.norm(A, dim=(-2, -1)))


def test_matrix_norm_of_empty_matrices_is_pytorchs() -> None:
    """A positive order's max over no column (row) sums or singular values is 0 in PyTorch;
    a negative order's min raises amin's error, naming the dim as PyTorch's reduction gets it
    (-1 for the singular values; the shifted dim after the first sum without keepdim)."""
    ref = _ref()
    for size in [(0, 3), (3, 0), (0, 0), (2, 0, 3), (2, 3, 0), (0, 2, 3)]:
        for ord, keepdim in itertools.product(
            [1, -1, 2, -2, inf, -inf, "nuc", "fro"], (False, True)
        ):
            try:
                want = ref.linalg.matrix_norm(ref.zeros(size), ord, keepdim=keepdim)
            except IndexError:
                _same_error(
                    lambda: torch.linalg.matrix_norm(torch.zeros(size), ord, keepdim=keepdim),
                    lambda: ref.linalg.matrix_norm(ref.zeros(size), ord, keepdim=keepdim),
                )
                continue
            got = torch.linalg.matrix_norm(torch.zeros(size), ord, keepdim=keepdim)
            assert tuple(got.shape) == tuple(want.shape) and got.dtype == torch.float32
            assert_equal(got, want.numpy())


def test_amax_amin_name_the_empty_dim_as_given() -> None:
    """PyTorch's amax/amin name the first empty reduced dim as given (``dim -1``), before a
    dim named twice; max/argmax name it wrapped."""
    ref = _ref()
    for name in ("amax", "amin", "argmax", "max"):
        for size, dim in [((3, 0), -1), ((3, 0), (0, -1)), ((0,), (-1, 0)), ((2, 0, 0), -1)]:
            if name in ("argmax", "max") and isinstance(dim, tuple):
                continue
            _same_error(
                lambda: getattr(torch.zeros(size), name)(dim),
                lambda: getattr(ref.zeros(size), name)(dim),
            )


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_cond(dtype: torch.dtype) -> None:
    def run_test_case(x: torch.Tensor, p: Any) -> None:
        result = torch.linalg.cond(x, p)
        expected = np.linalg.cond(_np(x), p)
        assert_equal(result, expected, rtol=1e-2, atol=1e-3, exact_dtype=False)
        assert result.shape == expected.shape and result.dtype == dtype

    norm_types = [1, -1, 2, -2, inf, -inf, "fro", "nuc", None]
    for size in [(6, 6), (2, 3, 3, 3)]:
        x = torch.randn(*size, dtype=dtype)
        for p in norm_types:
            run_test_case(x, p)
    for size in [(0, 3, 3), (0, 2, 5, 5)]:
        for p in norm_types:
            run_test_case(torch.randn(*size, dtype=dtype), p)
    for size in [(4, 6), (6, 4), (2, 3, 5, 3), (2, 3, 3, 5)]:
        x = torch.randn(*size, dtype=dtype)
        for p in [2, -2, None]:
            run_test_case(x, p)
    a = torch.eye(3, dtype=dtype)
    a[-1, -1] = 0  # singular: inf, as NumPy's (NumPy's inf for -2 too: S_min / S_max = 0)
    for p in norm_types:
        result = torch.linalg.cond(a, p)
        assert result.item() == (0.0 if p == -2 else inf), p
    for size in [(0, 0), (2, 5, 0, 0)]:  # NumPy has no condition number of 0x0: PyTorch's 0
        for p in ["fro", 2]:
            assert_equal(
                torch.linalg.cond(torch.randn(*size, dtype=dtype), p),
                torch.zeros(size[:-2], dtype=dtype),
            )


def test_cond_errors_and_warnings() -> None:
    ref = _ref()
    norm_types = [1, -1, 2, -2, inf, -inf, "fro", "nuc", None, -1.0, 1.0]
    for p in norm_types:
        _same_error(
            lambda: torch.linalg.cond(torch.ones(3), p), lambda: ref.linalg.cond(ref.ones(3), p)
        )
    for p in [1, -1, inf, -inf, "fro", "nuc", -1.0]:
        _same_error(
            lambda: torch.linalg.cond(torch.ones(3, 2), p),
            lambda: ref.linalg.cond(ref.ones(3, 2), p),
        )
    a = torch.eye(3).reshape((1, 3, 3)).repeat(3, 1, 1)
    a[1, -1, -1] = 0  # a[1] singular: its inf, the others' numbers, not an error
    for p in [1, -1, inf, -inf, "fro", "nuc"]:
        result = torch.linalg.cond(a, p)
        assert result[1].item() == inf and math.isfinite(result[0].item())
    for p in ["wrong_norm", 5, 3.5]:
        _same_error(
            lambda: torch.linalg.cond(torch.ones(3, 3), p),
            lambda: ref.linalg.cond(ref.ones(3, 3), p),
        )


# ---------------------------------------------------------------- products


def test_inner() -> None:
    def check(a_sizes_: list[int], b_sizes_: list[int]) -> None:
        for a_sizes, b_sizes in ((a_sizes_, b_sizes_), (b_sizes_, a_sizes_)):
            a, b = torch.randn(a_sizes), torch.randn(b_sizes)
            assert_equal(
                torch.inner(a, b), np.array(np.inner(_np(a), _np(b))), rtol=1e-6, exact_dtype=False
            )

    check([], [])
    check([], [0])
    check([], [3])
    check([], [2, 3, 4])
    check([0], [0])
    check([0], [2, 0])
    check([2], [2])
    check([2], [3, 1, 2])
    check([2], [3, 0, 2])
    check([1, 2], [3, 2])
    check([1, 2], [3, 4, 2])
    check([2, 1, 3, 2], [1, 3, 2, 2])
    with pytest.raises(
        RuntimeError,
        match=r"^inner\(\) the last dimension must match on both "
        r"input tensors but got shapes \[2, 3\] and \[2, 2\]$",
    ):
        torch.randn(2, 3).inner(torch.randn(2, 2))


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.int64, torch.bool])
def test_outer(dtype: torch.dtype) -> None:
    def run_test_case(a: torch.Tensor, b: torch.Tensor) -> None:
        expected = np.outer(_np(a), _np(b))
        for op in (torch.outer, torch.Tensor.outer, torch.ger, torch.Tensor.ger):
            assert_equal(op(a, b), expected, exact_dtype=False)

    a, b = make_tensor(50, dtype), make_tensor(50, dtype)
    run_test_case(a, b)
    zero_strided = make_tensor(1, dtype).expand(50)
    run_test_case(zero_strided, b)
    run_test_case(a, zero_strided)


def _addr_vs_numpy(dtype: torch.dtype, beta: Any = 1, alpha: Any = 1) -> None:
    def check(m: torch.Tensor, a: torch.Tensor, b: torch.Tensor, beta: Any, alpha: Any) -> None:
        a_np, b_np, m_np = _np(a), _np(b), _np(m)
        if dtype == torch.bool:
            outer = np.outer(a_np, b_np)
            expected = (beta and m_np) | (alpha and outer) if beta else alpha and outer
            expected = np.broadcast_to(np.asarray(expected, dtype=bool), outer.shape)
        elif beta == 0:
            expected = alpha * np.outer(a_np, b_np)
        else:
            expected = beta * m_np + alpha * np.outer(a_np, b_np)
        result = torch.addr(m, a, b, beta=beta, alpha=alpha)
        assert result.dtype == dtype
        assert_equal(result, expected.astype(_np(result).dtype), exact_dtype=False)

    m = make_tensor((50, 50), dtype, low=-2, high=2)
    a = make_tensor((50,), dtype, low=-2, high=2)
    b = make_tensor((50,), dtype, low=-2, high=2)
    check(m, a, b, beta, alpha)
    check(m.transpose(0, 1), a, b, beta, alpha)
    check(m, make_tensor((1,), dtype, low=-2, high=2).expand(50), b, beta, alpha)
    check(torch.tensor(1, dtype=dtype), a, b, beta, alpha)
    if beta == 0 and dtype.is_floating_point:  # nans and infs not propagated when beta == 0
        m[0][10] = m[10][10] = m[20][20] = float("inf")
        m[1][10] = m[11][10] = m[21][20] = float("nan")
    check(m, a, b, 0, alpha)


def test_addr_bool() -> None:
    """A bool addr is (beta and input) or (alpha and the outer product), in bool (rt
    summed them into int64)."""
    for beta, alpha in itertools.product((True, False), repeat=2):
        _addr_vs_numpy(torch.bool, beta=beta, alpha=alpha)
    _addr_vs_numpy(torch.bool, beta=2, alpha=True)


@pytest.mark.parametrize("dtype", [torch.int64, torch.int32, torch.int8])
def test_addr_integral(dtype: torch.dtype) -> None:
    """PyTorch's checks of beta and alpha against an integral result (rt took a float beta
    and returned float)."""
    with pytest.raises(RuntimeError, match="argument beta must not be a floating point number."):
        _addr_vs_numpy(dtype, beta=2.0, alpha=1)
    with pytest.raises(RuntimeError, match="argument alpha must not be a floating point number."):
        _addr_vs_numpy(dtype, beta=2, alpha=1.0)
    with pytest.raises(RuntimeError, match="Boolean beta only supported for Boolean results."):
        _addr_vs_numpy(dtype, beta=True, alpha=1)
    with pytest.raises(RuntimeError, match="Boolean alpha only supported for Boolean results."):
        _addr_vs_numpy(dtype, beta=2, alpha=True)
    _addr_vs_numpy(dtype, beta=0, alpha=2)
    _addr_vs_numpy(dtype, beta=2, alpha=2)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_addr_float(dtype: torch.dtype) -> None:
    with pytest.raises(RuntimeError, match="Boolean beta only supported for Boolean results."):
        _addr_vs_numpy(dtype, beta=True, alpha=1)
    with pytest.raises(RuntimeError, match="Boolean alpha only supported for Boolean results."):
        _addr_vs_numpy(dtype, beta=2, alpha=True)
    _addr_vs_numpy(dtype, beta=0.0, alpha=2)
    _addr_vs_numpy(dtype, beta=0.5, alpha=2)


_DTYPES = [torch.float32, torch.float64, torch.int64, torch.int32, torch.int8, torch.bool]


def test_outer_type_promotion() -> None:
    for d0, d1 in itertools.product(_DTYPES, repeat=2):
        a, b = torch.randn(5).to(d0), torch.randn(5).to(d1)
        for op in (torch.outer, torch.Tensor.outer, torch.ger, torch.Tensor.ger):
            assert op(a, b).dtype == torch.result_type(a, b)


def test_addr_type_promotion() -> None:
    for d0, d1, d2 in itertools.product(_DTYPES, repeat=3):
        a, b = make_tensor((5,), d0, low=-2, high=2), make_tensor((5,), d1, low=-2, high=2)
        m = make_tensor((5, 5), d2, low=-2, high=2)
        desired = torch.promote_types(torch.promote_types(d0, d1), d2)
        for op in (torch.addr, torch.Tensor.addr):
            assert op(m, a, b).dtype == desired


def test_outer_ger_addr_legacy_tests() -> None:
    for size in ((0, 0), (0, 5), (5, 0)):
        a, b = torch.rand(size[0]), torch.rand(size[1])
        assert torch.outer(a, b).shape == size
        assert torch.ger(a, b).shape == size
        assert torch.addr(torch.empty(size), a, b).shape == size
    m, a, b = torch.randn(5, 6), torch.randn(5), torch.tensor(6)
    for fn in (
        lambda: torch.outer(a, b),
        lambda: torch.outer(b, a),
        lambda: torch.ger(a, b),
        lambda: torch.ger(b, a),
        lambda: torch.addr(m, a, b),
        lambda: torch.addr(m, b, a),
    ):
        with pytest.raises(RuntimeError):
            fn()


def test_add_a_product_casts_beta_and_alpha_to_an_integer_result() -> None:
    """addmm/addmv/baddbmm/addbmm of integer tensors stay integer: PyTorch's kernels cast
    beta 2.5 to 2 and alpha 1.7 to 1 (rt promoted to float32 and used 2.5); a bool product's
    kernel error names PyTorch's kernel."""
    ref = _ref()
    rng = np.random.default_rng(0)
    m, v, b3 = (rng.integers(-3, 3, s) for s in ((3, 3), (3,), (2, 3, 3)))
    calls = {"addmm": (m, m, m), "addmv": (v, m, v), "baddbmm": (b3, b3, b3), "addbmm": (m, b3, b3)}
    for name, arrays in calls.items():
        for beta, alpha in [(2.5, 1.7), (-2.5, 0.5), (0, 2), (2, 1)]:
            got = getattr(torch, name)(*map(torch.tensor, arrays), beta=beta, alpha=alpha)
            want = getattr(ref, name)(*map(ref.tensor, arrays), beta=beta, alpha=alpha)
            assert got.dtype == torch.int64
            np.testing.assert_array_equal(_np(got), want.numpy())
        for beta in (True, 2):
            _same_error(
                lambda: getattr(torch, name)(*(torch.tensor(a).bool() for a in arrays), beta=beta),
                lambda: getattr(ref, name)(*(ref.tensor(a).bool() for a in arrays), beta=beta),
            )


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_kron(dtype: torch.dtype) -> None:
    shapes = [(4,), (2, 2), (1, 2, 3), (1, 2, 3, 3)]
    for a_shape, b_shape in itertools.product(shapes, reversed(shapes)):
        a, b = torch.rand(a_shape, dtype=dtype), torch.rand(b_shape, dtype=dtype)
        assert_equal(torch.kron(a, b), np.kron(_np(a), _np(b)), exact_dtype=False)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_kron_empty(dtype: torch.dtype) -> None:
    for empty_shape in [(0,), (2, 0), (1, 0, 3)]:
        a, b = torch.eye(3, dtype=dtype), torch.empty(empty_shape, dtype=dtype)
        expected = np.kron(_np(a), _np(b))
        assert_equal(torch.kron(a, b), expected, exact_dtype=False)
        assert torch.kron(b, a).shape == expected.shape


# ---------------------------------------------------------------- decompositions


def test_det() -> None:
    tensors = (
        torch.randn((2, 2), dtype=torch.float64),
        torch.randn((20, 20), dtype=torch.float64),
        torch.randn((3, 6, 6), dtype=torch.float64),
        torch.randn((4, 2, 5, 5), dtype=torch.float64),
    )
    for t in tensors:
        expected = np.linalg.det(_np(t))
        for op in (torch.det, torch.Tensor.det, torch.linalg.det):
            assert_equal(op(t), expected)
    with pytest.raises(RuntimeError):
        torch.linalg.det(torch.randn(1, dtype=torch.float64))


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_eigh(dtype: torch.dtype) -> None:
    def run_test(shape: int, batch: tuple[int, ...], uplo: str) -> None:
        x = torch.randn(*batch, shape, shape, dtype=dtype)
        matrix = x + x.mT
        expected_w, expected_v = np.linalg.eigh(_np(matrix), UPLO=uplo)
        actual_w, actual_v = torch.linalg.eigh(matrix, UPLO=uplo)
        assert_equal(actual_w, expected_w, rtol=1e-4, atol=1e-4)
        assert_equal(abs(actual_v), abs(expected_v), rtol=1e-4, atol=1e-4)
        if matrix.numel() > 0:
            phase = torch.from_numpy(expected_v[..., 0, :]).div(actual_v[..., 0, :])
            rotated = actual_v * phase.unsqueeze(-2).expand_as(actual_v)
            assert_equal(rotated, expected_v, rtol=1e-4, atol=1e-4)

    for shape, batch, uplo in itertools.product((0, 3, 5), ((), (3,), (2, 2)), ("U", "L")):
        run_test(shape, batch, uplo)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_eigh_lower_uplo(dtype: torch.dtype) -> None:
    """A lower-case UPLO names the same triangle, as PyTorch's (rt raised)."""
    for uplo in ("u", "l"):
        matrix = torch.randn(2, 2, 3, 3, dtype=dtype)  # not symmetric: the triangle matters
        expected_w, expected_v = np.linalg.eigh(_np(matrix), UPLO=uplo)
        actual_w, actual_v = torch.linalg.eigh(matrix, UPLO=uplo)
        assert_equal(actual_w, expected_w, rtol=1e-4, atol=1e-4)
        assert_equal(abs(actual_v), abs(expected_v), rtol=1e-4, atol=1e-4)
        assert_equal(torch.linalg.eigvalsh(matrix, UPLO=uplo), expected_w, rtol=1e-4, atol=1e-4)


def test_eigh_errors_and_warnings() -> None:
    with pytest.raises(RuntimeError, match="must be batches of square matrices"):
        torch.linalg.eigh(torch.randn(2, 3))
    with pytest.raises(RuntimeError, match="must be batches of square matrices"):
        torch.linalg.eigvalsh(torch.randn(2, 3))
    t = torch.randn(3, 3)
    for uplo in ["a", "wrong"]:
        for fn in (torch.linalg.eigh, torch.linalg.eigvalsh):
            with pytest.raises(RuntimeError, match="be 'L' or 'U'"):
                fn(t, UPLO=uplo)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_eigvalsh(dtype: torch.dtype) -> None:
    for shape, batch, uplo in itertools.product((0, 3, 5), ((), (3,), (2, 2)), ("U", "L")):
        x = torch.randn(*batch, shape, shape, dtype=dtype)
        matrix = x + x.mT
        assert_equal(
            torch.linalg.eigvalsh(matrix, UPLO=uplo),
            np.linalg.eigvalsh(_np(matrix), UPLO=uplo),
            rtol=1e-4,
            atol=1e-4,
        )


def _random_spd(n: int, *batch: int, dtype: torch.dtype = torch.float64) -> torch.Tensor:
    x = torch.randn(*batch, n, n, dtype=dtype)
    return x @ x.mT + n * torch.eye(n, dtype=dtype)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_cholesky(dtype: torch.dtype) -> None:
    for shape, batch, contiguous in itertools.product((0, 3, 5), ((), (3,), (2, 2)), (True, False)):
        A = _random_spd(shape, *batch, dtype=dtype)
        if A.numel() > 0 and not contiguous:
            A = A.mT
            assert not A.is_contiguous()
        expected = np.linalg.cholesky(_np(A))
        assert_equal(torch.linalg.cholesky(A), expected, rtol=1e-5, atol=1e-4)
    A = _random_spd(3, 3, dtype=dtype)
    assert_equal(torch.linalg.cholesky(A, upper=True), torch.linalg.cholesky(A).mH)


def test_cholesky_errors_and_warnings() -> None:
    with pytest.raises(RuntimeError, match=r"must be batches of square matrices"):
        torch.linalg.cholesky(torch.randn(2, 3))
    with pytest.raises(RuntimeError, match=r"must be batches of square matrices"):
        torch.linalg.cholesky(torch.randn(2, 2, 3))
    with pytest.raises(RuntimeError, match=r"must have at least 2 dimensions"):
        torch.linalg.cholesky(torch.randn(2))
    A = torch.eye(3, 3)
    A[-1, -1] = 0
    with pytest.raises(
        torch.linalg.LinAlgError, match=r"minor of order 3 is not positive-definite"
    ):
        torch.linalg.cholesky(A)
    A = torch.eye(3, 3).reshape((1, 3, 3)).repeat(5, 1, 1)
    A[4, -1, -1] = 0
    with pytest.raises(
        RuntimeError,
        match=r"\(Batch element 4\): The factorization could not be "
        "completed",
    ):
        torch.linalg.cholesky(A)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_old_cholesky(dtype: torch.dtype) -> None:
    A = _random_spd(6, dtype=dtype)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for upper in (False, True):
            C = torch.cholesky(A, upper)
            B = C.t() @ C if upper else C @ C.t()
            assert_equal(A, B, atol=1e-4 if dtype == torch.float32 else 1e-10, rtol=1e-5)
            batched = _random_spd(3, 2, 3, dtype=dtype)
            assert_equal(
                torch.cholesky(batched, upper=upper),
                torch.stack(
                    [m.cholesky(upper=upper) for m in batched.reshape(-1, 3, 3)]
                ).reshape_as(batched),
            )
        empty = torch.empty(0, 0, dtype=dtype)
        assert_equal(torch.cholesky(empty) @ torch.cholesky(empty).t(), empty)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_cholesky_ex(dtype: torch.dtype) -> None:
    for n, batch in itertools.product((0, 3, 5), ((), (2,), (2, 1))):
        A = _random_spd(n, *batch, dtype=dtype)
        L, info = torch.linalg.cholesky_ex(A)
        assert_equal(L, np.linalg.cholesky(_np(A)), rtol=1e-5, atol=1e-4)
        assert_equal(info, torch.zeros(A.shape[:-2], dtype=torch.int32))


def test_cholesky_ex_non_pd() -> None:
    A = torch.eye(3, 3)
    A[-1, -1] = 0
    _, info = torch.linalg.cholesky_ex(A)
    assert info.item() == 3 and info.dtype == torch.int32
    with pytest.raises(RuntimeError, match=r"minor of order 3 is not positive-definite"):
        torch.linalg.cholesky_ex(A, check_errors=True)
    A = torch.eye(3, 3).reshape((1, 3, 3)).repeat(5, 1, 1)
    A[3, -2, -2] = 0
    _, info = torch.linalg.cholesky_ex(A)
    expected = torch.zeros(A.shape[:-2], dtype=torch.int32)
    expected[3] = 2
    assert_equal(info, expected)
    with pytest.raises(
        RuntimeError,
        match=r"\(Batch element 3\): The factorization could not be "
        "completed",
    ):
        torch.linalg.cholesky_ex(A, check_errors=True)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_inverse(dtype: torch.dtype) -> None:
    for n, batch in itertools.product((0, 3, 5), ((), (0,), (3,), (2, 2))):
        A = torch.randn(*batch, n, n, dtype=dtype) + 3 * torch.eye(n, dtype=dtype)
        expected = np.linalg.inv(_np(A))
        for inverse in (
            torch.inverse(A),
            torch.linalg.inv(A),
            A.inverse(),
            torch.linalg.inv_ex(A).inverse,
        ):
            assert_equal(inverse, expected, rtol=1e-4, atol=1e-5)
        assert_equal(torch.linalg.inv_ex(A).info, torch.zeros(batch, dtype=torch.int32))


def test_inv_ex_info_and_errors_on_singular_matrices() -> None:
    A = torch.eye(3, dtype=torch.float64)
    A[-1, -1] = 0
    assert torch.linalg.inv_ex(A).info.item() == 3
    with pytest.raises(
        torch.linalg.LinAlgError,
        match=r"^linalg.inv: The diagonal element 3 is "
        r"zero, the inversion could not be completed because the input matrix "
        r"is singular.$",
    ):
        torch.linalg.inv(A)
    with pytest.raises(torch.linalg.LinAlgError, match=r"^linalg.inv_ex: The diagonal element"):
        torch.linalg.inv_ex(A, check_errors=True)
    batch = torch.eye(3, dtype=torch.float64).repeat(5, 1, 1)
    batch[3, 1, 1] = 0
    assert torch.linalg.inv_ex(batch).info.tolist() == [0, 0, 0, 2, 0]
    with pytest.raises(
        torch.linalg.LinAlgError,
        match=r"^linalg.inv: \(Batch element 3\): The "
        r"diagonal element 2 is zero",
    ):
        torch.linalg.inv(batch)
    with pytest.raises(RuntimeError, match="must be batches of square matrices"):
        torch.linalg.inv(torch.randn(2, 3))
    with pytest.raises(RuntimeError, match="Expected a floating point or complex tensor"):
        torch.linalg.inv(torch.ones(2, 2, dtype=torch.int64))


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_solve(dtype: torch.dtype) -> None:
    def check(A: torch.Tensor, B: torch.Tensor, left: bool = True) -> None:
        X = torch.linalg.solve(A, B, left=left)
        vector = B.ndim == 1 or B.ndim == A.ndim - 1 and B.shape == A.shape[:-1]
        Bm = B.unsqueeze(-1) if vector else B
        got = (A @ X.unsqueeze(-1) if vector else A @ X) if left else X @ A
        assert_equal(got, Bm.expand_as(got), rtol=1e-4, atol=1e-4)
        assert_equal(torch.linalg.solve_ex(A, B, left=left).result, X, rtol=1e-4, atol=1e-4)

    for n, batch_a, batch_b in [
        (3, (), ()),
        (3, (2,), (2,)),
        (3, (2,), ()),
        (3, (), (2,)),
        (3, (2, 1), (1, 3)),
        (0, (), ()),
        (3, (0,), (0,)),
    ]:
        A = torch.randn(*batch_a, n, n, dtype=dtype) + 3 * torch.eye(n, dtype=dtype)
        check(A, torch.randn(*batch_b, n, 2, dtype=dtype))
        check(A, torch.randn(*batch_b, 4, n, dtype=dtype), left=False)
        check(A, torch.randn(n, dtype=dtype))
        check(A, torch.randn(*A.shape[:-1], dtype=dtype))


def test_solve_errors_are_pytorchs() -> None:
    """linalg.solve's checks in PyTorch's order and texts: B of no dims (rt: an IndexError),
    A and B of two dtypes (rt: matmul's text), B's batch named first in a broadcasting
    error, a vector B with left=False (rt solved it)."""
    ref = _ref()
    cases = [
        lambda t: t.linalg.solve(t.eye(3), t.tensor(1.0)),
        lambda t: t.linalg.solve(t.eye(3), t.ones(3, dtype=t.float64)),
        lambda t: t.linalg.solve_ex(t.eye(3), t.ones(3, dtype=t.float64)),
        lambda t: t.linalg.solve(t.eye(3).expand(2, 3, 3), t.ones(3, 3, 2)),
        lambda t: t.linalg.solve(t.eye(3).expand(2, 3, 3), t.ones(2, 3), left=False),
        lambda t: t.linalg.solve(t.eye(3), t.ones(3), left=False),
        lambda t: t.linalg.solve(t.eye(3), t.ones(4, 2)),
        lambda t: t.linalg.solve(t.eye(3), t.ones(2, 4), left=False),
        lambda t: t.linalg.solve(t.ones(3), t.ones(3)),
        lambda t: t.linalg.solve(t.ones(3, 2), t.ones(3)),
        lambda t: t.linalg.solve(t.eye(3, dtype=t.int64), t.ones(3, dtype=t.int64)),
        lambda t: t.linalg.solve(t.eye(3, dtype=t.int64), t.ones(3)),
    ]
    for case in cases:
        _same_error(lambda: case(torch), lambda: case(ref))
    singular = torch.eye(3, dtype=torch.float64)
    singular[-1, -1] = 0
    with pytest.raises(
        torch.linalg.LinAlgError,
        match=r"^torch.linalg.solve: The solver failed "
        "because the input matrix is singular.$",
    ):
        torch.linalg.solve(singular, torch.ones(3, dtype=torch.float64))
    result, info = torch.linalg.solve_ex(singular, torch.ones(3, dtype=torch.float64))
    assert info.item() == 3


def test_solve_triangular_is_in_the_dtype_of_a() -> None:
    """PyTorch's solve_triangular result is in A's dtype (rt's eager result promoted to B's
    float64 while its shape rule said A's float32)."""
    for a_dtype, b_dtype in [
        (torch.float32, torch.float64),
        (torch.float64, torch.float32),
        (torch.float32, torch.int64),
    ]:
        A = torch.eye(3, dtype=a_dtype) * 2
        X = torch.linalg.solve_triangular(A, torch.ones(3, 1, dtype=b_dtype), upper=True)
        assert X.dtype == a_dtype
        assert_equal(X, torch.full((3, 1), 0.5, dtype=a_dtype))


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_solve_triangular(dtype: torch.dtype) -> None:
    for upper, left, unit in itertools.product((True, False), repeat=3):
        A = torch.randn(2, 3, 3, dtype=dtype) + 3 * torch.eye(3, dtype=dtype)
        B = torch.randn(2, 3, 4, dtype=dtype) if left else torch.randn(2, 4, 3, dtype=dtype)
        X = torch.linalg.solve_triangular(A, B, upper=upper, left=left, unitriangular=unit)
        T = A.triu() if upper else A.tril()
        if unit:
            T = T - torch.diag_embed(T.diagonal(dim1=-2, dim2=-1)) + torch.eye(3, dtype=dtype)
        assert_equal(T @ X if left else X @ T, B, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_matrix_power_non_negative_and_negative(dtype: torch.dtype) -> None:
    for n in (0, 1, 2, 3, 5, -1, -2, -3):
        for batch in ((), (2,), (0,), (2, 0)):
            M = torch.randn(*batch, 3, 3, dtype=dtype) + 3 * torch.eye(3, dtype=dtype)
            expected = np.linalg.matrix_power(_np(M), n) if M.numel() else _np(M)
            for op in (torch.linalg.matrix_power, torch.matrix_power):
                assert_equal(op(M, n), expected, rtol=1e-4, atol=1e-4)
    ints = torch.arange(4).reshape(2, 2)
    assert_equal(torch.linalg.matrix_power(ints, 3), np.linalg.matrix_power(_np(ints), 3))
    assert_equal(torch.linalg.matrix_power(ints, 0), torch.eye(2, dtype=torch.int64))


def test_matrix_power_errors() -> None:
    ref = _ref()
    singular = [[1.0, 0.0], [0.0, 0.0]]
    for case in (
        lambda t: t.linalg.matrix_power(t.ones(3), 2),
        lambda t: t.linalg.matrix_power(t.ones(2, 3), 2),
        lambda t: t.linalg.matrix_power(t.arange(4).reshape(2, 2), -1),
        lambda t: t.linalg.matrix_power(t.tensor(singular), -2),
    ):
        _same_error(lambda: case(torch), lambda: case(ref))


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_matrix_rank(dtype: torch.dtype) -> None:
    for shape in [(3, 3), (2, 3, 3), (0, 3, 3), (3, 5), (5, 3), (0, 0), (3, 0)]:
        a = torch.randn(*shape, dtype=dtype)
        expected = np.linalg.matrix_rank(_np(a)) if a.numel() else np.zeros(shape[:-2], np.int64)
        assert_equal(torch.linalg.matrix_rank(a), expected, exact_dtype=False)
        if shape[-1] == shape[-2] and a.numel():
            sym = a + a.mT
            assert_equal(
                torch.linalg.matrix_rank(sym, hermitian=True),
                np.linalg.matrix_rank(_np(sym), hermitian=True),
                exact_dtype=False,
            )


def test_matrix_rank_tol_and_tensor_tolerances() -> None:
    """PyTorch's ``tol`` (an atol with rtol 0, by position or keyword) and tensor atol/rtol
    (one per matrix), which rt refused; its errors for a vector and an integer matrix."""
    ref = _ref()
    scales = [1.0, 3.0]
    x, xr = (t.eye(3).expand(2, 3, 3) * t.tensor(scales).reshape(2, 1, 1) for t in (torch, ref))
    for kwargs in (
        {"atol": (0.5, 2.0)},
        {"rtol": (0.5, 1.5)},
        {"atol": 2.0},
        {"tol": 2.0},
        {"tol": 2.0, "hermitian": True},
    ):
        got = torch.linalg.matrix_rank(
            x, **{k: torch.tensor(v) if isinstance(v, tuple) else v for k, v in kwargs.items()}
        )
        want = ref.linalg.matrix_rank(
            xr, **{k: ref.tensor(v) if isinstance(v, tuple) else v for k, v in kwargs.items()}
        )
        assert got.tolist() == want.tolist(), kwargs
    assert torch.linalg.matrix_rank(x, 2.0).tolist() == [0, 3]
    for case in (
        lambda t: t.linalg.matrix_rank(t.ones(3)),
        lambda t: t.linalg.matrix_rank(t.ones(3, 3, dtype=t.int64)),
        lambda t: t.linalg.matrix_rank(t.ones(2, 3), hermitian=True),
    ):
        _same_error(lambda: case(torch), lambda: case(ref))


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_pinv(dtype: torch.dtype) -> None:
    for shape in [(3, 3), (2, 3, 3), (0, 3, 3), (3, 5), (5, 3), (2, 0, 3)]:
        a = torch.randn(*shape, dtype=dtype)
        expected = (
            np.linalg.pinv(_np(a)) if a.numel() else np.zeros((*shape[:-2], shape[-1], shape[-2]))
        )
        for pinv in (torch.linalg.pinv(a), torch.pinverse(a)):
            assert_equal(pinv, expected, rtol=1e-4, atol=1e-4, exact_dtype=False)
        if shape[-1] == shape[-2] and a.numel():
            sym = a + a.mT
            assert_equal(
                torch.linalg.pinv(sym, hermitian=True),
                np.linalg.pinv(_np(sym), hermitian=True),
                rtol=1e-4,
                atol=1e-4,
            )


def test_pinv_rcond_and_errors() -> None:
    """``rcond`` (PyTorch's older name of rtol, by position or keyword), PyTorch's texts for
    a vector or an integer input (rt: an IndexError, NumPy's ValueError), eigh's for a
    hermitian non-square one."""
    ref = _ref()
    a = [[2.0, 0.0], [0.0, 0.1]]
    for kwargs in ({"rcond": 0.5}, {"rtol": 0.5}, {"atol": 0.5}, {}):
        assert_equal(
            torch.linalg.pinv(torch.tensor(a), **kwargs),
            ref.linalg.pinv(ref.tensor(a), **kwargs).numpy(),
        )
    assert_equal(
        torch.linalg.pinv(torch.tensor(a), 0.5, True),
        ref.linalg.pinv(ref.tensor(a), 0.5, True).numpy(),
    )
    for case in (
        lambda t: t.linalg.pinv(t.ones(3)),
        lambda t: t.linalg.pinv(t.ones(3, 3, dtype=t.int64)),
        lambda t: t.linalg.pinv(t.ones(3, dtype=t.float64), hermitian=True),
        lambda t: t.linalg.pinv(t.ones(2, 3), hermitian=True),
    ):
        _same_error(lambda: case(torch), lambda: case(ref))
    with pytest.raises(NotImplementedError, match="tensor atol/rtol"):
        torch.linalg.pinv(torch.eye(2), atol=torch.tensor(0.5))


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_qr(dtype: torch.dtype) -> None:
    for shape in [(3, 3), (5, 3), (3, 5), (2, 4, 3), (0, 3), (3, 0), (0, 0), (2, 0, 3)]:
        A = torch.randn(*shape, dtype=dtype)
        for mode in ("reduced", "complete", "r"):
            q, r = torch.linalg.qr(A, mode=mode)
            exp_q, exp_r = (
                np.linalg.qr(_np(A), mode=mode)
                if mode != "r"
                else (None, np.linalg.qr(_np(A), mode="r"))
            )
            assert_equal(abs(r), abs(exp_r), rtol=1e-4, atol=1e-4)
            if mode != "r":
                assert q.shape == exp_q.shape
                assert_equal(q @ r, A, rtol=1e-4, atol=1e-4)
                n = q.shape[-1]
                assert_equal(
                    q.mT @ q, torch.eye(n, dtype=dtype).expand(*q.shape[:-2], n, n), atol=1e-5
                )
            else:
                assert q.numel() == 0


def test_qr_errors() -> None:
    ref = _ref()
    for case in (
        lambda t: t.linalg.qr(t.ones(3)),
        lambda t: t.linalg.qr(t.ones(3, 3, dtype=t.int64)),
        lambda t: t.linalg.qr(t.ones(3, 3), mode="x"),
    ):
        _same_error(lambda: case(torch), lambda: case(ref))


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_svd(dtype: torch.dtype) -> None:
    for shape in [(3, 3), (5, 3), (3, 5), (2, 4, 3), (0, 3), (3, 0), (0, 0), (2, 0, 3)]:
        A = torch.randn(*shape, dtype=dtype)
        for full_matrices in (True, False):
            U, S, Vh = torch.linalg.svd(A, full_matrices=full_matrices)
            expected_s = (
                np.linalg.svd(_np(A), compute_uv=False)
                if A.numel()
                else np.zeros((*shape[:-2], min(shape[-2:])))
            )
            assert_equal(S, expected_s, rtol=1e-4, atol=1e-4, exact_dtype=False)
            k = S.shape[-1]
            m, n = shape[-2:]
            assert U.shape[-2:] == ((m, m) if full_matrices else (m, k))
            assert Vh.shape[-2:] == ((n, n) if full_matrices else (k, n))
            assert_equal((U[..., :k] * S.unsqueeze(-2)) @ Vh[..., :k, :], A, rtol=1e-4, atol=1e-4)
        assert_equal(torch.linalg.svdvals(A), S)


def test_svd_errors() -> None:
    """PyTorch's texts for a vector and an integer input (rt: an IndexError, a result), and
    for ``driver=`` on a CPU tensor (rt: an unexpected keyword)."""
    ref = _ref()
    for case in (
        lambda t: t.linalg.svd(t.ones(3)),
        lambda t: t.linalg.svdvals(t.ones(3)),
        lambda t: t.linalg.svd(t.ones(3, 3, dtype=t.int64)),
        lambda t: t.linalg.svdvals(t.ones(3, 3, dtype=t.int64)),
        lambda t: t.linalg.svd(t.ones(3, 3), driver="gesvd"),
        lambda t: t.linalg.svdvals(t.ones(3, 3), driver="gesvdj"),
    ):
        _same_error(lambda: case(torch), lambda: case(ref))
    assert_equal(torch.linalg.svdvals(torch.eye(2), driver=None), torch.ones(2))


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_linalg_lstsq(dtype: torch.dtype) -> None:
    """Against NumPy's gelsd for well-conditioned matrices (every driver's solution), and
    the rank and singular values the gelsd/gelss drivers report."""
    for batch, (m, n) in itertools.product([(), (2,), (2, 2)], [(1, 1), (4, 2), (4, 4), (2, 4)]):
        a = torch.randn(*batch, m, n, dtype=dtype) + torch.eye(m, n, dtype=dtype)
        b = torch.rand(*batch, m, 3, dtype=dtype)
        for driver in ("gels", "gelsy", "gelsd", "gelss", None):
            if driver == "gels" and m < n:
                continue  # underdetermined: gels's own minimum-norm answer, not compared
            res = torch.linalg.lstsq(a, b, driver=driver)
            assert_equal(res.solution, torch.linalg.pinv(a) @ b, rtol=1e-4, atol=1e-4)
            if driver in ("gelsd", "gelss"):
                for i in range(int(np.prod(batch))):
                    a_i = _np(a).reshape(-1, m, n)[i]
                    _, _, rank, sv = np.linalg.lstsq(a_i, _np(b).reshape(-1, m, 3)[i], rcond=None)
                    assert res.rank.reshape(-1)[i].item() == rank
                    assert_equal(
                        res.singular_values.reshape(-1, min(m, n))[i],
                        sv,
                        rtol=1e-4,
                        atol=1e-4,
                        exact_dtype=False,
                    )


def test_linalg_lstsq_input_checks() -> None:
    """Empty inputs (rt: amax's error for no singular values) and PyTorch's texts for bad
    dims, dtypes and sizes (rt: IndexError, bmm's text, size(-2) for a vector B)."""
    ref = _ref()
    for shape_a, shape_b, expected in [
        ((0, 0, 3, 3), (0, 0, 3, 2), (0, 0, 3, 2)),
        ((2, 2, 0, 0), (2, 2, 0, 0), (2, 2, 0, 0)),
        ((2, 2, 3, 0), (2, 2, 3, 0), (2, 2, 0, 0)),
        ((2, 2, 3, 0), (2, 2, 3, 2), (2, 2, 0, 2)),
        ((2, 2, 0, 3), (2, 2, 0, 3), (2, 2, 3, 3)),
    ]:
        for driver in (None, "gelsy", "gelsd", "gelss"):
            got = torch.linalg.lstsq(torch.rand(*shape_a), torch.rand(*shape_b), driver=driver)
            assert_equal(got.solution, torch.zeros(*expected))
            want = ref.linalg.lstsq(ref.rand(*shape_a), ref.rand(*shape_b), driver=driver)
            for g, w in zip(got, want, strict=True):
                assert tuple(g.shape) == tuple(w.shape)
            assert got.rank.tolist() == want.rank.tolist()
    for case in (
        lambda t: t.linalg.lstsq(t.rand(3), t.rand(3)),
        lambda t: t.linalg.lstsq(t.rand(2, 3), t.tensor(1.0)),
        lambda t: t.linalg.lstsq(t.rand(2, 3), t.rand(3)),
        lambda t: t.linalg.lstsq(t.rand(2, 3), t.rand(3, 1)),
        lambda t: t.linalg.lstsq(t.rand(3, 3), t.rand(2, 3, 3, 1)),
        lambda t: t.linalg.lstsq(t.rand(2, 2, 2, 2), (t.rand(2, 2, 2) * 100).long()),
        lambda t: t.linalg.lstsq(t.ones(3, 3, dtype=t.int64), t.ones(3, dtype=t.int64)),
        lambda t: t.linalg.lstsq(t.rand(2, 2, 2, 2), t.rand(2, 2, 2), driver="fictitious_driver"),
    ):
        _same_error(lambda: case(torch), lambda: case(ref))


def test_linalg_cross() -> None:
    """Against NumPy; PyTorch's errors where the inputs differ in rank (rt broadcast them),
    in dtype (rt promoted), or dim's size (its dim as given, -1), and for bools."""
    ref = _ref()
    for shape in [(3,), (2, 3), (2, 3, 3)]:
        a, b = torch.randn(shape), torch.randn(shape)
        assert_equal(torch.linalg.cross(a, b), np.cross(_np(a), _np(b)), atol=1e-5)
        assert_equal(torch.cross(a, b, dim=-1), np.cross(_np(a), _np(b)), atol=1e-5)
    assert_equal(
        torch.linalg.cross(torch.ones(1, 3), torch.tensor([[1.0, 2, 3], [0, 0, 1]])),
        np.cross(np.ones((1, 3)), [[1.0, 2, 3], [0, 0, 1]]),
        exact_dtype=False,
    )
    for case in (
        lambda t: t.linalg.cross(t.ones(2, 1, 3), t.ones(4, 3)),
        lambda t: t.cross(t.ones(2, 1, 3), t.ones(4, 3), dim=-1),
        lambda t: t.linalg.cross(t.ones(2, 4), t.ones(2, 4)),
        lambda t: t.linalg.cross(t.ones(3, 2), t.ones(3, 2), dim=1),
        lambda t: t.linalg.cross(t.ones(2, 3), t.ones(3, 3)),
        lambda t: t.linalg.cross(t.ones(3), t.ones(3, dtype=t.float64)),
        lambda t: t.linalg.cross(t.ones(3), t.ones(3, dtype=t.int64)),
        lambda t: t.linalg.cross(t.ones(3, dtype=t.bool), t.ones(3, dtype=t.bool)),
        lambda t: t.linalg.cross(t.ones(3), t.ones(3), dim=2),
    ):
        _same_error(lambda: case(torch), lambda: case(ref))


def test_add_a_product_shape_and_dtype_errors_are_pytorchs() -> None:
    """addmv's size and dtype checks (rt: a broadcasting error, a wrong dtype named, a
    float64 input silently promoted), baddbmm/addbmm's expand of the input and their dtype
    checks (rt promoted a float64 input), addmm's input-vs-mat2 dtype text."""
    ref = _ref()
    cases = [
        lambda t: t.addmv(t.ones(3), t.ones(2, 3), t.ones(3)),
        lambda t: t.addmv(t.ones(2, 2), t.ones(2, 3), t.ones(3)),
        lambda t: t.addmv(t.ones(2), t.ones(2, 3), t.ones(3, dtype=t.float64)),
        lambda t: t.addmv(t.ones(2, dtype=t.float64), t.ones(2, 3), t.ones(3)),
        lambda t: t.baddbmm(t.ones(2, 2, 4), t.ones(2, 2, 3), t.ones(2, 3, 5)),
        lambda t: t.addbmm(t.ones(2, 4), t.ones(2, 2, 3), t.ones(2, 3, 5)),
        lambda t: t.baddbmm(t.ones(2, 2, 5, dtype=t.float64), t.ones(2, 2, 3), t.ones(2, 3, 5)),
        lambda t: t.baddbmm(t.ones(2, 2, 5), t.ones(2, 2, 3), t.ones(2, 3, 5, dtype=t.float64)),
        lambda t: t.addbmm(t.ones(2, 5, dtype=t.float64), t.ones(2, 2, 3), t.ones(2, 3, 5)),
        lambda t: t.addbmm(t.ones(2, 5), t.ones(2, 2, 3), t.ones(2, 3, 5, dtype=t.float64)),
        lambda t: t.addmm(t.ones(2, 5, dtype=t.float64), t.ones(2, 3), t.ones(3, 5)),
        lambda t: t.addmm(t.ones(2, 5), t.ones(2, 3), t.ones(3, 5, dtype=t.float64)),
    ]
    for case in cases:
        _same_error(lambda: case(torch), lambda: case(ref))
    for case in (
        lambda t: t.addmv(t.ones(1), t.ones(2, 3), t.ones(3)),
        lambda t: t.addmv(t.ones(()), t.ones(2, 3), t.ones(3)),
        lambda t: t.baddbmm(t.ones(5), t.ones(2, 2, 3), t.ones(2, 3, 5)),
        lambda t: t.addbmm(t.ones(1, 5), t.ones(2, 2, 3), t.ones(2, 3, 5)),
    ):
        assert_equal(case(torch), case(ref).numpy())


def test_beta_zero_ignores_nan_input() -> None:
    nan_input = {
        "addmm": (2, 5),
        "addmv": (2,),
        "baddbmm": (2, 2, 5),
        "addbmm": (2, 5),
        "addr": (2, 3),
    }
    args = {
        "addmm": ((2, 3), (3, 5)),
        "addmv": ((2, 3), (3,)),
        "baddbmm": ((2, 2, 3), (2, 3, 5)),
        "addbmm": ((2, 2, 3), (2, 3, 5)),
        "addr": ((2,), (3,)),
    }
    for name, shape in nan_input.items():
        result = getattr(torch, name)(
            torch.full(shape, nan), *(torch.ones(s) for s in args[name]), beta=0
        )
        assert not result.isnan().any(), name


def test_addmm_checks_dtypes_before_shapes() -> None:
    """PyTorch's addmm checks input vs mat2's dtype, then mat1 vs mat2's, then the shapes."""
    ref = _ref()
    for case in (
        lambda t: t.addmm(t.ones(2, 5), t.ones(2, 3, dtype=t.float64), t.ones(3, 5)),
        lambda t: t.addmm(t.ones(3, 5), t.ones(2, 3), t.ones(3, 5, dtype=t.float64)),
        lambda t: t.addmm(t.ones(3, 5, dtype=t.float64), t.ones(2, 3), t.ones(4, 5)),
        lambda t: t.addmm(t.ones(2, 5), t.ones(2, 3), t.ones(4, 5)),
        lambda t: t.addmm(t.ones(3, 5), t.ones(2, 3), t.ones(3, 5)),
    ):
        _same_error(lambda: case(torch), lambda: case(ref))


# ---------------------------------------------------------------- einsum, tensordot, multi_dot


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_einsum(dtype: torch.dtype) -> None:
    x, y = make_tensor(5, dtype), make_tensor(7, dtype)
    A, B = make_tensor((3, 5), dtype), make_tensor((2, 5), dtype)
    C, D = make_tensor((2, 3, 5), dtype), make_tensor((2, 5, 7), dtype)
    E, H = make_tensor((7, 9), dtype), make_tensor((4, 4), dtype)
    K, J = make_tensor((3, 2, 3), dtype), make_tensor((2, 3, 3), dtype)
    cases = [
        ("i->", x),
        ("i,i->", x, x),
        ("i,i->i", x, x),
        ("i,j->ij", x, y),
        ("ij->ji", A),
        ("ij->j", A),
        ("ij,ij->ij", A, A),
        ("ij,j->i", A, x),
        ("ij,kj->ik", A, B),
        ("ij,ab->ijab", A, E),
        ("bij,bjk->bik", C, D),
        ("bij,bjk->bi", C, D),
        ("bij,bjk->", C, D),
        ("...ij,...jk->...ik", C, D),
        ("...ij,...jk", C, D),
        ("i...->...", H),
        ("ii", H),
        ("ii->i", H),
        ("iji->j", K),
        ("...ii->...i", J),
        ("i,i", x, x),
        ("ij", A),
        ("ji", A),
        ("ij , jk->ik ", A, A.t()),
        ("...", A),
        ("i,ij,jk->k", torch.ones(3, dtype=dtype), A, E[:5]),
    ]
    for equation, *operands in cases:
        expected = np.einsum(equation.replace(" ", ""), *[_np(o) for o in operands])
        assert_equal(
            torch.einsum(equation, *operands), expected, rtol=1e-4, atol=1e-4, exact_dtype=False
        )
    # an ellipsis left out of the output is summed, as PyTorch's (NumPy refuses)
    assert_equal(torch.einsum("...->", A), _np(A).sum(), rtol=1e-5, atol=1e-4)
    assert_equal(torch.einsum("i...->i", C), _np(C).sum((1, 2)), rtol=1e-5, atol=1e-4)
    assert_equal(torch.einsum("i...,...->", A, x), (_np(A) * _np(x)).sum(), rtol=1e-5, atol=1e-4)
    # the sublist format
    assert_equal(torch.einsum(A, [0, 1], x, [1], [0]), np.einsum(_np(A), [0, 1], _np(x), [1], [0]))
    assert_equal(
        torch.einsum(C, [Ellipsis, 0, 1], D, [Ellipsis, 1, 2], [Ellipsis, 0, 2]),
        np.einsum(_np(C), [Ellipsis, 0, 1], _np(D), [Ellipsis, 1, 2], [Ellipsis, 0, 2]),
        rtol=1e-4,
        atol=1e-4,
    )
    assert_equal(torch.einsum("ij,j->i", [A, x]), _np(A) @ _np(x), rtol=1e-4, atol=1e-4)
    assert_equal(torch.einsum(A, [51, 26]), _np(A).T)  # z, a: the output a, z


def test_einsum_broadcasting_and_products_without_contraction() -> None:
    """A product with nothing contracted is PyTorch's mul: bools and two dtypes are taken (rt
    sent it to bmm, which has no bool kernel); a contraction of two dtypes is bmm's error."""
    ref = _ref()
    b = [True, False, True]
    assert torch.einsum("i,i->i", torch.tensor(b), torch.tensor(b)).tolist() == [True, False, True]
    outer = torch.einsum("i,j->ij", torch.ones(3, dtype=torch.float64), torch.ones(2))
    assert outer.dtype == torch.float64 and outer.shape == (3, 2)
    assert_equal(
        torch.einsum("bij,bjk->bik", torch.ones(1, 2, 3), torch.ones(4, 3, 2)),
        torch.full((4, 2, 2), 3.0),
    )
    for case in (
        lambda t: t.einsum("i,i", t.ones(3), t.ones(3, dtype=t.float64)),
        lambda t: t.einsum("ij,jk", t.ones(2, 3), t.ones(3, 2, dtype=t.int64)),
        lambda t: t.einsum("ij,jk", t.ones(2, 3, dtype=t.bool), t.ones(3, 2, dtype=t.bool)),
    ):
        _same_error(lambda: case(torch), lambda: case(ref))


def test_einsum_error_cases() -> None:
    ref = _ref()
    errors = [
        ("", "A"),
        ("i", "A"),
        ("ij,jk", "A"),
        ("i-j", "A"),
        ("ij->k", "A"),
        ("ij->ii", "A"),
        ("i.j", "A"),
        ("..i", "A"),
        ("...ij...", "A"),
        ("ij->i.j", "A"),
        ("ij,jk->ik", "A A"),
        ("ii", "A"),
        ("i,", "x"),
        ("1j", "A"),
        ("...i,...i", "C A.T"),
        ("i...,i...", "C K"),
    ]
    shapes = {"A": (3, 5), "x": (5,), "C": (2, 3, 5), "A.T": (5, 3), "K": (2, 4, 1)}
    for equation, names in errors:
        _same_error(
            lambda: torch.einsum(equation, *[torch.ones(shapes[n]) for n in names.split()]),
            lambda: ref.einsum(equation, *[ref.ones(shapes[n]) for n in names.split()]),
        )
    _same_error(lambda: torch.einsum("i"), lambda: ref.einsum("i"))


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_tensordot(dtype: torch.dtype) -> None:
    a, b = torch.randn(3, 4, 5, dtype=dtype), torch.randn(4, 5, 6, dtype=dtype)
    for dims in (
        2,
        ([1, 2], [0, 1]),
        [[2, 1], [1, 0]],
        torch.tensor(2),
        torch.tensor([[1, 2], [0, 1]]),
    ):
        np_dims = dims.tolist() if isinstance(dims, torch.Tensor) else dims
        assert_equal(
            torch.tensordot(a, b, dims=dims),
            np.tensordot(_np(a), _np(b), np_dims),
            rtol=1e-4,
            atol=1e-4,
        )
    c = torch.randn(5, 6, dtype=dtype)
    assert_equal(
        torch.tensordot(a, c, dims=1), np.tensordot(_np(a), _np(c), 1), rtol=1e-4, atol=1e-4
    )
    assert_equal(torch.tensordot(a, c, dims=0), np.tensordot(_np(a), _np(c), 0))


def test_tensordot_errors() -> None:
    """PyTorch's parser errors for a pair of ints as dims (rt contracted them), its dtype
    text (rt: matmul's), and its size and count checks."""
    ref = _ref()
    for case in (
        lambda t: t.tensordot(t.ones(3, 4), t.ones(4, 5), dims=(1, 0)),
        lambda t: t.tensordot(t.ones(3, 4), t.ones(4, 5), dims=([1], 0)),
        lambda t: t.tensordot(t.ones(3, 4), t.ones(4, 5, dtype=t.float64), dims=1),
        lambda t: t.tensordot(t.ones(3, 4), t.ones(4, 5), dims=-1),
        lambda t: t.tensordot(t.ones(3, 4), t.ones(5, 5), dims=1),
        lambda t: t.tensordot(t.ones(3, 4), t.ones(4, 5), dims=([1], [0, 1])),
        lambda t: t.tensordot(t.ones(3, 4), t.ones(4, 5), dims=3),
    ):
        _same_error(lambda: case(torch), lambda: case(ref))


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_multi_dot(dtype: torch.dtype) -> None:
    for shapes in [
        [(3,), (3,)],
        [(2, 3), (3,)],
        [(3,), (3, 4)],
        [(2, 3), (3, 4), (4, 5)],
        [(3,), (3, 4), (4,)],
        [(2, 3), (3, 4), (4, 5), (5, 6)],
        [(0, 3), (3, 4)],
        [(2, 0), (0, 4), (4, 3)],
    ]:
        tensors = [make_tensor(s, dtype, low=-1, high=1) for s in shapes]
        assert_equal(
            torch.linalg.multi_dot(tensors),
            np.linalg.multi_dot([_np(t) for t in tensors]),
            rtol=1e-4,
            atol=1e-5,
        )


def test_multi_dot_errors() -> None:
    """PyTorch's checks and texts (rt: matmul's, or a batched product of a 3-D tensor)."""
    ref = _ref()
    for case in (
        lambda t: t.linalg.multi_dot([]),
        lambda t: t.linalg.multi_dot([t.ones(3, 3)]),
        lambda t: t.linalg.multi_dot([t.ones(2, 3, 3), t.ones(3, 3)]),
        lambda t: t.linalg.multi_dot([t.ones(2, 3), t.ones(3, 2), t.ones(2, 2, 2)]),
        lambda t: t.linalg.multi_dot([t.ones(()), t.ones(3)]),
        lambda t: t.linalg.multi_dot([t.ones(2, 3), t.ones(4, 5)]),
        lambda t: t.linalg.multi_dot([t.ones(3), t.ones(4)]),
        lambda t: t.linalg.multi_dot([t.ones(2, 3), t.ones(3, 5, dtype=t.float64)]),
        lambda t: t.linalg.multi_dot([t.ones(2, 3), t.ones(3), t.ones(3, 5)]),
    ):
        _same_error(lambda: case(torch), lambda: case(ref))


def test_vecdot_and_matrix_exp_checks() -> None:
    """linalg.vecdot's float and same-dtype checks (rt multiplied and promoted), and
    matrix_exp's text for an integer input (rt: a NotImplementedError)."""
    ref = _ref()
    assert_equal(torch.linalg.vecdot(torch.ones(2, 3), torch.ones(3)), torch.full((2,), 3.0))
    for case in (
        lambda t: t.linalg.vecdot(t.ones(3), t.ones(3, dtype=t.float64)),
        lambda t: t.linalg.vecdot(t.arange(3), t.arange(3)),
        lambda t: t.linalg.vecdot(t.ones(2, 3), t.ones(4)),
        lambda t: t.linalg.matrix_exp(t.ones(3, 3, dtype=t.int64)),
        lambda t: t.linalg.matrix_exp(t.ones(3)),
        lambda t: t.linalg.matrix_exp(t.ones(2, 3)),
    ):
        _same_error(lambda: case(torch), lambda: case(ref))
    a = np.random.default_rng(0).standard_normal((2, 3, 3))
    assert_equal(torch.linalg.matrix_exp(torch.tensor(a)), ref.linalg.matrix_exp(ref.tensor(a)))


# ---------------------------------------------------------------- gradients


def t(*shape: int, spd: bool = False, well: bool = False) -> torch.Tensor:
    """A float64 leaf: random, symmetric positive definite, or diagonally dominant."""
    a = np.random.default_rng(sum(shape) + 10 * len(shape)).standard_normal(shape)
    if spd:
        a = a @ np.swapaxes(a, -1, -2) + shape[-1] * np.eye(shape[-1])
    if well:
        a = a + 3 * np.eye(shape[-1])
    return torch.tensor(a, dtype=torch.float64, requires_grad=True)


_GRAD_CASES: dict[str, tuple[Callable[..., Any], Callable[[], list[torch.Tensor]]]] = {
    "det": (lambda A: torch.linalg.det(A), lambda: [t(2, 3, 3)]),
    "slogdet": (lambda A: torch.linalg.slogdet(A)[1], lambda: [t(2, 3, 3, well=True)]),
    "logdet": (lambda A: torch.logdet(A), lambda: [t(3, 3, spd=True)]),
    "inv": (lambda A: torch.linalg.inv(A), lambda: [t(2, 3, 3, well=True)]),
    "inv_ex": (lambda A: torch.linalg.inv_ex(A).inverse, lambda: [t(3, 3, well=True)]),
    "solve": (lambda A, B: torch.linalg.solve(A, B), lambda: [t(2, 3, 3, well=True), t(2, 3, 2)]),
    "solve vec": (lambda A, B: torch.linalg.solve(A, B), lambda: [t(3, 3, well=True), t(3)]),
    "solve right": (
        lambda A, B: torch.linalg.solve(A, B, left=False),
        lambda: [t(3, 3, well=True), t(2, 3)],
    ),
    "solve_ex": (
        lambda A, B: torch.linalg.solve_ex(A, B).result,
        lambda: [t(3, 3, well=True), t(3, 2)],
    ),
    "cholesky": (
        lambda A: torch.linalg.cholesky(A @ A.mT + 3 * torch.eye(3, dtype=torch.float64)),
        lambda: [t(2, 3, 3)],
    ),
    "cholesky upper": (
        lambda A: torch.linalg.cholesky(
            A @ A.mT + 3 * torch.eye(3, dtype=torch.float64), upper=True
        ),
        lambda: [t(3, 3)],
    ),
    "cholesky_ex": (
        lambda A: torch.linalg.cholesky_ex(A @ A.mT + 3 * torch.eye(3, dtype=torch.float64)).L,
        lambda: [t(3, 3)],
    ),
    "cholesky_solve": (
        lambda B, A: torch.cholesky_solve(
            B, torch.linalg.cholesky(A @ A.mT + 3 * torch.eye(3, dtype=torch.float64))
        ),
        lambda: [t(3, 2), t(3, 3)],
    ),
    "cholesky_inverse": (
        lambda A: torch.cholesky_inverse(
            torch.linalg.cholesky(A @ A.mT + 3 * torch.eye(3, dtype=torch.float64))
        ),
        lambda: [t(3, 3)],
    ),
    "eigh": (
        lambda A: (lambda w, V: (w, V.abs(), V @ V.mT))(*torch.linalg.eigh(A + A.mT)),
        lambda: [t(3, 3)],
    ),
    "eigh U": (
        lambda A: (lambda w, V: (w, (V * V)))(*torch.linalg.eigh(A + A.mT, UPLO="U")),
        lambda: [t(3, 3)],
    ),
    "eigvalsh": (lambda A: torch.linalg.eigvalsh(A + A.mT), lambda: [t(2, 3, 3)]),
    "svd": (
        lambda A: (lambda U, S, Vh: (S, U @ torch.diag_embed(S) @ Vh, U[..., :1] @ Vh[..., :1, :]))(
            *torch.linalg.svd(A, full_matrices=False)
        ),
        lambda: [t(4, 3)],
    ),
    "svd full": (
        lambda A: (lambda U, S, Vh: U[..., :, :3] @ torch.diag_embed(S) @ Vh)(
            *torch.linalg.svd(A, full_matrices=True)
        ),
        lambda: [t(4, 3)],
    ),
    "svd wide": (
        lambda A: (lambda U, S, Vh: U @ torch.diag_embed(S) @ Vh[..., :3, :])(*torch.linalg.svd(A)),
        lambda: [t(3, 4)],
    ),
    "svdvals": (lambda A: torch.linalg.svdvals(A), lambda: [t(2, 3, 4)]),
    "pinv": (lambda A: torch.linalg.pinv(A), lambda: [t(4, 3)]),
    "pinv wide": (lambda A: torch.linalg.pinv(A), lambda: [t(2, 3, 5)]),
    "pinv herm": (lambda A: torch.linalg.pinv(A + A.mT, hermitian=True), lambda: [t(3, 3)]),
    "qr": (lambda A: torch.linalg.qr(A), lambda: [t(4, 3)]),
    "qr square": (lambda A: torch.linalg.qr(A), lambda: [t(2, 3, 3)]),
    "qr wide": (lambda A: torch.linalg.qr(A), lambda: [t(3, 4)]),
    "qr complete sq": (lambda A: torch.linalg.qr(A, mode="complete"), lambda: [t(3, 3)]),
    "lstsq": (lambda A, B: torch.linalg.lstsq(A, B).solution, lambda: [t(4, 3), t(4, 2)]),
    "lstsq wide": (lambda A, B: torch.linalg.lstsq(A, B).solution, lambda: [t(2, 4), t(2, 2)]),
    "solve_triangular": (
        lambda A, B: torch.linalg.solve_triangular(A, B, upper=True),
        lambda: [t(3, 3, well=True), t(3, 2)],
    ),
    "solve_triangular left=F unit": (
        lambda A, B: torch.linalg.solve_triangular(
            A, B, upper=False, left=False, unitriangular=True
        ),
        lambda: [t(3, 3, well=True), t(2, 3)],
    ),
    "triangular_solve": (
        lambda B, A: torch.triangular_solve(B, A, upper=False, transpose=True).solution,
        lambda: [t(3, 2), t(3, 3, well=True)],
    ),
    "matrix_power 3": (lambda A: torch.linalg.matrix_power(A, 3), lambda: [t(3, 3)]),
    "matrix_power -2": (lambda A: torch.linalg.matrix_power(A, -2), lambda: [t(3, 3, well=True)]),
    "matrix_power 0": (lambda A: torch.linalg.matrix_power(A, 0), lambda: [t(3, 3)]),
    "matrix_exp": (lambda A: torch.linalg.matrix_exp(A), lambda: [t(2, 3, 3)]),
    "cond 2": (lambda A: torch.linalg.cond(A), lambda: [t(3, 3, well=True)]),
    "cond fro": (lambda A: torch.linalg.cond(A, "fro"), lambda: [t(3, 3, well=True)]),
    "cond nuc": (lambda A: torch.linalg.cond(A, "nuc"), lambda: [t(3, 3, well=True)]),
    "cond 1": (lambda A: torch.linalg.cond(A, 1), lambda: [t(3, 3, well=True)]),
    "cond -2": (lambda A: torch.linalg.cond(A, -2), lambda: [t(3, 3, well=True)]),
    "householder": (
        lambda A, tau: torch.linalg.householder_product(A, tau),
        lambda: [t(4, 3), t(3)],
    ),
    "lu_factor": (lambda A: torch.linalg.lu_factor(A).LU, lambda: [t(3, 3, well=True)]),
    "lu": (lambda A: torch.linalg.lu(A)[1:], lambda: [t(3, 4)]),
    "lu tall": (lambda A: torch.linalg.lu(A)[1:], lambda: [t(4, 3)]),
    "lu_solve": (
        lambda A, B: torch.linalg.lu_solve(*torch.linalg.lu_factor(A), B),
        lambda: [t(3, 3, well=True), t(3, 2)],
    ),
    "lu_solve adj left=F": (
        lambda A, B: torch.linalg.lu_solve(*torch.linalg.lu_factor(A), B, left=False, adjoint=True),
        lambda: [t(3, 3, well=True), t(2, 3)],
    ),
    "tensorinv": (
        lambda A: torch.linalg.tensorinv(
            A.reshape(6, 2, 3) + torch.eye(6, dtype=torch.float64).reshape(6, 2, 3) * 3, ind=1
        ),
        lambda: [t(6, 6)],
    ),
    "tensorsolve": (
        lambda A, B: torch.linalg.tensorsolve(
            A.reshape(2, 3, 6) + 3 * torch.eye(6, dtype=torch.float64).reshape(2, 3, 6), B
        ),
        lambda: [t(6, 6), t(2, 3)],
    ),
    "cross": (lambda a, b: torch.linalg.cross(a, b), lambda: [t(2, 3), t(2, 3)]),
    "einsum": (
        lambda a, b, c: torch.einsum("bi,ij,bj->b", a, b, c),
        lambda: [t(2, 3), t(3, 3), t(2, 3)],
    ),
    "einsum diag": (lambda a: torch.einsum("ii->i", a), lambda: [t(3, 3)]),
    "einsum ellipsis": (
        lambda a, b: torch.einsum("...ij,...jk->...ik", a, b),
        lambda: [t(2, 2, 3), t(3, 2)],
    ),
    "tensordot": (
        lambda a, b: torch.tensordot(a, b, dims=([1, 2], [0, 1])),
        lambda: [t(2, 3, 4), t(3, 4, 2)],
    ),
    "multi_dot": (
        lambda a, b, c: torch.linalg.multi_dot([a, b, c]),
        lambda: [t(3), t(3, 4), t(4, 2)],
    ),
    "kron": (lambda a, b: torch.kron(a, b), lambda: [t(2, 3), t(3, 2)]),
    "addr": (lambda m, a, b: torch.addr(m, a, b, beta=0.5, alpha=2), lambda: [t(3, 2), t(3), t(2)]),
    "addmm": (
        lambda m, a, b: torch.addmm(m, a, b, beta=0.5, alpha=2),
        lambda: [t(3, 2), t(3, 4), t(4, 2)],
    ),
    "addmv": (
        lambda m, a, b: torch.addmv(m, a, b, beta=0.5, alpha=2),
        lambda: [t(3), t(3, 4), t(4)],
    ),
    "baddbmm": (
        lambda m, a, b: torch.baddbmm(m, a, b, beta=0.5, alpha=2),
        lambda: [t(2, 3, 2), t(2, 3, 4), t(2, 4, 2)],
    ),
    "addbmm": (
        lambda m, a, b: torch.addbmm(m, a, b, beta=0.5, alpha=2),
        lambda: [t(3, 2), t(2, 3, 4), t(2, 4, 2)],
    ),
    "addbmm beta0": (
        lambda m, a, b: torch.addbmm(m, a, b, beta=0),
        lambda: [t(3, 2), t(2, 3, 4), t(2, 4, 2)],
    ),
    "inner": (lambda a, b: torch.inner(a, b), lambda: [t(2, 3), t(4, 3)]),
    "outer": (lambda a, b: torch.outer(a, b), lambda: [t(3), t(4)]),
    "vdot": (lambda a, b: torch.vdot(a, b), lambda: [t(3), t(3)]),
    "vecdot": (lambda a, b: torch.linalg.vecdot(a, b, dim=0), lambda: [t(3, 2), t(3, 2)]),
    "trace": (lambda a: torch.trace(a), lambda: [t(3, 4)]),
    "diag_embed": (lambda a: torch.diag_embed(a, offset=1, dim1=0, dim2=2), lambda: [t(2, 3)]),
    "vander": (lambda a: torch.linalg.vander(a, N=4), lambda: [t(3)]),
}
for o in [0.5, 1, 2, 3, -1, -2, 1.5, inf, -inf]:
    _GRAD_CASES[f"vector_norm {o}"] = (
        lambda a, o=o: torch.linalg.vector_norm(a, o, dim=1),
        lambda: [t(2, 4)],
    )
for o in ["fro", "nuc", 1, -1, 2, -2, inf, -inf]:
    _GRAD_CASES[f"matrix_norm {o}"] = (
        lambda a, o=o: torch.linalg.matrix_norm(a, o, dim=(0, 2)),
        lambda: [t(3, 2, 4)],
    )
    _GRAD_CASES[f"norm {o}"] = (lambda a, o=o: torch.linalg.norm(a, o), lambda: [t(3, 4)])
_GRAD_CASES["norm None 3d"] = (lambda a: torch.linalg.norm(a), lambda: [t(2, 3, 4)])
_GRAD_CASES["old norm fro dims"] = (
    lambda a: torch.norm(a, "fro", dim=(0, 1)),
    lambda: [t(2, 3, 4)],
)
_GRAD_CASES["old norm nuc"] = (lambda a: torch.norm(a, "nuc"), lambda: [t(3, 4)])


@pytest.mark.parametrize("name", sorted(_GRAD_CASES))
def test_linalg_gradcheck(name: str) -> None:
    """float64 gradcheck of each differentiable function (eigh and svd through losses
    invariant to the eigenvectors' and singular vectors' signs)."""
    fn, inputs = _GRAD_CASES[name]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # torch.cholesky's and triangular_solve's deprecations
        assert torch.autograd.gradcheck(fn, tuple(inputs()), eps=1e-6, atol=1e-5, rtol=1e-4)


def test_det_gradient_at_singular_matrices_is_pytorchs_first_order_one() -> None:
    """PyTorch's first-order det gradient is 0 where det is exactly 0 (its LU solve of det * I);
    the cofactors where det rounds away from 0."""
    a = torch.tensor([[1.0, 0.0], [0.0, 0.0]], dtype=torch.float64, requires_grad=True)
    torch.linalg.det(a).backward()
    assert_equal(a.grad, torch.zeros(2, 2, dtype=torch.float64))


def test_householder_product_errors() -> None:
    """PyTorch's checks in its order: tau of the wrong rank (rt: its batch text), a 0-d tau
    (rt: a tuple IndexError), integers (rt multiplied them)."""
    ref = _ref()
    for a_shape, tau_shape, dtype in [
        ((5, 3), (4,), "float64"),
        ((3, 5), (3,), "float64"),
        ((5, 3), (2, 3), "float64"),
        ((2, 5, 3), (3, 3), "float64"),
        ((5, 3), (2, 2, 3), "float64"),
        ((2, 5, 3), (3,), "float64"),
        ((3,), (1,), "float64"),
        ((5, 3), (), "float64"),
        ((5, 3), (3,), "int64"),
    ]:
        _same_error(
            lambda: torch.linalg.householder_product(
                torch.ones(a_shape, dtype=getattr(torch, dtype)),
                torch.ones(tau_shape, dtype=getattr(torch, dtype)),
            ),
            lambda: ref.linalg.householder_product(
                ref.ones(a_shape, dtype=getattr(ref, dtype)),
                ref.ones(tau_shape, dtype=getattr(ref, dtype)),
            ),
        )


def test_lu_solve_pivot_checks_and_broadcasting() -> None:
    """PyTorch's checks of the pivots' size and batch (rt solved with the wrong pivots)."""
    ref = _ref()
    for case in (
        lambda t: t.linalg.lu_solve(t.eye(3), t.ones(2, dtype=t.int32), t.ones(3, 1)),
        lambda t: t.linalg.lu_solve(
            t.eye(3).expand(2, 3, 3), t.ones(3, 3, dtype=t.int32), t.ones(3, 1)
        ),
        lambda t: t.linalg.lu_solve(t.eye(3), t.ones(3, dtype=t.int64), t.ones(3, 1)),
        lambda t: t.linalg.lu_solve(t.eye(3), t.ones(3, dtype=t.int32), t.ones(3)),
    ):
        _same_error(lambda: case(torch), lambda: case(ref))
    rng = np.random.default_rng(0)
    a = rng.standard_normal((2, 1, 3, 3)) + 3 * np.eye(3)
    b = rng.standard_normal((1, 4, 3, 2))
    got = torch.linalg.lu_solve(*torch.linalg.lu_factor(torch.tensor(a)), torch.tensor(b))
    assert_equal(got, np.linalg.solve(a, b))


def test_triangular_solve_broadcasts_its_cloned_coefficient() -> None:
    """torch.triangular_solve's cloned_coefficient is A broadcast to the batch (rt: A)."""
    rng = np.random.default_rng(0)
    A = torch.tensor(rng.standard_normal((2, 1, 3, 3)) + 3 * np.eye(3))
    b = torch.tensor(rng.standard_normal((1, 4, 3, 2)))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        solution, clone = torch.triangular_solve(b, A)
    assert clone.shape == (2, 4, 3, 3) and solution.shape == (2, 4, 3, 2)
    assert_equal(clone, A.expand(2, 4, 3, 3))
    assert_equal(A.triu() @ solution, b.expand(2, 4, 3, 2))


def test_addr_input_expands_to_the_outer_product() -> None:
    ref = _ref()
    _same_error(
        lambda: torch.addr(torch.ones(3, 3), torch.ones(2), torch.ones(2)),
        lambda: ref.addr(ref.ones(3, 3), ref.ones(2), ref.ones(2)),
    )
    assert_equal(torch.addr(torch.ones(3), torch.ones(2), torch.ones(3)), torch.full((2, 3), 2.0))


_DTYPE_CHECKED_OPS: dict[str, Callable[[Any, Any], Any]] = {
    "det": lambda t, a: t.linalg.det(a),
    "slogdet": lambda t, a: t.linalg.slogdet(a),
    "logdet": lambda t, a: t.logdet(a),
    "inv": lambda t, a: t.linalg.inv(a),
    "inv_ex": lambda t, a: t.linalg.inv_ex(a),
    "solve": lambda t, a: t.linalg.solve(a, a),
    "solve_ex": lambda t, a: t.linalg.solve_ex(a, a),
    "cholesky": lambda t, a: t.linalg.cholesky(a),
    "cholesky_ex": lambda t, a: t.linalg.cholesky_ex(a),
    "eigh": lambda t, a: t.linalg.eigh(a),
    "eigvalsh": lambda t, a: t.linalg.eigvalsh(a),
    "svd": lambda t, a: t.linalg.svd(a),
    "svdvals": lambda t, a: t.linalg.svdvals(a),
    "qr": lambda t, a: t.linalg.qr(a),
    "lu_factor": lambda t, a: t.linalg.lu_factor(a),
    "lu": lambda t, a: t.linalg.lu(a),
    "matrix_power": lambda t, a: t.linalg.matrix_power(a, -1),
    "pinv": lambda t, a: t.linalg.pinv(a),
    "matrix_rank": lambda t, a: t.linalg.matrix_rank(a),
    "cond": lambda t, a: t.linalg.cond(a),
    "lstsq": lambda t, a: t.linalg.lstsq(a, a),
    "solve_triangular": lambda t, a: t.linalg.solve_triangular(a, a, upper=True),
}


@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "int64"])
@pytest.mark.parametrize("name", sorted(_DTYPE_CHECKED_OPS))
def test_linalg_dtype_errors_are_pytorchs(name: str, dtype: str) -> None:
    """Half, bfloat16 and integer inputs raise what PyTorch raises, op by op: its checks'
    RuntimeError ('Low precision dtypes not supported', 'Expected a floating point'), or its
    CPU kernel's NotImplementedError ('"lu_cpu" not implemented for 'Half''); rt raised a
    RuntimeError for all, or NumPy's TypeError."""
    ref = _ref()
    op = _DTYPE_CHECKED_OPS[name]
    _same_error(
        lambda: op(torch, torch.eye(2, dtype=getattr(torch, dtype))),
        lambda: op(ref, ref.eye(2, dtype=getattr(ref, dtype))),
    )


def test_logdet_errors_name_logdet() -> None:
    ref = _ref()
    for case in (
        lambda t: t.logdet(t.ones(3)),
        lambda t: t.logdet(t.ones(2, 3)),
        lambda t: t.logdet(t.ones(2, 2, dtype=t.int64)),
    ):
        _same_error(lambda: case(torch), lambda: case(ref))


_OUT_OPS: dict[str, Callable[[Any, Any], Any]] = {
    "cholesky": lambda t, out: t.linalg.cholesky(t.eye(3, dtype=t.float64) * 2, out=out),
    "inv": lambda t, out: t.linalg.inv(t.eye(3, dtype=t.float64) * 2, out=out),
    "matrix_power": lambda t, out: t.linalg.matrix_power(t.eye(3, dtype=t.float64), 2, out=out),
    "norm": lambda t, out: t.linalg.norm(t.eye(3, dtype=t.float64), out=out),
    "matrix_norm": lambda t, out: t.linalg.matrix_norm(t.eye(3, dtype=t.float64), out=out),
    "cond": lambda t, out: t.linalg.cond(t.eye(3, dtype=t.float64), out=out),
    "pinv": lambda t, out: t.linalg.pinv(t.eye(3, dtype=t.float64), out=out),
    "matrix_rank": lambda t, out: t.linalg.matrix_rank(t.eye(3, dtype=t.float64), out=out),
    "inner": lambda t, out: t.inner(t.eye(3, dtype=t.float64), t.eye(3, dtype=t.float64), out=out),
    "tensordot": lambda t, out: t.tensordot(
        t.eye(3, dtype=t.float64), t.eye(3, dtype=t.float64), 1, out=out
    ),
    "dot": lambda t, out: t.dot(t.ones(3, dtype=t.float64), t.ones(3, dtype=t.float64), out=out),
    "multi_dot": lambda t, out: t.linalg.multi_dot([t.eye(3, dtype=t.float64)] * 2, out=out),
    "householder": lambda t, out: t.linalg.householder_product(
        t.eye(3, dtype=t.float64), t.zeros(3, dtype=t.float64), out=out
    ),
    "vecdot": lambda t, out: t.linalg.vecdot(
        t.ones(3, dtype=t.float64), t.ones(3, dtype=t.float64), out=out
    ),
}


@pytest.mark.parametrize("out_dtype", ["float64", "float32", "int32"])
@pytest.mark.parametrize("name", sorted(_OUT_OPS))
def test_out_dtypes_are_pytorchs(name: str, out_dtype: str) -> None:
    """Each op's out= dtype rule as PyTorch's: cond/pinv/householder_product/matrix_rank take
    an out the result safely casts to (rt refused a float32 out), tensordot/inner/dot want the
    very dtype (rt cast into float32), and each its own text where it refuses."""
    ref = _ref()
    op = _OUT_OPS[name]
    try:
        want = op(ref, ref.empty(0, dtype=getattr(ref, out_dtype)))
    except RuntimeError:
        _same_error(
            lambda: op(torch, torch.empty(0, dtype=getattr(torch, out_dtype))),
            lambda: op(ref, ref.empty(0, dtype=getattr(ref, out_dtype))),
        )
        return
    got = op(torch, torch.empty(0, dtype=getattr(torch, out_dtype)))
    assert got.dtype == getattr(torch, out_dtype)
    assert_equal(got, want.numpy(), exact_dtype=False)


def test_chain_matmul_and_cholesky_inverse_checks() -> None:
    """chain_matmul takes matrices only (rt took multi_dot's end vectors) and at least one;
    cholesky_inverse's kernel error for a non-float input (rt: triangular_solve's)."""
    ref = _ref()
    for case in (
        lambda t: t.chain_matmul(t.ones(3)),
        lambda t: t.chain_matmul(t.ones(2, 3), t.ones(3)),
        lambda t: t.chain_matmul(),
        lambda t: t.cholesky_inverse(t.eye(2, dtype=t.int64)),
        lambda t: t.cholesky_inverse(t.eye(2, dtype=t.float16)),
        lambda t: t.cholesky_inverse(t.eye(2, dtype=t.bool)),
    ):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # chain_matmul's deprecation
            _same_error(lambda: case(torch), lambda: case(ref))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert_equal(
            torch.chain_matmul(torch.ones(2, 3), torch.ones(3, 4)), torch.full((2, 4), 3.0)
        )


def test_solve_triangular_requires_upper() -> None:
    ref = _ref()
    _same_error(
        lambda: torch.linalg.solve_triangular(torch.eye(3), torch.ones(3, 1)),
        lambda: ref.linalg.solve_triangular(ref.eye(3), ref.ones(3, 1)),
    )
