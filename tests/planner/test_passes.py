"""Planner graph helpers and passes: each pass on hand-built graphs, check(), and an
evaluation oracle (outputs identical before and after the default passes)."""

from __future__ import annotations

from typing import Any

import networkx as nx
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import planner
import runtime as rt
from benchmarks.workloads import WORKLOADS
from planner.graph import (
    GraphError,
    add_value,
    arg_nodes,
    check,
    metas,
    remove_dead,
    replace_uses,
    topo_order,
)
from planner.passes import (cse, fold_constants, prune, run_default_passes, simplify,
                             sum_merged_axes)
from runtime._dtype import from_numpy_dtype
from runtime.autograd.node import Meta
from runtime.ops import REGISTRY

F32, F64 = rt.float32, rt.float64


# --- building graphs ------------------------------------------------------------------------


def new_graph() -> nx.DiGraph:
    return nx.DiGraph(outputs=[], slots=[], writes=[], returns=None)


def inp(g: nx.DiGraph, shape: tuple[int, ...], index: int = 0, dtype: Any = F32) -> int:
    return add_value(g, "input", [], {}, shape, dtype, "cpu", index=index, phase="forward")


def const(g: nx.DiGraph, value: Any, dtype: Any = F32) -> int:
    arr = np.asarray(value, dtype=dtype.np)
    return add_value(g, "const", [], {}, arr.shape, from_numpy_dtype(arr.dtype), "cpu",
                     value=arr)


def S(v: Any) -> tuple[str, Any]:
    return ("scalar", v)


def op(g: nx.DiGraph, name: str, *args: Any, **attrs: Any) -> int:
    """A primitive node: int args are node ids, S(v) args are scalars; infer gives the meta."""
    a = [x if isinstance(x, tuple) else ("node", x) for x in args]
    ms = [Meta(g.nodes[x]["shape"], g.nodes[x]["dtype"], "cpu") if k == "node" else x
          for k, x in a]
    shape, dtype = REGISTRY[name].infer(*ms, **attrs)
    return add_value(g, name, a, attrs, shape, dtype, "cpu", phase="forward")


def reference_eval(g: nx.DiGraph, inputs: dict[int, np.ndarray]) -> list[np.ndarray]:
    """Walk g in topological order, running each primitive's numpy forward."""
    vals: dict[int, np.ndarray] = {}
    with np.errstate(all="ignore"):
        for v in nx.topological_sort(g):
            n = g.nodes[v]
            if n["op"] == "input":
                vals[v] = inputs[n["index"]]
            elif n["op"] == "const":
                vals[v] = n["value"]
            else:
                args = [vals[x] if k == "node" else x for k, x in n["args"]]
                out = REGISTRY[n["op"]].impl(np, *args, **n["attrs"])
                vals[v] = np.asarray(out, dtype=n["dtype"].np)
    return [vals[o] for o in g.graph["outputs"]]


# --- graph helpers --------------------------------------------------------------------------


def test_add_value_edges_and_metas() -> None:
    g = new_graph()
    x = inp(g, (2, 3))
    y = op(g, "mul", x, x)
    z = op(g, "add", y, S(2.0))
    assert (x, y, z) == (0, 1, 2) and g.graph["next_id"] == 3
    assert g.edges[x, y]["pos"] == [0, 1]
    assert arg_nodes(g, y) == [x, x] and arg_nodes(g, z) == [y]
    assert metas(g, z) == [Meta((2, 3), F32, "cpu"), 2.0]
    check(g)


def test_replace_uses_rewrites_consumers_and_graph_refs() -> None:
    g = new_graph()
    x = inp(g, (3,))
    a = op(g, "exp", x)
    b = op(g, "sin", x)
    c = op(g, "add", a, a)
    g.graph.update(outputs=[a, c], writes=[(0, a), (1, -1)],
                   returns=("tuple", [("node", a), ("dict", [("c", ("node", c)),
                                                             ("a", ("node", a))]), ("py", 1)]))
    replace_uses(g, a, b)
    assert g.nodes[c]["args"] == [("node", b), ("node", b)]
    assert g.edges[b, c]["pos"] == [0, 1] and not g.has_edge(a, c)
    assert g.graph["outputs"] == [b, c] and g.graph["writes"] == [(0, b), (1, -1)]
    assert g.graph["returns"] == ("tuple", [("node", b), ("dict", [("c", ("node", c)),
                                                                   ("a", ("node", b))]),
                                            ("py", 1)])
    assert remove_dead(g) == 1 and a not in g
    check(g)


def test_topo_order_is_stable_by_id() -> None:
    g = new_graph()
    x = inp(g, (2,))
    y = inp(g, (2,), index=1)
    a = op(g, "exp", y)
    b = op(g, "neg", x)
    assert topo_order(g) == [x, y, a, b]


@settings(max_examples=200, deadline=None)
@given(st.integers(1, 40), st.integers(0, 2**32 - 1), st.integers(1, 9))
def test_topo_order_is_networkx_lexicographic_order(n: int, seed: int, modulus: int) -> None:
    """The same order as networkx's lexicographical_topological_sort, by id and by a key
    with ties (broken by the graph's node order), on random DAGs; a cycle raises."""
    rng = np.random.default_rng(seed)
    ids = [int(v) for v in rng.permutation(1000)[:n]]
    g = nx.DiGraph()
    g.add_nodes_from(ids)
    g.add_edges_from((ids[i], ids[j]) for i in range(n) for j in range(i + 1, n)
                     if rng.random() < 0.15)
    assert topo_order(g) == list(nx.lexicographical_topological_sort(g))

    def key(v: int) -> int:
        return v % modulus

    assert topo_order(g, key) == list(nx.lexicographical_topological_sort(g, key=key))
    if n > 1:
        g.add_edge(ids[-1], ids[0])
        if not nx.is_directed_acyclic_graph(g):
            with pytest.raises(nx.NetworkXUnfeasible):
                topo_order(g)


# --- check() --------------------------------------------------------------------------------


def test_check_rejects_cycle() -> None:
    g = new_graph()
    x = inp(g, (2,))
    a = op(g, "exp", x)
    b = op(g, "neg", a)
    g.nodes[a]["args"] = [("node", b)]
    g.remove_edge(x, a)
    g.add_edge(b, a, pos=[0])
    with pytest.raises(GraphError, match="cycle"):
        check(g)


def test_check_rejects_dangling_arg() -> None:
    g = new_graph()
    x = inp(g, (2,))
    a = op(g, "exp", x)
    g.nodes[a]["args"] = [("node", 99)]
    with pytest.raises(GraphError, match=r"node 1 \('exp'\): arg 0 refers to missing node 99"):
        check(g)


def test_check_rejects_edge_mismatch() -> None:
    g = new_graph()
    x = inp(g, (2,))
    a = op(g, "mul", x, x)
    g.edges[x, a]["pos"] = [0]
    with pytest.raises(GraphError, match=r"node 1 \('mul'\): incoming edges"):
        check(g)


def test_check_rejects_unknown_op() -> None:
    g = new_graph()
    x = inp(g, (2,))
    add_value(g, "frobnicate", [("node", x)], {}, (2,), F32, "cpu")
    with pytest.raises(GraphError, match=r"node 1 \('frobnicate'\): unknown op"):
        check(g)


def test_check_rejects_wrong_shape_and_dtype() -> None:
    g = new_graph()
    x = inp(g, (2, 3))
    add_value(g, "exp", [("node", x)], {}, (3, 2), F32, "cpu")
    with pytest.raises(GraphError, match=r"node 1 \('exp'\): shape/dtype .*\(2, 3\)"):
        check(g)
    g2 = new_graph()
    x = inp(g2, (2, 3))
    add_value(g2, "exp", [("node", x)], {}, (2, 3), F64, "cpu")
    with pytest.raises(GraphError, match="differ from what infer gives"):
        check(g2)


def test_check_rejects_infer_failure_and_missing_output() -> None:
    g = new_graph()
    x = inp(g, (2, 3))
    y = inp(g, (4,), index=1)
    add_value(g, "add", [("node", x), ("node", y)], {}, (2, 3), F32, "cpu")
    with pytest.raises(GraphError, match=r"node 2 \('add'\): infer rejects"):
        check(g)
    g2 = new_graph()
    inp(g2, (2,))
    g2.graph["outputs"] = [5]
    with pytest.raises(GraphError, match=r"missing nodes \[5\]"):
        check(g2)


# --- prune ----------------------------------------------------------------------------------


def test_prune_keeps_exactly_what_outputs_and_writes_need() -> None:
    g = new_graph()
    x = inp(g, (3,))
    unused_input = inp(g, (3,), index=1)
    a = op(g, "exp", x)
    op(g, "sin", a)  # dead
    b = op(g, "neg", a)
    w = op(g, "cos", x)
    op(g, "add", w, unused_input)  # dead
    r = add_value(g, "rand", [], {"kind": "rand", "generator": 0}, (3,), F32, "cpu")
    g.graph.update(outputs=[b], writes=[(0, w), (1, -1)])
    assert prune(g) == 3
    assert set(g.nodes) == {x, a, b, w, r}  # a random draw stays: it advances its generator
    check(g)


# --- constant folding -----------------------------------------------------------------------


def test_fold_constants_matches_numpy() -> None:
    g = new_graph()
    x = inp(g, (2, 3))
    c1 = const(g, [[1.0, 2.0, 3.0]])
    c2 = const(g, np.arange(6.0).reshape(2, 3))
    e = op(g, "exp", c1)
    s = op(g, "add", e, c2)
    t = op(g, "sum", s, axes=(1,), keepdim=True)
    d = op(g, "mul", x, t)
    g.graph["outputs"] = [d, t]
    assert fold_constants(g) == 3
    for v in (e, s, t):
        assert g.nodes[v]["op"] == "const" and g.nodes[v]["args"] == []
        assert g.in_degree(v) == 0
    expected = np.sum(np.exp(np.float32([[1, 2, 3]])) + np.arange(6, dtype=np.float32)
                      .reshape(2, 3), axis=1, keepdims=True)
    np.testing.assert_array_equal(g.nodes[t]["value"], expected)
    assert g.nodes[t]["value"].dtype == np.float32
    assert g.nodes[d]["op"] == "mul"
    check(g)
    assert prune(g) == 4


def test_fold_constants_promotes_like_eager() -> None:
    g = new_graph()
    i = const(g, [1, 2, 3], rt.int64)
    f = const(g, [0.5, 0.5, 0.5], F32)
    s = op(g, "add", i, f)
    q = op(g, "div", i, S(2))
    g.graph["outputs"] = [s, q]
    assert fold_constants(g) == 2
    assert g.nodes[s]["value"].dtype == np.float32
    np.testing.assert_array_equal(g.nodes[s]["value"], np.float32([1.5, 2.5, 3.5]))
    np.testing.assert_array_equal(g.nodes[q]["value"], np.float32([0.5, 1.0, 1.5]))
    check(g)


def test_a_sum_over_merged_leading_axes_sums_the_source_over_them() -> None:
    """sum(reshape(x (4, 3, 5) -> (12, 5)), axis 0) becomes sum(x, axes (0, 1)): numpy's
    values; a reshape that merges other axes, a keepdim sum or one over another axis stays."""
    g = new_graph()
    x = inp(g, (4, 3, 5))
    rows = op(g, "reshape", x, shape=(12, 5))
    total = op(g, "sum", rows, axes=(0,), keepdim=False)
    kept = op(g, "sum", rows, axes=(0,), keepdim=True)
    other = op(g, "sum", op(g, "reshape", x, shape=(4, 15)), axes=(0,), keepdim=False)
    g.graph["outputs"] = [total, kept, other, rows]
    a = np.random.default_rng(0).standard_normal((4, 3, 5)).astype(np.float32)
    before = reference_eval(g, {x: a})
    assert sum_merged_axes(g) == 1
    assert g.nodes[total]["attrs"]["axes"] == (0, 1) and list(g.predecessors(total)) == [x]
    after = reference_eval(g, {x: a})
    for b, c in zip(before, after, strict=True):
        np.testing.assert_array_equal(b, c)
    check(g)


def test_fold_constants_bounds_bytes_not_elements() -> None:
    """A causal mask of 64 x 64 bool (4 KiB: passes.FOLD_MAX_BYTES) made of two aranges is
    folded, with numpy's values; a float32 broadcast of as many elements (16 KiB) is not."""
    g = new_graph()
    rows, cols = const(g, np.arange(64).reshape(64, 1)), const(g, np.arange(64).reshape(1, 64))
    mask = op(g, "le", cols, rows)
    wide = op(g, "add", const(g, np.zeros((64, 1))), const(g, np.ones((1, 64))))
    g.graph["outputs"] = [mask, wide]
    assert fold_constants(g) == 1
    assert g.nodes[mask]["op"] == "const" and g.nodes[wide]["op"] == "add"
    np.testing.assert_array_equal(g.nodes[mask]["value"], np.tril(np.ones((64, 64), bool)))
    check(g)


def test_fold_constants_skips_sources_and_large_broadcasts() -> None:
    g = new_graph()
    x = inp(g, (2,))
    r = add_value(g, "rand", [], {"kind": "randn", "generator": 0}, (2,), F32, "cpu")
    c = const(g, 2.0)
    a = op(g, "mul", x, c)
    b = op(g, "add", r, c)
    big = op(g, "expand", c, shape=(64, 64))
    g.graph["outputs"] = [a, b, big]
    assert fold_constants(g) == 0
    check(g)


# --- CSE ------------------------------------------------------------------------------------


def test_cse_merges_duplicate_subtrees_and_keeps_refs() -> None:
    g = new_graph()
    x = inp(g, (2, 3))
    e1 = op(g, "exp", x)
    e2 = op(g, "exp", x)
    s1 = op(g, "sum", e1, axes=(0,), keepdim=False)
    s2 = op(g, "sum", e2, axes=(0,), keepdim=False)
    s3 = op(g, "sum", e2, axes=(1,), keepdim=False)  # different attrs: stays
    out = op(g, "add", s1, s2)
    g.graph.update(outputs=[out, s2, s3], writes=[(0, e2)],
                   returns=(("node", out), [("node", s2)]))
    assert cse(g) == 2
    assert set(g.nodes) == {x, e1, s1, s3, out}
    assert g.nodes[out]["args"] == [("node", s1), ("node", s1)]
    assert g.nodes[s3]["args"] == [("node", e1)]
    assert g.graph["outputs"] == [out, s1, s3] and g.graph["writes"] == [(0, e1)]
    assert g.graph["returns"] == (("node", out), [("node", s1)])
    check(g)


def test_cse_canonical_attrs() -> None:
    g = new_graph()
    x = inp(g, (4, 5))
    key = (Ellipsis, slice(1, None), np.array([0, 2]))
    a = op(g, "getitem", x, key=key)
    b = op(g, "getitem", x, key=(Ellipsis, slice(1, None), np.array([0, 2])))
    c = op(g, "getitem", x, key=(Ellipsis, slice(1, None), np.array([0, 3])))
    d = op(g, "cast", x, dtype=F64)
    e = op(g, "cast", x, dtype=F64)
    m0 = op(g, "mul", x, S(0.0))
    m1 = op(g, "mul", x, S(-0.0))  # a different scalar: stays
    g.graph["outputs"] = [a, b, c, d, e, m0, m1]
    assert cse(g) == 2
    assert set(g.nodes) == {x, a, c, d, m0, m1}
    assert g.graph["outputs"] == [a, a, c, d, d, m0, m1]
    check(g)


def test_cse_merges_consts_never_inputs_or_rand() -> None:
    g = new_graph()
    c1 = const(g, [1.0, 2.0])
    c2 = const(g, [1.0, 2.0])
    c3 = const(g, [1.0, 2.0], F64)  # different dtype: stays
    x1 = inp(g, (2,))
    x2 = inp(g, (2,))
    r1 = add_value(g, "rand", [], {"kind": "rand", "generator": 0}, (2,), F32, "cpu")
    r2 = add_value(g, "rand", [], {"kind": "rand", "generator": 0}, (2,), F32, "cpu")
    g.graph["outputs"] = [c1, c2, c3, x1, x2, r1, r2]
    assert cse(g) == 1
    assert c2 not in g and g.graph["outputs"] == [c1, c1, c3, x1, x2, r1, r2]


# --- simplify -------------------------------------------------------------------------------


def _simplified(build: Any) -> tuple[nx.DiGraph, int, int]:
    """Build (g, x, y) with y = output; run simplify; return g, x and what the output became."""
    g = new_graph()
    x, y = build(g)
    g.graph["outputs"] = [y]
    simplify(g)
    check(g)
    return g, x, g.graph["outputs"][0]


@pytest.mark.parametrize("build", [
    lambda g, x: op(g, "mul", x, S(1)),
    lambda g, x: op(g, "mul", S(1.0), x),
    lambda g, x: op(g, "mul", x, const(g, np.ones(3))),
    lambda g, x: op(g, "div", x, S(1.0)),
    lambda g, x: op(g, "add", x, S(-0.0)),  # IEEE: x + (-0.0) is x, -0.0 included
    lambda g, x: op(g, "add", S(-0.0), x),
    lambda g, x: op(g, "add", const(g, np.full((2, 3), -0.0, np.float32)), x),
    lambda g, x: op(g, "sub", x, S(0.0)),  # x - (+0.0) is x + (-0.0)
    lambda g, x: op(g, "sub", x, S(0)),
    lambda g, x: op(g, "expand", x, shape=(2, 3)),
    lambda g, x: op(g, "reshape", x, shape=(2, 3)),
    lambda g, x: op(g, "cast", x, dtype=F32),
    lambda g, x: op(g, "permute", x, dims=(0, 1)),
    lambda g, x: op(g, "permute", x, dims=(-2, -1)),
    lambda g, x: op(g, "amax", x, axes=(), keepdim=True),
    lambda g, x: op(g, "neg", op(g, "neg", x)),
    lambda g, x: op(g, "mul", x, op(g, "expand", const(g, 1.0), shape=(2, 3))),
])
def test_simplify_identity_rules(build: Any) -> None:
    g, x, out = _simplified(lambda g: (x := inp(g, (2, 3)), build(g, x)))
    assert out == x
    prune(g)
    assert set(g.nodes) == {x}


@pytest.mark.parametrize("build", [
    lambda g, x: op(g, "mul", x, S(0.0)),  # x*0 is not x*0 -> 0 (nan, inf)
    lambda g, x: op(g, "mul", x, S(2.0)),
    lambda g, x: op(g, "sub", S(0.0), x),
    lambda g, x: op(g, "div", S(1.0), x),
    lambda g, x: op(g, "mul", x, op(g, "reshape", const(g, np.ones(6)), shape=(2, 1, 3))),
    lambda g, x: op(g, "mul", x, const(g, np.ones(3), F64)),  # promotes to float64
    lambda g, x: op(g, "add", op(g, "cast", x, dtype=rt.int64), S(0.0)),  # int -> float32
    lambda g, x: op(g, "expand", x, shape=(4, 2, 3)),
    lambda g, x: op(g, "reshape", x, shape=(3, 2)),
    lambda g, x: op(g, "cast", x, dtype=F64),
    lambda g, x: op(g, "permute", x, dims=(1, 0)),
    lambda g, x: op(g, "sum", x, axes=(0,), keepdim=True),
    lambda g, x: op(g, "sum", op(g, "cast", x, dtype=rt.bool_), axes=(), keepdim=True),
    lambda g, x: op(g, "neg", op(g, "exp", x)),
    # -0.0 + 0.0 is +0.0: adding a positive zero (or an integer 0) is not a no-op on floats
    lambda g, x: op(g, "add", x, S(0.0)),
    lambda g, x: op(g, "add", S(0), x),
    lambda g, x: op(g, "add", const(g, np.zeros((2, 3))), x),
    lambda g, x: op(g, "add", x, const(g, np.float32([-0.0, 0.0, -0.0]))),
    lambda g, x: op(g, "sub", x, S(-0.0)),  # x + 0.0
    lambda g, x: op(g, "sum", x, axes=(), keepdim=True),  # a float sum of -0.0 is +0.0
])
def test_simplify_leaves_non_identities(build: Any) -> None:
    g, x, out = _simplified(lambda g: (x := inp(g, (2, 3)), build(g, x)))
    assert out != x and g.nodes[out]["op"] != "input"


@pytest.mark.parametrize("build", [
    lambda g, x: op(g, "add", x, S(0)),  # integers have one zero
    lambda g, x: op(g, "add", const(g, np.zeros(3), rt.int64), x),
    lambda g, x: op(g, "sub", x, S(0)),
    lambda g, x: op(g, "mul", x, S(1)),
    lambda g, x: op(g, "sum", x, axes=(), keepdim=True),
])
def test_simplify_integer_identity_rules(build: Any) -> None:
    g, x, out = _simplified(lambda g: (x := inp(g, (2, 3), dtype=rt.int64), build(g, x)))
    assert out == x


def test_simplify_same_size_permute_is_not_identity() -> None:
    g, x, out = _simplified(lambda g: (x := inp(g, (3, 3)), op(g, "permute", x, dims=(1, 0))))
    assert out != x


def test_simplify_scalarizes_broadcast_float_constant() -> None:
    g = new_graph()
    x = inp(g, (2, 3))
    c = op(g, "expand", const(g, 2.5), shape=(2, 3))
    y = op(g, "sub", c, x)
    z = op(g, "div", x, const(g, [[4.0]]))
    g.graph["outputs"] = [y, z]
    assert simplify(g) == 2
    assert g.nodes[y]["args"] == [S(2.5), ("node", x)] and not g.has_edge(c, y)
    assert g.nodes[z]["args"] == [("node", x), S(4.0)]
    check(g)


def test_simplify_keeps_constant_when_dtype_or_shape_would_change() -> None:
    g = new_graph()
    x = inp(g, (2, 3))
    xi = inp(g, (2, 3), index=1, dtype=rt.int64)
    c64 = op(g, "expand", const(g, 2.0, F64), shape=(2, 3))
    a = op(g, "mul", x, c64)  # float64 result: the constant decides the dtype
    b = op(g, "mul", xi, op(g, "expand", const(g, 2.0), shape=(2, 3)))  # int tensor
    r = inp(g, (3,), index=2)
    d = op(g, "add", r, op(g, "expand", const(g, 1.0), shape=(2, 3)))  # constant sets shape
    g.graph["outputs"] = [a, b, d]
    assert simplify(g) == 0
    check(g)


def test_simplify_cancels_permute_pairs() -> None:
    g, x, out = _simplified(lambda g: (x := inp(g, (2, 3)), op(
        g, "permute", op(g, "permute", x, dims=(1, 0)), dims=(1, 0))))
    assert out == x
    prune(g)
    assert set(g.nodes) == {x}


def test_simplify_composes_permute_chain() -> None:
    g = new_graph()
    x = inp(g, (2, 3, 4))
    a = op(g, "permute", x, dims=(1, 2, 0))  # (3, 4, 2)
    b = op(g, "permute", a, dims=(2, -3, 1))  # (2, 3, 4): x again
    c = op(g, "permute", op(g, "permute", x, dims=(2, 0, 1)), dims=(0, 2, 1))
    g.graph["outputs"] = [b, c]
    inputs = {0: np.arange(24, dtype=np.float32).reshape(2, 3, 4)}
    before = reference_eval(g, inputs)
    simplify(g)
    check(g)
    assert g.graph["outputs"][0] == x
    c = g.graph["outputs"][1]
    assert g.nodes[c]["args"] == [("node", x)] and g.nodes[c]["attrs"]["dims"] == (2, 1, 0)
    prune(g)
    assert sorted(g.nodes[v]["op"] for v in g.nodes) == ["input", "permute"]
    for a_, b_ in zip(reference_eval(g, inputs), before, strict=True):
        np.testing.assert_array_equal(a_, b_)


def test_simplify_collapses_reshape_and_expand_chains() -> None:
    g = new_graph()
    x = inp(g, (2, 3))
    r = op(g, "reshape", op(g, "reshape", x, shape=(6,)), shape=(3, 2))
    back = op(g, "reshape", op(g, "reshape", x, shape=(3, 2)), shape=(2, 3))
    y = inp(g, (3,), index=1)
    e = op(g, "expand", op(g, "expand", y, shape=(2, 3)), shape=(4, 2, 3))
    g.graph["outputs"] = [r, back, e]
    simplify(g)
    check(g)
    r, back, e = g.graph["outputs"]
    assert back == x
    assert g.nodes[r]["args"] == [("node", x)] and g.nodes[r]["attrs"]["shape"] == (3, 2)
    assert g.nodes[e]["args"] == [("node", y)] and g.nodes[e]["attrs"]["shape"] == (4, 2, 3)
    prune(g)
    assert g.number_of_nodes() == 4  # x, y and one view of each


def test_simplify_keeps_an_inner_view_other_steps_read() -> None:
    g = new_graph()
    x = inp(g, (2, 3))
    t = op(g, "permute", x, dims=(1, 0))
    back = op(g, "permute", t, dims=(1, 0))
    s = op(g, "exp", t)
    g.graph["outputs"] = [back, s]
    simplify(g)
    check(g)
    assert g.graph["outputs"][0] == x and g.nodes[s]["args"] == [("node", t)]


def test_mlp_plan_has_no_view_of_a_view() -> None:
    w = WORKLOADS["mlp_small"]
    case = w.build(rt, w.make_arrays(0))
    plan = planner.compile(case.fn).lower(*case.args)
    kinds = {s.out: s.op for s in plan.steps}
    for s in plan.steps:
        if s.op in ("permute", "reshape", "expand"):
            assert kinds.get(s.args[0][1]) != s.op, plan.listing()


# --- the default pipeline and the evaluation oracle -----------------------------------------


def test_run_default_passes_counts() -> None:
    g = new_graph()
    x = inp(g, (2, 3))
    one = op(g, "expand", const(g, 1.0), shape=(2, 3))
    a = op(g, "mul", op(g, "exp", x), one)
    b = op(g, "mul", op(g, "exp", x), one)
    k = op(g, "add", const(g, 1.0), const(g, 2.0))
    out = op(g, "add", op(g, "add", a, b), k)
    g.graph["outputs"] = [out]
    before = reference_eval(g, {0: np.float32([[1, 2, 3], [4, 5, 6]])})
    counts = run_default_passes(g)
    assert all(counts[name] >= 1 for name in ("simplify", "fold_constants", "cse", "prune"))
    # exp(x)*1 twice -> one exp; 1+2 folds to a constant, which then becomes a scalar arg
    assert sorted(g.nodes[v]["op"] for v in g.nodes) == ["add", "add", "exp", "input"]
    assert S(3.0) in g.nodes[out]["args"]
    after = reference_eval(g, {0: np.float32([[1, 2, 3], [4, 5, 6]])})
    np.testing.assert_array_equal(after[0], before[0])


UNARY = ("neg", "exp", "tanh", "sin", "abs", "sqrt", "log")
BINARY = ("add", "sub", "mul", "div", "maximum")
SCALARS = (0.0, -0.0, 1.0, 2.0, -0.5)
SPECIALS = np.float32([-0.0, 0.0, np.inf, -np.inf, np.nan])


@st.composite
def random_graphs(draw: Any) -> nx.DiGraph:
    g = new_graph()
    nodes = [inp(g, (2, 3)), inp(g, (3,), index=1)]
    nodes.append(op(g, "expand", const(g, draw(st.sampled_from(SCALARS))), shape=(2, 3)))
    nodes.append(const(g, np.float32(draw(st.lists(st.sampled_from(SCALARS), min_size=3,
                                                   max_size=3)))))
    for _ in range(draw(st.integers(3, 12))):
        nodes.append(_random_node(draw, g, nodes))
    sinks = [v for v in nodes[2:] if g.out_degree(v) == 0]
    g.graph["outputs"] = [*sinks, draw(st.sampled_from(nodes[2:]))]
    return g


def _random_node(draw: Any, g: nx.DiGraph, nodes: list[int]) -> int:
    x = draw(st.sampled_from(nodes))
    shape = g.nodes[x]["shape"]
    kind = draw(st.sampled_from(("unary", "binary", "scalar", "scalar", "sum", "reshape", "same",
                                 "dup", "dup", "clamp", "permute", "expand")))
    if kind == "unary":
        return op(g, draw(st.sampled_from(UNARY)), x)
    if kind == "clamp":  # two clamps of x that differ only in their attrs (or not at all)
        bounds = st.sampled_from((None, *SCALARS))
        a, b = (op(g, "clamp", x, min=draw(bounds), max=draw(bounds)) for _ in range(2))
        return op(g, "add", a, b)
    if kind == "binary":
        fits = [y for y in nodes if _broadcasts(shape, g.nodes[y]["shape"])]
        y = draw(st.sampled_from(fits))
        a, b = draw(st.permutations((x, y)))
        return op(g, draw(st.sampled_from(BINARY)), a, b)
    if kind == "scalar":
        a, b = draw(st.permutations((x, S(draw(st.sampled_from(SCALARS))))))
        return op(g, draw(st.sampled_from(BINARY[:4])), a, b)
    if kind == "sum":
        axes = tuple(i for i in range(len(shape)) if draw(st.booleans()))
        return op(g, "sum", x, axes=axes, keepdim=draw(st.booleans()))
    if kind == "reshape":
        size = int(np.prod(shape))
        target = draw(st.sampled_from([s for s in ((size,), (1, size), shape, (size, 1))]))
        return op(g, "reshape", x, shape=target)
    if kind == "permute":  # one or two in a row: a pair may cancel, or compose
        for _ in range(draw(st.integers(1, 2))):
            dims = draw(st.permutations(range(len(shape))))
            x = op(g, "permute", x, dims=tuple(dims))
        return x
    if kind == "expand":
        target = draw(st.sampled_from([(2, *shape), (1, 2, *shape)]))
        return op(g, "expand", x, shape=target)
    if kind == "same":
        name, attrs = draw(st.sampled_from([("expand", {"shape": shape}),
                                            ("cast", {"dtype": F32}),
                                            ("permute", {"dims": tuple(range(len(shape)))})]))
        return op(g, name, x, **attrs)
    n = g.nodes[draw(st.sampled_from(nodes))]  # dup: a copy of an existing node
    if n["op"] in ("input", "const"):
        return const(g, np.float32(1.0))
    return add_value(g, n["op"], n["args"], n["attrs"], n["shape"], n["dtype"], "cpu")


def _broadcasts(a: tuple[int, ...], b: tuple[int, ...]) -> bool:
    try:
        np.broadcast_shapes(a, b)
    except ValueError:
        return False
    return True


@settings(max_examples=30, deadline=None)
@given(random_graphs(), st.integers(0, 2**32 - 1))
def test_default_passes_preserve_outputs(g: nx.DiGraph, seed: int) -> None:
    check(g)
    rng = np.random.default_rng(seed)
    inputs = {0: rng.standard_normal((2, 3), dtype=np.float32),
              1: rng.standard_normal(3, dtype=np.float32)}
    # IEEE's corner values, where a rewrite that is only algebraically right shows
    inputs[0].flat[rng.choice(6, 3, replace=False)] = rng.choice(SPECIALS, 3)
    inputs[1].flat[rng.integers(3)] = rng.choice(SPECIALS)
    with np.errstate(all="ignore"):
        before = reference_eval(g, inputs)
        run_default_passes(g)
        after = reference_eval(g, inputs)
    for b, a in zip(before, after):
        assert a.dtype == b.dtype and a.shape == b.shape
        np.testing.assert_array_equal(a, b)
        numbers = ~np.isnan(a)  # where NaNs are is checked above; their sign means nothing
        np.testing.assert_array_equal(np.signbit(a[numbers]), np.signbit(b[numbers]))


# --- compiled against eager and PyTorch, on IEEE's corner values -------------------------


def _ieee_exprs(x: Any) -> tuple[Any, ...]:
    """Expressions a rewrite could get wrong on -0.0, inf or NaN; written once, run on our
    tensors and on torch's. The reciprocal shows a zero's sign (1/-0.0 is -inf)."""
    return (1.0 / (x + 0.0), 1.0 / (0.0 + x), 1.0 / (x - 0.0), 1.0 / (x - (-0.0)),
            1.0 / (x + (-0.0)), 1.0 / (x * 1.0), 1.0 / (x / 1.0), 1.0 / -(-x),
            1.0 / x[:, :1].sum(1, keepdim=True), 1.0 / x.amax(1, keepdim=True),
            1.0 / x.mean(1))


@pytest.mark.parametrize("backend", ["interpreter", "auto"])
def test_compiled_matches_eager_and_torch_on_signed_zeros_inf_nan(backend: str) -> None:
    torch = pytest.importorskip("torch")
    special = np.float32([-0.0, 0.0, np.inf, -np.inf, np.nan, 1.5])
    values = np.stack([np.roll(special, i) for i in range(6)])  # every value in every column
    x = rt.tensor(values)
    with np.errstate(all="ignore"):
        eager = _ieee_exprs(x)
        compiled = planner.compile(_ieee_exprs, backend=backend)(x)
    expected = _ieee_exprs(torch.tensor(values))
    for i, (e, c, t) in enumerate(zip(eager, compiled, expected)):
        t = t.numpy()
        np.testing.assert_array_equal(e.numpy(), t, err_msg=f"eager, expression {i}")
        np.testing.assert_array_equal(c.numpy(), t, err_msg=f"compiled, expression {i}")


# --- slice gradients ------------------------------------------------------------------------


def _slice_grads(keys: list[Any], shape: tuple[int, ...]) -> tuple[nx.DiGraph, int]:
    """A graph summing the index_backward of one input per key (each of its slice's shape)
    into ``shape``, left to right."""
    g = new_graph()
    total = None
    for i, key in enumerate(keys):
        part = np.zeros(shape)[key].shape
        ib = op(g, "index_backward", inp(g, part, index=i), key=key, shape=shape)
        total = ib if total is None else op(g, "add", total, ib)
    g.graph["outputs"] = [total]
    return g, total


def test_merge_slice_grads_makes_one_cat_of_tiling_slices() -> None:
    from planner.passes import merge_slice_grads

    keys = [(Ellipsis, slice(2, 5)), (slice(None), slice(0, 2)), (slice(None), slice(5, None))]
    g, out = _slice_grads(keys, (3, 7))
    rng = np.random.default_rng(0)
    inputs = {i: rng.standard_normal(np.zeros((3, 7))[k].shape).astype(np.float32)
              for i, k in enumerate(keys)}
    before = reference_eval(g, inputs)
    assert merge_slice_grads(g) == 1
    prune(g)
    assert g.nodes[out]["op"] == "cat" and g.nodes[out]["attrs"] == {"axis": 1}
    assert [g.nodes[u]["index"] for u in arg_nodes(g, out)] == [1, 0, 2]  # by start
    assert sorted(g.nodes[v]["op"] for v in g.nodes) == ["cat", "input", "input", "input"]
    check(g)
    np.testing.assert_array_equal(reference_eval(g, inputs)[0], before[0])


@pytest.mark.parametrize("keys", [
    [(Ellipsis, slice(0, 2)), (Ellipsis, slice(3, 5))],  # a gap: zeros stay
    [(Ellipsis, slice(0, 3)), (Ellipsis, slice(2, 5))],  # overlapping: they add
    [(Ellipsis, slice(0, 5, 2)), (Ellipsis, slice(1, 5, 2))],  # strided
    [(slice(0, 1),), (Ellipsis, slice(1, 5))],  # different axes
    [(Ellipsis, slice(0, 2)), (0,)],  # an integer index
])
def test_merge_slice_grads_leaves_other_sums(keys: list[Any]) -> None:
    from planner.passes import merge_slice_grads

    g, out = _slice_grads(keys, (2, 5))
    assert merge_slice_grads(g) == 0
    assert g.nodes[out]["op"] == "add"


def test_compiled_split_by_slicing_gives_eager_gradients_through_a_cat() -> None:
    """q, k, v sliced from one projection (attention's qkv): the compiled step's gradient
    equals eager mode's and its plan assembles it with a cat, without index_backward."""
    rng = np.random.default_rng(1)
    w = rt.tensor(rng.standard_normal((4, 9)).astype(np.float32), requires_grad=True)

    def step(x: rt.Tensor) -> rt.Tensor:
        w.grad = None
        qkv = x @ w
        q, k, v = qkv[..., :3], qkv[..., 3:6], qkv[..., 6:]
        ((q * k).tanh() * v).sum().backward()
        return w.grad.clone()

    x = rt.tensor(rng.standard_normal((5, 4)).astype(np.float32))
    want = step(x).numpy()
    compiled = planner.compile(step, fullgraph=True)
    np.testing.assert_allclose(compiled(x).numpy(), want, rtol=1e-6, atol=1e-6)
    ops = [s.prim.name for s in compiled.plan.steps if getattr(s, "prim", None) is not None]
    assert "cat" in ops and "index_backward" not in ops


# --- views of sources first -------------------------------------------------------------------


def test_hoist_source_views_puts_sources_and_their_views_first() -> None:
    """Inputs, state and constants come first, then the views of inputs and state (a state
    read late and its reshape), then the steps in their order (ids renumbered, outputs the
    same); a view of a constant, and a random draw, keep their places."""
    from planner.passes import hoist_source_views

    g = new_graph()
    x = inp(g, (4, 8))
    e = op(g, "exp", x)
    r = add_value(g, "rand", [], {"kind": "rand"}, (4, 8), F32, "cpu", generator=0,
                  phase="forward")
    w = add_value(g, "state", [], {}, (8,), F32, "cpu", slot=0, phase="forward")
    wr = op(g, "reshape", w, shape=(1, 8))
    c = op(g, "expand", const(g, 2.0), shape=(4, 8))
    out = op(g, "add", op(g, "mul", op(g, "mul", e, wr), c), r)
    g.graph["outputs"] = [out]
    ops_before = [g.nodes[v]["op"] for v in sorted(g.nodes)]
    assert hoist_source_views(g) == 1
    check(g)
    ops = [g.nodes[v]["op"] for v in sorted(g.nodes)]
    assert ops[:4] == ["input", "state", "const", "reshape"]
    assert ops.index("exp") < ops.index("rand") < ops.index("expand")
    assert sorted(ops) == sorted(ops_before)
    assert all(u < v for u, v in g.edges)
    assert g.graph["outputs"] == [max(g.nodes)]
    assert hoist_source_views(g) == 0  # nothing left to move


def test_a_late_reshape_of_state_fuses_with_the_kernel_it_feeds() -> None:
    """``exp(x) * w.reshape(1, -1)``: w is read (and reshaped) after exp ran; the product
    still joins exp's kernel, and the result is eager mode's."""
    w = rt.tensor(np.linspace(0.5, 1.5, 64).astype(np.float32), requires_grad=True)

    def step(x: rt.Tensor) -> rt.Tensor:
        h = x.exp()
        return (h * w.reshape(1, -1)).tanh()

    x = rt.tensor(np.random.default_rng(0).standard_normal((256, 64)).astype(np.float32))
    with rt.no_grad():
        want = step(x).numpy()
        compiled = planner.compile(step, backend="llvm")
        got = compiled(x).numpy()
    np.testing.assert_allclose(got, want, rtol=1e-6)
    (kernel,) = [k.kernel for k in compiled.plan.kernels]
    ops = {getattr(e, "op", None) for e in kernel.exprs}
    assert {"exp", "mul", "tanh"} <= ops


def test_hoist_source_views_leaves_gathers_behind_the_checks_before_them() -> None:
    """A getitem with an index array (a gather, not a view) of state stays after the bounds
    check eager mode ran before it: an index out of range raises the check's error."""
    from planner.passes import hoist_source_views
    from runtime.ops.prims import IndexArg

    g = new_graph()
    idx = inp(g, (3,), dtype=rt.int64)
    chk = op(g, "check_bounds", idx, low=0, high=5, message="out of range", error="IndexError")
    w = add_value(g, "state", [], {}, (5, 2), F32, "cpu", slot=0, phase="forward")
    gathered = op(g, "getitem", w, idx, key=(IndexArg(0),))
    row = op(g, "getitem", w, key=(0,))
    out = op(g, "mul", gathered, row)
    g.graph["outputs"] = [out, chk]
    assert hoist_source_views(g) == 1  # the basic index (a view) only
    ops = [(g.nodes[v]["op"], g.nodes[v]["attrs"].get("key")) for v in sorted(g.nodes)]
    assert [o for o, _ in ops] == ["input", "state", "getitem", "check_bounds", "getitem", "mul"]
    assert ops[2][1] == (0,) and ops[4][1] == (IndexArg(0),)
