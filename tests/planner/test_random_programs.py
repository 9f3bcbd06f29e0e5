"""Random programs (hypothesis): a random sequence of ops over random broadcastable shapes,
a scalar loss and backward; the compiled step gives the eager loss and leaf gradients."""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import planner
import runtime as rt

UNARY = ("exp", "tanh", "sin", "neg", "sum", "mean", "reshape", "transpose", "scalar_mul")
BINARY = ("add", "sub", "mul", "div")
KINDS = UNARY + BINARY + ("matmul",)


def matmul_shape(a: tuple[int, ...], b: tuple[int, ...]) -> tuple[int, ...] | None:
    if not a or not b:
        return None
    try:
        return np.matmul(np.zeros(a), np.zeros(b)).shape
    except ValueError:
        return None


def broadcast_shape(a: tuple[int, ...], b: tuple[int, ...]) -> tuple[int, ...] | None:
    try:
        return tuple(np.broadcast_shapes(a, b))
    except ValueError:
        return None


@st.composite
def programs(draw: Any) -> tuple[list[tuple[int, ...]], list[tuple[Any, ...]], int]:
    ndim = draw(st.integers(1, 3))
    base = draw(st.lists(st.integers(1, 4), min_size=ndim, max_size=ndim))
    leaves: list[tuple[int, ...]] = []
    for _ in range(draw(st.integers(1, 3))):
        drop = draw(st.integers(0, ndim - 1))
        ones = draw(st.lists(st.booleans(), min_size=ndim - drop, max_size=ndim - drop))
        leaves.append(tuple(1 if o else d for d, o in zip(base[drop:], ones, strict=True)))
    shapes = list(leaves)
    ops: list[tuple[Any, ...]] = []
    for _ in range(draw(st.integers(3, 8))):
        last = len(shapes) - 1
        i = draw(st.one_of(st.just(last), st.integers(0, last)))
        s = shapes[i]
        kind = draw(st.sampled_from(KINDS))
        if kind in BINARY or kind == "matmul":
            rule = broadcast_shape if kind in BINARY else matmul_shape
            partners = [j for j, t in enumerate(shapes) if rule(s, t) is not None]
            if not partners:
                kind = "tanh"
            else:
                j = draw(st.sampled_from(partners))
                ops.append((kind, i, j))
                shapes.append(rule(s, shapes[j]))  # type: ignore[arg-type]
                continue
        if kind in ("sum", "mean") and s:
            axis = draw(st.integers(-len(s), len(s) - 1))
            keepdim = draw(st.booleans())
            ops.append((kind, i, axis, keepdim))
            out = list(s)
            if keepdim:
                out[axis] = 1
            else:
                del out[axis]
            shapes.append(tuple(out))
        elif kind in ("sum", "mean"):
            ops.append((kind, i, None, False))
            shapes.append(())
        elif kind == "reshape":
            size = int(np.prod(s))
            target = draw(st.sampled_from([(size,), (1, size), (size, 1), tuple(reversed(s))]))
            ops.append(("reshape", i, target))
            shapes.append(target)
        elif kind == "transpose" and len(s) >= 2:
            d0, d1 = draw(st.lists(st.integers(0, len(s) - 1), min_size=2, max_size=2,
                                   unique=True))
            ops.append(("transpose", i, d0, d1))
            out = list(s)
            out[d0], out[d1] = out[d1], out[d0]
            shapes.append(tuple(out))
        elif kind == "scalar_mul":
            c = draw(st.sampled_from([-1.5, 0.5, 2.0, 3.0]))
            ops.append(("scalar_mul", i, c))
            shapes.append(s)
        else:
            kind = kind if kind in ("exp", "tanh", "sin", "neg") else "sin"
            ops.append((kind, i))
            shapes.append(s)
    return leaves, ops, draw(st.integers(0, 2**31 - 1))


def run_program(leaves: tuple[Any, ...], ops: list[tuple[Any, ...]]) -> Any:
    vals = list(leaves)
    for op in ops:
        kind, a = op[0], vals[op[1]]
        if kind == "exp":
            out = (a.tanh() * 1.5).exp()  # small inputs
        elif kind == "tanh":
            out = a.tanh()
        elif kind == "sin":
            out = a.sin()
        elif kind == "neg":
            out = -a
        elif kind == "scalar_mul":
            out = a * op[2]
        elif kind in ("sum", "mean"):
            _, _, axis, keepdim = op
            f = a.sum if kind == "sum" else a.mean
            out = f() if axis is None else f(axis, keepdim=keepdim)
        elif kind == "reshape":
            out = a.reshape(*op[2])
        elif kind == "transpose":
            out = a.transpose(op[2], op[3])
        else:
            b = vals[op[2]]
            if kind == "add":
                out = a + b
            elif kind == "sub":
                out = a - b
            elif kind == "mul":
                out = a * b
            elif kind == "div":
                out = a / (b * b + 1.0)  # safe denominator
            else:
                out = a @ b
        vals.append(out)
    made = vals[len(leaves):]
    loss = made[-1].sum()
    for v in made[:-1]:
        loss = loss + v.mean() * 0.5
    return loss


def make_leaves(shapes: list[tuple[int, ...]], seed: int, copies: int = 2) -> list[list[Any]]:
    """``copies`` independent lists of leaf tensors holding the same random values (one for
    each way of running the program)."""
    rng = np.random.default_rng(seed)
    arrays = [(rng.standard_normal(s) * 0.7).astype(np.float32) for s in shapes]
    return [[rt.tensor(a, requires_grad=True) for a in arrays] for _ in range(copies)]


def make_step(ops: list[tuple[Any, ...]]) -> Any:
    def step(*leaves: Any) -> Any:
        loss = run_program(leaves, ops)
        loss.backward()
        return loss

    return step


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(programs())
def test_random_program_compiled_equals_eager(program: Any) -> None:
    shapes, ops, seed = program
    eager_leaves, comp_leaves = make_leaves(shapes, seed)
    eager = make_step(ops)
    compiled = planner.compile(make_step(ops), fullgraph=True)
    for call in range(2):  # the second call accumulates into the .grad the first made
        expected = eager(*eager_leaves)
        with warnings.catch_warnings():
            warnings.simplefilter("error", RuntimeWarning)
            got = compiled(*comp_leaves)
        msg = f"call {call}: shapes={shapes} ops={ops}"
        assert got.shape == expected.shape and got.dtype is expected.dtype, msg
        np.testing.assert_allclose(got.detach().numpy(), expected.detach().numpy(),
                                   rtol=1e-5, atol=1e-6, err_msg=msg)
        for k, (ge, gc) in enumerate(zip(eager_leaves, comp_leaves, strict=True)):
            assert (ge.grad is None) == (gc.grad is None), f"{msg} leaf {k}"
            if ge.grad is not None:
                assert gc.grad.shape == ge.grad.shape and gc.grad.dtype is ge.grad.dtype
                np.testing.assert_allclose(gc.grad.numpy(), ge.grad.numpy(), rtol=1e-5,
                                           atol=1e-6, err_msg=f"{msg} leaf {k}")
    assert compiled.captures <= 2
