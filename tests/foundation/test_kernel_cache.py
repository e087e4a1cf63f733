"""Numba's on-disk cache under tnlib.kernel_cache: a kernel compiled against a helper of another module of its
folder is compiled afresh when only that helper changes, and loaded from the cache when nothing changed; the prune
removes the files numba would no longer load and keeps the ones it loads."""
from __future__ import annotations

import json
import pickle
import subprocess
import sys
import textwrap
from pathlib import Path
from types import SimpleNamespace

import numba
import pytest

ROOT = Path(__file__).resolve().parents[2]

_HELPER = """
from numba import njit

@njit(cache=True)
def factor():
    return {factor}
"""

_CALLER = """
from numba import njit

from tnlib.kernel_cache import cache_by_folder_sources

cache_by_folder_sources(__file__)

from helper import factor


@njit(cache=True)
def scaled(x):
    return x * factor()
"""

_RUN = """
import json, sys
sys.path.insert(0, sys.argv[1])
import caller
value = caller.scaled(1.5)
print(json.dumps({"value": value, "hits": sum(caller.scaled.stats.cache_hits.values()),
                  "misses": sum(caller.scaled.stats.cache_misses.values())}))
"""


def _call_in_fresh_process(folder: Path) -> dict:
    done = subprocess.run([sys.executable, "-c", _RUN, str(folder)], capture_output=True, text=True, timeout=300,
                          env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin", "OMP_NUM_THREADS": "1"})
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.splitlines()[-1])


@pytest.mark.slow
def test_a_kernel_is_compiled_again_when_only_a_helper_in_another_module_of_its_folder_changed(tmp_path):
    (tmp_path / "caller.py").write_text(textwrap.dedent(_CALLER))
    (tmp_path / "helper.py").write_text(_HELPER.format(factor="2.0"))
    first = _call_in_fresh_process(tmp_path)
    again = _call_in_fresh_process(tmp_path)
    (tmp_path / "helper.py").write_text(_HELPER.format(factor="3.0"))
    edited = _call_in_fresh_process(tmp_path)
    assert (first["value"], first["misses"]) == (3.0, 1)
    assert (again["value"], again["hits"], again["misses"]) == (3.0, 1, 0)  # nothing changed: loaded from disk
    assert (edited["value"], edited["hits"]) == (4.5, 0)  # the caller's own file is unchanged, its helper not


@pytest.mark.slow
def test_the_prune_removes_the_compilations_of_a_moved_kernel_and_keeps_those_in_use(tmp_path):
    from tnlib.kernel_cache import prune_stale_caches, stale_cache_files

    (tmp_path / "caller.py").write_text(textwrap.dedent(_CALLER))
    (tmp_path / "helper.py").write_text(_HELPER.format(factor="2.0"))
    _call_in_fresh_process(tmp_path)
    cache = tmp_path / "__pycache__"
    first = {path.name for path in cache.glob("*.nb[ic]")}
    assert stale_cache_files(tmp_path) == []
    # two lines above the kernel: numba names its new compilation by the new line and leaves the old files
    (tmp_path / "caller.py").write_text(textwrap.dedent(_CALLER).replace("@njit", "# moved\n# down\n@njit"))
    moved = _call_in_fresh_process(tmp_path)
    assert moved["misses"] == 1
    old_caller = {name for name in first if name.startswith("caller.")}
    assert len(old_caller) == 2 and {path.name for path in stale_cache_files(tmp_path)} == old_caller
    files_before = {path.name for path in cache.glob("*.nb[ic]")}
    count, size = prune_stale_caches([tmp_path])
    assert count == 2 and size > 0
    assert {path.name for path in cache.glob("*.nb[ic]")} == files_before - old_caller
    after = _call_in_fresh_process(tmp_path)
    assert (after["value"], after["hits"], after["misses"]) == (3.0, 1, 0)  # what was in use still loads
    assert stale_cache_files(tmp_path) == [] and prune_stale_caches([tmp_path]) == (0, 0)


def test_a_damaged_or_foreign_cache_index_is_stale_and_a_kernel_beside_a_missing_module_too(tmp_path):
    from tnlib.kernel_cache import _SOURCE_STAMP, stale_cache_files

    (tmp_path / "module.py").write_text("x = 1\n")
    cache = tmp_path / "__pycache__"
    cache.mkdir()
    (cache / "module.kernel-3.py311.nbi").write_bytes(b"not a pickle")
    # numba's version and the module's own stamp, but its overloads no mapping
    stamp = _SOURCE_STAMP(SimpleNamespace(_py_file=str(tmp_path / "module.py")))
    with open(cache / "module.other-5.py311.nbi", "wb") as index:
        pickle.dump(numba.__version__, index)
        index.write(pickle.dumps((stamp, ["not", "a", "mapping"])))
    (cache / "gone.kernel-3.py311.nbi").write_bytes(b"")
    (cache / "module.kernel-3.py311.1.nbc").write_bytes(b"")
    (cache / "module.cpython-311.pyc").write_bytes(b"")  # (not numba's: left)
    assert [path.name for path in stale_cache_files(tmp_path)] == [
        "gone.kernel-3.py311.nbi", "module.kernel-3.py311.nbi", "module.other-5.py311.nbi",
        "module.kernel-3.py311.1.nbc"]


def test_the_stamp_of_a_folder_changes_with_any_of_its_sources_and_only_with_them(tmp_path):
    from tnlib.kernel_cache import folder_sources_digest

    (tmp_path / "a.py").write_text("x = 1\n")
    (tmp_path / "notes.txt").write_text("not a source\n")
    before = folder_sources_digest(tmp_path)
    (tmp_path / "notes.txt").write_text("still not a source\n")
    assert folder_sources_digest(tmp_path) == before
    (tmp_path / "a.py").write_text("x = 2\n")
    assert folder_sources_digest(tmp_path) != before
    (tmp_path / "a.py").write_text("x = 1\n")
    assert folder_sources_digest(tmp_path) == before
    (tmp_path / "b.py").write_text("")
    assert folder_sources_digest(tmp_path) != before


def test_every_module_of_tnlib_that_caches_kernels_registers_its_folder_first():
    """A module that compiles with cache=True registers its folder before its first kernel, so no kernel of tnlib
    is cached under its own file's stamp alone."""
    from tnlib.kernel_cache import kernel_folders

    unregistered, folders = [], set()
    for path in sorted((ROOT / "tnlib").rglob("*.py")):
        lines = path.read_text().splitlines()
        kernels = [i for i, line in enumerate(lines) if line.startswith("@") and "cache=True" in line]
        if not kernels or path.name == "kernel_cache.py":
            continue
        registered = [i for i, line in enumerate(lines) if line.startswith("cache_by_folder_sources(__file__)")]
        if not registered or registered[0] > kernels[0]:
            unregistered.append(str(path.relative_to(ROOT)))
        else:
            folders.add(path.parent)
    assert unregistered == []
    assert kernel_folders() == sorted(folders)  # the folders the prune looks in
