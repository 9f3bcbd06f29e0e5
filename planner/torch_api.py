"""``runtime.compile``: torch.compile's signature, defaults and errors, mapped onto
``planner.compile`` (torch's backend names onto the planner's; its modes and Inductor options
honoured or refused, never ignored). A module compiled is a
``planner.optimized_module.OptimizedModule``."""

from __future__ import annotations

from typing import Any

from .compile import RECOMPILE_LIMIT, compile


class InvalidBackend(RuntimeError):
    """torch._dynamo.exc.InvalidBackend: a backend name torch does not know."""

    def __init__(self, name: str) -> None:
        super().__init__(f"Invalid backend: {name!r}, see `torch._dynamo.list_backends()` for "
                         "available backends.")


# torch's backend names and the planner's backend each maps to: the compiling backends fuse
# (inductor; cudagraphs also asks for CUDA graphs, planner.cuda_graph), the aot_eager ones trace forward and
# backward as AOTAutograd does and run them unfused (the planner's interpreter), eager runs
# the function as written
BACKENDS = {"inductor": "auto", "cudagraphs": "auto", "aot_eager": "interpreter",
            "aot_eager_default_partitioner": "interpreter",
            "aot_eager_decomp_partition": "interpreter", "eager": "eager"}
# the names torch 2.13 knows besides (torch._dynamo.list_backends(exclude_tags=())): refused
TORCH_ONLY_BACKENDS = frozenset({
    "aot_eager_decomp_partition_crossref", "aot_eager_decomp_partition_with_mode", "aot_ts",
    "dynamo_accuracy_minifier_backend", "dynamo_minifier_backend", "eager_debug",
    "eager_noexcept", "invoke_subgraph", "non_leaf_compile_error_TESTING_ONLY", "openxla",
    "openxla_eval", "pre_dispatch_eager", "relu_accuracy_error_TESTING_ONLY",
    "relu_compile_error_TESTING_ONLY", "relu_runtime_error_TESTING_ONLY", "ts", "tvm"})
MODES = ("default", "lite", "reduce-overhead", "max-autotune-no-cudagraphs", "max-autotune")


def planner_backend(backend: Any) -> str:
    """The planner's backend for torch.compile's ``backend`` (None: torch's default,
    inductor), or torch's error for a name it does not know, or ours for one it knows that
    has no counterpart here."""
    if backend is None:
        return BACKENDS["inductor"]
    if not isinstance(backend, str):
        raise TypeError(f"rt.compile: backend must be a backend name such as 'inductor', "
                        f"'aot_eager' or 'eager', got {type(backend).__name__} (a backend "
                        f"function compiling FX graphs has no counterpart: the planner "
                        f"compiles its own plans)")
    if backend in BACKENDS:
        return BACKENDS[backend]
    if backend in TORCH_ONLY_BACKENDS:
        raise RuntimeError(f"rt.compile: backend {backend!r} is not supported; supported "
                           f"backends: {', '.join(BACKENDS)}")
    raise InvalidBackend(backend)


def check_mode(mode: str | None, options: dict[str, Any] | None) -> bool | None:
    """torch.compile's ``mode`` and ``options`` as the planner's ``cuda_graphs`` (None: the
    planner's default): "reduce-overhead" and ``{"triton.cudagraphs": bool}`` say whether a
    GPU plan replays as a CUDA graph (planner.cuda_graph); the modes and options that tune
    Inductor's kernels are refused, never ignored."""
    if mode is not None and options is not None:
        raise RuntimeError("Either mode or options can be specified, but both can't be "
                           "specified at the same time.")
    if mode is not None and mode not in MODES:
        raise RuntimeError(f"Unrecognized mode={mode}, should be one of: {', '.join(MODES)}")
    if mode == "reduce-overhead":
        return True
    if mode not in (None, "default"):
        raise RuntimeError(f"rt.compile: mode={mode!r} is not supported (it tunes Inductor's "
                           f"kernels, which the planner has no counterpart of); use "
                           f"mode=None, 'default' or 'reduce-overhead'")
    if options is not None and not isinstance(options, dict):
        raise TypeError(f"rt.compile: options must be a dict, got {type(options).__name__}")
    if not options:
        return None
    others = sorted(k for k in options if k != "triton.cudagraphs")
    if others:
        raise RuntimeError(f"rt.compile: Inductor options are not supported (got {others}; "
                           f"only 'triton.cudagraphs' is); give planner.compile's own "
                           f"options instead")
    graphs = options["triton.cudagraphs"]
    if type(graphs) is not bool:
        raise TypeError(f"rt.compile: options['triton.cudagraphs'] must be a bool, got "
                        f"{graphs!r}")
    return graphs


def torch_compile(model: Any = None, *, fullgraph: bool = False, dynamic: bool | None = None,
                  backend: Any = None, mode: str | None = None,
                  options: dict[str, Any] | None = None, name: str | None = None,
                  disable: bool = False, recompile_limit: int | None = None,
                  isolate_recompiles: bool = False, shapes_spec: Any = None) -> Any:
    """``runtime.compile`` (torch.compile): see its docstring."""
    if model is None:  # a decorator with arguments, checked when it is applied (torch's)
        def decorate(model: Any) -> Any:
            if model is None:
                raise RuntimeError("Model can't be None")
            return torch_compile(model, fullgraph=fullgraph, dynamic=dynamic, backend=backend,
                                 mode=mode, options=options, name=name, disable=disable,
                                 recompile_limit=recompile_limit,
                                 isolate_recompiles=isolate_recompiles,
                                 shapes_spec=shapes_spec)
        return decorate
    planned = planner_backend(backend)
    graphs = check_mode(mode, options)
    if backend == "cudagraphs":  # torch's backend that records and replays CUDA graphs
        graphs = True
    if shapes_spec is not None:
        raise RuntimeError("rt.compile: shapes_spec is not supported: a plan is specialized "
                           "to its argument shapes (a new shape captures again)")
    if not callable(model):
        raise AssertionError(f"A callable function is expected, but {type(model)} is "
                             f"provided.")
    if disable:
        return model
    if name is not None and not isinstance(name, str):
        raise TypeError(f"rt.compile: name must be a str, got {type(name).__name__}")
    limit = RECOMPILE_LIMIT if recompile_limit is None else recompile_limit
    compiled = compile(model, backend=planned, fullgraph=fullgraph, dynamic=dynamic,
                       recompile_limit=limit, cuda_graphs=graphs)
    step = getattr(compiled, "forward", compiled)  # an OptimizedModule's step
    if name is not None and hasattr(step, "name"):
        step.name = name  # what its warnings and recompile log call it
    return compiled
