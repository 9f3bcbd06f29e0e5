"""The planner's structure: its modules import each other without a cycle (imports inside
functions count), and a Plan holds only its declared fields, whatever ran it."""

from __future__ import annotations

import ast
import dataclasses
from pathlib import Path
from typing import Any

import networkx as nx
import numpy as np

import planner
import runtime as rt
from planner.plan import Plan

PLANNER = Path(planner.__file__).parent


def imports_of(text: str, modules: set[str]) -> set[str]:
    """The ``modules`` of planner a module's source imports anywhere in it (inside functions
    too), except under ``if TYPE_CHECKING:``."""
    tree = ast.parse(text)
    skipped: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            skipped.update(id(n) for child in node.body for n in ast.walk(child))
    found: set[str] = set()
    for node in ast.walk(tree):
        if id(node) in skipped:
            continue
        if isinstance(node, ast.ImportFrom):
            if node.level == 1:  # from .x import y, or from . import x
                found.update([node.module] if node.module else [a.name for a in node.names])
            elif node.module and node.module.startswith("planner."):
                found.add(node.module.split(".")[1])
            elif node.module == "planner":
                found.update(a.name for a in node.names)
        elif isinstance(node, ast.Import):
            found.update(a.name.split(".")[1] for a in node.names
                         if a.name.startswith("planner."))
    return {m.split(".")[0] for m in found} & modules


def import_graph() -> nx.DiGraph:
    modules = {p.stem for p in PLANNER.glob("*.py")}
    g = nx.DiGraph()
    for path in PLANNER.glob("*.py"):
        g.add_node(path.stem)
        g.add_edges_from((path.stem, m) for m in imports_of(path.read_text(), modules)
                         if m != path.stem)
    return g


def test_planner_imports_form_no_cycle() -> None:
    g = import_graph()
    assert ("executable", "program") in g.edges and ("plan", "schedule") in g.edges
    cycles = list(nx.simple_cycles(g))
    assert not cycles, cycles


def test_the_import_walk_sees_function_level_imports_and_skips_type_checking() -> None:
    modules = {"a", "b", "plan", "steps"}
    text = ("from typing import TYPE_CHECKING\n"
            "from . import steps\n"
            "if TYPE_CHECKING:\n    from .plan import Plan\n"
            "def f():\n    from .b import x\n    import planner.a\n")
    assert imports_of(text, modules) == {"steps", "b", "a"}


def test_a_plan_holds_only_its_declared_fields_after_runs() -> None:
    w = rt.tensor(np.linspace(-1, 1, 12, dtype=np.float32).reshape(3, 4), requires_grad=True)

    def step(x: Any) -> Any:
        w.grad = None
        loss = (x @ w).tanh().sum()
        loss.backward()
        return loss

    x = rt.tensor(np.ones((2, 3), np.float32))
    for backend in ("interpreter", "llvm"):
        compiled = planner.compile(step, backend=backend)
        for _ in range(3):
            compiled(x)
        plan = compiled.plan
        plan.summary(), plan.listing(), plan.to_dot(), plan.dumps(), plan.flops
        declared = {f.name for f in dataclasses.fields(Plan)}
        assert set(vars(plan)) == declared, set(vars(plan)) ^ declared
        again = Plan.loads(plan.dumps())
        assert set(vars(again)) == declared
