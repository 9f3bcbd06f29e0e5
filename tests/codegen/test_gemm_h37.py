"""The products' last row block of TAIL_ROWS rows (codegen.gemm): every remainder of M by MR,
each panel width, layouts that chunk K, batches and an addend give the bits of the rows
computed in MR-row blocks, close to a float64 reference."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from codegen import gemm

RNG = np.random.default_rng(37)


def _product(a: np.ndarray, b: np.ndarray, addend: np.ndarray | None = None) -> np.ndarray:
    spec = gemm.GemmSpec.of(a.shape, b.shape, a.dtype)
    assert spec is not None
    spec = dataclasses.replace(spec, addend=addend is not None)
    shape = np.broadcast_shapes(a.shape[:-2], b.shape[:-2]) + (spec.m, spec.n)
    return gemm.compiled([spec])[spec].apply(a, b, shape, addend)


def _close(got: np.ndarray, a: np.ndarray, b: np.ndarray) -> None:
    want = np.matmul(a.astype(np.float64), b.astype(np.float64))
    bound = np.matmul(np.abs(a.astype(np.float64)), np.abs(b.astype(np.float64)))
    eps = np.finfo(a.dtype).eps
    assert np.all(np.abs(got - want) <= 2 * a.shape[-1] * eps * bound + 1e-300)


def test_the_tail_block_is_smaller_than_a_row_block():
    assert 0 < gemm.TAIL_ROWS < gemm.MR


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("n", [3, 20, 40, 64, 103])  # one, two and all vectors of a panel
@pytest.mark.parametrize("la", ["c", "t"])  # "t": A transposed, K in chunks of KC
def test_every_remainder_of_m_gives_the_bits_of_full_blocks(dtype, n, la):
    """Rows in the tail block (M % MR up to TAIL_ROWS), in a last MR-row block reaching past
    M, or in a full block are summed in the same order: a product's rows are bit for bit
    those of the same rows in a product of more rows, computed by other blocks."""
    k = gemm.KC + 37
    big = RNG.standard_normal((2 * gemm.MR + 5, k)).astype(dtype)
    if la == "t":
        big = np.ascontiguousarray(big.T).T
    b = RNG.standard_normal((k, n)).astype(dtype)
    whole = _product(big, b)
    _close(whole, big, b)
    for m in range(1, big.shape[0] + 1):
        for start in (0, big.shape[0] - m):  # the rows first or last in the big product
            part = _product(big[start:start + m], b)
            assert np.array_equal(part, whole[start:start + m]), (m, start)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("m", [4, 8, 16, 64])  # only a tail; one block and a tail; ...
def test_batched_tails_with_an_addend(dtype, m):
    """A batch of products whose last row blocks are tails (attention's 64 rows, a
    convolution's 8 or 16 output channels), B transposed, the addend added to the rounded
    product."""
    a = RNG.standard_normal((3, 2, m, 72)).astype(dtype)
    b = np.swapaxes(RNG.standard_normal((2, 70, 72)).astype(dtype), -1, -2)
    e = RNG.standard_normal((m, 70)).astype(dtype)
    plain = _product(a, b)
    _close(plain, a, b)
    added = _product(a, b, e)
    assert np.array_equal(added, (plain + e).astype(dtype))
