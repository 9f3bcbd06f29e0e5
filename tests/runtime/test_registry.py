"""Registry tests: every differentiable primitive has a backward formula, every
primitive is exercised by the op tests, and each primitive's ``infer`` shape/dtype
rule agrees with what its eager ``impl`` actually produced.

Calls are recorded by temporarily wrapping each registered primitive's ``impl``
while the op-test cases from ``test_ops`` run (forward and backward, float32 and
float64, plus a few integer/bool programs).
"""

from __future__ import annotations

import operator
from typing import Any

import numpy as np
import pytest

import runtime as rt
from runtime.autograd.node import Meta
from runtime.ops import REGISTRY

try:
    from . import test_ops as T
except ImportError:  # tests/runtime is not a package: pytest put its folder on sys.path
    import test_ops as T

_NP2DT = {rt.float32.np: rt.float32, rt.float64.np: rt.float64, rt.int64.np: rt.int64, rt.bool.np: rt.bool}


def _meta(a: Any) -> Any:
    if isinstance(a, np.ndarray):
        return Meta(tuple(a.shape), _NP2DT[a.dtype], "cpu")
    return a


def _extra_programs() -> None:
    """Integer / bool / comparison / cast programs the float op cases do not reach."""
    i = rt.tensor([[1, 2, 3], [4, 5, 6]])
    f = rt.tensor([0.5, 1.5, 2.5])
    b = rt.tensor([True, False, True])
    for op in (operator.eq, operator.ne, operator.lt, operator.le, operator.gt, operator.ge):
        op(i, f)
        op(f, 2)
    _ = i + 1, i * 2.5, i / 2, -i, i - f, b + b, b * 1.5, i.sum(), i.amax(1), i.float(), f.long()
    _ = rt.where(b, i, f), rt.maximum(i, f), i.abs(), i[0], i[:, rt.tensor([0, 0, 2])], rt.cat([i, i], 1)
    _ = f.to(rt.float64), i.to("cpu"), i.reshape(3, 2), i.permute(1, 0), i.expand(2, 2, 3), rt.stack([f, f])
    _ = i @ rt.tensor([1, 0, 2])
    _ = i & 3, i | b, i ^ 2, i << 1, i >> 1  # the integer bitwise primitives
    x = rt.tensor(T.N(3, 4), requires_grad=True)
    (x.max(1)[0].sum() + x.max() + (x.sign() * x).sum()).backward()


def _run_corpus() -> list[tuple[str, tuple, dict, Any]]:
    calls: list[tuple[str, tuple, dict, Any]] = []
    originals = {}

    def wrap(name, impl):
        def recorded(xp, *args, **attrs):
            out = impl(xp, *args, **attrs)
            calls.append((name, tuple(_meta(a) for a in args), dict(attrs), np.asarray(out)))
            return out

        return recorded

    for name, prim in REGISTRY.items():
        originals[name] = prim.impl
        object.__setattr__(prim, "impl", wrap(name, prim.impl))  # frozen dataclass
    try:
        for c in T.CASES:
            for dt in (rt.float64, rt.float32):
                xs = [rt.tensor(np.asarray(a), dtype=dt, requires_grad=True) for a in c.inputs]
                out = c.fn(rt, *xs)
                out.backward(rt.ones_like(out))
        _extra_programs()
    finally:
        for name, prim in REGISTRY.items():
            object.__setattr__(prim, "impl", originals[name])
    return calls


@pytest.fixture(scope="module")
def corpus():
    return _run_corpus()


def test_registry_not_empty_and_well_formed():
    expected = {
        "add", "sub", "mul", "div", "neg", "pow", "exp", "log", "sin", "cos", "tanh", "sqrt",
        "abs", "sign", "erf", "maximum", "minimum", "where", "eq", "ne", "lt", "le", "gt", "ge",
        "cast", "sum", "amax", "mean", "reshape", "permute", "expand", "getitem",
        "index_backward", "cat", "matmul", "to_device",
    }
    missing = expected - set(REGISTRY)
    assert not missing, f"primitives named by the contract but not registered: {sorted(missing)}"
    for name, prim in REGISTRY.items():
        assert prim.name == name
        assert callable(prim.impl), name
        assert callable(prim.infer), name


def test_differentiable_primitives_have_backward():
    bad = [n for n, p in REGISTRY.items() if p.differentiable and not callable(p.backward)]
    assert not bad, f"differentiable primitives without a backward formula: {bad}"


def test_comparisons_are_not_differentiable():
    for n in ("eq", "ne", "lt", "le", "gt", "ge"):
        assert not REGISTRY[n].differentiable, n


def test_a_check_primitive_must_be_a_pure_side_effect():
    # the planner keeps checks unfused and unread: a backward, lowering or view would not run
    from runtime.ops.registry import Primitive, register

    base = REGISTRY["check_bounds"]
    for bad in ({"differentiable": True, "backward": lambda c, g: (None,)},
                {"lower": lambda kb, args, attrs, dtype: 0}, {"view": True}):
        with pytest.raises(ValueError, match="check primitive 'check_x'"):
            register(Primitive("check_x", base.impl, base.infer, check=True,
                               **{"differentiable": False, **bad}))
    assert "check_x" not in REGISTRY and base.check and not base.differentiable


def test_every_primitive_is_exercised(corpus):
    seen = {name for name, *_ in corpus}
    unseen = sorted(set(REGISTRY) - seen)
    assert not unseen, f"primitives no op test reaches (add cases to test_ops.CASES): {unseen}"


def test_infer_agrees_with_eager(corpus):
    mismatches = []
    checked = set()
    for name, metas, attrs, out in corpus:
        prim = REGISTRY[name]
        try:
            shape, dtype = prim.infer(*metas, **attrs)
        except Exception as e:  # noqa: BLE001
            mismatches.append(f"{name}{metas} {attrs}: infer raised {type(e).__name__}: {e}")
            continue
        got = (tuple(out.shape), _NP2DT.get(out.dtype, out.dtype))
        if (tuple(shape), dtype) != got:
            mismatches.append(f"{name}{metas} {attrs}: infer -> {(tuple(shape), dtype)}, eager -> {got}")
        checked.add(name)
    assert not mismatches, "\n".join(mismatches[:20])
    assert checked, "nothing recorded"


def test_check_bounds_finds_every_value_outside_its_window() -> None:
    """check_bounds' one-reduction test (integers shifted by ``low``, read unsigned) agrees
    with a min and a max on every integer dtype, windows at the dtype's ends and beyond them,
    and raises with the first offending value, as before."""
    from runtime.ops.prims import _out_of_bounds

    rng = np.random.default_rng(5)
    for t in range(4000):
        dtype = (np.int64, np.int32, np.int16, np.int8)[t % 4]
        info = np.iinfo(dtype)
        low = int(rng.integers(-300, 5))
        high = low + int(rng.integers(-2, 400))
        if t % 2:
            x = rng.integers(info.min, info.max, int(rng.integers(1, 20)), endpoint=True)
        else:
            x = rng.integers(max(info.min, low - 5), min(info.max, max(low, high) + 5),
                             int(rng.integers(1, 20)), endpoint=True)
        x = x.astype(dtype)
        want = bool((x.astype(np.int64) < low).any() or (x.astype(np.int64) >= high).any())
        assert _out_of_bounds(x, low, high) == want, (dtype, low, high, x)
    assert not _out_of_bounds(np.zeros(0, np.int64), 0, 0)
    check = REGISTRY["check_bounds"].impl
    with pytest.raises(IndexError, match="Target 7 is out of bounds"):
        check(np, np.array([1, 7, -1, 9]), low=0, high=5, message="Target {} is out of bounds.")
