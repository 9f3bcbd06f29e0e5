"""Forward mode: ``jvp``, ``linearize`` and ``jacfwd``, computed with reverse mode by the
double-vjp trick. With ``u`` a dummy cotangent of the output, ``g(u) = J^T u`` is built once
with ``create_graph``; ``g`` is linear in ``u``, so the vjp of ``g`` with respect to ``u``
against a tangent ``t`` is ``J t``. One linearization serves any number of tangents
(``linearize``'s function, ``jacfwd``'s columns)."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from ..autograd.api import grad as autograd_grad
from ..autograd.grad_mode import no_grad
from ..creation import eye, zeros, zeros_like
from ..ops.functional import stack
from ..tensor import Tensor
from ._argnums import normalize_argnums, replace_args, slice_argnums
from ._level import GradLevel, check_tensor_outputs, level_grad_mode, transform_level
from ._pytree import tree_flatten, tree_unflatten
from ._randomness import check_randomness, randomness_frame

__all__ = ["jacfwd", "jvp", "linearize"]

_JVP = "jvp(f, primals, tangents)"


def _check_tensors(flat: list[Any], api: str, argname: str) -> None:
    if not flat:
        raise RuntimeError(f"{api}: Expected {argname} to contain at least one Tensor.")
    for t in flat:
        if not isinstance(t, Tensor):
            raise RuntimeError(f"{api}: Expected {argname} to only contain Tensors, got {type(t)}")


class _Writable:
    """The differentiated primals as ``func`` gets them: forward mode lets ``func`` write
    into its primals in place (PyTorch's dual tensors take in-place ops, and the write
    reaches the caller's tensor), which the level's leaves refuse. So ``func`` gets a clone
    of each leaf (differentiable back to it), and what it wrote into a clone is copied into
    the caller's tensor after the call."""

    def __init__(self, given: Any, fresh: Any) -> None:
        self._pairs: list[tuple[Tensor, Tensor, int]] = []

        def passed(orig: Tensor, leaf: Tensor) -> Tensor:
            if leaf.grad_fn is not None:  # an alias of an input the caller tracks
                return leaf
            clone = leaf.clone()
            self._pairs.append((orig, clone, clone._version))
            return clone

        flat_given, _ = tree_flatten(given)
        flat_fresh, spec = tree_flatten(fresh)
        self.passed = tree_unflatten([passed(o, f) for o, f in zip(flat_given, flat_fresh)],
                                     spec)

    def write_back(self) -> None:
        with no_grad():
            for orig, clone, version in self._pairs:
                if clone._version != version:
                    orig.copy_(clone)


class Linearization:
    """``func`` run once at ``primals`` (those at ``argnums`` differentiated, all when
    None), ready to push tangents through."""

    def __init__(self, func: Callable[..., Any], primals: tuple[Any, ...], argnums: Any,
                 has_aux: bool, api: str = _JVP, strict: bool = False) -> None:
        self.level = level = GradLevel()
        level.note_inputs(primals)
        with level_grad_mode(level, "jvp"):
            given = primals if argnums is None else slice_argnums(primals, argnums,
                                                                  as_tuple=False)
            fresh = level.differentiable_tree(given)
            writable = _Writable(given, fresh)
            if argnums is None:
                args = writable.passed
            else:
                args = replace_args(primals, writable.passed,
                                    normalize_argnums(argnums, len(primals)))
            out = func(*args)
            writable.write_back()
            self.aux = None
            if has_aux:
                if not (isinstance(out, tuple) and len(out) == 2):
                    raise RuntimeError(f"{api}: output of function f should be a tuple: "
                                       "(output, aux) if has_aux is True")
                out, aux = out
                self.aux = level.unwrap_aux(aux)
            self.flat_out, self.out_spec = tree_flatten(out)
            self._check_outputs(api, strict)
            self.flat_primals = tree_flatten(fresh)[0]
            self._cotangents = [level.own(zeros_like(o).requires_grad_(True))
                                if o.requires_grad else None for o in self.flat_out]
            outs = [(o, u) for o, u in zip(self.flat_out, self._cotangents) if u is not None]
            self._vjps = level.grad([o for o, _ in outs], self.flat_primals,
                                    [u for _, u in outs], retain_graph=True, create_graph=True)

    def _check_outputs(self, api: str, strict: bool) -> None:
        check_tensor_outputs(self.flat_out, api)
        for o in self.flat_out:
            if strict and not o.requires_grad:
                raise RuntimeError("jvp(f, primals, tangents, strict=True): The output of f is "
                                   "independent of the inputs. This is not allowed with "
                                   "strict=True.")

    def output(self) -> Any:
        return tree_unflatten([self.level.unwrap(o) for o in self.flat_out], self.out_spec)

    def push(self, flat_tangents: list[Tensor]) -> Any:
        """The Jacobian-vector product with ``flat_tangents`` (one per flat primal), shaped
        as the output."""
        level = self.level
        pairs = [(g, t.to(g.dtype)) for g, t in zip(self._vjps, flat_tangents)
                 if g.requires_grad]
        used = [u for u in self._cotangents if u is not None]
        res: tuple[Any, ...] = ()
        if pairs and used:
            with level_grad_mode(level, "jvp"):
                res = autograd_grad([g for g, _ in pairs], used, [t for _, t in pairs],
                                    retain_graph=True, create_graph=level.outer_tracking,
                                    allow_unused=True)
        by_cotangent = iter(res)
        tangents = []
        for o, u in zip(self.flat_out, self._cotangents):
            t = next(by_cotangent, None) if u is not None else None
            tangents.append(zeros_like(o) if t is None else level.unwrap(t))
        return tree_unflatten(tangents, self.out_spec)


def _check_floating(what: str, t: Tensor) -> None:
    """PyTorch's ``make_dual`` check of a primal or a tangent."""
    if not t.is_floating_point():
        raise ValueError(f"Expected {what} to be floating point or complex, but got: {t.dtype}")


def _check_tangent(i: int, t: Tensor, p: Tensor) -> None:
    _check_floating("primal", p)
    _check_floating("tangent", t)
    if t.shape != p.shape:
        raise RuntimeError("Trying to set a forward gradient that has a different size than that "
                           "of the original Tensor, this is not supported. Tensor is of size "
                           f"{list(p.shape)} while the given forward gradient is of size "
                           f"{list(t.shape)}.")


def jvp(func: Callable[..., Any], primals: Any, tangents: Any, *, strict: bool = False,
        has_aux: bool = False) -> tuple[Any, ...]:
    """``(func(*primals), J @ tangents)``, ``(output, jvp_out, aux)`` with ``has_aux``;
    ``primals`` and ``tangents`` are tuples of the same structure."""
    if not isinstance(primals, tuple):
        raise RuntimeError(f"{_JVP}: Expected primals to be a tuple. E.g. it should be valid to "
                           "call f(*primals).")
    flat_primals, primals_spec = tree_flatten(primals)
    flat_tangents, tangents_spec = tree_flatten(tangents)
    if primals_spec != tangents_spec:
        raise RuntimeError(f"{_JVP}: Expected primals and tangents to have the same python "
                           "structure. For example, if primals is a tuple of 3 tensors, tangents "
                           f"also must be. Got primals with structure {primals_spec} and "
                           f"tangents with structure {tangents_spec}")
    _check_tensors(flat_primals, _JVP, "primals")
    _check_tensors(flat_tangents, _JVP, "tangents")
    for i, (t, p) in enumerate(zip(flat_tangents, flat_primals)):
        _check_tangent(i, t, p)
    api = f"{_JVP[:-1]}, strict=True)" if strict else _JVP
    lin = Linearization(func, primals, None, has_aux, api, strict)
    out, tangent = lin.output(), lin.push(flat_tangents)
    return (out, tangent, lin.aux) if has_aux else (out, tangent)


def linearize(func: Callable[..., Any], *primals: Any) -> tuple[Any, Callable[..., Any]]:
    """``(func(*primals), jvp_fn)``: ``jvp_fn(*tangents)`` is ``jvp``'s second value at
    these primals, without running ``func`` again."""
    flat_primals, primals_spec = tree_flatten(primals)
    lin = Linearization(func, primals, None, False, "linearize")

    def jvp_fn(*tangents: Any) -> Any:
        flat_tangents, tangents_spec = tree_flatten(tangents)
        if tangents_spec != primals_spec:
            raise RuntimeError(f"Expected the tangents {tangents_spec} to have the same argspec "
                               f"as the primals {primals_spec}")
        for idx, (t, p) in enumerate(zip(flat_tangents, flat_primals)):
            for what, mine, theirs in (("shape", t.shape, p.shape), ("device", t.device, p.device),
                                       ("dtype", t.dtype, p.dtype)):
                if mine != theirs:
                    raise RuntimeError(f"tangent:{idx} with {what} {mine} in flattened pytree "
                                       f"doesn't match the {what} {theirs} of the corresponding "
                                       "primal.")
        return lin.push(flat_tangents)

    return lin.output(), jvp_fn


def _basis_columns(flat_primals: list[Tensor]) -> list[list[Tensor]]:
    """One tangent per element of the primals: zeros but a one at that element."""
    columns = []
    for i, p in enumerate(flat_primals):
        rows = eye(p.numel(), dtype=p.dtype, device=p.device)
        columns += [[rows[j].reshape(p.shape) if k == i else zeros_like(q)
                     for k, q in enumerate(flat_primals)] for j in range(p.numel())]
    return columns


def jacobian_blocks(vectors: list[list[Tensor]], flat_out: list[Tensor],
                    flat_primals: list[Tensor], argnums: Any, primals_spec: Any,
                    dim: int) -> list[Any]:
    """Per flat output, its Jacobian with respect to the differentiated arguments: blocks
    ``out.shape + primal.shape``, as a pytree like those arguments (the one block when
    ``argnums`` is an int). ``vectors[c][k]`` is the Jacobian-vector product of flat output
    ``k`` (``dim=-1``: a column, shaped as the output) or the vector-Jacobian product for
    primal ``k`` (``dim=0``: a row, shaped as the primal) for basis vector ``c``."""
    starts, total = [], 0
    for t in (flat_primals if dim == -1 else flat_out):
        starts.append(total)
        total += t.numel()
    per_output = []
    for k, out in enumerate(flat_out):
        blocks = []
        for i, p in enumerate(flat_primals):
            shape = tuple(out.shape) + tuple(p.shape)
            if out.numel() == 0 or p.numel() == 0:
                blocks.append(zeros(shape, dtype=p.dtype, device=p.device))
            elif dim == -1:
                cols = [vectors[c][k] for c in range(starts[i], starts[i] + p.numel())]
                blocks.append(stack(cols, dim=-1).reshape(shape))
            else:
                rows = [vectors[r][i] for r in range(starts[k], starts[k] + out.numel())]
                blocks.append(stack(rows, dim=0).reshape(shape))
        tree = tree_unflatten(blocks, primals_spec)
        per_output.append(tree[0] if isinstance(argnums, int) else tree)
    return per_output


def jacfwd(func: Callable[..., Any], argnums: int | tuple[int, ...] = 0, has_aux: bool = False,
           *, randomness: str = "error") -> Callable[..., Any]:
    """The Jacobian of ``func`` with respect to the arguments at ``argnums``, one
    Jacobian-vector product a column: for each output, a tensor ``out.shape + arg.shape``
    (a tuple over ``argnums`` when it is a tuple); ``(jacobian, aux)`` with ``has_aux``.
    ``randomness`` as vmap's: "different" runs ``func`` once a column."""
    @functools.wraps(func)
    def wrapper(*args: Any) -> Any:
        primals = slice_argnums(args, argnums)
        flat_primals, primals_spec = tree_flatten(primals)
        _check_tensors(flat_primals, "jacfwd", "primals")
        for p in flat_primals:
            _check_floating("primal", p)
        basis = _basis_columns(flat_primals)
        check_randomness(randomness)  # where PyTorch's vmap over the basis checks it
        # PyTorch's jacfwd is vmap(jvp): the function runs under vmap
        with randomness_frame(randomness) as frame, transform_level("vmap"):
            lin = Linearization(func, args, argnums, has_aux)
            columns = []
            for c, tangent in enumerate(basis):
                frame.element = c
                if randomness == "different" and c > 0:
                    lin = Linearization(func, args, argnums, has_aux)
                columns.append(tree_flatten(lin.push(tangent))[0])
        flat_out = [lin.level.unwrap(o) for o in lin.flat_out]
        jac = tree_unflatten(jacobian_blocks(columns, flat_out, flat_primals, argnums,
                                             primals_spec, dim=-1), lin.out_spec)
        return (jac, lin.aux) if has_aux else jac

    return wrapper
