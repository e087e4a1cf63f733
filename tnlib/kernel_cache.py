"""Numba's on-disk cache, kept fresh for kernels that call kernels of other modules.

Numba checks a cached compilation against its own source file only, but a compiled kernel carries inside it every
kernel it called (inlined or linked) and every module-level constant it read. Edit a helper in another file and
the caller's cached machine code goes on running the old helper: a stale compilation that no error reveals (it
moved a variance by 8 ulp here). So every kernel in a registered folder is cached under a stamp of all the Python
sources of that folder together -- tnlib's kernels call and read only their own folder's -- and any edit there
compiles them afresh on the next first call.

Registering wraps whichever locator numba would have picked (its cache directory stays numba's choice); a kernel
module imports this module and calls :func:`cache_by_folder_sources` with its ``__file__`` before its first
``njit(cache=True)``.

Numba never deletes a cache file: each edit of a kernel module leaves the files of every kernel whose line moved
(their names carry the line) beside the new ones, a few hundred megabytes in a working tree after a while of kernel
work. :func:`stale_cache_files` finds those no current source can load and ``make prune-kernel-cache`` removes them,
keeping the compilations in use.
"""
from __future__ import annotations

import functools
import hashlib
import os
import pickle
from pathlib import Path
from types import SimpleNamespace

import numba
from numba.core import caching

_FOLDERS: set[Path] = set()
# numba's names for these: CacheImpl in the numba this kit installs, _CacheImpl in older ones
_CACHE_IMPL = getattr(caching, "CacheImpl", None) or caching._CacheImpl
_CACHE_LOCATOR = getattr(caching, "CacheLocator", None) or caching._CacheLocator


def folder_sources_digest(folder: Path) -> str:
    """SHA-256 over the names and bytes of every ``*.py`` file directly in ``folder``, in name order."""
    paths = sorted(folder.glob("*.py"))
    # Numba asks once per kernel as each module is imported: read the folder again only when a file changed.
    stats = tuple((path.name, stat.st_mtime_ns, stat.st_size) for path, stat in ((p, p.stat()) for p in paths))
    return _digest_of(folder, stats)


@functools.lru_cache(maxsize=None)
def _digest_of(folder: Path, stats: tuple) -> str:
    digest = hashlib.sha256()
    for name, _, _ in stats:
        digest.update(name.encode() + b"\0")
        digest.update((folder / name).read_bytes() + b"\0")
    return digest.hexdigest()


class FolderSourcesLocator(_CACHE_LOCATOR):
    """Numba's own locator for a kernel, with a source stamp that also covers the other sources of its folder."""

    def __init__(self, inner: _CACHE_LOCATOR, folder: Path):
        self._inner = inner
        self._folder = folder

    def ensure_cache_path(self):
        self._inner.ensure_cache_path()

    def get_cache_path(self):
        return self._inner.get_cache_path()

    def get_disambiguator(self):
        return self._inner.get_disambiguator()

    def get_source_stamp(self):
        return self._inner.get_source_stamp(), folder_sources_digest(self._folder)

    @classmethod
    def from_function(cls, py_func, py_file):
        folder = Path(py_file).resolve().parent
        if folder not in _FOLDERS:
            return None
        for locator_class in _CACHE_IMPL._locator_classes:
            if locator_class is cls:
                continue
            inner = locator_class.from_function(py_func, py_file)
            if inner is not None:
                return cls(inner, folder)
        return None


def cache_by_folder_sources(module_file: str | Path) -> None:
    """Cache the kernels of ``module_file``'s folder under the stamp of all that folder's sources."""
    _FOLDERS.add(Path(module_file).resolve().parent)
    if FolderSourcesLocator not in _CACHE_IMPL._locator_classes:
        _CACHE_IMPL._locator_classes.insert(0, FolderSourcesLocator)


# numba's way of stamping a kernel's own source file (the mixin of its locators that read a file), called with the
# file alone: the stamp an index must hold to be loaded, whichever numba computes it
_SOURCE_STAMP = (getattr(caching, "_SourceFileBackedLocatorMixin", None)
                 or caching.SourceFileBackedLocatorMixin).get_source_stamp


def _cache_folders(folder: Path) -> list[Path]:
    """Where numba may keep the cache of ``folder``'s kernels: beside them, or under ``NUMBA_CACHE_DIR``."""
    places = [folder / "__pycache__"]
    if os.environ.get("NUMBA_CACHE_DIR"):
        places.append(Path(os.environ["NUMBA_CACHE_DIR"]) / _CACHE_LOCATOR.get_suitable_cache_subpath(
            str(folder / "_.py")))
    return [place for place in places if place.is_dir()]


def _loadable_data(index: Path, folder: Path) -> set[str] | None:
    """The data files an index points to if numba would load it now (its numba version, and the stamp of its
    module's current source, alone or with the folder's digest), else None."""
    source = folder / (index.name.split(".", 1)[0] + ".py")
    if not source.is_file():
        return None
    try:
        with open(index, "rb") as handle:
            if pickle.load(handle) != numba.__version__:
                return None
            stamp, overloads = pickle.loads(handle.read())
        data = {str(name) for name in overloads.values()}
    except Exception:  # a damaged or foreign index is one numba cannot load either
        return None
    own = _SOURCE_STAMP(SimpleNamespace(_py_file=str(source)))
    if stamp != own and stamp != (own, folder_sources_digest(folder)):
        return None
    return data


def stale_cache_files(folder: str | Path) -> list[Path]:
    """The files of numba's cache for the kernels of ``folder`` that numba would no longer load: indexes stamped by
    another source or numba version (or whose module is gone), their data files, and data files no index in use
    points to. What numba loads now is left."""
    folder = Path(folder).resolve()
    stale = []
    for place in _cache_folders(folder):
        in_use = set()
        for index in sorted(place.glob("*.nbi")):
            data = _loadable_data(index, folder)
            if data is None:
                stale.append(index)
            else:
                in_use |= data
        stale += [path for path in sorted(place.glob("*.nbc")) if path.name not in in_use]
    return stale


def kernel_folders() -> list[Path]:
    """tnlib's folders that hold a module caching its kernels (one that registers its folder here)."""
    tnlib = Path(__file__).resolve().parent
    return sorted({path.parent for path in tnlib.rglob("*.py")
                   if path.name != "kernel_cache.py" and "\ncache_by_folder_sources(__file__)" in path.read_text()})


def prune_stale_caches(folders: list[str | Path] | None = None) -> tuple[int, int]:
    """Remove :func:`stale_cache_files` of each folder (tnlib's :func:`kernel_folders` by default); returns how many
    files and bytes went."""
    count = size = 0
    for folder in kernel_folders() if folders is None else folders:
        for path in stale_cache_files(folder):
            try:
                size += path.stat().st_size
                path.unlink()
                count += 1
            except FileNotFoundError:  # (another prune, or numba, got there first)
                pass
    return count, size
