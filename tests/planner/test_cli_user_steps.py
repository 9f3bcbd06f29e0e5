"""``backplan plan FILE.py:FUNC`` as a subprocess on examples/mlp_step.py: each view, the
pipeable --dot/--json, and one-line errors with status 2 for steps that cannot be planned."""

from __future__ import annotations

import json
import os
import re
import shutil
from pathlib import Path
from typing import Any

from planner.__main__ import main
from tests.planner.test_cli import ROOT, run_cli

STEP = "examples/mlp_step.py:step"


def check_dot(text: str) -> None:
    """``text`` is one ``digraph plan { ... }`` of node and edge lines, braces balanced."""
    lines = text.strip().splitlines()
    assert lines[0] == "digraph plan {" and lines[-1] == "}", text[:200]
    assert text.count("{") == text.count("}") == 1
    body = lines[2:-1]
    assert lines[1] == "  node [style=filled];"
    nodes = {m[1] for line in body
             if (m := re.fullmatch(r'  (s\d+) \[label="[^"]*", [a-z0-9=, ]+\];', line))}
    edges = [m.groups() for line in body
             if (m := re.fullmatch(r"  (s\d+) -> (s\d+)( \[penwidth=3\])?;", line))]
    assert len(nodes) + len(edges) == len(body) and nodes and edges
    assert {a for a, _, _ in edges} | {b for _, b, _ in edges} <= nodes


def test_views_of_a_user_step() -> None:
    text, dot, unfused, doc, llvm, cuda = run_cli(
        ["plan", STEP, "--listing", "--schedule", "--fusion", "--workers", "2",
         "--executor", "parallel"],
        ["plan", STEP, "--dot"], ["plan", STEP, "--dot", "--unfused"], ["plan", STEP, "--json"],
        ["plan", STEP, "--backend", "llvm", "--kernels"],
        ["plan", STEP, "--device", "cuda", "--kernels"])  # no GPU needed to inspect it
    for done in (text, dot, unfused, doc, llvm, cuda):
        assert done.returncode == 0 and not done.stderr, done.stderr
    assert text.stdout.startswith("Plan on cpu") and "= matmul" in text.stdout
    assert "critical path" in text.stdout and "parallel" in text.stdout
    assert "fused into k0" in text.stdout
    assert llvm.stdout.startswith("Plan on cpu") and "define " in llvm.stdout
    assert cuda.stdout.startswith("Plan on cuda:0") and "__global__" in cuda.stdout
    check_dot(dot.stdout)
    check_dot(unfused.stdout)
    # fused kernels are nodes labelled with their ops; the captured graph has none
    assert re.search(r'label="%\d+ k0: [a-z_ ]+\\n', dot.stdout)
    assert " k0: " not in unfused.stdout and unfused.stdout.count(" -> ") > dot.stdout.count(
        " -> ")
    stats = json.loads(doc.stdout)
    assert {"flops", "bytes", "peak_memory", "executor", "kernels"} <= stats.keys()
    assert stats["flops"] > 0 and stats["bytes"] > 0 and stats["peak_memory"] > 0
    kernel = stats["kernels"][0]
    assert kernel.keys() == {"name", "device", "language", "fused_ops", "domain", "bytes"}
    assert kernel["language"] == "llvm" and kernel["fused_ops"] and kernel["bytes"] > 0


LOSS = ("def step(x, w, b):\n    return ((x @ w + b).tanh() ** 2).mean()\n\n"
        "def make_inputs():\n    return rt.ones(8, 4), rt.ones(4, 3), rt.zeros(3)\n")


def test_wrt_plans_only_the_gradients_asked_for(tmp_path: Path) -> None:
    loss = bad_step(tmp_path, "loss", LOSS)
    of_w, of_xw, of_b = run_cli(*(["plan", loss, "--wrt", names, "--listing"]
                                  for names in ("w", "x,w", "b")))
    for done in (of_w, of_xw, of_b):
        assert done.returncode == 0 and not done.stderr, done.stderr
    # the forward matmul, then one more per gradient of a matmul operand
    assert [done.stdout.count("= matmul(") for done in (of_w, of_xw, of_b)] == [2, 3, 1]


def bad_step(tmp_path: Path, name: str, body: str) -> str:
    (tmp_path / f"{name}.py").write_text("import runtime as rt\n\n" + body)
    return f"{tmp_path / name}.py:step"


def test_steps_that_cannot_be_planned_fail_in_one_line(tmp_path: Path) -> None:
    ok = "def step(x):\n    return (x * 2).sum()\n\n"
    cases = {
        "no such file": (f"{tmp_path}/absent.py:step", "absent.py: no such file"),
        "no function": (bad_step(tmp_path, "nofunc", "def other(x):\n    return x\n"),
                        "no function 'step'"),
        "no inputs": (bad_step(tmp_path, "noinputs", ok), "defines neither make_inputs()"),
        "inputs raise": (bad_step(tmp_path, "raises", ok + "def make_inputs():\n"
                                  "    raise OSError('no data here')\n"),
                         "make_inputs() raised OSError: no data here"),
        "not a tuple": (bad_step(tmp_path, "notuple", ok + "example_inputs = [rt.ones(3)]\n"),
                        "example_inputs must be a tuple"),
        "capture fails": (bad_step(tmp_path, "fails", "def step(x):\n    raise ValueError("
                                   "'bad step')\n\nexample_inputs = (rt.ones(3),)\n"),
                          "the step could not be captured: ValueError: bad step"),
        "import fails": (bad_step(tmp_path, "broken", "import nosuchmodule\n"),
                         "importing it raised ModuleNotFoundError"),
        "wrt unknown": (bad_step(tmp_path, "wrt", LOSS) + " --wrt w,q",
                        "--wrt q: not among step's inputs (x, w, b)"),
        "wrt no loss": (bad_step(tmp_path, "notloss", "def step(x):\n    return x * 2\n\n"
                                 "example_inputs = (rt.ones(3),)\n") + " --wrt x",
                        "--wrt: step must return a scalar loss tensor, got shape (3,)"),
    }
    runs = run_cli(*(["plan", *target.split()] for target, _ in cases.values()),
                   ["plan", cases["capture fails"][0], "--debug"],
                   ["plan", STEP, "--dot", "--listing"], ["plan", STEP, "--unfused"],
                   ["--version"], ["plan", STEP, "--svg", str(tmp_path / "plan.svg")])
    for (what, (_, message)), done in zip(cases.items(), runs):
        assert done.returncode == 2 and not done.stdout, (what, done.stdout)
        assert done.stderr.count("\n") == 1 and message in done.stderr, (what, done.stderr)
        assert done.stderr.startswith("backplan: error: "), (what, done.stderr)
    debug, mixed, unfused, version, svg = runs[len(cases):]
    assert debug.returncode == 1 and "Traceback" in debug.stderr and "bad step" in debug.stderr
    assert mixed.returncode == 2 and "leave out --listing" in mixed.stderr
    assert unfused.returncode == 2 and "--unfused goes with --dot" in unfused.stderr
    assert version.returncode == 0 and re.fullmatch(r"backplan \d+\.\d+\.\d+\S*\n",
                                                    version.stdout)
    if shutil.which("dot") is None:
        assert svg.returncode == 2 and "install graphviz" in svg.stderr
        assert svg.stderr.count("\n") == 1
    else:
        assert svg.returncode == 0 and "<svg" in (tmp_path / "plan.svg").read_text()
    assert (ROOT / "examples" / "mlp_step.py").is_file()


def test_svg_and_png_go_through_graphviz_dot(tmp_path: Path, monkeypatch: Any,
                                             capsys: Any) -> None:
    # a stand-in for Graphviz's dot: it records its format and the DOT it was given, and
    # fails on demand, so the rendering path is tested where Graphviz is not installed
    fake = tmp_path / "bin" / "dot"
    fake.parent.mkdir()
    fake.write_text('#!/bin/sh\n[ -n "$FAIL_DOT" ] && { echo "syntax error" >&2; exit 1; }\n'
                    'echo "$1" > "$3"; cat >> "$3"\n')
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", f"{fake.parent}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.chdir(ROOT)
    assert main(["plan", STEP, "--png", str(tmp_path / "plan.png")]) == 0
    assert not capsys.readouterr().out  # the picture goes to the file only
    rendered = (tmp_path / "plan.png").read_text()
    assert rendered.startswith("-Tpng\n") and " k0: " in rendered
    check_dot(rendered.split("\n", 1)[1])
    monkeypatch.setenv("FAIL_DOT", "1")
    assert main(["plan", STEP, "--svg", str(tmp_path / "plan.svg"), "--unfused"]) == 2
    assert capsys.readouterr().err == "backplan: error: dot -Tsvg failed: syntax error\n"
