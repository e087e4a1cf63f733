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
"""
from __future__ import annotations

import functools
import hashlib
from pathlib import Path

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
