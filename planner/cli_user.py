"""Loading a user's step for ``backplan plan FILE.py:FUNC``.

The convention: FILE.py is imported as a module (under a name of its own, its directory on
``sys.path`` while it imports, so it can import its neighbours); FUNC is the step, a function
of its inputs; beside it the file defines ``make_inputs()`` returning the tuple of FUNC's
positional arguments, or a module attribute ``example_inputs`` holding that tuple.
"""

from __future__ import annotations

import importlib.util
import inspect
import itertools
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

_loaded = itertools.count()


class UserStepError(Exception):
    """A user's step could not be loaded: the message says what was wrong, in one line."""


def is_user_step(text: str) -> bool:
    """Whether a ``plan`` target names a file's function rather than a benchmark workload."""
    return ":" in text or text.endswith(".py")


def load_user_step(spec: str) -> tuple[Callable[..., Any], tuple[Any, ...]]:
    """FUNC and its inputs from ``FILE.py:FUNC`` (see the module docstring)."""
    path_text, sep, func_name = spec.rpartition(":")
    if not sep or not path_text or not func_name:
        raise UserStepError(f"{spec!r}: expected FILE.py:FUNC")
    path = Path(path_text)
    if not path.is_file():
        raise UserStepError(f"{path_text}: no such file")
    module_name = f"_backplan_user_{next(_loaded)}_{path.stem}"
    loader_spec = importlib.util.spec_from_file_location(module_name, path)
    if loader_spec is None or loader_spec.loader is None:
        raise UserStepError(f"{path_text}: not a Python file")
    module = importlib.util.module_from_spec(loader_spec)
    directory = str(path.resolve().parent)
    sys.path.insert(0, directory)
    sys.modules[module_name] = module  # dataclasses and pickling look the module up by name
    try:
        loader_spec.loader.exec_module(module)
    except Exception as e:
        raise UserStepError(f"{path_text}: importing it raised {type(e).__name__}: {e}") from e
    finally:
        sys.path.remove(directory)
    fn = getattr(module, func_name, None)
    if not callable(fn):
        raise UserStepError(f"{path_text}: no function {func_name!r}")
    return fn, _inputs(module, path_text)


def _inputs(module: Any, path_text: str) -> tuple[Any, ...]:
    if hasattr(module, "make_inputs"):
        try:
            inputs = module.make_inputs()
        except Exception as e:
            raise UserStepError(f"{path_text}: make_inputs() raised {type(e).__name__}: "
                                f"{e}") from e
        source = "make_inputs()"
    elif hasattr(module, "example_inputs"):
        inputs, source = module.example_inputs, "example_inputs"
    else:
        raise UserStepError(f"{path_text}: defines neither make_inputs() nor example_inputs "
                            "(the step's positional arguments, a tuple)")
    if not isinstance(inputs, tuple):
        raise UserStepError(f"{path_text}: {source} must be a tuple of the step's arguments, "
                            f"not {type(inputs).__name__}")
    return inputs


def gradients_of(fn: Callable[..., Any], inputs: tuple[Any, ...], names: list[str]
                 ) -> tuple[Callable[..., Any], tuple[Any, ...]]:
    """A step returning ``fn``'s loss and its gradients with respect to the parameters
    ``names`` only (``backplan plan --wrt``), and inputs for it: those named are detached
    copies that require grad, so no other input gets a gradient."""
    import runtime as rt

    params = [p.name for p in inspect.signature(fn).parameters.values()
              if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    unknown = [n for n in names if n not in params[:len(inputs)]]
    if unknown:
        raise UserStepError(f"--wrt {','.join(unknown)}: not among {fn.__name__}'s inputs "
                            f"({', '.join(params[:len(inputs)])})")
    wanted = [params.index(n) for n in names]
    for i in wanted:
        if not (isinstance(inputs[i], rt.Tensor) and inputs[i].dtype.is_floating_point):
            raise UserStepError(f"--wrt {params[i]}: a gradient needs a floating-point runtime "
                                f"tensor, got {type(inputs[i]).__name__}")
    inputs = tuple(x.detach().requires_grad_() if i in wanted else x
                   for i, x in enumerate(inputs))

    def loss_and_gradients(*args: Any) -> tuple[Any, ...]:
        loss = fn(*args)
        if not (isinstance(loss, rt.Tensor) and loss.ndim == 0):
            got = f"shape {tuple(loss.shape)}" if isinstance(loss, rt.Tensor) else type(loss)
            raise UserStepError(f"--wrt: {fn.__name__} must return a scalar loss tensor, "
                                f"got {got}")
        return (loss, *rt.autograd.grad(loss, [args[i] for i in wanted]))

    return loss_and_gradients, inputs
