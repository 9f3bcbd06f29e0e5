"""The CPU launch form (codegen.launch): a pure relabelling of a kernel's domain into rows for
threads, applied by the LLVM renderer and its launcher, never by fusion."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from codegen import cache, jit
from codegen import ir as K
from codegen.launch import ROW, cpu_launch_form, outer_rows
from codegen.llvm import render
from codegen.renderer import LLVMRenderer
from codegen.renderer import renderer_for
from tests.codegen.codegen_testutil import broadcast_strides, build, random_array, run

F = "float32"


def elementwise(domain: tuple[int, ...], strides: tuple[tuple[int, ...], ...] | None = None
                ) -> K.Kernel:
    """sin(x) * y + 0.5 over ``domain``; x and y dense unless ``strides`` says otherwise."""
    dense = broadcast_strides(domain, domain)
    x_strides, y_strides = strides or (dense, dense)
    return K.Kernel("ew", domain, 0, (K.Input("x", F, x_strides), K.Input("y", F, y_strides)),
                    (K.Load(0), K.Unary("sin", 0, F), K.Load(1), K.Binary("mul", 1, 2, F),
                     K.Const(0.5, F), K.Binary("add", 3, 4, F)),
                    (K.Output("out", 5, F),))


def vector_reduction(n: int, op: str = "sum", dtype: str = F, extra: str | None = None
                     ) -> K.Kernel:
    """op(exp(x)) over a vector; ``extra``: "elements" also writes exp(x) per element,
    "scaled" writes op(...) * 2 (a row value read by an expr), "constant" also writes a
    constant (one value along the vector)."""
    exprs: list[K.Expr] = [K.Load(0), K.Unary("exp", 0, dtype), K.Reduce(op, 1, dtype)]
    outputs = [K.Output("r", 2, dtype)]
    if extra == "elements":
        outputs.append(K.Output("e", 1, dtype))
    elif extra == "scaled":
        exprs += [K.Const(2.0, dtype), K.Binary("mul", 2, 3, dtype)]
        outputs = [K.Output("r", 4, dtype)]
    elif extra == "constant":
        exprs.append(K.Const(3.0, dtype))
        outputs.append(K.Output("c", 3, dtype))
    return K.Kernel("red", (n,), 1, (K.Input("x", dtype, (1,)),), tuple(exprs), tuple(outputs))


def column_sum(rows: int, cols: int) -> K.Kernel:
    return K.Kernel("colsum", (rows, cols), 0, (K.Input("x", F, (cols, 1)),), (K.Load(0),),
                    (K.Output("s", 0, F, accumulate="sum"),))


# (kernel, its launch form's domain; None: the kernel itself)
CASES = {
    "vector": (elementwise((8 * ROW,)), (8, ROW)),
    "matrix": (elementwise((4, 2 * ROW)), (8, ROW)),
    "two rows": (elementwise((2 * ROW,)), (2, ROW)),
    "one row": (elementwise((ROW,)), None),
    "odd size": (elementwise((3 * ROW + 1,)), None),
    "odd rows": (elementwise((5, ROW - 1)), None),
    "scalar broadcast": (elementwise((3 * ROW,), ((1,), (0,))), (3, ROW)),
    "row broadcast": (elementwise((4, ROW), ((ROW, 1), (0, 1))), None),
    "sum": (vector_reduction(4 * ROW), (4, ROW)),
    "max float64": (vector_reduction(3 * ROW, "max", "float64"), (3, ROW)),
    "sum and elements": (vector_reduction(2 * ROW, extra="elements"), (2, ROW)),
    "sum read by an expr": (vector_reduction(4 * ROW, extra="scaled"), None),
    "sum and a constant": (vector_reduction(4 * ROW, extra="constant"), None),
    "odd sum": (vector_reduction(4 * ROW + 3), None),
    "column sum": (column_sum(8, ROW), None),
}


def reference(k: K.Kernel, arrays: list[np.ndarray]) -> list[np.ndarray]:
    """The kernel's outputs by numpy in float64, straight from the IR's definition."""
    inner = tuple(range(len(k.outer_shape), len(k.domain)))
    ops = {"sin": np.sin, "exp": np.exp, "mul": np.multiply, "add": np.add,
           "sum": np.sum, "max": np.max}
    values: list[np.ndarray] = []
    for e in k.exprs:
        if isinstance(e, K.Load):
            a = arrays[e.input].astype(np.float64)
            values.append(np.lib.stride_tricks.as_strided(
                a, k.domain, tuple(s * a.itemsize for s in k.inputs[e.input].strides)))
        elif isinstance(e, K.Const):
            values.append(np.full(k.domain, e.value))
        elif isinstance(e, K.Reduce):
            reduced = ops[e.op](values[e.x], axis=inner, keepdims=True)
            values.append(np.broadcast_to(reduced, k.domain))
        else:
            values.append(ops[e.op](*(values[j] for j in K.operands(e))))
    outs = []
    for out in k.outputs:
        full = values[out.value]
        if not K.per_element(k)[out.value] and k.n_reduce:
            full = full[(..., *(0,) * k.n_reduce)]
        if out.accumulate is not None:
            full = ops[out.accumulate](full, axis=tuple(range(len(k.outer_shape))))
        outs.append(np.asarray(full).reshape(K.output_shape(k, out)))
    return outs


def arrays_for(k: K.Kernel) -> list[np.ndarray]:
    return [random_array((1 + sum((d - 1) * s for d, s in zip(k.domain, i.strides)),), i.dtype)
            for i in k.inputs]


@pytest.mark.parametrize("case", sorted(CASES))
def test_launch_form_relabels_the_domain_only(case: str) -> None:
    kernel, domain = CASES[case]
    form = cpu_launch_form(kernel)
    K.validate(form)
    assert cpu_launch_form(form) == form  # idempotent: rendering and loading both apply it
    if domain is None:
        assert form is kernel
        return
    assert form.domain == domain and outer_rows(kernel) == domain[0]
    assert (form.name, form.exprs, form.n_reduce) == (kernel.name, kernel.exprs, kernel.n_reduce)
    assert [i.dtype for i in form.inputs] == [i.dtype for i in kernel.inputs]
    # a reduction's row sums accumulate over the rows; per-element outputs stay as they were
    assert [dataclasses.replace(o, accumulate=None) for o in form.outputs] == list(kernel.outputs)
    assert [o.accumulate for o in form.outputs] == [
        kernel.exprs[o.value].op if isinstance(kernel.exprs[o.value], K.Reduce) else None
        for o in kernel.outputs]


@pytest.mark.parametrize("case", sorted(CASES))
def test_launch_form_computes_what_the_kernel_does(case: str) -> None:
    """The same outputs, element for element, as the kernel in its natural domain: by the IR's
    definition (numpy), and compiled (the LLVM module runs the launch form)."""
    kernel, _ = CASES[case]
    form = cpu_launch_form(kernel)
    arrays = arrays_for(kernel)
    want = reference(kernel, arrays)
    for got, expect, out in zip(reference(form, arrays), want, kernel.outputs):
        assert got.size == expect.size
        np.testing.assert_allclose(got.reshape(expect.shape), expect, rtol=1e-12, err_msg=out.name)
    compiled = run(build([kernel]), kernel, arrays)
    for got, expect, out in zip(compiled, want, kernel.outputs):
        np.testing.assert_allclose(got, expect, rtol=2e-5, atol=1e-6, err_msg=out.name)


def test_the_module_launches_the_form_it_rendered() -> None:
    """Rendering, loading and the cache's key all see the launch form: a vector kernel runs
    in ROW-element rows, so its outer range splits across threads."""
    kernel = elementwise((8 * ROW,))
    assert str(render([kernel])) == str(render([cpu_launch_form(kernel)]))
    module = build([kernel])
    assert module.kernels[kernel.name] == cpu_launch_form(kernel)
    assert cache.cache_key([kernel]) == cache.cache_key([cpu_launch_form(kernel)])
    assert module.kernels[kernel.name].outer_size == 8


def test_llvm_renderer_behind_the_renderer_interface(tmp_path) -> None:
    renderer = renderer_for("cpu")
    assert isinstance(renderer, LLVMRenderer)
    assert (renderer.device_type, renderer.language) == ("cpu", "llvm")
    kernels = [elementwise((8 * ROW,)), vector_reduction(4 * ROW)]
    assert renderer.render(kernels) == str(render(kernels))
    compiled = renderer.compile(kernels, tmp_path)
    assert isinstance(compiled, jit.CompiledModule)
    assert renderer.compile(kernels, tmp_path) is compiled  # through the compile cache
    assert cache.entries(tmp_path)
    source = renderer.kernel_source(kernels[0])
    assert "define internal i1 @\"ew.body\"" in source and "define void @\"ew\"" in source
    assert ".objects" not in source and "@\"red" not in source
    x = random_array((8 * ROW,), F)
    y = random_array((8 * ROW,), F)
    out = np.empty(8 * ROW, F)
    compiled.launcher(kernels[0])([x, y, out])  # the protocol's launcher: no signature
    np.testing.assert_allclose(out, np.sin(x) * y + 0.5, rtol=1e-5, atol=1e-6)
