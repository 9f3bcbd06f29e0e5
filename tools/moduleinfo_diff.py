"""Differential check of rt.nn's modules against PyTorch on PyTorch's own ModuleInfo
samples (``torch.testing._internal.common_modules.module_db``).

Eager mode (the default): for each ModuleInfo, dtype, training mode (both where the
ModuleInfo says they differ) and sample (and each error sample), the module is built in
torch and in rt (``rt.nn.<same name>``, the constructor arguments carried over), every
parameter and buffer is copied from torch's into rt's (its state_dict), and the forward is
run on the same inputs. Compared: outputs (values within the dtype's tolerance, dtypes,
shapes; which side raised, and the exception's type and message where both do; the
warnings either side gave), then the
gradients of sum(outputs * fixed random weights) with respect to the inputs and the
parameters, and the buffers after the forward (BatchNorm's running stats). A random
module (its output changes with the seed) compares shapes and dtypes only.

``--strides``: the outputs' strides too (a size-1 dim's aside).

``--compiled``: each sample's forward and backward is also run as a ``planner.compile``
step (the capture, a replay, and a replay on new input values of the same shapes) against
rt eager on the same inputs and seeds; a planner warning (a fallback) is reported apart.

Needs torch and expecttest; a development tool, not a test:
    python tools/moduleinfo_diff.py [--compiled] [--dtypes float32,float64] [Name ...]
(names are class-name prefixes: ``Conv`` checks Conv1d ... ConvTranspose3d).
"""

from __future__ import annotations

import argparse
import collections
import copy
import math
import sys
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch.testing._internal.common_modules import module_db

import planner
import runtime as rt

sys.path.insert(0, str(Path(__file__).resolve().parent))
from opinfo_diff import DTYPES, Skip, compare, nudge, to_rt, to_torch  # noqa: E402

# rt against torch: outputs and gradients (float32's gradients sum longer chains)
VALUE_TOL = {torch.float64: 1e-7, torch.float32: 1e-4}
GRAD_TOL = {torch.float64: 1e-7, torch.float32: 1e-3}
# compiled against eager: fused kernels sum in another order (see test_compile_equivalence)
COMPILED_TOL = {torch.float64: 1e-12, torch.float32: 2e-5}


class Report:
    """What one module's samples gave: counts and the differences, in order."""

    def __init__(self) -> None:
        self.counts: collections.Counter[str] = collections.Counter()
        self.differences: list[str] = []
        self.fallbacks: list[str] = []
        self.skips: collections.Counter[str] = collections.Counter()


# --- carrying arguments over ----------------------------------------------------------------

class _RecordedConstructors:
    """While active, every torch.nn module built records its constructor arguments, so a
    module passed as an argument (TransformerEncoder's layer) can be rebuilt in rt."""

    def __enter__(self) -> _RecordedConstructors:
        self.saved: dict[type, Callable[..., None]] = {}
        for name in dir(torch.nn):
            cls = getattr(torch.nn, name)
            if isinstance(cls, type) and issubclass(cls, torch.nn.Module) \
                    and "__init__" in vars(cls):
                self.saved[cls] = cls.__init__
                cls.__init__ = _recording(cls.__init__)
        return self

    def __exit__(self, *exc: object) -> None:
        for cls, init in self.saved.items():
            cls.__init__ = init


def _recording(init: Callable[..., None]) -> Callable[..., None]:
    def wrapper(self: torch.nn.Module, *args: Any, **kwargs: Any) -> None:
        if "_diff_constructor" not in self.__dict__:
            object.__setattr__(self, "_diff_constructor", (args, kwargs))
        init(self, *args, **kwargs)
    return wrapper


def convert(x: Any) -> Any:
    """A torch constructor or forward argument as rt's: modules rebuilt from their recorded
    arguments and state, torch.nn.functional's functions as rt's, the rest as to_rt."""
    if isinstance(x, torch.nn.Module):
        if "_diff_constructor" not in x.__dict__:
            raise Skip(f"a {type(x).__name__} argument built out of sight")
        args, kwargs = x.__dict__["_diff_constructor"]
        module = getattr(rt.nn, type(x).__name__)(*convert(list(args)), **convert(kwargs))
        module.load_state_dict({k: to_rt(v) for k, v in x.state_dict().items()})
        return module.train(x.training)
    if callable(x) and getattr(x, "__module__", None) in ("torch.nn.functional",
                                                         "torch._C._nn", "torch"):
        found = getattr(rt.nn.functional, x.__name__, None)
        if found is None:
            raise Skip(f"function {x.__name__}")
        return found
    if type(x) in (list, tuple):
        return type(x)(convert(v) for v in x)
    if isinstance(x, dict):
        return {k: convert(v) for k, v in x.items()}
    if type(x).__name__ == "LinearCrossEntropyOptions":
        return x  # plain options, read by attribute
    return to_rt(x)


def _tensors(x: Any) -> Iterator[Any]:
    """The tensors in a nested output or argument, in order."""
    if isinstance(x, (torch.Tensor, rt.Tensor)):
        yield x
    elif isinstance(x, (list, tuple)):
        for v in x:
            yield from _tensors(v)
    elif isinstance(x, dict):
        for v in x.values():
            yield from _tensors(v)


def _differentiable(x: Any) -> list[Any]:
    return [t for t in _tensors(x) if t.requires_grad and t.dtype.is_floating_point]


# --- building the two modules ---------------------------------------------------------------

def _lazy(module: Any) -> bool:
    return any(torch.nn.parameter.is_lazy(p) for p in module.parameters()) \
        if isinstance(module, torch.nn.Module) \
        else any(rt.nn.parameter.is_lazy(p) for p in module.parameters())


def build_torch(cls: type, sample: Any, dtype: torch.dtype, training: bool) -> Any:
    """torch's module as torch's test_modules builds it (then materialized if lazy)."""
    ctor = sample.constructor_input
    module = cls(*ctor.args, **ctor.kwargs).to(dtype).train(training)
    if _lazy(module):
        with torch.no_grad():
            args, kwargs = _forward_args(sample)
            module(*args, **kwargs)
    return module


def build_rt(cls: type, sample: Any, dtype: torch.dtype, training: bool,
             state: dict[str, torch.Tensor] | None) -> Any:
    """rt's module of the same name and arguments, holding torch's state ``state`` (if
    torch could build its own)."""
    ctor = sample.constructor_input
    args, kwargs = convert(list(ctor.args)), convert(dict(ctor.kwargs))
    module = getattr(rt.nn, cls.__name__)(*args, **kwargs).to(DTYPES[dtype]).train(training)
    if _lazy(module):
        with rt.no_grad():
            fwd = sample.forward_input
            module(*convert(list(fwd.args)), **convert(dict(fwd.kwargs)))
    if state is not None:
        module.load_state_dict({k: to_rt(v) for k, v in state.items()})
    return module


def _state(module: torch.nn.Module) -> dict[str, torch.Tensor]:
    return {k: v.detach().clone() for k, v in module.state_dict().items()}


def _fresh(x: Any) -> Any:
    """A copy of a torch argument, its tensors leaves of their own (a module may write into
    them; deepcopy refuses a tensor that is not a leaf)."""
    if isinstance(x, torch.Tensor):
        return x.detach().clone().requires_grad_(x.requires_grad)
    if type(x) in (list, tuple):
        return type(x)(_fresh(v) for v in x)
    if isinstance(x, dict):
        return {k: _fresh(v) for k, v in x.items()}
    return copy.deepcopy(x)


def _forward_args(sample: Any) -> tuple[list[Any], dict[str, Any]]:
    """A fresh copy of torch's forward arguments."""
    fwd = sample.forward_input
    return _fresh(list(fwd.args)), _fresh(dict(fwd.kwargs))


def _is_random(module: torch.nn.Module, sample: Any, want: Any) -> bool:
    """Whether the module's output moves with the seed (dropout, fractional pooling)."""
    torch.manual_seed(1)
    args, kwargs = _forward_args(sample)
    other = copy.deepcopy(module)(*args, **kwargs)
    return any(not torch.equal(a, b) for a, b in zip(_tensors(want), _tensors(other)))


# --- eager: rt against torch ----------------------------------------------------------------

def _compare_errors(want: BaseException | None, got: BaseException | None) -> str | None:
    if want is None and got is None:
        return None
    if want is None:
        return f"rt raised {type(got).__name__}: {str(got)[:200]}"
    if got is None:
        return f"torch raised {type(want).__name__} ({str(want)[:160]}), rt did not"
    if not isinstance(got, type(want)):  # a subclass is caught alike (ShapeError)
        return f"rt raised {type(got).__name__} ({str(got)[:120]}), torch " \
               f"{type(want).__name__} ({str(want)[:120]})"
    if str(want) != str(got):
        return f"{type(want).__name__} message: rt {str(got)[:160]!r}, torch {str(want)[:160]!r}"
    return None


def _warned(caught: list[warnings.WarningMessage]) -> list[str]:
    """The warnings' kinds and texts, less notes of torch's C++ backends (oneDNN's), which
    say how torch computes, not what."""
    return sorted({f"{w.category.__name__}: {w.message}" for w in caught
                   if "(Triggered internally at" not in str(w.message)})


def _compare_warnings(want: list[warnings.WarningMessage],
                      got: list[warnings.WarningMessage]) -> str | None:
    mine, theirs = _warned(got), _warned(want)
    return None if mine == theirs else f"warnings: rt {mine}, torch {theirs}"


def _compare(want: Any, got: Any, path: str, meta_only: bool, tol: float) -> str | None:
    """compare, where a None also has to be None on the other side."""
    if want is None or got is None:
        return None if want is None and got is None else \
            f"{path}: {type(got).__name__}, torch's {type(want).__name__}"
    if isinstance(want, (list, tuple)) and isinstance(got, (list, tuple)) \
            and len(want) == len(got):
        for i, (w, g) in enumerate(zip(want, got)):
            if (why := _compare(w, g, f"{path}[{i}]", meta_only, tol)) is not None:
                return why
        return None
    return compare(want, got, path, meta_only, tol=tol)


def _compare_strides(want: Any, got: Any) -> str | None:
    """The outputs' layouts (a size-1 dim's stride is free): a tensor laid out otherwise
    than torch's is viewed otherwise (``view`` raises where torch's works)."""
    for i, (w, g) in enumerate(zip(_tensors(want), _tensors(got))):
        mine = [s for s, n in zip(g.stride(), g.shape) if n > 1]
        theirs = [s for s, n in zip(w.stride(), w.shape) if n > 1]
        if mine != theirs:
            return f"out{i} strides {g.stride()}, torch's {w.stride()} (shape {tuple(w.shape)})"
    return None


def _grads(lib: Any, outs: list[Any], weights: list[Any], wrt: list[Any]) -> Any:
    loss = sum((o * w).sum() for o, w in zip(outs, weights))
    return lib.autograd.grad(loss, wrt, allow_unused=True)


def _raised(build: Callable[[], Any]) -> Exception | None:
    try:
        build()
    except Skip:
        raise
    except Exception as e:  # noqa: BLE001
        return e
    return None


def eager_sample(info: Any, dtype: torch.dtype, training: bool, sample: Any,
                 rng: np.random.Generator, strides: bool = False) -> str | None:
    """What differs between torch's and rt's module on one sample (None: nothing)."""
    cls = info.module_cls
    if sample.forward_input is None:  # an error sample of the constructor
        return _compare_errors(_raised(lambda: build_torch(cls, sample, dtype, training)),
                               _raised(lambda: build_rt(cls, sample, dtype, training, None)))
    want = got = want_error = got_error = tm = state = None
    with warnings.catch_warnings(record=True) as want_warned:
        warnings.simplefilter("always")
        try:
            tm = build_torch(cls, sample, dtype, training)
            state = _state(tm)
            targs, tkw = _forward_args(sample)
            torch.manual_seed(0)
            want = tm(*targs, **tkw)
        except Exception as e:  # noqa: BLE001 (any error: rt must raise the same)
            want_error = e
    rargs, rkw = convert(list(sample.forward_input.args)), convert(dict(
        sample.forward_input.kwargs))
    with warnings.catch_warnings(record=True) as got_warned:
        warnings.simplefilter("always")
        try:
            rm = build_rt(cls, sample, dtype, training, state)
            rt.manual_seed(0)
            got = rm(*rargs, **rkw)
        except Skip:
            raise
        except Exception as e:  # noqa: BLE001
            got_error = e
    if want_error is not None or got_error is not None:
        return _compare_errors(want_error, got_error)
    if (why := _compare_warnings(want_warned, got_warned)) is not None:
        return why
    random = _is_random(tm, sample, want)
    if (why := _compare(want, got, "out", random, VALUE_TOL[dtype])) is not None:
        return why
    if strides and (why := _compare_strides(want, got)) is not None:
        return why
    tbuf, rbuf = dict(tm.named_buffers()), dict(rm.named_buffers())
    for name, buf in tbuf.items():
        if name not in rbuf:
            return f"buffer {name}: missing in rt"
        if (why := compare(buf, rbuf[name], f"buffer {name}", random,
                           tol=VALUE_TOL[dtype])) is not None:
            return why
    return None if random else _compare_grads(dtype, tm, rm, targs, tkw, rargs, rkw,
                                              want, got, rng)


def _compare_grads(dtype: torch.dtype, tm: Any, rm: Any, targs: Any, tkw: Any, rargs: Any,
                   rkw: Any, want: Any, got: Any, rng: np.random.Generator) -> str | None:
    touts, routs = _differentiable(want), _differentiable(got)
    if len(touts) != len(routs):
        return f"{len(routs)} outputs require grad, torch's {len(touts)}"
    tparams, rparams = dict(tm.named_parameters()), dict(rm.named_parameters())
    if tparams.keys() != rparams.keys():
        return f"parameters {sorted(rparams)}, torch's {sorted(tparams)}"
    names = [n for n, p in tparams.items() if p.requires_grad]
    tins, rins = _differentiable([targs, tkw]), _differentiable([rargs, rkw])
    if not touts or len(tins) != len(rins):
        return None if len(tins) == len(rins) else "inputs requiring grad differ"
    weights = [torch.from_numpy(rng.standard_normal(tuple(o.shape))).to(o.dtype)
               for o in touts]
    try:
        want_g = _grads(torch, touts, weights, tins + [tparams[n] for n in names])
    except Exception:  # noqa: BLE001 (torch has no gradient here: nothing to compare)
        return None
    try:
        got_g = _grads(rt, routs, [to_rt(w) for w in weights],
                       rins + [rparams[n] for n in names])
    except Exception as e:  # noqa: BLE001
        return f"backward raised {type(e).__name__}: {str(e)[:160]}"
    labels = [f"grad input{i}" for i in range(len(tins))] + [f"grad {n}" for n in names]
    for label, w, g, x in zip(labels, want_g, got_g, tins + [tparams[n] for n in names]):
        w = torch.zeros_like(x) if w is None else w
        if g is None:
            g = rt.zeros(tuple(x.shape), dtype=DTYPES[x.dtype])
        if (why := compare(w, g, label, tol=GRAD_TOL[dtype])) is not None:
            return why
    return None


# --- compiled: planner.compile against rt eager ---------------------------------------------

def _training_step(module: Any, weights: list[Any]) -> Callable[[list[Any], dict[str, Any]],
                                                                Any]:
    """The module's forward and the gradients of sum(outputs * weights) with respect to its
    inputs and parameters."""
    def step(args: list[Any], kwargs: dict[str, Any]) -> Any:
        out = module(*args, **kwargs)
        outs = _differentiable(out)
        wrt = _differentiable([args, kwargs]) + [p for p in module.parameters()
                                                 if p.requires_grad]
        if not (outs and wrt):
            return out
        loss = sum((o * w).sum() for o, w in zip(outs, weights))
        return out, list(rt.autograd.grad(loss, wrt, allow_unused=True,
                                          materialize_grads=True))
    return step


def compiled_sample(info: Any, dtype: torch.dtype, training: bool, sample: Any,
                    rng: np.random.Generator) -> tuple[str | None, str | None]:
    """(what differs, the planner's warning) between the compiled and the eager step."""
    cls = info.module_cls
    try:
        state = _state(build_torch(cls, sample, dtype, training))
        eager_m = build_rt(cls, sample, dtype, training, state)
        compiled_m = build_rt(cls, sample, dtype, training, state)
        fwd = sample.forward_input

        def fresh() -> tuple[list[Any], dict[str, Any]]:
            return convert(list(fwd.args)), convert(dict(fwd.kwargs))

        rt.manual_seed(7)
        args, kwargs = fresh()
        outs = _differentiable(eager_m(*args, **kwargs))
    except Skip:
        raise
    except Exception:  # noqa: BLE001 (eager refuses the sample: nothing to compile)
        return None, None
    eager_m.load_state_dict({k: to_rt(v) for k, v in state.items()})
    weights = [rt.from_numpy(rng.standard_normal(tuple(o.shape))).to(o.dtype) for o in outs]
    eager, compiled = _training_step(eager_m, weights), planner.compile(
        _training_step(compiled_m, weights))
    seed = int(rng.integers(2**31))

    def nudged() -> tuple[Any, ...]:
        local = np.random.default_rng(seed)
        return tuple(nudge(v, local) for v in fresh())

    tol = COMPILED_TOL[dtype]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for tag, inputs in (("capture", fresh), ("replay", fresh), ("new values", nudged)):
            try:
                rt.manual_seed(7)
                want = eager(*inputs())
            except Exception as e:  # noqa: BLE001 (new values eager refuses: stop here)
                if tag == "capture":
                    return f"eager step raised {type(e).__name__}: {str(e)[:160]}", None
                break
            try:
                rt.manual_seed(7)
                got = compiled(*inputs())
            except Exception as e:  # noqa: BLE001
                return f"{tag}: compiled raised {type(e).__name__}: {str(e)[:160]}", \
                    _fallback(caught)
            if (why := _compare(_as_torch(want), got, tag, False, tol)) is not None:
                return why, _fallback(caught)
    for (name, w), (_, g) in zip(eager_m.state_dict().items(),
                                 compiled_m.state_dict().items()):
        if (why := compare(to_torch(w), g, f"state {name}", tol=tol)) is not None:
            return why, _fallback(caught)
    return None, _fallback(caught)


def _fallback(caught: list[warnings.WarningMessage]) -> str | None:
    return next((str(w.message) for w in caught if str(w.message).startswith("planner")),
                None)


def _as_torch(x: Any) -> Any:
    if isinstance(x, rt.Tensor):
        return to_torch(x)
    if isinstance(x, (list, tuple)):
        return [_as_torch(v) for v in x]
    return x


# --- the run ------------------------------------------------------------------------------

def _samples(info: Any, dtype: torch.dtype, training: bool, limit: int) -> list[Any]:
    """The ModuleInfo's samples (evenly spread over at most ``limit``), then its error
    samples (their ModuleInputs)."""
    with _RecordedConstructors():
        samples = list(info.module_inputs_func(info, "cpu", dtype, True, training=training))
        if limit and len(samples) > limit:
            samples = samples[::math.ceil(len(samples) / limit)]
        if info.module_error_inputs_func is not None:
            samples += [e.module_error_input for e in info.module_error_inputs_func(
                info, "cpu", dtype, True, training=training)]
    return samples


def check_module(info: Any, dtypes: list[torch.dtype], compiled: bool, limit: int,
                 rng: np.random.Generator, strides: bool = False) -> Report:
    report = Report()
    name = info.module_cls.__name__
    if not hasattr(rt.nn, name):
        report.skips[f"rt.nn has no {name}"] += 1
        return report
    for dtype in dtypes:
        if dtype not in info.dtypes:
            report.skips[f"{dtype} not among its dtypes"] += 1
            continue
        for training in (True, False) if info.train_and_eval_differ else (True,):
            for i, sample in enumerate(_samples(info, dtype, training, limit)):
                tag = f"{str(dtype)[6:]} {'train' if training else 'eval'} #{i}"
                try:
                    why = eager_sample(info, dtype, training, sample, rng, strides)
                    if compiled and why is None and sample.forward_input is not None:
                        why, fallback = compiled_sample(info, dtype, training, sample, rng)
                        if fallback is not None:
                            report.fallbacks.append(f"{tag}: {fallback}")
                except Skip as s:
                    report.skips[str(s)] += 1
                    continue
                report.counts["differ" if why else "same"] += 1
                if why:
                    report.differences.append(f"{tag} {sample.desc}: {why}")
    return report


def main(argv: list[str] | None = None) -> collections.Counter[str]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("modules", nargs="*", help="class-name prefixes (default: all)")
    parser.add_argument("--dtypes", default="float32,float64")
    parser.add_argument("--compiled", action="store_true",
                        help="also compare a planner.compile step with rt eager")
    parser.add_argument("--strides", action="store_true",
                        help="also compare the outputs' strides (their layouts)")
    parser.add_argument("--samples", type=int, default=40,
                        help="per module, dtype and mode (0: all)")
    parser.add_argument("--lines", type=int, default=3, help="differences printed per module")
    opts = parser.parse_args(argv)
    dtypes = [getattr(torch, d) for d in opts.dtypes.split(",")]
    rng = np.random.default_rng(0)
    totals: collections.Counter[str] = collections.Counter()
    for info in module_db:
        name = info.module_cls.__name__
        if opts.modules and not name.startswith(tuple(opts.modules)):
            continue
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            report = check_module(info, dtypes, opts.compiled, opts.samples, rng,
                                  opts.strides)
        totals.update(report.counts)
        totals["skipped"] += sum(report.skips.values())
        _print(name, report, opts.lines)
        totals["modules differing"] += bool(report.differences)
        totals["modules with fallbacks"] += bool(report.fallbacks)
    print("totals:", dict(totals))
    return totals


def _print(name: str, report: Report, lines: int) -> None:
    same, differ = report.counts["same"], report.counts["differ"]
    skipped = "; ".join(f"skipped {n}: {why}" for why, n in report.skips.items())
    if not same + differ:
        print(f"{name}: skipped ({skipped or 'no samples'})")
        return
    state = f"differs {differ}/{same + differ}" if differ else f"ok {same}"
    print(f"{name}: {state}" + (f" ({skipped})" if skipped else ""), flush=True)
    for line in report.differences[:lines]:
        print("    ", line[:400])
    if report.fallbacks:
        print(f"    fallbacks {len(report.fallbacks)}: {report.fallbacks[0][:300]}")


if __name__ == "__main__":
    main()
