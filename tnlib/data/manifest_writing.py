"""The manifests a generation writes when it consolidates a split: the domain manifest (the split's entry, the
domain file, the sha256 of every file) and the root manifest (each domain manifest's sha256), under one lock for
the dataset root. :mod:`tnlib.data.manifest` reads and verifies them."""
from __future__ import annotations

from tnlib.data.profiles import SEED_SCHEME
from tnlib.data.schema import ALL_SPLITS, FORMAT, FORMAT_VERSION, MANIFEST, MANIFEST_LOCK
from tnlib.data.split_work import SplitPlan
from tnlib.files import atomic_write_bytes, atomic_write_json_records, locked, read_json, sha256_file
from tnlib.planning.generators import domain_file


def write_manifest(path: str | os.PathLike, manifest: dict) -> None:
    """Write a manifest -- a dataset root's, a domain's or a plan set's -- atomically, one record a line
    (:func:`tnlib.files.json_one_record_a_line`): an instance record, a file's checksum, a grid cell each on a line of
    its own, so a diff of a manifest shows whole records; readers take it as any JSON."""
    atomic_write_json_records(path, manifest)


def update_manifests(sp: SplitPlan, entry: dict) -> None:
    """Record ``entry`` as the split's in its domain manifest, and that manifest's checksum in the root one."""
    from tnlib import __version__
    from tnlib.planning.fast_downward import fast_downward_version

    with locked(sp.root / MANIFEST_LOCK):
        domain_copy = sp.domain_dir / "domain.pddl"
        source = domain_file(sp.domain).read_bytes()
        if not domain_copy.is_file() or domain_copy.read_bytes() != source:
            atomic_write_bytes(domain_copy, source)
        path = sp.domain_dir / MANIFEST
        manifest = read_json(path) if path.is_file() else {
            "format": FORMAT,
            "format_version": FORMAT_VERSION,
            "domain": sp.domain,
            "domain_file": f"{sp.domain}/domain.pddl",
            "splits": {},
            "files": {},
        }
        manifest.update(
            tnlib_version=__version__,
            fast_downward=fast_downward_version(),
            seed_scheme=SEED_SCHEME,
        )
        manifest["splits"][sp.split] = entry
        manifest["splits"] = {s: manifest["splits"][s] for s in ALL_SPLITS if s in manifest["splits"]}
        files = {k: v for k, v in manifest["files"].items() if not _belongs_to_split(k, sp)}
        files[f"{sp.domain}/domain.pddl"] = sha256_file(domain_copy)
        files[f"{sp.domain}/{entry['table']}"] = sha256_file(sp.domain_dir / entry["table"])
        for instance in entry["instances"]:
            files[instance["problem"]] = sha256_file(sp.root / instance["problem"])
        manifest["files"] = dict(sorted(files.items()))
        write_manifest(path, manifest)

        root_path = sp.root / MANIFEST
        root_manifest = read_json(root_path) if root_path.is_file() else {
            "format": FORMAT, "format_version": FORMAT_VERSION, "domains": {},
        }
        root_manifest["profile"] = sp.settings["profile"]
        root_manifest["domains"][sp.domain] = {"manifest": f"{sp.domain}/{MANIFEST}", "sha256": sha256_file(path)}
        root_manifest["domains"] = dict(sorted(root_manifest["domains"].items()))
        write_manifest(root_path, root_manifest)


def _belongs_to_split(relative: str, sp: SplitPlan) -> bool:
    return relative == f"{sp.domain}/{sp.split}.parquet" or relative.startswith(f"{sp.domain}/problems/{sp.split}/")


__all__ = ["update_manifests", "write_manifest"]
