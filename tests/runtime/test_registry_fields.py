"""The registry's op-kind facts and fast paths: every primitive declares a FLOP rule and its
kinds, the kinds agree with each other, a declared ufunc is the impl, and every specializer's
callable computes exactly what the impl computes (bitwise, nan-aware) on random inputs of
random shapes, dtypes and layouts, returning an ndarray of the planned dtype and shape."""

from __future__ import annotations

import warnings
from collections import Counter
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import planner
import runtime as rt
from benchmarks.workloads import WORKLOADS
from planner.inspect import estimate_flops

from runtime.autograd.node import Meta
from runtime.ops import REGISTRY
from runtime.ops.prims import IndexArg, _key_shape
from runtime.ops.registry import Primitive, flops_none, register

DTYPES = [np.dtype(t) for t in (np.bool_, np.int64, np.float32, np.float64)]
_DT = {d.np: d for d in (rt.bool, rt.int64, rt.float32, rt.float64)}
KINDS = ("elementwise", "reduction", "extern", "transfer", "view", "check")
Case = tuple[list[Any], dict[str, Any]]

# --- kinds and FLOPs ---------------------------------------------------------------------------


@pytest.mark.parametrize("name", sorted(REGISTRY))
def test_every_primitive_declares_flops_and_kinds(name: str) -> None:
    prim = REGISTRY[name]
    assert callable(prim.flops), name
    for kind in KINDS:
        assert type(getattr(prim, kind)) is bool, (name, kind)
    assert prim.ufunc is None or isinstance(prim.ufunc, np.ufunc)
    if prim.ufunc is not None:
        assert prim.elementwise, name
    if prim.view or prim.reduction:
        assert not prim.elementwise, name
    if prim.check:
        assert not (prim.view or prim.extern), name


def test_kinds_of_known_primitives() -> None:
    kinds = {k: {n for n, p in REGISTRY.items() if getattr(p, k)} for k in KINDS}
    assert kinds["reduction"] == {"sum", "mean", "amax", "argmax", "argmin"}
    assert kinds["view"] == {"reshape", "permute", "expand", "getitem", "as_strided", "diagonal"}
    assert kinds["extern"] == {"matmul", "matmul_add"}
    assert kinds["transfer"] == {"to_device"}
    assert kinds["check"] == {"check_bounds"}
    assert {"add", "exp", "where", "tanh_backward", "erf"} <= kinds["elementwise"]
    assert REGISTRY["add"].ufunc is np.add and REGISTRY["erf"].ufunc is None


def test_register_refuses_a_primitive_without_a_flop_rule() -> None:
    def prim(**kw: Any) -> Primitive:
        return Primitive("no_such_prim", impl=lambda xp, x: x, infer=lambda x: (x.shape, x.dtype),
                         differentiable=False, **kw)

    with pytest.raises(ValueError, match="no_such_prim.*FLOP"):
        register(prim())
    with pytest.raises(ValueError, match="must be elementwise"):
        register(prim(flops=flops_none, ufunc=np.negative))
    with pytest.raises(ValueError, match="cannot be elementwise"):
        register(prim(flops=flops_none, view=True, elementwise=True))
    assert "no_such_prim" not in REGISTRY


def test_is_view_of_getitem_follows_the_key() -> None:
    getitem = REGISTRY["getitem"]
    assert getitem.is_view({"key": (slice(1, None), 0)})
    assert getitem.is_view({"key": (Ellipsis, None)})
    assert not getitem.is_view({"key": (IndexArg(0),)})
    assert not getitem.is_view({"key": (slice(None), IndexArg(0))})
    assert REGISTRY["reshape"].is_view({"shape": (2, 3)})
    assert not REGISTRY["add"].is_view({}) and not REGISTRY["index_backward"].is_view(
        {"key": (slice(None),), "shape": (3,)})


def test_flop_formulas() -> None:
    flops = {n: p.flops for n, p in REGISTRY.items()}
    assert flops["matmul"]((5, 4), [(5, 3), (3, 4)], {}) == 2 * 20 * 3
    assert flops["matmul"]((), [(3,), (3,)], {}) == 2 * 3
    assert flops["matmul"]((7, 5, 4), [(7, 5, 3), (3, 4)], {}) == 2 * 140 * 3
    assert flops["sum"]((6,), [(5, 6)], {"axes": (0,), "keepdim": False}) == 30
    assert flops["index_backward"]((9, 4), [(5, 4), (5,)], {}) == 20
    assert flops["add"]((5, 6), [(5, 6), None], {}) == 30
    assert flops["exp"]((), [()], {}) == 1
    assert flops["reshape"]((30,), [(5, 6)], {"shape": (30,)}) == 0
    assert flops["to_device"]((5, 6), [(5, 6)], {"device": "cpu"}) == 0


def test_flops_match_the_plan_summary() -> None:
    """The registry's rules give the figures planner.inspect.estimate_flops gives a plan."""
    w = WORKLOADS["mlp_small"]
    case = w.build(rt, w.make_arrays(0))
    step = planner.compile(case.fn, backend="interpreter")
    step(*case.args)
    plan = step.plan
    metas = plan.schedule.metas
    seen = set()
    for s in plan.steps:
        prim = REGISTRY.get(s.op)
        if prim is None:
            continue
        shapes = [metas[v][0] if kind == "buf" else None for kind, v in s.args]
        assert prim.flops(tuple(s.shape), shapes, s.attrs) == estimate_flops(s, plan), s.op
        seen.add(s.op)
    assert {"matmul", "sum", "add"} <= seen


# --- random inputs -------------------------------------------------------------------------


def _values(rng: np.random.Generator, shape: tuple[int, ...], dtype: np.dtype) -> np.ndarray:
    if dtype == np.bool_:
        return np.asarray(rng.random(shape) < 0.5)
    if dtype.kind == "i":
        return np.asarray(rng.integers(-4, 5, shape), dtype)
    out = np.asarray(rng.standard_normal(shape) * 3, dtype)
    special = rng.random(shape) < 0.05  # nan, infinities and signed zeros, now and then
    out[special] = rng.choice(np.array([np.nan, np.inf, -np.inf, -0.0], dtype), special.sum())
    return out


def _array(rng: np.random.Generator, shape: tuple[int, ...], dtype: np.dtype) -> np.ndarray:
    """A random array of shape and dtype, C-contiguous or not (strided or transposed)."""
    layout = rng.integers(3) if shape else 0
    if layout == 1:
        return _values(rng, (*shape[:-1], 2 * shape[-1]), dtype)[..., ::2]
    if layout == 2:
        return _values(rng, shape[::-1], dtype).T
    return _values(rng, shape, dtype)


def _shape(rng: np.random.Generator, max_ndim: int = 3, min_ndim: int = 0) -> tuple[int, ...]:
    ndim = int(rng.integers(min_ndim, max_ndim + 1))
    sizes = [0, 1, 2, 3, 4, 5] if rng.random() < 0.15 else [1, 2, 3, 4, 5]
    return tuple(int(rng.choice(sizes)) for _ in range(ndim))


def _broadcast_from(rng: np.random.Generator, shape: tuple[int, ...]) -> tuple[int, ...]:
    """A shape that broadcasts to shape: some leading axes dropped, some axes made 1."""
    kept = shape[int(rng.integers(len(shape) + 1)):] if rng.random() < 0.3 else shape
    return tuple(1 if rng.random() < 0.3 else s for s in kept)


def _dtype(rng: np.random.Generator, floats: bool = False) -> np.dtype:
    return DTYPES[int(rng.integers(2 if floats else 0, 4))]


def _scalar(rng: np.random.Generator) -> Any:
    return [0, 2, -3, 0.0, 1.5, -0.25, True, False][int(rng.integers(8))]


def _ufunc_case(nin: int) -> Callable[[np.random.Generator], Case]:
    def case(rng: np.random.Generator) -> Case:
        shape = _shape(rng)
        args: list[Any] = []
        for i in range(nin):
            if nin == 2 and rng.random() < 0.25 and not any(type(a) is not np.ndarray
                                                            for a in args):
                args.append(_scalar(rng))
            else:
                args.append(_array(rng, _broadcast_from(rng, shape) if i else shape,
                                   _dtype(rng)))
        if nin == 2 and rng.random() < 0.5:
            args.reverse()
        same = _dtype(rng)  # most planned calls see one dtype (the dispatcher promotes)
        if rng.random() < 0.6:
            with np.errstate(invalid="ignore"):  # nan and inf to int64: any value will do
                args = [a.astype(same) if type(a) is np.ndarray else a for a in args]
        return args, {}

    return case


def _reduce_case(rng: np.random.Generator) -> Case:
    x = _array(rng, _shape(rng), _dtype(rng))
    axes = tuple(i for i in range(x.ndim) if rng.random() < 0.6)
    return [x], {"axes": axes, "keepdim": bool(rng.random() < 0.5)}


def _where_case(rng: np.random.Generator) -> Case:
    shape = (32, 40) if rng.random() < 0.3 else _shape(rng)  # 1280: the masked path
    cond = _array(rng, _broadcast_from(rng, shape) if rng.random() < 0.3 else shape,
                  np.dtype(np.bool_))
    a = _array(rng, _broadcast_from(rng, shape), _dtype(rng, floats=rng.random() < 0.7))
    b = _scalar(rng) if rng.random() < 0.4 else _array(rng, _broadcast_from(rng, shape),
                                                       a.dtype if rng.random() < 0.7
                                                       else _dtype(rng))
    return [cond, a, b], {}


def _matmul_case(rng: np.random.Generator) -> Case:
    m, k, n = (int(rng.integers(0 if rng.random() < 0.1 else 1, 5)) for _ in range(3))
    batch = (int(rng.integers(1, 4)),) if rng.random() < 0.3 else ()
    sa = [(k,), (m, k), (*batch, m, k)][int(rng.integers(3))]
    sb = [(k,), (k, n), (*batch, k, n)][int(rng.integers(3))]
    dt = _dtype(rng)
    return [_array(rng, sa, dt), _array(rng, sb, dt if rng.random() < 0.9 else _dtype(rng))], {}


def _reshape_case(rng: np.random.Generator) -> Case:
    x = _array(rng, _shape(rng), _dtype(rng))
    n = x.size
    shapes = [(n,), x.shape[::-1], (1, *x.shape), *([()] if n == 1 else [])]
    return [x], {"shape": shapes[int(rng.integers(len(shapes)))]}


def _permute_case(rng: np.random.Generator) -> Case:
    x = _array(rng, _shape(rng), _dtype(rng))
    return [x], {"dims": tuple(int(d) for d in rng.permutation(x.ndim))}


def _expand_case(rng: np.random.Generator) -> Case:
    shape = _shape(rng)
    lead = (int(rng.integers(1, 3)),) if rng.random() < 0.3 else ()
    return [_array(rng, _broadcast_from(rng, shape), _dtype(rng))], {"shape": lead + shape}


def _key(rng: np.random.Generator, shape: tuple[int, ...]) -> tuple[Any, list[np.ndarray]]:
    """A key template over shape (slices, ints, None, index arrays) and its index arrays."""
    items: list[Any] = []
    idx: list[np.ndarray] = []
    index_shape = (int(rng.integers(0, 4)),) if rng.random() < 0.7 else (2, 3)
    for size in shape[:int(rng.integers(1, len(shape) + 1))]:
        if rng.random() < 0.1:
            items.append(None)  # a new axis, before the one this item indexes
        pick = rng.random()
        if pick < 0.45 and size:
            items.append(IndexArg(len(idx)))  # repeated indices: index_backward accumulates
            idx.append(rng.integers(-size, size, index_shape).astype(np.int64))
        elif pick < 0.7 and size:
            items.append(int(rng.integers(-size, size)))
        else:
            items.append(slice(int(rng.integers(0, 2)), None, int(rng.choice([1, 2]))))
    if len(items) == 1 and rng.random() < 0.3:
        return items[0], idx  # a key that is no tuple
    return tuple(items), idx


def _getitem_case(rng: np.random.Generator) -> Case:
    x = _array(rng, _shape(rng, min_ndim=1), _dtype(rng))
    key, idx = _key(rng, x.shape)
    return [x, *idx], {"key": key}


def _index_backward_case(rng: np.random.Generator) -> Case:
    shape = _shape(rng, min_ndim=1)
    key, idx = _key(rng, shape)
    g_shape = _key_shape(shape, [i.shape for i in idx], key)
    return [_array(rng, g_shape, _dtype(rng)), *idx], {"key": key, "shape": shape}


def _arg_case(rng: np.random.Generator) -> Case:
    x = _array(rng, _shape(rng, min_ndim=1), _dtype(rng))
    if x.dtype.kind == "f" and rng.random() < 0.3:
        x[...] = rng.integers(-2, 2, x.shape)  # ties: the first one wins
        if x.size:
            x.flat[::3] = np.nan  # the first nan wins
    axis = None if rng.random() < 0.15 else int(rng.integers(0, x.ndim))  # as F.argmax gives
    return [x], {"axis": axis, "keepdim": bool(rng.random() < 0.5)}


def _geometry(rng: np.random.Generator) -> dict[str, Any]:
    return {"kernel": tuple(int(v) for v in rng.integers(1, 4, 2)),
            "dilation": tuple(int(v) for v in rng.integers(1, 3, 2)),
            "padding": tuple(int(v) for v in rng.integers(0, 3, 4)),
            "stride": tuple(int(v) for v in rng.integers(1, 4, 2))}


def _unfold_case(rng: np.random.Generator) -> Case:
    x = _array(rng, tuple(int(v) for v in rng.integers(1, 7, 4)), _dtype(rng))
    return [x], {**_geometry(rng), "pad_value": [0.0, -np.inf, 1.5][int(rng.integers(3))]}


def _fold_case(rng: np.random.Generator) -> Case:
    n, c = (int(v) for v in rng.integers(1, 4, 2))
    size = tuple(int(v) for v in rng.integers(1, 8, 2))
    attrs = {**_geometry(rng), "output_size": size}
    k, d, p, st = (attrs[a] for a in ("kernel", "dilation", "padding", "stride"))
    out = [(size[i] + p[2 * i] + p[2 * i + 1] - d[i] * (k[i] - 1) - 1) // st[i] + 1
           for i in range(2)]
    cols = (n, c * k[0] * k[1], max(out[0], 0) * max(out[1], 0))
    return [_array(rng, cols, _dtype(rng, floats=rng.random() < 0.8))], attrs


def _pow_case(rng: np.random.Generator) -> Case:
    """A binary ufunc's case, or an array to the number -0.5 or 0.5 (pow's fast path leaves
    x ** -0.5 of float32, float64 and bfloat16 to its impl: PyTorch's rsqrt)."""
    args, attrs = _ufunc_case(2)(rng)
    if rng.random() < 0.4 and type(args[0]) is np.ndarray:
        args = [args[0], float(rng.choice([-0.5, 0.5]))]
    return args, attrs


def _cast_case(rng: np.random.Generator) -> Case:
    """An array of any dtype to any dtype (a float to an integer: the impl's, no fast path)."""
    dtype = [rt.bool, rt.uint8, rt.int32, rt.int64, rt.float32, rt.float64][int(rng.integers(6))]
    return [_array(rng, _shape(rng), _dtype(rng))], {"dtype": dtype}


CASES: dict[str, Callable[[np.random.Generator], Case]] = {
    "sum": _reduce_case, "amax": _reduce_case, "mean": _reduce_case, "where": _where_case,
    "matmul": _matmul_case, "reshape": _reshape_case, "permute": _permute_case,
    "expand": _expand_case, "getitem": _getitem_case, "index_backward": _index_backward_case,
    "argmax": _arg_case, "argmin": _arg_case, "unfold": _unfold_case, "fold": _fold_case,
    "pow": _pow_case, "cast": _cast_case,
}
for _name, _prim in REGISTRY.items():
    if _prim.ufunc is not None:
        CASES[_name] = _ufunc_case(_prim.ufunc.nin)

# --- comparisons ---------------------------------------------------------------------------


def _same(got: np.ndarray, want: np.ndarray) -> bool:
    """Equal shape, dtype and bits (any nan equals any nan)."""
    if got.shape != want.shape or got.dtype != want.dtype:
        return False
    if got.dtype.kind != "f":
        return bool(np.array_equal(got, want))
    bits = np.dtype(f"u{got.dtype.itemsize}")
    return bool(np.all((got.view(bits) == want.view(bits)) | (np.isnan(got) & np.isnan(want))))


def _meta(a: Any) -> Any:
    return Meta(a.shape, _DT[a.dtype], "cpu") if type(a) is np.ndarray else a


def _run(fn: Callable[..., Any]) -> tuple[Any, type | None]:
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        try:
            return fn(), None
        except Exception as e:  # compared with the other side's failure below
            return None, type(e)


def test_every_fast_path_has_random_cases() -> None:
    with_fast = {n for n, p in REGISTRY.items() if p.specializer is not None or p.ufunc}
    assert with_fast == set(CASES)


@pytest.mark.parametrize("name", sorted(CASES))
def test_specializer_equals_impl(name: str) -> None:
    prim = REGISTRY[name]
    rng = np.random.default_rng(sorted(REGISTRY).index(name))
    used: Counter[str] = Counter()
    for _ in range(150):
        args, attrs = CASES[name](rng)
        try:
            shape, dtype = prim.infer(*(_meta(a) for a in args), **attrs)
        except (TypeError, ValueError, IndexError):
            continue  # the planner never plans it
        out_meta = (tuple(shape), dtype.np)
        arg_metas = [(a.shape, a.dtype) if type(a) is np.ndarray else a for a in args]
        fast = prim.specialize(arg_metas, attrs, out_meta)
        used["none" if fast is None else "fast"] += 1
        if fast is None:
            continue
        want, want_error = _run(lambda: prim.impl(np, *args, **attrs))
        got, got_error = _run(lambda: fast(*args))
        assert got_error == want_error, (name, arg_metas, attrs)
        if want_error is not None:
            continue
        want = np.asarray(want)  # the planner's result check, as it fixes a numpy scalar
        want = want.astype(dtype.np) if want.dtype != dtype.np else want
        assert type(got) is np.ndarray, (name, arg_metas, attrs, type(got))
        assert got.shape == out_meta[0] and got.dtype == out_meta[1], (name, arg_metas, attrs)
        assert _same(got, want), (name, arg_metas, attrs, got, want)
    assert used["fast"] >= 10, used  # the cases reach the fast path, not only its refusals


def test_fast_paths_hold_no_arrays() -> None:
    """A specializer sees metas, never arrays: its callable cannot keep a big one alive."""
    rng = np.random.default_rng(7)
    for name, make in CASES.items():
        prim = REGISTRY[name]
        for _ in range(20):
            args, attrs = make(rng)
            try:
                shape, dtype = prim.infer(*(_meta(a) for a in args), **attrs)
            except (TypeError, ValueError, IndexError):
                continue
            metas = [(a.shape, a.dtype) if type(a) is np.ndarray else a for a in args]
            fast = prim.specialize(metas, attrs, (tuple(shape), dtype.np))
            cells = getattr(fast, "__closure__", None) or ()
            assert not any(type(c.cell_contents) is np.ndarray and c.cell_contents.size > 1
                           for c in cells), name


def test_where_masked_path_keeps_nan_and_scalar_zero() -> None:
    where = REGISTRY["where"]
    rng = np.random.default_rng(3)
    cond = rng.random((40, 30)) < 0.5
    a = rng.standard_normal((40, 30)).astype(np.float32)
    for b in (0, 0.0, 2.5):
        fast = where.specialize([(cond.shape, cond.dtype), (a.shape, a.dtype), b], {},
                                ((40, 30), np.dtype(np.float32)))
        assert fast is not None
        assert _same(fast(cond, a, b), where.impl(np, cond, a, b))
    a[~cond] = np.nan  # unselected nan: 0 * nan poisons the masked sum, the fallback runs
    assert _same(fast(cond, a, 2.5), np.where(cond, a, np.float32(2.5)))


@pytest.mark.parametrize("name", sorted(n for n, p in REGISTRY.items() if p.elementwise))
def test_elementwise_results_are_new_arrays(name: str) -> None:
    prim = REGISTRY[name]
    rng = np.random.default_rng(5)
    dt = np.dtype(np.int64 if name.startswith("bitwise_") else np.float32)  # integer-only ops
    x, y = _array(rng, (3, 4), dt), _array(rng, (3, 4), dt)
    attrs = {"cast": {"dtype": rt.float32}, "clamp": {"min": None, "max": None},
             "lerp": {"weight": 0.3}, "add_scaled": {"alpha": 0.5},
             "sub_scaled": {"alpha": 0.5}, "addcmul": {"value": 0.5}}.get(name, {})
    args = [x > 0, x, y] if name == "where" else \
        [x, y, x] if name in ("lerp_tensor", "addcmul") else \
        [x, y][:prim.impl.__code__.co_argcount - 1]
    with np.errstate(all="ignore"):
        out = prim.impl(np, *args, **attrs)
    assert not any(np.shares_memory(out, a) for a in args), name


# --- declared ufuncs -----------------------------------------------------------------------


@pytest.mark.parametrize("name", sorted(n for n, p in REGISTRY.items() if p.ufunc is not None))
def test_declared_ufunc_is_the_impl(name: str) -> None:
    prim = REGISTRY[name]
    ufunc = prim.ufunc
    assert ufunc is not None and ufunc.nout == 1
    rng = np.random.default_rng(11)
    for dtypes in np.ndindex(*(len(DTYPES),) * ufunc.nin):
        args = [_array(rng, (3, 4), DTYPES[d]) for d in dtypes]
        want, want_error = _run(lambda: prim.impl(np, *args))
        got, got_error = _run(lambda: ufunc(*args))
        assert got_error == want_error, (name, dtypes)
        if want_error is None:
            assert _same(got, want), (name, dtypes)
        if ufunc.nin == 2:  # with a Python scalar on either side
            for s in (2, -1.5, True):
                for pair in ((args[0], s), (s, args[0])):
                    want, want_error = _run(lambda: prim.impl(np, *pair))
                    got, got_error = _run(lambda: ufunc(*pair))
                    assert got_error == want_error and (want_error or _same(got, want))
