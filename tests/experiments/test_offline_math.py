"""Rendered reports are viewable offline: tnlib.experiments.running.offline_math turns the notebooks' TeX into MathML at export time
and removes the loaders nbconvert's template fetches from CDNs. Checked on formulas, on fresh exports of the
three notebooks, on the committed reports/notebooks/*.html, and in headless Chromium without network."""
from __future__ import annotations

import html
import re
from pathlib import Path

import nbformat
import pytest
from nbconvert import HTMLExporter

from browser_support import isolate, is_local, launch_chromium
from tnlib.experiments.running.offline_math import MATHML_STYLE, drop_online_loaders, offline_html, render_math, tex_to_mathml

ROOT = Path(__file__).resolve().parents[2]
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))
REPORTS = ROOT / "reports" / "notebooks"
# Any absolute web address (or protocol-relative one in an attribute), local or not; is_local sorts them.
_WEB_ADDRESS = re.compile(r"""(?:https?|wss?)://[^\s"'<>()`\\]+|(?<=["'])//[A-Za-z0-9.-]+\.[a-z]{2,}[^\s"'<>]*""")
# MathJax's loader or configuration (plotly's own "MathJaxConfig: 'local'" setting is not one)
_MATHJAX = re.compile(r"<script\b[^>]*\bsrc=[^>]*mathjax|text/x-mathjax-config", re.IGNORECASE)
# The formulas of a markdown cell, delimited as in the notebooks ($$...$$ for display, $...$ inline).
_MARKDOWN_FORMULA = re.compile(r"\$\$.+?\$\$|\$[^$]+?\$", re.DOTALL)


def drawn(mathml: str) -> str:
    """A ``<math>`` element without its TeX source (alttext), character references decoded."""
    return html.unescape(re.sub(r' alttext="[^"]*"', "", mathml))


def external_addresses(page: str) -> list[str]:
    return [address for address in _WEB_ADDRESS.findall(page) if not is_local(address)]


def formulas_in(notebook: nbformat.NotebookNode) -> int:
    return sum(len(_MARKDOWN_FORMULA.findall(cell.source)) for cell in notebook.cells if cell.cell_type == "markdown")


def export(notebook: nbformat.NotebookNode) -> str:
    """The HTML as the reports are exported (tnlib.experiments.running.reproduce): lab template, no require.js."""
    body, _ = HTMLExporter(template_name="lab", require_js_url="").from_notebook_node(notebook)
    return body


# --- single formulas ------------------------------------------------------------------------------------------


def test_a_fraction_becomes_a_mathml_fraction_with_its_source_kept():
    mathml = tex_to_mathml(r"\frac{a}{b} < 1")
    assert mathml.startswith('<math alttext="\\frac{a}{b} &lt; 1" display="inline">')
    assert re.search(r"<mfrac><mrow><mi>a</mi></mrow><mrow><mi>b</mi></mrow></mfrac>", mathml)
    assert "<mo>&#x0003C;</mo>" in mathml and "xmlns" not in mathml
    assert 'display="block"' in tex_to_mathml("x", display=True)


def test_styled_letters_become_unicode_math_letters_which_chromium_draws():
    # MathML Core ignores mathvariant (except "normal"): \mathcal{TN} must come out as script T and N
    assert "<mi>\U0001D4AF</mi><mi>\U0001D4A9</mi>" in drawn(tex_to_mathml(r"\mathcal{TN}(x)"))
    assert "<mi>\U0001D53C</mi>" in drawn(tex_to_mathml(r"\mathbb{E}[x]"))  # double-struck E
    assert "<mi>\u211D</mi><mi>\U0001D53C</mi>" in drawn(tex_to_mathml(r"\mathbb{RE}"))  # R: Letterlike Symbols
    assert "mathvariant" not in tex_to_mathml(r"\mathbf{xy} + \mathcal{B}")


def test_line_breaks_with_spacing_and_arg_are_understood():
    cases = drawn(tex_to_mathml(r"\begin{cases} a, & x \ge 0\\[1ex] 0 & \text{otherwise} \end{cases}", display=True))
    assert cases.count("<mtr>") == 2 and "1ex" not in cases
    assert "<mtext>otherwise</mtext>" in cases
    # TeX's thin space after a function name, none before a bracket (Chromium adds neither by itself)
    assert "<mi>log</mi><mspace" in tex_to_mathml(r"\log Z") and "mspace" not in tex_to_mathml(r"\exp(x)")
    arg = drawn(tex_to_mathml(r"\arg\max_\theta f(\theta)"))
    assert "<mo>arg</mo>" in arg and "\\" not in arg


@pytest.mark.parametrize("tex", [r"\foo{x}", r"\mathcal{N} + \unknowncommand"])
def test_an_unsupported_command_is_an_error_that_names_it(tex):
    with pytest.raises(ValueError, match=r"\\(foo|unknowncommand)"):
        tex_to_mathml(tex)


def test_an_empty_formula_is_an_error():
    with pytest.raises(ValueError, match="empty"):
        tex_to_mathml("  ")


# --- pages ----------------------------------------------------------------------------------------------------


def test_math_is_rendered_where_mathjax_would_typeset_it_and_nowhere_else():
    page = ("<p>Let $x &lt; y$ and \\(z\\); it costs \\$5.</p><p>$$a &amp; b$$</p>"
            "<pre>$not math$</pre><code>$x$</code><script>var s = '$y$';</script><!-- $c$ -->"
            "<p>one lone $ sign</p>")
    rendered = render_math(page)
    assert rendered.count("<math") == 3
    assert '<math alttext="x &lt; y" display="inline">' in rendered
    assert 'alttext="a &amp; b" display="block"' in rendered
    assert "it costs $5." in rendered and "one lone $ sign" in rendered
    for verbatim in ("<pre>$not math$</pre>", "<code>$x$</code>", "<script>var s = '$y$';</script>", "<!-- $c$ -->"):
        assert verbatim in rendered


def test_exported_page_loads_nothing_from_the_network_and_keeps_its_own_scripts():
    notebook = nbformat.v4.new_notebook(metadata={"widgets": {"application/vnd.jupyter.widget-state+json": {
        "state": {}, "version_major": 2, "version_minor": 0}}})
    notebook.cells = [nbformat.v4.new_markdown_cell("The mean $\\mathbb{E}[x]$ and\n\n$$\\frac{1}{Z}$$")]
    online = export(notebook)
    assert _MATHJAX.search(online) and external_addresses(online)  # what the template does by itself
    offline = offline_html(online)
    assert external_addresses(offline) == []
    assert not _MATHJAX.search(offline) and "addWidgetsRenderer" not in offline
    assert offline.count("<math") == 2 and offline.count(MATHML_STYLE) == 1
    assert offline_html(offline) == offline  # idempotent: re-processing a report changes nothing
    assert drop_online_loaders(online).count("<script") < online.count("<script")


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda path: path.stem)
def test_every_formula_of_the_notebooks_becomes_mathml(path):
    notebook = nbformat.read(path, as_version=4)
    offline = offline_html(export(notebook))
    assert offline.count("<math") == formulas_in(notebook)
    assert external_addresses(offline) == []


def test_reproduce_exports_the_notebooks_offline(tmp_path, monkeypatch):
    """The main job's export step (papermill replaced by a copy: the export, not the run, is under test)."""
    import shutil

    import papermill

    from tnlib.experiments.running import reproduce

    monkeypatch.setattr(papermill, "execute_notebook", lambda source, target, **options: shutil.copy(source, target))
    html_out = tmp_path / "truncated_gaussian_explorer.html"
    reproduce.execute_notebook(html_out.stem + ".ipynb", {}, html_out)
    page = html_out.read_text()
    assert external_addresses(page) == [] and not _MATHJAX.search(page)
    assert page.count("<math") == formulas_in(nbformat.read(ROOT / "notebooks" / f"{html_out.stem}.ipynb", 4)) > 0


@pytest.mark.parametrize("path", sorted(REPORTS.glob("*.html")), ids=lambda path: path.stem)
def test_committed_reports_are_offline(path):
    """reports/notebooks/*.html were exported through offline_html: formulas in MathML, nothing fetched."""
    page = path.read_text()
    notebook = nbformat.read(ROOT / "notebooks" / f"{path.stem}.ipynb", as_version=4)
    assert external_addresses(page) == []
    assert not _MATHJAX.search(page)
    assert page.count("<math") >= formulas_in(notebook)
    sources = re.findall(r"<script\b[^>]*\bsrc=[\"']([^\"']+)", page)
    assert all((REPORTS / source).is_file() for source in sources), sources


# --- in a browser ---------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def chromium():
    yield from launch_chromium()


# Every formula laid out with a size, and display fractions drawn as fractions (numerator above denominator),
# which only happens when the browser lays out MathML (otherwise the parts run inline, side by side).
_MATH_LAYOUT = """() => {
  const formulas = [...document.querySelectorAll('math')];
  const sized = formulas.filter(m => { const r = m.getBoundingClientRect(); return r.width > 0 && r.height > 0; });
  const fractions = [...document.querySelectorAll('math[display="block"] mfrac')].map(f => {
    const [top, bottom] = [...f.children].map(c => c.getBoundingClientRect());
    return {stacked: top.bottom <= bottom.top + 1, centred: Math.abs((top.left + top.right) - (bottom.left + bottom.right)) < 4};
  });
  return {formulas: formulas.length, sized: sized.length, fractions,
          plots: document.querySelectorAll('.js-plotly-plot .main-svg').length};
}"""


@pytest.mark.slow
@pytest.mark.xdist_group("browser")
def test_report_shows_its_formulas_and_figures_in_chromium_without_network(chromium, tmp_path):
    report = REPORTS / "truncated_gaussian_explorer.html"
    page = chromium.new_page(viewport={"width": 1100, "height": 900})
    blocked, errors = isolate(page)
    try:
        page.goto(report.as_uri(), wait_until="load", timeout=30_000)
        page.locator(".js-plotly-plot .main-svg").first.wait_for(timeout=30_000)
        layout = page.evaluate(_MATH_LAYOUT)
        cell = page.locator(".jp-MarkdownCell", has_text="Its mean is").first
        cell.screenshot(path=tmp_path / "formulas.png")
    finally:
        page.close()
    assert blocked == [] and errors == []
    assert layout["formulas"] == formulas_in(nbformat.read(ROOT / "notebooks" / f"{report.stem}.ipynb", 4))
    assert layout["sized"] == layout["formulas"]
    assert len(layout["fractions"]) >= 4 and all(f["stacked"] and f["centred"] for f in layout["fractions"])
    assert layout["plots"] >= 5  # the figures draw from the shared plotly.min.js beside the report
