"""Repeated instances in dataset roots, counted two ways: as data/README.md's before/after table reports them.

    .venv/bin/python benchmarks/count_duplicates.py ROOT [ROOT ...]

For every domain and split of each dataset root it prints (Markdown) how many instances repeat an instance of
the same split ("within") and how many equal a train instance ("in train") or an instance of any earlier split
in the order train, val, test, plan ("in earlier"), by two tests:

* ``exact``: the same initial and goal atom strings, problem name left out;
* ``renaming``: the same up to renaming objects (:func:`tnlib.data.instance_keys.instance_key`, what ``tnlib data
  generate`` rejects and ``tnlib data verify`` checks).

Keys are computed from the problem files, never read from the manifests, so datasets made before instance keys
existed are counted the same way. The data as it was before the rule can be counted from git, e.g.::

    git archive 0b6930e data | tar -x -C /tmp/before && .venv/bin/python benchmarks/count_duplicates.py \\
        /tmp/before/data/small /tmp/before/data/paper
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from tnlib.data.instance_keys import domain_duplicates, exact_key, instance_key, problem_keys


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("roots", nargs="+", type=Path, help="dataset roots (folders with a manifest.json)")
    args = parser.parse_args(argv)
    print("| dataset | domain | split | instances | exact: within / in train / in earlier "
          "| renaming: within / in train / in earlier |")
    print("|---|---|---|---|---|---|")
    started = time.perf_counter()
    keyed = 0
    for root in args.roots:
        top = json.loads((root / "manifest.json").read_text())
        for domain, ref in top["domains"].items():
            manifest = json.loads((root / ref["manifest"]).read_text())
            reports = {}
            for name, key in (("exact", exact_key), ("renaming", instance_key)):
                keys = {s: problem_keys(root, manifest, s, key=key, stored=False) for s in manifest["splits"]}
                keyed += sum(len(v) for v in keys.values())
                reports[name] = domain_duplicates(keys)
            for split in manifest["splits"]:
                e, r = reports["exact"][split], reports["renaming"][split]
                cell = lambda d: f"{d.within} / {d.in_train} / {d.in_earlier}"  # noqa: E731
                print(f"| {root} | {domain} | {split} | {e.instances} | {cell(e)} | {cell(r)} |")
    print(f"\n{keyed} keys computed in {time.perf_counter() - started:.1f} s", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
