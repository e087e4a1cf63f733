"""Every numba kernel of tnlib/distributions states the flags it is compiled under.

numba compiles a jitted function that leaves ``fastmath``, ``forceinline`` or ``error_model`` unset under the flags of
whichever caller compiles it first in a process (flag inheritance), and caches that code on disk. A helper shared by
callers with different flags would then give values that depend on which method a process, or the process that
filled the cache, called first. So each ``numba.njit`` in the folders of :data:`STATED` names all three, or is
``inline="always"`` (numba inlines its IR into each caller, which compiles it under its own flags). ``nrt`` is
inherited too; no kernel sets it, so every caller passes numba's default on. benchmarks/check_compile_order.py
checks the values themselves: two compile orders in fresh processes with empty caches, bit for bit.
"""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

TNLIB = Path(__file__).resolve().parents[2] / "tnlib"

# The folders whose kernels must state their flags. learning's and planning's kernels are left as they compile
# now: stating flags would recompile training's kernels in the middle of a campaign, and their only helpers shared
# by callers with different flags (nlm_kernels' kept_objects, is_excluded, visited_objects) hold integer logic,
# whose values no fastmath or error_model changes.
STATED = ("distributions",)
FLAGS = ("fastmath", "forceinline", "error_model")


def numba_decorators(path: Path):
    """(line, keyword names) of each ``njit``/``jit`` decorator in a module, a bare decorator with no keywords."""
    for node in ast.walk(ast.parse(path.read_text())):
        if not isinstance(node, ast.FunctionDef):
            continue
        for decorator in node.decorator_list:
            call = decorator if isinstance(decorator, ast.Call) else None
            target = call.func if call else decorator
            name = target.attr if isinstance(target, ast.Attribute) else getattr(target, "id", None)
            if name in ("njit", "jit"):
                keywords = {k.arg: k.value for k in call.keywords} if call else {}
                yield node.name, decorator.lineno, keywords


def unstated_flags(path: Path, root: Path = TNLIB.parent) -> list[str]:
    """A line for each kernel of the module that leaves a flag to be inherited."""
    where = path.relative_to(root)
    missing = []
    for function, line, keywords in numba_decorators(path):
        inline = keywords.get("inline")
        if isinstance(inline, ast.Constant) and inline.value == "always":
            continue
        lacking = [flag for flag in FLAGS if flag not in keywords]
        if lacking:
            missing.append(f"{where}:{line} {function} leaves {', '.join(lacking)} unset")
        if "nrt" in keywords:
            missing.append(f"{where}:{line} {function} sets nrt, which its helpers inherit")
    return missing


@pytest.mark.parametrize("folder", STATED)
def test_every_kernel_states_its_compile_flags(folder):
    modules = sorted((TNLIB / folder).glob("*.py"))
    assert any(list(numba_decorators(path)) for path in modules), f"no numba kernel found in tnlib/{folder}"
    missing = [line for path in modules for line in unstated_flags(path)]
    assert not missing, "\n".join(missing)


def test_unstated_flags_are_found(tmp_path):
    module = tmp_path / "kernels.py"
    module.write_text("import numba\n\n@numba.njit(cache=True, error_model='numpy')\ndef f(x):\n    return x\n\n"
                      "@numba.njit\ndef g(x):\n    return x\n\n@numba.njit(inline='always')\ndef h(x):\n    return x\n\n"
                      "@numba.njit(fastmath=False, forceinline=True, error_model='numpy')\ndef k(x):\n    return x\n")
    found = unstated_flags(module, root=tmp_path)
    assert [line.split(" ", 2)[1] for line in found] == ["f", "g"]
    assert "fastmath, forceinline unset" in found[0] and "fastmath, forceinline, error_model unset" in found[1]
