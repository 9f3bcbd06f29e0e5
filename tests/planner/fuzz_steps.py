"""A seeded generator of small random training steps, and the differential check of
``planner.compile(step)`` against the same step run eagerly (tests/planner/test_fuzz_steps.py).

A program is Python source: input and parameter specs, forward lines (``v3 = ...``) drawn
from elementwise ops over float, int and bool values (type promotion with float64 and Python
scalars, comparisons, where, clamp, pow, ``%``, ``//``, ``~``, division by tensors with
zeros), reductions (var/std with a correction, norms, logsumexp, cumsum, sort, topk,
argmax/argmin, any/all), views (split, chunk, tril/triu among them), indexing (gather,
scatter, scatter_add, index_select), products, normalizations, issue 11's layers (conv1d and
conv2d with stride, padding, 'same', dilation and groups; max/avg/adaptive pooling;
BatchNorm1d/2d modules training with running statistics, functional batch_norm; rms_norm,
layer_norm with weight and bias; embeddings with padding_idx; scaled_dot_product_attention
causal or with a bool or float mask; nn.MultiheadAttention; F.pad constant, reflect,
replicate, circular; silu, leaky_relu, softplus, gelu...) and losses (cross_entropy with
ignore_index, label_smoothing, weights, (N, C, d...) inputs and probability targets;
nll_loss, binary_cross_entropy_with_logits with pos_weight, l1, smooth_l1, huber, mse),
in-place writes to intermediates and their views; loss terms; ``zero_grad``, ``backward``
and an optimizer step (SGD with momentum, nesterov, dampening, weight decay; Adam/AdamW with
amsgrad; RMSprop centered or with momentum; Adagrad), an lr_scheduler stepped inside the
step or between calls, clipping and in-place writes to ``.grad`` (and views of it), and what
the step returns. Each line is run as it is drawn, so a program
holds only lines eager mode accepts; the whole step is then run eagerly once more (errors
at backward, such as an in-place write over a saved value, reject the program and the seed
draws another).

``check(program)`` runs the step compiled and eagerly on deep copies of the parameters,
modules, optimizer and schedule, with the same inputs, for a few calls, and compares returned
values (and their requires_grad), parameters, gradients, optimizer state, learning rates and
module buffers (shapes, dtypes, values within a tolerance by dtype); a fallback warning or a
second capture (a changed learning rate must not capture again) is a failure too.
``minimize(program, failure)`` drops lines while the failure keeps its kind; ``render``
prints a program as a script that reproduces it.

``python -m tests.planner.fuzz_steps [first] [count]`` runs seeds and prints each failure
minimized.
"""

from __future__ import annotations

import copy
import dataclasses
import math
import re
import sys
import textwrap
import traceback
import warnings
from dataclasses import dataclass, field
from typing import Any

import numpy as np

import planner
import runtime as rt

F = rt.nn.functional
MAX_NUMEL = 96  # values stay small: programs are many, and sizes are not what is tested
# ... but for one program in five, with axes past a vector's width (16 float32 lanes with
# AVX-512) and its remainder loops
WIDE_SIZES = (1, 7, 17, 33)
WIDE_NUMEL = 2048
MAX_ABS = 1e3  # a float value beyond this is dropped (exp chains would overflow float32)
CALLS = 4  # the first calls may run eagerly (optimizer state made), then capture, replay
DTYPES = {"float32": rt.float32, "float64": rt.float64, "int64": rt.int64, "bool": rt.bool}
# float32 fused kernels sum in another order and use their own exp/log/tanh: a few ulp,
# grown by the backward and the optimizer's division by sqrt(v)
TOLERANCE = {"float32": (2e-4, 2e-5), "float64": (1e-9, 1e-11)}


@dataclass(frozen=True)
class InputSpec:
    """An argument of the step: ``kind`` float/index/mask tensor or a Python float
    ``scalar`` (another value at every call), stored with ``layout`` (plain,
    ``t`` transposed: the array's last two axes swapped, passed as a transpose view;
    ``step``: every other element of a twice longer last axis)."""

    shape: tuple[int, ...]
    dtype: str
    kind: str = "float"
    layout: str = "plain"


@dataclass(frozen=True)
class ParamSpec:
    shape: tuple[int, ...]
    dtype: str


@dataclass
class Program:
    seed: int
    inputs: list[InputSpec]
    params: list[ParamSpec]
    lines: list[str]  # forward statements
    loss_terms: list[str]  # each an expression added to the loss
    optimizer: str  # a constructor call over ``params``
    zero_grad: str  # "none" (no zero_grad: gradients accumulate), "set_to_none", "zeros"
    returns: list[str]  # expressions, the first the loss (a tuple when several)
    calls: int = CALLS
    post: list[str] = field(default_factory=list)  # after backward, before the update
    after: list[str] = field(default_factory=list)  # after the update
    twice: bool = False  # a second backward of the loss (retain_graph), accumulating
    lr_change: float = 1.0  # the learning rate scaled by this before the third call
    # nn modules the step calls (constructor expressions, built in order after
    # rt.manual_seed(seed)), named m0, m1...; their parameters join ``params``
    modules: list[str] = field(default_factory=list)
    # an lr_scheduler over ``opt`` (a constructor expression), stepped after the update
    # inside the step (``schedule_inside``) or by the caller between calls
    schedule: str = ""
    schedule_inside: bool = False
    # every value float64 (no float32, integer or bool one: an integer times a Python float
    # is float32): compared at float64's tolerance
    exact: bool = False

    def pure_float64(self) -> bool:
        """No value but float64 ones anywhere (as the generator saw them)."""
        return self.exact

    def source(self) -> str:
        args = ", ".join(f"x{i}" for i in range(len(self.inputs)))
        body = list(self.lines)
        body.append("loss = " + (" + ".join(self.loss_terms) if self.loss_terms else
                                 "p0.sum() * 0.0"))
        if self.zero_grad == "set_to_none":
            body.append("opt.zero_grad()")
        elif self.zero_grad == "zeros":
            body.append("opt.zero_grad(set_to_none=False)")
        if self.twice:
            body += ["loss.backward(retain_graph=True)", "(loss * 0.5).backward()"]
        else:
            body.append("loss.backward()")
        body += [*self.post, "opt.step()", *self.after]
        if self.schedule and self.schedule_inside:
            body.append("sched.step()")
        ret = ", ".join(self.returns)
        body.append(f"return {ret}" + ("," if len(self.returns) == 1 and
                                       self.returns[0] != "loss.detach()" else ""))
        return f"def step({args}):\n" + textwrap.indent("\n".join(body), "    ") + "\n"


# --- values ------------------------------------------------------------------------------


def input_arrays(program: Program, call: int) -> list[np.ndarray]:
    """The arrays the ``call``-th call passes (fresh values every call, same shapes)."""
    rng = np.random.default_rng([program.seed, call, 7])
    out = []
    for spec in program.inputs:
        if spec.kind == "float":
            a = rng.standard_normal(spec.shape)
            # a few exact zeros: divisions by them, comparisons at ties
            a = np.where(rng.random(spec.shape) < 0.15, 0.0, np.round(a, 2))
            out.append(a.astype(spec.dtype))
        elif spec.kind == "index":
            out.append(rng.integers(-3, 6, spec.shape).astype(np.int64))
        elif spec.kind == "scalar":
            out.append(np.array(round(float(rng.uniform(0.5, 2.0)), 2)))
        else:
            out.append(rng.random(spec.shape) < 0.5)
    return out


def make_input(spec: InputSpec, array: np.ndarray) -> Any:
    if spec.kind == "scalar":
        return float(array)
    if spec.layout == "t":
        return rt.tensor(np.ascontiguousarray(np.swapaxes(array, -1, -2))).transpose(-1, -2)
    if spec.layout == "step":
        wide = np.repeat(array, 2, axis=-1)
        return rt.tensor(wide)[..., ::2]
    return rt.tensor(array)


def make_inputs(program: Program, call: int) -> list[rt.Tensor]:
    return [make_input(s, a) for s, a in
            zip(program.inputs, input_arrays(program, call), strict=True)]


def make_params(program: Program) -> list[rt.Tensor]:
    rng = np.random.default_rng([program.seed, 11])
    return [rt.tensor(rng.uniform(-1.0, 1.0, s.shape).round(3).astype(s.dtype),
                      requires_grad=True) for s in program.params]


def make_modules(constructors: list[str], seed: int) -> list[Any]:
    """The modules, built in order from one seeded generator (their initial weights)."""
    rt.manual_seed(seed)
    return [eval(c, {"rt": rt}) for c in constructors]  # noqa: S307


@dataclass
class World:
    """What a step reads besides its arguments: the parameters (the program's tensors,
    then its modules'), the modules, the optimizer and its schedule."""

    params: list[rt.Tensor]
    modules: list[Any]
    opt: Any
    sched: Any = None

    def namespace(self) -> dict[str, Any]:
        ns: dict[str, Any] = {"rt": rt, "F": F, "opt": self.opt, "params": self.params,
                              "sched": self.sched}
        ns.update({f"p{i}": p for i, p in enumerate(self.params)})
        ns.update({f"m{i}": m for i, m in enumerate(self.modules)})
        return ns


def make_world(program: Program) -> World:
    params = make_params(program)
    modules = make_modules(program.modules, program.seed)
    params += [p for m in modules for p in m.parameters()]
    opt = eval(program.optimizer, {"rt": rt, "params": params})  # noqa: S307
    sched = eval(program.schedule, {"rt": rt, "opt": opt}) if program.schedule else None  # noqa: S307
    return World(params, modules, opt, sched)


def make_step(program: Program, world: World) -> Any:
    ns = world.namespace()
    exec(compile(program.source(), f"<fuzz step {program.seed}>", "exec"), ns)  # noqa: S102
    return ns["step"]


# --- the generator ----------------------------------------------------------------------


def broadcast(a: tuple[int, ...], b: tuple[int, ...]) -> tuple[int, ...] | None:
    try:
        return tuple(np.broadcast_shapes(a, b))
    except ValueError:
        return None


class Generator:
    """Draws one program; every drawn line is run at once on the first call's inputs, and
    kept only if eager mode accepts it and its value stays finite and small."""

    def __init__(self, seed: int, attempt: int) -> None:
        self.seed = seed
        self.rng = np.random.default_rng([seed, attempt])
        self.fdtype = "float64" if self.rng.random() < 0.2 else "float32"
        self.wide = bool(self.rng.random() < 0.2)
        self.max_numel = WIDE_NUMEL if self.wide else MAX_NUMEL
        self.inputs: list[InputSpec] = []
        self.params: list[ParamSpec] = []
        self.values: dict[str, rt.Tensor] = {}  # name -> its value on the first call
        self.side: set[str] = set()  # non-finite values: returned, never computed with
        self.lines: list[str] = []
        self.ns: dict[str, Any] = {"rt": rt, "F": F}
        self.scalars: list[str] = []  # Python float arguments
        # what the grown parts draw from (the arguments' floats, the gradient clipping and
        # writes around the update): a stream of its own, so that adding to them leaves the
        # rest of each seed's program as it was
        self.extra = np.random.default_rng([seed, attempt, 3])
        self.modules: list[str] = []  # constructors of the modules m0, m1...

    # random helpers
    def chance(self, p: float) -> bool:
        return bool(self.rng.random() < p)

    def choice(self, seq: Any) -> Any:
        return seq[int(self.rng.integers(len(seq)))]

    def dim_size(self) -> int:
        if self.wide:
            return int(self.choice(WIDE_SIZES))
        return int(self.choice([0, 1, 1, 2, 2, 3, 3, 4, 4, 5])) if self.chance(0.1) else \
            int(self.choice([1, 2, 3, 4, 5]))

    def shape(self, lo: int = 0, hi: int = 3) -> tuple[int, ...]:
        return tuple(self.dim_size() for _ in range(int(self.rng.integers(lo, hi + 1))))

    # values
    def new_param(self, shape: tuple[int, ...], dtype: str | None = None) -> str:
        spec = ParamSpec(tuple(shape), dtype or self.fdtype)
        name = f"p{len(self.params)}"
        self.params.append(spec)
        rng = np.random.default_rng([self.seed, 11])
        # make_params draws every parameter in order: redraw all to keep the values equal
        arrays = [rng.uniform(-1.0, 1.0, s.shape).round(3).astype(s.dtype)
                  for s in self.params]
        self.ns[name] = rt.tensor(arrays[-1], requires_grad=True)
        self.values[name] = self.ns[name]
        return name

    def new_input(self, spec: InputSpec) -> str:
        name = f"x{len(self.inputs)}"
        self.inputs.append(spec)
        probe = Program(self.seed, self.inputs, [], [], [], "", "none", [])
        arrays = input_arrays(probe, 0)
        self.ns[name] = make_input(spec, arrays[-1])
        if spec.kind == "scalar":
            self.scalars.append(name)
        else:
            self.values[name] = self.ns[name]
        return name

    def pick(self, want: str = "float", ndim: int | None = None, min_ndim: int = 0) -> \
            str | None:
        names = [n for n, v in self.values.items() if n not in self.side
                 and self.kind(v) == want and v.dim() >= min_ndim
                 and (ndim is None or v.dim() == ndim)]
        if not names:
            return None
        # recent values more often: chains rather than a fan of one-op values; the
        # arguments often too (else the parameters drawn after them would crowd them out)
        weights = np.arange(1, len(names) + 1, dtype=float) ** 1.5
        weights[[n.startswith("x") for n in names]] *= 4.0
        return names[int(self.rng.choice(len(names), p=weights / weights.sum()))]

    @staticmethod
    def kind(v: rt.Tensor) -> str:
        if v.dtype in (rt.float32, rt.float64):
            return "float"
        return "bool" if v.dtype == rt.bool else "int"

    def partner(self, a: str, want: str = "float") -> str:
        """A value broadcastable with ``a`` (or a new parameter of a trailing part of its
        shape)."""
        shape = tuple(self.values[a].shape)
        names = [n for n, v in self.values.items() if n not in self.side
                 and self.kind(v) == want and (s := broadcast(shape, tuple(v.shape)))
                 is not None and math.prod(s) <= self.max_numel]
        if names and (want != "float" or self.chance(0.7)):
            return self.choice(names)
        if want != "float":
            return self.scalar(want)
        k = int(self.rng.integers(0, len(shape) + 1))
        tail = tuple(1 if self.chance(0.3) else d for d in shape[len(shape) - k:])
        return self.new_param(tail, self.fdtype if self.chance(0.85) else "float64")

    def scalar(self, want: str = "float") -> str:
        if want == "int":
            return str(int(self.choice([-2, -1, 0, 1, 2, 3])))
        if want == "bool":
            return self.choice(["True", "False"])
        if self.scalars and self.extra.random() < 0.4:
            return str(self.scalars[int(self.extra.integers(len(self.scalars)))])
        return str(self.choice([-1.5, -0.5, 0.25, 0.5, 1.0, 2.0, 3.0]))

    def dim(self, v: str) -> int | None:
        n = self.values[v].dim()
        return None if n == 0 else int(self.rng.integers(-n, n))

    # drawing lines
    def op(self) -> str | None:
        table = [(self.elementwise, 5), (self.binary, 5), (self.mixed, 3), (self.reduction, 3),
                 (self.view, 4), (self.index, 2), (self.product, 2), (self.normalize, 2),
                 (self.inplace, 2), (self.layer, 6), (self.loss_value, 3)]
        w = np.array([t[1] for t in table], float)
        return table[int(self.rng.choice(len(table), p=w / w.sum()))][0]()

    def elementwise(self) -> str | None:
        a = self.pick()
        if a is None:
            return None
        return self.choice([
            f"{a}.exp()", f"{a}.tanh()", f"{a}.sigmoid()", f"{a}.sin()", f"{a}.cos()",
            f"{a}.abs()", f"F.relu({a})", f"-{a}", f"({a}.abs() + 0.5).sqrt()",
            f"({a} * {a} + 1).log()", f"{a}.clamp(min=-0.5, max=0.7)", f"{a}.clamp(min=0.1)",
            f"{a}.clamp(max=0.2)", f"{a}.pow(2)", f"{a} ** 3", f"{a}.pow(-1)",
            f"({a}.abs() + 0.5) ** 1.5", f"2.0 ** {a}", f"{a}.pow(0)", f"{a}.pow(0.5)",
            f"F.gelu({a})", f"F.silu({a})", f"F.leaky_relu({a}, 0.1)", f"{a}.reciprocal()",
            f"({a}.abs() + 0.25).rsqrt()", f"{a}.erf()", f"{a}.floor()", f"{a}.sign()",
            f"{a} * {self.scalar()}", f"{a} + {self.scalar('int')}", f"{self.scalar()} - {a}",
            f"{a} / {self.scalar()}", f"1.5 / ({a}.abs() + 1)", f"{a}.double()",
            f"{a}.float()", f"F.softplus({a})", f"{a}.clamp({self.scalar()}, 1.0)",
            f"rt.where({a} > 0, {a}, 0.0)", f"{a}.round()", f"{a}.log1p()" ,
            f"{a}.expm1()", f"{a}.square()", f"rt.atan2({a}, {a} + 1)"])

    def binary(self) -> str | None:
        a = self.pick()
        if a is None:
            return None
        b = self.partner(a)
        return self.choice([
            f"{a} + {b}", f"{a} - {b}", f"{a} * {b}", f"{a} / {b}", f"rt.maximum({a}, {b})",
            f"rt.minimum({a}, {b})", f"rt.where({a} > {b}, {a}, {b})", f"{a}.clamp(min={b})",
            f"{a}.clamp(max={b})", f"({a}.abs() + 0.5).pow({b})", f"{b}.add({a}, alpha=-2)",
            f"rt.hypot({a}, {b})", f"{a} * {b} + {a}", f"rt.lerp({a}, {b}, 0.3)",
            f"rt.addcmul({a}, {a}, {b}, value=0.5)", f"({a} - {b}).abs()"])

    def mixed(self) -> str | None:
        """int and bool values with floats: promotion, comparisons, masks."""
        a = self.pick()
        i = self.pick("int")
        m = self.pick("bool")
        options = []
        if a is not None:
            b = self.partner(a)
            options += [f"{a} > {b}", f"{a} >= 0.3", f"{a} == {b}", f"{a} != 0",
                        f"{a}.argmax()", f"({a} * 3).long()", f"{a}.to(rt.int64)",
                        f"{a} % 0.7", f"{a} // 0.5", f"{a}.remainder(-0.6)",
                        f"rt.fmod({a}, 0.4)", f"{a}.argmin()"]
        if i is not None:
            j = self.partner(i, "int")
            options += [f"{i} + {j}", f"{i} * 2", f"{i} // 2", f"{i} % 3", f"{i}.clamp(0, 2)",
                        f"{i} ** 2", f"{i} / 2", f"{i} / {j}", f"{i} > 0", f"{i}.float()",
                        f"{i} * 0.5", f"{i}.abs()", f"{i}.sum()", f"-{i}", f"~{i}",
                        f"{i} % -3", f"-{i} // 2", f"({i} > 0).all()", f"{i}.argmax()"]
            if a is not None and broadcast(tuple(self.values[a].shape),
                                           tuple(self.values[i].shape)):
                options += [f"{a} + {i}", f"{a} * {i}", f"{i} - {a}", f"{a} / {i}",
                            f"{a} * {i}.to({a}.dtype)", f"{a}.pow({i}.clamp(0, 3))"]
        if m is not None:
            options += [f"~{m}", f"{m}.float()", f"{m}.sum()", f"{m}.any()", f"{m} & {m}",
                        f"{m}.long() * 3", f"{m}.all()", f"{m}.any(-1)",
                        f"{m}.all(0, keepdim=True)" if self.values[m].dim() else f"{m}.all()",
                        f"{m} | ~{m}", f"{m} ^ {m}"]
            if a is not None and broadcast(tuple(self.values[a].shape),
                                           tuple(self.values[m].shape)):
                b = self.partner(a)
                options += [f"rt.where({m}, {a}, {b})", f"{a} * {m}", f"{a}.masked_fill({m}, 0.5)",
                            f"{a} + {m}", f"rt.where({m}, {a}, 0)"]
        return self.choice(options) if options else None

    def reduction(self) -> str | None:
        a = self.pick()
        if a is None:
            return None
        d, keep = self.dim(a), self.choice(["True", "False"])
        if d is None:
            return self.choice([f"{a}.sum()", f"{a}.mean()", f"{a}.amax()", f"{a}.norm()",
                                f"{a}.logsumexp(0)", f"{a} * 1.0"])
        n = self.values[a].shape[d]
        corr = 1 if n > 1 else 0
        opts = [f"{a}.sum({d}, keepdim={keep})", f"{a}.mean({d}, keepdim={keep})",
                f"{a}.max({d}, keepdim={keep}).values", f"{a}.max({d}).indices",
                f"{a}.amax({d}, keepdim={keep})", f"{a}.amin({d})",
                f"{a}.logsumexp({d}, keepdim={keep})",
                f"{a}.var({d}, keepdim={keep}, correction={corr})",
                f"{a}.std({d}, unbiased={corr == 1})", f"{a}.norm(dim={d}, keepdim={keep})",
                f"{a}.norm(p=1, dim={d})", f"{a}.prod({d})", f"{a}.argmax({d})",
                f"{a}.sum(dtype=rt.float64)", f"{a}.cumsum({d})", f"{a}.sum()",
                f"{a}.mean()", f"{a}.max()", f"{a}.min({d}).values", f"{a}.argmin({d})",
                f"{a}.sort({d}).values", f"{a}.sort({d}, descending=True).indices",
                f"{a}.topk({min(n, 2)}, {d}).values",
                f"{a}.topk(1, {d}, largest=False).indices", f"rt.cumsum({a}, {d})",
                f"{a}.var(correction={corr})", f"{a}.std({d}, correction=0, keepdim={keep})",
                f"rt.logsumexp({a}, ({d},))", f"{a}.norm(p=1.5, dim={d})"]
        if self.values[a].dim() >= 2:
            opts += [f"{a}.sum((0, -1), keepdim={keep})", f"{a}.amax((0, 1))",
                     f"{a}.mean((-1, -2))"]
        return self.choice(opts)

    def view(self) -> str | None:
        a = self.pick()
        if a is None:
            return None
        v = self.values[a]
        shape, n = tuple(v.shape), v.dim()
        opts = [f"{a}.unsqueeze({int(self.rng.integers(-n - 1, n + 1))})", f"{a}.reshape(-1)",
                f"{a}.flatten()", f"{a}.squeeze()", f"{a}.view(-1)", f"{a}.clone()",
                f"{a}.contiguous()", f"{a}.expand(2, *{a}.shape)", f"{a}.detach()"]
        if n >= 1:
            d = self.dim(a)
            size = shape[d]  # type: ignore[index]
            start = int(self.rng.integers(0, max(size, 1)))
            opts += [f"{a}[::2]", f"{a}[1:]", f"{a}[-1]", f"{a}[..., ::2]", f"{a}[..., 1:]",
                     f"{a}.narrow({d}, {start}, {max(size - start - 1, 0)})",
                     f"{a}.flip({d})", f"{a}.roll(1, {d})",
                     f"{a}.expand({', '.join(str(s if s != 1 else 3) for s in shape)})",
                     f"rt.cat([{a}, {a} * 2], {d})", f"rt.stack([{a}, {a}.sin()], {d})",
                     f"{a}.split(1, {d})[0]", f"{a}.chunk(2, {d})[-1]",
                     f"{a}.split([1, {max(size - 1, 0)}], {d})[1]",
                     f"{a}.repeat({', '.join('2' if k == 0 else '1' for k in range(n))})"]
        if n >= 2:
            perm = [int(p) for p in self.rng.permutation(n)]
            opts += [f"{a}.t()" if n == 2 else f"{a}.transpose(0, 1)",
                     f"{a}.transpose(-1, -2)", f"{a}.permute({perm})", f"{a}[:, 1::2]",
                     f"{a}.transpose(0, -1).reshape(-1)", f"{a}.mT.reshape({shape[-2] * shape[-1]}, -1)",
                     f"{a}.transpose(0, 1).contiguous().view(-1)",
                     f"{a}.reshape({', '.join(str(s) for s in reversed(shape))})",
                     f"{a}[1:, ::2]", f"{a}.diagonal()" if n == 2 else f"{a}[0, :, 1:]",
                     f"{a}.unflatten(-1, (1, {shape[-1]}))", f"{a}.tril()", f"{a}.triu(1)",
                     f"rt.tril({a}, -1)", f"{a}.masked_fill(rt.ones({shape[-2]}, {shape[-1]}, "
                     f"dtype=rt.bool).triu(1), float('-inf')).softmax(-1)"]
        return self.choice(opts)

    def index(self) -> str | None:
        a = self.pick(min_ndim=1)
        if a is None:
            return None
        v = self.values[a]
        i = self.pick("int")
        opts = [f"{a}[{a} > 0.1]", f"{a}[[0, -1]]", f"{a}[rt.tensor([1, 0, 1]) % {a}.shape[0]]"]
        if i is not None:
            opts += [f"{a}[{i} % {v.shape[0]}]", f"{a}.index_select(0, {i}.flatten() % "
                     f"{v.shape[0]})" if v.shape[0] else f"{a}[{i} > 0]"]
            if v.dim() >= 2:
                opts += [f"{a}[:, {i} % {v.shape[1]}]" if v.shape[1] else f"{a}[:, :0]"]
        m = self.pick("bool")
        if m is not None and tuple(self.values[m].shape) == tuple(v.shape):
            opts += [f"{a}[{m}]", f"{a}[~{m}].sum()"]
        if v.dim() >= 2:
            d = 1
            idx = f"({a}.detach() * 10).long().abs() % {v.shape[d]}" if v.shape[d] else None
            if idx is not None:
                opts += [f"{a}.gather(1, {idx})", f"{a}.scatter(1, {idx}, {a} * 2)",
                         f"{a}.scatter_add(1, {idx}, {a}.sin())", f"{a}.scatter(1, {idx}, 0.5)",
                         f"{a}.detach().scatter_add(1, {idx}, {a})",
                         f"{a}.index_select(1, {idx}[0])"]
        return self.choice(opts)

    def product(self) -> str | None:
        a = self.pick(min_ndim=1)
        if a is None:
            return None
        shape = tuple(self.values[a].shape)
        k = int(self.choice([1, 2, 3]))
        n = self.values[a].dim()
        opts = [f"{a} @ {self.new_param((shape[-1], k))}",
                f"F.linear({a}, {self.new_param((k, shape[-1]))}, "
                f"{self.new_param((k,)) if self.chance(0.7) else 'None'})",
                f"{a} @ {self.new_param((shape[-1],))}",
                f"rt.einsum('...i,ij->...j', {a}, {self.new_param((shape[-1], k))})"]
        if n == 2:
            opts += [f"{a}.t() @ {a}", f"{a} @ {a}.t()", f"rt.mm({a}, {a}.t())",
                     f"rt.einsum('ij,kj->ik', {a}, {a})", f"rt.einsum('ij->j', {a})",
                     f"{self.new_param((k, shape[0]))} @ {a}",
                     f"rt.addmm({self.new_param((k,))}, {a}, {self.new_param((shape[1], k))})"]
        if n == 3:
            opts += [f"rt.bmm({a}, {a}.transpose(1, 2))",
                     f"rt.bmm({a}, {self.new_param((shape[0], shape[2], k))})",
                     f"rt.einsum('bij,bkj->bik', {a}, {a})"]
        if n == 1:
            opts += [f"rt.dot({a}, {a})", f"rt.outer({a}, {a}.sin())"]
        # new parameters are drawn whether or not the option using them is taken: harmless
        return self.choice(opts)

    def normalize(self) -> str | None:
        a = self.pick(min_ndim=1)
        if a is None:
            return None
        d = self.dim(a)
        last = self.values[a].shape[-1]
        opts = [f"F.softmax({a}, {d})", f"F.log_softmax({a}, {d})", f"{a}.softmax(-1)",
                f"F.layer_norm({a}, ({last},))",
                f"F.layer_norm({a}, ({last},), {self.new_param((last,))}, "
                f"{self.new_param((last,))})", f"F.normalize({a}, dim={d})",
                f"F.mse_loss({a}, {a}.detach().cos())", f"F.mse_loss({a}, {a}.detach().cos(), reduction='sum')"]
        if self.values[a].dim() == 2:
            opts += [f"F.cross_entropy({a}, {a}.detach().argmax(1))",
                     f"F.cross_entropy({a}, {a}.detach().argmin(1), label_smoothing=0.1)",
                     f"F.cross_entropy({a}, {a}.detach().softmax(1), reduction='sum')",
                     f"F.nll_loss(F.log_softmax({a}, 1), {a}.detach().argmax(1))"]
        return self.choice(opts)

    def inplace(self) -> str | None:
        """In-place writes: to a fresh copy, to a view of one, to an existing value."""
        a = self.pick(min_ndim=0)
        if a is None:
            return None
        b = self.partner(a)
        n = self.values[a].dim()
        target = "{out}"
        first = f"{{out}} = {a} * 1.0; " if self.chance(0.8) else f"{{out}} = {a}; "
        write = self.choice([
            f"{target}.mul_(2)", f"{target}.add_({b})", f"{target}.clamp_(min=-0.3)",
            f"{target}.relu_()", f"{target}.masked_fill_({target} > 0.5, 0.0)",
            f"{target}.copy_({b})", f"{target}.sub_({b}, alpha=0.5)", f"{target}.tanh_()",
            f"{target}.div_({b})", f"{target}.pow_(2)", f"{target}.exp_()",
            f"{target}.addcmul_({b}, {b}, value=0.1)", f"{target}.zero_()"]
            + ([f"{target}[0].mul_(0.5)", f"{target}[..., ::2].add_(1.0)",
                f"{target}[-1:].copy_({target}[:1] * 3)", f"{target}.unsqueeze(0).mul_(2)",
                f"{target}.narrow(-1, 0, 1).fill_(0.25)"] if n >= 1 else [])
            + ([f"{target}.t().mul_({b})" if n == 2 else f"{target}.transpose(0, 1).sub_(1)",
                f"{target}[:, 1::2].mul_({target}[:, :1])",
                f"{target}.diagonal().add_(5)" if n == 2 else f"{target}[0, 0].fill_(1)"]
               if n >= 2 else []))
        return first + write

    def new_module(self, constructor: str) -> str:
        """A module the step calls, built as make_modules builds it (same initial weights)."""
        name = f"m{len(self.modules)}"
        self.modules.append(constructor)
        self.ns[name] = make_modules(self.modules, self.seed)[-1]
        return name

    def layer(self) -> str | None:
        """issue 11's layers: convolutions (stride, padding, 'same', dilation, groups),
        pooling, batch norm in training (modules with running statistics, or functional),
        RMS and layer norms, attention (causal, bool and float masks; MultiheadAttention),
        padding, embeddings."""
        a = self.pick(min_ndim=1)
        if a is None:
            return None
        shape = tuple(self.values[a].shape)
        n, last = len(shape), shape[-1]
        opts: list[Any] = [
            lambda: f"F.rms_norm({a}, ({last},), {self.new_param((last,))}, eps=1e-3)",
            lambda: f"F.rms_norm({a}, ({last},))",
            lambda: f"F.layer_norm({a}, ({last},), {self.new_param((last,))}, None, 1e-3)",
            lambda: f"F.pad({a}, ({self.choice([0, 1, 2])}, 1), value={self.scalar()})",
            lambda: f"F.pad({a}, (1, {self.choice([0, 1])}), mode="
                    f"'{self.choice(['reflect', 'replicate', 'circular'])}')",
            lambda: f"F.hardtanh({a}, -0.5, 0.5)", lambda: f"F.elu({a})",
            lambda: f"F.leaky_relu({a}, {self.choice([0.01, 0.2])})",
            lambda: f"F.softplus({a}, beta=2.0, threshold=1.0)",
            lambda: f"F.gelu({a}, approximate='tanh')", lambda: f"F.silu({a})"]
        i = self.pick("int")
        if i is not None:
            d = int(self.choice([1, 2, 3]))
            opts += [lambda: f"F.embedding({i}.clamp(0, 3), {self.new_param((4, d))}, "
                             f"padding_idx={self.choice([0, 2, -1])})",
                     lambda: f"{self.new_module(f'rt.nn.Embedding(5, {d}, padding_idx=1)')}"
                             f"({i}.clamp(0, 4))"]
        if n >= 2:
            c = shape[-2]
            g = int(self.choice([1, c])) if c > 1 else 1
            k = int(self.choice([1, 2, 3]))
            opts += [
                lambda: f"F.conv1d({a}, {self.new_param((g * int(self.choice([1, 2])), c // g, k))}, "
                        f"{self.new_param((g,)) if g == 1 and self.chance(0.5) else 'None'}, "
                        f"stride={self.choice([1, 2])}, padding={self.choice([0, 1])}, "
                        f"dilation={self.choice([1, 2])}, groups={g})",
                lambda: f"F.conv1d({a}, {self.new_param((2, c, k))}, padding='same', "
                        f"dilation={self.choice([1, 2])})",
                lambda: f"F.scaled_dot_product_attention({a}, {a} * 0.5, {a}.sin(), "
                        f"is_causal=True)",
                lambda: f"F.scaled_dot_product_attention({a}, {a}.cos(), {a}, attn_mask="
                        f"rt.ones({c}, {c}, dtype=rt.bool).tril({self.choice([0, -1, 1])}))",
                lambda: f"F.scaled_dot_product_attention({a}.sin(), {a}, {a}, attn_mask="
                        f"{self.new_param((c, c))}, scale=0.5)",
                lambda: f"{self.new_module(f'rt.nn.BatchNorm1d({last}, momentum={self.choice([0.1, 0.5, None])})')}"
                        f"({a}.reshape(-1, {last}))",
                lambda: f"F.batch_norm({a}.reshape(-1, {last}), None, None, training=True)",
                lambda: f"F.layer_norm({a}, ({c}, {last}), {self.new_param((c, last))}, "
                        f"{self.new_param((c, last))})"]
        if n == 1:
            opts += [lambda: f"F.conv1d({a}.reshape(1, 1, -1), {self.new_param((2, 1, 2))}, "
                             f"padding={self.choice([0, 1, 'same'])})",
                     lambda: f"F.max_pool1d({a}.unsqueeze(0), 2, ceil_mode=True)"]
        if n == 2:
            rows, cols = shape
            opts += [
                lambda: f"F.conv2d({a}.unsqueeze(0), {self.new_param((2, 1, 2, 2))}, "
                        f"padding={self.choice([0, 1, 'same'])}, stride={self.choice([1, 2])})",
                lambda: f"F.max_pool2d({a}.unsqueeze(0), {self.choice([1, 2])}, "
                        f"padding={self.choice([0, 1])}, stride={self.choice([1, 2])})",
                lambda: f"F.avg_pool2d({a}.unsqueeze(0), 2, ceil_mode=True)",
                lambda: f"{self.new_module(f'rt.nn.BatchNorm1d({cols})')}({a})"]
            if cols % 2 == 0 and cols:  # (an embed_dim of 0 is PyTorch's ValueError)
                opts += [lambda: f"{self.new_module(f'rt.nn.MultiheadAttention({cols}, 2)')}"
                                 f"({a}, {a}, {a}, need_weights=False)[0]"]
        if n == 3:
            ch, h, w = shape
            kk = int(self.choice([1, 2, 3]))
            ss = int(self.choice([1, 2]))
            opts += [
                lambda: f"F.conv2d({a}, {self.new_param((2, ch, kk, int(self.choice([1, 2]))))}, "
                        f"{self.new_param((2,)) if self.chance(0.5) else 'None'}, stride={ss}, "
                        f"padding={self.choice([0, 1, (1, 0)])}, dilation={self.choice([1, 2])})",
                lambda: f"F.conv2d({a}.unsqueeze(0), {self.new_param((ch, 1, kk, kk))}, "
                        f"groups={ch}, padding='same')",
                lambda: f"F.max_pool2d({a}, {kk}, stride={ss}, padding={kk // 2}, "
                        f"ceil_mode={self.choice([False, True])})",
                lambda: f"F.avg_pool2d({a}, {kk}, stride={ss}, padding={kk // 2}, "
                        f"count_include_pad={self.choice([False, True])})",
                lambda: f"F.adaptive_avg_pool2d({a}, ({self.choice([1, 2])}, "
                        f"{self.choice([1, 3])}))",
                lambda: f"{self.new_module(f'rt.nn.BatchNorm2d({ch})')}({a}.unsqueeze(0))",
                lambda: f"{self.new_module(f'rt.nn.BatchNorm1d({h})')}({a})",
                lambda: f"F.pad({a}, (1, 1, {self.choice([0, 1])}, 1), mode="
                        f"'{self.choice(['reflect', 'replicate', 'constant'])}')"]
            if w % 2 == 0:
                heads = int(self.choice([1, 2]))
                opts += [
                    lambda: f"{self.new_module(f'rt.nn.MultiheadAttention({w}, {heads}, batch_first=True)')}"
                            f"({a}, {a}, {a}, need_weights=False)[0]",
                    lambda: f"{self.new_module(f'rt.nn.MultiheadAttention({w}, {heads}, batch_first=True)')}"
                            f"({a}, {a}.sin(), {a}, attn_mask=rt.ones({h}, {h}, dtype=rt.bool)"
                            f".triu(1))[{self.choice([0, 1])}]"]
        return self.choice(opts)()

    def loss_value(self) -> str | None:
        """issue 11's losses, as values (later lines and the loss may use them)."""
        a = self.pick(min_ndim=1)
        if a is None:
            return None
        shape = tuple(self.values[a].shape)
        last = shape[-1]
        red = self.choice(["'mean'", "'sum'", "'none'"])
        target = f"{a}.detach().cos()"
        opts = [f"F.l1_loss({a}, {target}, reduction={red})",
                f"F.smooth_l1_loss({a}, {target}, beta={self.choice([0.0, 0.5, 1.0])})",
                f"F.huber_loss({a}, {target}, delta={self.choice([0.5, 1.0, 2.0])})",
                f"F.mse_loss({a}, {target}, reduction={red})",
                f"F.binary_cross_entropy_with_logits({a}, ({a}.detach() > 0).to({a}.dtype))",
                f"F.binary_cross_entropy_with_logits({a}, {a}.detach().sigmoid(), "
                f"pos_weight=rt.full(({last},), 2.0, dtype={a}.dtype), reduction={red})",
                f"F.binary_cross_entropy_with_logits({a}, ({a}.detach() > 0.2).to({a}.dtype), "
                f"weight={a}.detach().abs())"]
        if len(shape) >= 2:
            c = shape[1]
            picked = f"{a}.detach().argmax(1)"
            ignored = f"rt.where({a}.detach().sum(1) > 0, {picked}, {self.choice([-100, 0])})"
            opts += [f"F.cross_entropy({a}, {picked}, label_smoothing={self.choice([0.0, 0.1])})",
                     f"F.cross_entropy({a}, {ignored}, ignore_index={ignored.rsplit(', ', 1)[1][:-1]}, "
                     f"label_smoothing={self.choice([0.0, 0.2])}, reduction={red})",
                     f"F.cross_entropy({a}, {a}.detach().mul(2).softmax(1), "
                     f"label_smoothing={self.choice([0.0, 0.1])})",
                     f"F.nll_loss(F.log_softmax({a}, 1), {ignored}, ignore_index="
                     f"{ignored.rsplit(', ', 1)[1][:-1]}, reduction={red})",
                     f"F.cross_entropy({a}, {picked}, weight=rt.linspace(0.5, 1.5, {c}, "
                     f"dtype={a}.dtype))"]
        return self.choice(opts)

    def run_line(self, name: str, expr: str) -> bool:
        stmt = expr.format(out=name) if "{out}" in expr else f"{name} = {expr}"
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("error")
                exec(stmt, self.ns)  # noqa: S102
        except Exception:  # noqa: BLE001  (eager refused the line: draw another)
            self.ns.pop(name, None)
            return False
        v = self.ns.get(name)
        if not isinstance(v, rt.Tensor) or v.numel() > self.max_numel:
            self.ns.pop(name, None)
            return False
        self.values[name] = v
        if self.kind(v) == "float":
            data = v.detach().numpy()
            if not np.all(np.isfinite(data)):
                self.side.add(name)
            elif data.size and np.abs(data).max() > MAX_ABS:
                del self.values[name]
                return False
        self.lines.append(stmt)
        return True

    def draw(self) -> Program:
        n_float = int(self.rng.integers(1, 4))
        for _ in range(n_float):
            shape = self.shape(0, 3)
            layout = "plain"
            if len(shape) >= 2 and self.chance(0.3):
                layout = "t"
            elif shape and self.chance(0.15):
                layout = "step"
            dtype = self.fdtype if self.chance(0.85) else "float64"
            self.new_input(InputSpec(shape, dtype, "float", layout))
        base = tuple(self.inputs[0].shape)
        if self.chance(0.4):
            self.new_input(InputSpec(base if self.chance(0.6) else self.shape(1, 2), "int64",
                                     "index"))
        if self.chance(0.3):
            self.new_input(InputSpec(base, "bool", "mask"))
        for _ in range(int(self.rng.integers(1, 3))):
            k = int(self.rng.integers(0, len(base) + 1))
            self.new_param(base[len(base) - k:])
        if self.extra.random() < 0.3:
            self.new_input(InputSpec((), "float64", "scalar"))
        for n_line in range(int(self.rng.integers(3, 11))):
            for _ in range(20):
                op = self.op()
                if op is not None and self.run_line(f"v{n_line}", op):
                    break
        made = [n for n in self.values if n.startswith("v")]
        grads = [n for n in made if n not in self.side and self.values[n].requires_grad
                 and self.kind(self.values[n]) == "float"]
        terms = []
        for n in self.rng.permutation(grads)[:3] if grads else []:
            terms.append(self.choice([f"{n}.sum()", f"{n}.mean()", f"({n} ** 2).mean()",
                                      f"{n}.sum() * 0.5", f"F.mse_loss({n}, {n}.detach() * 0.5)"
                                      ]))
        held = int(self.rng.integers(len(self.params)))  # a parameter sure to have a .grad
        terms.append(f"p{held}.square().sum() * 0.01")
        returns = ["loss.detach()" if self.chance(0.7) else "loss"]
        if self.chance(0.4) and made:
            for n in self.rng.permutation(made)[:2]:
                returns.append(f"{n}.detach()" if self.chance(0.7) else str(n))
        program = Program(self.seed, list(self.inputs), list(self.params), list(self.lines),
                          [str(t) for t in terms], self.optimizer(),
                          self.choice(["set_to_none", "set_to_none", "zeros", "none"]), returns,
                          modules=list(self.modules))
        self.schedule(program)
        program.exact = all(v.dtype == rt.float64 for v in self.values.values())
        return self.around_update(program, held)

    def schedule(self, program: Program) -> None:
        """An lr_scheduler over the optimizer, stepped inside the step or between calls: a
        changed learning rate (and OneCycleLR's momentum or betas) must replay without a
        new capture."""
        x = self.extra
        if x.random() >= 0.3:
            return
        cycle = "SGD" in program.optimizer and "momentum=0.0" not in program.optimizer \
            or "Adam" in program.optimizer
        program.schedule = str(x.choice([
            "rt.optim.lr_scheduler.StepLR(opt, step_size=1, gamma=0.5)",
            "rt.optim.lr_scheduler.MultiStepLR(opt, [1, 3], gamma=0.3)",
            "rt.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=3, eta_min=0.001)",
            "rt.optim.lr_scheduler.LambdaLR(opt, lambda e: 1.0 / (e + 1))",
            "rt.optim.lr_scheduler.LinearLR(opt, start_factor=0.5, total_iters=2)",
            "rt.optim.lr_scheduler.ExponentialLR(opt, 0.8)",
            f"rt.optim.lr_scheduler.OneCycleLR(opt, max_lr=0.1, total_steps=10, "
            f"cycle_momentum={cycle})"]))
        program.schedule_inside = bool(x.random() < 0.5)

    def around_update(self, program: Program, held: int) -> Program:
        """Gradient clipping and scaling between backward and the update, writes to a
        parameter after it, and gradients and parameters returned."""
        x = self.extra
        p = f"p{held}"
        s = self.scalars[0] if self.scalars else "0.5"
        post = ["rt.nn.utils.clip_grad_norm_(params, 0.5)",
                "rt.nn.utils.clip_grad_value_(params, 0.05)",
                f"{p}.grad.mul_({s})", f"{p}.grad.clamp_(-0.1, 0.1)",
                f"{p}.grad = {p}.grad * 2", f"{p}.grad.add_({p}.detach(), alpha=0.1)",
                f"{p}.grad[..., :1].mul_(0.5)" if program.params[held].shape
                else f"{p}.grad.mul_(0.5)",
                f"{p}.grad.t().mul_(0.5)" if len(program.params[held].shape) == 2
                else f"{p}.grad.unsqueeze(0).clamp_(-0.2, 0.2)"]
        after = [f"with rt.no_grad(): {p}.mul_(0.99)", f"with rt.no_grad(): {p}.clamp_(-1, 1)",
                 f"with rt.no_grad(): {p}.add_({s})",
                 f"with rt.no_grad(): {p}[..., :1].zero_()" if program.params[held].shape
                 else f"with rt.no_grad(): {p}.fill_(0.5)"]
        returned = [f"{p}.grad.clone()", f"{p}.grad", f"{p}.detach().clone()",
                    f"{p}.grad.norm()", f"{p}.detach()"]
        if x.random() < 0.3:
            program.post = [post[int(i)] for i in x.permutation(len(post))[:2]]
        if x.random() < 0.2:
            program.after = [after[int(x.integers(len(after)))]]
        if x.random() < 0.2:
            program.returns = [*program.returns, returned[int(x.integers(len(returned)))]]
        program.twice = bool(x.random() < 0.15)
        program.lr_change = float(x.choice([0.5, 2.0])) if x.random() < 0.2 else 1.0
        return program

    def optimizer(self) -> str:
        kind = self.choice(["SGD", "SGD", "Adam", "AdamW", "RMSprop", "Adagrad"])
        lr = self.choice([0.01, 0.05, 0.1])
        if kind == "RMSprop":
            args = [f"lr={lr}", f"alpha={self.choice([0.9, 0.99])}", "eps=1e-3"]
            if self.chance(0.4):
                args.append("centered=True")
            if self.chance(0.4):
                args.append(f"momentum={self.choice([0.5, 0.9])}")
            if self.chance(0.3):
                args.append("weight_decay=0.01")
        elif kind == "Adagrad":
            args = [f"lr={lr}", "eps=1e-3"]
            if self.chance(0.3):
                args.append("lr_decay=0.1")
            if self.chance(0.3):
                args.append("initial_accumulator_value=0.1")
            if self.chance(0.3):
                args.append("weight_decay=0.01")
        elif kind == "SGD":
            momentum = self.choice([0.0, 0.0, 0.9, 0.5])
            args = [f"lr={lr}", f"momentum={momentum}"]
            if momentum and self.chance(0.3):
                args.append("nesterov=True")
            elif momentum and self.chance(0.3):
                args.append("dampening=0.1")
            if self.chance(0.3):
                args.append(f"weight_decay={self.choice([0.01, 0.1])}")
            if self.chance(0.15):
                args.append("maximize=True")
        else:
            args = [f"lr={lr}"]
            if self.chance(0.4):
                args.append(f"betas=({self.choice([0.8, 0.9])}, {self.choice([0.99, 0.999])})")
            # eps well above float32's rounding of the gradients: an update m / sqrt(v) of a
            # gradient that is zero but for rounding would be +-lr either way (a parameter
            # that only scales what a normalization divides out)
            args.append(f"eps={self.choice([1e-3, 1e-2])}")
            if self.chance(0.4):
                args.append(f"weight_decay={self.choice([0.0, 0.01, 0.1])}")
            if self.chance(0.3):
                args.append("amsgrad=True")
            if self.chance(0.1):
                args.append("maximize=True")
        if self.chance(0.2) and len(self.params) > 1:
            return (f"rt.optim.{kind}([{{'params': params[:1], 'lr': {lr / 2}}}, "
                    f"{{'params': params[1:]}}], {', '.join(args)})")
        return f"rt.optim.{kind}(params, {', '.join(args)})"


def between_calls(program: Program, call: int, *worlds: World) -> None:
    """What the caller changes before the ``call``-th call: the learning rate (by hand, or
    its schedule stepped)."""
    for world in worlds:
        if call == 2 and program.lr_change != 1.0:
            for group in world.opt.param_groups:
                group["lr"] *= program.lr_change
        if call and world.sched is not None and not program.schedule_inside:
            world.sched.step()


def eager_runs(program: Program) -> bool:
    """The whole step runs eagerly, with no warning, for every call."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            world = make_world(program)
            step = make_step(program, world)
            for call in range(program.calls):
                between_calls(program, call, world)
                step(*make_inputs(program, call))
    except Exception:  # noqa: BLE001
        return False
    return True


def generate(seed: int) -> Program:
    """The program of ``seed``: the first draw that runs eagerly."""
    for attempt in range(50):
        program = Generator(seed, attempt).draw()
        if eager_runs(program):
            return program
    raise AssertionError(f"seed {seed}: no program drawn runs eagerly")


# --- the differential check -------------------------------------------------------------


@dataclass
class Failure:
    # "mismatch" (a silent wrong result), "crash", "fallback", "requires_grad" (a returned
    # tensor's flag differs), "recompile" (a second capture: the plan did not fit a call)
    kind: str
    detail: str
    call: int = 0

    def __str__(self) -> str:
        return f"{self.kind} at call {self.call}: {self.detail}"


def compare(got: Any, want: Any, what: str, wide: bool = False, flags: bool = False,
            ref: Any = None) -> str | None:
    """Why ``got`` differs from ``want`` (None when they agree). ``wide``: float64 values
    within float32's tolerance (they were computed from float32 ones); ``flags``: tensors'
    requires_grad compared too; ``ref``: the same values from the step run eagerly in
    float64, a gauge of float32 eager's own rounding error (a gradient that is zero but for
    rounding, divided by a layer norm's tiny deviation), which a difference may reach 8
    times over."""
    if isinstance(want, (tuple, list)):
        if type(got) is not type(want) or len(got) != len(want):
            return f"{what}: {type(got).__name__} of {len(got) if hasattr(got, '__len__') else '?'}" \
                   f" vs {type(want).__name__} of {len(want)}"
        refs = ref if isinstance(ref, (tuple, list)) and len(ref) == len(want) else \
            [None] * len(want)
        for i, (g, w, r) in enumerate(zip(got, want, refs, strict=True)):
            if (why := compare(g, w, f"{what}[{i}]", wide, flags, r)) is not None:
                return why
        return None
    if isinstance(want, dict):
        if not isinstance(got, dict) or got.keys() != want.keys():
            return f"{what}: keys {sorted(got) if isinstance(got, dict) else got} vs {sorted(want)}"
        for k in want:
            r = ref.get(k) if isinstance(ref, dict) else None
            if (why := compare(got[k], want[k], f"{what}[{k!r}]", wide, flags, r)) is not None:
                return why
        return None
    if want is None or got is None:
        return None if got is None and want is None else f"{what}: {got!r} vs {want!r}"
    if isinstance(want, rt.Tensor):
        if not isinstance(got, rt.Tensor):
            return f"{what}: {type(got).__name__} vs Tensor"
        if tuple(got.shape) != tuple(want.shape) or got.dtype != want.dtype:
            return f"{what}: {tuple(got.shape)} {got.dtype} vs {tuple(want.shape)} {want.dtype}"
        if flags and got.requires_grad != want.requires_grad:
            return f"{what}: requires_grad {got.requires_grad} vs {want.requires_grad}"
        g, w = got.detach().numpy(), want.detach().numpy()
        name = "float32" if wide and w.dtype == np.float64 else str(w.dtype)
        if name in TOLERANCE:
            rtol, atol = TOLERANCE[name]
            scale = float(np.abs(w[np.isfinite(w)]).max()) if np.isfinite(w).any() else 0.0
            bound = atol * max(scale, 1.0)
            if isinstance(ref, rt.Tensor) and tuple(ref.shape) == w.shape:
                off = np.abs(w.astype(np.float64) - ref.detach().numpy().astype(np.float64))
                bound = bound + 8 * np.where(np.isfinite(off), off, 0.0)
            ok = np.isclose(g, w, rtol=rtol, atol=0.0, equal_nan=True) | \
                (np.abs(g.astype(np.float64) - w) <= bound)
        else:
            ok = g == w
        if not np.all(ok):
            bad = np.argwhere(~np.asarray(ok))[:3].tolist()
            return f"{what}: differs at {bad}: {g[~ok][:3]} vs {w[~ok][:3]}"
        return None
    if type(got) is not type(want) or got != want:
        return f"{what}: {got!r} vs {want!r}"
    return None


def state(world: World) -> dict[str, Any]:
    params, opt = world.params, world.opt
    return {"params": [p.detach() for p in params], "grads": [p.grad for p in params],
            "opt": [dict(opt.state.get(p, {})) for p in params],
            "lr": [g["lr"] for g in opt.param_groups],
            "buffers": [b for m in world.modules for b in m.buffers()]}


def as_float64(program: Program) -> Program:
    """The program with every float32 argument, parameter and cast float64."""
    def f64(spec: Any) -> Any:
        return dataclasses.replace(spec, dtype="float64") if spec.dtype == "float32" else spec

    return dataclasses.replace(
        program, inputs=[f64(s) for s in program.inputs], params=[f64(s) for s in program.params],
        lines=[line.replace(".float()", ".double()").replace("rt.float32", "rt.float64")
               for line in program.lines])


class Gauge:
    """The step run eagerly in float64 beside the float32 one (None where it fails)."""

    def __init__(self, program: Program) -> None:
        self.program = as_float64(program)
        self.world = make_world(self.program)
        for m in self.world.modules:
            m.double()
        self.step: Any = make_step(self.program, self.world)

    def call(self, call: int) -> tuple[Any, Any]:
        if self.step is None:
            return None, None
        between_calls(self.program, call, self.world)
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                result = self.step(*make_inputs(self.program, call))
        except Exception:  # noqa: BLE001  (an index drawn another way in float64, say)
            self.step = None
            return None, None
        return result, state(self.world)


def check(program: Program, backend: str = "auto") -> Failure | None:
    """Run the step compiled and eagerly, side by side; the first difference found."""
    world_e = make_world(program)
    world_c = copy.deepcopy(world_e)
    eager = make_step(program, world_e)
    compiled = planner.compile(make_step(program, world_c), backend=backend)
    wide = not program.pure_float64()
    gauge = Gauge(program) if wide else None
    for call in range(program.calls):
        between_calls(program, call, world_e, world_c)
        want = eager(*make_inputs(program, call))
        exact, exact_state = gauge.call(call) if gauge is not None else (None, None)
        try:
            with warnings.catch_warnings(record=True) as seen:
                warnings.simplefilter("always")
                got = compiled(*make_inputs(program, call))
        except Exception as e:  # noqa: BLE001
            return Failure("crash", f"{type(e).__name__}: {e}\n{traceback.format_exc(limit=-4)}",
                           call)
        gauged = False
        for what, g, w, r in (("returned", got, want, exact),
                              ("state", state(world_c), state(world_e),
                               exact_state)):
            if compare(g, w, what, wide) is None:
                continue
            if (why := compare(g, w, what, wide, ref=r)) is not None:
                return Failure("mismatch", why, call)
            gauged = True
        if (why := compare(got, want, "returned", wide, flags=True)) is not None:
            return Failure("requires_grad", why, call)
        eagerly = [str(w.message) for w in seen if "eager" in str(w.message)]
        if eagerly:
            return Failure("fallback", eagerly[0], call)
        # a learning rate changed (by a schedule) must not capture again; a float argument
        # met with a second value may (once, an input of the plan from then on; at every
        # call where the step reads it as a number, as torch.compile specializes floats)
        if compiled.captures > 1 and not any(s.kind == "scalar" for s in program.inputs):
            return Failure("recompile", f"{compiled.captures} captures", call)
        if gauged:
            # within float32 eager's own error only: the runs part ways from here (an
            # update of a gradient that is rounding noise), their later calls not comparable
            break
    return None


# --- minimizing and reporting -----------------------------------------------------------


def still_fails(program: Program, kind: str, pattern: str | None) -> bool:
    if not eager_runs(program):
        return False
    failure = check(program)
    return failure is not None and failure.kind == kind and \
        (pattern is None or re.search(pattern, failure.detail) is not None)


def minimize(program: Program, failure: Failure) -> Program:
    """Drop lines, loss terms and returned values, and simplify the optimizer, while the
    step still fails the same way (for a fallback or crash, with the same first line of
    its message)."""
    pattern = None
    if failure.kind != "mismatch":
        pattern = re.escape(failure.detail.splitlines()[0][:60])
    p = program
    for name, simpler in (("optimizer", "rt.optim.SGD(params, lr=0.1)"),
                          ("zero_grad", "set_to_none"), ("twice", False), ("lr_change", 1.0),
                          ("schedule", "")):
        q = dataclasses.replace(p, **{name: simpler})
        if still_fails(q, failure.kind, pattern):
            p = q
    changed = True
    while changed:
        changed = False
        for attr in ("lines", "post", "after", "loss_terms", "returns"):
            items = getattr(p, attr)
            i = len(items) - 1
            while i >= 0:
                if attr == "returns" and i == 0:
                    break
                q = dataclasses.replace(p, **{attr: items[:i] + items[i + 1:]})
                if still_fails(q, failure.kind, pattern):
                    p, items, changed = q, getattr(q, attr), True
                i -= 1
    return p


def render(program: Program) -> str:
    """A script that reproduces ``program``'s check."""
    fields = ", ".join(f"{f.name}={getattr(program, f.name)!r}"
                       for f in dataclasses.fields(program))
    return (f"# step:\n{textwrap.indent(program.source(), '#   ')}"
            f"from tests.planner.fuzz_steps import *\n"
            f"print(check(Program({fields})))\n")


# fallbacks to eager mode, with a warning, by design: a mask's values decide the shape; an
# in-place op that records history on an argument; a view read after its base was updated
BY_DESIGN = ("indexing with a bool mask tensor reads its values",
             "recording history on a tensor from outside the step",
             "a view is read after its base was written in place")


def by_design(failure: Failure) -> bool:
    """Whether ``failure`` is a fallback that is the design (BY_DESIGN), not a bug."""
    return failure.kind == "fallback" and any(why in failure.detail for why in BY_DESIGN)


def main(argv: list[str]) -> None:
    first = int(argv[0]) if argv else 0
    count = int(argv[1]) if len(argv) > 1 else 100
    kinds: dict[str, list[int]] = {}
    for seed in range(first, first + count):
        program = generate(seed)
        failure = check(program)
        if failure is None or by_design(failure):
            continue
        kinds.setdefault(failure.kind, []).append(seed)
        small = minimize(program, failure)
        print(f"=== seed {seed}: {failure.kind}\n{check(small) or failure}\n{render(small)}",
              flush=True)
    print({k: v for k, v in kinds.items()})


if __name__ == "__main__":
    main(sys.argv[1:])


__all__ = ["BY_DESIGN", "Failure", "InputSpec", "ParamSpec", "Program", "by_design", "check",
           "generate", "minimize", "render"]
