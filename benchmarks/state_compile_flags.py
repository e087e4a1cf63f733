"""State the compile flags numba would otherwise inherit on every numba.njit of a tnlib folder (run from the root).

numba compiles a helper that leaves fastmath / forceinline / error_model unset under the flags of whichever caller
compiles it first, so its machine code -- and the values of every kernel that calls it -- would depend on the order
in which a process first compiles kernels. This writes each such flag into the decorator:
  * a helper whose callers all compile under one value (through any chain of helpers that leave it unset) states
    that value: the code it already compiles to under every order;
  * a helper whose callers differ (SHARED) states SHARED_CHOICE: fused multiply-adds (fastmath={"contract"}), the
    code every caller gets when the log_prob loops compile it first and the faster one (fastmath=False measured 2-12%
    slower, reports/speed.md), and numba's own choice to inline (forceinline=False).
Functions with inline="always" are left alone: numba inlines their IR into each caller, compiled under its flags.
usage: python benchmarks/state_compile_flags.py tnlib/distributions [--dry-run]
"""
from __future__ import annotations

import ast
import re
import sys
from pathlib import Path

FLAGS = ("fastmath", "forceinline", "error_model")
DEFAULT = {"fastmath": "False", "forceinline": "False", "error_model": "'python'"}  # numba's, for a root


def njit_call(dec):
    """The decorator as a call if it is numba's njit or jit (a bare one as a call without arguments), else None."""
    if isinstance(dec, ast.Call):
        f = dec.func
        name = f.attr if isinstance(f, ast.Attribute) else getattr(f, "id", None)
        if name in ("njit", "jit"):
            return dec
    elif isinstance(dec, (ast.Attribute, ast.Name)):
        name = dec.attr if isinstance(dec, ast.Attribute) else dec.id
        if name in ("njit", "jit"):
            return ast.Call(func=dec, args=[], keywords=[])
    return None


def load(folder):
    """Each njit function of the folder's modules (its decorator's keywords, what it calls, its line) and, for
    each, the njit functions that call it (a call by name, by module attribute, or the function passed as a
    value, across the folder's modules)."""
    funcs, imports = {}, {}
    for path in sorted(Path(folder).glob("*.py")):
        mod = path.stem
        tree = ast.parse(path.read_text())
        consts = {}
        for node in tree.body:
            if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
                consts[node.targets[0].id] = ast.unparse(node.value)
            if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("tnlib."):
                for a in node.names:
                    imports[(mod, a.asname or a.name)] = (node.module.split(".")[-1], a.name)
            if isinstance(node, ast.ImportFrom) and node.module == "tnlib.distributions":
                for a in node.names:
                    imports[(mod, a.asname or a.name)] = (a.name, None)
        for node in tree.body:
            if isinstance(node, ast.FunctionDef):
                for dec in node.decorator_list:
                    call = njit_call(dec)
                    if call is None:
                        continue
                    kw = {k.arg: ast.unparse(k.value) for k in call.keywords}
                    if "fastmath" in kw and kw["fastmath"] in consts:
                        kw["fastmath"] = consts[kw["fastmath"]]
                    calls = set()
                    for sub in ast.walk(node):
                        if isinstance(sub, ast.Call):
                            f = sub.func
                            if isinstance(f, ast.Name):
                                calls.add((mod, f.id))
                            elif isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name):
                                calls.add(("attr", f.value.id, f.attr, mod))
                        if isinstance(sub, ast.Name):  # functions passed as values (e.g. to an overload) count too
                            calls.add((mod, sub.id))
                    funcs[(mod, node.name)] = dict(kw=kw, calls=calls, line=node.lineno)
    def resolve(c):
        if c[0] == "attr":
            _, base, attr, mod = c
            target = imports.get((mod, base))
            return (target[0], attr) if target and target[1] is None else None
        mod, name = c
        if (mod, name) in funcs:
            return (mod, name)
        return imports.get((mod, name)) if imports.get((mod, name)) in funcs else None
    callers = {k: set() for k in funcs}
    for k, f in funcs.items():
        for c in f["calls"]:
            r = resolve(c)
            if r in funcs and r != k:
                callers[r].add(k)
    return funcs, callers


def possible(funcs, callers, key, flag, seen=()):
    """The values of ``flag`` the function can be compiled under: its own if stated, else its callers'."""
    kw = funcs[key]["kw"]
    if kw.get("inline") == "'always'":
        pass  # inlined in numba's IR: compiled as part of each caller, under the caller's flags
    elif flag in kw:
        return {kw[flag]}
    if not callers[key]:
        return {DEFAULT[flag]}
    out = set()
    for c in callers[key]:
        if c not in seen:
            out |= possible(funcs, callers, c, flag, seen + (key,))
    return out or {DEFAULT[flag]}


# what a helper whose callers differ states: fused multiply-adds (the faster code), LLVM's own choice to inline
SHARED_CHOICE = {"fastmath": "{'contract'}", "forceinline": "False", "error_model": '"numpy"'}


def literal(flag, value, module_consts, before_line):
    """The flag's value as source: a fastmath set by the module's own name for it where one is defined above."""
    if flag == "fastmath" and value.startswith("{"):
        wanted = ast.literal_eval(value)
        for name, (text, line) in module_consts.items():  # the module's own name for the set, defined above it
            if line >= before_line:
                continue
            try:
                if ast.literal_eval(text) == wanted:
                    return name
            except (ValueError, SyntaxError):
                pass
        return "{" + ", ".join(f'"{v}"' for v in sorted(wanted)) + "}"
    return value.replace("'", '"')


def main(folder, dry_run):
    """Write every flag a function of the folder leaves to inheritance into its decorator; print each edit."""
    funcs, callers = load(folder)
    edits = {}
    for (mod, name), f in funcs.items():
        kw = f["kw"]
        if kw.get("inline") == "'always'":
            continue
        for flag in FLAGS:
            if flag in kw:
                continue
            values = possible(funcs, callers, (mod, name), flag)
            shared = len(values) > 1
            value = SHARED_CHOICE[flag] if shared else values.pop()
            edits.setdefault(mod, []).append((f["line"], name, flag, value, shared))
    for mod, rows in sorted(edits.items()):
        path = Path(folder) / f"{mod}.py"
        text = path.read_text()
        tree = ast.parse(text)
        consts = {n.targets[0].id: (ast.unparse(n.value), n.lineno) for n in tree.body
                  if isinstance(n, ast.Assign) and len(n.targets) == 1 and isinstance(n.targets[0], ast.Name)}
        lines = text.split("\n")
        by_func = {}
        for line, name, flag, value, shared in rows:
            by_func.setdefault((line, name), []).append((flag, literal(flag, value, consts, line), shared))
        for (line, name), flags in sorted(by_func.items(), reverse=True):
            node = next(n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == name)
            dec = next(d for d in node.decorator_list if njit_call(d) is not None)
            if dec.lineno != dec.end_lineno:
                raise SystemExit(f"{path}:{dec.lineno}: a decorator over several lines; edit it by hand")
            i = dec.lineno - 1
            added = ", ".join(f"{flag}={value}" for flag, value, _ in flags)
            src = lines[i]
            if re.search(r"njit\s*$", src):
                lines[i] = src + f"({added})"
            else:
                head, tail = src.rsplit(")", 1)
                lines[i] = head + (", " if not head.endswith("(") else "") + added + ")" + tail
            print(f"{path}:{dec.lineno} {name}: {added}" + "".join(f"  ({flag} shared)" for flag, _, s in flags if s))
            if len(lines[i]) > 120:
                print(f"  warning: {len(lines[i])} characters")
        if not dry_run:
            path.write_text("\n".join(lines))


if __name__ == "__main__":
    main(sys.argv[1], "--dry-run" in sys.argv)
