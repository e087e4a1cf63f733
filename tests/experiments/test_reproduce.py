"""The main job's notebooks (tnlib.experiments.running.reproduce): kernels that start without a warning about TCP,
HTML that wraps, scrolls its tables and names no folder of the machine that rendered it."""
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


def test_the_main_jobs_notebook_kernels_start_without_the_unencrypted_tcp_warning(tmp_path, capfd):
    import nbformat
    import papermill

    from tnlib.experiments.running.reproduce import kernel_transport_config

    notebook = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("print(6 * 7)")])
    notebook.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nbformat.write(notebook, tmp_path / "tiny.ipynb")
    printed = {}
    for name, config in (("tcp", None), ("main job", kernel_transport_config())):
        papermill.execute_notebook(str(tmp_path / "tiny.ipynb"), str(tmp_path / "out.ipynb"), kernel_name="python3",
                                   cwd=str(tmp_path), progress_bar=False, **({"config": config} if config else {}))
        assert nbformat.read(tmp_path / "out.ipynb", as_version=4).cells[0].outputs[0]["text"] == "42\n"
        printed[name] = capfd.readouterr().err
    assert "without encryption" in printed["tcp"]  # what the main job's transport setting keeps its kernels from printing
    assert "without encryption" not in printed["main job"]


def test_a_notebook_run_twice_with_the_same_parameters_renders_the_same_page(tmp_path, monkeypatch):
    import nbformat

    from tnlib.experiments.running import reproduce

    parameters = nbformat.v4.new_code_cell("x = 1")
    parameters.metadata["tags"] = ["parameters"]
    notebook = nbformat.v4.new_notebook(cells=[parameters, nbformat.v4.new_code_cell("print(x * 7)")])
    notebook.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nbformat.write(notebook, tmp_path / "tiny.ipynb")
    monkeypatch.setattr(reproduce, "NOTEBOOKS", tmp_path)
    pages = []
    for name in ("first.html", "second.html"):
        reproduce.execute_notebook("tiny.ipynb", {"x": 6}, tmp_path / name)
        pages.append((tmp_path / name).read_text())
    assert pages[0] == pages[1]
    assert "cell-id=injected-parameters" in pages[0] and "42" in pages[0]
