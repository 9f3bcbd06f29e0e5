"""Generated small matrix products (codegen.gemm): every layout, shape edge and dtype against
a float64 reference, what qualifies, and determinism."""

from __future__ import annotations

import dataclasses
import numpy as np
import pytest

from codegen import gemm

RNG = np.random.default_rng(7)


def _operand(shape: tuple[int, ...], layout: str, dtype: type) -> np.ndarray:
    """An array of ``shape`` laid out as ``layout``: "c" C-contiguous, "t" the transpose of a
    C-contiguous array (last two axes), "s" a strided slice, "r" reversed rows and columns,
    "b" broadcast along the rows (stride 0)."""
    if layout == "c":
        return RNG.standard_normal(shape).astype(dtype)
    if layout == "t":
        return np.swapaxes(RNG.standard_normal(shape[:-2] + shape[-2:][::-1]).astype(dtype),
                           -1, -2)
    if layout == "s":
        big = RNG.standard_normal(shape[:-2] + (2 * shape[-2] + 1, 3 * shape[-1] + 2))
        return big.astype(dtype)[..., 1::2, 2::3][..., :shape[-2], :shape[-1]]
    if layout == "r":
        return RNG.standard_normal(shape).astype(dtype)[..., ::-1, ::-1]
    if layout == "b":
        row = RNG.standard_normal(shape[:-2] + (1, shape[-1])).astype(dtype)
        return np.broadcast_to(row, shape)
    raise AssertionError(layout)


def _close(got: np.ndarray, a: np.ndarray, b: np.ndarray) -> None:
    want = np.matmul(a.astype(np.float64), b.astype(np.float64))
    assert got.shape == want.shape and got.dtype == a.dtype
    assert got.flags.c_contiguous
    # k terms of |a||b| bound the rounding of a sum of k products
    bound = np.matmul(np.abs(a.astype(np.float64)), np.abs(b.astype(np.float64)))
    eps = np.finfo(a.dtype).eps
    assert np.all(np.abs(got - want) <= 2 * a.shape[-1] * eps * bound + 1e-300)


SHAPES = [(1, 1, 1), (7, 5, 3), (13, 17, 33), (32, 64, 64), (32, 64, 10), (10, 32, 64),
          (64, 8, 128), (6, 3, 16), (5, 16, 65), (64, 128, 128), (3, 300, 2), (5, 256, 70),
          (9, 512, 128)]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("m,k,n", SHAPES)
@pytest.mark.parametrize("la,lb", [("c", "c"), ("c", "t"), ("t", "c"), ("t", "t"),
                                   ("s", "s"), ("r", "r"), ("b", "t"), ("c", "b")])
def test_product_equals_the_float64_reference(dtype, m, k, n, la, lb):
    a, b = _operand((m, k), la, dtype), _operand((k, n), lb, dtype)
    assert gemm.GemmSpec.of(a.shape, b.shape, dtype) is not None
    _close(gemm.matmul(a, b), a, b)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("a_shape,b_shape", [((2, 3, 8, 16), (2, 3, 16, 8)),
                                             ((4, 9, 5), (5, 20)), ((9, 5), (4, 5, 20)),
                                             ((1, 3, 4, 6), (1, 3, 6, 2))])
def test_batched_products(dtype, a_shape, b_shape):
    a, b = _operand(a_shape, "c", dtype), _operand(b_shape, "c", dtype)
    assert gemm.GemmSpec.of(a.shape, b.shape, dtype) is not None
    _close(gemm.matmul(a, b), a, b)
    bt = _operand(b_shape, "t", dtype)  # a batch of transposed matrices: constant strides
    _close(gemm.matmul(a, bt), a, bt)


def test_same_bits_every_call_and_row_blocks_overlap_consistently():
    # 13 rows: the last row block of the micro-kernel is moved up over rows computed before
    a, b = _operand((13, 40), "c", np.float32), _operand((40, 70), "t", np.float32)
    first = gemm.matmul(a, b)
    assert np.array_equal(first, gemm.matmul(a, b))
    # each row is computed the same way whatever block it falls in: a row alone gives it too
    for i in (0, 6, 12):
        assert np.array_equal(gemm.matmul(a[i:i + 1], b)[0], first[i])


@pytest.mark.parametrize("a_shape,b_shape,dtype,why", [
    ((4, 4), (4, 4), np.int64, "integer"),
    ((4,), (4, 4), np.float32, "1-D"),
    ((2, 4, 4), (3, 4, 4), np.float32, "batches that do not broadcast"),
    ((4, 5), (6, 4), np.float32, "mismatched k"),
    ((0, 5), (5, 4), np.float32, "empty"),
])
def test_what_does_not_qualify_runs_numpy(a_shape, b_shape, dtype, why):
    a, b = np.ones(a_shape, dtype), np.ones(b_shape, dtype)
    assert gemm.GemmSpec.of(a.shape, b.shape, dtype) is None, why
    if why not in ("mismatched k", "batches that do not broadcast"):
        assert np.array_equal(gemm.matmul(a, b), np.matmul(a, b))


@pytest.mark.parametrize("m,k,n,dtype", [(13, 300, 70, np.float32), (7, 4096, 64, np.float32),
                                         (2, 8192, 3, np.float64), (40, 129, 5, np.float64)])
def test_k_in_chunks_gives_the_bits_of_k_at_once(m, k, n, dtype):
    """A transposed A (or a K past PACK_BYTES) runs K in chunks of KC, each starting from the
    sums the one before stored: the same bits as all of K at once (a C-ordered A of K within
    PACK_BYTES), an addend added after the last chunk only; close to numpy's product."""
    a = _operand((m, k), "c", dtype)
    a_t = np.ascontiguousarray(a.T).T  # the same values, k-steps a row of A.T apart
    b = _operand((k, n), "c", dtype)
    spec = gemm.GemmSpec.of(a.shape, b.shape, dtype)
    assert spec is not None
    with_add = gemm.compiled([dataclasses.replace(spec, addend=True)])
    product = gemm.compiled([spec])[spec]
    addend = _operand((1, n), "c", dtype)
    outs = []
    for x in (a, a_t):
        out, added = np.empty((m, n), dtype), np.empty((m, n), dtype)
        product.run(x, b, out)
        with_add[dataclasses.replace(spec, addend=True)].run(x, b, added, addend)
        outs.append((out, added))
    assert k > gemm.KC and np.array_equal(outs[0][0], outs[1][0])
    assert np.array_equal(outs[0][1], outs[1][1])
    assert np.array_equal(outs[0][1], (outs[0][0] + addend).astype(dtype))
    _close(outs[1][0], a, b)


def test_batches_of_any_layout_and_broadcast():
    a = _operand((4, 6, 8, 5), "c", np.float32)[:, ::2]  # batch strides (240, 80) x (4, 3)
    b = _operand((4, 3, 5, 7), "c", np.float32)
    a_odd = np.swapaxes(_operand((6, 4, 8, 5), "c", np.float32), 0, 1)[:, :3]
    b_row = _operand((1, 3, 5, 7), "t", np.float32)  # broadcast along the first batch axis
    b_col = _operand((4, 1, 5, 7), "c", np.float32)[..., ::-1, :]
    for x, y in ((a, b), (a_odd, b), (a, b_row), (a_odd, b_col), (a[0, 0], b), (a, b[0, 0]),
                 (_operand((2, 1, 8, 5), "c", np.float32), _operand((3, 5, 7), "t", np.float32))):
        assert gemm.GemmSpec.of(x.shape, y.shape, np.float32) is not None
        _close(gemm.matmul(x, y), x, y)


def test_one_module_per_dtype_serves_every_shape():
    specs = [gemm.GemmSpec.of((m, k), (k, n), dtype)
             for m, k, n in ((3, 8, 5), (40, 300, 700)) for dtype in (np.float32, np.float64)]
    products = gemm.compiled(specs)
    for dtype in ("float32", "float64"):
        modules = {id(p._module) for s, p in products.items() if s.dtype == dtype}
        assert len(modules) == 1
    # the code holds no shape: a product of a new shape loads and compiles nothing
    loaded = dict(gemm._modules)
    gemm.matmul(np.ones((123, 45), np.float32), np.ones((45, 67), np.float32))
    assert gemm._modules == loaded


def test_object_layout_is_checked():
    assert gemm.object_strides_ok()  # CPython: the products' object entry is used


def test_a_large_product_splits_across_threads_to_the_same_bits():
    import runtime as rt

    a, b = _operand((96, 300), "c", np.float32), _operand((300, 700), "t", np.float32)
    spec = gemm.GemmSpec.of(a.shape, b.shape, np.float32)
    product = gemm.compiled([spec])[spec]
    assert product.split and product.items == 11  # 700 columns: 10 panels of 64, one of 60
    previous = rt.get_num_threads()
    try:
        outs = []
        for threads in (1, 2, 3):
            rt.set_num_threads(threads)
            out = np.empty((96, 700), np.float32)
            product.run(a, b, out)
            outs.append(out)
    finally:
        rt.set_num_threads(previous)
    assert all(np.array_equal(outs[0], o) for o in outs[1:])
    _close(outs[0], a, b)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("a_shape,b_shape,e_shape", [
    ((13, 40), (40, 70), (13, 70)), ((13, 40), (40, 70), (70,)), ((13, 40), (40, 70), (1, 70)),
    ((3, 7, 9), (9, 20), (3, 1, 20)), ((3, 7, 9), (3, 9, 20), (7, 20)), ((5, 3), (3, 2), (2,)),
])
def test_an_addend_is_added_to_the_rounded_product(dtype, a_shape, b_shape, e_shape):
    a, b = _operand(a_shape, "c", dtype), _operand(b_shape, "t", dtype)
    e = _operand(e_shape, "c", dtype)
    got = gemm.matmul(a, b, e)
    # the two steps' numbers: the product, rounded, then the addend
    assert np.array_equal(got, np.add(gemm.matmul(a, b), e))
    assert gemm.addend_fits(e, got.shape, np.dtype(dtype))
    sliced = _operand((a_shape[-2] * 2,) + e_shape[-1:], "c", dtype)[::2]
    if len(e_shape) == 2 and e_shape[0] != 1:
        assert np.array_equal(gemm.matmul(a, b, sliced), np.add(gemm.matmul(a, b), sliced))
    column_strided = _operand((e_shape[-1] * 2,), "c", dtype)[::2]
    assert not gemm.addend_fits(column_strided, got.shape, np.dtype(dtype))
    assert np.array_equal(gemm.matmul(a, b, column_strided),
                          np.add(gemm.matmul(a, b), column_strided))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("m,k,n", [(1, 128, 1), (8, 4096, 9), (16, 1024, 72), (3, 131, 5),
                                   (16, 200, 130), (7, 129, 64), (5, 300, 3), (128, 1024, 10),
                                   (45, 257, 16), (70, 300, 1)])
def test_dot_products_where_both_operands_run_along_k(dtype, m, k, n):
    """A's rows and B's columns contiguous, few rows of A (gemm.DOT_MAX_M) and K of
    DOT_MIN_K or more, or few columns of C (DOT_MAX_N) and K of DOT_NARROW_MIN_K or more: dot
    products (partial sums over k, added pairwise), within the reference's rounding bound;
    batched and with an addend (the rounded product, then the addend), the same bits every
    call."""
    assert (m <= gemm.DOT_MAX_M and k >= gemm.DOT_MIN_K) or (
        n <= gemm.DOT_MAX_N and k >= gemm.DOT_NARROW_MIN_K)
    a, b = _operand((m, k), "c", dtype), _operand((k, n), "t", dtype)
    got = gemm.matmul(a, b)
    _close(got, a, b)
    assert np.array_equal(got, gemm.matmul(a, b))
    batch_a, batch_b = _operand((3, m, k), "c", dtype), _operand((3, k, n), "t", dtype)
    _close(gemm.matmul(batch_a, batch_b), batch_a, batch_b)
    e = _operand((n,), "c", dtype)
    assert np.array_equal(gemm.matmul(a, b, e), np.add(got, e))
