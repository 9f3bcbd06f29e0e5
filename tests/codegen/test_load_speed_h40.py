"""Loading compiled code (codegen.jit.load, codegen.target.load_support): what the engines
that take object files are made of, and that loading stays exact."""

from __future__ import annotations

import ctypes
from typing import Any

import llvmlite.binding as llvm
import numpy as np
import pytest
from codegen_testutil import build

from codegen import ir as K
from codegen import jit, target
from codegen.llvm import render


def _kernel(name: str, op: str, n: int = 64) -> K.Kernel:
    f = "float32"
    inputs = (K.Input("a", f, (1,)), K.Input("b", f, (1,)))
    exprs = (K.Load(0), K.Load(1), K.Binary(op, 0, 1, f))
    return K.Kernel(name, (n,), 0, inputs, exprs, (K.Output("out", 2, f),))


def _record_target_machines(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    """(cpu, features, opt) of every target machine created from now on."""
    opts: list[Any] = []
    create = llvm.Target.create_target_machine

    def recording(self: llvm.Target, *args: Any, **kwargs: Any) -> llvm.TargetMachine:
        assert not args, "target machines are made with keyword arguments"
        opts.append((kwargs.get("cpu", ""), kwargs.get("features", ""), kwargs.get("opt", 2)))
        return create(self, *args, **kwargs)

    monkeypatch.setattr(llvm.Target, "create_target_machine", recording)
    return opts


def test_plan_module_engine_gets_a_loader_target_machine(monkeypatch: pytest.MonkeyPatch) -> None:
    # the engine compiles only its empty module: its target machine is the generic CPU at -O0,
    # the object code (emitted for the host at -O3 before) is what runs
    k = _kernel("k0", "add")
    code = jit.optimize_and_emit(render([k]))
    opts = _record_target_machines(monkeypatch)
    cm = jit.load(code, [k])
    assert opts == [("", "", 0)]
    a, b = np.arange(64, dtype=np.float32), np.full(64, 0.5, np.float32)
    out = np.empty(64, np.float32)
    cm.run("k0", [a, b], [out])
    np.testing.assert_array_equal(out, a + b)


def test_support_engine_gets_a_loader_target_machine(monkeypatch: pytest.MonkeyPatch) -> None:
    code = target.emit_as_written(
        "define i64 @backplan_test_h40_twice(i64 %x) {\n  %y = shl i64 %x, 1\n  ret i64 %y\n}\n")
    monkeypatch.setattr(target, "_support_engine", None)  # a fresh one, for this test only
    opts = _record_target_machines(monkeypatch)
    with target.LOCK:
        engine, (address,) = target.load_support(code.object_file, "backplan_test_h40_twice")
    assert opts == [("", "", 0)] and address
    assert ctypes.CFUNCTYPE(ctypes.c_int64, ctypes.c_int64)(address)(21) == 42
    assert engine is target._support_engine


def test_two_modules_defining_the_same_kernel_names_run_their_own_kernels() -> None:
    # each plan module has an engine of its own: "k0" and "k1" of one never resolve to the
    # other's
    first = build([_kernel("k0", "add"), _kernel("k1", "mul")])
    second = build([_kernel("k0", "sub"), _kernel("k1", "maximum")])
    rng = np.random.default_rng(40)
    a, b = (rng.standard_normal(64).astype(np.float32) for _ in range(2))
    expected = {(first, "k0"): a + b, (first, "k1"): a * b,
                (second, "k0"): a - b, (second, "k1"): np.maximum(a, b)}
    for (module, name), want in expected.items():
        out = np.full(64, np.nan, np.float32)
        module.run(name, [a, b], [out])
        np.testing.assert_array_equal(out, want)
        out[:] = np.nan
        module.launcher(name, [((64,), np.dtype(np.float32))] * 3)([a, b, out])
        np.testing.assert_array_equal(out, want)


def _column_sums(rows: int) -> K.Kernel:
    """tanh(x) over (rows, 1024) and its column sums, accumulated over the rows."""
    f = "float32"
    exprs = (K.Load(0), K.Unary("tanh", 0, f))
    return K.Kernel(f"colsums{rows}", (rows, 1024), 0, (K.Input("x", f, (1024, 1)),), exprs,
                    (K.Output("y", 1, f), K.Output("cols", 1, f, "sum")))


@pytest.mark.parametrize("rows", [8, 600, 4096])
def test_split_bounds_given_the_estimate_are_the_kernels_own(rows: int) -> None:
    k = _column_sums(rows)
    assert jit.split_bounds(k, jit.estimated_us(k)) == jit.split_bounds(k)


def test_a_kernel_is_estimated_once_when_its_module_loads(monkeypatch: pytest.MonkeyPatch
                                                          ) -> None:
    k = _column_sums(600)
    code = jit.optimize_and_emit(render([k]))
    estimated: list[str] = []
    real = jit.estimated_us

    def counting(kernel: K.Kernel) -> float:
        estimated.append(kernel.name)
        return real(kernel)

    monkeypatch.setattr(jit, "estimated_us", counting)
    cm = jit.load(code, [k])
    assert estimated == ["colsums600"]
    x = np.random.default_rng(1).standard_normal((600, 1024)).astype(np.float32)
    y, cols = np.empty((600, 1024), np.float32), np.empty(1024, np.float32)
    cm.run(k, [x], [y, cols])
    np.testing.assert_allclose(cols, np.tanh(x).sum(axis=0, dtype=np.float64), rtol=1e-5,
                               atol=1e-4)


def test_array_specs_check_as_before() -> None:
    # the argument specs (named tuples now) still name the argument and what it needs
    k = _kernel("k0", "add", 16)
    cm = build([k])
    a = np.ones(16, np.float32)
    with pytest.raises(ValueError, match=r"kernel 'k0' output 'out': needs a C-contiguous "
                       r"float32 array of 16 elements, got float32 shape \(15,\)"):
        cm.run(k, [a, a], [np.empty(15, np.float32)])
    with pytest.raises(ValueError, match=r"input 'b': needs a C-contiguous float32 array of at "
                       r"least 16 elements, got float64"):
        cm.run(k, [a, a.astype(np.float64)], [np.empty(16, np.float32)])


def test_product_call_behaves_as_the_frozen_dataclass_it_was() -> None:
    import dataclasses
    import pickle

    from codegen.gemm import GemmSpec
    from planner.products import ProductCall

    # made without dataclasses' generated source (compiled as the class is made, in a warm
    # first call's code loading)
    assert not dataclasses.is_dataclass(ProductCall)
    spec = GemmSpec.of((4, 3), (3, 5), np.dtype(np.float32))
    assert spec is not None
    call = ProductCall(spec, (4, 3), (3, 5), (4, 5))
    assert (call.spec, call.a, call.b, call.out, call.addend) == (spec, (4, 3), (3, 5), (4, 5),
                                                                  None)
    same, other = ProductCall(spec, (4, 3), (3, 5), (4, 5), None), \
        ProductCall(spec, (4, 3), (3, 5), (4, 5), (5,))
    assert call == same and hash(call) == hash(same) and call != other
    assert call != ((spec, (4, 3), (3, 5), (4, 5), None))
    assert len({call, same, other}) == 2
    assert repr(other) == (f"ProductCall(spec={spec!r}, a=(4, 3), b=(3, 5), out=(4, 5), "
                           f"addend=(5,))")
    with pytest.raises(dataclasses.FrozenInstanceError, match="cannot assign to field 'a'"):
        call.a = (1, 1)  # type: ignore[misc]
    with pytest.raises(dataclasses.FrozenInstanceError, match="cannot delete field 'out'"):
        del call.out
    with pytest.raises(AttributeError):
        object.__getattribute__(call, "__dict__")
    assert pickle.loads(pickle.dumps(other)) == other
