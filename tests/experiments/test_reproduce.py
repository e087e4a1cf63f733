"""The main job's exported notebooks (tnlib.experiments.running.reproduce): HTML that wraps, scrolls its tables and
names no folder of the machine that rendered it."""
from __future__ import annotations


def test_exported_notebooks_wrap_at_spaces_scroll_tables_and_hide_this_machines_paths():
    import nbformat

    from tnlib.experiments.running.reproduce import ROOT, notebook_html

    notebook = nbformat.v4.new_notebook()
    notebook.cells = [
        nbformat.v4.new_markdown_cell("| a | b |\n|---|---|\n| 1 | 2 |"),
        nbformat.v4.new_code_cell("print(path)", outputs=[nbformat.v4.new_output(
            "stream", name="stdout", text=f"  data      {ROOT}/data/small (profile small)\nwrote {ROOT}\n")])]
    html = notebook_html(notebook, ROOT / "reports" / "notebooks")
    assert str(ROOT) not in html and "data      data/small (profile small)" in html
    styles = html.split("<style>")
    ours = styles[-1]  # after JupyterLab's own styles, which break words anywhere
    assert "word-break: break-all" in "".join(styles[:-1])
    assert "word-break: normal" in ours and "overflow-x: auto" in ours and "display: block" in ours
