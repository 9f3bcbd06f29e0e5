"""Indexing, views and in-place writes against PyTorch (h7's sweep): writes into an expand()ed
tensor, the argument parser's errors, and the like."""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import runtime as rt

torch = pytest.importorskip("torch")


def _outcome(fn: Callable[[Any], Any], m: Any) -> tuple[Any, ...]:
    """fn(m)'s value (lists), or its exception's type and text, and the warnings' first
    words."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            out = fn(m)
            result: tuple[Any, ...] = ("value", out.tolist() if hasattr(out, "tolist") else out)
        except Exception as e:  # noqa: BLE001 - the error is what is compared
            result = ("error", type(e).__name__, str(e))
    return (*result, [str(w.message).split(" (Triggered")[0] for w in caught])


def _same(fn: Callable[[Any], Any]) -> None:
    assert _outcome(fn, rt) == _outcome(fn, torch)


def _set(x: Any, key: Any, value: Any) -> Any:
    x[key] = value
    return x


# --- t[key] = v on an expand()ed tensor ------------------------------------------------------
# PyTorch copies into t[key] (its error only where that view has an element twice) and
# index_put_s an advanced key, with its deprecation warnings
EXPANDED_SETS: dict[str, Callable[[Any], Any]] = {
    "row_number": lambda m: _set(m.zeros(3).expand(2, 3), 0, 2.0),
    "row_tensor": lambda m: _set(m.zeros(3).expand(2, 3), 0, m.tensor([1.0, 2.0, 3.0])),
    "element": lambda m: _set(m.zeros(3).expand(2, 3), (0, 0), m.tensor(3.0)),
    "slice_of_row": lambda m: _set(m.zeros(3).expand(2, 3), (1, slice(1, None)), 2.0),
    "int_row": lambda m: _set(m.zeros(3, dtype=m.long).expand(2, 3), -1, 7),
    "index": lambda m: _set(m.zeros(3).expand(2, 3), m.tensor([1]), m.tensor([1.0, 2.0, 3.0])),
    "list": lambda m: _set(m.zeros(3).expand(2, 3), [1], 4.0),
    "mask": lambda m: _set(m.zeros(3).expand(2, 3), m.tensor([True, False]), 1.0),
    "mask_2d": lambda m: _set(m.zeros(3).expand(2, 3),
                              m.tensor([[True, False, True], [False, False, False]]), 1.0),
    "mask_row": lambda m: _set(m.zeros(3).expand(2, 3), m.tensor([True, False]),
                               m.tensor([1.0, 2.0, 3.0])),
    "row_then_index": lambda m: _set(m.zeros(3).expand(2, 3), (0, m.tensor([1])), 4.0),
    "slice_then_index": lambda m: _set(m.zeros(3).expand(2, 3),
                                       (slice(None), m.tensor([1])), 4.0),
}


@pytest.mark.parametrize("case", sorted(EXPANDED_SETS))
def test_setitem_on_expanded_tensor(case: str) -> None:
    _same(EXPANDED_SETS[case])


def test_setitem_on_expanded_tensor_refuses_a_view_with_shared_elements() -> None:
    # the column of an expand() has one element twice: PyTorch's copy_ refuses it (its row
    # has not)
    for key in ((slice(None), 0), Ellipsis, 0):
        _same(lambda m, key=key: _set(m.zeros(3).expand(2, 3), key, 5.0))


def test_setitem_on_expanded_tensor_writes_its_base() -> None:
    def fn(m: Any) -> Any:
        base = m.arange(3.0)
        base.expand(2, 3)[1] = m.tensor([4.0, 5.0, 6.0])
        return base

    _same(fn)


def test_setitem_on_expanded_tensor_gradients() -> None:
    def fn(m: Any) -> Any:
        a = m.zeros(3, dtype=m.float64, requires_grad=True)
        x = a.clone().expand(2, 3)
        v = m.tensor([1.0, 2.0], dtype=m.float64, requires_grad=True)
        x[1, 1:] = v * 2
        (x * m.arange(6.0, dtype=m.float64).reshape(2, 3)).sum().backward()
        return [x.tolist(), a.grad.tolist(), v.grad.tolist()]

    _same(fn)


# --- max and min: dim=None is none of their overloads ---------------------------------------
MINMAX_CALLS = [
    "m.max(x, None)", "m.max(x, dim=None)", "m.max(x, None, True)", "m.max(x, None, keepdim=True)",
    "m.max(x, dim=None, keepdim=True)", "m.min(x, keepdim=True, dim=None)", "m.max(x, keepdim=True)",
    "x.max(None)", "x.min(dim=None)", "x.max(None, True)", "x.min(None, keepdim=False)",
    "x.max(dim=None, keepdim=True)", "x.max(keepdim=True)", "m.min(x, None)",
]


@pytest.mark.parametrize("call", MINMAX_CALLS)
def test_max_min_refuse_dim_none(call: str) -> None:
    _same(lambda m: eval(call, {"m": m, "x": m.tensor([[1.0, 5.0], [3.0, 2.0]])}))


def test_max_min_still_take_their_overloads() -> None:
    for call in ("x.max(None)", "m.max(x)", "x.min()", "m.max(x, 1)[0]", "x.max(-1, True)[1]",
                 "x.min(dim=0).values", "m.max(x, x * 2)", "x.min(x * 2)", "m.max(x, axis=0)[0]",
                 "m.max(x, out=m.empty(0))", "m.max(x, other=x)"):
        _same(lambda m, call=call: eval(call, {"m": m, "x": m.tensor([[1.0, 5.0], [3.0, 2.0]])}))
    assert rt.max.__name__ == "max" and rt.Tensor.min.__name__ == "min"


# --- the parser's TypeError for an int argument that is no int ------------------------------
# (op, arguments before the checked one, its name, arguments after it)
INT_ARGUMENTS = [
    ("cumsum", (), "dim", ()), ("cumprod", (), "dim", ()), ("logcumsumexp", (), "dim", ()),
    ("cummax", (), "dim", ()), ("softmax", (), "dim", ()), ("log_softmax", (), "dim", ()),
    ("unsqueeze", (), "dim", ()), ("mode", (), "dim", ()), ("median", (), "dim", ()),
    ("unbind", (), "dim", ()), ("argmax", (), "dim", ()), ("flatten", (0,), "end_dim", ()),
    ("transpose", (0,), "dim1", ()), ("swapaxes", (), "axis0", (1,)), ("select", (0,), "index", ()),
    ("select", (), "dim", (0,)), ("index_select", (), "dim", ("IDX",)),
    ("gather", (), "dim", ("IDX2",)), ("kthvalue", (1,), "dim", ()), ("chunk", (), "chunks", ()),
    ("chunk", (2,), "dim", ()), ("diagonal", (0,), "dim1", (1,)), ("diag_embed", (), "offset", ()),
    ("unflatten", (), "dim", ((3, 1),)), ("topk", (1,), "dim", ()), ("tril", (), "diagonal", ()),
    ("diff", (), "n", ()), ("rot90", (), "k", ()), ("take_along_dim", ("IDX2",), "dim", ()),
    ("index_add", (), "dim", ("IDX", "SRC")), ("scatter_add", (), "dim", ("IDX2", "SRC")),
]


def _arguments(m: Any, values: tuple[Any, ...]) -> list[Any]:
    named = {"IDX": m.tensor([0]), "IDX2": m.zeros(1, 3, dtype=m.long), "SRC": m.ones(1, 3)}
    return [named.get(v, v) if isinstance(v, str) else v for v in values]


@pytest.mark.parametrize("bad", ["a", 1.5, None, True, (0,)], ids=repr)
@pytest.mark.parametrize("case", INT_ARGUMENTS, ids=lambda c: f"{c[0]}-{c[2]}")
def test_int_argument_type_error(case: tuple[Any, ...], bad: Any) -> None:
    op, before, param, after = case
    if bad is None and op in ("argmax", "take_along_dim"):
        bad = "a"  # their dim is PyTorch's ``int? dim``

    def call(form: str) -> Callable[[Any], Any]:
        def fn(m: Any) -> Any:
            x = m.arange(6.0).reshape(2, 3)
            b, a = _arguments(m, before), _arguments(m, after)
            if form == "function":
                return getattr(m, op)(x, *b, bad, *a)
            if form == "method":
                return getattr(x, op)(*b, bad, *a)
            return getattr(m, op)(x, *b, **{param: bad}, **_kw(op, a))
        return fn

    for form in ("function", "method", "keyword"):
        _same(call(form))


def _kw(op: str, after: list[Any]) -> dict[str, Any]:
    """The arguments after the checked one, by keyword (their PyTorch names)."""
    names = {"swapaxes": ["axis1"], "select": ["index"], "index_select": ["index"],
             "gather": ["index"], "diagonal": ["dim2"], "unflatten": ["sizes"],
             "index_add": ["index", "source"], "scatter_add": ["index", "src"]}.get(op, [])
    return dict(zip(names, after))


@pytest.mark.parametrize("bad", ["a", 1.5, True])
def test_cat_stack_dim_type_error(bad: Any) -> None:
    for op in ("cat", "stack"):
        _same(lambda m, op=op: getattr(m, op)([m.ones(2)], bad))
        _same(lambda m, op=op: getattr(m, op)([m.ones(2)], dim=bad))


def test_int_arguments_take_ints() -> None:
    def fn(m: Any) -> Any:
        x = m.arange(6.0).reshape(2, 3)
        return [x.cumsum(m.tensor(1)).tolist(), m.transpose(x, np.int64(0), 1).tolist(),
                x.argmax(None).item(), x.unsqueeze_(0).shape, x.transpose_(0, 2).shape,
                _outcome(lambda _: x.transpose_(0, 2.0), m)]

    _same(fn)


# --- ints (and 0-d index tensors) beside index tensors: PyTorch selects first ---------------
# numpy counts an int as an index array, so x[1, :, idx] put idx's dims first; PyTorch
# selects dim 0 first, then indexes the view (idx's dims stay in place)
MIXED_KEYS: dict[str, Callable[[Any], Any]] = {
    "int_slice_index": lambda m: (1, slice(None), m.tensor([1, 0])),
    "none_int_slice_index": lambda m: (None, 1, slice(None), m.tensor([1, 0])),
    "int_ellipsis_index": lambda m: (1, Ellipsis, m.tensor([1, 0])),
    "negative_int_list": lambda m: (-1, slice(None), [0, 2]),
    "int_slice_mask": lambda m: (1, slice(None), m.tensor([True, False, True, False])),
    "int_step_index_step": lambda m: (1, slice(1, None, 2), m.tensor([1, 0]),
                                      slice(None, None, 2)),
    "int_slice_index_2d": lambda m: (1, slice(None), m.tensor([[1, 0], [2, 3]])),
    "zero_d_slice_index": lambda m: (m.tensor(1), slice(None), m.tensor([1, 3])),
    "zero_d_int32": lambda m: (m.tensor(1, dtype=m.int32), slice(None), m.tensor([1, 3])),
}


@pytest.mark.parametrize("case", sorted(MIXED_KEYS))
def test_int_beside_index_tensor_get_set_grad(case: str) -> None:
    key = MIXED_KEYS[case]

    def get(m: Any) -> Any:
        x = m.arange(120.0, dtype=m.float64).reshape(2, 3, 4, 5).requires_grad_()
        y = x[key(m)]
        (y * m.arange(float(y.numel()), dtype=m.float64).reshape(y.shape)).sum().backward()
        return [y.tolist(), x.grad.tolist(), type(y.grad_fn).__name__]

    def put(m: Any) -> Any:
        x = m.arange(120.0).reshape(2, 3, 4, 5)
        shape = x[key(m)].shape
        x[key(m)] = m.arange(float(np.prod(shape))).reshape(shape) + 1000
        return x

    _same(get)
    _same(put)


def test_zero_d_index_tensor_is_a_select() -> None:
    def fn(m: Any) -> Any:
        x = m.arange(24.0).reshape(2, 3, 4).requires_grad_()
        return [type(x[m.tensor(1)].grad_fn).__name__, x[np.array(1), :, m.tensor([0, 2])].shape,
                type(x[:, m.tensor(1, dtype=m.int16)].grad_fn).__name__]

    _same(fn)


# --- t[key] = v: scalar bools, leaves, gradients -------------------------------------------
SCALAR_BOOL_SETS: dict[str, Callable[[Any], Any]] = {
    "true_tensor": lambda m: _set(m.arange(24.0).reshape(2, 3, 4), m.tensor(True), 1.0),
    "false_tensor": lambda m: _set(m.arange(24.0).reshape(2, 3, 4), m.tensor(False), 1.0),
    "true": lambda m: _set(m.arange(24.0).reshape(2, 3, 4), True, m.ones(1, 2, 3, 4)),
    "int_true": lambda m: _set(m.arange(24.0).reshape(2, 3, 4), (0, True), m.ones(3, 4) * 3),
    "ellipsis_true": lambda m: _set(m.arange(24.0).reshape(2, 3, 4), (Ellipsis, True), 7.0),
}


@pytest.mark.parametrize("case", sorted(SCALAR_BOOL_SETS))
def test_setitem_scalar_bool(case: str) -> None:
    _same(SCALAR_BOOL_SETS[case])


def test_setitem_leaf_errors_name_the_view() -> None:
    # a basic key writes PyTorch's view of the leaf; a full key or an index tensor the leaf
    for key in ((0,), (slice(None), 0), None, (0, "IDX"), Ellipsis, ("IDX",)):
        def fn(m: Any, key: Any = key) -> Any:
            x = m.zeros(2, 3, requires_grad=True)
            x[tuple(m.tensor([0]) if k == "IDX" else k for k in key)
              if isinstance(key, tuple) else key] = 1.0

        _same(fn)


def test_setitem_index_tensors_node_and_gradients() -> None:
    for key, shape in (((lambda m: (m.tensor([1, 1]),)), (2, 1, 4)),
                       ((lambda m: (m.tensor([0, 0, 1]), m.tensor([2, 2, 0]))), (3, 4)),
                       ((lambda m: (m.tensor([[True, False, True], [False, False, True]]),)),
                        (4,))):
        def fn(m: Any, key: Any = key, shape: Any = shape) -> Any:
            a = m.arange(24.0, dtype=m.float64).reshape(2, 3, 4).requires_grad_()
            v = m.arange(float(np.prod(shape)), dtype=m.float64).reshape(shape)
            v.requires_grad_()
            x = a * 2
            x[key(m)] = v * 3
            (x * m.arange(24.0, dtype=m.float64).reshape(2, 3, 4)).sum().backward()
            return [a.grad.tolist(), v.grad.tolist(), type(x.grad_fn).__name__]

        _same(fn)


def test_inplace_on_a_view_of_an_expanded_tensor() -> None:
    # the row of an expand() has no element twice: PyTorch writes it (the shared storage)
    _same(lambda m: (lambda x: (x[0].add_(1), x)[1])(m.zeros(3).expand(2, 3)))
    _same(lambda m: (lambda x: (x.t()[0].copy_(m.ones(2)), x)[1])(m.zeros(3).expand(2, 3)))

    def grad(m: Any) -> Any:
        a = m.ones(3, requires_grad=True)
        x = a.clone().expand(2, 3)
        x[1].mul_(m.tensor([1.0, 2.0, 3.0]))
        x.sum().backward()
        return [x.tolist(), a.grad.tolist()]

    _same(grad)


# --- PyTorch's Python indexing: a list holding sequences is a tuple; slice steps ------------
LIST_KEYS: dict[str, Callable[[Any], Any]] = {
    "lists": lambda m: [[0, 1], [1, 0]],
    "int_slice": lambda m: [0, slice(None)],
    "tensor_int": lambda m: [m.tensor([0, 1]), 1],
    "none_int": lambda m: [None, 0],
    "int_ellipsis": lambda m: [0, Ellipsis],
    "bool_list": lambda m: [[True, False]],
}


@pytest.mark.parametrize("case", sorted(LIST_KEYS))
def test_list_key_read_as_pytorch(case: str) -> None:
    key = LIST_KEYS[case]
    _same(lambda m: m.arange(24.0).reshape(2, 3, 4)[key(m)])
    _same(lambda m: _set(m.arange(24.0).reshape(2, 3, 4), key(m), -1.0))


@pytest.mark.parametrize("key", [slice(None, None, -1), (0, slice(3, 0, -2)), slice(None, None, 0),
                                 (Ellipsis, slice(1, None, 0)), "a", (0, b"a")], ids=repr)
def test_key_errors_as_pytorch(key: Any) -> None:
    _same(lambda m: m.arange(24.0).reshape(2, 3, 4)[key])
    _same(lambda m: _set(m.arange(24.0).reshape(2, 3, 4), key, 1.0))


# --- index_select, put_, index_add: PyTorch's checks and dtypes ------------------------------
INDEX_OP_CASES: dict[str, Callable[[Any], Any]] = {
    # a 0-d input takes one index
    "index_select_scalar_two": lambda m: m.tensor(1.5).index_select(0, m.tensor([0, 0])),
    # PyTorch's kernel along dim 1 checks (and words) its indices itself
    "index_select_dim1": lambda m: m.zeros(3, 4).index_select(1, m.tensor([0, 4])),
    "index_select_dim_minus1_3d": lambda m: m.zeros(2, 3, 4).index_select(-2, m.tensor([-1])),
    "index_select_dim1_transposed": lambda m: m.zeros(4, 3).t().index_select(1, m.tensor([7])),
    "index_select_empty_axis": lambda m: m.zeros(3, 0).index_select(1, m.tensor([0])),
    "index_select_empty_rows": lambda m: m.zeros(0, 4, 2).index_select(0, m.tensor([0])),
    "take_from_empty": lambda m: m.take(m.zeros(0, 3), m.tensor([-1])),
    "put_count": lambda m: m.zeros(3).put_(m.tensor([0, 1]), m.ones(3)),
    "put_count_accumulate": lambda m: m.zeros(3).put_(m.tensor([0, 1]), m.ones(3),
                                                      accumulate=True),
    "put_count_out_of_place": lambda m: m.zeros(3).put(m.tensor([0, 1]), m.ones(1)),
    # an integer input takes a float alpha in its own dtype (1.5: 1)
    "index_add_int_float_alpha": lambda m: m.arange(12).reshape(3, 4).index_add(
        0, m.tensor([2, 2]), m.tensor([[1, 2, 3, 4], [5, 6, 7, 8]]), alpha=1.5),
    "index_add_bool_float_alpha": lambda m: m.zeros(2, 2, dtype=m.bool).index_add(
        0, m.tensor([1]), m.ones(1, 2, dtype=m.bool), alpha=0.5),
}


@pytest.mark.parametrize("case", sorted(INDEX_OP_CASES))
def test_index_ops_as_pytorch(case: str) -> None:
    _same(INDEX_OP_CASES[case])


# --- diagonal is a view ----------------------------------------------------------------------
def test_diagonal_is_a_view_written_through() -> None:
    def fn(m: Any) -> Any:
        a = m.arange(24.0, dtype=m.float64).reshape(2, 3, 4).requires_grad_()
        x = a * 1
        d = x.diagonal(1, 0, 2)
        d.mul_(m.tensor([[2.0], [3.0], [4.0]], dtype=m.float64))  # d is (3, 2)
        x.diagonal(-1, -1, 1).fill_(-1.0)
        (x * m.arange(24.0, dtype=m.float64).reshape(2, 3, 4)).sum().backward()
        y = m.zeros(3).expand(3, 3)  # an expand()'s diagonal has no element twice
        y.diagonal().add_(1)
        return [x.tolist(), a.grad.tolist(), type(d.grad_fn).__name__, x._version, y.tolist()]

    _same(fn)


def test_diagonal_gradcheck() -> None:
    x = rt.tensor(np.random.default_rng(7).standard_normal((2, 3, 4)), requires_grad=True)
    assert rt.autograd.gradcheck(lambda a: a.diagonal(1, -1, 0), (x,))
    assert rt.autograd.gradgradcheck(lambda a: a.diagonal(-1, 2, 1) * a.diagonal(-1, 2, 1), (x,))
    assert rt.diagonal(x, 0, 0, 1)._base is x


# --- view and index_put errors: PyTorch's types and texts ------------------------------------
VIEW_ERRORS: dict[str, Callable[[Any], Any]] = {
    "narrow_negative_length": lambda m: m.zeros(3, 4).narrow(1, 0, -1),
    "narrow_start_past_end": lambda m: m.zeros(3, 4).narrow(1, 5, 0),
    "narrow_start_before_begin": lambda m: m.zeros(3, 4).narrow(-1, -5, 1),
    "movedim_repeated_source": lambda m: m.zeros(3, 4, 5).movedim((0, -3), (1, 2)),
    "movedim_repeated_destination": lambda m: m.zeros(3, 4, 5).movedim((0, 1), (-1, 2)),
    "t_3d": lambda m: m.zeros(3, 4, 5).t(),
    "t__3d": lambda m: m.zeros(3, 4, 5).t_(),
    "index_put_none": lambda m: m.zeros(3, 4).index_put((m.tensor([0]), None), m.tensor(1.0)),
    "index_put_int": lambda m: m.zeros(3, 4).index_put_((0,), m.tensor(1.0)),
    "index_put_tensor": lambda m: m.zeros(3, 4).index_put(m.tensor([0]), m.tensor(1.0)),
    "index_put_too_many": lambda m: m.zeros(3, 4).index_put((m.tensor([0]),) * 3, m.tensor(1.0),
                                                            accumulate=True),
}


@pytest.mark.parametrize("case", sorted(VIEW_ERRORS))
def test_view_and_index_put_errors(case: str) -> None:
    _same(VIEW_ERRORS[case])


# masked_fill_ and index_fill_ of an expand(): PyTorch writes (each shared element once), with
# its deprecation warning
EXPANDED_FILLS: dict[str, Callable[[Any], Any]] = {
    "masked_fill_row_mask": lambda m: m.zeros(3).expand(2, 3).masked_fill_(
        m.tensor([[True, False, False]]), 1.0),
    "masked_fill_full_mask": lambda m: m.zeros(3).expand(2, 3).masked_fill_(
        m.tensor([[True, False, False], [False, False, True]]), 1.0),
    "masked_fill_tensor_value": lambda m: m.zeros(3).expand(2, 3).masked_fill_(
        m.tensor([True, False, True]), m.tensor(2.0)),
    "index_fill_dim0": lambda m: m.zeros(3).expand(2, 3).index_fill_(0, m.tensor([0]), 1.0),
    "index_fill_dim1": lambda m: m.zeros(3).expand(2, 3).index_fill_(1, m.tensor([0, 2]), 1.0),
    "index_fill_int": lambda m: m.zeros(3, dtype=m.long).expand(2, 3).index_fill_(
        -1, m.tensor(1), 1.7),
    "masked_fill_base": lambda m: (lambda b: (b.expand(2, 3).masked_fill_(
        m.tensor([[True, False, False]]), 1.0), b)[1])(m.zeros(3)),
}


@pytest.mark.parametrize("case", sorted(EXPANDED_FILLS))
def test_fill_ops_on_expanded_tensor(case: str) -> None:
    _same(EXPANDED_FILLS[case])


# squeeze(None) is none of squeeze's overloads (it squeezed every dim); logsumexp's dim names
# its position by the call; renorm's dim is an int
PARSER_CALLS = [
    "x.squeeze(None)", "m.squeeze(x, None)", "m.squeeze(x, dim=None)", "x.squeeze(dim=None)",
    "x.squeeze_(None)", "x.squeeze_(dim=None)", "x.squeeze('a')", "m.squeeze(x, 1.5)",
    "m.logsumexp(x, dim=None)", "x.logsumexp(None)", "m.logsumexp(x, 'a')", "x.logsumexp(1.5)",
    "m.renorm(x, 2, None, 1.0)", "x.renorm(2, 'a', 1.0)",
]


@pytest.mark.parametrize("call", PARSER_CALLS)
def test_parser_errors_squeeze_logsumexp_renorm(call: str) -> None:
    _same(lambda m: eval(call, {"m": m, "x": m.zeros(1, 3, 1)}))


def test_squeeze_logsumexp_still_take_their_arguments() -> None:
    for call in ("x.squeeze()", "x.squeeze(0)", "x.squeeze((0, 2))", "m.squeeze(x, [0])",
                 "x.squeeze_(-1)", "x.squeeze(m.tensor(0))", "m.logsumexp(x, (0, 1))",
                 "x.logsumexp([1], True)", "x.logsumexp(dim=-1)", "x.squeeze(None)"):
        _same(lambda m, call=call: eval(call, {"m": m, "x": m.zeros(1, 3, 1)}))
