"""JIT: vectorized assembly, argument checks, render errors, and the compiled-code cache."""

from __future__ import annotations

import re

import numpy as np
import pytest
from codegen_testutil import build, random_array, run

from codegen import cache, llvm, llvm_math
from codegen import ir as K


def muladd_kernel(n: int, name: str = "muladd") -> K.Kernel:
    f = "float32"
    inputs = (K.Input("a", f, (1,)), K.Input("b", f, (1,)), K.Input("c", f, (1,)))
    exprs = (K.Load(0), K.Load(1), K.Load(2), K.Binary("mul", 0, 1, f), K.Binary("add", 3, 2, f))
    return K.Kernel(name, (n,), 0, inputs, exprs, (K.Output("out", 4, f),))


def test_hot_elementwise_kernel_is_vectorized():
    k = muladd_kernel(4096)
    asm = build([k]).asm("muladd")
    # x86-64 always has SSE2: packed single-precision multiplies on xmm/ymm/zmm registers
    assert re.search(r"\bv?mulps\b.*%[xyz]mm", asm) or re.search(r"\bvfmadd\w*ps\b", asm), asm


def test_run_checks_arrays():
    k = muladd_kernel(16)
    cm = build([k])
    a = np.ones(16, np.float32)
    with pytest.raises(ValueError, match="input 'b'.*float32"):
        cm.run(k, [a, a.astype(np.float64), a], [np.empty(16, np.float32)])
    with pytest.raises(ValueError, match="output 'out'.*16 elements, got float32 shape \\(15,\\)"):
        cm.run(k, [a, a, a], [np.empty(15, np.float32)])
    with pytest.raises(ValueError, match="takes 3 inputs"):
        cm.run(k, [a], [np.empty(16, np.float32)])


def test_launcher_checks_every_call_against_its_signature_then_passes_array_objects():
    from codegen.jit import object_entry_ok

    assert object_entry_ok()  # CPython + numpy: the data pointer follows the object header
    k = muladd_kernel(4096)
    cm = build([k])
    f32 = np.dtype(np.float32)
    call = cm.launcher(k, [((4096,), f32)] * 4)
    a, b, c = (random_array((4096,), "float32") for _ in range(3))
    out = np.empty(4096, np.float32)
    for _ in range(3):
        out[:] = np.nan
        call([a, b[::-1].copy(), c, out])
        np.testing.assert_allclose(out, a * b[::-1] + c, rtol=1e-6)
    # every call is checked, not only the first: a wrong shape, dtype, stride or type raises
    bad = {"dtype": b.astype(np.float64), "shape": b[:1], "strides": np.repeat(b, 2)[::2],
           "type": b.tolist()}
    for why, arg in bad.items():
        with pytest.raises(ValueError, match="kernel 'muladd' array 1"):
            call([a, arg, c, out])
        if why == "strides":
            assert arg.shape == b.shape and arg.dtype == b.dtype


def test_signature_must_hold_every_element_the_kernel_addresses():
    k = muladd_kernel(16)
    cm = build([k])
    f32 = np.dtype(np.float32)
    assert cm.check_signature(k, [((4, 4), f32)] * 4) == (((4, 4), f32),) * 4
    with pytest.raises(ValueError, match="input 'a'.*at least 16 elements.*shape \\(1,\\)"):
        cm.check_signature(k, [((1,), f32)] + [((16,), f32)] * 3)
    with pytest.raises(ValueError, match="output 'out'.*float64"):
        cm.check_signature(k, [((16,), f32)] * 3 + [((16,), np.dtype(np.float64))])
    with pytest.raises(ValueError, match="takes 4 arrays"):
        cm.launcher(k, [((16,), f32)] * 3)
    strided = K.Kernel("strided", (4, 4), 0, (K.Input("x", "float32", (8, 1)),),
                       (K.Load(0),), (K.Output("y", 0, "float32"),))
    cm = build([strided])
    with pytest.raises(ValueError, match="at least 28 elements"):  # 3 * 8 + 3 * 1 + 1
        cm.launcher(strided, [((4, 4), f32), ((4, 4), f32)])
    call = cm.launcher(strided, [((28,), f32), ((4, 4), f32)])
    x, y = np.arange(28, dtype=np.float32), np.empty((4, 4), np.float32)
    call([x, y])
    np.testing.assert_array_equal(y, x[np.arange(4)[:, None] * 8 + np.arange(4)])


def test_renderer_without_a_rule_names_op_dtypes_and_operands(monkeypatch):
    monkeypatch.setattr(llvm, "declare_math", lambda module, outlined=False: {})
    k = K.Kernel("needs_exp", (4,), 0, (K.Input("x", "float64", (1,)),),
                 (K.Load(0), K.Unary("exp", 0, "float64")), (K.Output("y", 1, "float64"),))
    with pytest.raises(llvm.RenderError, match=r"'needs_exp'.*expr 1.*exp.*float64.*\(0,\)"):
        llvm.render([k])


def test_duplicate_kernel_names_are_rejected():
    with pytest.raises(llvm.RenderError, match="duplicate"):
        llvm.render([muladd_kernel(4), muladd_kernel(8)])


def test_kernels_the_same_but_for_their_names_share_one_function(tmp_path):
    """A module holds one function for kernels that differ only by name (rnn's time steps);
    each name runs it, shows its assembly, and a different kernel keeps its own."""
    kernels = [muladd_kernel(512, "a"), muladd_kernel(512, "b"), muladd_kernel(256, "c"),
               muladd_kernel(512, "d")]
    assert llvm.distinct(kernels) == {"a": "a", "b": "a", "c": "c", "d": "a"}
    text = str(llvm.render(kernels))
    assert re.search(r'define .*@"?a"?\(', text) and re.search(r'define .*@"?c"?\(', text)
    assert not re.search(r'define .*@"?[bd]"?\(', text)
    cm = cache.get_compiled(kernels, tmp_path)
    for k in kernels:
        arrays = [random_array((k.domain[0],), "float32") for _ in range(3)]
        (out,) = run(cm, k, arrays)
        np.testing.assert_allclose(out, arrays[0] * arrays[1] + arrays[2], rtol=1e-6)
        assert "mulps" in cm.asm(k.name) or "vfmadd" in cm.asm(k.name)


def test_warm_disk_cache_skips_llvm_and_gives_identical_results(tmp_path):
    kernels = [muladd_kernel(1000 + i, f"k{i}") for i in range(3)]
    arrays = [random_array((1003,), "float32") for _ in range(3)]
    cache.clear_cache(tmp_path)
    before = cache.stats()
    cold = cache.get_compiled(kernels, tmp_path)
    assert cache.stats()["compiles"] == before["compiles"] + 1
    assert cache.get_compiled(kernels, tmp_path) is cold          # memory hit
    cache.clear_cache(tmp_path, disk=False)                       # a fresh process, warm disk
    warm = cache.get_compiled(kernels, tmp_path)
    after = cache.stats()
    assert after["compiles"] == before["compiles"] + 1
    assert after["disk_hits"] == before["disk_hits"] + 1
    assert warm is not cold
    k = kernels[2]
    for a, b in zip(run(cold, k, arrays), run(warm, k, arrays)):
        assert np.array_equal(a, b)
    assert "mulps" in warm.asm("k2") or "vfmadd" in warm.asm("k2")
    cache.clear_cache(tmp_path)
    assert not cache.entries(tmp_path)


def test_cache_key_depends_on_every_kernel(tmp_path):
    a, b = muladd_kernel(8, "a"), muladd_kernel(8, "b")
    assert cache.cache_key([a, b]) == cache.cache_key([a, b])
    assert cache.cache_key([a, b]) != cache.cache_key([a, muladd_kernel(9, "b")])


def test_cache_dir_from_environment(monkeypatch, tmp_path):
    monkeypatch.setenv("BACKPLAN_CACHE_DIR", str(tmp_path / "env"))
    assert cache.cache_dir() == tmp_path / "env"
    assert cache.cache_dir(tmp_path / "arg") == tmp_path / "arg"
    kernels = [muladd_kernel(8, "env_kernel")]
    cache.get_compiled(kernels)
    assert cache.entries(tmp_path / "env")


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_transcendental_loops_make_no_calls(dtype):
    # exp/log/... come from llvm_math as inlined arithmetic, so the loop vectorizes
    ops = ("exp", "log", "sin", "cos", "tanh", "sigmoid", "sqrt", "erf")
    exprs = [K.Load(0)]
    for op in ops:
        exprs.append(K.Unary(op, len(exprs) - 1, dtype))
    k = K.Kernel("chain", (64, 1024), 0, (K.Input("x", dtype, (1024, 1)),), tuple(exprs),
                 (K.Output("y", len(exprs) - 1, dtype),))
    asm = build([k]).asm("chain")
    body = asm[re.search(r"^\"?chain\.body", asm, re.MULTILINE).start():]
    body = body[:body.index(".Lfunc_end")]  # the fast body (float64's exact one calls libm)
    assert "call" not in body  # the entry calls the body; the body calls nothing
    assert re.search(r"%[yz]mm", body)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_kernel_heavy_with_transcendentals_calls_their_vector_variants(dtype, monkeypatch):
    """Past llvm.INLINE_MATH_CALLS the functions are called out of line: the vectorized loop
    calls a vector variant (not the scalar function), and the results are those of the
    inlined functions, bit for bit."""
    ops = ("exp", "log", "sin", "cos", "tanh", "sigmoid", "erf") * 3
    exprs: list[K.Expr] = [K.Const(2.0, dtype), K.Load(0)]
    for op in ops:
        exprs.append(K.Unary(op, len(exprs) - 1, dtype))
        exprs.append(K.Binary("add", len(exprs) - 1, 0, dtype))  # keeps log's argument > 0
    k = K.Kernel("heavy", (64, 1000), 0, (K.Input("x", dtype, (1000, 1)),), tuple(exprs),
                 (K.Output("y", len(exprs) - 1, dtype),))
    assert llvm.math_calls(k) > llvm.INLINE_MATH_CALLS
    outlined = build([k])
    lanes = "|".join(str(n) for n in llvm_math.vector_widths(dtype))
    asm = outlined.asm("heavy")  # calls go through a register: the address is loaded
    assert re.search(rf"\$backplan\.math\.tanh\.{dtype}\.v({lanes})\b", asm)
    x = random_array((64, 1000), dtype)  # 1000: a scalar remainder past 8 and 16 lanes
    got = run(outlined, k, [x])[0]
    monkeypatch.setattr(llvm, "INLINE_MATH_CALLS", 10**6)
    inlined = build([k])
    assert not re.search(r"backplan\.math\.\w+\.float", inlined.asm("heavy"))
    np.testing.assert_array_equal(got, run(inlined, k, [x])[0])
    assert np.isfinite(got).all()


@pytest.mark.parametrize("threads", [1, 2])
def test_output_written_into_its_input_updates_it_in_place(threads):
    f = "float32"
    n = 1 << 16
    inputs = (K.Input("p", f, (1,)), K.Input("g", f, (1,)))
    exprs = (K.Load(0), K.Load(1), K.Const(-0.5, f), K.Binary("mul", 1, 2, f),
             K.Binary("add", 0, 3, f))
    k = K.Kernel("sgd", (n,), 0, inputs, exprs, (K.Output("p_new", 4, f, into=0),))
    cm = build([k])
    p, g = random_array((n,), f), random_array((n,), f)
    expect = p + g * np.float32(-0.5)
    untouched = np.full(n, 7.0, np.float32)
    cm.run(k, [p, g], [untouched], threads=threads)
    np.testing.assert_allclose(p, expect, rtol=1e-6)
    assert (untouched == 7.0).all()  # the output's own pointer is never written


def test_into_needs_an_elementwise_kernel_over_a_dense_input_of_its_dtype():
    f = "float32"
    base = dict(name="bad", domain=(4, 3), n_reduce=0,
                exprs=(K.Load(0), K.Unary("neg", 0, f)))
    ok = K.Kernel(**base, inputs=(K.Input("x", f, (3, 1)),),
                  outputs=(K.Output("o", 1, f, into=0),))
    K.validate(ok)
    with pytest.raises(K.KernelIRError, match="cannot be written into input 0"):
        K.validate(K.Kernel(**base, inputs=(K.Input("x", f, (0, 1)),),
                            outputs=(K.Output("o", 1, f, into=0),)))
    with pytest.raises(K.KernelIRError, match="into missing input 3"):
        K.validate(K.Kernel(**base, inputs=(K.Input("x", f, (3, 1)),),
                            outputs=(K.Output("o", 1, f, into=3),)))


@pytest.mark.parametrize("op", ["max", "sum"])
def test_masked_row_reduction_is_vectorized(op):
    """reduce(where(mask, x, identity)) over rows, as a causal softmax's row max: the loop
    vectorizes (LLVM would fold the select into a conditional reduction it leaves scalar) and
    equals numpy, NaN rows included."""
    f = "float32"
    identity = -np.inf if op == "max" else 0.0
    k = K.Kernel("masked", (8, 64, 64), 1,
                 (K.Input("x", f, (4096, 64, 1)), K.Input("m", "bool", (0, 64, 1))),
                 (K.Load(0), K.Load(1), K.Const(identity, f), K.Where(1, 0, 2, f),
                  K.Reduce(op, 3, f)), (K.Output("o", 4, f),))
    cm = build([k])
    assert re.search(r"<\d+ x float>", cm.code.optimized_ir.split("@masked.body")[1])
    if op == "max":
        assert not re.search(r"call float @llvm\.maximum\.f32", cm.code.optimized_ir)
    x = random_array((8, 64, 64), f)
    x[3, 5, 2] = np.nan  # unmasked (2 <= 5): the row's max is nan
    x[4, 1, 9] = np.nan  # masked out (9 > 1): no effect
    mask = np.tril(np.ones((64, 64), bool))
    got = run(cm, k, [x, mask])[0]
    masked = np.where(mask, x, np.float32(identity))
    want = masked.max(axis=-1) if op == "max" else masked.sum(axis=-1, dtype=np.float64)
    np.testing.assert_allclose(got, want.astype(np.float32), rtol=1e-5, atol=1e-5)
    assert np.isnan(got[3, 5]) and not np.isnan(got[4, 1])


def _scale_kernel(constant: float, name: str) -> K.Kernel:
    f = "float32"
    return K.Kernel(name, (64,), 0, (K.Input("x", f, (1,)),),
                    (K.Load(0), K.Const(constant, f), K.Binary("mul", 0, 1, f)),
                    (K.Output("y", 2, f),))


def test_kernels_differing_in_the_sign_of_a_zero_constant_stay_apart(tmp_path):
    """Constants compare by their bits: 0.0 == -0.0 in Python made ``x * -0.0`` the same
    kernel as ``x * 0.0`` (one function for both: wrong signs), and a NaN constant never
    equal to itself."""
    pos, neg = _scale_kernel(0.0, "pos"), _scale_kernel(-0.0, "neg")
    assert llvm.distinct([pos, neg]) == {"pos": "pos", "neg": "neg"}
    nan_a, nan_b = _scale_kernel(float("nan"), "a"), _scale_kernel(float("nan"), "b")
    assert llvm.distinct([nan_a, nan_b]) == {"a": "a", "b": "a"}
    assert K.Const(np.float32(0.5), "float32") == K.Const(0.5, "float32")
    assert K.Const(np.float32(0.5), "float32") != K.Const(0.0, "float32")
    cm = cache.get_compiled([pos, neg], tmp_path)
    x = np.linspace(1.0, 2.0, 64, dtype=np.float32)
    for k, want in ((pos, np.zeros(64, np.float32)), (neg, -np.zeros(64, np.float32))):
        (out,) = run(cm, k, [x])
        assert np.array_equal(np.signbit(out), np.signbit(want)), k.name
