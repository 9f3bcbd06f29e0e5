"""Rows shorter than a vector (cross-entropy over 10 classes): a kernel evaluating a math
function over such rows runs them in groups (``codegen.llvm.group_rows``,
``KernelEmitter._emit_grouped``), its row values (a log of a row's sum) one vector across a
group's rows. Checked: every row length 1..40 for sum, max, logsumexp and log_softmax against
float64 numpy and, bit for bit, against the row-at-a-time code; no access past an array's end
(arrays ending at a guard page); results independent of how the rows are split."""

from __future__ import annotations

import ctypes
import mmap
import re
from collections.abc import Callable, Iterator
from contextlib import contextmanager

import numpy as np
import pytest

import codegen.llvm as L
from codegen import ir as K
from codegen import target
from codegen.builder import KernelBuilder
from codegen.launch import cpu_launch_form

from codegen_testutil import build, inputs_for

F32 = "float32"
ROWS = 37  # a group of 32 and a partial one
PROT_NONE = 0  # POSIX: no access (Python's mmap module has no name for it)


def _sum(kb: KernelBuilder, x: int) -> list[int]:
    return [kb.reduce("sum", x, F32)]


def _max(kb: KernelBuilder, x: int) -> list[int]:
    return [kb.reduce("max", x, F32)]


def _logsumexp(kb: KernelBuilder, x: int) -> list[int]:
    m = kb.reduce("max", x, F32)
    e = kb.unary("exp", kb.binary("sub", x, m, F32), F32)
    return [kb.binary("add", kb.unary("log", kb.reduce("sum", e, F32), F32), m, F32)]


def _log_softmax(kb: KernelBuilder, x: int) -> list[int]:
    """As mlp_small's fused kernel: x + bias, its row max, x - max - log(sum(exp(x - max)))."""
    y = kb.binary("add", x, kb.load(1), F32)
    m = kb.reduce("max", y, F32)
    shifted = kb.binary("sub", y, m, F32)
    total = kb.reduce("sum", kb.unary("exp", shifted, F32), F32)
    return [m, kb.binary("sub", shifted, kb.unary("log", total, F32), F32)]


def _ref_logsumexp(x: np.ndarray) -> list[np.ndarray]:
    m = x.max(axis=1, keepdims=True)
    return [(np.log(np.exp(x - m).sum(axis=1, keepdims=True)) + m)[:, 0]]


def _ref_log_softmax(x: np.ndarray, bias: np.ndarray) -> list[np.ndarray]:
    y = x + bias
    m = y.max(axis=1, keepdims=True)
    return [m[:, 0], y - m - np.log(np.exp(y - m).sum(axis=1, keepdims=True))]


CASES: dict[str, tuple[Callable[[KernelBuilder, int], list[int]],
                       Callable[..., list[np.ndarray]]]] = {
    "sum": (_sum, lambda x: [x.sum(axis=1)]),
    "max": (_max, lambda x: [x.max(axis=1)]),
    "logsumexp": (_logsumexp, _ref_logsumexp),
    "log_softmax": (_log_softmax, _ref_log_softmax),
}


def _kernel(case: str, rows: int, n: int, name: str = "k") -> tuple[K.Kernel, list[np.ndarray]]:
    rng = np.random.default_rng(n)
    arrays = [(3 * rng.standard_normal((rows, n))).astype(np.float32)]
    if case == "log_softmax":
        arrays.append(rng.standard_normal(n).astype(np.float32))
    kb = KernelBuilder()
    values = CASES[case][0](kb, kb.load(0))
    outputs = tuple(K.Output(f"out{j}", v, F32) for j, v in enumerate(values))
    kernel = K.Kernel(name, (rows, n), 1, inputs_for(arrays, (rows, n)), tuple(kb.exprs),
                      outputs)
    return kernel, arrays


@contextmanager
def _groups(vectors: int) -> Iterator[None]:
    old = L.GROUP_VECTORS
    L.GROUP_VECTORS = vectors
    try:
        yield
    finally:
        L.GROUP_VECTORS = old


def _run(kernel: K.Kernel, arrays: list[np.ndarray], threads: int = 1) -> list[np.ndarray]:
    cm = build([kernel])
    outs = [np.full(K.output_shape(kernel, o), np.nan, np.float32) for o in kernel.outputs]
    cm.run(kernel, arrays, outs, threads=threads)
    return outs


@pytest.mark.parametrize("case", list(CASES))
def test_every_short_row_length(case: str) -> None:
    """Rows of 1..40 (grouped where the kernel has math in it): float64 numpy's results
    within float32 rounding, and the same bits as row-at-a-time code."""
    for n in range(1, 41):
        kernel, arrays = _kernel(case, ROWS, n)
        got = _run(kernel, arrays)
        with _groups(0):
            plain = _run(kernel, arrays)
        want = CASES[case][1](*(a.astype(np.float64) for a in arrays))
        for g, p, w in zip(got, plain, want, strict=True):
            np.testing.assert_allclose(g.reshape(w.shape), w, rtol=3e-6, atol=3e-6,
                                       err_msg=f"{case}, n={n}")
            np.testing.assert_array_equal(g, p, err_msg=f"{case}, n={n}")


def test_short_rows_with_math_are_grouped() -> None:
    """log_softmax over rows of 10 (and up to GROUP_BELOW_VECTORS vectors) runs in groups;
    without math, or over longer rows, a kernel runs a row at a time."""
    below = L.GROUP_BELOW_VECTORS * L.preferred_vector_bits() // 32
    assert L.group_rows(cpu_launch_form(_kernel("log_softmax", 32, 10)[0])) > 1
    assert L.group_rows(cpu_launch_form(_kernel("logsumexp", 32, below - 1)[0])) > 1
    assert L.group_rows(cpu_launch_form(_kernel("logsumexp", 32, below)[0])) == 1
    assert L.group_rows(cpu_launch_form(_kernel("max", 32, 10)[0])) == 1


def _body_ir(kernel: K.Kernel) -> str:
    text = str(target.optimize(L.render([kernel])))
    body = text[text.index(f"@{kernel.name}.body("):]
    return body[: body.index("\n}")]


def test_row_log_is_one_vector_across_rows() -> None:
    """The log of each row's sum (its division by a polynomial) is computed on vectors of a
    group's rows, not as a scalar per row."""
    kernel, _ = _kernel("log_softmax", 32, 10)
    body = _body_ir(kernel)
    assert re.search(r"fdiv (?:\w+ )*<\d+ x float>", body), body
    assert not re.search(r"fdiv (?:\w+ )*float ", body), body


def _guarded(nbytes: int) -> tuple[mmap.mmap, int]:
    """A mapping whose first ``nbytes`` rounded up to pages are readable and writable and
    whose next page faults on any access; returns it and the address where an array of
    ``nbytes`` must start to end at the guard page."""
    page = mmap.PAGESIZE
    size = -(-nbytes // page) * page
    region = mmap.mmap(-1, size + page, prot=mmap.PROT_READ | mmap.PROT_WRITE)
    base = ctypes.addressof(ctypes.c_char.from_buffer(region))
    libc = ctypes.CDLL(None, use_errno=True)
    libc.mprotect.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
    assert libc.mprotect(base + size, page, PROT_NONE) == 0, ctypes.get_errno()
    return region, base + size - nbytes


def _at_guard(shape: tuple[int, ...], keep: list[object]) -> np.ndarray:
    count = int(np.prod(shape))
    region, address = _guarded(4 * count)
    keep.append(region)
    return np.ctypeslib.as_array((ctypes.c_float * count).from_address(address)).reshape(shape)


@pytest.mark.skipif(not hasattr(mmap, "PROT_READ"), reason="needs POSIX mmap and mprotect")
@pytest.mark.parametrize("n", [1, 3, 7, 10, 15, 17, 33, 63])
def test_masked_lanes_stay_inside_arrays(n: int) -> None:
    """Every input and output ends at a page no access may touch: the last row's masked
    vectors (and a partial group's) read and write nothing past its end."""
    kernel, arrays = _kernel("log_softmax", ROWS, n)
    keep: list[object] = []
    guarded = []
    for a in arrays:
        g = _at_guard(a.shape, keep)
        g[...] = a
        guarded.append(g)
    outs = [_at_guard(K.output_shape(kernel, o), keep) for o in kernel.outputs]
    build([kernel]).run(kernel, guarded, outs, threads=1)
    want = _ref_log_softmax(*(a.astype(np.float64) for a in arrays))
    for g, w in zip(outs, want, strict=True):
        np.testing.assert_allclose(g.reshape(w.shape), w, rtol=3e-6, atol=3e-6)
    del outs, guarded


@pytest.mark.parametrize("threads", [2, 3, 4])
def test_groups_do_not_depend_on_threads(threads: int) -> None:
    """A split of the rows (a partial group in each chunk) gives the same bits."""
    kernel, arrays = _kernel("log_softmax", 101, 10)
    one = _run(kernel, arrays, threads=1)
    for got, want in zip(_run(kernel, arrays, threads=threads), one, strict=True):
        np.testing.assert_array_equal(got, want)


def _masked_softmax(dtype: str) -> tuple[KernelBuilder, list[int]]:
    """A causal softmax's row: rows all -inf give 0 (a bool row value, m == -inf, and a
    where), others exp(x - m) / sum."""
    kb = KernelBuilder()
    x = kb.load(0)
    m = kb.reduce("max", x, dtype)
    empty = kb.binary("eq", m, kb.const(-np.inf, dtype), "bool")
    shifted = kb.where(empty, kb.const(0.0, dtype), kb.binary("sub", x, m, dtype), dtype)
    e = kb.unary("exp", shifted, dtype)
    return kb, [kb.binary("div", e, kb.reduce("sum", e, dtype), dtype)]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_row_values_of_every_dtype(dtype: str) -> None:
    """Grouped rows keep float64 and bool row values too: the same bits as row-at-a-time
    code, and numpy's (a row all -inf gives 1 / n)."""
    for n in (1, 5, 10, 23):
        rng = np.random.default_rng(n)
        x = rng.standard_normal((ROWS, n)).astype(dtype)
        x[::3, : max(1, n // 2)] = -np.inf
        x[::7] = -np.inf
        kb, values = _masked_softmax(dtype)
        kernel = K.Kernel("k", (ROWS, n), 1, inputs_for([x], (ROWS, n)), tuple(kb.exprs),
                          tuple(K.Output(f"out{j}", v, dtype) for j, v in enumerate(values)))
        assert L.group_rows(cpu_launch_form(kernel)) > 1
        outs = [np.full((ROWS, n), np.nan, dtype)]
        build([kernel]).run(kernel, [x], outs, threads=1)
        with _groups(0):
            plain = [np.full((ROWS, n), np.nan, dtype)]
            build([kernel]).run(kernel, [x], plain, threads=1)
        np.testing.assert_array_equal(outs[0], plain[0])
        m = x.max(axis=1, keepdims=True)
        with np.errstate(invalid="ignore"):  # -inf - -inf, not chosen
            e = np.exp(np.where(m == -np.inf, 0, x - m))
        want = e / e.sum(axis=1, keepdims=True)
        np.testing.assert_allclose(outs[0], want, rtol=4 * np.finfo(dtype).eps, atol=0)
