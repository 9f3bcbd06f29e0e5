"""Kernels and products called as Python builtins (codegen.pyentry): the same bits as their
ctypes entries, PyTorch-free argument checks, the GIL released during the call, and a builtin
that keeps alive what it calls."""

from __future__ import annotations

import gc
import sys
import threading
import time

import numpy as np
import pytest

from codegen import gemm, pyentry
from codegen import ir as K
from codegen.jit import compile_module
from codegen.llvm import render

pytestmark = pytest.mark.skipif(not pyentry.available(),
                                reason="builtins need CPython's array and method layouts")
F32 = "float32"


def _sin_exp() -> K.Kernel:
    return K.Kernel("sin_exp", (16, 256), 0, (K.Input("x", F32, (256, 1)),),
                    (K.Load(0), K.Unary("sin", 0, F32), K.Unary("exp", 1, F32)),
                    (K.Output("y", 2, F32),))


def test_kernel_builtin_gives_the_entry_bits() -> None:
    k = _sin_exp()
    cm = compile_module(render([k]), [k])
    x = np.random.default_rng(0).standard_normal((16, 256)).astype(np.float32)
    want, got = np.empty_like(x), np.full_like(x, np.nan)
    cm.run(k, [x], [want], threads=1)
    builtin = cm.builtin_entry(k)
    assert builtin is not None and cm.builtin_entry(k.name) is builtin  # made once
    assert builtin(x, got) is None
    np.testing.assert_array_equal(got, want)
    np.testing.assert_allclose(want, np.exp(np.sin(x)), rtol=2e-6)


def test_product_builtin_gives_the_entry_bits() -> None:
    spec = gemm.GemmSpec.of((24, 40), (40, 33), np.dtype(np.float32))
    assert spec is not None
    product = gemm.compiled([spec])[spec]
    rng = np.random.default_rng(1)
    a = rng.standard_normal((24, 40)).astype(np.float32)
    b = rng.standard_normal((33, 40)).astype(np.float32).T  # any layout: read from the object
    want, got = np.empty((24, 33), np.float32), np.full((24, 33), np.nan, np.float32)
    product.entry(id(a), id(b), id(want), id(want), product.dims)
    assert product.builtin is not None
    product.builtin(a, b, got, got)
    np.testing.assert_array_equal(got, want)


def test_wrong_argument_count_raises_and_writes_nothing() -> None:
    k = _sin_exp()
    builtin = compile_module(render([k]), [k]).builtin_entry(k)
    x = np.ones((16, 256), np.float32)
    y = np.zeros_like(x)
    with pytest.raises(TypeError, match=r"^sin_exp\(\) takes exactly 2 arguments$"):
        builtin(x)
    with pytest.raises(TypeError, match="takes exactly 2 arguments"):
        builtin(x, y, y)
    assert not y.any()
    spec = gemm.GemmSpec.of((4, 4), (4, 4), np.dtype(np.float32))
    product = gemm.compiled([spec])[spec]
    with pytest.raises(TypeError, match=r"^product_float32\(\) takes exactly 4 arguments$"):
        product.builtin(x, x, y)


def test_calls_leave_none_refcount_balanced() -> None:
    k = _sin_exp()
    builtin = compile_module(render([k]), [k]).builtin_entry(k)
    x, y = np.ones((16, 256), np.float32), np.empty((16, 256), np.float32)
    before = sys.getrefcount(None)
    for _ in range(20000):
        builtin(x, y)
    assert abs(sys.getrefcount(None) - before) < 1000  # each call's None is dropped again


def test_builtin_outlives_its_module_and_product() -> None:
    k = _sin_exp()
    builtin = compile_module(render([k]), [k]).builtin_entry(k)
    spec = gemm.GemmSpec.of((8, 8), (8, 8), np.dtype(np.float32))
    product_builtin = gemm.compiled([spec])[spec].builtin
    gc.collect()  # nothing else holds the module, its engine or the product now
    x, y = np.full((16, 256), 0.5, np.float32), np.empty((16, 256), np.float32)
    builtin(x, y)
    np.testing.assert_allclose(y, np.exp(np.sin(x)), rtol=2e-6)
    a = np.eye(8, dtype=np.float32)
    c = np.empty((8, 8), np.float32)
    product_builtin(a, a, c, c)
    np.testing.assert_array_equal(c, a)


def test_the_gil_is_released_during_the_call() -> None:
    # a product of several ms on one thread: while it runs in another thread, this one runs
    # Python without a pause as long as the call (held, the GIL would stop it that long)
    spec = gemm.GemmSpec.of((1024, 1024), (1024, 1024), np.dtype(np.float32))
    product = gemm.compiled([spec])[spec]
    a, b = np.ones((1024, 1024), np.float32), np.ones((1024, 1024), np.float32)
    c = np.empty((1024, 1024), np.float32)
    alone = []
    for _ in range(2):
        t0 = time.perf_counter()
        product.builtin(a, b, c, c)
        alone.append(time.perf_counter() - t0)
    call = min(alone)
    assert call > 0.002, call

    def stamps_in_first_half() -> int:
        # the other thread notes when its call starts; this one stamps the clock meanwhile. A
        # held GIL lets this thread run no Python from that moment until the call returns, so
        # no stamp falls in the call's first half; released, this thread keeps stamping there
        # whenever the machine gives it a core (a wall-clock gap would also count the
        # scheduler's pauses of this thread on a busy machine)
        go, done = threading.Event(), threading.Event()
        started: list[float] = []

        def work() -> None:
            go.wait()
            started.append(time.perf_counter())
            product.builtin(a, b, c, c)
            done.set()

        thread = threading.Thread(target=work)
        thread.start()
        stamps = []
        go.set()
        while not done.is_set():
            stamps.append(time.perf_counter())
        thread.join()
        assert c[0, 0] == 1024.0
        return sum(started[0] < t < started[0] + call / 2 for t in stamps)

    counts = [stamps_in_first_half() for _ in range(3)]
    assert max(counts) > 0, (call, counts)
