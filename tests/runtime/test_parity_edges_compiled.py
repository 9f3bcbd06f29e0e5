"""The edge-point gradients of the special functions (PyTorch's derivative formulas at poles,
infinities and NaN, joined by straight_through) hold in a compiled step too: planner.compile
captures them without falling back, and its values and gradients equal eager's, NaN places
and signs of infinities included."""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import planner
import runtime as rt

EDGES = [math.nan, math.inf, -math.inf, -0.0, 0.0, 1.0, -1.0, 0.5, -2.0, 2.5, 1e-3, 30.0]

OPS: dict[str, Callable[..., Any]] = {
    "digamma": lambda x, y: rt.digamma(x),
    "lgamma": lambda x, y: rt.lgamma(x),
    "erfinv": lambda x, y: rt.erfinv(x),
    "logit": lambda x, y: rt.logit(x),
    "logit_eps": lambda x, y: rt.logit(x, eps=0.25),
    "entr": lambda x, y: rt.special.entr(x),
    "ndtri": lambda x, y: rt.special.ndtri(x),
    "log_ndtr": lambda x, y: rt.special.log_ndtr(x),
    "i0": lambda x, y: rt.i0(x),
    "i1": lambda x, y: rt.special.i1(x),
    "erfcx": lambda x, y: rt.special.erfcx(x),
    "sinc": lambda x, y: rt.sinc(x),
    "acosh": lambda x, y: rt.acosh(x),
    "hardsigmoid": lambda x, y: rt.nn.functional.hardsigmoid(x),
    "elu": lambda x, y: rt.nn.functional.elu(x),
    "xlogy": lambda x, y: rt.xlogy(x, y),
    "xlog1py": lambda x, y: rt.special.xlog1py(x, y),
    "copysign": lambda x, y: rt.copysign(x, y),
    "hypot": lambda x, y: rt.hypot(x, y),
    "logaddexp": lambda x, y: rt.logaddexp(x, y),
    "atan2": lambda x, y: rt.atan2(x, y),
    "div_trunc": lambda x, y: rt.div(x, y, rounding_mode="trunc"),
    "prod": lambda x, y: rt.prod(x.reshape(12, -1), 1),
    "logcumsumexp": lambda x, y: rt.logcumsumexp(x.reshape(12, -1), 1),
}


def _step(fn: Callable[..., Any]) -> Callable[..., Any]:
    def step(x: rt.Tensor, y: rt.Tensor, w: rt.Tensor) -> tuple[Any, ...]:
        out = fn(x, y)
        (out * w[:out.numel()].reshape(out.shape)).sum().backward()
        return out, x.grad, y.grad
    return step


def _inputs(dtype: str) -> list[rt.Tensor]:
    e = np.array(EDGES, dtype)
    x = rt.tensor(np.repeat(e, e.size), requires_grad=True)
    y = rt.tensor(np.tile(e, e.size), requires_grad=True)
    w = rt.tensor(np.random.default_rng(0).uniform(0.5, 1.5, e.size * e.size).astype(dtype))
    return [x, y, w]


def _np(v: Any) -> np.ndarray:
    return np.zeros(0) if v is None else np.asarray(v.detach().numpy())


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("name", list(OPS))
def test_compiled_equals_eager_at_edges(name: str, dtype: str) -> None:
    step = _step(OPS[name])
    compiled = planner.compile(step)
    tol = 1e-12 if dtype == "float64" else 1e-5  # fused float32 kernels: a few ulp
    for _ in range(2):  # the capture, then a replay
        eager_in, comp_in = _inputs(dtype), _inputs(dtype)
        expected = step(*eager_in)
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # a fallback to eager warns: a failure here
            warnings.simplefilter("ignore", RuntimeWarning)  # numpy's, at NaN, as eager's
            got = compiled(*comp_in)
        for k, (a, e) in enumerate(zip(got, expected, strict=True)):
            a_np, e_np = _np(a), _np(e)
            assert a_np.shape == e_np.shape and a_np.dtype == e_np.dtype, (name, k)
            assert np.array_equal(np.isnan(a_np), np.isnan(e_np)), (name, k, a_np, e_np)
            np.testing.assert_allclose(a_np, e_np, rtol=tol, atol=1e-30, err_msg=f"{name} {k}")
    assert compiled.captures == 1
