"""Writes the train-pair records of :mod:`tnlib.data.train_pairs` into a dataset's manifests: each non-train
split's entry in its domain manifest, and that manifest's checksum in the root manifest, under the dataset root's
lock. Computing and reading the records stays in :mod:`tnlib.data.train_pairs`, which readers import."""
from __future__ import annotations

import os
from pathlib import Path

from tnlib.data.manifest_writing import write_manifest
from tnlib.data.schema import MANIFEST, MANIFEST_LOCK
from tnlib.data.train_pairs import PAIR_KEY_SCHEME, RECORD, compute_train_pairs
from tnlib.errors import DatasetError, InstanceKeyError
from tnlib.files import locked, read_json, sha256_file


def _record(manifest: dict, domain: str, split: str, counts: dict) -> dict:
    files = manifest.get("files", {})
    return {
        "scheme": PAIR_KEY_SCHEME,
        "train_table_sha256": files.get(f"{domain}/{manifest['splits']['train']['table']}"),
        "table_sha256": files.get(f"{domain}/{manifest['splits'][split]['table']}"),
        **counts,
    }


def record_train_pairs(root: str | os.PathLike, domains: list[str] | None = None) -> dict[str, dict[str, dict]]:
    """Compute the records of a dataset root's domains (all by default) and write them into the domain manifests
    (and their checksums into the root manifest). Returns ``{domain: {split: record}}``."""
    root = Path(root)
    top = read_json(root / MANIFEST)
    done: dict[str, dict[str, dict]] = {}
    for domain in domains or list(top["domains"]):
        if domain not in top["domains"]:
            raise DatasetError(f"domain {domain!r} is not in {root} (it has {', '.join(top['domains']) or 'none'})")
        try:
            computed = compute_train_pairs(root, domain)
        except (OSError, InstanceKeyError) as err:
            raise DatasetError(f"{root}/{domain}: cannot key its rows ({err}); run `tnlib data verify {root}`") \
                from None
        with locked(root / MANIFEST_LOCK):
            path = root / domain / MANIFEST
            manifest = read_json(path)
            for split, entry in manifest["splits"].items():
                entry.pop(RECORD, None)
                if split in computed:
                    entry[RECORD] = _record(manifest, domain, split, computed[split])
            write_manifest(path, manifest)
            top = read_json(root / MANIFEST)
            top["domains"][domain]["sha256"] = sha256_file(path)
            write_manifest(root / MANIFEST, top)
        done[domain] = {s: manifest["splits"][s][RECORD] for s in computed}
    return done


__all__ = ["record_train_pairs"]
