import functools
import json

import numpy as np
import pytest

import planner
from planner.plan import materialize
import runtime as rt
from benchmarks.workloads import WORKLOADS
from planner.compile import _read_slot
from planner.serialize import decode, encode
from runtime.tensor import Tensor


def _binding_arrays(step, args):
    """The argument and state arrays a replay of the current plan reads (as compile._replay)."""
    binding = next(b for e in step._cache.values() for b in e.bindings if b.plan is step.plan)
    arrays = [a._data.copy() if isinstance(a, Tensor) else None for a in args]
    state = {slot: _read_slot(binding.slots[slot], args).copy() for slot, _ in binding.plan.reads}
    return binding, arrays, state


def _same(a, b):
    assert type(a) is type(b) or (isinstance(a, np.ndarray) and isinstance(b, np.ndarray))
    if isinstance(a, np.ndarray):
        np.testing.assert_array_equal(a, b)
    elif isinstance(a, (tuple, list)):
        assert len(a) == len(b)
        for x, y in zip(a, b):
            _same(x, y)
    else:
        assert a == b


@pytest.mark.parametrize("name", list(WORKLOADS))
def test_round_trip_runs_identically(name):
    workload = WORKLOADS[name]
    case = workload.build(rt, workload.make_arrays(0))
    step = planner.compile(case.fn)
    step(*case.args)
    step(*case.args)
    binding, arrays, state = _binding_arrays(step, case.args)
    plan = step.plan
    text = plan.dumps()
    json.loads(text)  # plain JSON
    loaded = planner.Plan.loads(text)
    assert loaded.listing() == plan.listing()
    assert loaded.stats == plan.stats and loaded.slots == plan.slots
    assert sorted(loaded.graph.nodes) == sorted(plan.graph.nodes)
    assert sorted(loaded.graph.edges) == sorted(plan.graph.edges)
    want = plan.run([None if a is None else a.copy() for a in arrays],
                    {k: v.copy() for k, v in state.items()}, binding.generators)
    got = loaded.run([None if a is None else a.copy() for a in arrays],
                     {k: v.copy() for k, v in state.items()}, binding.generators)
    _same(want[0], got[0])
    assert [s for s, _ in want[1]] == [s for s, _ in got[1]]
    for (_, a), (_, b) in zip(want[1], got[1]):
        _same(materialize(a), materialize(b))  # parameter updates run at write-back
    assert loaded.dumps() == text


@pytest.mark.parametrize("value", [
    None, 1, 2.5, True, "x", (1, 2), [1, (2, 3)], slice(1, None, 2), Ellipsis,
    (slice(None), None, Ellipsis), {"a": (1,), 3: [None]}, rt.float32, rt.int64,
    np.float32(1.5), np.int64(3),
])
def test_encode_decode_values(value):
    back = decode(json.loads(json.dumps(encode(value))))
    assert back == value and type(back) is type(value)


def test_encode_arrays():
    a = np.arange(12, dtype=np.int64).reshape(3, 4)
    back = decode(json.loads(json.dumps(encode(a))))
    assert back.dtype == a.dtype and back.shape == a.shape
    np.testing.assert_array_equal(back, a)


def test_rejects_other_text():
    with pytest.raises(ValueError):
        planner.Plan.loads(json.dumps({"format": "other"}))


@functools.cache
def _mlp_text():
    workload = WORKLOADS["mlp_small"]
    case = workload.build(rt, workload.make_arrays(0))
    return planner.compile(case.fn).lower(*case.args).dumps()


def _mlp_doc():
    return json.loads(_mlp_text())


def _first(doc, op):
    return next(i for i, s in enumerate(doc["steps"]) if s["op"] == op)


@pytest.mark.parametrize("edit, message", [
    (lambda d: d["steps"][_first(d, "matmul")]["args"][1]["$tuple"].__setitem__(1, 99999),
     r"steps\[\d+\]\.args\[1\]: buffer 99999 does not exist"),
    (lambda d: d["steps"][_first(d, "matmul")].__setitem__("op", "system"),
     r"steps\[\d+\]\.op: 'system' is not a registered primitive"),
    (lambda d: d["steps"][_first(d, "matmul")].__setitem__("shape", [32, 65]),
     r"steps\[\d+\]: matmul makes shape \(32, 64\) float32 of its arguments, the step says "
     r"\(32, 65\)"),
    (lambda d: d["steps"][_first(d, "permute")]["attrs"]["$dict"][0].__setitem__(0, "dim"),
     r"steps\[\d+\]\.attrs: permute takes no attribute 'dim'"),
    (lambda d: d["steps"][0].__setitem__("dtype", "object"),
     r"steps\[0\]\.dtype: 'object' is not one of"),
    (lambda d: d["steps"][0].__setitem__("shape", [-1, 64]), r"steps\[0\]\.shape"),
    (lambda d: d["steps"][_first(d, "matmul")]["args"][0]["$tuple"].__setitem__(
        1, d["steps"][-1]["out"]), r"steps\[\d+\]\.args\[0\]: buffer \d+ is read before it is "
                                   "computed"),
    (lambda d: d["steps"][0].__setitem__("free", []), r"steps\[0\]: needs exactly the fields"),
    (lambda d: d["reads"][0]["$tuple"].__setitem__(0, 10**6), r"reads\[0\]\[0\]"),
    (lambda d: d["writes"][0]["$tuple"].__setitem__(0, "0"), r"writes\[0\]\[0\]"),
    (lambda d: d.__setitem__("returns", {"$tuple": ["node", 10**6]}),
     r"returns\[1\]: buffer 1000000 does not exist"),
    (lambda d: d["consts"][0].__setitem__(1, {"$array": {"dtype": "|O", "shape": [1],
                                                          "data": ""}}),
     r"consts\[0\]\[1\]\.\$array\.dtype: '\|O' is not an array dtype"),
    (lambda d: d["steps"][_first(d, "kernel")]["attrs"]["$dict"].append(["commit", 7]),
     r"steps\[\d+\]\.attrs"),
    (lambda d: d.__setitem__("graph", {"$dataclass": ["Kernel", {}]}),
     r"graph\.\$dataclass: a Kernel is kernel IR"),
])
def test_a_bad_field_is_a_value_error_naming_it(edit, message):
    doc = _mlp_doc()
    edit(doc)
    with pytest.raises(ValueError, match=message):
        planner.Plan.loads(json.dumps(doc))


@pytest.mark.parametrize("text", ["", "[" * 100_000, '{"format": "planner.plan"}', "null",
                                  json.dumps({"format": "planner.plan", "version": 2})])
def test_not_a_plan_is_a_value_error(text):
    with pytest.raises(ValueError):
        planner.Plan.loads(text)


def test_a_zero_dim_array_keeps_its_shape() -> None:
    """numpy's ascontiguousarray makes a 0-d array 1-d: a plan's 0-d constant (a loss's
    all-ignored test) came back as shape (1,) and the plan was refused."""
    from planner.serialize import decode, encode

    for value in (np.array(2.5, np.float32), np.array(True), np.arange(6.0).reshape(2, 3).T):
        back = decode(json.loads(json.dumps(encode(value))), "v", kernels=False)
        assert type(back) is np.ndarray and back.shape == value.shape
        assert back.dtype == value.dtype and np.array_equal(back, value)
