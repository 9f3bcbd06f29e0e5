"""The machine's fused multiply-add for eager mode's add(alpha=), addcmul and lerp
(codegen.windows.fma, through runtime.ops.prims._fma): the same bits as the exact emulation it
replaces on the host, on random and special operands (infinities, NaN, signed zeros,
subnormals, products that overflow), and as PyTorch's kernels."""

from __future__ import annotations

import numpy as np
import pytest

from codegen import windows
from runtime.ops import prims
from runtime.ops.registry import without_generated_code

pytestmark = pytest.mark.skipif(not windows.available(),
                                reason="the generated functions are called as builtins")

SPECIAL = [0.0, -0.0, np.inf, -np.inf, np.nan, 1.0, -1.0, 1e-45, -1e-45, 1e-38, 3e38, -3e38,
           2.0 ** -149, 1e30, 1e-30, 0.5, 3.0]


def _operands(dtype: type, seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Every triple of SPECIAL values, then random ones of every magnitude."""
    rng = np.random.default_rng(seed)
    values = np.array(SPECIAL, dtype)
    grid = [g.ravel() for g in np.meshgrid(values, values, values, indexing="ij")]
    with np.errstate(all="ignore"):
        rand = [(rng.standard_normal(5000) * 10.0 ** rng.integers(-45, 40, 5000)).astype(dtype)
                for _ in range(3)]
    a, b, c = (np.concatenate([g, r]).astype(dtype) for g, r in zip(grid, rand, strict=True))
    return a, b, c


def _same(got: np.ndarray, want: np.ndarray) -> None:
    """The same values, zeros' signs included (any NaN for a NaN)."""
    assert got.dtype == want.dtype and got.shape == want.shape
    same = (got == want) & (np.signbit(got) == np.signbit(want)) | np.isnan(got) & np.isnan(want)
    assert same.all(), np.nonzero(~same)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_fma_equals_the_exact_emulation(dtype: type) -> None:
    a, b, c = _operands(dtype, 0)
    got = windows.fma(a, b, c)
    assert got is not None
    with without_generated_code(), np.errstate(all="ignore"):
        want = prims._fma(np, a, b, c)
    if dtype is np.float64:
        # the emulation's split overflows for |a| near float64's largest (1e308 * 1e-308 - 1):
        # no such operand here; test_fma_is_pytorchs covers it against the machine's
        assert np.abs(a[np.isfinite(a)]).max() < 1e300
    _same(got, want)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_a_broadcast_operand_is_read_as_one_element(dtype: type) -> None:
    a, b, c = _operands(dtype, 1)
    one = np.asarray(dtype(0.3))
    with without_generated_code(), np.errstate(all="ignore"):
        for args in ((one, b, c), (a, one, c), (a, b, one), (one, one, c), (a, b, c[:1])):
            got = windows.fma(*args)
            assert got is not None and got.shape == c.shape
            _same(got, prims._fma(np, *args))


def test_what_it_cannot_do_is_declined() -> None:
    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    assert windows.fma(x.T, x.T, x.T) is None  # not C-contiguous
    assert windows.fma(x, x.astype(np.float64), x) is None  # mixed dtypes
    assert windows.fma(x[:, :1], x, x) is None  # a broadcast of more than one element
    assert windows.fma(x.astype(np.int64), x.astype(np.int64), x.astype(np.int64)) is None
    # prims._fma computes those otherwise, with the same bits
    with np.errstate(all="ignore"):
        got = prims._fma(np, x.T, x.T, x.T)
        with without_generated_code():
            want = prims._fma(np, x.T, x.T, x.T)
    _same(got, want)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_fma_is_pytorchs(dtype: str) -> None:
    torch = pytest.importorskip("torch")
    a, b, c = _operands(np.dtype(dtype).type, 2)
    if dtype == "float64":
        a, b, c = (np.concatenate([x, [y]]) for x, y in zip((a, b, c), (1e308, 1e-308, -1.0),
                                                              strict=True))
    # addcmul(c, a, b, value=1) is fma(a * 1, b, c) in PyTorch's CPU kernel
    want = torch.addcmul(torch.from_numpy(c), torch.from_numpy(a), torch.from_numpy(b)).numpy()
    _same(prims._fma(np, a, b, c), want)


def test_the_emulation_is_pytorchs_near_float64s_largest() -> None:
    """Where no machine fma runs (a GPU, other layouts), the float64 emulation: operands
    near overflow (Veltkamp's split of them overflowed: 1e308 * 1e-308 - 1 came out as
    -1.1e-16, not -8.0e-17) and results that overflow are computed exactly."""
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(5)
    a = np.concatenate([[1e308, 1e-308, 1e308, -1e308, 1.7e308, 3e300],
                        rng.standard_normal(300) * 1e300])
    b = np.concatenate([[1e-308, 1e308, 2.0, 1e-300, 1.5, 1e8],
                        rng.standard_normal(300) * 1e-5])
    c = np.concatenate([[-1.0, -1.0, -1e308, 1.0, 1e308, -1.5e308],
                        rng.standard_normal(300) * 1e295])
    want = torch.addcmul(torch.from_numpy(c), torch.from_numpy(a), torch.from_numpy(b)).numpy()
    with without_generated_code(), np.errstate(all="ignore"):
        _same(prims._fma(np, a, b, c), want)
