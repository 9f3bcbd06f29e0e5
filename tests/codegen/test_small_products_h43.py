"""Products given B as the array whose last two axes it swaps (``GemmSpec.b_swapped``): the
bits of the same product given the transposed view, within float32 rounding of float64's."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from codegen import gemm

pytestmark = pytest.mark.skipif(not gemm.object_strides_ok(), reason="no product code here")


def _pair(spec: gemm.GemmSpec) -> tuple[gemm.Product, gemm.Product]:
    product = gemm.compiled([spec])[spec]
    return product, product.b_swapped


@pytest.mark.parametrize(("m", "n"), list(itertools.product((1, 2, 5, 9, 32), (1, 3, 9, 10,
                                                                                   17, 64, 70))))
def test_b_swapped_equals_the_transposed_view(m: int, n: int) -> None:
    rng = np.random.default_rng(m * 100 + n)
    for k in (1, 2, 7, 8, 9, 64, 130, 300):
        a = rng.standard_normal((m, k)).astype(np.float32)
        w = rng.standard_normal((n, k)).astype(np.float32)
        spec = gemm.GemmSpec.of(a.shape, (k, n), np.float32)
        assert spec is not None
        plain, swapped = _pair(spec)
        want = (a.astype(np.float64) @ w.T.astype(np.float64)).astype(np.float32)
        for given in (w, np.asfortranarray(w), np.ascontiguousarray(w[:, ::-1])[:, ::-1]):
            for a_given in (a, np.asfortranarray(a)):
                c = np.full((m, n), np.nan, np.float32)
                ref = np.empty((m, n), np.float32)
                swapped.run(a_given, given, c)
                plain.run(a_given, given.T, ref)
                np.testing.assert_array_equal(c, ref)
                np.testing.assert_allclose(c, want, rtol=1e-4, atol=1e-4 * np.sqrt(k))


def test_b_swapped_batched_and_with_an_addend() -> None:
    rng = np.random.default_rng(3)
    a = rng.standard_normal((3, 5, 12)).astype(np.float32)
    w = rng.standard_normal((1, 7, 12)).astype(np.float32)  # broadcast over the batch
    e = rng.standard_normal((7,)).astype(np.float32)
    spec = gemm.GemmSpec.of(a.shape, (1, 12, 7), np.float32)
    assert spec is not None
    for addend in (False, True):
        s = gemm.GemmSpec(spec.dtype, spec.batch, spec.m, spec.n, spec.k, addend=addend)
        plain, swapped = _pair(s)
        c = np.empty((3, 5, 7), np.float32)
        ref = np.empty((3, 5, 7), np.float32)
        swapped.run(a, w, c, e if addend else None)
        plain.run(a, w.swapaxes(-1, -2), ref, e if addend else None)
        np.testing.assert_array_equal(c, ref)
        want = a.astype(np.float64) @ w.swapaxes(-1, -2).astype(np.float64) + (e if addend
                                                                              else 0)
        np.testing.assert_allclose(c, want, rtol=1e-4, atol=1e-4)


def test_b_swapped_is_a_word_of_its_own() -> None:
    spec = gemm.GemmSpec("float32", 1, 4, 6, 8)
    plain, swapped = _pair(spec)
    assert swapped.spec.b_swapped and not plain.spec.b_swapped
    at = gemm._B_SWAPPED
    assert [w for i, w in enumerate(plain.words) if i != at] == \
        [w for i, w in enumerate(swapped.words) if i != at]
    assert (plain.words[at], swapped.words[at]) == (0, 1)
    assert plain.b_swapped is swapped  # made once


def _summed_as_dots(m: int, n: int, k: int) -> bool:
    """Whether ``(m, k) @ W.T`` (W of shape (n, k): B's columns contiguous) sums as dot
    products (lanes of partial sums, then added pairwise) rather than along k one step at a
    time: a first term of 2**24 and ones after it, in float32, keep none of the ones along k
    (2**24 + 1 rounds to 2**24) but keep those summed in the other lanes."""
    a = np.ones((m, k), np.float32)
    w = np.ones((n, k), np.float32)
    w[:, 0] = 2.0 ** 24
    spec = gemm.GemmSpec.of(a.shape, (k, n), np.float32)
    assert spec is not None
    c = np.empty((m, n), np.float32)
    gemm.compiled([spec])[spec].run(a, w.T, c)
    assert np.all(c == c[0, 0])
    assert c[0, 0] >= 2.0 ** 24
    return bool(c[0, 0] > 2.0 ** 24)


def test_a_small_narrow_product_of_a_transposed_weight_sums_as_dots() -> None:
    # mlp_small's classifier (32, 64) @ (64, 10) with W.T: no panel packed for 32 rows
    assert _summed_as_dots(32, 10, 64)
    assert _summed_as_dots(128, 3, 64)
    # a larger C, or K of one vector, keeps the panels
    assert not _summed_as_dots(64, 10, 64)
    assert not _summed_as_dots(32, 10, 16)


def test_row_blocks_cover_m_with_the_fewest_rows() -> None:
    mr, tail = gemm.MR, gemm.TAIL_ROWS
    assert gemm.row_blocks(32) == (4, 2)  # 32 rows, not 5 x 6 + 4 = 34
    assert gemm.row_blocks(8) == (0, 2)
    assert gemm.row_blocks(64) == (10, 1)
    for m in range(1, 400):
        blocks, tails = gemm.row_blocks(m)
        rows = blocks * mr + tails * tail
        assert rows >= m and rows - m < max(mr, tail), m
        assert tails * tail < m + tail and (blocks == 0 or blocks * mr < m + mr), m
        # no plan of MR blocks and tail blocks computes fewer rows (tails past M waste rows)
        best = min(b * mr + -(-max(m - b * mr, 0) // tail) * tail for b in range(m // mr + 2))
        assert rows == best, (m, rows, best)
        words = gemm.GemmSpec("float32", 1, m, 8, 8).dims()
        assert words[-2:] == (blocks, tails)


@pytest.mark.parametrize("m", list(range(1, 41)) + [127, 128, 130])
def test_products_of_every_row_count(m: int) -> None:
    rng = np.random.default_rng(m)
    for n, k in ((64, 64), (10, 64), (5, 7), (70, 33)):
        a = rng.standard_normal((m, k)).astype(np.float32)
        for b in (rng.standard_normal((k, n)).astype(np.float32),
                  rng.standard_normal((n, k)).astype(np.float32).T):
            c = gemm.matmul(a, b)
            np.testing.assert_allclose(c, a.astype(np.float64) @ b.astype(np.float64),
                                       rtol=1e-4, atol=1e-4)
