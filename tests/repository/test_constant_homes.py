"""A constant of tnlib has one home: no two modules assign the same constant name the same value, which is one
constant written twice (the copies would drift apart at the first edit of one); the others import it. A private
name holding different values in two modules (a block size of two kernels) is two constants, each its module's; a
public one is named for what it is, uniquely across the package (but the command modules' REGISTER, which
tnlib.cli looks up by that name in each)."""
from __future__ import annotations

import ast
from collections import defaultdict
from pathlib import Path

TNLIB = Path(__file__).resolve().parents[2] / "tnlib"


def module_constants(path: Path):
    """(name, the value's source) of each module-level assignment of an upper-case name in ``path``, tuples of
    names unpacked."""
    for node in ast.parse(path.read_text()).body:
        pairs = []
        if isinstance(node, ast.Assign):
            for target in node.targets:
                if isinstance(target, ast.Name):
                    pairs.append((target.id, node.value))
                elif isinstance(target, ast.Tuple) and isinstance(node.value, ast.Tuple):
                    pairs += [(t.id, v) for t, v in zip(target.elts, node.value.elts) if isinstance(t, ast.Name)]
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and node.value is not None:
            pairs.append((node.target.id, node.value))
        for name, value in pairs:
            bare = name.lstrip("_")
            if bare and bare == bare.upper() and not name.startswith("__"):
                yield name, ast.unparse(value)


def repeated_constants(root: Path) -> list[str]:
    """A line for each (name, value) that more than one module of ``root`` assigns."""
    homes = defaultdict(list)
    for path in sorted(root.rglob("*.py")):
        for name, value in module_constants(path):
            homes[(name, value)].append(str(path.relative_to(root.parent)))
    return [f"{name} = {value} in {', '.join(paths)}" for (name, value), paths in sorted(homes.items())
            if len(paths) > 1]


# names every module of a kind defines, by convention
CONVENTIONAL = {"REGISTER"}


def public_names_in_two_modules(root: Path) -> list[str]:
    """A line for each public constant name that more than one module of ``root`` assigns, whatever the values."""
    homes = defaultdict(set)
    for path in sorted(root.rglob("*.py")):
        for name, _ in module_constants(path):
            if not name.startswith("_") and name not in CONVENTIONAL:
                homes[name].add(str(path.relative_to(root.parent)))
    return [f"{name} in {', '.join(sorted(paths))}" for name, paths in sorted(homes.items()) if len(paths) > 1]


def test_no_public_constant_name_of_tnlib_is_used_by_two_modules():
    assert public_names_in_two_modules(TNLIB) == []


def test_no_constant_of_tnlib_is_written_in_two_modules():
    assert repeated_constants(TNLIB) == []


def test_the_check_finds_a_constant_written_twice_and_leaves_one_name_with_two_values(tmp_path):
    package = tmp_path / "package"
    package.mkdir()
    (package / "a.py").write_text("import math\n_SQRT_HALF = math.sqrt(0.5)\nBLOCK = 16\nlower = 1\n")
    (package / "b.py").write_text("import math\n_SQRT_HALF = math.sqrt(0.5)\nBLOCK, lower = 1024, 1\n")
    assert repeated_constants(package) == ["_SQRT_HALF = math.sqrt(0.5) in package/a.py, package/b.py"]
    assert public_names_in_two_modules(package) == ["BLOCK in package/a.py, package/b.py"]
