"""The eager fast paths (dispatch, node construction, tensor creation) keep PyTorch's
observable behaviour."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import runtime as rt

torch = pytest.importorskip("torch")


def _sequence_numbers(lib: object) -> list[int]:
    x = lib.ones(3, requires_grad=True)  # type: ignore[attr-defined]
    y = lib.ones(3, requires_grad=True)  # type: ignore[attr-defined]
    a = x * 2  # makes x's accumulator
    first = a.grad_fn._sequence_nr() if lib is torch else a.grad_fn.sequence_nr()
    del a  # x's accumulator dies with the graph: the next product makes a new one
    b = x * y  # makes two accumulators
    c = b * 2
    nums = [b.grad_fn, c.grad_fn]
    acc = b.grad_fn.next_functions[0][0]
    seq = [n._sequence_nr() if lib is torch else n.sequence_nr() for n in nums]
    acc_seq = acc._sequence_nr() if lib is torch else acc.sequence_nr()
    return [s - first for s in seq] + [acc_seq]


def test_accumulators_take_no_sequence_number_as_torchs() -> None:
    # a leaf's AccumulateGrad is numbered UINT64_MAX and does not shift later nodes' numbers
    assert _sequence_numbers(rt) == _sequence_numbers(torch) == [1, 2, (1 << 64) - 1]


def test_accumulator_meta_and_identity() -> None:
    x = rt.ones(2, 3, dtype=rt.float64, requires_grad=True)
    a = x * 2
    b = x + 1
    acc = a.grad_fn.next_functions[0][0]
    assert b.grad_fn.next_functions[0][0] is acc  # alive while a graph holds it
    assert type(acc).__name__ == "AccumulateGrad"
    assert tuple(acc.input_metas[0].shape) == (2, 3)
    assert acc.input_metas[0].dtype is rt.float64
    assert acc.next_functions == ()
    (a.sum() + b.sum()).backward()
    np.testing.assert_array_equal(x.grad.numpy(), np.full((2, 3), 3.0))


def test_recorded_node_metas_edges_and_saved() -> None:
    x = rt.ones(2, 3, requires_grad=True)
    w = rt.full((3,), 2.0)  # no gradient: no edge
    y = (x * 1.0) * w
    node = y.grad_fn
    assert node.name() == "MulBackward0"
    assert node.next_functions[1] == (None, 0)
    assert node.next_functions[0][0].name() == "MulBackward0"
    assert [tuple(m.shape) for m in node.metas] == [(2, 3), (3,)]
    prod = x * 2.5  # a Python number stays a constant among the metas
    assert prod.grad_fn.metas[1] == 2.5
    y.sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), np.full((2, 3), 2.0))


@pytest.mark.parametrize(("cond_shape", "a_shape", "b_shape"), [
    ((64, 32), (64, 32), None),  # same shapes, a scalar: the bit-select path
    ((64, 32), (32,), (64, 32)),  # a broadcast operand: numpy's broadcast_shapes decides
    ((64, 1), (64, 32), None),  # the result wider than the condition: numpy's where
    ((8,), (8,), (8,)),  # small: numpy's where
])
def test_where_fast_paths_match_torch(cond_shape: tuple[int, ...], a_shape: tuple[int, ...],
                                      b_shape: tuple[int, ...] | None) -> None:
    rng = np.random.default_rng(0)
    c = rng.standard_normal(cond_shape) > 0
    a = rng.standard_normal(a_shape).astype(np.float32)
    a.flat[0], a.flat[-1] = -0.0, np.nan
    b = rng.standard_normal(b_shape).astype(np.float32) if b_shape else 0.0
    b_rt = rt.tensor(b) if b_shape else b
    b_t = torch.tensor(b) if b_shape else b
    ours = rt.where(rt.tensor(c), rt.tensor(a), b_rt)
    theirs = torch.where(torch.tensor(c), torch.tensor(a), b_t)
    assert ours.dtype.name == str(theirs.dtype).removeprefix("torch.")
    np.testing.assert_array_equal(ours.numpy().view(np.int32), theirs.numpy().view(np.int32))


@pytest.mark.parametrize(("a", "b"), [
    (("float32", 2), 0.5), (("float32", 2), 3), (("float16", 2), True),
    (("float32", 2), ("float64", 0)), (("int32", 2), 2.5), (("bool", 1), 2),
    (("float64", 2), ("float32", 2)), (("int64", 0), ("float16", 2)),
])
def test_promotion_fast_path_matches_torch(a: Any, b: Any) -> None:
    def make(lib: Any, spec: Any) -> Any:
        if not isinstance(spec, tuple):
            return spec
        name, ndim = spec
        return lib.ones((3,) * ndim, dtype=getattr(lib, name))

    ours = rt.where(rt.ones(3, 3, dtype=rt.bool), make(rt, a), make(rt, b))
    theirs = torch.where(torch.ones(3, 3, dtype=torch.bool), make(torch, a), make(torch, b))
    assert ours.dtype.name == str(theirs.dtype).removeprefix("torch.")
    total = (theirs + make(torch, b)).dtype
    assert (ours + make(rt, b)).dtype.name == str(total).removeprefix("torch.")


def test_where_refuses_a_non_number_as_torch() -> None:
    with pytest.raises(TypeError):
        torch.where(torch.ones(2, dtype=torch.bool), torch.ones(2), "x")
    with pytest.raises(TypeError):
        rt.where(rt.ones(2, dtype=rt.bool), rt.ones(2), "x")


def _modes_seen(lib: Any) -> tuple[list[bool], bool]:
    """Grad mode in each tensor hook of a backward whose first hook turns grad mode on and
    leaves it so; then the caller's mode after the backward."""
    x = lib.ones(3, requires_grad=True)
    a = x * 2
    b = a * 3
    seen: list[bool] = []

    def leaky(g: Any) -> None:
        seen.append(lib.is_grad_enabled())
        lib.set_grad_enabled(True)  # not restored: the engine's next node must not see it

    def look(g: Any) -> None:
        seen.append(lib.is_grad_enabled())

    b.register_hook(leaky)
    a.register_hook(look)
    x.register_hook(look)
    total = b.sum()
    with lib.no_grad():
        total.backward()
        after = lib.is_grad_enabled()
    return seen, after


def test_grad_mode_per_node_as_torchs() -> None:
    assert _modes_seen(rt) == _modes_seen(torch) == ([False, False, False], False)


def test_graph_task_id_inside_and_after_backward() -> None:
    from runtime.autograd.engine import current_graph_task_id

    x = rt.ones(3, requires_grad=True)
    ids: list[int] = []
    y = (x * 2) * 3
    y.register_hook(lambda g: ids.append(current_graph_task_id()))
    x.register_hook(lambda g: ids.append(current_graph_task_id()))
    y.sum().backward()
    assert len(ids) == 2 and ids[0] == ids[1] >= 0
    assert current_graph_task_id() == -1


def test_inference_tensors_per_thread() -> None:
    import threading

    assert not (rt.ones(2) + 1).is_inference()
    inside, outside = threading.Event(), threading.Event()
    made: dict[str, bool] = {}

    def infer() -> None:
        with rt.inference_mode():
            made["first"] = (rt.ones(2) + 1).is_inference()
            inside.set()
            outside.wait(10)

    worker = threading.Thread(target=infer)
    worker.start()
    inside.wait(10)
    made["other thread meanwhile"] = (rt.ones(2) + 1).is_inference()
    outside.set()
    worker.join()
    with rt.inference_mode():
        made["again"] = (rt.ones(2) * 2).is_inference()
        with rt.inference_mode(False):
            made["nested off"] = (rt.ones(2) * 2).is_inference()
    assert made == {"first": True, "other thread meanwhile": False, "again": True,
                    "nested off": False}
    with torch.inference_mode():
        assert (torch.ones(2) * 2).is_inference()
        with torch.inference_mode(False):
            assert not (torch.ones(2) * 2).is_inference()
