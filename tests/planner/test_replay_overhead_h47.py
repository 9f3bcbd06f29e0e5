"""The Python around a compiled step's replay, made cheaper without changing what it does:
the cast primitive's fast path (a replay's learning rate, float64 to float32), SIGINT held
without asking ``threading`` first, and the written-out write-back's stores inline."""

from __future__ import annotations

import importlib
import threading
from typing import Any

import numpy as np
import pytest

import planner
import runtime as rt
from runtime.ops.registry import REGISTRY

compile_module = importlib.import_module("planner.compile")


# --- the cast's fast path -----------------------------------------------------------------
@pytest.mark.parametrize(("source", "target"), [(np.float64, np.float32), (np.int64, np.float32),
                                                (np.float32, np.float64), (np.bool_, np.int64),
                                                (np.int32, np.uint8)])
def test_cast_fast_path_is_astype(source: Any, target: Any) -> None:
    dtype = rt.float32 if target is np.float32 else (
        rt.float64 if target is np.float64 else rt.int64 if target is np.int64 else rt.uint8)
    for shape in ((), (3, 2)):
        fast = REGISTRY["cast"].specialize([(shape, np.dtype(source))], {"dtype": dtype},
                                           (shape, np.dtype(target)))
        assert fast is not None
        x = (np.arange(6).reshape(3, 2) * 0.7 - 1).astype(source)[(0, 1) if not shape else ...]
        got = fast(np.asarray(x))
        want = REGISTRY["cast"].impl(np, np.asarray(x), dtype=dtype)
        assert type(got) is np.ndarray and got.dtype == np.dtype(target)
        assert got.shape == shape
        np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("target", [rt.int64, rt.uint8, rt.int32])
def test_cast_of_floats_to_integers_keeps_the_impl(target: Any) -> None:
    """cast_values silences numpy's warning and routes uint8 through int64: no fast path."""
    assert REGISTRY["cast"].specialize([((4,), np.dtype(np.float32))], {"dtype": target},
                                       ((4,), target.np)) is None


def test_cast_fast_path_only_for_one_array_argument() -> None:
    assert REGISTRY["cast"].specialize([2.5], {"dtype": rt.float32},
                                       ((), np.dtype(np.float32))) is None


# --- SIGINT held without asking threading on the main thread --------------------------------
def test_hold_on_the_main_thread_asks_no_threading(monkeypatch: pytest.MonkeyPatch) -> None:
    import signal

    def refused() -> Any:
        raise AssertionError("threading asked")

    own = signal.getsignal(signal.SIGINT)
    monkeypatch.setattr(threading, "current_thread", refused)
    held = compile_module._hold_sigint()
    assert held is not None and signal.getsignal(signal.SIGINT) is not own
    compile_module._release_sigint(held)
    assert signal.getsignal(signal.SIGINT) is own


def test_hold_elsewhere_holds_nothing() -> None:
    import signal

    own = signal.getsignal(signal.SIGINT)
    found: list[Any] = []
    worker = threading.Thread(target=lambda: found.append(compile_module._hold_sigint()))
    worker.start()
    worker.join()
    assert found == [None] and signal.getsignal(signal.SIGINT) is own


def test_hold_passes_on_a_value_error_of_the_main_thread(monkeypatch: pytest.MonkeyPatch
                                                         ) -> None:
    """A ValueError on the main thread is not the other-thread refusal (a pending signal's
    handler raised it): it is raised, as before."""

    class Signal:
        SIGINT = 2

        @staticmethod
        def getsignal(signum: int) -> Any:
            return lambda *a: None

        @staticmethod
        def signal(signum: int, handler: Any) -> Any:
            raise ValueError("a handler's own error")

    monkeypatch.setattr(compile_module, "_signal", Signal)
    with pytest.raises(ValueError, match="a handler's own error"):
        compile_module._hold_sigint()


# --- the written-out write-back -------------------------------------------------------------
def _mlp() -> tuple[Any, Any, Any, tuple[Any, ...]]:
    rt.manual_seed(0)
    model = rt.nn.Sequential(rt.nn.Linear(6, 8), rt.nn.ReLU(), rt.nn.Linear(8, 3))
    opt = rt.optim.SGD(model.parameters(), lr=0.1)

    def step(x: Any, y: Any) -> Any:
        opt.zero_grad()
        loss = rt.nn.functional.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        return loss

    rng = np.random.default_rng(1)
    args = (rt.from_numpy(rng.standard_normal((5, 6)).astype(np.float32)),
            rt.from_numpy(rng.integers(0, 3, 5)))
    return model, opt, step, args


def test_committed_parameters_count_their_version_inline(monkeypatch: pytest.MonkeyPatch
                                                         ) -> None:
    """A parameter the native run updated in its own array is written back by counting its
    version, without a call of ``_write_into`` (6 a replay of mlp_small); the versions and
    values are eager mode's."""
    model, _, step, args = _mlp()
    eager_model, _, eager_step, _ = _mlp()
    compiled = planner.compile(step, backend="llvm", background=False)
    for _ in range(2):
        compiled(*args)
        eager_step(*args)
    (entry,) = compiled._cache.values()
    binding = entry.bindings[0]
    if not binding.plan.executable.commits:
        pytest.skip("this plan's run commits no update in place")
    calls: list[Any] = []
    real = compile_module._write_into
    monkeypatch.setattr(compile_module, "_write_into",
                        lambda t, v: (calls.append(t), real(t, v)))
    binding.replayer = binding.direct = None  # written out again, with the counting store
    versions = [p._version for p in model.parameters()]
    loss = compiled(*args)
    eager_loss = eager_step(*args)
    assert calls == []
    assert [p._version for p in model.parameters()] == [v + 1 for v in versions]
    np.testing.assert_allclose(float(loss), float(eager_loss), rtol=1e-6)
    for p, q in zip(model.parameters(), eager_model.parameters(), strict=True):
        np.testing.assert_allclose(p.detach().numpy(), q.detach().numpy(), rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(p.grad.numpy(), q.grad.numpy(), rtol=1e-5, atol=1e-6)


def test_new_grads_assigned_as_attributes_where_the_class_allows() -> None:
    model, _, step, args = _mlp()
    compiled = planner.compile(step, backend="llvm", background=False)
    for _ in range(3):
        compiled(*args)
    (entry,) = compiled._cache.values()
    source = entry.bindings[0]._replayer().fast.source
    assert "_set_grad(" not in source
    assert source.count("._grad = g") == len(list(model.parameters()))


class _Watched(rt.nn.Parameter):
    """A parameter class with a ``__setattr__`` of its own, which the slot's setter skips."""

    seen: list[str] = []

    def __setattr__(self, name: str, value: Any) -> None:
        type(self).seen.append(name)
        super().__setattr__(name, value)


def test_a_class_with_its_own_setattr_keeps_the_slot_setter() -> None:
    rt.manual_seed(0)
    w = _Watched(rt.randn(4, 3))
    opt = rt.optim.SGD([w], lr=0.1)
    x = rt.randn(2, 4)

    def step(x: Any) -> Any:
        opt.zero_grad()
        loss = (x @ w).sum()
        loss.backward()
        opt.step()
        return loss

    compiled = planner.compile(step, backend="llvm", background=False)
    for _ in range(3):
        compiled(x)
    (entry,) = compiled._cache.values()
    source = entry.bindings[0]._replayer().fast.source
    assert "._grad = g" not in source
    _Watched.seen.clear()
    compiled(x)
    assert "_grad" not in _Watched.seen


def test_a_numpy_result_is_rebuilt_on_the_cpu_without_asking_its_device(
        monkeypatch: pytest.MonkeyPatch) -> None:
    model, _, step, args = _mlp()
    compiled = planner.compile(step, backend="llvm", background=False)
    for _ in range(3):
        compiled(*args)

    def refused(a: Any) -> str:
        raise AssertionError("device_of_array asked")

    monkeypatch.setattr(compile_module, "device_of_array", refused)
    loss = compiled(*args)
    assert loss.device == rt.device("cpu") and loss.dtype is rt.float32
    assert compile_module._rebuild(("array", np.ones(2, np.float64))).dtype is rt.float64
