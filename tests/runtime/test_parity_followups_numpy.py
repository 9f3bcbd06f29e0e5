"""Tensors meeting numpy arrays and numpy scalars in Python's operators, on either side, as
PyTorch's do: numpy computes array operands on the tensor's values and the result comes back
a tensor (``__array_wrap__``); a numpy bool is parsed as a float; ``@`` takes tensors only."""

from __future__ import annotations

import operator

import numpy as np
import pytest

import runtime as rt

torch = pytest.importorskip("torch")

OPS = [operator.add, operator.sub, operator.mul, operator.truediv, operator.floordiv,
       operator.mod, operator.pow, operator.and_, operator.or_, operator.xor, operator.matmul,
       operator.lshift, operator.eq, operator.ne, operator.lt, operator.ge]

TENSORS = {
    "float32": lambda m: m.ones(2) * 3,
    "int64": lambda m: m.arange(2) + 2,
    "bool": lambda m: m.tensor([True, False]),
    "float16": lambda m: m.ones(2, dtype=m.float16),
    "requires_grad": lambda m: m.ones(2, requires_grad=True),
    "zero_dim": lambda m: m.tensor(2.0),
}

OTHERS = {
    "array_f64": lambda: np.array([1.5, -2.0]),
    "array_i64": lambda: np.array([1, 2]),
    "array_f32": lambda: np.array([2.0, 0.5], np.float32),
    "array_bool": lambda: np.array([True, False]),
    "array_u8": lambda: np.array([1, 2], np.uint8),
    "array_0d": lambda: np.array(2.0),
    "array_2d": lambda: np.ones((3, 2)),
    "np_float64": lambda: np.float64(2.5),
    "np_float32": lambda: np.float32(2.5),
    "np_int64": lambda: np.int64(3),
    "np_bool": lambda: np.bool_(True),
}


def _outcome(fn):
    try:
        with np.errstate(all="ignore"):
            r = fn()
    except Exception as e:  # the kind of failure is compared, not its text
        return ("error", type(e).__name__)
    if isinstance(r, (torch.Tensor, rt.Tensor)):
        values = np.nan_to_num(np.asarray(r.tolist(), dtype=float), nan=-99.0)
        return ("tensor", str(r.dtype).split(".")[-1], tuple(r.shape), values.tolist())
    return (type(r).__name__, r if isinstance(r, bool) else None)


@pytest.mark.parametrize("tensor", sorted(TENSORS))
@pytest.mark.parametrize("other", sorted(OTHERS))
def test_operators_with_numpy_match_torch(tensor, other):
    for op in OPS:
        for side in ("left", "right"):
            got = []
            for m in (torch, rt):
                t, o = TENSORS[tensor](m), OTHERS[other]()
                got.append(_outcome(lambda: op(t, o) if side == "left" else op(o, t)))
            assert got[0] == got[1], (op.__name__, side)


def test_in_place_with_an_array_rebinds_as_torch():
    got = []
    for m in (torch, rt):
        a = m.ones(2)
        b = a
        b += np.array([1.0, 2.0])
        c = m.ones(2)
        d = c
        d *= np.bool_(True)
        got.append((b is a, str(b.dtype).split(".")[-1], b.tolist(), d is c,
                    str(d.dtype).split(".")[-1]))
    assert got[0] == got[1]


def test_reflected_division_by_an_array_keeps_its_gradient_rule():
    got = []
    for m in (torch, rt):
        t = m.tensor([2.0, 4.0], dtype=m.float64)
        got.append(_outcome(lambda: np.array([1.0, 3.0]) / t))
    assert got[0] == got[1]
