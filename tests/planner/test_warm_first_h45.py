"""Issue 12's warm first call (a new process, a warm disk cache): the cuts in the work that
call does change no value, gradient or capture; the work cut stays cut."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import planner
import runtime as rt
from planner.capture import capture


def _no_numpy_dispatch(monkeypatch: pytest.MonkeyPatch) -> None:
    """np.transpose and np.argsort raise: a permute, its layout probe and its backward use
    neither (the array's own transpose, the inverse permutation in Python)."""
    def refuse(name: str) -> Any:
        def f(*args: Any, **kwargs: Any) -> Any:
            raise AssertionError(f"np.{name} called")
        return f
    monkeypatch.setattr(np, "transpose", refuse("transpose"))
    monkeypatch.setattr(np, "argsort", refuse("argsort"))


@pytest.mark.parametrize("dims", [(2, 0, 1), (1, 2, 0), (0, 2, 1), (-1, 0, 1)])
def test_permute_and_its_gradient_as_torch(dims: tuple[int, ...],
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    torch = pytest.importorskip("torch")
    x = np.random.default_rng(0).standard_normal((2, 3, 4)).astype(np.float32)
    w = np.random.default_rng(1).standard_normal(
        tuple(x.shape[d] for d in dims)).astype(np.float32)
    tx = torch.tensor(x, requires_grad=True)
    (tx.permute(*dims) * torch.tensor(w)).sum().backward()
    _no_numpy_dispatch(monkeypatch)
    rx = rt.tensor(x, requires_grad=True)
    y = rx.permute(*dims)
    assert y.shape == tuple(tx.permute(*dims).shape)
    np.testing.assert_array_equal(y.detach().numpy(), tx.permute(*dims).detach().numpy())
    (y * rt.tensor(w)).sum().backward()
    np.testing.assert_array_equal(rx.grad.numpy(), tx.grad.numpy())


def test_a_captured_permute_is_probed_and_differentiated_without_numpy_dispatch(
        monkeypatch: pytest.MonkeyPatch) -> None:
    w = rt.nn.Parameter(rt.tensor(np.arange(24, dtype=np.float32).reshape(2, 3, 4)))
    x = rt.tensor(np.ones((4, 2, 3), dtype=np.float32))

    def step(x: rt.Tensor) -> rt.Tensor:
        w.grad = None
        loss = (w.permute(2, 0, 1) * x).sum()
        loss.backward()
        return loss

    _no_numpy_dispatch(monkeypatch)
    cap = capture(step, (x,))
    assert "permute" in {data["op"] for _, data in cap.graph.nodes(data=True)}
    compiled = planner.compile(step)
    for _ in range(3):
        got = compiled(x)
        assert float(got) == float(np.arange(24).sum())
        np.testing.assert_array_equal(w.grad.numpy(), np.ones((2, 3, 4), dtype=np.float32))


def test_a_loaded_module_checks_signatures_against_the_specs_its_load_made(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A program's build checks each kernel step's signature: against the array specs the
    module's load worked out, not worked out again; same answers, same errors."""
    from codegen import ir as K
    from codegen import jit
    from codegen.llvm import render

    k = K.Kernel("strided_h45", (4, 4), 0, (K.Input("x", "float32", (8, 1)),),
                 (K.Load(0),), (K.Output("y", 0, "float32"),))
    cm = jit.compile_module(render([k]), [k])
    f32 = np.dtype(np.float32)
    good = [((28,), f32), ((4, 4), f32)]
    expected = jit.check_signature(k, good)
    messages = []
    for bad in ([((27,), f32), ((4, 4), f32)], [((28,), f32), ((4, 4), np.dtype("f8"))],
                [((28,), f32)]):
        with pytest.raises(ValueError) as e:
            jit.check_signature(k, bad)
        messages.append(str(e.value))

    def again(kernel: Any) -> Any:
        raise AssertionError("array specs worked out again")
    monkeypatch.setattr(jit, "_array_specs", again)
    assert cm.check_signature(k, good) == expected
    assert cm.check_signature("strided_h45", good) == expected
    for bad, message in zip(([((27,), f32), ((4, 4), f32)],
                             [((28,), f32), ((4, 4), np.dtype("f8"))], [((28,), f32)]),
                            messages, strict=True):
        with pytest.raises(ValueError) as e:
            cm.check_signature(k, bad)
        assert str(e.value) == message
    call = cm.launcher(k, good)
    x, y = np.arange(28, dtype=np.float32), np.empty((4, 4), np.float32)
    call([x, y])
    np.testing.assert_array_equal(y, x[np.arange(4)[:, None] * 8 + np.arange(4)])


def test_a_capture_makes_its_graph_without_networkx_backend_dispatch(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """networkx's DiGraph.__new__ (a backend dispatcher, compiled at its first call in a
    process) is not called: the capture's graph is made as that __new__ makes one, and it
    is a networkx DiGraph with the capture's graph attributes."""
    import networkx as nx

    from planner.graph import new_graph

    def refuse(cls: Any, *args: Any, **kwargs: Any) -> Any:
        raise AssertionError("networkx's DiGraph.__new__ called")
    monkeypatch.setattr(nx.DiGraph, "__new__", staticmethod(refuse))
    g = new_graph(outputs=[], returns=None)
    assert type(g) is nx.DiGraph and g.graph == {"outputs": [], "returns": None}
    assert g.number_of_nodes() == 0 and g.number_of_edges() == 0
    g.add_edge(1, 2, pos=[0])
    assert list(g.successors(1)) == [2] and list(g.predecessors(2)) == [1]
    w = rt.nn.Parameter(rt.tensor(np.ones(3, dtype=np.float32)))

    def step(x: rt.Tensor) -> rt.Tensor:
        return (w * x).sum()

    cap = capture(step, (rt.tensor(np.arange(3, dtype=np.float32)),))
    assert type(cap.graph) is nx.DiGraph
    assert {data["op"] for _, data in cap.graph.nodes(data=True)} >= {"mul", "sum"}
    assert set(cap.graph.graph) == {"outputs", "writes", "returns"}


def test_backward_names_without_a_regular_expression(monkeypatch: pytest.MonkeyPatch) -> None:
    """PyTorch's backward node names (a letter after a digit capital: Log1PBackward0) as the
    pattern gave them, for every registered primitive, without compiling a pattern."""
    import re

    from runtime.ops.registry import REGISTRY, Primitive

    def by_pattern(name: str) -> str:
        camel = "".join(p.capitalize() for p in name.split("_"))
        return re.sub(r"(?<=\d)[a-z]", lambda m: m.group().upper(), camel) + "Backward0"

    expected = {name: by_pattern(name) for name in [*REGISTRY, "log1p", "expm1", "x2y_3z",
                                                    "a1b2c3", "conv2d_9x", "atan2"]}
    assert expected["log1p"] == "Log1PBackward0" and expected["x2y_3z"] == "X2Y3ZBackward0"

    def refuse(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("a regular expression used")
    monkeypatch.setattr(re, "sub", refuse)
    monkeypatch.setattr(re, "compile", refuse)
    compute = Primitive.backward_name.func  # type: ignore[attr-defined]
    for name, prim in REGISTRY.items():
        if prim.node_name is None:
            assert compute(prim) == expected[name]
    for name in ("log1p", "expm1", "x2y_3z", "a1b2c3", "conv2d_9x", "atan2"):
        fake = type("P", (), {"node_name": None, "name": name})()
        assert compute(fake) == expected[name], name
    assert REGISTRY["log1p"].backward_name == "Log1PBackward0"


def test_a_module_load_makes_each_dtype_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """estimated_us, split_bounds and the array specs read a kernel's dtypes by name from
    numpy once a name (np.dtype of a string cost 1.3 us, asked of every array of every
    kernel a load meets), with the objects and figures np.dtype gives."""
    import types

    from codegen import ir as K
    from codegen import jit

    kernels = [K.Kernel(f"k{i}", (64, 32 + i), 1,
                        (K.Input("x", "float32", (32 + i, 1)), K.Input("y", "float64", (0, 1))),
                        (K.Load(0), K.Load(1), K.Reduce("sum", 0, "float32")),
                        (K.Output("s", 2, "float32"),)) for i in range(5)]
    for k in kernels:
        K.validate(k)
    expected = [(jit.estimated_us(k), jit.split_bounds(k), jit._array_specs(k)) for k in kernels]
    made: list[Any] = []

    def counted(*args: Any, **kwargs: Any) -> Any:
        made.append(args)
        return np.dtype(*args, **kwargs)
    monkeypatch.setattr(jit, "np", types.SimpleNamespace(**{**vars(np), "dtype": counted}))
    got = [(jit.estimated_us(k), jit.split_bounds(k), jit._array_specs(k)) for k in kernels]
    assert got == expected
    assert made == []
    specs = got[0][2]
    assert specs[0][0].dtype is np.dtype(np.float32) and specs[0][1].dtype is np.dtype("f8")


def test_to_arguments_without_compiling_a_named_tuple() -> None:
    """A process's first ``to`` (a warm first call's capture of a step calling it) imports
    runtime.ops.to_arguments without compiling code (typing.NamedTuple's eval); its answer
    is the 5-tuple it was, each field also by name."""
    import subprocess
    import sys

    code = (
        "import builtins\n"
        "import runtime as rt\n"
        "def refuse(*a, **k):\n"
        "    raise AssertionError('code compiled')\n"
        "builtins.eval = refuse\n"
        "from runtime.ops.to_arguments import parse_to\n"
        "a = parse_to(('cpu',), {'dtype': rt.float64, 'copy': True})\n"
        "assert a == ('cpu', rt.float64, False, True, None) and isinstance(a, tuple)\n"
        "assert (a.device, a.dtype, a.non_blocking, a.copy, a.memory_format) == tuple(a)\n"
        "x = rt.ones(2).to(rt.float64)\n"
        "assert x.dtype is rt.float64\n"
        "print(repr(a))\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == ("ToArguments(device='cpu', dtype=runtime.float64, "
                                  "non_blocking=False, copy=True, memory_format=None)")


def test_to_arguments_pickle_and_copy() -> None:
    import copy
    import pickle

    from runtime.ops.to_arguments import parse_to

    a = parse_to((rt.float32,), {"non_blocking": True})
    assert a == (None, rt.float32, True, False, None)
    for b in (pickle.loads(pickle.dumps(a)), copy.copy(a), copy.deepcopy(a)):
        assert b == a and type(b) is type(a) and b.non_blocking is True
