"""The LLVM renderer (CPU): rule tables from kernel-IR ops to llvmlite IR, the driver that
renders a module of kernels (``render``; each kernel written by ``codegen.llvm_emit``) and
``kernel_source`` (one kernel's own functions); ``codegen.renderer.LLVMRenderer`` joins them
with the compile cache (``codegen.cache``, ``codegen.jit``).

A kernel is rendered in its CPU launch form (``codegen.launch.cpu_launch_form``): a flat run of
elements cut into rows, so that the launcher (``codegen.jit``) can split its outer range across
threads. How a kernel becomes loops, and the ABI of its entries, is described in
``codegen.llvm_emit``.
"""

from __future__ import annotations

import dataclasses
import functools
import math
from collections.abc import Callable, Sequence

from llvmlite import ir
from llvmlite.ir.values import FunctionAttributes

from codegen import ir as kir
from codegen.launch import cpu_launch_form
from codegen.llvm_emit import (
    I64,
    INTERLEAVE,
    Builder,
    KernelEmitter,
    RenderError,
    Rules,
    V,
    intrinsic,
    round_bf16,
)
from codegen.llvm_math import MATH_OPS, declare_math, power, vector_widths



def _fsign(b: Builder, x: V) -> V:
    # PyTorch's (0 < x) - (x < 0): NaN and -0. give +0.
    one, zero = ir.Constant(x.type, 1.0), ir.Constant(x.type, 0.0)
    neg = b.select(b.fcmp_ordered("<", x, zero), ir.Constant(x.type, -1.0), zero)
    return b.select(b.fcmp_ordered(">", x, zero), one, neg)


def _isign(b: Builder, x: V) -> V:
    neg = b.select(b.icmp_signed("<", x, I64(0)), I64(-1), I64(0))
    return b.select(b.icmp_signed(">", x, I64(0)), I64(1), neg)


# (op, kind) -> rule(builder, operand values, module); transcendentals come from llvm_math
UNARY_RULES: dict[tuple[str, str], Callable[[Builder, V, ir.Module], V]] = {
    ("neg", "float"): lambda b, x, m: b.fneg(x),
    ("neg", "int"): lambda b, x, m: b.neg(x),
    ("abs", "float"): lambda b, x, m: b.call(intrinsic(m, "llvm.fabs", x.type, 1), [x]),
    ("abs", "int"): lambda b, x, m: b.select(b.icmp_signed("<", x, I64(0)), b.neg(x), x),
    ("sign", "float"): lambda b, x, m: _fsign(b, x),
    ("sign", "int"): lambda b, x, m: _isign(b, x),
    ("round_bfloat16", "float"): lambda b, x, m: round_bf16(b, x),
}
_CMP = {"eq": "==", "ne": "!=", "lt": "<", "le": "<=", "gt": ">", "ge": ">="}


def _fcmp(op: str) -> Callable[[Builder, V, V, ir.Module], V]:
    # numpy: nan != x is True, every other comparison with nan is False
    if op == "ne":
        return lambda b, x, y, m: b.fcmp_unordered("!=", x, y)
    return lambda b, x, y, m: b.fcmp_ordered(_CMP[op], x, y)


def _fintrinsic(name: str) -> Callable[[Builder, V, V, ir.Module], V]:
    return lambda b, x, y, m: b.call(intrinsic(m, name, x.type, 2), [x, y])


def _fpick(op: str) -> Callable[[Builder, V, V, ir.Module], V]:
    """numpy's maximum/minimum of floats (eager mode's, and the CUDA renderer's bp_maximum):
    a nan propagates, and on a tie the second operand wins, so max(-0., 0.) is 0. and
    max(0., -0.) is -0. (llvm.maximum orders -0. below 0. and gave 0. for both; PyTorch's
    vectorized CPU kernel, _mm256_max_ps, also returns the second operand)."""
    def rule(b: Builder, x: V, y: V, m: ir.Module) -> V:
        wins = b.or_(b.fcmp_ordered(op, x, y), b.fcmp_unordered("uno", x, x))
        return b.select(wins, x, y)
    return rule


def _divmod(b: Builder, x: V, y: V, m: ir.Module) -> tuple[V, V]:
    """(floor division, remainder) of floats as numpy's npy_divmod computes them: fmod, then
    Python's sign rule (the remainder takes the divisor's sign), the quotient (x - mod) / y
    snapped to the nearest integer; a zero quotient signed, a zero remainder fmod's (x's
    sign, as PyTorch's remainder); a zero divisor gives x / y and fmod's nan."""
    zero, one = ir.Constant(x.type, 0.0), ir.Constant(x.type, 1.0)
    floor = intrinsic(m, "llvm.floor", x.type, 1)
    copysign = intrinsic(m, "llvm.copysign", x.type, 2)
    mod = b.frem(x, y)  # C's fmod
    div = b.fdiv(b.fsub(x, mod), y)
    flip = b.and_(b.fcmp_unordered("!=", mod, zero),  # mod != 0 (nan included)
                  b.xor(b.fcmp_ordered("<", y, zero), b.fcmp_ordered("<", mod, zero)))
    mod = b.select(flip, b.fadd(mod, y), mod)  # a zero keeps fmod's sign (x's), as PyTorch's
    div = b.select(flip, b.fsub(div, one), div)
    floordiv = b.call(floor, [div])
    floordiv = b.select(b.fcmp_ordered(">", b.fsub(div, floordiv), ir.Constant(x.type, 0.5)),
                        b.fadd(floordiv, one), floordiv)
    quotient = b.fdiv(x, y)
    floordiv = b.select(b.fcmp_ordered("==", div, zero), b.call(copysign, [zero, quotient]),
                        floordiv)
    by_zero = b.fcmp_ordered("==", y, zero)
    return b.select(by_zero, quotient, floordiv), b.select(by_zero, b.frem(x, y), mod)


BINARY_RULES: dict[tuple[str, str], Callable[[Builder, V, V, ir.Module], V]] = {
    ("floor_divide", "float"): lambda b, x, y, m: _divmod(b, x, y, m)[0],
    ("remainder", "float"): lambda b, x, y, m: _divmod(b, x, y, m)[1],
    ("add", "float"): lambda b, x, y, m: b.fadd(x, y),
    ("sub", "float"): lambda b, x, y, m: b.fsub(x, y),
    ("mul", "float"): lambda b, x, y, m: b.fmul(x, y),
    ("div", "float"): lambda b, x, y, m: b.fdiv(x, y),
    ("pow", "float"): lambda b, x, y, m: power(m, b, x, y),
    ("maximum", "float"): _fpick(">"),
    ("minimum", "float"): _fpick("<"),
    **{(op, "float"): _fcmp(op) for op in _CMP},
    ("add", "int"): lambda b, x, y, m: b.add(x, y),
    ("sub", "int"): lambda b, x, y, m: b.sub(x, y),
    ("mul", "int"): lambda b, x, y, m: b.mul(x, y),
    ("maximum", "int"): lambda b, x, y, m: b.select(b.icmp_signed(">", x, y), x, y),
    ("minimum", "int"): lambda b, x, y, m: b.select(b.icmp_signed("<", x, y), x, y),
    **{(op, "int"): (lambda c: lambda b, x, y, m: b.icmp_signed(c, x, y))(c)
       for op, c in _CMP.items()},
    ("eq", "bool"): lambda b, x, y, m: b.icmp_unsigned("==", x, y),
    ("ne", "bool"): lambda b, x, y, m: b.icmp_unsigned("!=", x, y),
    ("logical_and", "bool"): lambda b, x, y, m: b.and_(x, y),
}

def _fptosi(b: Builder, x: V, t: ir.Type) -> V:
    """A float to int64 as numpy's (eager mode's) x86 conversion gives it: truncated, and
    nan, inf and anything out of int64's range INT64_MIN (cvttsd2si's "indefinite"). LLVM's
    fptosi of those is poison, which it may fold away: a cast back to float became trunc(x),
    so (-inf < x.to(int64)) compared -inf with -inf and was False (eager: -9.2e18, True)."""
    limit = ir.Constant(x.type, 2.0 ** 63)
    inside = b.and_(b.fcmp_ordered("<", x, limit), b.fcmp_ordered(">=", x, b.fneg(limit)))
    return b.select(inside, b.fptosi(x, t), ir.Constant(t, -(2 ** 63)))


# (from kind, to kind) -> rule(builder, value, target type); same-dtype casts are the identity
CAST_RULES: dict[tuple[str, str], Callable[[Builder, V, ir.Type], V]] = {
    ("float", "float"): lambda b, x, t: (b.fpext(x, t) if t == ir.DoubleType()
                                         else b.fptrunc(x, t)),
    ("float", "int"): lambda b, x, t: _fptosi(b, x, t),
    ("float", "bool"): lambda b, x, t: b.fcmp_unordered("!=", x, ir.Constant(x.type, 0.0)),
    ("int", "float"): lambda b, x, t: b.sitofp(x, t),
    ("int", "bool"): lambda b, x, t: b.icmp_signed("!=", x, I64(0)),
    ("bool", "float"): lambda b, x, t: b.uitofp(x, t),
    ("bool", "int"): lambda b, x, t: b.zext(x, t),
}

# (op, kind) -> (identity, combine); float sum may reassociate so the loop vectorizer can
# keep vector partial sums: the order is fixed by the compiled code, so results stay
# deterministic for given code and outer split. Float sums are also compensated (see
# ``codegen.llvm_emit._two_sum``): the reassociated combine only ever sums one block.
REDUCE_RULES: dict[tuple[str, str], tuple[Callable[[ir.Type], V],
                                          Callable[[Builder, V, V, ir.Module], V]]] = {
    ("sum", "float"): (lambda t: ir.Constant(t, 0.0),
                       lambda b, acc, x, m: b.fadd(acc, x, flags=("reassoc",))),
    ("max", "float"): (lambda t: ir.Constant(t, -math.inf), _fintrinsic("llvm.maximum")),
    ("sum", "int"): (lambda t: I64(0), lambda b, acc, x, m: b.add(acc, x)),
    ("max", "int"): (lambda t: I64(-(2 ** 63)), BINARY_RULES[("maximum", "int")]),
}

RULES = Rules(UNARY_RULES, BINARY_RULES, CAST_RULES, REDUCE_RULES)


def distinct(kernels: Sequence[kir.Kernel]) -> dict[str, str]:
    """Each kernel's name -> the name of the first of ``kernels`` that is the same kernel but
    for its name (the one function a module holds for all of them: rnn's 48 kernels are 18,
    gpt's 59 are 46, each layer's or time step's the same code)."""
    first: dict[kir.Kernel, str] = {}
    return {k.name: first.setdefault(dataclasses.replace(k, name=""), k.name)
            for k in kernels}


def render(kernels: Sequence[kir.Kernel]) -> ir.Module:
    """One module holding every kernel of a plan in its CPU launch form
    (``codegen.launch.cpu_launch_form``, as ``codegen.jit.load`` launches it), each behind the
    ``NAME(ptrs, start, stop)`` ABI; a kernel the same as an earlier one but for its name is
    that one's function (``distinct``)."""
    module = ir.Module(name="backplan")
    inline, outlined = declare_math(module), declare_math(module, outlined=True)
    names = [k.name for k in kernels]
    if len(set(names)) != len(names):
        raise RenderError(f"duplicate kernel names in one module: {names}")
    same = distinct(kernels)
    for kernel in kernels:
        if same[kernel.name] != kernel.name:
            continue
        kir.validate(kernel)
        if math_calls(kernel) > INLINE_MATH_CALLS:
            KernelEmitter(module, cpu_launch_form(kernel), outlined, RULES,
                          interleave=OUTLINED_INTERLEAVE).emit()
        else:
            launch = cpu_launch_form(kernel)
            KernelEmitter(module, launch, inline, RULES, interleave=interleave(launch),
                          group_rows=group_rows(launch), lanes=_lanes(launch)).emit()
    width = preferred_vector_bits()
    for fn in module.functions:
        if not fn.is_declaration:
            _prefer_vector_width(fn, width)
    return module


@functools.cache
def preferred_vector_bits() -> int:
    """The vector width the kernels are compiled for: the host's widest. LLVM's x86 default
    prefers 256-bit vectors on AVX-512 hosts (older ones lowered their clock for 512-bit
    code); on this project's Xeon (Emerald Rapids) 512-bit ones ran an exact-GELU forward
    kernel over (512, 1024) float32 in 1.33 ms against 1.97, and sin-exp-tanh in 0.71 against
    1.16 (``tests/codegen/test_vector_width.py`` checks the zmm registers; the benchmarks
    show the effect on each workload)."""
    return 32 * max(vector_widths("float32"))


class _FunctionAttributes(FunctionAttributes):
    """A function's attributes plus LLVM's string attributes for vector width (llvmlite
    knows only keyword attributes)."""

    def add(self, name: str) -> None:
        if name.startswith(('"prefer-vector-width"=', '"min-legal-vector-width"=')):
            set.add(self, name)
        else:
            super().add(name)


def _prefer_vector_width(fn: ir.Function, bits: int) -> None:
    attributes = _FunctionAttributes()
    for name in fn.attributes:
        attributes.add(name)
    attributes.add(f'"prefer-vector-width"="{bits}"')
    attributes.add(f'"min-legal-vector-width"="{bits}"')
    fn.attributes = attributes


# A kernel with more transcendental calls than this calls them out of line (vector variants,
# codegen.llvm_math.declare_math): inlined, each is 40-60 instructions in every loop that uses
# it, and LLVM's time grows with the code. Each call then spills the vector registers live
# across it; more independent chains in flight make up for that. The chain workload's kernel
# (64 calls), first call and step: inlined, interleave 4: 3.1 s, 184 us; out of line,
# interleave 4: 0.66 s, 208 us; interleave 8: 0.76 s, 184 us.
INLINE_MATH_CALLS = 12
OUTLINED_INTERLEAVE = 8


def interleave(kernel: kir.Kernel) -> int:
    """How many vector chains the innermost loops of a kernel with inlined math run at once:
    INTERLEAVE where an iteration holds a long latency chain (a math function's polynomial, a
    reduction's running sum), 1 for elementwise arithmetic, whose iterations the core
    overlaps by itself. On gpt's kernels 1 and 4 ran the same (2.61 ms a step's kernels either
    way, each of its 45 within the timing's noise) while 4 made 35 % more object code and
    20 % more LLVM time (1.28 -> 1.03 s of CPU for its module)."""
    if math_calls(kernel) or any(isinstance(e, kir.Reduce) for e in kernel.exprs) \
            or any(out.accumulate is not None for out in kernel.outputs):
        return _fitting_rows(kernel, INTERLEAVE)
    return 1


# the rows of a group (``group_rows``), in vectors
GROUP_VECTORS = 2
# a kernel's rows run in groups where they are shorter than this many vectors
GROUP_BELOW_VECTORS = 4


def group_rows(kernel: kir.Kernel) -> int:
    """How many rows a group of a kernel's rows holds (``KernelEmitter._emit_grouped``, where
    the kernel allows groups; 1: none): GROUP_VECTORS vectors' lanes where a row is shorter
    than GROUP_BELOW_VECTORS vectors and the kernel evaluates a math function (cross-entropy's
    log_softmax over 10 classes: a row's exp and log of its sum were a chain of scalar steps
    the next row waited for), else 1. Best of 40 to 300 side by side, log_softmax over
    (32, 10): 1.74 -> 0.94 us (groups of 16: 0.92, of 64: 0.89); (2048, 17): 122 -> 74;
    (1024, 24): 60 -> 39; (1024, 40): 97 -> 70; (1024, 50): 100 -> 74. Longer rows gain
    less and then lose: 70 to 120 about 10 %, (256, 1000) 263 -> 329 us, gpt's softmax
    rows of 64 and cross-entropy rows of 103 the same within noise."""
    if not kernel.outer_shape or len(kernel.inner_shape) != 1:
        return 1
    lanes = _lanes(kernel)
    if kernel.inner_shape[-1] >= GROUP_BELOW_VECTORS * lanes or not math_calls(kernel):
        return 1
    return GROUP_VECTORS * lanes


def _lanes(kernel: kir.Kernel) -> int:
    """A vector's lanes of the kernel's widest float (float32's where it has none)."""
    floats = [size for d, size in (("float32", 4), ("float64", 8)) if any(
        getattr(e, "dtype", None) == d for e in kernel.exprs)]
    return preferred_vector_bits() // (8 * max(floats, default=4))


def _fitting_rows(kernel: kir.Kernel, most: int) -> int:
    """The interleave, at most ``most``, that leaves the fewest elements of a row (the
    innermost axis) to the scalar loop after the vector loop's steps of interleave * lanes
    elements (the larger on ties). A row of 103 (gpt's cross-entropy over its vocabulary)
    ran 39 elements, each an exp, in scalar code after one step of 4 x 16: with 2, 7
    (log_softmax's kernel over (1024, 103): 248 -> 176 us, best of 30 side by side)."""
    if not kernel.domain:
        return most
    lanes = _lanes(kernel)
    extent = kernel.domain[-1]
    counts = [n for n in (1, 2, 4, 8, 16) if n <= most]
    return min(reversed(counts), key=lambda n: extent % (n * lanes))


def math_calls(kernel: kir.Kernel) -> int:
    """The transcendental functions ``kernel`` evaluates (sqrt is an instruction)."""
    return sum(isinstance(e, kir.Unary) and e.op in MATH_OPS for e in kernel.exprs)


def kernel_source(kernel: kir.Kernel) -> str:
    """The kernel's body (the exact sin/cos one too, where it has one) and its entry,
    without the module's math functions and the array-object entry."""
    module = render([kernel])
    names = [f"{kernel.name}.body", f"{kernel.name}.exact", kernel.name]
    return "\n".join(str(module.get_global(n)) for n in names if n in module.globals)
