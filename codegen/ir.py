"""The kernel IR of one fused segment: frozen dataclasses shared by every renderer.

A kernel is a loop domain, inputs read through element strides (0 = broadcast), a topologically
ordered expression DAG and outputs. The last ``n_reduce`` domain axes are reduced by ``Reduce``
exprs; every expr has a *stage* (how many reductions it sits behind). See ``stage_of``.

The domain splits into outer axes (run in parallel: threads here, blocks on a GPU) and inner
axes (``Kernel.outer_shape`` / ``inner_shape``). An output with ``accumulate`` set is reduced
over the outer axes as well (a column sum, or a whole-tensor sum of row sums): its shape is
the inner shape (per-element values) or ``()`` (per-row values). A renderer gives each
parallel chunk its own partial and combines the partials in chunk order, so the result is
deterministic for a given split.
"""

from __future__ import annotations

import hashlib
import math
import struct
from dataclasses import dataclass
from typing import Any

import ml_dtypes  # noqa: F401  (registers "bfloat16" with numpy: np.dtype("bfloat16"))
import numpy as np

DTYPES: tuple[str, ...] = ("float32", "float64", "int64", "bool")
# storage-only dtypes: an input or output of such a dtype is held in memory in it, but a
# kernel computes in its compute dtype (a Load of a bfloat16 input is a float32 value, a
# bfloat16 output stores a float32 value rounded to nearest even, a NaN kept a NaN: what
# torch.compile's Inductor does; eager rounds after every op)
STORAGE_ONLY: dict[str, str] = {"bfloat16": "float32"}
STORAGE_DTYPES: tuple[str, ...] = DTYPES + tuple(STORAGE_ONLY)
FLOAT_DTYPES: frozenset[str] = frozenset({"float32", "float64"})
NUMERIC_DTYPES: frozenset[str] = frozenset({"float32", "float64", "int64"})

# op -> the operand dtypes it accepts (the result has the operand dtype unless listed below)
UNARY_OPS: dict[str, frozenset[str]] = {
    "neg": NUMERIC_DTYPES,
    "abs": NUMERIC_DTYPES,
    "sign": NUMERIC_DTYPES,
    "exp": FLOAT_DTYPES,
    "log": FLOAT_DTYPES,
    "sin": FLOAT_DTYPES,
    "cos": FLOAT_DTYPES,
    "tanh": FLOAT_DTYPES,
    "sqrt": FLOAT_DTYPES,
    "sigmoid": FLOAT_DTYPES,
    "erf": FLOAT_DTYPES,
    # a float32 value rounded to the nearest bfloat16 one (a cast to bfloat16 inside a kernel)
    "round_bfloat16": frozenset({"float32"}),
}
_ALL = frozenset(DTYPES)
BINARY_OPS: dict[str, frozenset[str]] = {
    "add": NUMERIC_DTYPES,
    "sub": NUMERIC_DTYPES,
    "mul": NUMERIC_DTYPES,
    "div": FLOAT_DTYPES,
    "pow": FLOAT_DTYPES,
    # floats only: an integer division by zero raises, which a kernel cannot
    "remainder": FLOAT_DTYPES,
    "floor_divide": FLOAT_DTYPES,
    "maximum": NUMERIC_DTYPES,
    "minimum": NUMERIC_DTYPES,
    "eq": _ALL,
    "ne": _ALL,
    "lt": NUMERIC_DTYPES,
    "le": NUMERIC_DTYPES,
    "gt": NUMERIC_DTYPES,
    "ge": NUMERIC_DTYPES,
    "logical_and": frozenset({"bool"}),
}
COMPARISON_OPS: frozenset[str] = frozenset({"eq", "ne", "lt", "le", "gt", "ge"})
REDUCE_OPS: dict[str, frozenset[str]] = {"sum": NUMERIC_DTYPES, "max": NUMERIC_DTYPES}


class KernelIRError(ValueError):
    """A kernel that breaks the IR's rules; the message names kernel, expr, op and dtypes."""


@dataclass(frozen=True)
class Input:
    name: str
    dtype: str
    strides: tuple[int, ...]  # element strides, one per domain axis; 0 = broadcast


@dataclass(frozen=True)
class Load:
    input: int


@dataclass(frozen=True, eq=False)
class Const:
    """A constant, equal to another (and hashed) by its bits: ``0.0 == -0.0`` and
    ``nan != nan`` in Python, so a kernel with ``x * -0.0`` compared equal to one with
    ``x * 0.0`` (one compiled function served both: ``codegen.llvm.distinct``), and one
    holding a NaN never equalled itself rebuilt (no dedupe, no memory-cache hit)."""

    value: float | int | bool
    dtype: str

    def _key(self) -> tuple[Any, ...]:
        v = self.value
        if isinstance(v, (bool, int, np.bool_, np.integer)):
            return (self.dtype, int(v))
        return (self.dtype, struct.pack("<d", float(v)))  # numpy's floats too

    def __eq__(self, other: object) -> bool:
        return type(other) is Const and self._key() == other._key()

    def __hash__(self) -> int:
        return hash(self._key())


@dataclass(frozen=True)
class Unary:
    op: str
    x: int
    dtype: str


@dataclass(frozen=True)
class Binary:
    op: str
    a: int
    b: int
    dtype: str


@dataclass(frozen=True)
class Where:
    cond: int
    a: int
    b: int
    dtype: str


@dataclass(frozen=True)
class Fma:
    """a * b + c rounded once (a fused multiply-add), of one float dtype: what PyTorch's CPU
    kernels compute for add(alpha=), addcmul and lerp, so that a fused update keeps eager
    mode's bits."""

    a: int
    b: int
    c: int
    dtype: str


@dataclass(frozen=True)
class Cast:
    x: int
    dtype: str


@dataclass(frozen=True)
class Reduce:
    op: str
    x: int
    dtype: str


Expr = Load | Const | Unary | Binary | Where | Fma | Cast | Reduce


@dataclass(frozen=True)
class Output:
    name: str
    value: int
    dtype: str
    accumulate: str | None = None  # a REDUCE_OPS op: also reduce over the outer axes
    # an input whose storage receives this output (an update in place): the kernel stores
    # through that input's pointer, element by element where it loaded it, and never touches
    # the output's own pointer
    into: int | None = None


@dataclass(frozen=True)
class Kernel:
    name: str
    domain: tuple[int, ...]
    n_reduce: int
    inputs: tuple[Input, ...]
    exprs: tuple[Expr, ...]
    outputs: tuple[Output, ...]

    @property
    def outer_shape(self) -> tuple[int, ...]:
        """The axes split across calls/threads; elementwise kernels keep the last axis inner."""
        n_inner = self.n_reduce if self.n_reduce else min(1, len(self.domain))
        return self.domain[: len(self.domain) - n_inner]

    @property
    def inner_shape(self) -> tuple[int, ...]:
        return self.domain[len(self.outer_shape):]

    @property
    def outer_size(self) -> int:
        return math.prod(self.outer_shape)


def operands(expr: Expr) -> tuple[int, ...]:
    """Indices of the exprs ``expr`` reads (Load reads an input, not an expr)."""
    if isinstance(expr, (Unary, Cast, Reduce)):
        return (expr.x,)
    if isinstance(expr, Binary):
        return (expr.a, expr.b)
    if isinstance(expr, Where):
        return (expr.cond, expr.a, expr.b)
    if isinstance(expr, Fma):
        return (expr.a, expr.b, expr.c)
    return ()


def stage_of(kernel: Kernel) -> list[int]:
    """Stage per expr: loads/consts 0, elementwise = max of operands, Reduce = operand + 1."""
    stages: list[int] = []
    for expr in kernel.exprs:
        ops = [stages[i] for i in operands(expr)]
        stages.append(ops[0] + 1 if isinstance(expr, Reduce) else max(ops, default=0))
    return stages


def per_element(kernel: Kernel) -> list[bool]:
    """Whether each expr varies along the inner axes: it depends, not behind a Reduce, on a
    Load of an input that is not broadcast over every inner axis (an input read with zero
    inner strides, e.g. a (rows, 1) array, holds one value per row)."""
    # kept on the (frozen) kernel: planning asks once per output of every kernel
    cached = kernel.__dict__.get("_per_element")
    if cached is None:
        cached = _per_element(kernel)
        object.__setattr__(kernel, "_per_element", cached)
    return list(cached)


def _per_element(kernel: Kernel) -> tuple[bool, ...]:
    n_outer = len(kernel.outer_shape)
    flags: list[bool] = []
    for expr in kernel.exprs:
        if isinstance(expr, Load):
            flags.append(any(kernel.inputs[expr.input].strides[n_outer:]))
        elif isinstance(expr, Reduce):
            flags.append(False)
        else:
            flags.append(any(flags[i] for i in operands(expr)))
    return tuple(flags)


def output_shape(kernel: Kernel, output: Output) -> tuple[int, ...]:
    """Full domain for per-element outputs, the outer shape domain[:-n_reduce] for per-row
    ones; an accumulated output drops the outer axes (inner shape, or ``()`` per row)."""
    elementwise = per_element(kernel)[output.value] or kernel.n_reduce == 0
    if output.accumulate is not None:
        return kernel.inner_shape if elementwise else ()
    if elementwise:
        return kernel.domain
    return kernel.domain[: len(kernel.domain) - kernel.n_reduce]


def compute_dtype(dtype: str) -> str:
    """The dtype a kernel computes a value stored as ``dtype`` in (``STORAGE_ONLY``)."""
    return STORAGE_ONLY.get(dtype, dtype)


def result_dtype(kernel: Kernel, expr: Expr) -> str:
    if isinstance(expr, Load):
        return compute_dtype(kernel.inputs[expr.input].dtype)
    return expr.dtype


def validate(kernel: Kernel) -> None:
    """Raise KernelIRError on the first rule ``kernel`` breaks."""
    def fail(where: str, why: str) -> None:
        raise KernelIRError(f"kernel {kernel.name!r}: {where}: {why}")

    if any(d < 0 for d in kernel.domain):
        fail("domain", f"negative extent in {kernel.domain}")
    if not 0 <= kernel.n_reduce <= len(kernel.domain):
        fail("domain", f"n_reduce={kernel.n_reduce} outside 0..{len(kernel.domain)}")
    for i, inp in enumerate(kernel.inputs):
        if inp.dtype not in STORAGE_DTYPES:
            fail(f"input {i} ({inp.name})", f"unknown dtype {inp.dtype!r}")
        if any(s < 0 for s in inp.strides):
            fail(f"input {i} ({inp.name})", f"negative stride in {inp.strides}")
        if len(inp.strides) != len(kernel.domain):
            fail(f"input {i} ({inp.name})",
                 f"{len(inp.strides)} strides {inp.strides} for domain {kernel.domain}")
    dtypes: list[str] = []
    for i, expr in enumerate(kernel.exprs):
        _check_expr(kernel, i, expr, dtypes, fail)
        dtypes.append(result_dtype(kernel, expr))
    for j, out in enumerate(kernel.outputs):
        where = f"output {j} ({out.name})"
        if not 0 <= out.value < len(kernel.exprs):
            fail(where, f"references missing expr {out.value} of {len(kernel.exprs)}")
        if out.dtype not in STORAGE_DTYPES or compute_dtype(out.dtype) != dtypes[out.value]:
            fail(where, f"dtype {out.dtype} but expr {out.value} is {dtypes[out.value]}")
        if out.into is not None:
            _check_into(kernel, out, where, fail)
        if out.accumulate is not None and (out.accumulate not in REDUCE_OPS
                                           or out.dtype not in REDUCE_OPS[out.accumulate]):
            # a storage-only dtype too: its partials would round at every combine
            fail(where, f"cannot accumulate {out.dtype} with {out.accumulate!r} "
                        f"(known: {sorted(REDUCE_OPS)} over {sorted(NUMERIC_DTYPES)})")


def _check_into(kernel: Kernel, out: Output, where: str, fail) -> None:
    """An in-place output: an elementwise kernel writing, per element, over a dense input of
    its dtype (each element is loaded before it is overwritten, in the same iteration)."""
    if not 0 <= out.into < len(kernel.inputs):
        fail(where, f"into missing input {out.into} of {len(kernel.inputs)}")
    inp = kernel.inputs[out.into]
    dense, step = [], 1
    for d in reversed(kernel.domain):
        dense.append(step if d != 1 else 0)
        step *= d
    if kernel.n_reduce or out.accumulate is not None or inp.dtype != out.dtype \
            or tuple(s for s, d in zip(inp.strides, kernel.domain) if d != 1) \
            != tuple(s for s, d in zip(reversed(dense), kernel.domain) if d != 1):
        fail(where, f"cannot be written into input {out.into} ({inp.name}): needs an "
                    f"elementwise kernel and a dense input of dtype {out.dtype}, got "
                    f"n_reduce={kernel.n_reduce}, {inp.dtype} strides {inp.strides}")


def _check_expr(kernel: Kernel, i: int, expr: Expr, dtypes: list[str], fail) -> None:
    op = getattr(expr, "op", type(expr).__name__)
    srcs = operands(expr)
    where = f"expr {i} ({type(expr).__name__} {op}, operands {srcs})"
    for s in srcs:
        if not 0 <= s < i:
            fail(where, f"operand {s} is not an earlier expr")
    ins = tuple(dtypes[s] for s in srcs)
    got = f"operand dtypes {ins}, result {getattr(expr, 'dtype', None)}"
    if isinstance(expr, Load):
        if not 0 <= expr.input < len(kernel.inputs):
            fail(where, f"loads missing input {expr.input} of {len(kernel.inputs)}")
        return
    if expr.dtype not in DTYPES:
        fail(where, f"unknown dtype {expr.dtype!r}")
    if isinstance(expr, Const):
        return
    if isinstance(expr, Cast):
        return
    if isinstance(expr, Where):
        if ins[0] != "bool" or ins[1] != ins[2] or expr.dtype != ins[1]:
            fail(where, f"needs a bool cond and branches of the result dtype; {got}")
        return
    if isinstance(expr, Fma):
        if expr.dtype not in FLOAT_DTYPES or set(ins) != {expr.dtype}:
            fail(where, f"needs three operands of its float result dtype; {got}")
        return
    table = {Unary: UNARY_OPS, Binary: BINARY_OPS, Reduce: REDUCE_OPS}[type(expr)]
    if expr.op not in table:
        fail(where, f"unknown op {expr.op!r} (known: {sorted(table)})")
    if len(set(ins)) != 1:
        fail(where, f"operands must share a dtype; {got}")
    if ins[0] not in table[expr.op]:
        fail(where, f"op {expr.op} does not take {ins[0]}; {got}")
    want = "bool" if isinstance(expr, Binary) and expr.op in COMPARISON_OPS else ins[0]
    if expr.dtype != want:
        fail(where, f"result dtype must be {want}; {got}")
    if isinstance(expr, Reduce) and kernel.n_reduce == 0:
        fail(where, "Reduce in a kernel with n_reduce == 0")


def kernel_hash(kernel: Kernel) -> str:
    """Stable sha256 of the kernel's canonical repr (dataclass reprs are deterministic)."""
    return hashlib.sha256(repr(kernel).encode()).hexdigest()
