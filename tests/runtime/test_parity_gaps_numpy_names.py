"""NumPy's keyword names PyTorch's parser takes for its native functions and Tensor methods:
``axis`` for ``dim`` and ``keepdims`` for ``keepdim``; and its errors where they do not
apply (both names given, an op without keepdim, its Python-level functions)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import runtime as rt

torch = pytest.importorskip("torch")

X = np.arange(6.0).reshape(2, 3) - 2.5
NAMES = ("sum mean max min amax amin argmax argmin prod std var logsumexp nansum median "
         "count_nonzero cumsum cumprod softmax log_softmax squeeze unsqueeze unbind chunk "
         "argsort sort topk kthvalue mode aminmax nanmean diff").split()
KWARGS = ({"axis": 1}, {"dim": 1, "keepdims": True}, {"axis": 1, "keepdims": True},
          {"axis": 0, "keepdims": False})
EXTRA_ARGS = {"topk": (1,), "kthvalue": (1,), "chunk": (1,)}


def _plain(v: Any) -> Any:
    if isinstance(v, tuple):
        return tuple(_plain(a) for a in v)
    return np.asarray(v.detach().numpy()).round(6).tolist() if hasattr(v, "numpy") else v


def _call(f: Callable[[], Any]) -> Any:
    try:
        return _plain(f())
    except (TypeError, RuntimeError) as e:
        return type(e).__name__, str(e)


@pytest.mark.parametrize("kwargs", KWARGS, ids=str)
@pytest.mark.parametrize("method", [False, True], ids=["function", "method"])
@pytest.mark.parametrize("name", NAMES)
def test_numpy_names(name: str, method: bool, kwargs: dict[str, Any]) -> None:
    args = EXTRA_ARGS.get(name, ())
    results = []
    for m in (rt, torch):
        x = m.tensor(X)
        f = getattr(x, name) if method else getattr(m, name)
        call_args = args if method else (x, *args)
        results.append(_call(lambda: f(*call_args, **kwargs)))
    ours, theirs = results
    if isinstance(theirs, tuple) and theirs and theirs[0] == "TypeError" and \
            "invalid combination" in theirs[1]:
        assert ours[0] == "TypeError"  # PyTorch lists its overloads; ours names the keyword
    else:
        assert ours == theirs


def test_cat_and_stack_take_axis() -> None:
    for name in ("cat", "stack", "concat"):
        a = getattr(rt, name)([rt.ones(2), rt.zeros(2)], axis=0)
        b = getattr(torch, name)([torch.ones(2), torch.zeros(2)], axis=0)
        assert a.tolist() == b.tolist()


@pytest.mark.parametrize("call", [
    lambda m: m.sum(m.ones(2, 3), dim=0, axis=1),
    lambda m: m.ones(2, 3).sum(0, axis=1),
    lambda m: m.sum(m.ones(2, 3), 0, keepdim=True, keepdims=False),
    lambda m: m.cumsum(m.ones(2, 3), axis=1, keepdims=True),
    lambda m: m.ones(2, 3).norm(axis=1),
    lambda m: m.nn.functional.softmax(m.ones(2, 3), axis=1),
])
def test_refused_as_torch(call: Callable[[Any], Any]) -> None:
    errors = []
    for m in (rt, torch):
        with pytest.raises(TypeError) as info:
            call(m)
        errors.append(str(info.value).split("() ", 1)[1])
    assert errors[0] == errors[1]


def test_gradient_through_an_aliased_call() -> None:
    x = rt.tensor(X, requires_grad=True)
    x.sum(axis=1, keepdims=True).mean(axis=0).backward()
    np.testing.assert_array_equal(x.grad.numpy(), np.full((2, 3), 0.5))
