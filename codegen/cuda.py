"""Render kernel IR to CUDA C: one module of ``extern "C" __global__`` kernels (no CuPy needed).

The loop structure comes from ``codegen.lower`` (stages, roots, row scratch, reciprocal
divisors, compensated sums), the same decisions the LLVM renderer writes; this module only
chooses how CUDA writes them, from rule tables (op -> C template per dtype kind, casts, reduce
identities and combines, type names) and a short driver with three kernel shapes:

- elementwise (``n_reduce == 0``, nothing accumulated): a grid-stride loop over the flat domain;
- elementwise with accumulated outputs: threads over the last axis (the columns), blocks over
  ``blockIdx.x``, and ``blockIdx.y`` picks a fixed chunk of the rows (a *part*);
- row reductions: one block per row (grid-stride over rows), each stage a block-strided loop
  over the row, its reductions combined per thread, then across the warp with
  ``__shfl_down_sync`` and across warps through shared memory; cached values live in shared
  memory scratch of a row's size.

Accumulated outputs never use atomics: each part (a block row chunk, or a block of the row
loop) writes its partial to a workspace, and a second kernel ``NAME__combine`` folds the
partials in part order, so the result depends only on the launch configuration
(``codegen.cuda_module.launch_config``), which depends only on the kernel and the device.
Float sums are compensated (Neumaier) per thread and when combining parts.

Loads: consecutive threads read consecutive elements, so a warp's loads of a dense input
coalesce into full 128-byte transactions, and ``const __restrict__`` lets the compiler use the
read-only cache. An elementwise kernel whose inputs are read along the last axis with stride 1
(or not at all) and whose rows are whole 16-byte vectors also gets a vector variant
``NAME__vec`` (``vector_width``): a thread loads 4 floats (2 doubles) of each such input at
once, computes the lanes and stores 16 bytes (ld/st.global.v4.f32 in PTX), a quarter of the
memory instructions. The launcher runs it only where every pointer is 16-byte aligned (a CuPy
allocation is; a view with an offset may not be) and the scalar kernel elsewhere.

bfloat16 inputs and outputs (``ir.STORAGE_ONLY``) are ``bp_bf16`` (16 bits): a load shifts them
into a float32, a store rounds to nearest even with integer ops (``bp_bf16_store``, NaN kept
a NaN), so no cuda_bf16.h is needed and the host emulation runs them as written.

Float32 sin/cos need no fast/exact pair here: CUDA's accurate ``sinf``/``cosf``
reduce large arguments exactly themselves (no ``--use_fast_math``).
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Sequence

import numpy as np

from codegen import ir as kir
from codegen.lower import LoopNest, lower

# threads of a block (every launch uses at most this many, a multiple of WARP): the kernels
# declare it in __launch_bounds__ with one block per SM as the minimum, so the compiler may give
# a thread up to 255 registers (without the minimum, ptxas held the eltwise kernel to 32
# registers and spilled; with it, 44 and no spills)
MAX_BLOCK = 256
LAUNCH_BOUNDS = f"__launch_bounds__({MAX_BLOCK}, 1)"
WARP = 32  # every NVIDIA GPU; the launcher checks the device agrees
# shared memory per block for row scratch (of the 48 KiB a block may declare statically),
# leaving room for the reduction buffers and for two blocks per SM
SCRATCH_BYTES = 32 << 10
COMBINE = "__combine"
VECTOR = "__vec"  # an elementwise kernel's variant loading and storing 16 bytes at a time
VECTOR_ALIGN = 16  # bytes every pointer of a vector launch is a multiple of
VECTOR_WIDTH: dict[str, int] = {"float32": 4, "float64": 2}  # elements in VECTOR_ALIGN bytes
VECTOR_TYPES: dict[str, str] = {"float32": "bp_vec4f", "float64": "bp_vec2d"}
WORKSPACE_ALIGN = 16

TYPES: dict[str, str] = {"float32": "float", "float64": "double", "int64": "long long",
                         "bool": "bool", "bfloat16": "bp_bf16"}
SUFFIX: dict[str, str] = {"float32": "f", "float64": ""}  # of C's math functions


class CUDARenderError(NotImplementedError):
    """A kernel this renderer has no rule for; names the kernel, expr, op and dtypes."""


def _kind(dtype: str) -> str:
    return {"float32": "float", "float64": "float", "int64": "int", "bool": "bool"}[dtype]


# (op, kind) -> C template: {x} the operand, {T} the C type, {s} the math suffix
UNARY_RULES: dict[tuple[str, str], str] = {
    ("neg", "float"): "(-{x})",
    ("neg", "int"): "(-{x})",
    ("abs", "float"): "fabs{s}({x})",
    ("abs", "int"): "({x} < 0 ? -{x} : {x})",
    # PyTorch's: nan and -0. give +0., as in the LLVM rule
    ("sign", "float"): "({x} > 0 ? ({T})1 : ({x} < 0 ? ({T})-1 : ({T})0))",
    ("sign", "int"): "({x} > 0 ? 1LL : ({x} < 0 ? -1LL : 0LL))",
    **{(op, "float"): f"{op}{{s}}({{x}})" for op in ("exp", "log", "sin", "cos", "tanh",
                                                     "sqrt", "erf")},
    # exp of -|x| only, so it never overflows (the LLVM rule's form)
    ("sigmoid", "float"): "bp_sigmoid({x})",
    ("round_bfloat16", "float"): "bp_round_bf16({x})",
}
_C_CMP = {"eq": "==", "ne": "!=", "lt": "<", "le": "<=", "gt": ">", "ge": ">="}
# C's comparisons already follow numpy's nan rules: nan != x is true, every other one false
BINARY_RULES: dict[tuple[str, str], str] = {
    **{(op, kind): f"({{a}} {c} {{b}})" for kind in ("float", "int")
       for op, c in (("add", "+"), ("sub", "-"), ("mul", "*"), *_C_CMP.items())},
    ("div", "float"): "({a} / {b})",
    ("pow", "float"): "pow{s}({a}, {b})",
    # numpy's maximum/minimum propagate nan (fmax/fmin would drop it)
    ("floor_divide", "float"): "bp_floor_divide({a}, {b})",
    ("remainder", "float"): "bp_remainder({a}, {b})",
    ("maximum", "float"): "bp_maximum({a}, {b})",
    ("minimum", "float"): "bp_minimum({a}, {b})",
    ("maximum", "int"): "bp_maximum({a}, {b})",
    ("minimum", "int"): "bp_minimum({a}, {b})",
    ("eq", "bool"): "({a} == {b})",
    ("ne", "bool"): "({a} != {b})",
    ("logical_and", "bool"): "({a} && {b})",
}
# (from kind, to kind) -> template; same-dtype casts are the identity
CAST_RULES: dict[tuple[str, str], str] = {
    ("float", "float"): "(({T}){x})",
    ("float", "int"): "((long long){x})",
    ("float", "bool"): "({x} != 0)",  # nan is true, as numpy's astype(bool)
    ("int", "float"): "(({T}){x})",
    ("int", "bool"): "({x} != 0)",
    ("bool", "float"): "(({T}){x})",
    ("bool", "int"): "((long long){x})",
}
# (op, dtype) -> (identity, functor combining two values)
REDUCE_RULES: dict[tuple[str, str], tuple[str, str]] = {
    ("sum", "float32"): ("0.0f", "bp_add"),
    ("sum", "float64"): ("0.0", "bp_add"),
    ("sum", "int64"): ("0LL", "bp_add"),
    ("max", "float32"): ("(-BP_INF_F)", "bp_max"),
    ("max", "float64"): ("(-BP_INF_D)", "bp_max"),
    ("max", "int64"): ("(-9223372036854775807LL - 1)", "bp_max"),
}
# the smallest and largest normal magnitudes: where a reciprocal may replace a division
NORMAL_RANGE: dict[str, tuple[str, str]] = {
    t: (float(np.finfo(t).tiny).hex() + s, float(np.finfo(t).max).hex() + s)
    for t, s in (("float32", "f"), ("float64", ""))}

# C and CUDA library functions a kernel named alike would clash with (the math the rules call,
# with and without the float suffix, and the C library's integer ones)
RESERVED: frozenset[str] = frozenset(
    {f"{name}{s}" for name in ("exp", "log", "sin", "cos", "tanh", "sqrt", "erf", "pow", "fabs")
     for s in ("", "f")} | {"div", "ldiv", "lldiv", "abs", "labs", "llabs", "min", "max", "main",
                            "exit", "abort", "malloc", "free", "memcpy", "memset", "printf"})

PRELUDE = """\
// backplan: kernels rendered from the kernel IR (codegen/cuda.py)
#define BP_INF_F __int_as_float(0x7f800000)
#define BP_INF_D __longlong_as_double(0x7ff0000000000000LL)
#define BP_NAN_F __int_as_float(0x7fc00000)
#define BP_NAN_D __longlong_as_double(0x7ff8000000000000LL)
template <class T> __device__ __forceinline__ T bp_maximum(T a, T b) {
  return (a != a || b != b) ? a + b : (a > b ? a : b);
}
template <class T> __device__ __forceinline__ T bp_minimum(T a, T b) {
  return (a != a || b != b) ? a + b : (a < b ? a : b);
}
// numpy's npy_divmod: fmod, the remainder given the divisor's sign (a zero one fmod's, as
// PyTorch's), the quotient snapped to an integer; a zero divisor gives a / b and fmod's nan
template <class T> __device__ __forceinline__ T bp_divmod(T a, T b, T* remainder) {
  T mod = fmod(a, b);
  if (b == 0) { *remainder = mod; return a / b; }
  T div = (a - mod) / b;
  if (mod != 0 && (b < 0) != (mod < 0)) { mod += b; div -= 1; }
  *remainder = mod;  // a zero keeps fmod's sign (a's), as PyTorch's remainder
  if (div == 0) return copysign((T)0, a / b);
  T floordiv = floor(div);
  return div - floordiv > (T)0.5 ? floordiv + 1 : floordiv;
}
template <class T> __device__ __forceinline__ T bp_floor_divide(T a, T b) {
  T mod;
  return bp_divmod(a, b, &mod);
}
template <class T> __device__ __forceinline__ T bp_remainder(T a, T b) {
  T mod;
  bp_divmod(a, b, &mod);
  return mod;
}
__device__ __forceinline__ float bp_abs(float x) { return fabsf(x); }
__device__ __forceinline__ double bp_abs(double x) { return fabs(x); }
__device__ __forceinline__ float bp_sigmoid(float x) {
  const float t = expf(-fabsf(x)), d = 1.0f + t;
  return x >= 0.0f ? 1.0f / d : t / d;
}
__device__ __forceinline__ double bp_sigmoid(double x) {
  const double t = exp(-fabs(x)), d = 1.0 + t;
  return x >= 0.0 ? 1.0 / d : t / d;
}
// bfloat16 storage (codegen.ir.STORAGE_ONLY): the high 16 bits of a float32, computed as the
// float32; a store rounds to nearest even, a NaN to the quiet NaN of its sign (ml_dtypes')
typedef unsigned short bp_bf16;
__device__ __forceinline__ float bp_bf16_load(bp_bf16 h) {
  return __uint_as_float((unsigned)h << 16);
}
__device__ __forceinline__ bp_bf16 bp_bf16_store(float x) {
  const unsigned u = __float_as_uint(x);
  if (x != x) return (bp_bf16)(((u >> 16) & 0x8000u) | 0x7fc0u);
  return (bp_bf16)((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}
__device__ __forceinline__ float bp_round_bf16(float x) { return bp_bf16_load(bp_bf16_store(x)); }
// 16 bytes, 16-byte aligned: one vector load or store (ld.global.v4.f32, st.global.v2.f64)
struct alignas(16) bp_vec4f { float v[4]; };
struct alignas(16) bp_vec2d { double v[2]; };
struct bp_add {
  template <class T> __device__ __forceinline__ T operator()(T a, T b) const { return a + b; }
};
struct bp_max {
  template <class T> __device__ __forceinline__ T operator()(T a, T b) const {
    return bp_maximum(a, b);
  }
};
// Neumaier's step: s + x rounded, and that addition's rounding error added into c
template <class T> __device__ __forceinline__ void bp_two_sum(T& s, T& c, T x) {
  const T t = s + x;
  c += bp_abs(s) >= bp_abs(x) ? (s - t) + x : (x - t) + s;
  s = t;
}
// s + c, or s itself once s overflowed or met an inf or nan (then c is nan)
template <class T> __device__ __forceinline__ T bp_total(T s, T c) {
  return s - s == (T)0 ? s + c : s;
}
template <class T, class F> __device__ __forceinline__ T bp_warp_reduce(T v, F f) {
  for (int d = 16; d > 0; d >>= 1) v = f(v, __shfl_down_sync(0xffffffffu, v, d));
  return v;
}
// every thread of the block gets the combine of every thread's v (blockDim.x a multiple of 32)
template <class T, class F>
__device__ __forceinline__ T bp_block_reduce(T v, F f, T identity, T* shared) {
  const unsigned lane = threadIdx.x & 31u, warp = threadIdx.x >> 5;
  v = bp_warp_reduce(v, f);
  if (lane == 0) shared[warp] = v;
  __syncthreads();
  if (warp == 0) {
    v = lane < (blockDim.x >> 5) ? shared[lane] : identity;
    v = bp_warp_reduce(v, f);
    if (lane == 0) shared[32] = v;
  }
  __syncthreads();
  return shared[32];
}
"""


def _const(expr: kir.Const) -> str:
    if expr.dtype == "bool":
        return "true" if expr.value else "false"
    if expr.dtype == "int64":
        value = int(expr.value)
        return "(-9223372036854775807LL - 1)" if value == -2 ** 63 else f"{value}LL"
    value = float(np.asarray(expr.value, expr.dtype))
    f = "F" if expr.dtype == "float32" else "D"
    if math.isnan(value):
        return f"BP_NAN_{f}"
    if math.isinf(value):
        return f"BP_INF_{f}" if value > 0 else f"(-BP_INF_{f})"
    return value.hex() + SUFFIX[expr.dtype]


def _index(flat: str, shape: tuple[int, ...], prefix: str, used: set[int]) -> list[str]:
    """C declarations of the index along each axis in ``used`` of flat index ``flat``. (In an
    empty domain the loop around them never runs; extents of 0 are written as 1 there, so
    that the dead code divides by no zero.)"""
    lines = []
    for axis in sorted(used):
        step = max(1, math.prod(shape[axis + 1:]))
        lines.append(f"const long long {prefix}{axis} = ({flat} / {step}LL) % "
                     f"{max(1, shape[axis])}LL;")
    return lines


def _offset(strides: tuple[int, ...], prefix: str, base: str = "") -> str:
    terms = [base] if base else []
    terms += [f"{prefix}{a} * {s}LL" for a, s in enumerate(strides) if s]
    return " + ".join(terms) or "0LL"


class _KernelWriter:
    """The CUDA C of one kernel (and of its combine kernel, if it accumulates)."""

    def __init__(self, kernel: kir.Kernel) -> None:
        if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", kernel.name) \
                or kernel.name.startswith(("bp_", "__")) or kernel.name in RESERVED:
            raise CUDARenderError(f"kernel {kernel.name!r}: its name must be a C identifier "
                                  "that names no C library function and starts with neither "
                                  "'bp_' nor '__' (the renderer's and CUDA's own)")
        self.kernel = kernel
        self.nest: LoopNest = lower(kernel, SCRATCH_BYTES)
        self.accumulated = [j for j, o in enumerate(kernel.outputs) if o.accumulate]
        self.lines: list[str] = []
        self.depth = 0
        self.used_rows: set[int] = set()  # the row values a row-reduction kernel computes
        self.reciprocals: set[int] = set()  # the row values whose reciprocal it multiplies by

    # ------------------------------------------------------------------ writing helpers

    def emit(self, *lines: str) -> None:
        self.lines.extend("  " * self.depth + line for line in lines)

    def open(self, head: str) -> None:
        self.emit(head + " {")
        self.depth += 1

    def close(self) -> None:
        self.depth -= 1
        self.emit("}")

    def fail(self, i: int, why: str) -> CUDARenderError:
        expr = self.kernel.exprs[i]
        srcs = kir.operands(expr)
        return CUDARenderError(
            f"kernel {self.kernel.name!r}: CUDA renderer has no rule for expr {i} {expr!r} "
            f"(op {getattr(expr, 'op', type(expr).__name__)}, operand dtypes "
            f"{tuple(self.nest.dtypes[s] for s in srcs)}, operands {srcs}): {why}")

    def expr(self, i: int, load: Callable[[int], str], divide: Callable[[int], str | None],
             lane: str = "") -> str:
        """The C expression of expr ``i`` over earlier values ``v{j}`` (``v{j}{lane}``: one
        lane of a vector kernel)."""
        expr = self.kernel.exprs[i]
        dtype = self.nest.dtypes[i]
        if isinstance(expr, kir.Load):
            return load(expr.input)
        if isinstance(expr, kir.Const):
            return _const(expr)
        if isinstance(expr, kir.Where):
            return f"(v{expr.cond}{lane} ? v{expr.a}{lane} : v{expr.b}{lane})"
        if isinstance(expr, kir.Fma):  # rounded once, as the CPU's kernels
            fn = "fmaf" if dtype == "float32" else "fma"
            return f"{fn}(v{expr.a}{lane}, v{expr.b}{lane}, v{expr.c}{lane})"
        src = self.nest.dtypes[kir.operands(expr)[0]]
        fill = {"T": TYPES[dtype], "s": SUFFIX.get(src, "")}
        if isinstance(expr, kir.Cast):
            if src == dtype:
                return f"v{expr.x}{lane}"
            rule = CAST_RULES.get((_kind(src), _kind(dtype)))
            if rule is None:
                raise self.fail(i, "no cast rule")
            return rule.format(x=f"v{expr.x}{lane}", **fill)
        if isinstance(expr, kir.Unary):
            rule = UNARY_RULES.get((expr.op, _kind(src)))
            if rule is None:
                raise self.fail(i, "no unary rule")
            return rule.format(x=f"v{expr.x}{lane}", **fill)
        if isinstance(expr, kir.Binary):
            multiply = divide(i)
            if multiply is not None:
                return multiply
            rule = BINARY_RULES.get((expr.op, _kind(src)))
            if rule is None:
                raise self.fail(i, "no binary rule")
            return rule.format(a=f"v{expr.a}{lane}", b=f"v{expr.b}{lane}", **fill)
        raise self.fail(i, "a Reduce is combined by the driver, not rendered as an expression")

    def value(self, i: int, code: str, lane: str = "") -> None:
        self.emit(f"const {TYPES[self.nest.dtypes[i]]} v{i}{lane} = {code};")

    def store(self, j: int, index: str, value: str) -> None:
        out = self.kernel.outputs[j]
        target = f"out{j}" if out.into is None else f"in{out.into}"
        if out.dtype == "bfloat16":
            value = f"bp_bf16_store({value})"
        self.emit(f"{target}[{index}] = {value};")

    def load(self, k: int, index: str) -> str:
        """Input ``k``'s element at ``index``, as a value of its compute dtype."""
        code = f"in{k}[{index}]"
        return f"bp_bf16_load({code})" if self.kernel.inputs[k].dtype == "bfloat16" else code

    # ------------------------------------------------------------------ signature

    def params(self) -> str:
        kernel = self.kernel
        into = {o.into for o in kernel.outputs if o.into is not None}
        params = [f"{'' if k in into else 'const '}{TYPES[inp.dtype]}* __restrict__ in{k}"
                  for k, inp in enumerate(kernel.inputs)]
        params += [f"{TYPES[o.dtype]}* __restrict__ out{j}" for j, o in enumerate(kernel.outputs)]
        if self.accumulated:
            params.append("unsigned char* __restrict__ bp_ws")
        return ", ".join(params)

    def workspace(self) -> list[tuple[int, int, int]]:
        """Per accumulated output: (output, bytes one part of its partials takes, offset of its
        partials in one part's share of the workspace): each output has ``parts`` partial
        arrays of its size, then, for a compensated float sum a block accumulates per element
        of a row, as many compensations (other partials accumulate in registers)."""
        layout, offset = [], 0
        for j in self.accumulated:
            out = self.kernel.outputs[j]
            size = math.prod(kir.output_shape(self.kernel, out))
            copies = 2 if self.comp_in_workspace(j) else 1
            nbytes = -(-copies * size * np.dtype(out.dtype).itemsize // WORKSPACE_ALIGN) \
                * WORKSPACE_ALIGN
            layout.append((j, nbytes, offset))
            offset += nbytes
        return layout

    def comp_in_workspace(self, j: int) -> bool:
        return j in self.nest.compensated_outputs and bool(self.kernel.n_reduce) \
            and self.nest.elem_output[j]

    def workspace_arrays(self, parts: str) -> dict[int, str]:
        """Declare the typed partial (and compensation) arrays of each accumulated output in
        the workspace; returns the partials' names (``bp_comp{j}`` names the other)."""
        names: dict[int, str] = {}
        for j, _, offset in self.workspace():
            out = self.kernel.outputs[j]
            size = math.prod(kir.output_shape(self.kernel, out))
            t = TYPES[out.dtype]
            self.emit(f"{t}* const bp_part{j} = ({t}*)(bp_ws + {offset}LL * {parts});")
            if self.comp_in_workspace(j):
                self.emit(f"{t}* const bp_comp{j} = bp_part{j} + {size}LL * {parts};")
            names[j] = f"bp_part{j}"
        return names

    # ------------------------------------------------------------------ the kernels

    def render(self) -> str:
        head = f'extern "C" __global__ void {LAUNCH_BOUNDS} {self.kernel.name}'
        self.open(f"{head}({self.params()})")
        if self.kernel.n_reduce:
            self.rows()
        elif self.accumulated:
            self.columns()
        else:
            self.flat()
        self.close()
        if self.accumulated:
            self.combine()
        width = vector_width(self.kernel)
        if width:
            self.emit("")
            self.open(f"{head}{VECTOR}({self.params()})")
            self.vector(width)
            self.close()
        return "\n".join(self.lines)

    def live(self) -> list[int]:
        """The exprs an output depends on, in program order."""
        live: set[int] = set()
        stack = [o.value for o in self.kernel.outputs]
        while stack:
            i = stack.pop()
            if i not in live:
                live.add(i)
                stack.extend(kir.operands(self.kernel.exprs[i]))
        return sorted(live)

    def element_offsets(self, flat: str) -> list[str]:
        """Declare the domain index of flat element ``flat`` along the axes the inputs read
        (or written ``into``) use; returns each input's element offset."""
        kernel = self.kernel
        read = {kernel.exprs[i].input for i in self.live()
                if isinstance(kernel.exprs[i], kir.Load)}
        read |= {o.into for o in kernel.outputs if o.into is not None}
        used = {a for k in read for a, s in enumerate(kernel.inputs[k].strides) if s}
        self.emit(*_index(flat, kernel.domain, "i", used))
        return [_offset(inp.strides, "i") for inp in kernel.inputs]

    def elements(self, load: Callable[[int], str]) -> None:
        """Every expr an output depends on, per element (the elementwise shapes: each is an
        element's value)."""
        for i in self.live():
            self.value(i, self.expr(i, load, lambda _: None))

    def flat(self) -> None:
        """Elementwise: a grid-stride loop over the flat domain."""
        kernel = self.kernel
        size = math.prod(kernel.domain)
        self.open("for (long long e = (long long)blockIdx.x * blockDim.x + threadIdx.x; "
                  f"e < {size}LL; e += (long long)gridDim.x * blockDim.x)")
        offsets = self.element_offsets("e")
        self.elements(lambda k: self.load(k, offsets[k]))
        for j, out in enumerate(kernel.outputs):
            self.store(j, "e" if out.into is None else offsets[out.into], f"v{out.value}")
        self.close()

    def vector(self, width: int) -> None:
        """Elementwise, ``width`` consecutive elements of the last axis a thread: one aligned
        16-byte load of each input read along that axis (one element of an input broadcast
        over it), the exprs per lane, one 16-byte store of each output (``vector_width`` says
        which kernels; the launcher runs this variant only where every pointer is aligned)."""
        kernel = self.kernel
        groups = math.prod(kernel.domain) // width
        vec = VECTOR_TYPES[kernel.outputs[0].dtype if kernel.outputs else
                           kernel.inputs[0].dtype]
        self.open("for (long long g = (long long)blockIdx.x * blockDim.x + threadIdx.x; "
                  f"g < {groups}LL; g += (long long)gridDim.x * blockDim.x)")
        self.emit(f"const long long e = g * {width}LL;")
        offsets = self.element_offsets("e")
        live = self.live()
        read = sorted({kernel.exprs[i].input for i in live
                       if isinstance(kernel.exprs[i], kir.Load)})
        along = {k for k in read if kernel.inputs[k].strides[-1]}
        for k in read:
            if k in along:
                self.emit(f"const {vec} l{k} = *reinterpret_cast<const {vec}*>"
                          f"(in{k} + {offsets[k]});")
            else:
                self.emit(f"const {TYPES[kernel.inputs[k].dtype]} l{k} = in{k}[{offsets[k]}];")
        for lane in range(width):
            for i in live:
                self.value(i, self.expr(i, lambda k: f"l{k}.v[{lane}]" if k in along
                                        else f"l{k}", lambda _: None, f"_{lane}"), f"_{lane}")
        for j, out in enumerate(kernel.outputs):
            target = f"out{j} + e" if out.into is None else f"in{out.into} + {offsets[out.into]}"
            lanes = ", ".join(f"v{out.value}_{lane}" for lane in range(width))
            self.emit(f"*reinterpret_cast<{vec}*>({target}) = {vec}{{{{{lanes}}}}};")
        self.close()

    def columns(self) -> None:
        """Elementwise with accumulated outputs: threads over the last axis; part
        ``blockIdx.y`` runs its chunk of the rows and writes one partial per column."""
        kernel = self.kernel
        cols = math.prod(kernel.inner_shape)
        rows = kernel.outer_size
        arrays = self.workspace_arrays("gridDim.y")
        self.emit(f"const long long per = ({rows}LL + gridDim.y - 1) / gridDim.y;",
                  "const long long r0 = per * blockIdx.y;",
                  f"const long long r1 = r0 + per < {rows}LL ? r0 + per : {rows}LL;")
        self.open("for (long long c = (long long)blockIdx.x * blockDim.x + threadIdx.x; "
                  f"c < {cols}LL; c += (long long)gridDim.x * blockDim.x)")
        self.init_accumulators(arrays)
        self.open("for (long long r = r0; r < r1; ++r)")
        e = f"(r * {cols}LL + c)"
        offsets = self.element_offsets(e)
        self.elements(lambda k: self.load(k, offsets[k]))
        for j, out in enumerate(kernel.outputs):
            if out.accumulate is None:
                self.store(j, e if out.into is None else offsets[out.into], f"v{out.value}")
            else:
                self.accumulate(j, f"v{out.value}", arrays, None)
        self.close()
        self.finish_accumulators(arrays, f"blockIdx.y * {cols}LL + c", registers=True)
        self.close()

    def init_accumulators(self, arrays: dict[int, str], index: str | None = None) -> None:
        """Start each accumulated output's partial (in registers, or at ``index`` of its
        workspace arrays) at the identity, its compensation at zero."""
        for j, part in arrays.items():
            out = self.kernel.outputs[j]
            identity, _ = REDUCE_RULES[(out.accumulate, out.dtype)]
            compensated = j in self.nest.compensated_outputs
            if index is None:
                self.emit(f"{TYPES[out.dtype]} bp_oacc{j} = {identity};")
                if compensated:
                    self.emit(f"{TYPES[out.dtype]} bp_oacc_c{j} = 0;")
            else:
                self.emit(f"{part}[{index}] = {identity};")
                if compensated:
                    self.emit(f"bp_comp{j}[{index}] = 0;")

    def accumulate(self, j: int, value: str, arrays: dict[int, str], index: str | None
                   ) -> None:
        """Combine ``value`` into output j's partial: a register (``index`` None) or the
        workspace element ``index`` of this part."""
        out = self.kernel.outputs[j]
        acc, c = (f"bp_oacc{j}", f"bp_oacc_c{j}") if index is None \
            else (f"{arrays[j]}[{index}]", f"bp_comp{j}[{index}]")
        if j in self.nest.compensated_outputs:
            self.emit(f"bp_two_sum({acc}, {c}, {value});")
        else:
            _, functor = REDUCE_RULES[(out.accumulate, out.dtype)]
            self.emit(f"{acc} = {functor}()({acc}, {value});")

    def finish_accumulators(self, arrays: dict[int, str], index: str, registers: bool
                            ) -> None:
        """Write each partial's total to ``index`` of its workspace array."""
        for j, part in arrays.items():
            acc, c = (f"bp_oacc{j}", f"bp_oacc_c{j}") if registers \
                else (f"{part}[{index}]", f"bp_comp{j}[{index}]")
            total = f"bp_total({acc}, {c})" if j in self.nest.compensated_outputs else acc
            self.emit(f"{part}[{index}] = {total};")

    def rows(self) -> None:
        """Row reductions: block ``blockIdx.x`` runs rows blockIdx.x, + gridDim.x, ...; each
        stage's loop strides the row by blockDim.x; a stage's reductions end in
        ``bp_block_reduce``, which every thread of the block returns from with the row's value."""
        kernel, nest = self.kernel, self.nest
        row = nest.row_size
        outer = kernel.outer_shape
        n_outer = len(outer)
        # one exchange buffer per dtype serves every reduction of the kernel: bp_block_reduce's
        # barriers keep one reduction's reads apart from the next one's writes
        for dtype in reduce_dtypes(kernel):
            self.emit(f"__shared__ {TYPES[dtype]} bp_red_{dtype}[33];")
        for i in sorted(nest.cached):
            self.emit(f"__shared__ {TYPES[nest.dtypes[i]]} bp_s{i}[{row}];")
        arrays = self.workspace_arrays("gridDim.x")
        self.used_rows = self.row_values_used()
        self.reciprocals = set(nest.divisors_in(sorted(
            {i for stage in nest.roots for i in nest.needed(stage)})))
        row_acc = {j: a for j, a in arrays.items() if not nest.elem_output[j]}
        elem_acc = {j: a for j, a in arrays.items() if nest.elem_output[j]}
        self.init_accumulators(row_acc)
        if elem_acc:
            self.open(f"for (long long k = threadIdx.x; k < {row}LL; k += blockDim.x)")
            self.init_accumulators(elem_acc, index=f"blockIdx.x * {row}LL + k")
            self.close()
        self.open(f"for (long long o = blockIdx.x; o < {kernel.outer_size}LL; o += gridDim.x)")
        loaded = {kernel.exprs[i].input for i in {*self.used_rows, *(
            i for stage in nest.roots for i in nest.needed(stage))}
            if isinstance(kernel.exprs[i], kir.Load)}
        used_outer = {a for k in loaded for a, s in enumerate(kernel.inputs[k].strides[:n_outer])
                      if s}
        self.emit(*_index("o", outer, "i", used_outer))
        for k in sorted(loaded):
            inp = kernel.inputs[k]
            self.emit(f"const long long bp_base{k} = {_offset(inp.strides[:n_outer], 'i')};")
        for stage in range(nest.n_stages):
            self.row_values(stage, row_acc)
            if stage in nest.roots:
                self.stage_loop(stage, elem_acc)
        if nest.cached:  # the next row's first loop overwrites what the last loop reads
            self.emit("__syncthreads();")
        self.close()
        if row_acc:
            self.open("if (threadIdx.x == 0)")
            self.finish_accumulators(row_acc, "blockIdx.x", registers=True)
            self.close()
        if elem_acc:
            self.open(f"for (long long k = threadIdx.x; k < {row}LL; k += blockDim.x)")
            self.finish_accumulators(elem_acc, f"blockIdx.x * {row}LL + k", registers=False)
            self.close()

    def row_values(self, stage: int, row_acc: dict[int, str]) -> None:
        """Values constant along the row that become available at ``stage``, and the row
        outputs they give (every thread computes them; thread 0 stores)."""
        kernel, nest = self.kernel, self.nest
        for i in nest.row_exprs_of(stage):
            if i not in self.used_rows:
                continue
            if not isinstance(kernel.exprs[i], kir.Reduce):
                self.value(i, self.expr(i, lambda k: self.load(k, f"bp_base{k}"), lambda _: None))
            if i in self.reciprocals:
                t = TYPES[nest.dtypes[i]]
                self.emit(f"const {t} bp_rc{i} = ({t})1 / v{i};")
                if not isinstance(kernel.exprs[i], kir.Const):
                    lo, hi = NORMAL_RANGE[nest.dtypes[i]]
                    self.emit(f"const bool bp_ok{i} = bp_abs(bp_rc{i}) >= {lo} "
                              f"&& bp_abs(bp_rc{i}) <= {hi};")
        outputs = nest.row_outputs_of(stage)
        if outputs:
            self.open("if (threadIdx.x == 0)")
            for j in outputs:
                value = f"v{kernel.outputs[j].value}"
                if j in row_acc:
                    self.accumulate(j, value, row_acc, None)
                else:
                    self.store(j, "o", value)
            self.close()

    def row_values_used(self) -> set[int]:
        """The row values something reads: a stage loop, a row output, another such value
        (the rest would be computed for nothing)."""
        kernel, nest = self.kernel, self.nest
        wanted = [o.value for j, o in enumerate(kernel.outputs) if not nest.elem_output[j]]
        for stage, roots in nest.roots.items():
            for i in {*nest.needed(stage), *roots}:
                wanted += [i, *kir.operands(kernel.exprs[i])]
        used: set[int] = set()
        stack = [i for i in wanted if not nest.per_element[i]]
        while stack:
            i = stack.pop()
            if i not in used:
                used.add(i)
                if not isinstance(kernel.exprs[i], kir.Reduce):
                    stack.extend(kir.operands(kernel.exprs[i]))
        return used

    def divide(self, i: int) -> str | None:
        """A per-element division by a row value: by its reciprocal where that is normal."""
        expr = self.kernel.exprs[i]
        if not (isinstance(expr, kir.Binary) and expr.op == "div"
                and expr.b in self.nest.reciprocal and self.nest.per_element[i]):
            return None
        if isinstance(self.kernel.exprs[expr.b], kir.Const):
            return f"(v{expr.a} * bp_rc{expr.b})"
        return f"(bp_ok{expr.b} ? v{expr.a} * bp_rc{expr.b} : v{expr.a} / v{expr.b})"

    def stage_loop(self, stage: int, elem_acc: dict[int, str]) -> None:
        kernel, nest = self.kernel, self.nest
        row = nest.row_size
        n_outer = len(kernel.outer_shape)
        inner = kernel.inner_shape
        reduces = nest.reduces_of(stage)
        for i in reduces:
            op, t = kernel.exprs[i].op, nest.dtypes[i]
            self.emit(f"{TYPES[t]} bp_acc{i} = {REDUCE_RULES[(op, t)][0]};")
            if i in nest.compensated:
                self.emit(f"{TYPES[t]} bp_acc_c{i} = 0;")
        self.open(f"for (long long k = threadIdx.x; k < {row}LL; k += blockDim.x)")
        needed = nest.needed(stage)
        loads = {kernel.exprs[i].input for i in needed if isinstance(kernel.exprs[i], kir.Load)}
        into = {o.into for j, o in enumerate(kernel.outputs)
                if o.into is not None and j in nest.element_outputs_of(stage)}
        used = {a for k in loads | into for a, s in enumerate(kernel.inputs[k].strides[n_outer:])
                if s}
        self.emit(*_index("k", inner, "j", used))
        offsets = {k: _offset(kernel.inputs[k].strides[n_outer:], "j", f"bp_base{k}")
                   for k in loads | into}
        for i in needed:
            if nest.from_scratch(i, stage):
                self.value(i, f"bp_s{i}[k]")
            else:
                self.value(i, self.expr(i, lambda k: self.load(k, offsets[k]), self.divide))
        for i in nest.stored_of(stage):
            self.emit(f"bp_s{i}[k] = v{i};")
        for i in reduces:
            x = f"v{kernel.exprs[i].x}"
            if i in nest.compensated:
                self.emit(f"bp_two_sum(bp_acc{i}, bp_acc_c{i}, {x});")
            else:
                functor = REDUCE_RULES[(kernel.exprs[i].op, nest.dtypes[i])][1]
                self.emit(f"bp_acc{i} = {functor}()(bp_acc{i}, {x});")
        for j in nest.element_outputs_of(stage):
            out = kernel.outputs[j]
            if j in elem_acc:
                self.accumulate(j, f"v{out.value}", elem_acc, f"blockIdx.x * {row}LL + k")
            else:
                self.store(j, f"o * {row}LL + k" if out.into is None else offsets[out.into],
                           f"v{out.value}")
        self.close()
        for i in reduces:
            op, t = kernel.exprs[i].op, nest.dtypes[i]
            identity, functor = REDUCE_RULES[(op, t)]
            mine = f"bp_total(bp_acc{i}, bp_acc_c{i})" if i in nest.compensated else f"bp_acc{i}"
            self.value(i, f"bp_block_reduce({mine}, {functor}(), {identity}, bp_red_{t})")

    def combine(self) -> None:
        """``NAME__combine``: each accumulated output, element by element, folds the parts'
        partials in part order (compensated float sums with Neumaier's step)."""
        kernel = self.kernel
        outs = ", ".join(f"{TYPES[kernel.outputs[j].dtype]}* __restrict__ out{j}"
                         for j in self.accumulated)
        head = f'extern "C" __global__ void {LAUNCH_BOUNDS} {kernel.name}{COMBINE}'
        self.open(f"{head}({outs}, const unsigned char* __restrict__ bp_ws, long long parts)")
        for j, _, offset in self.workspace():
            out = kernel.outputs[j]
            size = math.prod(kir.output_shape(kernel, out))
            t = TYPES[out.dtype]
            identity, functor = REDUCE_RULES[(out.accumulate, out.dtype)]
            self.emit(f"const {t}* const bp_part{j} = (const {t}*)(bp_ws + {offset}LL * parts);")
            self.open("for (long long e = (long long)blockIdx.x * blockDim.x + threadIdx.x; "
                      f"e < {size}LL; e += (long long)gridDim.x * blockDim.x)")
            compensated = j in self.nest.compensated_outputs
            self.emit(f"{t} acc = {identity};")
            if compensated:
                self.emit(f"{t} comp = 0;")
            self.open("for (long long p = 0; p < parts; ++p)")
            value = f"bp_part{j}[p * {size}LL + e]"
            self.emit(f"bp_two_sum(acc, comp, {value});" if compensated
                      else f"acc = {functor}()(acc, {value});")
            self.close()
            self.emit(f"out{j}[e] = {'bp_total(acc, comp)' if compensated else 'acc'};")
            self.close()
        self.close()


def vector_width(kernel: kir.Kernel) -> int:
    """Elements a thread of the kernel's vector variant (``NAME__vec``) handles, or 0 for none:
    an elementwise kernel (nothing reduced or accumulated) whose inputs and outputs share a
    float dtype, whose last axis is a whole number of 16-byte vectors, and whose every input is
    read along that axis with stride 1 (its other strides whole vectors, so each thread's
    elements are one aligned vector of it) or not at all (stride 0: one value a thread)."""
    if kernel.n_reduce or any(o.accumulate for o in kernel.outputs) or not kernel.domain:
        return 0
    dtypes = {i.dtype for i in kernel.inputs} | {o.dtype for o in kernel.outputs}
    width = VECTOR_WIDTH.get(dtypes.pop(), 0) if len(dtypes) == 1 else 0
    if not width or kernel.domain[-1] % width:
        return 0
    for inp in kernel.inputs:
        if inp.strides[-1] not in (0, 1) or (
                inp.strides[-1] and any(s % width for s in inp.strides[:-1])):
            return 0
    return width


def reduce_dtypes(kernel: kir.Kernel) -> list[str]:
    """The dtypes of the kernel's reductions (each has a shared exchange buffer of 33)."""
    return sorted({e.dtype for e in kernel.exprs if isinstance(e, kir.Reduce)})


def render_kernel(kernel: kir.Kernel) -> str:
    """One kernel's CUDA C (and its combine kernel), without the module prelude."""
    return _KernelWriter(kernel).render()


def workspace_layout(kernel: kir.Kernel) -> list[tuple[int, int, int]]:
    """(output, bytes per part, offset per part) of each accumulated output's partials: the
    launcher sizes the workspace as parts * the sum of the bytes per part."""
    return _KernelWriter(kernel).workspace()


def render(kernels: Sequence[kir.Kernel]) -> str:
    """One CUDA C module holding every kernel of a plan."""
    names = [k.name for k in kernels]
    if len(set(names)) != len(names):
        raise CUDARenderError(f"duplicate kernel names in one module: {names}")
    return PRELUDE + "".join("\n" + render_kernel(k) + "\n" for k in kernels)
