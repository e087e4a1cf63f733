"""Where datasets live and whether one is intact: its manifests, the sha256 of every file, the tables' schemas.

A dataset root holds ``manifest.json`` (its domains, each with its manifest's sha256) and per domain
``DOMAIN/manifest.json`` (settings, counts, the sha256 of every file); :mod:`tnlib.data.manifest_writing` writes them.
:func:`verify_dataset` lists every problem it finds, with the command that regenerates the damaged part;
:func:`check_dataset` raises them as one :class:`tnlib.errors.DatasetError`. Both include the distinct-instance
rule (:mod:`tnlib.data.instance_keys`): no instance twice in a split, none in two splits. :func:`data_card`
summarizes a root's manifests as a Markdown table.
"""
from __future__ import annotations

import os
from pathlib import Path
from typing import Iterable, Iterator, Mapping

from tnlib.data.schema import (DEFAULT_PROFILE, DISJOINT_FROM, EXACT_SOLVER, FAST_DOWNWARD_LMCUT, FORMAT, LIMIT_HITS,
                               LMCUT_LABELS_RECORD, MANIFEST, TNLIB_LMCUT, arrow_schema)
from tnlib.data.instance_keys import check_domain_instances
from tnlib.data.profiles import PROFILES, params_label
from tnlib.data.train_pairs import RECORD as PAIRS_RECORD, check_train_pairs, stale_records
from tnlib.errors import DamagedFile, DatasetError
from tnlib.files import COMPRESSED_SUFFIX, read_json, sha256_file
from tnlib.planning.generators import DOMAIN_PARAMETERS
from tnlib.planning.pddl import is_compressed, read_pddl_text


def default_data_root() -> Path:
    """Where datasets live: ``$TNLIB_DATA`` when set, else ``<repo>/data``."""
    env = os.environ.get("TNLIB_DATA")
    return Path(env) if env else Path(__file__).resolve().parents[2] / "data"


def generate_hint(
    domain: str | None = None, profile: str = DEFAULT_PROFILE, split: str | None = None, force: bool = False,
    root: str | os.PathLike | None = None, splits: Iterable[str] = (),
) -> str:
    """The `tnlib data generate` command that makes ``split`` of ``domain`` again: with ``splits`` (the domain's
    splits) the later ones too, as generation remakes them together (:func:`_from`), and ``--out`` where the
    dataset root is not the profile's default one, so that the command works as printed."""
    command = f"tnlib data generate --domain {domain or 'all'} --profile {profile}"
    if split:
        command += f" --splits {','.join(_from(split, splits)) if splits else split}"
    if root is not None and Path(root).resolve() != (default_data_root() / profile).resolve():
        command += f" --out {root}"
    return f"`{command}{' --force' if force else ''}`"


def _in_this_checkout(base: Path) -> list[Path]:
    """Where an absolute path that does not exist would be in this repository: the same path below the repository
    root as below the checkout it names (``/elsewhere/repo/data/paper`` -> ``<repo>/data/paper``), longest tail
    first, at least two parts of it. Committed run folders name the absolute data root of the checkout that trained
    them; a clone elsewhere finds the same dataset this way."""
    if not base.is_absolute() or base.exists():
        return []
    repository = default_data_root().parent
    return [repository.joinpath(*base.parts[i:]) for i in range(1, len(base.parts) - 1)]


def dataset_root(root: str | os.PathLike | None = None, profile: str = DEFAULT_PROFILE) -> Path:
    """The dataset root to read: ``root`` itself when it holds a manifest, else ``root/profile``
    (``root`` defaults to :func:`default_data_root`); a ``root`` that does not exist is looked for in this checkout
    too (:func:`_in_this_checkout`). Raises DatasetError when none has one."""
    base = Path(root) if root is not None else default_data_root()
    for candidate in (base, base / profile, *_in_this_checkout(base)):
        if (candidate / MANIFEST).is_file():
            return candidate
    raise DatasetError(
        f"no dataset at {base} (no {MANIFEST} there or in {base / profile}); {_shipped_hint(base, profile)}"
        f"generate it with {generate_hint(profile=profile)} (add --out {base} if that is not the default data root)"
    )


def split_lmcut_source(root: str | os.PathLike | None, domain: str, split: str) -> str:
    """Whose LM-cut ``split``'s ``lmcut`` column holds (:data:`tnlib.data.schema.LMCUT_SOURCES`): Fast Downward's
    where the split was labelled with it (its settings' ``lmcut``) or relabelled with it since (its manifest entry's
    :data:`tnlib.data.schema.LMCUT_LABELS_RECORD`), else tnlib's. A DatasetError where the root, the domain or the
    split is not there."""
    path = dataset_root(root) / domain / MANIFEST
    try:
        entry = read_json(path)["splits"][split]
    except (OSError, DamagedFile) as err:
        raise DatasetError(f"cannot read {path}: {err}") from err
    except KeyError:
        raise DatasetError(f"{path} has no split {split!r}") from None
    if entry.get("settings", {}).get("lmcut") == FAST_DOWNWARD_LMCUT or LMCUT_LABELS_RECORD in entry:
        return FAST_DOWNWARD_LMCUT
    return TNLIB_LMCUT


def _shipped_hint(base: Path, profile: str) -> str:
    """Where this checkout ships the ``profile`` dataset, when the data root ``base`` is another one: what most
    often points elsewhere is $TNLIB_DATA left set, or a data root given by hand."""
    shipped = Path(__file__).resolve().parents[2] / "data" / profile
    if not (shipped / MANIFEST).is_file():
        return ""
    if os.environ.get("TNLIB_DATA") and base == Path(os.environ["TNLIB_DATA"]):
        return f"$TNLIB_DATA is set; unset it to read the {profile} dataset this checkout ships in {shipped}, or "
    return f"this checkout ships the {profile} dataset in {shipped} (leave the data root unset to read it); or "


def find_datasets(folder: str | os.PathLike) -> list[Path]:
    """``folder`` when it is a dataset root, else its sub-folders that are."""
    folder = Path(folder)
    if (folder / MANIFEST).is_file():
        return [folder]
    if not folder.is_dir():
        return []
    return sorted(p for p in folder.iterdir() if (p / MANIFEST).is_file())


# ---------------------------------------------------------------------------------------------------------------
# Verification


def _load_json(path: Path, problems: list[str], what: str, remedy: str = "") -> dict | None:
    remedy = f"; {remedy}" if remedy else ""
    if not path.is_file():
        problems.append(f"{what} missing: {path}{remedy}")
        return None
    try:
        return read_json(path)
    except DamagedFile as err:
        problems.append(f"{what} damaged ({err.reason}): {path}{remedy}")
        return None
    except (OSError, ValueError) as err:
        problems.append(f"{what} unreadable ({err.__class__.__name__}: {err}): {path}{remedy}")
        return None


def verify_dataset(
    root: str | os.PathLike, domain: str | None = None, split: str | None = None, deep: bool = True,
    duplicates: dict | None = None, train_pairs: dict | None = None,
) -> list[str]:
    """Every problem found in a dataset root (empty list: all good).

    Checks the root and domain manifests, that every file they list exists with its sha256, that no unlisted
    table or problem file sits among them, (``deep``) each table's schema and row count, and that no instance
    occurs twice in a split or in two splits (:mod:`tnlib.data.instance_keys`: same initial state and goal up to
    renaming objects). ``domain`` and ``split`` restrict the checks to that part of the dataset (a split is
    checked against itself and the domain's earlier splits, with the keys the manifest stores); a whole-dataset
    check (neither given, ``deep``) recomputes every key from its problem file. ``duplicates``, when a dict, gets
    the duplicate counts per domain and split (:class:`tnlib.data.instance_keys.SplitDuplicates`).

    The records of which val, test and plan rows equal a train (state, goal) pair (:mod:`tnlib.data.train_pairs`)
    are recomputed by the whole-dataset check, where a missing record is a problem too; a restricted check only
    finds records made for other tables or that do not add up. ``train_pairs``, when a dict, gets the records
    per domain and split.
    """
    root = Path(root)
    problems: list[str] = []
    # the profile is in the manifest itself; a dataset folder is named for its profile
    guess = root.name if root.name in PROFILES else "PROFILE"
    top = _load_json(root / MANIFEST, problems, "dataset manifest",
                     f"restore it from git where the dataset is committed (git checkout -- {root / MANIFEST}), or "
                     f"make the dataset again with {generate_hint(profile=guess, force=True, root=root)}")
    if top is None:
        return problems
    if top.get("format") != FORMAT:
        return [f"{root / MANIFEST}: not a tnlib dataset manifest (format {top.get('format')!r})"]
    profile = top.get("profile", DEFAULT_PROFILE)
    domains = top.get("domains", {})
    if domain is not None and domain not in domains:
        hint = generate_hint(domain, profile)
        return [f"domain {domain!r} is not in this dataset (it has {', '.join(domains) or 'none'}); run {hint}"]
    for name, ref in domains.items():
        if domain is not None and name != domain:
            continue
        manifest_path = root / ref["manifest"]
        manifest = _load_json(manifest_path, problems, f"{name} manifest")
        if manifest is None:
            continue
        if sha256_file(manifest_path) != ref["sha256"]:
            problems.append(f"{manifest_path}: checksum differs from the dataset manifest (edited or corrupt)")
        splits = manifest.get("splits", {})
        if split is not None and split not in splits:
            problems.append(
                f"{name}: split {split!r} was not generated (has {', '.join(splits) or 'none'}); run "
                f"{generate_hint(name, profile, split)}"
            )
            continue
        wanted = [split] if split is not None else list(splits)
        listed = manifest.get("files", {})
        unsound = 0
        for relative, digest in listed.items():
            if split is not None and not _in_split(relative, name, split):
                continue
            path = root / relative
            fix = generate_hint(name, profile, _split_of(relative, name), force=True, root=root, splits=splits)
            if not path.is_file():
                problems.append(f"{relative}: missing (listed in {name}/{MANIFEST}); regenerate with {fix}")
                unsound += 1
            elif sha256_file(path) != digest:
                damage = _gzip_damage(path)
                problems.append(f"{relative}: checksum mismatch (changed or corrupt{f': {damage}' if damage else ''}); "
                                f"regenerate with {fix}")
                unsound += 1
            elif damage := _gzip_damage(path):
                problems.append(f"{relative}: {damage}, though its checksum is the manifest's (written damaged); "
                                f"regenerate with {fix}")
                unsound += 1
        for relative in _files_on_disk(root, name):
            if relative not in listed and (split is None or _in_split(relative, name, split)):
                problems.append(f"{relative}: not listed in {name}/{MANIFEST} (a stray or foreign file)")
        if unsound:
            # the checks below read the tables and problem files; on changed bytes they would only add noise
            problems.append(f"{name}: tables, instance keys and train pairs not checked while {unsound} listed "
                            "file(s) are missing or changed")
            continue
        if deep:
            for s in wanted:
                problems += _check_table(root, name, s, splits[s])
        # Distinct within each split, disjoint across splits.
        found, counts = check_domain_instances(
            root, name, manifest, split, recompute=deep and domain is None and split is None,
            hint=lambda s, n=name: generate_hint(n, profile, s, force=True, root=root, splits=splits),
        )
        problems += found
        if duplicates is not None:
            duplicates[name] = counts
        # Which rows of the later splits are a train (state, goal) pair (the model-selection subset).
        whole = domain is None and split is None
        problems += (check_train_pairs(root, name, manifest) if whole and deep
                     else stale_records(root, name, manifest, split, missing=whole))
        if train_pairs is not None:
            train_pairs[name] = {s: e[PAIRS_RECORD] for s, e in splits.items() if PAIRS_RECORD in e}
    return problems


def _from(split: str, splits: dict) -> list[str]:
    """``split`` and the splits made disjoint from it: what must be remade together (:mod:`tnlib.data.generation`
    makes each split disjoint from those :data:`tnlib.data.schema.DISJOINT_FROM` names)."""
    return [split] + [s for s in splits if split in DISJOINT_FROM.get(s, ())]


def _split_of(relative: str, domain: str) -> str | None:
    rest = relative[len(domain) + 1:]
    if rest.endswith(".parquet"):
        return rest[: -len(".parquet")]
    if rest.startswith("problems/"):
        return rest.split("/")[1]
    return None


def _in_split(relative: str, domain: str, split: str) -> bool:
    return relative == f"{domain}/domain.pddl" or _split_of(relative, domain) == split


def _gzip_damage(path: Path) -> str | None:
    """What is wrong with a gzip-compressed problem file's stream (cut short, changed: its CRC tells), None for a
    whole one or a plain file."""
    if not is_compressed(path):
        return None
    try:
        read_pddl_text(path)
    except DamagedFile as err:
        return err.reason
    except UnicodeDecodeError:
        return "its text is not UTF-8"
    return None


def _files_on_disk(root: Path, domain: str) -> Iterator[str]:
    folder = root / domain
    if not folder.is_dir():
        return
    for path in folder.glob("*.parquet"):
        yield path.relative_to(root).as_posix()
    for pattern in ("*/*.pddl", f"*/*.pddl{COMPRESSED_SUFFIX}"):
        for path in (folder / "problems").glob(pattern):
            yield path.relative_to(root).as_posix()


def _check_table(root: Path, domain: str, split: str, entry: dict) -> list[str]:
    import pyarrow.parquet as pq

    path = root / domain / entry["table"]
    if not path.is_file():
        return []  # reported as missing already
    try:
        metadata = pq.read_metadata(path)
        schema = pq.read_schema(path)
    except Exception as err:  # noqa: BLE001 - pyarrow raises several types for damaged files
        return [f"{path.relative_to(root)}: not a readable Parquet file ({err})"]
    problems = []
    expected = arrow_schema()
    if not schema.remove_metadata().equals(expected):
        problems.append(
            f"{path.relative_to(root)}: columns {schema.names} differ from the format's {expected.names}"
        )
    if metadata.num_rows != entry["counts"]["states"]:
        problems.append(
            f"{path.relative_to(root)}: {metadata.num_rows} rows, the manifest says {entry['counts']['states']}"
        )
    return problems


def check_dataset(root: str | os.PathLike, domain: str | None = None, split: str | None = None) -> None:
    """Raise :class:`DatasetError` listing every problem :func:`verify_dataset` finds."""
    problems = verify_dataset(root, domain, split)
    if problems:
        shown = "\n  ".join(problems[:20])
        more = f"\n  ... and {len(problems) - 20} more" if len(problems) > 20 else ""
        raise DatasetError(f"dataset {root} failed verification:\n  {shown}{more}")


# ---------------------------------------------------------------------------------------------------------------
# Data card


def data_card(root: str | os.PathLike) -> str:
    """A Markdown table per domain and split: instances, states, sizes, h* range, failures, duplicates rejected,
    states that equal a train (state, goal) pair, generation time; then the cells that ran out of distinct
    instances. A split labelled by another solver than A* + LM-cut says which beside its name.

    Generation time is the sum over slots of the worker's time (solve + label, rejected attempts included): the
    cost on one core, whatever the parallelism, of the run that made the split (small where solves were reused).
    Solve and label are the accepted attempts' parts; solve time is the planner's, reused solves included.
    """

    root = Path(root)
    top = read_json(root / MANIFEST)
    lines = [
        "| domain | split | instances | states | sizes | h* (initial) range, mean | failed / retried "
        "| duplicates rejected / slots unfilled | states = a train (state, goal) pair | generation s "
        "| of which solve / label |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    exhausted, unreachable = [], []
    for domain, ref in top["domains"].items():
        manifest = read_json(root / ref["manifest"])
        for split, entry in manifest["splits"].items():
            lengths = [i["plan_length"] for i in entry["instances"]]
            params = entry["settings"]["grid"]["params"]
            sizes = "; ".join(
                f"{p} {_value_range([c[p] for c in params])}" for p in DOMAIN_PARAMETERS[domain]
            )
            counts = entry["counts"]
            # the default route (A* + LM-cut) is not recorded; another one is named beside the split
            route = f" ({entry['settings']['solver']} solver)" if entry["settings"].get("solver") else ""
            if entry.get("exact_fill"):  # empty slots filled later (tnlib.data.slot_filling)
                filled = entry["exact_fill"]["slots"]
                route += (f" (+{filled} filled later)" if entry["settings"].get("solver") == EXACT_SOLVER
                          else f" (+{filled} by the exact solver)")
            h_range = f"{min(lengths)}-{max(lengths)}, {sum(lengths) / len(lengths):.1f}" if lengths else "-"
            # a dataset of format 1 has no duplicate rule, so no count: "-"
            duplicates = (f"{counts['duplicates_rejected']} / {counts['unfilled']}"
                          if "duplicates_rejected" in counts else "-")
            pairs = entry.get(PAIRS_RECORD)
            pairs = "-" if split == "train" else "not recorded" if pairs is None else (
                f"{pairs['equal_to_train']} ({100 * pairs['equal_to_train'] / max(pairs['rows'], 1):.0f}%)")
            lines.append(
                f"| {domain} | {split}{route} | {counts['instances']} | {counts['states']} | {sizes} | {h_range} "
                f"| {counts['failed']} / {counts['retried']} | {duplicates} | {pairs} "
                f"| {entry['seconds']['slots']:.0f} "
                f"| {entry['seconds']['solve']:.0f} / {entry['seconds']['label']:.0f} |"
            )
            for cell in entry.get("exhausted_cells", []):
                label = params_label(domain, cell["params"])
                exhausted.append(
                    f"- {domain} {split} `{label}`: {cell['instances']} distinct instance(s), then "
                    f"{entry['settings']['max_attempts']} draws in a row were trivial or repeats (seed number "
                    f"{cell['exhausted_at']}); {cell['unfilled']} slot(s) left empty"
                )
            unreachable += out_of_reach_lines(domain, split, entry)
    lines += ["", "States = a train (state, goal) pair: rows whose state and goal equal those of some row of the "
              "domain's whole train split up to renaming objects (tnlib.data.train_pairs). Distinct instances pass "
              "through such states; model selection validates on the other val rows only. For test and plan it "
              "is information: evaluation uses every row."]
    if exhausted:
        lines += ["", "Cells that ran out of distinct instances (the split holds fewer instances there than its "
                  "grid asks for):", "", *exhausted]
    if unreachable:
        lines += ["", "Cells out of reach (given up after the solver hit its limits on consecutive attempts; the "
                  "split holds only the instances solved before):", "", *unreachable]
    return "\n".join(lines)


def out_of_reach_lines(domain: str, split: str, entry: dict) -> list[str]:
    """One Markdown line per cell of a split's manifest entry given up as out of reach: the limits, the split that
    found it, and the solve times of the attempts that hit the limit."""

    settings, lines = entry["settings"], []
    for cell in entry.get("out_of_reach_cells", []):
        found = "" if cell["found_in"] == split else f" (found in {cell['found_in']})"
        times = ", ".join(f"{a['seconds']:.1f} s" if a.get("seconds") is not None else a["status"]
                          for a in cell["attempts"])
        lines.append(
            f"- {domain} {split} `{params_label(domain, cell['params'])}`: out of reach at "
            f"{settings['time_limit']:g} s / {settings['memory_limit_mb']} MB{found}: {len(cell['attempts'])} solves "
            f"in a row hit the limit ({times}); {cell['instances']} instance(s) solved, {cell['unfilled']} slot(s) "
            "left empty"
        )
    return lines


def format_solve_range(seconds: list[float]) -> str:
    """A cell card's solve-time column: median and max, or "-" when nothing was solved."""
    from statistics import median

    return f"{median(seconds):.1f}, {max(seconds):.1f}" if seconds else "-"


def format_empty_counts(empty: Mapping[str, int]) -> str:
    """A cell card's empty-slots column: exhausted / out of reach / failed."""
    return " / ".join(str(empty.get(k, 0)) for k in ("exhausted", "out_of_reach", "failed"))


def _value_range(values: list) -> str:
    distinct = sorted(set(values))
    if len(distinct) == 1:
        return f"{distinct[0]:g}"
    if all(isinstance(v, int) for v in distinct) and distinct == list(range(distinct[0], distinct[-1] + 1)):
        return f"{distinct[0]}-{distinct[-1]}"
    return "{" + ",".join(f"{v:g}" for v in distinct) + "}"


def cell_card(root: str | os.PathLike, domains: list[str] | None = None) -> str:
    """A Markdown table with one row per cell (parameter combination) of every split: its slots, the instances
    solved, the slots left empty and why (exhausted: no new instance to draw; out of reach: given up at the
    split's limits; failed: attempts ran out), the planner's time on the kept instances (median, max), and the
    attempts that hit the time or memory limit."""

    root = Path(root)
    top = read_json(root / MANIFEST)
    lines = [
        "| domain | split | cell | slots | instances | empty: exhausted / out of reach / failed | solve s (median, max) "
        "| attempts at the limit | limit |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for domain, ref in top["domains"].items():
        if domains is not None and domain not in domains:
            continue
        manifest = read_json(root / ref["manifest"])
        for split, entry in manifest["splits"].items():
            settings = entry["settings"]
            cells: dict[str, dict] = {}
            for params in settings["grid"]["params"]:
                cells[params_label(domain, params)] = {"slots": 0, "times": [], "hits": 0, "empty": {}}
            for inst in entry["instances"]:
                cell = cells[params_label(domain, inst["params"])]
                cell["slots"] += 1
                cell["times"].append(inst["solve_seconds"])
                cell["hits"] += sum(r["status"] in LIMIT_HITS for r in inst["rejected"])
            for failure in entry["failures"]:
                cell = cells[params_label(domain, failure["params"])]
                cell["slots"] += 1
                status = "exhausted" if failure["status"] == "skipped" else failure["status"]
                cell["empty"][status] = cell["empty"].get(status, 0) + 1
                cell["hits"] += sum(r["status"] in LIMIT_HITS for r in failure["rejected"])
            limit = f"{settings['time_limit']:g} s / {settings['memory_limit_mb']} MB"
            for label, cell in cells.items():
                if not cell["slots"]:
                    continue  # a plan split's count can stop before the grid's last cells
                times = cell["times"]
                solve, empty = format_solve_range(times), format_empty_counts(cell["empty"])
                lines.append(f"| {domain} | {split} | `{label}` | {cell['slots']} | {len(times)} | {empty} | {solve} "
                             f"| {cell['hits']} | {limit} |")
    return "\n".join(lines)
