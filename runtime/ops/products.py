"""Matrix products: mm, bmm and addmm (PyTorch's checks and texts over matmul) and einsum."""

from __future__ import annotations

import builtins
import math
import string
from collections.abc import Sequence
from typing import Any

from .._dtype import bool_, scalar_type_name, type_meta_name
from ..amp.policy import autocast_lower
from ..tensor import Tensor
from . import functional as F
from . import prims as P
from .dispatch import apply, named_backward


def _same_dtype(a: Tensor, b: Tensor) -> None:
    if a.dtype is not b.dtype:
        raise RuntimeError(f"expected m1 and m2 to have the same dtype, but got: "
                           f"{type_meta_name(a.dtype)} != {type_meta_name(b.dtype)}")


@autocast_lower
def mm(input: Tensor, mat2: Tensor, *, out: Tensor | None = None) -> Tensor:
    if input.ndim != 2:
        raise RuntimeError("self must be a matrix")
    if mat2.ndim != 2:
        raise RuntimeError("mat2 must be a matrix")
    if input.shape[1] != mat2.shape[0]:
        raise RuntimeError(f"mat1 and mat2 shapes cannot be multiplied ({input.shape[0]}x"
                           f"{input.shape[1]} and {mat2.shape[0]}x{mat2.shape[1]})")
    _same_dtype(input, mat2)
    return _into(F.matmul(input, mat2), out, "mm")


@autocast_lower
def addmm(input: Tensor, mat1: Tensor, mat2: Tensor, *, beta: Any = 1,  # noqa: A002
          alpha: Any = 1, out: Tensor | None = None) -> Tensor:
    """``beta * input + alpha * (mat1 @ mat2)``, PyTorch's checks and texts; with beta and
    alpha 1, one ``matmul_add`` step (the product, rounded, then input added)."""
    if out is not None:
        return F.written_same(out, addmm(input, mat1, mat2, beta=beta, alpha=alpha), "addmm",
                              "expected")
    for name, m in (("mat1", mat1), ("mat2", mat2)):
        if m.ndim != 2:
            raise RuntimeError(f"{name} must be a matrix, got {m.ndim}-D tensor")
    if input.dtype is not mat2.dtype:  # PyTorch's order: input's first
        raise RuntimeError(f"self and mat2 must have the same dtype, but got "
                           f"{scalar_type_name(input.dtype)} and {scalar_type_name(mat2.dtype)}")
    if mat1.dtype is not mat2.dtype:
        raise RuntimeError(f"mat1 and mat2 must have the same dtype, but got "
                           f"{scalar_type_name(mat1.dtype)} and {scalar_type_name(mat2.dtype)}")
    if mat1.shape[1] != mat2.shape[0]:
        raise RuntimeError(f"mat1 and mat2 shapes cannot be multiplied ({mat1.shape[0]}x"
                           f"{mat1.shape[1]} and {mat2.shape[0]}x{mat2.shape[1]})")
    target = (mat1.shape[0], mat2.shape[1])
    shape = tuple(input.shape)
    if len(shape) > 2 or any(s not in (1, t) for s, t in zip(shape[::-1], target[::-1])):
        for i, (s, t) in enumerate(zip(((1,) * (2 - len(shape)) + shape)[::-1], target[::-1])):
            if s not in (1, t):
                raise RuntimeError(
                    f"The expanded size of the tensor ({t}) must match the existing size "
                    f"({s}) at non-singleton dimension {1 - i}.  Target sizes: "
                    f"{list(target)}.  Tensor sizes: {list(shape)}")
        raise RuntimeError(f"addmm: an input of shape {list(shape)} does not broadcast to "
                           f"{list(target)}")
    from .structured import _add_product, no_bool_kernel

    no_bool_kernel("addmm_impl_cpu_", mat1)
    if beta == 1 and alpha == 1:
        return apply(P.MATMUL_ADD, mat1, mat2, input)

    # beta 0: input ignored (its nan and inf do not propagate), as PyTorch
    return _add_product(input, F.matmul(mat1, mat2), beta, alpha, "AddmmBackward0")


@autocast_lower
@named_backward("BmmBackward0")
def bmm(input: Tensor, mat2: Tensor, *, out: Tensor | None = None) -> Tensor:
    if input.ndim != 3:
        raise RuntimeError("batch1 must be a 3D tensor")
    if mat2.ndim != 3:
        raise RuntimeError("batch2 must be a 3D tensor")
    if mat2.shape[:2] != (input.shape[0], input.shape[2]):
        raise RuntimeError(f"Expected size for first two dimensions of batch2 tensor to be: "
                           f"[{input.shape[0]}, {input.shape[2]}] but got: [{mat2.shape[0]}, "
                           f"{mat2.shape[1]}].")
    if input.dtype is not mat2.dtype:
        raise RuntimeError(f"expected scalar type {scalar_type_name(input.dtype)} but found "
                           f"{scalar_type_name(mat2.dtype)}")
    return _into(F.matmul(input, mat2), out, "bmm")


def _into(result: Tensor, out: Tensor | None, name: str) -> Tensor:
    """``result``, or written into ``out`` (PyTorch's ``out=``: of the result's very dtype,
    its structured kernels' check)."""
    return result if out is None else F.written_same(out, result, name, "expected")


def _sublist_equation(args: Sequence[Any]) -> tuple[str, tuple[Any, ...]]:
    """PyTorch's einsum(op1, sublist1, op2, sublist2, ..., [sublist_out]) as an equation:
    subscripts 0-25 are A-Z, 26-51 a-z, Ellipsis ``...``."""
    def letters(sub: Any) -> str:
        out = []
        for n in sub:
            if n is Ellipsis:
                out.append("...")
            elif isinstance(n, int) and 0 <= n < 26:
                out.append(chr(ord("A") + n))
            elif isinstance(n, int) and 26 <= n < 52:
                out.append(chr(ord("a") + n - 26))
            else:
                raise ValueError("einsum(): subscript in subscript list is not within the "
                                 "valid range [0, 52)")
        return "".join(out)

    operands = tuple(args[0:len(args) - len(args) % 2:2])
    equation = ",".join(letters(sub) for sub in args[1::2])
    if len(args) % 2:
        equation += "->" + letters(args[-1])
    return equation, operands


def _parse_einsum(equation: str, ndims: list[int]) -> tuple[list[str], str]:
    eq = equation.replace(" ", "")
    lhs, arrow, out = eq.partition("->")
    terms = lhs.split(",")
    if len(terms) != len(ndims):
        raise RuntimeError("einsum(): more operands were provided than specified in the "
                           "equation" if len(ndims) > len(terms) else
                           "einsum(): fewer operands were provided than specified in the "
                           "equation")
    free = sorted(set(string.ascii_letters) - set(eq))
    ell: str | None = None
    parsed = []
    for i, (term, nd) in enumerate(zip(terms, ndims)):
        _check_dots(term, i)
        if "..." in term:
            head, _, tail = term.partition("...")
            n_ell = nd - len(head) - len(tail)
            if ell is None:
                ell = "".join(free[:builtins.max(n_ell, 0)])
            term = head + ell[len(ell) - n_ell:] + tail if n_ell else head + tail
        for c in term:
            if c not in string.ascii_letters:
                raise RuntimeError(f"einsum(): invalid subscript given at index "
                                   f"{eq.index(c)} in the equation string, subscripts must be "
                                   f"in [a-zA-Z]")
        if len(term) != nd:
            raise RuntimeError(f"einsum(): the number of subscripts in the equation "
                               f"({len(term)}) does not match the number of dimensions ({nd}) "
                               f"for operand {len(parsed)}"
                               + ("" if ell is not None else " and no ellipsis was given"))
        parsed.append(term)
    if not arrow:
        counts = {c: "".join(parsed).count(c) for c in "".join(parsed)}
        out = (ell or "") + "".join(sorted(c for c, k in counts.items()
                                           if k == 1 and c not in (ell or "")))
    else:
        if "." in out.replace("...", "", 1):
            raise RuntimeError("einsum(): found '.' for output that is not part of any ellipsis "
                               "(...)")
        for i, c in enumerate(out):
            if c == ".":
                continue
            if c not in string.ascii_letters:
                raise RuntimeError(f"einsum(): invalid subscript given at index "
                                   f"{len(lhs) + 2 + i} in the equation string, subscripts "
                                   f"must be in [a-zA-Z]")
            if out.count(c) > 1:
                raise RuntimeError(f"einsum(): output subscript {c} appears more than once in "
                                   f"the output")
            if c not in lhs:
                raise RuntimeError(f"einsum(): output subscript {c} does not appear in the "
                                   f"equation for any input operand")
        out = out.replace("...", ell or "")
    return parsed, out, ell or ""


def _check_dots(term: str, i: int) -> None:
    """PyTorch's errors for a '.' outside the one ellipsis of an operand's subscripts."""
    head, ellipsis, tail = term.partition("...")
    if "." in head:
        raise RuntimeError(f"einsum(): found '.' for operand {i} that is not part of any "
                           f"ellipsis")
    if ellipsis and "." in tail:
        raise RuntimeError(f"einsum(): found '.' for operand {i} for which an ellipsis was "
                           f"already found")


def _diagonals(t: Tensor, term: str, i: int) -> tuple[Tensor, str]:
    """t with each subscript repeated in ``term`` reduced to its diagonal (``ii->i``): the
    repeated axes moved to the front and indexed by one shared arange."""
    from ..creation import arange

    while len(set(term)) != len(term):
        c = next(c for c in term if term.count(c) > 1)
        places = [j for j, d in enumerate(term) if d == c]
        sizes = {t.shape[j] for j in places}
        if len(sizes) != 1:
            raise RuntimeError(f"einsum(): subscript {c} is repeated for operand {i} but the "
                               f"sizes don't match, {max(sizes)} != {min(sizes)}")
        rest = [j for j in range(len(term)) if j not in places]
        t = F.permute(t, *places, *rest)
        ar = arange(t.shape[0], device=t.device)
        t = F.getitem_key(t, *[ar] * len(places),
                          key=tuple(P.IndexArg(k) for k in range(len(places))))
        term = c + "".join(term[j] for j in rest)
    return t, term


def _sum_private(t: Tensor, term: str, keep: str) -> tuple[Tensor, str]:
    """t summed over the subscripts of ``term`` not in ``keep``, and the subscripts left."""
    axes = tuple(i for i, c in enumerate(term) if c not in keep)
    if not axes:
        return t, term
    return F.sum(t, axes), "".join(c for c in term if c in keep)


def _einsum_matmul(a: Tensor, b: Tensor, ta: str, tb: str, out: str) -> Tensor:
    """Two operands as one batched matmul: (batch, left, contracted) @ (batch, contracted,
    right), then the output's order; no intermediate holds every subscript at once. PyTorch's
    bmm error for operands of two dtypes."""
    if a.dtype is not b.dtype:
        raise RuntimeError(f"expected scalar type {scalar_type_name(a.dtype)} but found "
                           f"{scalar_type_name(b.dtype)}")
    if a.dtype is bool_:  # PyTorch's einsum contracts through bmm, whatever the ranks
        raise NotImplementedError("\"bmm\" not implemented for 'Bool'")
    a, ta = _sum_private(a, ta, tb + out)
    b, tb = _sum_private(b, tb, ta + out)
    batch = [c for c in out if c in ta and c in tb]
    left = [c for c in out if c in ta and c not in tb]
    right = [c for c in out if c in tb and c not in ta]
    contracted = [c for c in ta if c in tb and c not in out]
    size = dict(zip(ta, a.shape)) | dict(zip(tb, b.shape))
    lead = tuple(size[c] for c in batch)
    am = F.reshape(F.permute(a, *[ta.index(c) for c in batch + left + contracted]),
                   lead + (math.prod(size[c] for c in left),
                           math.prod(size[c] for c in contracted)))
    bm = F.reshape(F.permute(b, *[tb.index(c) for c in batch + contracted + right]),
                   lead + (math.prod(size[c] for c in contracted),
                           math.prod(size[c] for c in right)))
    order = batch + left + right
    r = F.reshape(F.matmul(am, bm), tuple(size[c] for c in order))
    return F.permute(r, *[order.index(c) for c in out]) if order != list(out) else r


def einsum(equation: str, *operands: Any) -> Tensor:
    """Einstein summation. Two operands whose shared subscripts agree in size map onto one
    batched matmul; otherwise each operand is laid out over every subscript (permute, then
    reshape to insert size-1 axes), the operands multiplied with broadcasting, and the
    subscripts not in the output summed (a product and a reduction that fuse)."""
    if not isinstance(equation, str):  # the sublist format: op, [subscripts], op, ..., [out]
        equation, operands = _sublist_equation((equation, *operands))
    if len(operands) == 1 and isinstance(operands[0], (list, tuple)):
        operands = tuple(operands[0])
    if not operands:
        raise ValueError("einsum(): must specify the equation string and at least one operand, "
                         "or at least one operand and its subscripts list")
    terms, out, ell = _parse_einsum(equation, [t.ndim for t in operands])
    letters = list(dict.fromkeys(out + "".join(terms)))
    sizes: dict[str, int] = {}
    aligned = []
    diagonal = [_diagonals(t, term, i) for i, (t, term) in enumerate(zip(operands, terms))]
    operands, terms = tuple(t for t, _ in diagonal), [term for _, term in diagonal]
    for i, (t, term) in enumerate(zip(operands, terms)):
        for j, (c, n) in enumerate(zip(term, t.shape)):
            if n != 1 and sizes.get(c, 1) not in (1, n):
                if c in ell:  # PyTorch's text, its missing space kept
                    raise RuntimeError(f"einsum(): dimension {j} covered by ellipsis in operand "
                                       f"{i}has size {n} which does not broadcast with "
                                       f"previously seen ellipsis with size {sizes[c]} for the "
                                       f"respective dimension")
                raise RuntimeError(f"einsum(): subscript {c} has size {n} for operand {i} "
                                   f"which does not broadcast with previously seen size "
                                   f"{sizes[c]}")
            if n != 1 or c not in sizes:
                sizes[c] = n
        present = [c for c in letters if c in term]
        t = F.permute(t, *[term.index(c) for c in present]) if present else t
        aligned.append(F.reshape(t, tuple(t.shape[present.index(c)] if c in term else 1
                                          for c in letters)))
    shared = set(terms[0]) & set(terms[1]) if len(operands) == 2 else set()
    # a product with nothing contracted is PyTorch's mul (bools and two dtypes taken), not bmm
    if shared - set(out) and builtins.all(
            operands[0].shape[terms[0].index(c)] == operands[1].shape[terms[1].index(c)]
            for c in shared):
        return _einsum_matmul(*operands, *terms, out)
    prod = aligned[0]
    for t in aligned[1:]:
        prod = F.mul(prod, t)
    summed = tuple(i for i, c in enumerate(letters) if c not in out)
    if summed:
        prod = F.sum(prod, summed)
    prod = F.expand(prod, tuple(sizes[c] for c in letters if c in out))
    return prod
