"""Paths as tnlib shows them (tnlib.files): a folder inside the repository by its path there, one outside it by its
own name, never by a machine's folders."""
from __future__ import annotations


def test_reports_name_a_results_folder_by_its_repository_path_and_never_by_a_machines_folder():
    """Three committed folders are all called runs/: inside the repository a report names the path; outside it
    the folder's name only (no /tmp/... or /home/... of the machine that rendered it)."""
    from tnlib.files import REPO_ROOT, shown_folder

    assert shown_folder(REPO_ROOT / "reports" / "paper-scale" / "runs") == "reports/paper-scale/runs"
    assert shown_folder("/elsewhere/experiments/runs") == "runs"


def test_json_one_record_a_line_parses_back_equal_with_each_record_on_a_line_of_its_own():
    """A manifest-like value: its members one to a line, each element of a list of records whole on one line (so
    a diff changes whole records), lists of plain values kept on one line, keys that are not strings as JSON
    writes them -- and the text parses back to the value."""
    import json

    from tnlib.files import json_one_record_a_line

    records = [{"instance": f"p{i}", "plan": ["(a)", "(b x)"], "params": {"n": i}, "seconds": 0.5 * i}
               for i in range(3)]
    value = {"format": "f", "splits": {"test": {"instances": records, "failures": [], "grid": [[1, 2], [3]],
                                                "seeds": [1, 2, 3], "empty": {}}},
             "files": {"a/b.pddl": "0" * 64, "a/c.pddl": "1" * 64}, 7: None, "text": "x\ny \u00e9"}
    text = json_one_record_a_line(value)
    assert json.loads(text) == json.loads(json.dumps(value))
    lines = text.splitlines()
    for record in records:
        assert sum(line.strip().rstrip(",") == json.dumps(record, separators=(",", ":")) for line in lines) == 1
    assert ' "files": {' in lines and '  "a/b.pddl": "' + "0" * 64 + '",' in lines
    assert '   "seeds": [1,2,3],' in lines and '    [1,2],' in lines and '   "empty": {}' in lines
    assert ' "7": null,' in lines
    assert len(lines) == 25


def test_a_manifest_written_one_record_a_line_reads_back_and_is_smaller_than_indented(tmp_path):
    """What tnlib.data writes every manifest with: read back equal by read_json, an instance record a line, a
    fraction of the indented bytes for records of several values."""
    import json

    from tnlib.data.manifest_writing import write_manifest
    from tnlib.files import read_json

    manifest = {"instances": [{"instance": f"p{i}", "plan": [f"(move b{j} b{j + 1})" for j in range(20)],
                               "params": {"blocks": 11}, "seed": 10**12 + i} for i in range(50)]}
    path = tmp_path / "manifest.json"
    write_manifest(path, manifest)
    assert read_json(path) == manifest
    assert len(path.read_text().splitlines()) == 50 + 4
    assert path.stat().st_size < 0.8 * len(json.dumps(manifest, indent=1))
