"""LLVM IR emission of one kernel (llvmlite.ir only; JIT and target setup live in jit.py): the
driver ``codegen.llvm``'s renderer runs over a kernel's ``LoopNest``, writing each expr with the
renderer's rule tables (``Rules``).
Each kernel becomes an ABI wrapper ``void NAME(i8** ptrs, i64 start, i64 stop)`` that loads the
data pointers and calls an internal always-inline body whose pointer parameters are ``noalias``,
so LLVM may vectorize the plain unit/zero-stride inner loops the body is written with. A second
entry, ``NAME.objects``, takes the addresses of numpy array objects instead and reads each data
pointer itself (what a plan's kernel step calls: no ``.ctypes.data`` per array in Python).

The body loops over ``[start, stop)`` of the outer axes; per outer index it runs one inner loop
per stage (``ir.stage_of``): a stage's loop feeds the reductions of that stage and stores its
per-element outputs; values constant along the row are computed between loops. Costly
per-element values a later stage needs again are stored to row-sized stack scratch by the loop
of their own stage rather than recomputed; the innermost loops ask the vectorizer to interleave
(``INTERLEAVE``) so long expression chains are not latency-bound; per-element division by a
row value multiplies by its reciprocal in rows where that is a normal number (other rows run
the same loop dividing). Outputs with ``accumulate`` start at the reduction's identity and
combine every row of the call's range into one partial.

Float sums are blocked and compensated, so their error does not grow with the row or the range:
a row's innermost loop runs in blocks of at most SUM_BLOCK elements, each summed in vector
partials (reassociated freely, so it vectorizes as before), and the blocks' totals are added into
the row's sum with Neumaier's compensation (``_two_sum``). Accumulated float-sum outputs do
the same over the outer axes: rows add into a stack partial, which joins the output with its
compensation every ROW_BLOCK rows. Accumulation within a block stays vectorized and plain.

A bfloat16 input (``ir.STORAGE_ONLY``) is loaded as i16 and widened to the float32 of its bits
(zext, shl 16, bitcast); a bfloat16 output is stored rounded to nearest even by integer ops
(``f32_to_bf16``), which vectorize like the rest of the loop.

A kernel with float32 or float64 sin or cos has a second body using their exact argument
reduction (codegen/llvm_math.py): the fast body tracks its largest sin/cos argument (a
vectorized max reduction), and if that passed FAST_SIN_COS_LIMIT the entry reruns the call's
range with the exact body, which rewrites every output. A kernel writing into an input
(``into``) cannot rerun and has only the exact body. sin and cos of one value (sin's backward takes cos of its
argument) are one call of their pair's function (``sincos``: one argument reduction), and an
argument's range is checked once.
"""

from __future__ import annotations

import ctypes
import functools
import math
import struct
import sys
from collections.abc import Callable, Iterator, Mapping
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass

import numpy as np
from llvmlite import ir

from codegen import ir as kir
from codegen.llvm_math import (
    BOUNDED_VARIANTS,
    EXACT_VARIANTS,
    FAST_SIN_COS_LIMIT,
    PAIRED,
    UNIT_SIN_COS_LIMIT,
    UNIT_VARIANTS,
)
from codegen.lower import RANGED_DTYPES, SCRATCH_BYTES, LoopNest, lower

I1 = ir.IntType(1)
I8 = ir.IntType(8)
I16 = ir.IntType(16)
I32 = ir.IntType(32)
I64 = ir.IntType(64)
VALUE_TYPES: dict[str, ir.Type] = {
    "float32": ir.FloatType(), "float64": ir.DoubleType(), "int64": I64, "bool": I1,
}
# numpy stores bool as one byte, bfloat16 as the high 16 bits of a float32 (ir.STORAGE_ONLY)
STORAGE_TYPES: dict[str, ir.Type] = {**VALUE_TYPES, "bool": I8, "bfloat16": I16}
# byte offset of the data pointer in a numpy array object (PyArrayObject_fields.data, after
# PyObject_HEAD); object_entry_ok checks it against this interpreter before code reads it
ARRAY_DATA_OFFSET = 16
OBJECT_ENTRY = ".objects"


@functools.cache
def object_entry_ok() -> bool:
    """Whether this interpreter keeps a numpy array's data pointer at ARRAY_DATA_OFFSET, where
    the kernels' object entry (and every generated function over array objects) reads it
    (CPython's object header, then PyArrayObject's data field)."""
    if sys.implementation.name != "cpython":
        return False
    base = np.arange(6.0)
    return all(ctypes.c_void_p.from_address(id(a) + ARRAY_DATA_OFFSET).value == a.ctypes.data
               for a in (base, base[2:], np.empty((3, 2), np.float32)))

ABI_TYPE = ir.FunctionType(ir.VoidType(), [I8.as_pointer().as_pointer(), I64, I64])


def _freeze(b: Builder, value: V) -> V:
    """``freeze value``: the same value (never poison here), opaque to InstCombine. A masked
    reduction, max(acc, select(mask, x, -inf)), is otherwise folded into
    select(mask, max(acc, x), acc), a conditional reduction the loop vectorizer leaves scalar:
    a causal softmax's row max ran 18x slower (gpt's attention kernel: 1.27 ms, 0.07 frozen).
    llvmlite's builder has no freeze: the instruction is built directly."""
    frozen = ir.instructions.Instruction(b.block, value.type, "freeze", [value])
    b._insert(frozen)
    return frozen


class RenderError(NotImplementedError):
    """An expr this renderer has no rule for; names the op, dtypes and operands."""



# independent vector chains the vectorizer interleaves in a kernel's innermost loops: a long
# expression chain (sin, tanh, ... of sin) is latency-bound with one in flight (measured on
# the chain workload: 143 us with 1, 50 us with 4). The only loops LLVM interleaves are those
# asking for it (``codegen.target.optimize``)
INTERLEAVE = 4
# rows of a group (``KernelEmitter._emit_grouped``) one iteration of a stage's row loop runs:
# mlp_small's log_softmax kernel over (32, 10), best of 300 side by side: 0.89 us with 1,
# 0.80 with 4, 0.74 with 8 (twice the code for the last few percent)
GROUP_UNROLL = 4


def loop_hints(module: ir.Module, interleave: int) -> ir.values.MDValue:
    """A fresh loop ID asking the vectorizer to interleave."""
    return loop_id(module, module.add_metadata([
        ir.MetaDataString(module, "llvm.loop.interleave.count"), ir.IntType(32)(interleave)]))


def loop_id(module: ir.Module, *properties: ir.values.MDValue) -> ir.values.MDValue:
    """A fresh loop ID (``!N = !{!N, ...}``) with these properties."""
    node = ir.values.MDValue(module, [], name=str(len(module.metadata)))
    node.operands = (node, *properties)  # self-reference: what makes it a loop ID
    return node


def vectorize_hints(module: ir.Module, width: int) -> ir.values.MDValue:
    """A fresh loop ID asking the vectorizer for vectors of ``width`` lanes, the loop's tail
    folded into a masked vector iteration (a loop of fewer iterations runs masked too)."""
    return loop_id(module, *(module.add_metadata([ir.MetaDataString(module, name), value])
                             for name, value in (
                                 ("llvm.loop.vectorize.enable", I1(1)),
                                 ("llvm.loop.vectorize.width", I32(width)),
                                 ("llvm.loop.vectorize.predicate.enable", I1(1)),
                                 ("llvm.loop.interleave.count", I32(1)))))


def keep_rolled(module: ir.Module) -> ir.values.MDValue:
    """A loop ID that keeps a loop from being unrolled (it may still be vectorized)."""
    return loop_id(module,
                   module.add_metadata([ir.MetaDataString(module, "llvm.loop.unroll.disable")]))


@contextmanager
def for_range(builder: ir.IRBuilder, start: ir.Value, stop: ir.Value, name: str,
              hints: ir.values.MDValue | None = None) -> Iterator[ir.Value]:
    """Loop over [start, stop) in named blocks; yields the induction variable (the only phi).
    ``hints``: a loop ID (``loop_hints``) for the back edge."""
    preheader = builder.block
    cond = builder.append_basic_block(f"{name}.cond")
    body = builder.append_basic_block(f"{name}.body")
    end = builder.append_basic_block(f"{name}.end")
    builder.branch(cond)
    builder.position_at_end(cond)
    index = builder.phi(I64, name=name)
    index.add_incoming(start, preheader)
    builder.cbranch(builder.icmp_signed("<", index, stop), body, end)
    builder.position_at_end(body)
    yield index
    index.add_incoming(builder.add(index, I64(1), name=f"{name}.next", flags=("nsw",)),
                       builder.block)
    latch = builder.branch(cond)
    if hints is not None:
        latch.set_metadata("llvm.loop", hints)
    builder.position_at_end(end)


def intrinsic(module: ir.Module, name: str, ty: ir.Type, n_args: int) -> ir.Function:
    """Declare (once) the overloaded intrinsic ``name`` at type ``ty``, e.g. llvm.maximum.f32."""
    full = f"{name}.{'f32' if ty == ir.FloatType() else 'f64'}"
    if full in module.globals:
        return module.globals[full]
    return ir.Function(module, ir.FunctionType(ty, [ty] * n_args), full)


def bf16_to_f32(b: ir.IRBuilder, bits: ir.Value) -> ir.Value:
    """A bfloat16 (i16) as the float32 of those high 16 bits: exact."""
    return b.bitcast(b.shl(b.zext(bits, I32), I32(16)), ir.FloatType())


def f32_to_bf16(b: ir.IRBuilder, x: ir.Value) -> ir.Value:
    """A float32 rounded to the nearest bfloat16 (i16), ties to even; a NaN is the quiet NaN
    of its sign (0x7fc0 / 0xffc0), as ml_dtypes' (eager's) conversion gives. Overflow rounds
    to an infinity through the carry into the exponent. Integer ops only: vectorizes."""
    bits = b.bitcast(x, I32)
    odd = b.and_(b.lshr(bits, I32(16)), I32(1))
    rounded = b.lshr(b.add(bits, b.add(I32(0x7FFF), odd)), I32(16))
    nan = b.or_(b.and_(b.lshr(bits, I32(16)), I32(0x8000)), I32(0x7FC0))
    chosen = b.select(b.fcmp_unordered("uno", x, x), nan, rounded)
    return b.trunc(chosen, I16)


def round_bf16(b: ir.IRBuilder, x: ir.Value) -> ir.Value:
    """A float32 rounded to the nearest bfloat16 value, as a float32 (``round_bfloat16``)."""
    return bf16_to_f32(b, f32_to_bf16(b, x))


def _kind(dtype: str) -> str:
    return {"float32": "float", "float64": "float", "int64": "int", "bool": "bool"}[dtype]


Builder = ir.IRBuilder
V = ir.Value


@dataclass(frozen=True)
class Rules:
    """A renderer's op templates, keyed by (op, operand kind): what the emitter writes for each
    expr (``codegen.llvm`` holds the tables)."""

    unary: Mapping[tuple[str, str], Callable[[Builder, V, ir.Module], V]]
    binary: Mapping[tuple[str, str], Callable[[Builder, V, V, ir.Module], V]]
    cast: Mapping[tuple[str, str], Callable[[Builder, V, ir.Type], V]]
    # (identity, combine)
    reduce: Mapping[tuple[str, str], tuple[Callable[[ir.Type], V],
                                           Callable[[Builder, V, V, ir.Module], V]]]


# elements a float sum adds into its vector partials before their total joins the row's
# compensated sum: each of the vectorizer's partials (16 float lanes x INTERLEAVE with AVX-512,
# 8 x INTERLEAVE with AVX2) sums 32 to 64 elements of a block, then a tree, about what
# numpy's pairwise sum leaves to one partial (16) plus its tree. Smaller blocks pay a
# horizontal reduction each: a two-pass row variance over (64, 4096) float32 took 22.6 us
# unblocked, 23.8 us with blocks of 2048, 28.7 with 1024, 32.9 with 512.
SUM_BLOCK = 2048
# rows an accumulated float sum adds into its partial before the partial joins the output's
# compensated sum (the same scheme over the outer axes; see ``_outer_loop``)
ROW_BLOCK = 32


def _two_sum(b: Builder, m: ir.Module, s: V, c: V, x: V) -> tuple[V, V]:
    """Neumaier's step: (s + x rounded, c plus that addition's rounding error, which the
    branch-free select computes exactly). No fast-math flags: reassociating undoes it."""
    t = b.fadd(s, x)
    fabs = intrinsic(m, "llvm.fabs", s.type, 1)
    s_bigger = b.fcmp_ordered(">=", b.call(fabs, [s]), b.call(fabs, [x]))
    err = b.select(s_bigger, b.fadd(b.fsub(s, t), x), b.fadd(b.fsub(x, t), s))
    return t, b.fadd(c, err)


def _compensated_total(b: Builder, m: ir.Module, s: V, c: V) -> V:
    """s + c, or s itself once s overflowed or met an inf or nan (then c is nan)."""
    finite = b.fcmp_ordered("<", b.call(intrinsic(m, "llvm.fabs", s.type, 1), [s]),
                            ir.Constant(s.type, math.inf))
    return b.select(finite, b.fadd(s, c), s)


def _const(expr: kir.Const) -> ir.Constant:
    kind = _kind(expr.dtype)
    value = {"float": float, "int": int, "bool": lambda v: int(bool(v))}[kind](expr.value)
    return ir.Constant(VALUE_TYPES[expr.dtype], value)


def _paired_operands(kernel: kir.Kernel, math_table: Mapping[str, object]) -> set[int]:
    """Expr indices that are the operand of every op of a pair (``PAIRED``: sin and cos) whose
    function the math table has."""
    operands = {op: {e.x for e in kernel.exprs if isinstance(e, kir.Unary) and e.op == op}
                for op in PAIRED}
    out: set[int] = set()
    for pair in {pair for pair, _ in PAIRED.values()} & set(math_table):
        members = [operands[op] for op, (p, _) in PAIRED.items() if p == pair]
        out |= set.intersection(*members)
    return out


# ops whose float result is within [-1, 1] or nan, whatever their operand
_UNIT_RANGE_OPS = frozenset({"sin", "cos", "tanh", "erf", "sigmoid", "sign"})
# one rounding's relative growth of a bound, generously
_ROUNDING = 1 + 2.0**-20


def _magnitude_bounds(kernel: kir.Kernel) -> list[float]:
    """Per expr, a bound on the magnitude of its value (a nan aside; inf where none is known):
    what comes out of a sin, tanh, ... and through constant scales and offsets. A sin or cos
    argument bounded by FAST_SIN_COS_LIMIT needs no range check (tanh's output, in the chain)."""
    inf = math.inf
    bounds: list[float] = []
    for e in kernel.exprs:
        bound = inf
        if isinstance(e, kir.Const) and _kind(e.dtype) == "float":
            bound = abs(float(e.value))
        elif isinstance(e, kir.Unary) and e.op in _UNIT_RANGE_OPS:
            bound = 1.0
        elif isinstance(e, kir.Unary) and e.op in ("neg", "abs"):
            bound = bounds[e.x]
        elif isinstance(e, kir.Binary) and e.op in ("add", "sub", "mul", "maximum", "minimum"):
            a, b = bounds[e.a], bounds[e.b]
            if max(a, b) < inf:
                bound = {"add": a + b, "sub": a + b, "mul": a * b}.get(e.op, max(a, b))
                bound *= _ROUNDING
        elif isinstance(e, kir.Where):
            bound = max(bounds[e.a], bounds[e.b])
        elif isinstance(e, kir.Fma) and max(bounds[e.a], bounds[e.b], bounds[e.c]) < inf:
            bound = (bounds[e.a] * bounds[e.b] + bounds[e.c]) * _ROUNDING
        bounds.append(bound)
    return bounds


def groupable(kernel: kir.Kernel, nest: LoopNest) -> bool:
    """Whether a kernel's rows can run in groups (``KernelEmitter._emit_grouped``): one
    inner axis, several rows, no accumulated output (its rows would add in another order),
    no row scratch (one row's), no sin/cos range checks."""
    return (len(kernel.inner_shape) == 1 and math.prod(kernel.outer_shape) > 1
            and all(out.accumulate is None for out in kernel.outputs)
            and not nest.cached and not nest.ranged)


class KernelEmitter:
    """Writes one kernel (its ``LoopNest``) into ``module`` with a renderer's ``Rules``."""

    def __init__(self, module: ir.Module, kernel: kir.Kernel,
                 math_table: dict[str, Callable[[Builder, V, str], V]], rules: Rules,
                 interleave: int = INTERLEAVE, group_rows: int = 1, lanes: int = 1) -> None:
        self.module = module
        self.interleave = interleave
        # exprs a Reduce reads directly (see _freeze)
        self.reduced = {e.x for e in kernel.exprs if isinstance(e, kir.Reduce)}
        self.rules = rules
        self.kernel = kernel
        self.math = math_table
        nest: LoopNest = lower(kernel, SCRATCH_BYTES)
        self.nest = nest
        # rows a group holds (``_emit_grouped``; 1: no groups) and a vector's lanes
        self.group_rows = group_rows if groupable(kernel, nest) else 1
        self.lanes = lanes
        self.stages = nest.stages
        self.per_element = nest.per_element
        self.dtypes = nest.dtypes
        # outputs stored inside the element loops (full domain shape)
        self.elem_output = nest.elem_output
        self.roots = nest.roots
        self.cached = nest.cached
        # divisors constant along a row (row values, constants) of per-element float
        # divisions: divided into 1 once per row, then multiplied (vector division is several
        # times slower than multiplication). The product is within an ulp of the quotient
        # only while the reciprocal is a normal number: 1/c overflows for the smallest
        # subnormal c and is a subnormal, short of precision, for the largest c. A constant's
        # reciprocal is checked when lowering (a constant failing it is divided by); a row
        # value's, per row: a loop multiplying by it runs only for rows where all its
        # reciprocals are normal, the same loop dividing runs for the others
        # (``_emit_stage_loop``). On the eltwise workload's kernel, (512, 2048) float32 on one
        # thread, a call took 1.62 ms dividing throughout, 1.49 multiplying throughout and
        # 1.46 choosing per row (which compiles in 0.25 s, not 0.18: the loop is emitted twice).
        self.recip_of = nest.reciprocal
        self.recips: dict[int, V] = {}
        # the divisors the loop being emitted multiplies by the reciprocal of
        self.multiplying: set[int] = set()
        # the body being emitted: exact sin/cos, or fast ones checking their range
        self.exact = self.checked = False
        # operands (expr indices) of both ops of a pair (llvm_math.PAIRED: sin and cos), each
        # evaluated by the pair's function once: sin's backward takes cos of its argument
        self.paired = _paired_operands(kernel, math_table)
        self.bounds = _magnitude_bounds(kernel)
        # per (argument value, block): the pair's results, and the checked arguments' ranges
        self.pairs: dict[tuple[int, int], tuple[V, V]] = {}
        self.range_checked: set[tuple[int, int]] = set()
        # the row values a group's arrays hold so far (``_emit_grouped``)
        self.done_rows: set[int] = set()

    def _body(self, ptr_types: list[ir.Type], name: str, exact: bool, checked: bool
              ) -> ir.Function:
        """One body over [start, stop); returns whether an argument of a fast float32 sin/cos
        passed FAST_SIN_COS_LIMIT (``checked``; always false otherwise)."""
        body = ir.Function(self.module, ir.FunctionType(I1, [*ptr_types, I64, I64]),
                           f"{self.kernel.name}.{name}")
        body.linkage = "internal"
        # one copy, called by both entries (inlined in each, a kernel's code doubled: LLVM's
        # optimization and code generation time with it)
        body.attributes.add("noinline")
        body.attributes.add("nounwind")
        for arg in body.args[: len(ptr_types)]:
            arg.add_attribute("noalias")
        self.exact, self.checked = exact, checked
        self.pairs, self.range_checked = {}, set()
        self._emit_body(body)
        return body

    def _call_bodies(self, b: Builder, bodies: list[ir.Function], args: list[V]) -> None:
        """Call the fast body, then the exact one only if the fast one asks for it."""
        needs_exact = b.call(bodies[0], args)
        if len(bodies) > 1:
            with b.if_then(needs_exact, likely=False):
                b.call(bodies[1], args)

    def emit(self) -> None:
        kernel = self.kernel
        ptr_types = [STORAGE_TYPES[t.dtype].as_pointer()
                     for t in (*kernel.inputs, *kernel.outputs)]
        if not self.nest.ranged:
            bodies = [self._body(ptr_types, "body", exact=False, checked=False)]
        elif any(out.into is not None for out in kernel.outputs):
            bodies = [self._body(ptr_types, "body", exact=True, checked=False)]
        else:
            bodies = [self._body(ptr_types, "body", exact=False, checked=True),
                      self._body(ptr_types, "exact", exact=True, checked=False)]

        wrapper = ir.Function(self.module, ABI_TYPE, kernel.name)
        wrapper.attributes.add("nounwind")
        b = ir.IRBuilder(wrapper.append_basic_block("entry"))
        ptrs, start, stop = wrapper.args
        args = [b.bitcast(b.load(b.gep(ptrs, [I64(i)], inbounds=True), name=f"ptr{i}"), ty)
                for i, ty in enumerate(ptr_types)]
        self._call_bodies(b, bodies, [*args, start, stop])
        b.ret_void()

        # the same entry over the addresses of numpy array objects (CPython's id()): it reads
        # each data pointer from the object, sparing the caller a slow .ctypes.data per array
        by_object = ir.Function(self.module, ABI_TYPE, kernel.name + OBJECT_ENTRY)
        by_object.attributes.add("nounwind")
        b = ir.IRBuilder(by_object.append_basic_block("entry"))
        objs, start, stop = by_object.args
        args = []
        for i, ty in enumerate(ptr_types):
            obj = b.load(b.gep(objs, [I64(i)], inbounds=True), name=f"obj{i}")
            field = b.bitcast(b.gep(obj, [I64(ARRAY_DATA_OFFSET)], inbounds=True),
                              I8.as_pointer().as_pointer())
            args.append(b.bitcast(b.load(field, name=f"data{i}"), ty))
        self._call_bodies(b, bodies, [*args, start, stop])
        b.ret_void()

    def _emit_body(self, fn: ir.Function) -> None:
        kernel = self.kernel
        n_in = len(kernel.inputs)
        self.in_ptrs = fn.args[:n_in]
        self.out_ptrs = fn.args[n_in: n_in + len(kernel.outputs)]
        start, stop = fn.args[-2:]
        b = self.b = ir.IRBuilder(fn.append_basic_block("entry"))
        self.recips = {}
        # the largest |x| of the checked sin/cos arguments, as float32 bits (which order as
        # the values do): an unsigned max reduction vectorizes at two instructions a value
        self.largest_bits = b.alloca(I32, name="largest_bits")
        b.store(I32(0), self.largest_bits)
        reduces = [i for i, e in enumerate(kernel.exprs) if isinstance(e, kir.Reduce)]
        # a reduce's partial over one block (every element, for those not compensated)
        self.accs = {i: b.alloca(VALUE_TYPES[self.dtypes[i]], name=f"acc{i}") for i in reduces}
        # a compensated sum's row total and compensation, each block added by _two_sum
        self.row_sums = {i: (b.alloca(VALUE_TYPES[self.dtypes[i]], name=f"sum{i}"),
                             b.alloca(VALUE_TYPES[self.dtypes[i]], name=f"comp{i}"))
                         for i in reduces if i in self.nest.compensated}
        inner = math.prod(kernel.inner_shape)
        self.scratch = {i: b.alloca(STORAGE_TYPES[self.dtypes[i]], I64(inner), name=f"row{i}")
                        for i in sorted(self.cached)}
        self.out_comps = self._output_compensations()
        outer_shape = kernel.outer_shape
        self._init_accumulators()
        if self.group_rows > 1:
            self._emit_grouped(start, stop)
            b.ret(I1(0))
            return
        with self._outer_loop(start, stop) as o:
            index = self._unflatten(o, outer_shape)
            bases = self.bases = [self._dot(index, inp.strides[: len(outer_shape)])
                                  for inp in kernel.inputs]
            self.outer_vals: dict[int, V] = {}
            for stage in range(max(self.stages, default=0) + 1):
                self._emit_outer_stage(stage, o)
                self._emit_stage_loop(stage, bases, o)
        self._finish_accumulators()
        limit = struct.unpack("<I", struct.pack("<f", FAST_SIN_COS_LIMIT))[0]
        b.ret(b.icmp_unsigned(">", b.load(self.largest_bits), I32(limit)))

    def _emit_grouped(self, start: V, stop: V) -> None:
        """The rows of [start, stop) in groups of ``group_rows`` (``groupable`` kernels, with
        short rows: ``codegen.llvm.group_rows``). Per stage, the values
        constant along a row (a log of a row's sum, ...) are computed for the whole group in
        one loop over its rows, which the vectorizer runs across the lanes of a vector (its
        tail masked), into stack arrays of a value a row; then the stage's loop over each
        row's elements runs row after row (unrolled by GROUP_UNROLL: the rows' horizontal
        reductions overlap), its reductions stored to their arrays. One row at a time, a row's
        values are a scalar chain (a max's and a sum's horizontal steps, a scalar log) the
        next row waits behind: mlp_small's log_softmax kernel over (32, 10), best of 300 side
        by side, 1.6 -> 0.8 us. Each value is computed as the row loop computes it: the
        same bits."""
        b, kernel, group = self.b, self.kernel, self.group_rows
        self.done_rows = set()
        n_stages = max(self.stages, default=0) + 1
        rows = {i: b.alloca(VALUE_TYPES[self.dtypes[i]], I64(group), name=f"rows{i}")
                for i in range(len(kernel.exprs)) if not self.per_element[i]}
        accs = {i: b.alloca(VALUE_TYPES[self.dtypes[i]], I64(group), name=f"accs{i}")
                for i, e in enumerate(kernel.exprs) if isinstance(e, kir.Reduce)}
        for array in (*rows.values(), *accs.values()):
            array.align = 64
        count = b.sdiv(b.add(b.sub(stop, start), I64(group - 1)), I64(group))
        with for_range(b, I64(0), count, "group") as g:
            first = b.add(start, b.mul(g, I64(group), flags=("nsw",)), flags=("nsw",))
            left = b.sub(stop, first)
            n = b.select(b.icmp_signed("<", left, I64(group)), left, I64(group))
            for stage in range(n_stages):
                with self._group_rows(first, n, rows, f"g{stage}.rows") as (o, r):
                    self._emit_outer_stage(stage, o, row_ptrs=(rows, accs, r))
                self._emit_grouped_loop(stage, first, n, rows, accs)

    @contextmanager
    def _group_rows(self, first: V, n: V, rows: dict[int, V], name: str
                    ) -> Iterator[tuple[V, V]]:
        """A vectorized loop over a group's ``n`` rows; yields (row index, index in the
        group), with ``bases`` and ``outer_vals`` (the row values computed so far, loaded from
        their arrays) set for that row."""
        b = self.b
        with for_range(b, I64(0), n, name, vectorize_hints(self.module, self.lanes)) as r:
            yield self._group_row(first, r, rows), r

    def _group_row(self, first: V, r: V, rows: dict[int, V]) -> V:
        """Row ``first + r`` (returned): sets ``bases`` and ``outer_vals`` (the row values
        computed so far, loaded from their arrays) for it."""
        b = self.b
        o = b.add(first, r, flags=("nsw",))
        index = self._unflatten(o, self.kernel.outer_shape)
        self.bases = [self._dot(index, inp.strides[: len(self.kernel.outer_shape)])
                      for inp in self.kernel.inputs]
        self.outer_vals = {i: b.load(b.gep(ptr, [r], inbounds=True))
                           for i, ptr in rows.items() if i in self.done_rows}
        return o

    def _emit_grouped_loop(self, stage: int, first: V, n: V, rows: dict[int, V],
                           accs: dict[int, V]) -> None:
        """A stage's loop over the elements of each row of a group, one row after another
        (as ``_emit_stage_loop``), each row's reductions stored to their arrays."""
        b, kernel = self.b, self.kernel
        reduces = [i for i, e in enumerate(kernel.exprs)
                   if isinstance(e, kir.Reduce) and self.stages[e.x] == stage]
        if stage not in self.roots:
            return
        unroll = loop_id(self.module, self.module.add_metadata([
            ir.MetaDataString(self.module, "llvm.loop.unroll.count"), I32(GROUP_UNROLL)]))
        with for_range(b, I64(0), n, f"g{stage}.row", unroll) as r:
            o = self._group_row(first, r, rows)
            bases = self.bases
            self.recips = {i: b.fdiv(ir.Constant(value.type, 1.0), value)
                           for i, value in self.outer_vals.items() if i in self.recip_of}
            self._emit_stage_loop(stage, bases, o)
            for i in reduces:
                if i in self.row_sums:
                    total, comp = (b.load(p) for p in self.row_sums[i])
                    value = _compensated_total(b, self.module, total, comp)
                else:
                    value = b.load(self.accs[i])
                b.store(value, b.gep(accs[i], [r], inbounds=True))

    def _output_compensations(self) -> dict[int, tuple[V, V]]:
        """Per accumulated float-sum output the lowering compensates, two stack arrays of its
        size: the partial of the current block of rows (what the loops add into) and the
        compensation of the output."""
        comps: dict[int, tuple[V, V]] = {}
        for j in sorted(self.nest.compensated_outputs):
            out = self.kernel.outputs[j]
            size = math.prod(kir.output_shape(self.kernel, out))
            ty = VALUE_TYPES[out.dtype]
            comps[j] = (self.b.alloca(ty, I64(size), name=f"outpart{j}"),
                        self.b.alloca(ty, I64(size), name=f"outcomp{j}"))
            for array in comps[j]:
                # cache-line aligned, as numpy's arrays are, so no vector access to
                # them straddles two lines
                array.align = 64
        return comps

    @contextmanager
    def _outer_loop(self, start: V, stop: V) -> Iterator[V]:
        """The loop over [start, stop) of the outer axes; with compensated outputs it runs
        in blocks of ROW_BLOCK rows, each block's partials added into the outputs after it."""
        b = self.b
        if not self.out_comps:
            with for_range(b, start, stop, "outer") as o:
                yield o
            return
        count = b.sdiv(b.add(b.sub(stop, start), I64(ROW_BLOCK - 1)), I64(ROW_BLOCK))
        with for_range(b, I64(0), count, "outer.block") as block:
            lo = b.add(start, b.mul(block, I64(ROW_BLOCK), flags=("nsw",)), flags=("nsw",))
            end = b.add(lo, I64(ROW_BLOCK), flags=("nsw",))
            hi = b.select(b.icmp_signed("<", end, stop), end, stop)
            with for_range(b, lo, hi, "outer") as o:
                yield o
            self._fold_outputs()

    def _each_output_element(self, name: str) -> Iterator[tuple[int, V, V, V]]:
        """(output index, pointer into it, into its partial, into its compensation) for
        every element of each compensated output, inside a loop per output."""
        b = self.b
        for j, (part, comp) in self.out_comps.items():
            size = math.prod(kir.output_shape(self.kernel, self.kernel.outputs[j]))
            with for_range(b, I64(0), I64(size), f"{name}{j}", keep_rolled(self.module)) as i:
                yield (j, b.gep(self.out_ptrs[j], [i], inbounds=True),
                       b.gep(part, [i], inbounds=True), b.gep(comp, [i], inbounds=True))

    def _init_accumulators(self) -> None:
        """Fill each accumulated output with its reduction's identity (compensated ones, their
        partials and compensations too): every call (a chunk of the outer range) gets its own
        output, combined by the caller in chunk order."""
        for j, out in enumerate(self.kernel.outputs):
            if out.accumulate is None or j in self.out_comps:
                continue
            identity, _ = self.rules.reduce[(out.accumulate, _kind(out.dtype))]
            size = math.prod(kir.output_shape(self.kernel, out))
            with for_range(self.b, I64(0), I64(size), f"init{j}") as i:
                self._store(j, i, identity(VALUE_TYPES[out.dtype]))
        for j, *ptrs in self._each_output_element("init"):
            for ptr in ptrs:
                self.b.store(ir.Constant(VALUE_TYPES[self.kernel.outputs[j].dtype], 0.0), ptr)

    def _fold_outputs(self) -> None:
        """Add each compensated output's block partial into it (``_two_sum``), then zero it."""
        b = self.b
        for j, out, part, comp in self._each_output_element("fold"):
            total, c = _two_sum(b, self.module, b.load(out), b.load(comp), b.load(part))
            b.store(total, out)
            b.store(c, comp)
            b.store(ir.Constant(VALUE_TYPES[self.kernel.outputs[j].dtype], 0.0), part)

    def _finish_accumulators(self) -> None:
        """Fold each compensated output's compensation into it, once per call."""
        b = self.b
        for _, out, _, comp in self._each_output_element("finish"):
            b.store(_compensated_total(b, self.module, b.load(out), b.load(comp)), out)

    def _unflatten(self, flat: V, shape: tuple[int, ...]) -> list[V]:
        index: list[V] = []
        for axis in reversed(range(1, len(shape))):
            index.append(self.b.urem(flat, I64(shape[axis])))
            flat = self.b.udiv(flat, I64(shape[axis]))
        if shape:
            index.append(flat)
        return index[::-1]

    def _dot(self, index: list[V], strides: tuple[int, ...]) -> V:
        total: V = I64(0)
        for i, s in zip(index, strides):
            if s:
                total = self.b.add(total, self.b.mul(i, I64(s), flags=("nsw",)), flags=("nsw",))
        return total

    def _emit_outer_stage(self, stage: int, o: V,
                          row_ptrs: tuple[dict[int, V], dict[int, V], V] | None = None) -> None:
        """Values constant along the inner axes that become available at ``stage``; with
        ``row_ptrs`` (a group's row value and reduction arrays, and the row's index in them:
        ``_emit_grouped``) a reduction's value is read from its array, and each value is
        stored to its own."""
        for i, expr in enumerate(self.kernel.exprs):
            if self.per_element[i] or self.stages[i] != stage:
                continue
            if isinstance(expr, kir.Reduce) and row_ptrs is not None:
                self.outer_vals[i] = self.b.load(
                    self.b.gep(row_ptrs[1][i], [row_ptrs[2]], inbounds=True))
            elif isinstance(expr, kir.Reduce) and i in self.row_sums:
                total, comp = (self.b.load(p) for p in self.row_sums[i])
                self.outer_vals[i] = _compensated_total(self.b, self.module, total, comp)
            elif isinstance(expr, kir.Reduce):
                self.outer_vals[i] = self.b.load(self.accs[i], name=f"red{i}")
            elif isinstance(expr, kir.Load):  # an input broadcast over the inner axes
                self.outer_vals[i] = self._load(expr.input, self.bases[expr.input])
            else:
                self.outer_vals[i] = self._emit_expr(i, self.outer_vals.__getitem__)
            if i in self.recip_of:
                value = self.outer_vals[i]
                self.recips[i] = self.b.fdiv(ir.Constant(value.type, 1.0), value)
            if row_ptrs is not None:
                self.b.store(self.outer_vals[i],
                             self.b.gep(row_ptrs[0][i], [row_ptrs[2]], inbounds=True))
                self.done_rows.add(i)
        for j, out in enumerate(self.kernel.outputs):
            if not self.elem_output[j] and self.stages[out.value] == stage:
                if out.accumulate is None:
                    self._store(j, o, self.outer_vals[out.value])
                else:
                    self._accumulate(j, I64(0), self.outer_vals[out.value])

    def _emit_stage_loop(self, stage: int, bases: list[V], o: V) -> None:
        """One loop over the inner axes: reductions of stage values and element outputs. A
        loop dividing by row values comes in two versions, chosen per row: one multiplying by
        their reciprocals, for rows where each is a normal number, and one dividing."""
        kernel = self.kernel
        reduces = [i for i, e in enumerate(kernel.exprs)
                   if isinstance(e, kir.Reduce) and self.stages[e.x] == stage]
        outputs = [j for j, out in enumerate(kernel.outputs)
                   if self.elem_output[j] and self.stages[out.value] == stage]
        if stage not in self.roots:
            return
        for i in reduces:
            identity, _ = self.rules.reduce[(kernel.exprs[i].op, _kind(self.dtypes[i]))]
            for ptr in self.row_sums.get(i, (self.accs[i],)):
                self.b.store(identity(VALUE_TYPES[self.dtypes[i]]), ptr)
        sums = [i for i in reduces if i in self.row_sums]
        stored = self.nest.stored_of(stage)
        needed = self.nest.needed(stage)

        def loop() -> None:
            with self._inner_loops(stage, bases, o, sums) as (offsets, flat, inner):
                vals = self._emit_elements(needed, offsets, stage, inner)
                for i in stored:
                    self._store_scratch(i, inner, vals[i])
                for i in reduces:
                    _, combine = self.rules.reduce[(kernel.exprs[i].op, _kind(self.dtypes[i]))]
                    acc = self.b.load(self.accs[i])
                    x = vals[kernel.exprs[i].x]
                    self.b.store(combine(self.b, acc, x, self.module), self.accs[i])
                for j in outputs:
                    value = vals[kernel.outputs[j].value]
                    if kernel.outputs[j].accumulate is None:
                        self._store(j, flat, value)
                    else:
                        self._accumulate(j, inner, value)

        divisors = {e.b for e in (kernel.exprs[i] for i in needed)
                    if isinstance(e, kir.Binary) and e.op == "div" and e.b in self.recips}
        # constants' reciprocals were checked when rendering (``recip_of``)
        checked = sorted(d for d in divisors if not isinstance(kernel.exprs[d], kir.Const))
        self.multiplying = divisors
        if not checked:
            loop()
            return
        normal = functools.reduce(self.b.and_, [self._is_normal(self.recips[d], self.dtypes[d])
                                                for d in checked])
        with self.b.if_else(normal, likely=True) as (multiply, divide):
            with multiply:
                loop()
            with divide:
                self.multiplying = divisors.difference(checked)
                loop()

    def _math(self, expr: kir.Unary, x: V) -> V:
        """A math op of ``x``: the exact variant in the exact body, the fast one (its argument
        range checked unless bounded) in the checked one, the bounded variant where the
        argument's magnitude is bounded; one of a pair from the pair's function, called once
        per argument and block (the block's earlier instructions dominate its later ones)."""
        b, op = self.b, expr.op
        ranged = op in EXACT_VARIANTS and expr.dtype in RANGED_DTYPES
        bounded = self.bounds[expr.x] <= FAST_SIN_COS_LIMIT
        key = (id(x), id(b.block))
        if ranged and self.checked and key not in self.range_checked and not bounded:
            self.range_checked.add(key)
            # a float64 argument narrowed to float32 (past float32's range: inf), checked
            # against the same limit (float64's fast reduction holds further, to 2**49)
            narrow = x if expr.dtype == "float32" else b.fptrunc(x, ir.FloatType())
            magnitude = b.and_(b.bitcast(narrow, I32), I32(0x7FFFFFFF))
            umax = self.module.globals.get("llvm.umax.i32") or ir.Function(
                self.module, ir.FunctionType(I32, [I32, I32]), "llvm.umax.i32")
            b.store(b.call(umax, [b.load(self.largest_bits), magnitude]), self.largest_bits)
        place = None
        if expr.x in self.paired and op in PAIRED:
            op, place = PAIRED[op]
            if key in self.pairs:
                return self.pairs[key][place]
        if ranged and self.exact:
            op = EXACT_VARIANTS[op]
        elif self.bounds[expr.x] <= UNIT_SIN_COS_LIMIT and UNIT_VARIANTS.get(op) in self.math:
            op = UNIT_VARIANTS[op]
        elif bounded and BOUNDED_VARIANTS.get(op) in self.math:
            op = BOUNDED_VARIANTS[op]
        value = self.math[op](b, x, expr.dtype)
        if place is None:
            return value
        self.pairs[key] = (b.extract_value(value, 0), b.extract_value(value, 1))
        return self.pairs[key][place]

    def _is_normal(self, x: V, dtype: str) -> V:
        """Whether float x is a normal number (not zero, subnormal, inf or nan)."""
        info = np.finfo(dtype)
        magnitude = self.b.call(intrinsic(self.module, "llvm.fabs", x.type, 1), [x])
        return self.b.and_(
            self.b.fcmp_ordered(">=", magnitude, ir.Constant(x.type, float(info.tiny))),
            self.b.fcmp_ordered("<=", magnitude, ir.Constant(x.type, float(info.max))))

    @contextmanager
    def _inner_loops(self, stage: int, bases: list[V], flat: V, sums: list[int]
                     ) -> Iterator[tuple[list[V], V, V]]:
        """Nested loops over the inner axes; yields per-input element offsets, the flat
        domain index (``flat`` enters as the outer index) and the flat inner index. With
        compensated sums (``sums``) the innermost loop runs in blocks of at most SUM_BLOCK,
        each block's partials starting at zero and ending in the row's sum."""
        n_outer = len(self.kernel.outer_shape)
        offsets = bases
        inner: V = I64(0)
        b = self.b
        with ExitStack() as loops:
            inner_shape = self.kernel.inner_shape
            for axis, extent in enumerate(inner_shape):
                lo, hi, hints = I64(0), I64(extent), None
                last = axis == len(inner_shape) - 1
                if last:
                    hints = loop_hints(self.module, self.interleave)
                    if sums and extent > SUM_BLOCK:
                        block = loops.enter_context(for_range(
                            b, I64(0), I64(-(-extent // SUM_BLOCK)), f"s{stage}.block"))
                        lo = b.mul(block, I64(SUM_BLOCK), flags=("nsw",))
                        end = b.add(lo, I64(SUM_BLOCK), flags=("nsw",))
                        hi = b.select(b.icmp_signed("<", end, I64(extent)), end, I64(extent))
                    if sums:
                        loops.callback(self._end_block, sums)
                        for i in sums:
                            b.store(ir.Constant(VALUE_TYPES[self.dtypes[i]], 0.0), self.accs[i])
                i = loops.enter_context(for_range(b, lo, hi, f"s{stage}.ax{axis}", hints))
                offsets = [b.add(off, b.mul(i, I64(inp.strides[n_outer + axis]), flags=("nsw",)),
                                 flags=("nsw",))
                           for off, inp in zip(offsets, self.kernel.inputs)]
                flat = b.add(b.mul(flat, I64(extent), flags=("nsw",)), i, flags=("nsw",))
                inner = b.add(b.mul(inner, I64(extent), flags=("nsw",)), i, flags=("nsw",))
            yield offsets, flat, inner

    def _end_block(self, sums: list[int]) -> None:
        """Add each compensated sum's block partial into its row sum (after the block loop)."""
        b = self.b
        for i in sums:
            total, comp = self.row_sums[i]
            t, c = _two_sum(b, self.module, b.load(total), b.load(comp), b.load(self.accs[i]))
            b.store(t, total)
            b.store(c, comp)

    def _emit_elements(self, needed: list[int], offsets: list[V], stage: int, inner: V
                       ) -> dict[int, V]:
        """Emit the ``needed`` per-element exprs (``LoopNest.needed``) in program order."""
        vals = dict(self.outer_vals)
        for i in needed:
            expr = self.kernel.exprs[i]
            if self._from_scratch(i, stage):
                vals[i] = self._load_scratch(i, inner)
            elif isinstance(expr, kir.Load):
                vals[i] = self._load(expr.input, offsets[expr.input])
            else:
                vals[i] = self._emit_expr(i, vals.__getitem__)
        return vals

    def _from_scratch(self, i: int, stage: int) -> bool:
        return self.nest.from_scratch(i, stage)

    def _store_scratch(self, i: int, inner: V, value: V) -> None:
        if self.dtypes[i] == "bool":
            value = self.b.zext(value, I8)
        self.b.store(value, self.b.gep(self.scratch[i], [inner], inbounds=True))

    def _load_scratch(self, i: int, inner: V) -> V:
        value = self.b.load(self.b.gep(self.scratch[i], [inner], inbounds=True))
        return self.b.icmp_unsigned("!=", value, I8(0)) if self.dtypes[i] == "bool" else value

    def _load(self, k: int, offset: V) -> V:
        b = self.b
        value = b.load(b.gep(self.in_ptrs[k], [offset], inbounds=True))
        if self.kernel.inputs[k].dtype == "bool":
            return b.icmp_unsigned("!=", value, I8(0))
        if self.kernel.inputs[k].dtype == "bfloat16":
            return bf16_to_f32(b, value)
        return value

    def _store(self, j: int, offset: V, value: V) -> None:
        b = self.b
        out = self.kernel.outputs[j]
        if out.dtype == "bool":
            value = b.zext(value, I8)
        elif out.dtype == "bfloat16":
            value = f32_to_bf16(b, value)
        ptr = self.out_ptrs[j] if out.into is None else self.in_ptrs[out.into]
        b.store(value, b.gep(ptr, [offset], inbounds=True))

    def _accumulate(self, j: int, offset: V, value: V) -> None:
        """out[offset] = combine(out[offset], value) for an output reduced over outer axes."""
        b = self.b
        out = self.kernel.outputs[j]
        base = self.out_comps[j][0] if j in self.out_comps else self.out_ptrs[j]
        ptr = b.gep(base, [offset], inbounds=True)
        _, combine = self.rules.reduce[(out.accumulate, _kind(out.dtype))]
        b.store(combine(b, b.load(ptr), value, self.module), ptr)

    def _emit_expr(self, i: int, get: Callable[[int], V]) -> V:
        expr = self.kernel.exprs[i]
        b, m = self.b, self.module
        if isinstance(expr, kir.Const):
            return _const(expr)
        srcs = kir.operands(expr)
        kind = _kind(self.dtypes[srcs[0]])
        if isinstance(expr, kir.Where):
            chosen = b.select(get(expr.cond), get(expr.a), get(expr.b))
            return _freeze(b, chosen) if i in self.reduced else chosen
        if isinstance(expr, kir.Fma):
            x, y, z = get(expr.a), get(expr.b), get(expr.c)
            fma = m.declare_intrinsic("llvm.fma", [x.type], ir.FunctionType(x.type, [x.type] * 3))
            return b.call(fma, [x, y, z])
        if isinstance(expr, kir.Cast):
            if self.dtypes[expr.x] == expr.dtype:
                return get(expr.x)
            rule = self.rules.cast[(kind, _kind(expr.dtype))]
            return rule(b, get(expr.x), VALUE_TYPES[expr.dtype])
        if isinstance(expr, kir.Unary) and (expr.op, kind) in self.rules.unary:
            return self.rules.unary[(expr.op, kind)](b, get(expr.x), m)
        if isinstance(expr, kir.Unary) and kind == "float" and expr.op in self.math:
            return self._math(expr, get(expr.x))
        if isinstance(expr, kir.Binary) and expr.op == "div" and expr.b in self.multiplying \
                and self.per_element[i]:
            return b.fmul(get(expr.a), self.recips[expr.b])
        if isinstance(expr, kir.Binary) and (expr.op, kind) in self.rules.binary:
            return self.rules.binary[(expr.op, kind)](b, get(expr.a), get(expr.b), m)
        raise RenderError(
            f"kernel {self.kernel.name!r}: LLVM renderer has no rule for expr {i} {expr!r} "
            f"(op {getattr(expr, 'op', None)}, operand dtypes "
            f"{tuple(self.dtypes[s] for s in srcs)}, operands {srcs})")
