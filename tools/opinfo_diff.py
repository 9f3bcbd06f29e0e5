"""Differential check of the runtime and the planner against PyTorch on PyTorch's own
OpInfo sample inputs (``torch.testing._internal.common_methods_invocations.op_db``).

Eager mode (the default): each sample is run through torch and through rt (the same op
by name, a Tensor method where the OpInfo's op is one, an OpInfo's lambda with ``torch``
bound to rt), and the results are compared: values (float tolerance, exact otherwise),
dtypes, shapes, which side raised; float64 samples also compare their gradients. Random
ops compare shapes and dtypes only.

``--compiled``: each sample's step (the op, and with ``--grad`` its gradients) is run by
``planner.compile`` and eagerly, on the same inputs (the capture and a replay) and on new
values (a replay), with the same seed; a planner warning (a fallback) is reported apart.

Needs torch and expecttest (``pip install expecttest``); a development tool, not a test:
    python tools/opinfo_diff.py [--compiled] [--grad] [--dtypes float32,int64] [op ...]
(op names are prefixes: ``nn.functional.`` checks every functional op).
"""

from __future__ import annotations

import argparse
import collections
import math
import types
import warnings
from typing import Any

import numpy as np
import torch
from torch.testing._internal.common_methods_invocations import op_db

import planner
import runtime as rt

DTYPES = {torch.float32: rt.float32, torch.float64: rt.float64, torch.int64: rt.int64,
          torch.int32: rt.int32, torch.bool: rt.bool, torch.float16: rt.float16,
          torch.bfloat16: rt.bfloat16, torch.uint8: rt.uint8, torch.int8: rt.int8,
          torch.int16: rt.int16}
RANDOM = ("rand", "normal", "bernoulli", "multinomial", "uniform", "dropout", "exponential",
          "geometric", "cauchy", "log_normal", "poisson", "empty", "fractional_max_pool")
SKIPPED = ("linalg", "fft", "sparse", "_refs", "jiterator")


class Skip(Exception):
    """A sample this tool cannot carry over (complex, sparse, a generator, a callable)."""


def to_rt(x: Any) -> Any:
    """A torch sample's argument as rt's: tensors with their strides and storage offset."""
    if isinstance(x, torch.Tensor):
        if x.is_complex() or x.layout != torch.strided or x.dtype not in DTYPES:
            raise Skip("tensor kind")
        if x.dtype == torch.bfloat16:
            t = rt.tensor(x.detach().float().numpy()).to(rt.bfloat16)
        elif x.is_contiguous() or not x.numel():
            t = rt.from_numpy(x.detach().numpy().copy())
        else:  # the same strides over a storage of its own
            size = x.untyped_storage().nbytes() // x.element_size()
            store = np.zeros(size, dtype=x.detach().numpy().dtype)
            view = np.lib.stride_tricks.as_strided(
                store[x.storage_offset():], x.shape, [s * x.element_size() for s in x.stride()])
            view[...] = x.detach().numpy()
            t = rt.from_numpy(store).as_strided(tuple(x.shape), tuple(x.stride()),
                                                x.storage_offset())
        return t.requires_grad_(x.requires_grad)
    if isinstance(x, torch.dtype):
        if x not in DTYPES:
            raise Skip("dtype")
        return DTYPES[x]
    if isinstance(x, torch.Size):
        return tuple(x)
    if isinstance(x, torch.device):
        return rt.device(str(x))
    if isinstance(x, (torch.memory_format, torch.Generator)):
        raise Skip(type(x).__name__)
    if isinstance(x, (list, tuple)):
        items = [to_rt(v) for v in x]
        return type(x)(items) if type(x) in (list, tuple) else tuple(items)
    if isinstance(x, dict):
        return {k: to_rt(v) for k, v in x.items()}
    if callable(x) and not isinstance(x, type):
        raise Skip("callable")
    return x


def to_torch(x: Any) -> Any:
    if isinstance(x, rt.Tensor):
        if x.dtype == rt.bfloat16:
            return torch.from_numpy(x.detach().float().numpy().copy()).to(torch.bfloat16)
        return torch.from_numpy(np.array(x.detach().numpy()))
    if isinstance(x, (list, tuple)):
        return [to_torch(v) for v in x]
    return x


def resolve(op: Any) -> Any:
    """rt's function for the OpInfo ``op``: its lambda with torch bound to rt, the Tensor
    method of that name, or the function at its dotted name; None where rt has none."""
    f = op.op
    if isinstance(f, types.FunctionType) and f.__name__ == "<lambda>":
        bound = {**f.__globals__, "torch": rt, "F": rt.nn.functional}
        return types.FunctionType(f.__code__, bound, f.__name__, f.__defaults__, f.__closure__)
    qual = getattr(f, "__qualname__", "")
    last = op.name.split(".")[-1]
    if getattr(torch.Tensor, last, None) is f or qual.startswith(("TensorBase.", "Tensor.")):
        method = getattr(rt.Tensor, getattr(f, "__name__", last), None)
        if method is not None:
            return method
    obj: Any = rt
    for part in op.name.split("."):
        obj = getattr(obj, part, None)
        if obj is None:
            return None
    return obj


def compare(want: Any, got: Any, path: str = "out", meta_only: bool = False,
            exact: bool = False, tol: float | None = None) -> str | None:
    """What differs between torch's result ``want`` and rt's ``got`` (None: nothing);
    ``exact``: floats too must be equal, bit for bit up to a nan's payload; ``tol``: the
    relative and absolute tolerance of floats (by default the dtype's)."""
    if isinstance(want, torch.Tensor):
        if not isinstance(got, rt.Tensor):
            return f"{path}: {type(got).__name__}, not a tensor"
        if tuple(want.shape) != tuple(got.shape):
            return f"{path}: shape {tuple(got.shape)}, torch's {tuple(want.shape)}"
        if DTYPES.get(want.dtype) != got.dtype:
            return f"{path}: dtype {got.dtype}, torch's {want.dtype}"
        if meta_only:
            return None
        mine, theirs = to_torch(got), want.detach()
        if not want.dtype.is_floating_point:
            return None if torch.equal(mine, theirs) else f"{path}: values differ (exact)"
        if exact:
            same = ((mine == theirs) & (mine.signbit() == theirs.signbit())
                    | mine.isnan() & theirs.isnan())
            if bool(same.all()):
                return None
            diff = (mine.double() - theirs.double()).nan_to_num().abs().max()
            return f"{path}: values differ by {diff:.3g} ({int((~same).sum())} elements)"
        if tol is None:
            tol = {torch.float64: 1e-5, torch.float16: 2e-3,
                   torch.bfloat16: 2e-2}.get(want.dtype, 1e-4)
        if torch.allclose(mine.double(), theirs.double(), rtol=tol, atol=tol, equal_nan=True):
            return None
        return f"{path}: values differ by {(mine.double() - theirs.double()).abs().max():.3g}"
    if isinstance(want, (list, tuple)):
        if not isinstance(got, (list, tuple)) or len(got) != len(want):
            return f"{path}: structure differs"
        for i, (w, g) in enumerate(zip(want, got)):
            if (why := compare(w, g, f"{path}[{i}]", meta_only, exact, tol)) is not None:
                return why
        return None
    if isinstance(want, (bool, int, float)) and not meta_only:
        same = want == got or (isinstance(want, float) and math.isnan(want) and math.isnan(got))
        return None if same else f"{path}: {got!r}, torch's {want!r}"
    return None


def _grads(outs: Any, ins: list[Any], lib: Any, cotangents: list[Any]) -> Any:
    return lib.autograd.grad(outs, ins, cotangents, allow_unused=True)


def eager_sample(op: Any, fn: Any, dtype: torch.dtype, sample: Any) -> str | None:
    rin, rargs, rkw = to_rt(sample.input), to_rt(list(sample.args)), to_rt(dict(sample.kwargs))
    try:
        want, want_error = op.op(sample.input, *sample.args, **sample.kwargs), None
    except Exception as e:  # noqa: BLE001 (any error: the other side must raise too)
        want, want_error = None, e
    try:
        got, got_error = fn(rin, *rargs, **rkw), None
    except Exception as e:  # noqa: BLE001
        got, got_error = None, e
    if want_error is not None or got_error is not None:
        if want_error is None:
            return f"rt raised {type(got_error).__name__}: {str(got_error)[:160]}"
        if got_error is None:
            return f"torch raised {type(want_error).__name__}, rt did not"
        return None
    random = any(w in op.name for w in RANDOM) and not op.name.startswith("signal.windows.")
    if (why := compare(want, got, meta_only=random)) is not None or random:
        return why
    if dtype != torch.float64 or not op.supports_autograd:
        return None
    flat = lambda v: v if isinstance(v, (list, tuple)) else [v]  # noqa: E731
    touts = [o for o in flat(want) if isinstance(o, torch.Tensor) and o.requires_grad]
    routs = [o for o in flat(got) if isinstance(o, rt.Tensor) and o.requires_grad]
    tins = [x for x in [sample.input, *sample.args, *sample.kwargs.values()]
            if isinstance(x, torch.Tensor) and x.requires_grad]
    rins = [x for x in [rin, *rargs, *rkw.values()] if isinstance(x, rt.Tensor)
            and x.requires_grad]
    if not touts or len(touts) != len(routs) or len(tins) != len(rins):
        return None if len(touts) == len(routs) else "outputs requiring grad differ"
    cots = [torch.randn_like(o) for o in touts]
    try:
        want_g = _grads(touts, tins, torch, cots)
    except Exception:  # noqa: BLE001 (torch has no gradient here: nothing to compare)
        return None
    try:
        got_g = _grads(routs, rins, rt, [to_rt(c) for c in cots])
    except Exception as e:  # noqa: BLE001
        return f"gradient raised {type(e).__name__}: {str(e)[:160]}"
    for i, (w, g) in enumerate(zip(want_g, got_g)):
        w = torch.zeros_like(tins[i]) if w is None else w
        g = rt.zeros_like(rins[i]) if g is None else g
        if (why := compare(w, g, f"grad{i}")) is not None:
            return why
    return None


def nudge(x: Any, rng: np.random.Generator) -> Any:
    """``x`` with new values near its own in each floating tensor it holds (in lists, tuples
    and dicts; a namedtuple, such as a PackedSequence, as it is): a replay's inputs."""
    if isinstance(x, rt.Tensor) and x.dtype.is_floating_point and x.numel():
        noise = rt.from_numpy(rng.standard_normal(tuple(x.shape))).to(x.dtype)
        return (x.detach() + 0.1 * noise).requires_grad_(x.requires_grad)
    if type(x) in (list, tuple):
        return type(x)(nudge(v, rng) for v in x)
    if isinstance(x, dict):
        return {k: nudge(v, rng) for k, v in x.items()}
    return x


def _as_torch(x: Any) -> Any:
    if isinstance(x, rt.Tensor):
        return to_torch(x)
    if isinstance(x, (list, tuple)):
        return [_as_torch(v) for v in x]
    return x


def _same(want: Any, got: Any, meta_only: bool) -> str | None:
    """Compiled against eager: bit for bit (the same ops in the same order)."""
    return compare(_as_torch(want), got, meta_only=meta_only, exact=True)


def compiled_sample(fn: Any, grad: bool, sample: Any, rng: np.random.Generator,
                    unset: bool = False) -> tuple[str | None, str | None]:
    """(what differs, the planner's warning) between the compiled and the eager step;
    ``unset``: an op whose values are not set (empty): shapes and dtypes only."""
    def step(inp: Any, args: Any, kw: Any) -> Any:
        out = fn(inp, *args, **kw)
        if not grad:
            return out
        outs = [o for o in (out if isinstance(out, (list, tuple)) else [out])
                if isinstance(o, rt.Tensor) and o.requires_grad]
        ins = [x for x in [inp, *args, *kw.values()] if isinstance(x, rt.Tensor)
               and x.requires_grad]
        if not (outs and ins):
            return out
        return out, list(rt.autograd.grad([o.sum() for o in outs], ins, allow_unused=True,
                                          materialize_grads=True))

    def fresh() -> tuple[Any, Any, Any]:
        """The sample's arguments, new tensors each call: a step that writes into its
        inputs (embedding's max_norm) does not change what the next call reads."""
        return to_rt(sample.input), to_rt(list(sample.args)), to_rt(dict(sample.kwargs))

    seed = int(rng.integers(2**31))

    def nudged() -> tuple[Any, ...]:
        local = np.random.default_rng(seed)
        return tuple(nudge(v, local) for v in fresh())

    try:
        rt.manual_seed(7)
        want = step(*fresh())
    except Exception:  # noqa: BLE001 (eager mode refuses the sample: nothing to compile)
        return None, None
    compiled = planner.compile(step)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            rt.manual_seed(7)
            first = compiled(*fresh())
            rt.manual_seed(7)
            again = compiled(*fresh())
            other = nudged
            try:
                rt.manual_seed(8)
                want_other = step(*other())
            except Exception:  # noqa: BLE001 (new values eager mode refuses: the same ones)
                other = fresh
                rt.manual_seed(8)
                want_other = step(*other())
            rt.manual_seed(8)
            got_other = compiled(*other())
        except Exception as e:  # noqa: BLE001
            return f"compiled raised {type(e).__name__}: {str(e)[:160]}", None
    fallback = next((str(w.message) for w in caught if str(w.message).startswith("planner")),
                    None)
    for tag, w, g in (("capture", want, first), ("replay", want, again),
                      ("new values", want_other, got_other)):
        if (why := _same(w, g, unset)) is not None:
            return f"{tag}: {why}", fallback
    return None, fallback


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("ops", nargs="*", help="op name prefixes (default: every op)")
    parser.add_argument("--dtypes", default="float32,float64,int64,bool")
    parser.add_argument("--compiled", action="store_true")
    parser.add_argument("--grad", action="store_true",
                        help="compiled: with gradients (of each float dtype)")
    parser.add_argument("--samples", type=int, default=12, help="per op and dtype")
    parser.add_argument("--lines", type=int, default=4, help="printed per op")
    opts = parser.parse_args()
    dtypes = [getattr(torch, d) for d in opts.dtypes.split(",")]
    warnings.simplefilter("ignore")
    rng = np.random.default_rng(0)
    counts: collections.Counter[str] = collections.Counter()
    found: dict[str, list[str]] = collections.defaultdict(list)
    for op in op_db:
        if opts.ops and not op.name.startswith(tuple(opts.ops)) or op.name.startswith(SKIPPED):
            continue
        fn = resolve(op)
        if fn is None:
            found["(missing in rt)"].append(op.name)
            continue
        for dtype in dtypes:
            if dtype not in op.supported_dtypes("cpu"):
                continue
            # compiled: gradients of every float dtype with --grad; eager: float64's
            grad = op.supports_autograd and (dtype.is_floating_point and opts.grad
                                             if opts.compiled else dtype == torch.float64)
            try:
                samples = list(op.sample_inputs("cpu", dtype, requires_grad=grad))
            except Exception:  # noqa: BLE001 (an OpInfo that cannot sample on this machine)
                continue
            name = op.name + (f".{op.variant_test_name}" if op.variant_test_name else "")
            for i, sample in enumerate(samples[:opts.samples]):
                try:
                    if opts.compiled:
                        why, fallback = compiled_sample(fn, grad, sample, rng,
                                                        "empty" in op.name)
                        if fallback is not None:
                            found["(fallbacks)"].append(f"{name} {dtype} #{i}: {fallback}")
                    else:
                        why = eager_sample(op, fn, dtype, sample)
                except Skip:
                    counts["skipped"] += 1
                    continue
                counts["differ" if why else "same"] += 1
                if why:
                    found[op.name].append(f"{name} {dtype} #{i}: {why}")
    print(dict(counts))
    for key, lines in sorted(found.items()):
        print(f"== {key} ({len(lines)})")
        for line in lines[:opts.lines]:
            print("   ", line[:300])


if __name__ == "__main__":
    main()
