"""Graph-to-graph passes over a captured step: each mutates g in place, keeps the format's
invariants and returns how many nodes it changed or removed."""

from __future__ import annotations

import math

from collections.abc import Callable
from typing import Any

import networkx as nx
import numpy as np

from runtime import _dtype as D
from runtime.autograd.node import Meta
from runtime.ops import REGISTRY
from runtime.ops.registry import PROMOTE_FLOAT, PROMOTE_NONE, Primitive

from .bf16 import eager_impl
from .graph import (HELD_SOURCES, SOURCES, add_value, check, checking, map_nodes, metas,
                    remove_dead, renumber, replace_uses, roots, set_args, template_nodes,
                    topo_order)

# folding may materialise a broadcast: allow it only up to this many bytes (or the size of the
# largest constant it reads), so an expand of a scalar never becomes a huge constant. gpt's
# causal mask, le(arange column, arange row), is 4 KiB of bool: folded, the attention scale
# before it joins the masked softmax's kernel (it read a value computed after the mask)
FOLD_MAX_BYTES = 4 << 10  # 1024 float32, 4096 bool
MAX_ROUNDS = 5
UNMERGEABLE = frozenset({"input", "state", "rand"})


# --- prune --------------------------------------------------------------------------------


def prune(g: nx.DiGraph) -> int:
    """Remove the nodes no output, written state or returned value depends on."""
    return remove_dead(g)


# --- constant folding ---------------------------------------------------------------------


def fold_constants(g: nx.DiGraph) -> int:
    """Turn each primitive whose tensor args are all constants into a constant."""
    folded = 0
    for v in topo_order(g):
        n = g.nodes[v]
        if n["op"] in SOURCES or not _foldable(g, v):
            continue
        value = evaluate(g, v, {u: g.nodes[u]["value"] for u in g.predecessors(v)})
        set_args(g, v, [])
        n.update(op="const", attrs={}, value=value)
        folded += 1
    return folded


def _foldable(g: nx.DiGraph, v: int) -> bool:
    preds = [g.nodes[u] for u in g.predecessors(v)]
    if not preds or any(p["op"] != "const" for p in preds):
        return False
    size = int(np.prod(g.nodes[v]["shape"])) * g.nodes[v]["dtype"].np.itemsize
    return size <= max(FOLD_MAX_BYTES, *(p["value"].nbytes for p in preds))


def evaluate(g: nx.DiGraph, v: int, values: dict[int, Any]) -> np.ndarray:
    """Run primitive node v on numpy, its tensor args taken from `values` (promoted first,
    as the eager dispatcher does); the result has v's dtype."""
    n = g.nodes[v]
    prim = REGISTRY[n["op"]]
    arrays = [values[x] if kind == "node" else x for kind, x in n["args"]]
    arg_metas = metas(g, v)
    _promote(prim, arg_metas, arrays)
    impl = eager_impl(prim, [(m.shape, m.dtype) if isinstance(m, Meta) else m
                             for m in arg_metas])  # bfloat16 as eager computes it
    with np.errstate(all="ignore"):
        out = impl(np, *arrays, **n["attrs"])
    return np.array(out, dtype=n["dtype"].np)


def _promote(prim: Primitive, arg_metas: list[Any], arrays: list[Any]) -> None:
    if prim.promote == PROMOTE_NONE:
        return
    positions = prim.promote_args if prim.promote_args is not None else range(len(arrays))
    tensors = [i for i in positions if isinstance(arg_metas[i], Meta)]
    if not tensors:
        return
    scalars = [arg_metas[i] for i in positions if i not in tensors and arg_metas[i] is not None]
    rdt = D.result_dtype([arg_metas[i].dtype for i in tensors], scalars,
                         [len(arg_metas[i].shape) for i in tensors])
    if prim.promote == PROMOTE_FLOAT and not rdt.is_floating_point:
        rdt = D.default_float
    for i in tensors:
        arrays[i] = np.asarray(arrays[i]).astype(rdt.np, copy=False)


# --- common-subexpression elimination -----------------------------------------------------


def cse(g: nx.DiGraph) -> int:
    """Merge primitives with the same op, args and attrs, and equal constants (the lower id
    survives); input, state and random nodes never merge."""
    seen: dict[Any, int] = {}
    merged = 0
    escaping = _escaping(g)
    for v in topo_order(g):
        key = _cse_key(g, v)
        if key is None:
            continue
        keep = seen.setdefault(key, v)
        if keep == v:
            continue
        if keep in escaping and v in escaping:
            continue  # two results eager mode gives memory of their own: not one array
        keep, drop = min(keep, v), max(keep, v)
        seen[key] = keep
        replace_uses(g, drop, keep)
        g.remove_node(drop)
        merged += 1
    return merged


def _cse_key(g: nx.DiGraph, v: int) -> Any:
    n = g.nodes[v]
    op = n["op"]
    if op in UNMERGEABLE:
        return None
    meta = (n["shape"], n["dtype"].name, n["device"])
    if op == "const":
        return ("const", meta, _canon(n["value"]))
    return (op, meta, _canon(n["args"]), _canon(n["attrs"]))


def _canon(x: Any) -> Any:
    """A hashable key equal for equal attribute values (and only for them)."""
    plain = _PLAIN.get(type(x))  # the common exact types first: args are lists of tuples
    if plain is not None:
        return plain(x)
    if isinstance(x, np.ndarray):
        return ("array", x.dtype.str, x.shape, x.tobytes())
    if isinstance(x, np.generic):
        return ("npscalar", x.dtype.str, x.tobytes())
    if isinstance(x, float):
        return ("float", x.hex())  # tells -0.0 from 0.0, and nan equals nan
    if x is None or isinstance(x, (bool, int, str)):
        return (type(x).__name__, x)
    if x is Ellipsis:
        return ("ellipsis",)
    if isinstance(x, slice):
        return ("slice", _canon(x.start), _canon(x.stop), _canon(x.step))
    if isinstance(x, D.DType):
        return ("dtype", x.name)
    if isinstance(x, (tuple, list)):
        return (type(x).__name__, tuple(_canon(i) for i in x))
    if isinstance(x, dict):
        return ("dict", tuple(sorted((k, _canon(i)) for k, i in x.items())))
    return ("object", id(x))  # unknown: equal only to itself


# exact type -> its key, as the checks in _canon give it (subclasses take those checks)
_PLAIN: dict[type, Callable[[Any], Any]] = {
    tuple: lambda x: ("tuple", tuple(map(_canon, x))),
    list: lambda x: ("list", tuple(map(_canon, x))),
    str: lambda x: ("str", x),
    int: lambda x: ("int", x),
    bool: lambda x: ("bool", x),
    type(None): lambda x: ("NoneType", x),
    float: lambda x: ("float", x.hex()),
}


# --- algebraic simplification -------------------------------------------------------------


def simplify(g: nx.DiGraph) -> int:
    """Apply algebraic identities (x*1, x/1, x+(-0.0), x-(+0.0), no-op reshape/expand/cast/
    permute/integer sum, -(-x)), exact under IEEE arithmetic (signed zeros, inf, NaN),
    collapse chains of views (permute of permute, reshape of reshape, expand of expand) into
    one view of the chain's source, and turn broadcast float constants of add/sub/mul/div
    into scalar args. Autograd's transposes come in pairs (a weight's transpose in forward,
    its gradient's transpose back in backward), so each removed view is a step saved."""
    changed = 0
    escaping = _escaping(g)
    for v in topo_order(g):
        if v not in g or g.nodes[v]["op"] in SOURCES:
            continue
        if _scalarize(g, v):
            changed += 1
        if _collapse_view_chain(g, v):
            changed += 1
        target = _identity_of(g, v)
        if target is not None and v in escaping and not _is_view(g, v):
            # a value the step returns or stores is memory of its own in eager mode: the
            # node it equals may be a parameter before the update written over it in place
            # (``p * 1`` returned would come back as ``p``'s memory, updated), an argument
            # (which the caller's writes to the result would change) or another result
            continue
        if target is not None:
            replace_uses(g, v, target)
            g.remove_node(v)
            changed += 1
    return changed


def _is_view(g: nx.DiGraph, v: int) -> bool:
    n = g.nodes[v]
    prim = REGISTRY.get(n["op"])
    return prim is not None and prim.is_view(n["attrs"]) and bool(n["args"]) \
        and n["args"][0][0] == "node"


def _escaping(g: nx.DiGraph) -> set[int]:
    """The nodes whose memory leaves the plan: returned values, written state, and the
    bases of views of them."""
    gr = g.graph
    out = set(template_nodes(gr.get("returns")))
    out |= {u for _, u in gr.get("writes", ()) if u >= 0}
    for v in reversed(topo_order(g)):
        if v in out and _is_view(g, v):
            out.add(g.nodes[v]["args"][0][1])
    return out


def _compose_dims(inner: tuple[int, ...], outer: tuple[int, ...]) -> tuple[int, ...]:
    """The dims of one permute equal to permute(permute(x, inner), outer)."""
    n = len(inner)
    return tuple(inner[d % n] % n for d in outer)


def _collapse_view_chain(g: nx.DiGraph, v: int) -> bool:
    """Make a view of a view of x (the same kind: permute, reshape or expand) a view of x.

    The values are the same; the inner view is left to prune when nothing else reads it, and
    an outer view that now does nothing (permute back to the original order, reshape back to
    the original shape) is then removed by the identity rules."""
    n = g.nodes[v]
    op = n["op"]
    if op not in _CHAINS or not n["args"] or n["args"][0][0] != "node":
        return False
    u = n["args"][0][1]
    inner = g.nodes[u]
    if inner["op"] != op or not inner["args"] or inner["args"][0][0] != "node":
        return False
    if (inner["dtype"], inner["device"]) != (n["dtype"], n["device"]):
        return False
    attrs = dict(n["attrs"])
    if op == "expand" and tuple(attrs["shape"]) != tuple(n["shape"]):
        return False  # only a plain broadcast_to(x, shape) composes
    if op == "permute":
        if len(inner["attrs"]["dims"]) != len(attrs["dims"]):
            return False
        attrs["dims"] = _compose_dims(tuple(inner["attrs"]["dims"]), tuple(attrs["dims"]))
    n["attrs"] = attrs
    set_args(g, v, [inner["args"][0], *n["args"][1:]])
    return True


# reshape(reshape(x, a), b) == reshape(x, b) and expand(expand(x, a), b) == expand(x, b)
# (b's attrs stay); permute composes its dims
_CHAINS = frozenset({"permute", "reshape", "expand"})


def _identity_of(g: nx.DiGraph, v: int) -> int | None:
    """The node v's value always equals (same shape and dtype, and the same bits: signed
    zeros, infinities and NaNs included), if its op is a no-op here."""
    n = g.nodes[v]
    rule = _IDENTITIES.get(n["op"])
    x = rule(g, n) if rule else None
    if x is None:
        return None
    m = g.nodes[x]
    same = (m["shape"], m["dtype"], m["device"]) == (n["shape"], n["dtype"], n["device"])
    return x if same else None


Rule = Callable[[nx.DiGraph, dict[str, Any]], "int | None"]
Neutral = Callable[[np.ndarray, D.DType], bool]  # (constant's values, result dtype) -> bool


def _node_arg(a: tuple[str, Any]) -> int | None:
    return a[1] if a[0] == "node" else None


def _is_constant(g: nx.DiGraph, a: tuple[str, Any], neutral: Neutral, dtype: D.DType) -> bool:
    """Whether arg `a` is a scalar, or a constant (perhaps expanded), that `neutral` accepts."""
    kind, x = a
    if kind == "scalar":
        return type(x) in (bool, int, float) and neutral(np.asarray(x), dtype)
    value = _const_value(g, x)
    return value is not None and value.size > 0 and neutral(value, dtype)


def _const_value(g: nx.DiGraph, u: int) -> np.ndarray | None:
    """The value of const node u, looking through an expand of one."""
    n = g.nodes[u]
    if n["op"] == "expand" and n["args"][0][0] == "node":
        n = g.nodes[n["args"][0][1]]
    return n["value"] if n["op"] == "const" else None


def _equal_to(c: float) -> Neutral:
    """Values all equal to c: x * 1 and x / 1 are x exactly (-0.0, inf and NaN too)."""
    return lambda v, dtype: bool(np.all(v == c))


def _zero(negative: bool) -> Neutral:
    """Zeros that leave x unchanged under IEEE addition: x + (-0.0) and x - (+0.0) are x, but
    -0.0 + 0.0 is +0.0, so in a float result only a zero of the right sign is neutral (an
    integer 0 becomes +0.0). In an integer result any zero is."""
    def neutral(v: np.ndarray, dtype: D.DType) -> bool:
        if not np.all(v == 0):
            return False
        if not dtype.is_floating_point:
            return True
        sign = np.signbit(v) if v.dtype.kind == "f" else np.zeros(v.shape, bool)
        return bool(np.all(sign == negative))

    return neutral


def _drop_constant(neutral: Neutral, keep: int, at: tuple[int, ...]) -> Rule:
    """A rule: the arg at position `keep`, when `neutral` accepts every arg in `at`."""
    def rule(g: nx.DiGraph, n: dict[str, Any]) -> int | None:
        args = n["args"]
        if all(_is_constant(g, args[i], neutral, n["dtype"]) for i in at):
            return _node_arg(args[keep])
        return None

    return rule


def _first_of(*rules: Rule) -> Rule:
    def rule(g: nx.DiGraph, n: dict[str, Any]) -> int | None:
        for r in rules:
            x = r(g, n)
            if x is not None:
                return x
        return None

    return rule


def _arg0(g: nx.DiGraph, n: dict[str, Any]) -> int | None:
    return _node_arg(n["args"][0])  # a no-op exactly when the shape and dtype are unchanged


def _exact_sum(g: nx.DiGraph, n: dict[str, Any]) -> int | None:
    """A sum that keeps the shape (every reduced axis has size 1) is x for integers; a float
    sum adds to +0.0 (numpy and PyTorch alike), which turns -0.0 into +0.0: not x."""
    return None if n["dtype"].is_floating_point else _arg0(g, n)


def _identity_permute(g: nx.DiGraph, n: dict[str, Any]) -> int | None:
    dims = n["attrs"]["dims"]
    return _arg0(g, n) if [d % len(dims) for d in dims] == list(range(len(dims))) else None


def _double_neg(g: nx.DiGraph, n: dict[str, Any]) -> int | None:
    x = _arg0(g, n)
    if x is None or g.nodes[x]["op"] != "neg":
        return None
    return _node_arg(g.nodes[x]["args"][0])


_IDENTITIES: dict[str, Rule] = {
    "add": _first_of(_drop_constant(_zero(True), 0, (1,)), _drop_constant(_zero(True), 1, (0,))),
    "sub": _drop_constant(_zero(False), 0, (1,)),
    "mul": _first_of(_drop_constant(_equal_to(1), 0, (1,)),
                     _drop_constant(_equal_to(1), 1, (0,))),
    "div": _drop_constant(_equal_to(1), 0, (1,)),
    "expand": _arg0,
    "reshape": _arg0,
    "cast": _arg0,
    "sum": _exact_sum,
    "amax": _arg0,  # the max of one value is that value, bit for bit
    "permute": _identity_permute,
    "neg": _double_neg,
}

_SCALAR_OPS = frozenset({"add", "sub", "mul", "div"})


def _scalarize(g: nx.DiGraph, v: int) -> bool:
    """Replace a one-element float constant (perhaps expanded) feeding add/sub/mul/div by a
    Python float scalar when the other arg alone has the result's shape and dtype."""
    n = g.nodes[v]
    if n["op"] not in _SCALAR_OPS or not n["dtype"].is_floating_point:
        return False
    args = n["args"]
    for i, other in ((0, 1), (1, 0)):
        c, x = _node_arg(args[i]), _node_arg(args[other])
        if c is None or x is None:
            continue
        value = _const_value(g, c)
        m = g.nodes[x]
        if (value is not None and value.size == 1 and value.dtype == n["dtype"].np
                and (m["shape"], m["dtype"]) == (n["shape"], n["dtype"])):
            new_args = list(args)
            new_args[i] = ("scalar", float(value.reshape(()).item()))
            set_args(g, v, new_args)
            return True
    return False


# --- slice gradients -----------------------------------------------------------------------


def merge_slice_grads(g: nx.DiGraph) -> int:
    """Turn a sum of ``index_backward``s of slices that tile one axis (the gradient of a
    tensor split by slicing: ``qkv[..., :c]``, ``qkv[..., c:2c]``, ...) into one ``cat`` of
    the slices' gradients: no zeros of the whole shape per slice and no adds of them. Each
    element is its slice's gradient, bit for bit, except that a -0.0 stays -0.0 where the
    sum with the other slices' zeros makes it +0.0."""
    changed = 0
    keep = roots(g)
    for v in topo_order(g):
        if v not in g or g.nodes[v]["op"] != "add":
            continue
        leaves = _add_leaves(g, v, keep, [])
        if leaves is None or len(leaves) < 2:
            continue
        n = g.nodes[v]
        pieces = [_slice_piece(g, u, n) for u in leaves]
        if any(p is None for p in pieces):
            continue
        axes = {p[0] for p in pieces}  # type: ignore[index]
        bounds = sorted((p[1], p[2], p[3]) for p in pieces)  # type: ignore[index]
        if len(axes) != 1 or bounds[0][0] != 0 or bounds[-1][1] != n["shape"][axes.pop()] \
                or any(a[1] != b[0] for a, b in zip(bounds, bounds[1:])):
            continue
        axis = pieces[0][0]  # type: ignore[index]
        set_args(g, v, [("node", grad) for _, _, grad in bounds])
        n.update(op="cat", attrs={"axis": axis})
        changed += 1
    return changed


def sum_merged_axes(g: nx.DiGraph) -> int:
    """A sum over the first axis of a reshape that only merged leading axes (a linear layer's
    bias gradient: gpt's (16, 64, 128) gradient reshaped to (1024, 128) for the weight's
    product, then summed over its rows) sums the reshape's source over those axes instead:
    the same elements in the same order, and the sum can join the kernel that makes them
    as one of its accumulated outputs (numpy summed gpt's 8 such (1024, N) columns: 0.45 ms a
    step)."""
    changed = 0
    for v in topo_order(g):
        n = g.nodes[v]
        if n["op"] != "sum" or n["attrs"].get("keepdim") or tuple(n["attrs"]["axes"]) != (0,):
            continue
        (kind, u), = n["args"]
        if kind != "node" or g.nodes[u]["op"] != "reshape":
            continue
        (kind, w), = g.nodes[u]["args"]
        if kind != "node":
            continue
        source, merged = tuple(g.nodes[w]["shape"]), tuple(g.nodes[u]["shape"])
        lead = len(source) - len(merged) + 1  # the source axes the first one merges
        if lead < 2 or source[lead:] != merged[1:] or math.prod(source[:lead]) != merged[0]:
            continue
        set_args(g, v, [("node", w)])
        n["attrs"] = {**n["attrs"], "axes": tuple(range(lead))}
        changed += 1
    return changed


def _add_leaves(g: nx.DiGraph, v: int, keep: set[int], into: list[int]) -> list[int] | None:
    """The terms of the tree of adds of one shape and dtype rooted at v (its inner adds used
    by one add only, and not values the step produces), or None where an argument is a
    scalar."""
    n = g.nodes[v]
    for kind, u in n["args"]:
        if kind != "node":
            return None
        m = g.nodes[u]
        if m["op"] == "add" and g.out_degree(u) == 1 and len(g.edges[u, v]["pos"]) == 1 \
                and (m["shape"], m["dtype"]) == (n["shape"], n["dtype"]) \
                and u not in keep:
            if _add_leaves(g, u, keep, into) is None:
                return None
        else:
            into.append(u)
    return into


def _slice_piece(g: nx.DiGraph, u: int, n: dict[str, Any]) -> tuple[int, int, int, int] | None:
    """(axis, start, stop, gradient node) of an index_backward of n's shape, dtype and device
    whose key is one step-1 slice along one axis (every other axis whole)."""
    m = g.nodes[u]
    if m["op"] != "index_backward" or (m["shape"], m["dtype"], m["device"]) != (
            n["shape"], n["dtype"], n["device"]) or tuple(m["attrs"]["shape"]) != n["shape"]:
        return None
    args = m["args"]
    if len(args) != 1 or args[0][0] != "node":
        return None
    key = m["attrs"]["key"]
    items = list(key) if isinstance(key, tuple) else [key]
    if any(not isinstance(k, (slice, type(Ellipsis))) for k in items) \
            or items.count(Ellipsis) > 1:
        return None
    ndim = len(n["shape"])
    if Ellipsis in items:
        at = items.index(Ellipsis)
        items[at:at + 1] = [slice(None)] * (ndim - len(items) + 1)
    if len(items) > ndim:
        return None
    items += [slice(None)] * (ndim - len(items))
    cut = [(axis, k.indices(n["shape"][axis])) for axis, k in enumerate(items)
           if k != slice(None)]
    if len(cut) != 1:
        return None
    axis, (start, stop, step) = cut[0]
    grad = g.nodes[args[0][1]]
    shape = list(n["shape"])
    shape[axis] = stop - start
    if step != 1 or start >= stop or tuple(grad["shape"]) != tuple(shape) \
            or grad["dtype"] != n["dtype"]:
        return None
    return axis, start, stop, args[0][1]


# --- views of sources first -----------------------------------------------------------------


def hoist_source_views(g: nx.DiGraph) -> int:
    """Put the inputs, state and constants first, then the views made of inputs and state
    alone (a batch norm's weight reshaped to (1, C, 1, 1), a weight's transpose), then
    everything else in its order; return how many views moved ahead of a step. A view is
    made where eager mode made it, often after the kernel its readers would join began: a
    kernel runs where its first step was, so fusion keeps out a step reading a later value
    (cnn's
    ``x_hat * rstd * weight`` stayed two numpy calls beside the kernel around them: 3.4 %
    of its step). Random draws keep their places (their order is the generator's), and so
    do views of constants (a loss's seed expanded: fusion joins those to the kernel of
    their readers, which would then run at the start)."""
    early: set[int] = set()
    for v in topo_order(g):
        n = g.nodes[v]
        prim = REGISTRY.get(n["op"])
        preds = [x for k, x in n["args"] if k == "node"]
        view = prim is not None and prim.view and (prim.view_if is None
                                                    or prim.view_if(n["attrs"]))
        if n["op"] in HELD_SOURCES or (
                view and preds and all(u in early and g.nodes[u]["op"] != "const"
                                       for u in preds)):
            early.add(v)
    first_step = min((v for v in g.nodes if v not in early), default=None)
    moved = sum(1 for v in early if g.nodes[v]["op"] not in HELD_SOURCES
                and first_step is not None and v > first_step)
    if moved:
        renumber(g, lambda v: (-2 if g.nodes[v]["op"] in HELD_SOURCES else -1, v)
                 if v in early else (v, 0))
    return moved


# --- returned constants ---------------------------------------------------------------------


def copy_returned_constants(g: nx.DiGraph, leaves: bool = True) -> int:
    """Make each returned constant (or view of one) a copy made at every call: a plan's
    constant is one array for all its calls, which a caller's write to what a call returned
    would change for every later call (eager mode makes the tensor anew each time). A view
    of one reads a clone step's copy; a constant returned as it is becomes a ("copy",
    ("node", c)) leaf of the return template, copied where the result is made (without
    ``leaves``, a clone step's copy too: planner.aot splits the returns into plans' own).
    Run after the passes that fold a copy of a constant back into it."""
    copies: dict[int, int] = {}
    direct: set[int] = set()
    for r in set(template_nodes(g.graph.get("returns"))):
        chain = [r]
        while _is_view(g, chain[-1]):
            chain.append(g.nodes[chain[-1]]["args"][0][1])
        base = chain[-1]
        if g.nodes[base]["op"] != "const":
            continue
        if len(chain) == 1 and leaves:  # copied where the call's result is made
            direct.add(base)
            continue
        if base not in copies:
            n = g.nodes[base]
            copies[base] = add_value(g, "clone", [("node", base)], {}, n["shape"], n["dtype"],
                                     n["device"], phase=n.get("phase", "forward"),
                                     sequence_nr=None, topological_nr=None, grad_fn=None)
        copy = copies[base]
        if len(chain) > 1:  # the view reads the copy
            set_args(g, chain[-2], [("node", copy), *g.nodes[chain[-2]]["args"][1:]])
        else:
            g.graph["returns"] = map_nodes(g.graph["returns"],
                                           lambda u, b=base, c=copy: c if u == b else u)
            g.graph["outputs"] = [*g.graph.get("outputs", ()), copy]
    if direct:  # ndarray.copy() as the result is made: a step of its own cost one_op 0.5 us
        g.graph["returns"] = _copied_leaves(g.graph["returns"], direct)
    if copies:  # each copy before the views that read it (a plan runs its steps by id: the
        # view of a copy made after it read a buffer not yet made)
        renumber(g, lambda v: v)
    return len(copies) + len(direct)


def _copied_leaves(template: Any, constants: set[int]) -> Any:
    """``template`` with each ("node", c) leaf of a constant c made ("copy", ("node", c))."""
    if isinstance(template, tuple) and len(template) == 2 and template[0] == "node":
        return ("copy", template) if template[1] in constants else template
    if isinstance(template, tuple) and len(template) == 2 and template[0] in (
            "tuple", "list"):
        return (template[0], [_copied_leaves(t, constants) for t in template[1]])
    if isinstance(template, tuple) and len(template) == 2 and template[0] == "dict":
        return ("dict", [(k, _copied_leaves(t, constants)) for k, t in template[1]])
    return template


# --- the default pipeline -----------------------------------------------------------------

DEFAULT_PASSES: tuple[tuple[str, Callable[[nx.DiGraph], int]], ...] = (
    ("simplify", simplify),
    ("fold_constants", fold_constants),
    ("cse", cse),
    ("merge_slice_grads", merge_slice_grads),
    ("sum_merged_axes", sum_merged_axes),
    ("prune", prune),
)


def run_default_passes(g: nx.DiGraph, copy_leaves: bool = True) -> dict[str, int]:
    """Run the default passes to a fixed point (at most MAX_ROUNDS rounds), then check g
    where ``checking()`` (the test suite: a verifier, as LLVM's, off in production, where it
    re-inferred every node: 15 of gpt's 73 ms of passes). ``copy_leaves``: returned
    constants copied by the return template (``copy_returned_constants``)."""
    counts = {name: 0 for name, _ in DEFAULT_PASSES}
    for _ in range(MAX_ROUNDS):
        changed = 0
        for name, run in DEFAULT_PASSES:
            n = run(g)
            counts[name] += n
            changed += n
        if not changed:
            break
    counts["copy_returned_constants"] = copy_returned_constants(g, copy_leaves)
    if checking():
        check(g)
    return counts
