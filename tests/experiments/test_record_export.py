"""Exported records: a results folder copied without its checkpoints, planning records and curves compressed, reads
and renders as the folder itself does."""
from __future__ import annotations

import contextlib
import gzip
import io
import shutil
from dataclasses import replace
from pathlib import Path

import pytest

from tnlib import cli
from tnlib.experiments.reporting.record_export import export_records
from tnlib.experiments.results_dir import ResultsDir
from tnlib.experiments.reporting.table_rows import collect_planning
from tnlib.files import read_jsonl
from tnlib.learning.run_files import RunDir

DATA_SMALL = Path(__file__).resolve().parents[2] / "data" / "small"
SWEEP = ["sweep", "--preset", "small", "--models", "linear", "--domains", "gripper", "--configs", "learn/ff",
         "--distributions", "N", "TN", "--seeds", "0", "--steps", "20", "--eval-every", "10", "--plan-instances", "2",
         "--max-evaluations", "200", "--workers", "1", "--data-root", str(DATA_SMALL)]


def run_cli(argv: list[str]) -> tuple[int, str]:
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
        code = cli.main(argv)
    return code, out.getvalue()


@pytest.fixture(scope="module")
def results(tmp_path_factory) -> Path:
    """A results folder of two tiny runs (linear regression, N and TN, 2 plan instances), with a lock file."""
    out = tmp_path_factory.mktemp("sweep") / "results"
    code, _ = run_cli(SWEEP + ["--out", str(out)])
    assert code == 0
    (out / ".a-run.lock").write_text("")
    return out


def _files(folder: Path) -> dict[str, bytes]:
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def test_an_export_holds_every_record_but_the_checkpoints_with_planning_records_and_curves_compressed(results,
                                                                                                     tmp_path):
    out = tmp_path / "records"
    export = export_records(results, out)
    source, copied = _files(results), _files(out)
    assert any(name.endswith(".pt") for name in source) and not any(name.endswith(".pt") for name in copied)
    assert not any(Path(name).name.startswith(".") for name in copied)
    planning = {name for name in source if Path(name).name.startswith(("planning-", "baseline-"))}
    assert len(planning) == 4  # N's two estimates, TN's one, h_FF's baseline
    curves = {name for name in source if Path(name).name == RunDir.CURVES}
    assert len(curves) == 2
    for name in planning | curves:  # compressed, and the same bytes inside
        assert name not in copied and gzip.decompress(copied[name + ".gz"]) == source[name]
    compressed = planning | curves
    others = {name for name in source if not name.endswith(".pt") and not Path(name).name.startswith(".")} - compressed
    assert {name: copied[name] for name in others} == {name: source[name] for name in others}
    assert (export.runs, export.tested, export.files) == (2, 2, len(copied))
    assert export.written_bytes == sum(map(len, copied.values()))
    assert export.left_out_bytes == sum(len(data) for name, data in source.items() if name.endswith(".pt"))
    assert export.record_bytes == sum(len(source[name]) for name in compressed)
    assert export.compressed_record_bytes == sum(len(copied[name + ".gz"]) for name in compressed)


def test_the_tables_and_reports_of_an_export_are_those_of_its_results_folder(results, tmp_path):
    out = tmp_path / "exported" / "results"  # the same folder name: the report's header names it
    export_records(results, out)
    assert collect_planning(out) == collect_planning(results)
    for folder, rendered in ((results, tmp_path / "from-runs"), (out, tmp_path / "from-export")):
        code, _ = run_cli(["report", str(folder), "--out", str(rendered)])
        assert code == 0
    for name in ("accuracy.md", "planning.md", "planning-seeds.csv", "accuracy-seeds.csv", "training_curves.html",
                 "figure2.html"):
        assert (tmp_path / "from-export" / name).read_text() == (tmp_path / "from-runs" / name).read_text(), name


def test_exporting_again_writes_the_same_bytes_and_plain_replaces_compressed(results, tmp_path):
    out = tmp_path / "records"
    export_records(results, out)
    first = _files(out)
    export_records(results, out)
    assert _files(out) == first  # reproducible compression: a repeated export leaves git unchanged
    export_records(results, out, compress=False)
    plain = _files(out)
    assert not any(name.endswith(".gz") for name in plain)
    assert {name: plain[name] for name in plain if "planning-" in name} == \
        {name: data for name, data in _files(results).items() if "planning-" in name}
    export_records(results, out)
    assert _files(out) == first


def test_a_folder_with_both_forms_of_a_planning_record_is_read_from_the_plain_one(results, tmp_path):
    folder = tmp_path / "results"
    shutil.copytree(results, folder)
    run = next(path for path in folder.iterdir() if path.name.startswith("gripper-linear-N-"))
    plain = run / "planning-default.jsonl"
    stale = gzip.compress(plain.read_bytes().splitlines(keepends=True)[0])  # one record, against the plain file's 2
    (run / "planning-default.jsonl.gz").write_bytes(stale)
    assert [p for p in ResultsDir(folder).planning_files() if p.parent == run] == \
        [run / "planning-clip.jsonl", plain]
    plain.unlink()
    assert len(read_jsonl(run / "planning-default.jsonl.gz")) == 1
    assert run / "planning-default.jsonl.gz" in ResultsDir(folder).planning_files()
    assert RunDir.estimate_of(run / "planning-plan-set-clip.jsonl.gz") == "clip"
    assert RunDir.planned_split_of(run / "planning-plan-set-clip.jsonl.gz") == "plan-set"
    assert RunDir.planned_split_of(run / "planning-default.jsonl.gz") == "plan"


def test_a_run_reads_its_exported_curve_where_only_that_is_there_and_training_writes_the_plain_one(results,
                                                                                                   tmp_path):
    folder = tmp_path / "records"
    export_records(results, folder)
    run = RunDir(next(path for path in folder.iterdir() if path.name.startswith("gripper-linear-TN-")))
    source = RunDir(results / run.name)
    assert run.curves_file == run.path / "curves.jsonl.gz" and run.training_curves_file == run.path / "curves.jsonl"
    assert read_jsonl(run.curves_file) == read_jsonl(source.curves_file) and len(read_jsonl(run.curves_file)) == 2
    run.training_curves_file.write_text(source.curves_file.read_text().splitlines(keepends=True)[0])
    assert run.curves_file == run.training_curves_file  # both forms: the plain one, which training appends to
    assert len(read_jsonl(run.curves_file)) == 1


def test_training_an_exported_run_from_scratch_replaces_its_compressed_curve(results, tmp_path):
    from tnlib.learning.training import read_run_config, train

    folder = tmp_path / "records"
    export_records(results, folder)
    run = RunDir(next(path for path in folder.iterdir() if path.name.startswith("gripper-linear-TN-")))
    config = read_run_config(run.path)
    train(replace(config, out_dir=str(folder), progress=False), resume=False)
    assert not (run.path / RunDir.CURVES_EXPORTED).exists()
    assert run.curves_file == run.training_curves_file
    assert read_jsonl(run.curves_file) and all("val_mse" in row for row in read_jsonl(run.curves_file))


def test_export_records_names_a_missing_folder_and_refuses_one_inside_the_results(results, tmp_path):
    code, _ = run_cli(["export-records", str(tmp_path / "nothing"), "--out", str(tmp_path / "out")])
    assert code == 2
    with pytest.raises(ValueError, match="inside the results folder"):
        export_records(results, results / "records")
    code, printed = run_cli(["export-records", str(results), "--out", str(tmp_path / "out")])
    assert code == 0 and "exported 2 runs" in printed and "compressed to" in printed
