"""The first capture's costs in planner.guards, cut without changing what it finds: the
bytecode decoded by planner.guards' own 3.11 decoder is dis's (each field the walk reads),
a step whose code object is rebound or whose file is edited and reloaded is walked anew
(the caches are keyed by the code object, the file's directory), and a file is the user's or
the library's as ``os.path.realpath`` says, symlinks included."""

from __future__ import annotations

import dis
import importlib
import math
import os
import sys
import types
from pathlib import Path as FsPath
from typing import Any

import numpy as np
import pytest

import runtime as rt
from planner import guards

SCALE = 2.0
OTHER = 3.0


def _codes(*fns: Any) -> list[types.CodeType]:
    found, stack = [], [f.__code__ for f in fns]
    while stack:
        code = stack.pop()
        found.append(code)
        stack += [c for c in code.co_consts if isinstance(c, types.CodeType)]
    return found


def _module_codes(*modules: types.ModuleType) -> list[types.CodeType]:
    fns = [v for m in modules for v in vars(m).values() if isinstance(v, types.FunctionType)]
    fns += [v for m in modules for c in vars(m).values() if isinstance(c, type)
            for v in vars(c).values() if isinstance(v, types.FunctionType)]
    return _codes(*fns)


def _wide(x: Any) -> Any:  # EXTENDED_ARG (300 constants), jumps both ways, comparisons, f-strings
    src = "def f(x):\n    t = 0\n" + "".join(f"    t += x * {i}.5\n" for i in range(300)) + \
        "    while t > 0 and t != 3:\n        t -= 1\n        if t is None: break\n" \
        "    y = float('nan')\n    return f'{t!r:>4}{x}', [i for i in range(t) if i < 2], y\n"
    scope: dict[str, Any] = {}
    exec(compile(src, "<wide>", "exec"), scope)
    return scope["f"]


def _expected(ins: dis.Instruction) -> tuple[Any, ...]:
    argval = ins.arg if ins.opname == "FORMAT_VALUE" else ins.argval
    argrepr = ins.argrepr if ins.opname == "BINARY_OP" else ""
    return ins.opname, ins.arg, argval, argrepr, ins.is_jump_target


def _same(a: tuple[Any, ...], b: tuple[Any, ...]) -> bool:
    nan = isinstance(a[2], float) and math.isnan(a[2])
    return a == b or (nan and a[:2] == b[:2] and a[3:] == b[3:] and math.isnan(b[2]))


@pytest.mark.skipif(sys.version_info[:2] != (3, 11), reason="planner.guards decodes 3.11's "
                    "bytecode itself; other versions use dis.get_instructions")
def test_the_3_11_decoder_gives_dis_fields() -> None:
    import planner.capture as cap
    import planner.compile as comp

    codes = _module_codes(guards, cap, comp, rt.nn.functional, np.lib.npyio) + _codes(_wide(0))
    checked = 0
    for code in codes:
        want = [_expected(ins) for ins in dis.get_instructions(code)]
        got = [tuple(ins) for ins in guards._decode_3_11(code)]
        assert len(got) == len(want), code
        bad = [(w, g) for w, g in zip(want, got) if not _same(w, g)]
        assert not bad, (code, bad[:3])
        checked += len(want)
    assert checked > 10_000
    ops = {ins.opname for code in _codes(_wide(0)) for ins in guards._instructions(code)}
    assert {"EXTENDED_ARG", "JUMP_BACKWARD", "COMPARE_OP", "FORMAT_VALUE", "BINARY_OP"} <= ops


def _reads(fn: Any, *args: Any) -> set[str]:
    found = guards.call_accesses(fn, args)
    return {p.name for p in found.reads if p.kind == "global"}


def _other(x: Any) -> Any:
    return (x * OTHER).sum()


def test_a_step_whose_code_is_rebound_is_walked_again() -> None:
    def step(x: Any) -> Any:
        return (x * SCALE).sum()

    x = rt.ones(2)
    assert "SCALE" in _reads(step, x)
    step.__code__ = _other.__code__
    assert _reads(step, x) >= {"OTHER"} and "SCALE" not in _reads(step, x)


def test_an_edited_and_reloaded_file_is_walked_anew(tmp_path: FsPath,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    source = tmp_path / "h42_user_step.py"
    source.write_text("A = 2.0\nB = 5.0\n\ndef step(x):\n    return (x * A).sum()\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    module = importlib.import_module("h42_user_step")
    try:
        x = rt.ones(2)
        assert {"A"} <= _reads(module.step, x) and "B" not in _reads(module.step, x)
        source.write_text("A = 2.0\nB = 5.0\n\ndef step(x):\n    return (x * B).sum()\n\n\n")
        module = importlib.reload(module)
        assert {"B"} <= _reads(module.step, x) and "A" not in _reads(module.step, x)
        assert guards.users_function(module.step)
    finally:
        sys.modules.pop("h42_user_step", None)


def test_a_users_file_linked_from_the_library_is_the_libraries(tmp_path: FsPath) -> None:
    # the realpath decides: a user's directory holding a link into this project's package is
    # the library's code there, and a link from anywhere to the user's file is the user's
    library = os.path.dirname(os.path.abspath(guards.__file__))
    linked_dir = tmp_path / "linked"
    linked_dir.symlink_to(library)
    assert not guards._users_file(str(linked_dir / "guards.py"))
    user = tmp_path / "mine.py"
    user.write_text("x = 1\n")
    link = tmp_path / "link_to_mine.py"
    link.symlink_to(user)
    assert guards._users_file(str(link)) and guards._users_file(str(user))
    library_file = tmp_path / "lib_link.py"
    library_file.symlink_to(os.path.join(library, "guards.py"))
    assert not guards._users_file(str(library_file))


@pytest.mark.parametrize("name", ["mlp_small", "rnn"])
def test_a_workloads_watch_is_unchanged_by_the_caches(name: str) -> None:
    from benchmarks.workloads import WORKLOADS

    work = WORKLOADS[name]
    case = work.build(rt, work.make_arrays(0))
    guards._instructions.cache_clear()
    first = guards.call_accesses(case.fn, case.args)
    again = guards.call_accesses(case.fn, case.args)
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(guards, "_walked", {})  # (each helper walked again)
        mp.setattr(guards, "_instructions",
                   lambda code: tuple(dis.get_instructions(code)))  # dis's own decode
        plain = guards.call_accesses(case.fn, case.args)
    for found in (again, plain):
        assert found.reads == first.reads and found.writes == first.writes
        assert found.escapes == first.escapes and found.expanded == first.expanded
        assert found.increments == first.increments


def test_realpath_by_directory_is_os_realpath(tmp_path: FsPath) -> None:
    # guards._realpath resolves each directory once (cached) and is os.path.realpath on every
    # kind of path: links to directories and to files, chains of links, ".." after a link,
    # relative paths, missing files, the root
    (tmp_path / "real" / "sub").mkdir(parents=True)
    (tmp_path / "real" / "sub" / "f.py").write_text("")
    (tmp_path / "dirlink").symlink_to(tmp_path / "real")
    (tmp_path / "chain").symlink_to(tmp_path / "dirlink")
    (tmp_path / "real" / "sub" / "filelink.py").symlink_to(tmp_path / "real" / "sub" / "f.py")
    (tmp_path / "real" / "up").symlink_to("sub")
    paths = [tmp_path / "real" / "sub" / "f.py", tmp_path / "dirlink" / "sub" / "f.py",
             tmp_path / "chain" / "sub" / "filelink.py", tmp_path / "chain" / "up" / "f.py",
             tmp_path / "dirlink" / "missing.py", tmp_path / "nothere" / "x.py"]
    texts = [str(p) for p in paths] + [
        f"{tmp_path}/chain/sub/../sub/f.py", f"{tmp_path}/dirlink/./sub//f.py", "/",
        "relative/x.py", guards.__file__, os.__file__, "//x/y"]
    for text in texts:
        assert guards._realpath(text) == os.path.realpath(text), text
    assert guards._realpath(str(paths[2])) == str((tmp_path / "real" / "sub" / "f.py").resolve())
