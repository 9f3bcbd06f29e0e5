"""gpt's elementwise and row kernels (issue 11's speed): what fusion makes of them, and that
they compute what eager mode does."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import planner
import runtime as rt
from codegen import ir as K
from codegen.builder import KernelBuilder
from planner.fusion import _reduce_row

F32 = "float32"


def _max_passes(kernel: K.Kernel) -> int:
    return sum(isinstance(e, K.Reduce) and e.op == "max" for e in kernel.exprs)


def _compiled_and_eager(step, arrays: list[np.ndarray]
                        ) -> tuple[object, list[np.ndarray], list[np.ndarray]]:
    """``step`` compiled (its second call, no fallback to eager) and eager on ``arrays`` as
    leaves: (the compiled step, its result and grads, eager mode's)."""
    def run(fn: object) -> list[np.ndarray]:
        ts = [rt.tensor(a, requires_grad=True) for a in arrays]
        out = fn(*ts)
        return [out.detach().numpy(), *(t.grad.numpy() for t in ts)]

    compiled = planner.compile(step)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no fallback to eager
        run(compiled)
        got = run(compiled)
    return compiled, got, run(step)


def test_causal_softmax_takes_its_row_max_once() -> None:
    """SDPA's causal softmax zeroes all -inf rows (where(max == -inf, 0, s)) and takes the
    max of that again: the same row max, or 0, needs no second pass over the row."""
    rng = np.random.default_rng(0)
    arrays = [rng.standard_normal((2, 3, 8, 16)).astype(np.float32) for _ in range(3)]

    def step(q: rt.Tensor, k: rt.Tensor, v: rt.Tensor) -> rt.Tensor:
        y = rt.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)
        y.sum().backward()
        return y

    compiled, got, want = _compiled_and_eager(step, arrays)
    for g, w in zip(got, want):  # the backward's row sums cancel: a few ulps of its inputs
        np.testing.assert_allclose(g, w, rtol=2e-6, atol=1e-6)
    softmax = [k for k in compiled.plan.kernels if any(
        isinstance(e, K.Unary) and e.op == "exp" for e in k.kernel.exprs)]
    assert softmax
    assert all(_max_passes(k.kernel) == 1 for k in softmax), [k.source for k in softmax]


def _where_max(nonempty: bool) -> tuple[KernelBuilder, int]:
    kb = KernelBuilder()
    x = kb.load(0)
    m = kb.reduce("max", x, F32)
    neg_inf = kb.const(-np.inf, F32)
    cond = kb.binary("eq", m, neg_inf, "bool")
    zeroed = kb.where(cond, kb.const(0.0, F32), x, F32)
    row_value = {m, cond, neg_inf, zeroed - 1}
    return kb, _reduce_row(kb, "max", zeroed, F32, lambda i: i not in row_value and i != 1,
                           nonempty)


def test_max_of_a_row_where_is_a_where_of_row_maxes() -> None:
    kb, out = _where_max(nonempty=True)
    assert kb.exprs[out] == K.Where(3, 4, 1, F32)  # where(max == -inf, 0, max), no new pass
    assert sum(isinstance(e, K.Reduce) for e in kb.exprs) == 1


def test_empty_rows_keep_their_reduction() -> None:
    """The max of an empty row is the reduction's identity, not where(...)'s row value."""
    kb, out = _where_max(nonempty=False)
    assert kb.exprs[out] == K.Reduce("max", 5, F32)


def test_softmax_probabilities_are_recomputed_not_saved() -> None:
    """The backward reads the softmax's exp e itself: it recomputes the probabilities e / s
    from e and the row sums rather than the forward storing them (an array fewer written and
    read), with the same results."""
    rng = np.random.default_rng(1)
    arrays = [rng.standard_normal((2, 4, 64, 16)).astype(np.float32) for _ in range(3)]

    def step(q: rt.Tensor, k: rt.Tensor, v: rt.Tensor) -> rt.Tensor:
        y = rt.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)
        (y * y).sum().backward()
        return y

    compiled, got, want = _compiled_and_eager(step, arrays)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=2e-6, atol=1e-6)
    kernels = [k.kernel for k in compiled.plan.kernels]
    forward = [k for k in kernels if any(isinstance(e, K.Unary) and e.op == "exp"
                                         for e in k.exprs)]
    assert len(forward) == 1
    saved = [forward[0].exprs[o.value] for o in forward[0].outputs]
    assert not any(isinstance(e, K.Binary) and e.op == "div" for e in saved), saved


# float32 erf (codegen.llvm_math._erf32, GELU's): max ulp against float64 on a dense sweep of
# every float32 below 4.5 (every 3rd: 1.067 at 1.0743, where the longer tables made 1.107; every 41st here), tails, subnormals,
# inf, nan
ERF32_MAX_ULP = 1.08


def _float32_erf_sweep(step: int) -> np.ndarray:
    top = np.array(4.5, np.float32).view(np.int32)
    below = np.arange(0, top, step, dtype=np.int32).view(np.float32)  # subnormals from 0
    tails = np.geomspace(4.5, 3e38, 20_001, dtype=np.float32)
    special = np.array([0.0, np.inf, np.nan, 1.0, np.float32(1.0) - np.float32(2**-24), 4.0,
                        np.nextafter(np.float32(4.0), np.float32(5.0)),
                        np.finfo(np.float32).smallest_subnormal, np.finfo(np.float32).max],
                       np.float32)
    x = np.concatenate([below, tails, special])
    return np.concatenate([x, -x])


def test_float32_erf_is_within_its_ulps() -> None:
    special = pytest.importorskip("scipy.special")
    from tests.codegen.test_llvm_math import run

    x = _float32_erf_sweep(41)
    got = run("erf", x)
    exact = special.erf(x.astype(np.float64))
    rounded = exact.astype(np.float32)
    nan = np.isnan(x)
    assert np.isnan(got[nan]).all()
    assert np.array_equal(got[np.isinf(x)], np.sign(x[np.isinf(x)]))
    ok = ~nan
    err = np.abs(got[ok].astype(np.float64) - exact[ok]) / np.spacing(np.abs(rounded[ok])).astype(
        np.float64)
    err[got[ok] == rounded[ok]] = 0.0
    worst = int(np.argmax(err))
    assert err[worst] <= ERF32_MAX_ULP, f"{err[worst]:.3f} ulp at x={x[ok][worst]!r}"
    assert np.array_equal(np.signbit(got[x == 0]), np.signbit(x[x == 0]))  # erf(-0) = -0


def test_float32_erf_is_short() -> None:
    """GELU's cost in gpt is its erf: 7 fused multiply-adds for |x| < 1 and 6 for the tail's
    polynomial, with no exact split of a*a (the 8- and 12-term tables and the split made 29
    fused multiply-adds of 53 instructions; -a*a + L(a) is one more)."""
    from llvmlite import ir

    from codegen.llvm_math import _function

    body = str(_function(ir.Module(), "erf", "float32"))
    assert body.count("llvm.fma") <= 23
    assert sum(" = " in line for line in body.splitlines()) <= 44


def test_layer_norm_recomputes_its_normalized_rows_from_the_centered_ones() -> None:
    """A layer norm between two products: its backward reads x - mean and (x - mean) / std.
    Neither is worth recomputing from x (kept alive longer in its stead); the second is
    worth recomputing from the first, which stays saved, and the row std: the forward
    stores one array fewer, with the same results."""
    rng = np.random.default_rng(2)
    arrays = [rng.standard_normal(s).astype(np.float32) for s in ((128, 64), (64, 256),
                                                                   (256,), (256,), (256, 32))]

    def step(x: rt.Tensor, w1: rt.Tensor, w: rt.Tensor, b: rt.Tensor, w2: rt.Tensor
             ) -> rt.Tensor:
        h = rt.nn.functional.layer_norm(x @ w1, (256,), w, b)
        loss = ((h @ w2) ** 2).sum()
        loss.backward()
        return loss

    compiled, got, want = _compiled_and_eager(step, arrays)
    for g, w in zip(got, want):  # the sums of products round apart: ulps of the largest
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=2e-6 * np.abs(w).max())
    forward = [k.kernel for k in compiled.plan.kernels
               if any(isinstance(e, K.Unary) and e.op == "sqrt" for e in k.kernel.exprs)]
    assert len(forward) == 1
    k = forward[0]
    full = [o for o in k.outputs if K.output_shape(k, o) == k.domain]
    ops = sorted(k.exprs[o.value].op for o in full)
    assert ops == ["add", "sub"], ops  # its result and x - mean; not (x - mean) / std


def _log_softmax(cols: int) -> K.Kernel:
    return K.Kernel("logsm", (64, cols), 1, (K.Input("x", F32, (cols, 1)),),
                    (K.Load(0), K.Reduce("max", 0, F32), K.Binary("sub", 0, 1, F32),
                     K.Unary("exp", 2, F32), K.Reduce("sum", 3, F32), K.Unary("log", 4, F32),
                     K.Binary("sub", 2, 5, F32)),
                    (K.Output("y", 6, F32),))


def test_short_rows_leave_less_than_a_vector_to_scalar_code() -> None:
    """A row of 103 (gpt's vocabulary) ran one vector step of 4 x 16 and 39 scalar exps."""
    from codegen.llvm import interleave
    from codegen.llvm_math import lanes

    for cols in (103, 64, 256, 1000, 7):
        k = _log_softmax(cols)
        n = interleave(k)
        assert cols % (n * lanes(F32)) < lanes(F32) or n == 1, (cols, n)
    assert interleave(_log_softmax(256)) == interleave(_log_softmax(64)) == 4


def test_short_row_log_softmax_computes_it() -> None:
    from codegen_testutil import build, run

    x = np.random.default_rng(3).standard_normal((64, 103)).astype(np.float32) * 4
    k = _log_softmax(103)
    got, = run(build([k]), k, [x])
    w = x.astype(np.float64)
    want = w - w.max(1, keepdims=True)
    want -= np.log(np.exp(want).sum(1, keepdims=True))
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=2e-6)
