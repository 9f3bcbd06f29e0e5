"""gpt's elementwise and row kernels (issue 11's speed): what fusion makes of them, and that
they compute what eager mode does."""

from __future__ import annotations

import warnings

import numpy as np

import planner
import runtime as rt
from codegen import ir as K
from codegen.builder import KernelBuilder
from planner.fusion import _reduce_row

F32 = "float32"


def _max_passes(kernel: K.Kernel) -> int:
    return sum(isinstance(e, K.Reduce) and e.op == "max" for e in kernel.exprs)


def test_causal_softmax_takes_its_row_max_once() -> None:
    """SDPA's causal softmax zeroes all -inf rows (where(max == -inf, 0, s)) and takes the
    max of that again: the same row max, or 0, needs no second pass over the row."""
    rng = np.random.default_rng(0)
    arrays = [rng.standard_normal((2, 3, 8, 16)).astype(np.float32) for _ in range(3)]

    def step(q: rt.Tensor, k: rt.Tensor, v: rt.Tensor) -> rt.Tensor:
        y = rt.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)
        y.sum().backward()
        return y

    def run(fn: object) -> tuple[np.ndarray, ...]:
        ts = [rt.tensor(a, requires_grad=True) for a in arrays]
        y = fn(*ts)
        return (y.detach().numpy(), *(t.grad.numpy() for t in ts))

    compiled = planner.compile(step)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no fallback to eager
        run(compiled)
        got = run(compiled)
    want = run(step)
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

    def run(fn: object) -> tuple[np.ndarray, ...]:
        ts = [rt.tensor(a, requires_grad=True) for a in arrays]
        y = fn(*ts)
        return (y.detach().numpy(), *(t.grad.numpy() for t in ts))

    compiled = planner.compile(step)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        run(compiled)
        got = run(compiled)
    for g, w in zip(got, run(step)):
        np.testing.assert_allclose(g, w, rtol=2e-6, atol=1e-6)
    kernels = [k.kernel for k in compiled.plan.kernels]
    forward = [k for k in kernels if any(isinstance(e, K.Unary) and e.op == "exp"
                                         for e in k.exprs)]
    assert len(forward) == 1
    saved = [forward[0].exprs[o.value] for o in forward[0].outputs]
    assert not any(isinstance(e, K.Binary) and e.op == "div" for e in saved), saved
