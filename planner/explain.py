"""planner.explain(fn, *args): why a step replays, recompiles, falls back, or how it captures."""

from __future__ import annotations

from typing import Any

from runtime.tracing import GraphBreak


def explain(fn: Any, *args: Any, **kwargs: Any) -> str:
    """Say what calling ``fn(*args, **kwargs)`` would do, without running the step."""
    from .compile import Binding, CompiledStep, _arg_key, _describe_key_change, _with_dynamic
    from .optimized_module import OptimizedModule
    from .tree import flatten, freeze

    if isinstance(fn, OptimizedModule):  # a compiled module: its compiled step
        fn = fn.forward
    if isinstance(fn, CompiledStep):
        name = fn._name
        if kwargs:  # keyed as the call keys them
            args, kwargs = fn._by_position(args, kwargs)
        leaves, spec = flatten((args, kwargs))
        flat = tuple(leaves)
        frozen = freeze(spec)
        key = (frozen, *_arg_key(flat))
        dynamic = fn._dynamic.get(frozen)  # number arguments read as plan inputs: as a call
        if dynamic:
            key = _with_dynamic(key, dynamic)
        entry = fn._cache.get(key)
        if entry is None and (more := fn._changed_numbers(key, flat)):
            key = _with_dynamic(key, (dynamic or frozenset()) | more)
            entry = fn._cache.get(key)
        if entry is not None:
            reasons = []
            for binding in entry.bindings:  # as a call: a plan that fits replays first
                reason = binding.failed_guard(flat)
                if reason is None and isinstance(binding, Binding):
                    return (f"{name} replays a cached plan ({len(binding.plan.steps)} steps)")
                if reason is None:  # a branch of its number conditions that cannot be captured
                    return f"{name} falls back to eager: {binding.reason}"
                reasons.append(reason)
            if entry.eager_reason is not None:
                return f"{name} falls back to eager: {entry.eager_reason}"
            return f"{name} recompiles: guard failed: {reasons[0]}"
        if fn._last_key is not None:
            why = f"recompiles: {_describe_key_change(fn._last_key, key)}"
        else:
            why = "compiles on its first call"
        return f"{name} {why}; " + _capture_report(fn._flat_fn(spec), flat, fn.device)
    name = getattr(fn, "__qualname__", repr(fn))
    leaves, spec = flatten((args, kwargs))

    def call(*flat: Any) -> Any:
        from .tree import unflatten

        a, k = unflatten(spec, list(flat))
        return fn(*a, **k)

    # the step and its arguments' structure: the values its code changes are put back
    call.step, call.spec = fn, spec  # type: ignore[attr-defined]  # (guards.call_accesses)
    return f"{name} " + _capture_report(call, tuple(leaves), None)


def _capture_report(fn: Any, args: tuple[Any, ...], device: str | None) -> str:
    from .capture import capture
    from .compile import _plan_device
    from .passes import run_default_passes
    from .plan import build_plan

    try:
        cap = capture(fn, args, target_device=device)
    except GraphBreak as e:
        return f"cannot be captured (falls back to eager): {e.reason} at {e.where}"
    captured = cap.graph.number_of_nodes()
    run_default_passes(cap.graph)
    plan = build_plan(cap.graph, [s.describe() for s in cap.slots],
                      device or _plan_device(cap), captured)
    return f"captures {captured} nodes, plan of {len(plan.steps)} steps"
