"""A sweep of nn.functional on unusual but legal inputs (empty, 0-d, integer, bool) against
PyTorch: values and error texts; each case a difference found and fixed."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import runtime as rt

torch = pytest.importorskip("torch")


def _f(m: Any) -> Any:
    return m.nn.functional


def _outcome(m: Any, f: Callable[[Any], Any]) -> Any:
    try:
        r = f(m)
    except (RuntimeError, TypeError, IndexError, NotImplementedError, ValueError) as e:
        return type(e).__name__, str(e).split("\n")[0]
    rs = r if isinstance(r, tuple) else (r,)
    arrays = [np.asarray(t.detach().numpy()) for t in rs]
    return tuple((tuple(t.shape), str(t.dtype).split(".")[-1],
                  str((a.round(6) if a.dtype.kind == "f" else a).tolist()))
                 for t, a in zip(rs, arrays))


INTS = [[1, 2], [3, -4]]
CASES: dict[str, Callable[[Any], Any]] = {
    "dropout_p1_int": lambda m: _f(m).dropout(m.tensor(INTS), 1.0),
    "dropout_p1_bool": lambda m: _f(m).dropout(m.tensor(INTS) > 0, 1.0),
    "dropout_p1_float": lambda m: _f(m).dropout(m.tensor([-1.0, 2.0]), 1.0),
    "dropout_int": lambda m: _f(m).dropout(m.tensor(INTS), 0.5),
    "dropout_bool": lambda m: _f(m).dropout(m.tensor(INTS) > 0, 0.5),
    "prelu_0d": lambda m: _f(m).prelu(m.tensor(-2.0), m.tensor([0.25])),
    "prelu_dtypes": lambda m: _f(m).prelu(m.tensor(INTS), m.tensor([0.25])),
    "prelu_float64_float32": lambda m: _f(m).prelu(m.ones(2, dtype=m.float64),
                                                   m.tensor([0.25])),
    "glu_empty": lambda m: _f(m).glu(m.ones(0, 3), 0),
    "group_norm_empty": lambda m: _f(m).group_norm(m.ones(0, 3), 1),
    "group_norm_int": lambda m: _f(m).group_norm(m.ones(2, 4, dtype=m.int64), 2),
    "layer_norm_int": lambda m: _f(m).layer_norm(m.ones(2, 3, dtype=m.int64), (3,)),
    "layer_norm_bool": lambda m: _f(m).layer_norm(m.ones(2, 3, dtype=m.bool), (3,)),
    "layer_norm_no_shape": lambda m: _f(m).layer_norm(m.ones(2, 3), ()),
    "layer_norm_int_bad_shape": lambda m: _f(m).layer_norm(m.ones(2, 3, dtype=m.int64), (4,)),
    "rms_norm_int": lambda m: _f(m).rms_norm(m.ones(2, 3, dtype=m.int64), (3,)),
    "rms_norm_no_shape": lambda m: _f(m).rms_norm(m.ones(2, 3), []),
    "max_pool1d_int_indices": lambda m: _f(m).max_pool1d(m.ones(2, 4, dtype=m.int64), 2,
                                                         return_indices=True),
    "batch_norm_train_empty": lambda m: _f(m).batch_norm(m.ones(0, 3), None, None,
                                                         training=True),
    "batch_norm_train_one": lambda m: _f(m).batch_norm(m.ones(1, 3), None, None,
                                                       training=True),
    "pad_replicate_bool": lambda m: _f(m).pad(m.ones(2, 3, dtype=m.bool), (1, 1),
                                              mode="replicate"),
    "pad_reflect_bool": lambda m: _f(m).pad(m.ones(2, 3, dtype=m.bool), (1, 1),
                                            mode="reflect"),
    "pad_circular_bool": lambda m: _f(m).pad(m.ones(2, 3, dtype=m.bool), (1, 1),
                                             mode="circular"),
}


@pytest.mark.parametrize("name", list(CASES))
def test_case(name: str) -> None:
    assert _outcome(rt, CASES[name]) == _outcome(torch, CASES[name])


def test_prelu_of_a_0d_input_has_its_gradient() -> None:
    got = []
    for m in (rt, torch):
        x = m.tensor(-2.0, requires_grad=True)
        w = m.tensor([0.25], requires_grad=True)
        _f(m).prelu(x, w).backward()
        got.append((x.grad.item(), w.grad.tolist(), tuple(w.grad.shape)))
    assert got[0] == got[1]


def test_glu_of_an_empty_dim_keeps_the_gradient_shape() -> None:
    x = rt.ones(0, 4, requires_grad=True)
    _f(rt).glu(x, 0).sum().backward()
    assert tuple(x.grad.shape) == (0, 4)
