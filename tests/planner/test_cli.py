"""python -m planner, run in-process."""

from __future__ import annotations

import json
from typing import Any

import pytest

from planner.__main__ import main


def test_plan_summary(capsys):
    assert main(["plan", "mlp_small"]) == 0
    out = capsys.readouterr().out
    assert "nodes captured" in out and "peak memory" in out


def test_plan_listing_dot_json(capsys):
    assert main(["plan", "mlp_small", "--listing", "--dot", "--json"]) == 0
    out = capsys.readouterr().out
    assert "matmul(" in out and "digraph plan {" in out
    doc = json.loads(out.strip().splitlines()[-1])
    assert doc["format"] == "planner.plan" and doc["version"] == 1


def test_unknown_workload():
    with pytest.raises(SystemExit):
        main(["plan", "nope"])


def test_bench(capsys):
    assert main(["bench", "mlp_small", "--repeat", "1", "--min-time", "0.001"]) == 0
    out = capsys.readouterr().out
    assert "compiled ms" in out and "mlp_small" in out and "compiled/ours" in out


def test_cli_llvm_plan_and_cache(tmp_path: Any, monkeypatch: Any, capsys: Any) -> None:
    monkeypatch.setenv("BACKPLAN_CACHE_DIR", str(tmp_path))
    assert main(["plan", "chain", "--backend", "llvm", "--kernels"]) == 0
    out = capsys.readouterr().out
    assert "define" in out and "kernels" in out
    assert main(["cache"]) == 0  # planning compiled the chain's kernel
    assert "1 compiled modules" in capsys.readouterr().out
    (tmp_path / "x.o").write_bytes(b"0")
    assert main(["cache"]) == 0
    assert "2 compiled modules" in capsys.readouterr().out
    assert main(["cache", "--clear"]) == 0
    assert not list(tmp_path.glob("*.o"))


def test_backplan_console_script_is_the_planner_cli() -> None:
    from pathlib import Path

    tomllib = pytest.importorskip("tomllib")  # Python >= 3.11

    project = tomllib.loads((Path(__file__).parents[2] / "pyproject.toml").read_text())
    assert project["project"]["scripts"]["backplan"] == "planner.__main__:main"


def test_fusion_report_explains_the_unfused_steps(capsys: Any) -> None:
    assert main(["plan", "chain", "--fusion"]) == 0
    out = capsys.readouterr().out
    assert "fused into k0" in out and "kernel has no kernel-IR lowering" not in out
