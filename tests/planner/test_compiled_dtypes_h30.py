"""h30's sweep of the reduced-precision and narrow integer dtypes inside compiled steps
(PyTorch's OpInfo samples through tools/opinfo_diff.py --compiled): a compiled step computes
what eager mode does, bit for bit where eager computes the same operations in the same order
(a bfloat16 kernel rounds where eager rounds), with no fallback to eager."""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import planner
import runtime as rt


def _compiled_and_eager(fn: Callable[..., Any], *args: Any) -> tuple[list[Any], Any]:
    """fn's outputs compiled (the capture and a replay) and eager, with no fallback, its ops
    fused into a kernel."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        step = planner.compile(fn)
        got = [step(*args), step(*args)]
    assert step.plan.kernels, "the ops were not fused into a kernel"
    return got, fn(*args)


def _same_bits(got: Any, want: Any) -> None:
    assert got.dtype == want.dtype
    a, b = got.float().numpy(), want.float().numpy()
    np.testing.assert_array_equal(a.view(np.uint32), b.view(np.uint32))


def _bf16(*shape: int, seed: int = 0) -> rt.Tensor:
    values = np.random.default_rng(seed).standard_normal(shape).astype(np.float32)
    return rt.tensor(values).to(rt.bfloat16)


def test_bfloat16_sum_is_rounded_before_the_kernel_uses_it() -> None:
    """Eager rounds a bfloat16 sum (mean) to bfloat16 once, and the ops after it read that
    value; the kernel used the sum's float32 value unrounded (addbmm's alpha * the batch
    sum was 0.5 off eager's, group_norm's and instance_norm's outputs 0.06)."""
    x = _bf16(8, 33)
    got, want = _compiled_and_eager(
        lambda t: (t.sum(-1) * 3.0, t.mean(-1) * 3.0, t.sum(0) * 3.0), x)
    for run in got:
        for g, w in zip(run, want, strict=True):
            _same_bits(g, w)


def test_bfloat16_mean_divides_by_its_count_as_eager() -> None:
    """Eager's (numpy's) mean divides a row's float32 sum by its count; the kernel multiplied
    by 1 / count, an ulp off at times, which a bfloat16 rounding then kept (a mean of 7
    bfloat16 values, whose float32 sum is exact, differed at 8 of 1280 rows)."""
    x = _bf16(640, 7, seed=3)
    got, want = _compiled_and_eager(lambda t: t.mean(-1) * 1.5, x)
    for run in got:
        _same_bits(run, want)


def _optimizer_steps(name: str, dtype: Any, **options: Any) -> list[tuple[Any, Any]]:
    """(eager, compiled) parameter after each of two steps of optimizer ``name``."""
    rng = np.random.default_rng(1)
    w0, g0 = rng.standard_normal((2, 8, 8)).astype(np.float32)

    def stepper() -> tuple[Callable[[Any], None], Any]:
        p = rt.nn.Parameter(rt.tensor(w0).to(dtype))
        opt = getattr(rt.optim, name)([p], **options)

        def step(g: Any) -> None:
            opt.zero_grad()
            (p * g).sum().backward()
            opt.step()
        return step, p

    g = rt.tensor(g0).to(dtype)
    eager, p_eager = stepper()
    fn, p_compiled = stepper()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        compiled = planner.compile(fn)
        out = []
        for _ in range(2):
            eager(g)
            compiled(g)
            out.append((p_eager.detach().clone(), p_compiled.detach().clone()))
    return out


@pytest.mark.parametrize(("name", "dtype"), [("Adam", "bfloat16"), ("Muon", "float16")])
def test_half_optimizers_lerp_by_a_captured_number_as_eager(name: str, dtype: str) -> None:
    """A captured hyperparameter is a float32 0-d tensor for a half parameter; Adam's
    exp_avg.lerp_(grad, 1 - beta1) (Muon's momentum too) then rounded it to the parameter's
    dtype, as lerp converts a tensor weight, where eager's Python number weighs in float32
    (0.10009765625 against 0.1 in bfloat16): the compiled parameters drifted from eager's."""
    for want, got in _optimizer_steps(name, getattr(rt, dtype), lr=0.01):
        _same_bits(got, want)


@pytest.mark.parametrize("dtype", ["bfloat16", "float16", "float32"])
def test_uniform_of_a_range_draws_as_eager(dtype: str) -> None:
    """Eager's uniform_(low, high) is PyTorch's: float32 unit draws, fma(u, hi - lo, lo)
    rounded once; the capture drew in the dtype (a half one rounded the draw) and computed
    u * (high - low) + low with a rounding at each op: a bfloat16 uniform_(-3, 3) was 0.5
    off eager's, a float32 one an ulp."""
    dt = getattr(rt, dtype)

    def fn() -> Any:
        return rt.empty(40, dtype=dt).uniform_(-3.0, 3.0) * 1

    rt.manual_seed(7)
    want = fn()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        step = planner.compile(fn)
        for _ in range(2):
            rt.manual_seed(7)
            _same_bits(step(), want)


@pytest.mark.parametrize(("dtype", "n"), [("bfloat16", 8), ("float16", 8), ("float32", 8),
                                          ("float32", 40)])
def test_normal_of_a_mean_and_std_draws_as_eager(dtype: str, n: int) -> None:
    """Eager's normal_(mean, std) is PyTorch's: draws scaled by one fma (float64 Box-Muller
    under 16 elements, then rounded to the dtype); the capture drew randn in the dtype and
    computed n * std + mean with a rounding at each op (a bfloat16 normal(1.6, 0.3) of 6
    elements was off eager's at one, a float32 one of 40 at two)."""
    dt = getattr(rt, dtype)

    def fn() -> Any:
        return rt.normal(1.6, 0.3, (n,), dtype=dt) * 1, rt.empty(n, dtype=dt).normal_(0.5, 0.7)

    rt.manual_seed(7)
    want = fn()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        step = planner.compile(fn)
        for _ in range(2):
            rt.manual_seed(7)
            for g, w in zip(step(), want, strict=True):
                _same_bits(g, w)


def test_half_normal_of_16_or_more_runs_eagerly() -> None:
    """From 16 elements a half dtype's fill rounds inside its Box-Muller transform, which no
    plan step draws: the step runs eagerly, with a warning, eager's numbers."""
    def fn() -> Any:
        return rt.empty(40, dtype=rt.bfloat16).normal_(0.5, 0.7)

    rt.manual_seed(7)
    want = fn()
    step = planner.compile(fn)
    rt.manual_seed(7)
    with pytest.warns(RuntimeWarning, match="normal_.mean, std. of 16 or more bfloat16"):
        got = step()
    _same_bits(got, want)
