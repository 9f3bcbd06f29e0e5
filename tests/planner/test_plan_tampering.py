"""A plan is data: a serialized plan with any field replaced by a hostile value either fails to
load with a ValueError naming the field, or loads and then runs (or raises) on genuine inputs.
It never runs code taken from the plan and never crashes the process (the native kernels only
ever see arrays their IR fits).

The walk replaces every node of the JSON tree of three real plans (an MLP training step with
SGD, a fused elementwise+reduction step, a step with a gather and random draws), in batched
subprocesses, so that a crash is a failed test naming the mutation, not a dead test run.
"""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[2]
if __name__ == "__main__":  # a child batch: the project's packages from this checkout
    sys.path.insert(0, str(ROOT))

import planner  # noqa: E402
import runtime as rt  # noqa: E402
from planner.plan import Plan, materialize  # noqa: E402
from planner.steps import KernelStep  # noqa: E402
from runtime.nn import functional as F  # noqa: E402

# code a generated program would run if a plan's text reached its source: each variant is
# shaped to escape a different context (an index, a call's arguments, a statement)
CODE = ("0]; __import__('pathlib').Path({canary!r}).touch(); _=[0",
        "__import__('pathlib').Path({canary!r}).touch()",
        "x), __import__('pathlib').Path({canary!r}).touch(), (x",
        "0\n    __import__('pathlib').Path({canary!r}).touch()\n")
# every other kind of wrong value: huge, negative, fractional, not-a-number, wrong types
HOSTILE: tuple[Any, ...] = (10**18, -1, -(2**63), 2**64, 1.5, float("nan"), None, True, "",
                            [], [[[]]], {}, {"$tuple": [None]}, {"$dtype": "object"})
DESCRIPTIVE = frozenset({"graph", "slots", "stats"})
BATCH = 3000  # mutations a subprocess runs (its start-up, imports included, costs about a second)
BATCH_TIMEOUT_S = 240


# --- the plans ---------------------------------------------------------------------------------



def _pythonpath() -> str:
    """ROOT, then the PYTHONPATH inherited (the suite's shared bytecode: tests/conftest.py)."""
    return os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))

def mlp_sgd_step() -> tuple[Any, tuple[Any, ...]]:
    rng = np.random.default_rng(0)
    model = rt.nn.Sequential(rt.nn.Linear(3, 4), rt.nn.ReLU(), rt.nn.Linear(4, 2))
    opt = rt.optim.SGD(model.parameters(), lr=0.1)
    x = rt.tensor(rng.standard_normal((5, 3)).astype(np.float32))
    y = rt.tensor(rng.standard_normal((5, 2)).astype(np.float32))

    def step(x: Any, y: Any) -> Any:
        opt.zero_grad()
        loss = F.mse_loss(model(x), y)
        loss.backward()
        opt.step()
        return loss

    return step, (x, y)


def fused_step() -> tuple[Any, tuple[Any, ...]]:
    x = rt.tensor(np.linspace(-1, 1, 24, dtype=np.float32).reshape(4, 6), requires_grad=True)
    w = rt.tensor(np.linspace(0.5, 1.5, 6, dtype=np.float32), requires_grad=True)

    def step(x: Any, w: Any) -> Any:
        loss = ((x - x.mean(-1, keepdim=True)) * w).tanh().sum()
        loss.backward()
        return loss

    return step, (x, w)


def gather_rand_step() -> tuple[Any, tuple[Any, ...]]:
    w = rt.tensor(np.arange(12.0, dtype=np.float32).reshape(6, 2), requires_grad=True)
    idx = rt.tensor(np.array([1, 3, 3]))

    def step(i: Any) -> Any:
        loss = (F.dropout(w[i], 0.5, True) * rt.randn(3, 2)).sum()
        loss.backward()
        return loss

    return step, (idx,)


PLANS = {"mlp_sgd": mlp_sgd_step, "fused": fused_step, "gather_rand": gather_rand_step}


def genuine(name: str) -> tuple[str, list[Any], dict[int, np.ndarray], int]:
    """A real plan's JSON text, the argument and state arrays a replay hands it, and how many
    generators it draws from."""
    from planner.compile import _read_slot
    from runtime.tensor import Tensor

    fn, args = PLANS[name]()
    step = planner.compile(fn)
    step(*args)
    step(*args)
    binding = next(b for e in step._cache.values() for b in e.bindings if b.plan is step.plan)
    arrays = [a._data.copy() if isinstance(a, Tensor) else None for a in args]
    state = {slot: _read_slot(binding.slots[slot], args).copy() for slot, _ in step.plan.reads}
    return step.plan.dumps(), arrays, state, len(binding.generators)


def nodes(doc: Any, path: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """The path of every node of a JSON tree (dict keys and list indices), root excluded."""
    found = [path] if path else []
    if isinstance(doc, dict):
        for k, v in doc.items():
            found += nodes(v, (*path, k))
    elif isinstance(doc, list):
        for i, v in enumerate(doc):
            found += nodes(v, (*path, i))
    return found


def mutations(doc: Any) -> list[tuple[list[Any], list[Any]]]:
    """(path, values) per node: code and one other hostile value, each taken in turn so that
    every kind meets every part of the tree. What a plan keeps for inspection only (the
    captured graph, slot descriptions, stats: nothing runs from them, and ``Plan.loads``
    checks them as plain data) gets one of the two in turn: they are most of a plan's nodes,
    and this keeps the module fast."""
    found = []
    for i, path in enumerate(nodes(doc)):
        code = {"code": i % len(CODE)}
        hostile = {"hostile": i % len(HOSTILE)}
        values = [code, hostile] if path[0] not in DESCRIPTIVE else [(code, hostile)[i % 2]]
        found.append((list(path), values))
    return found


# --- a child batch -----------------------------------------------------------------------------


def run_batch(job: dict[str, Any]) -> dict[str, Any]:
    """Apply each mutation, load, run; report every outcome that is not a ValueError at load or
    a clean exception (or success) at run, and whether the canary appeared."""
    canary = Path(job["canary"])
    with np.load(job["arrays"]) as data:
        arrays = [data[f"a{i}"] if f"a{i}" in data else None for i in range(job["n_args"])]
        state = {int(k[1:]): data[k] for k in data.files if k.startswith("s")}
    doc = json.loads(job["text"])
    counts = {"rejected": 0, "ran": 0, "raised": 0}
    failures = []
    for n, (path, values) in enumerate(job["mutations"]):
        parent = doc
        for key in path[:-1]:
            parent = parent[key]
        original = parent[path[-1]]
        for value in (CODE[v["code"]].format(canary=str(canary)) if "code" in v
                      else HOSTILE[v["hostile"]] for v in values):
            print(n, flush=True)  # the parent names this mutation if the process dies
            parent[path[-1]] = value
            text = json.dumps(doc)
            parent[path[-1]] = original
            outcome = _outcome(text, arrays, state, job["n_generators"])
            if outcome in counts:
                counts[outcome] += 1
            else:
                failures.append(f"{path} = {value!r}: {outcome}")
            if canary.exists():
                failures.append(f"{path} = {value!r}: ran the plan's code")
                canary.unlink()
    return {"counts": counts, "failures": failures}


def _outcome(text: str, arrays: list[Any], state: dict[int, Any], n_generators: int) -> str:
    try:
        plan = Plan.loads(text)
    except ValueError:
        return "rejected"
    except Exception as e:  # a bad plan is a ValueError, nothing else
        return f"Plan.loads raised {type(e).__name__}: {e}"
    generators = [rt.Generator().manual_seed(0) for _ in range(n_generators)]
    try:
        _, writes = plan.run([None if a is None else a.copy() for a in arrays],
                             {k: v.copy() for k, v in state.items()}, generators)
        for _, value in writes:
            materialize(value)  # a parameter update runs its kernel here
    except Exception:  # a loaded plan may do wrong arithmetic; it may not crash
        return "raised"
    return "ran"


def _child(job_file: str) -> None:
    job = json.loads(Path(job_file).read_text())
    Path(job["result"]).write_text(json.dumps(run_batch(job)))


if __name__ == "__main__":
    _child(sys.argv[1])
    sys.exit(0)


# --- the tests ---------------------------------------------------------------------------------


def _spawn(job: dict[str, Any], job_file: Path) -> tuple[str, dict[str, Any] | None]:
    job_file.write_text(json.dumps(job))
    env = {**os.environ, "PYTHONPATH": _pythonpath()}
    try:
        proc = subprocess.run([sys.executable, __file__, str(job_file)], cwd=ROOT, env=env,
                              capture_output=True, text=True, timeout=BATCH_TIMEOUT_S)
    except subprocess.TimeoutExpired as e:
        last = (e.stdout or b"").decode() if isinstance(e.stdout, bytes) else (e.stdout or "")
        return _died(job, last, f"timed out after {BATCH_TIMEOUT_S} s"), None
    if proc.returncode != 0:
        why = f"died by signal {-proc.returncode}" if proc.returncode < 0 else \
            f"exited {proc.returncode}: {proc.stderr[-2000:]}"
        return _died(job, proc.stdout, why), None
    return "", json.loads(Path(job["result"]).read_text())


def _died(job: dict[str, Any], stdout: str, why: str) -> str:
    lines = stdout.split()
    path = job["mutations"][int(lines[-1])][0] if lines else "(before the first mutation)"
    return f"{job['name']}: the batch {why} at mutation {path}"


def test_every_field_of_real_plans_resists_hostile_values(tmp_path: Path) -> None:
    canary = tmp_path / "canary"
    jobs = []
    for name in PLANS:
        text, arrays, state, n_generators = genuine(name)
        npz = tmp_path / f"{name}.npz"
        np.savez(npz, **{f"a{i}": a for i, a in enumerate(arrays) if a is not None},
                 **{f"s{k}": v for k, v in state.items()})
        todo = mutations(json.loads(text))
        for start in range(0, len(todo), BATCH):
            jobs.append({"name": name, "text": text, "arrays": str(npz), "n_args": len(arrays),
                         "n_generators": n_generators, "canary": str(canary),
                         "mutations": todo[start:start + BATCH],
                         "result": str(tmp_path / f"{name}-{start}.json")})
    with ThreadPoolExecutor(max_workers=2) as pool:
        results = list(pool.map(lambda j: _spawn(j[1], tmp_path / f"job{j[0]}.json"),
                                enumerate(jobs)))
    problems = [died for died, _ in results if died]
    problems += [f for _, r in results if r for f in r["failures"]]
    assert not problems, "\n".join(problems[:50])
    assert not canary.exists()
    total = {k: sum(r["counts"][k] for _, r in results) for k in ("rejected", "ran", "raised")}
    # the walk is real: most mutations are rejected, some load and still run (a changed
    # constant, a slot's description, the graph); with the layout checks taken out of
    # serialize and program, it dies by SIGSEGV at a kernel input's stride
    assert total["rejected"] > total["ran"] > 0, total
    assert sum(total.values()) == sum(len(v) for j in jobs for _, v in j["mutations"])


def _tanh_sum_plan() -> tuple[Any, Any]:
    x = rt.tensor(np.ones((64, 64), np.float32), requires_grad=True)

    def f(x: Any) -> Any:
        y = (x * 2).tanh().sum()
        y.backward()
        return y

    return f, x


def test_issue_exploit_is_rejected_and_runs_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    f, x = _tanh_sum_plan()
    calls = []
    monkeypatch.setattr(os, "system", lambda cmd: calls.append(cmd) or 0)
    d = json.loads(planner.compile(f).lower(x).dumps())
    d["inputs"][0]["$tuple"][0] = "0]; __import__('os').system('id'); _=[0"
    with pytest.raises(ValueError, match=r"plan field inputs\[0\]\[0\]"):
        planner.Plan.loads(json.dumps(d)).run([x.detach().numpy()], {}, [])
    assert calls == []


def test_run_checks_argument_shapes_and_dtypes() -> None:
    f, x = _tanh_sum_plan()
    plan = planner.compile(f).lower(x)
    with pytest.raises(ValueError, match=r"argument 0: expected shape \(64, 64\) and dtype "
                                         r"float32, got shape \(1,\) and dtype float32"):
        plan.run([np.ones(1, np.float32)], {}, [])
    with pytest.raises(ValueError, match=r"argument 0: .*got shape \(64, 64\) and dtype float64"):
        plan.run([np.ones((64, 64), np.float64)], {}, [])
    with pytest.raises(ValueError, match="argument 0 is missing"):
        plan.run([], {}, [])
    with pytest.raises(ValueError, match="argument 0: expected an array"):
        plan.run([[1.0] * 64], {}, [])
    got, _ = plan.run([np.ones((64, 64), np.float32)], {}, [])
    np.testing.assert_allclose(got[1], np.tanh(2.0) * 64 * 64, rtol=1e-5)


def test_run_checks_state_shapes() -> None:
    text, arrays, state, _ = genuine("mlp_sgd")
    plan = Plan.loads(text)
    slot = min(state)
    state[slot] = state[slot][:1]
    with pytest.raises(ValueError, match=f"state slot {slot}: expected shape"):
        plan.run(arrays, state, [])


def _kernel_plan() -> tuple[Any, dict[str, Any], int]:
    f, x = _tanh_sum_plan()
    text = planner.compile(f).lower(x).dumps()
    doc = json.loads(text)
    i = next(i for i, s in enumerate(doc["steps"]) if s["op"] == "kernel")
    return f, doc, i


def _kernel_field(doc: dict[str, Any], i: int) -> dict[str, Any]:
    attrs = dict(doc["steps"][i]["attrs"]["$dict"])
    return attrs["kernel"]["$dataclass"][1]


def test_tampered_kernel_layout_is_rejected_at_load() -> None:
    _, doc, i = _kernel_plan()
    inp = _kernel_field(doc, i)["inputs"]["$tuple"][0]["$dataclass"][1]
    inp["strides"]["$tuple"] = [s * 64 for s in inp["strides"]["$tuple"]]  # past the buffer
    with pytest.raises(ValueError, match=rf"steps\[{i}\].*at least .* elements"):
        Plan.loads(json.dumps(doc))
    _, doc, i = _kernel_plan()
    specs = dict(doc["steps"][i]["attrs"]["$dict"])["out_specs"]
    specs[0]["$tuple"][0] = [1]  # an output smaller than the kernel writes
    with pytest.raises(ValueError, match=rf"steps\[{i}\]\.attrs\.out_specs\[0\]"):
        Plan.loads(json.dumps(doc))


def test_absurd_sizes_are_rejected_at_load() -> None:
    _, doc, i = _kernel_plan()
    doc["steps"][0]["shape"] = [10**9, 10**9]
    with pytest.raises(ValueError, match=r"steps\[0\]\.shape.*more than"):
        Plan.loads(json.dumps(doc))
    _, doc, i = _kernel_plan()
    _kernel_field(doc, i)["domain"]["$tuple"] = [10**9, 10**9]
    with pytest.raises(ValueError, match=rf"steps\[{i}\]"):
        Plan.loads(json.dumps(doc))


def test_missing_buffer_is_named() -> None:
    _, doc, i = _kernel_plan()
    doc["steps"][i]["args"][0]["$tuple"][1] = 99
    with pytest.raises(ValueError, match=rf"plan field steps\[{i}\]\.args\[0\]: buffer 99 does "
                                         "not exist"):
        Plan.loads(json.dumps(doc))


def test_kernel_tampered_in_memory_is_stopped_at_the_call() -> None:
    """A plan changed after loading (no validator in the way): the kernel's signature check
    refuses the call before native code sees a layout its arrays do not hold."""
    f, x = _tanh_sum_plan()
    plan = Plan.loads(planner.compile(f).lower(x).dumps())  # nothing built from it yet
    step = next(s for s in plan.steps if isinstance(s, KernelStep))
    k = step.kernel
    wide = dataclasses.replace(k.inputs[0], strides=tuple(s * 64 for s in k.inputs[0].strides))
    step.kernel = dataclasses.replace(k, inputs=(wide, *k.inputs[1:]))
    with pytest.raises(ValueError, match="at least .* elements"):
        plan.run([x.detach().numpy()], {}, [])
    with pytest.raises(ValueError, match="at least .* elements"):
        plan.kernel_call(step)
