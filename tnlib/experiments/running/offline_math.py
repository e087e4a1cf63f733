"""Make nbconvert's HTML reports viewable offline: TeX rendered to MathML at export time, CDN loaders removed.

nbconvert leaves the notebooks' math as ``$...$`` text and loads MathJax from a CDN to typeset it in the
browser, so a report opened without network access shows raw TeX. Two ways out were weighed:

* shipping MathJax next to the HTML: several hundred kB of JavaScript and fonts in the repository, typesetting
  at every page view, and web fonts that Chromium refuses to load from ``file://`` pages (CORS), so the
  formulas degrade exactly where offline viewing matters;
* rendering at export time (chosen): :func:`tex_to_mathml` converts each formula with ``latex2mathml`` into
  MathML, which Chromium (109+), Firefox and Safari lay out natively. Nothing is fetched or executed, the
  reports stay the same size, and a formula the converter cannot handle fails the export with its source
  instead of showing garbled output.

:func:`offline_html` is the entry point: it replaces the math the page's MathJax would have typeset (the same
delimiters ``$...$``, ``$$...$$``, ``\\(...\\)``, ``\\[...\\]`` and ``\\begin{env}...\\end{env}``, outside
``script``/``style``/``pre``/``code``/``textarea``) and drops the template's loaders that can only work online
(MathJax, the mermaid.js importer, the ipywidgets renderer: saved widget views such as progress bars stay
blank, as they already did without network).
"""
from __future__ import annotations

import html
import re
import unicodedata

__all__ = ["tex_to_mathml", "render_math", "drop_online_loaders", "offline_html", "MATHML_STYLE"]

# latex2mathml writes cases/aligned columns as ``columnalign``, which MathML Core (Chromium) ignores.
MATHML_STYLE = ('<style type="text/css">/* tnlib.experiments.running.offline_math */ '
                'mtd[columnalign="left"] { text-align: left; } mtd[columnalign="right"] { text-align: right; } '
                'math[display="block"] { margin: 0.5em 0; } '
                'math { font-family: "Latin Modern Math", "STIX Two Math", "DejaVu Math TeX Gyre", math; }</style>')

# Operator names that latex2mathml leaves as raw commands; rewritten to \operatorname before conversion.
_MISSING_OPERATORS = ("arg",)
# A line break with extra spacing, ``\\[1ex]``: latex2mathml would print the "[1ex]" as math.
_SPACED_LINE_BREAK = re.compile(r"\\\\\s*\[\s*-?[\d.]+\s*[a-z]{2}\s*\]")
_MATHML_NAMESPACE = re.compile(r'\s+xmlns="http://www\.w3\.org/1998/Math/MathML"')
_TAG = re.compile(r"<[^>]*>")
# \log Z: TeX puts a thin space after a function name unless a bracket follows; MathML Core draws none.
_FUNCTION_NAME = re.compile(r"(<mi>[a-z]{2,}</mi>)(?!<mo[^>]*>(?:&#x00028;|&#x0005B;|\(|\[|&#x0007B;))(?=<[a-z])")
_THIN_SPACE = '<mspace width="0.1667em"></mspace>'
# latex2mathml styles a multi-letter \mathcal{TN} or \mathbb{ER} letter by letter with ``mathvariant``, which
# MathML Core (Chromium) ignores except for "normal": such letters become Unicode mathematical alphanumerics.
_STYLED_TOKEN = re.compile(r'<(mi|mn|mo|mtext) mathvariant="([a-z-]+)">([^<]+)</\1>')
_VARIANT_NAMES = {
    "bold": "BOLD", "italic": "ITALIC", "bold-italic": "BOLD ITALIC", "script": "SCRIPT", "bold-script": "BOLD SCRIPT",
    "double-struck": "DOUBLE-STRUCK", "fraktur": "FRAKTUR", "bold-fraktur": "BOLD FRAKTUR",
    "sans-serif": "SANS-SERIF", "bold-sans-serif": "SANS-SERIF BOLD", "sans-serif-italic": "SANS-SERIF ITALIC",
    "sans-serif-bold-italic": "SANS-SERIF BOLD ITALIC", "monospace": "MONOSPACE",
}
# Letters encoded before the Mathematical Alphanumeric Symbols block (their slots there are reserved).
_LETTERLIKE_PREFIXES = {"script": "SCRIPT", "double-struck": "DOUBLE-STRUCK", "fraktur": "BLACK-LETTER"}

# Elements whose content MathJax leaves alone (its skipTags) and that this module copies verbatim.
_VERBATIM = re.compile(
    r"<!--.*?-->|<(script|style|textarea|pre|code)\b[^>]*>.*?</\1\s*>|<[^>]*>", re.DOTALL | re.IGNORECASE)
# Math delimiters in the order MathJax's tex2jax tries them; an escaped dollar is a literal dollar.
_MATH = re.compile(
    r"(?P<dollar>\\\$)"
    r"|\$\$(?P<display_dollars>.+?)\$\$"
    r"|\\\[(?P<display_brackets>.+?)\\\]"
    r"|\\\((?P<inline_parens>.+?)\\\)"
    r"|(?P<environment>\\begin\{(?P<name>[A-Za-z]+\*?)\}.*?\\end\{(?P=name)\})"
    r"|\$(?P<inline_dollar>[^$]+?)\$",
    re.DOTALL)


def tex_to_mathml(tex: str, display: bool = False) -> str:
    """One TeX formula (without its delimiters) as a ``<math>`` element, the source kept in ``alttext``.

    Raises ValueError naming the formula when the converter fails or leaves a command it does not know
    (latex2mathml prints unknown commands such as ``\\foo`` literally instead of failing).
    """
    from latex2mathml.converter import convert

    source = tex.strip()
    if not source:
        raise ValueError("empty formula")
    prepared = _SPACED_LINE_BREAK.sub(r"\\\\", source)
    for name in _MISSING_OPERATORS:
        prepared = re.sub(rf"\\{name}(?![A-Za-z])", rf"\\operatorname{{{name}}}", prepared)
    try:
        mathml = convert(prepared, display="block" if display else "inline")
    except Exception as error:  # latex2mathml raises a zoo of exception types for bad input
        raise ValueError(f"cannot convert formula to MathML ({type(error).__name__}: {error}): {source!r}") from error
    unknown = re.findall(r"\\[A-Za-z]+", html.unescape(_TAG.sub(" ", mathml)))
    if unknown:
        raise ValueError(f"formula uses {', '.join(sorted(set(unknown)))}, which latex2mathml does not support: "
                         f"{source!r}")
    alttext = html.escape(source, quote=True)
    mathml = _apply_mathvariants(_MATHML_NAMESPACE.sub("", mathml, count=1))
    mathml = _FUNCTION_NAME.sub(lambda match: match.group(1) + _THIN_SPACE, mathml)
    return mathml.replace("<math", f'<math alttext="{alttext}"', 1)


def _styled_character(character: str, variant: str) -> str | None:
    """``character`` in a ``mathvariant`` as one Unicode character (e.g. T, script -> U+1D4AF), or None."""
    name = unicodedata.name(character, "")
    plain = re.fullmatch(r"(?:LATIN|GREEK) (CAPITAL|SMALL) LETTER (\w+)|(DIGIT \w+)", name)
    if variant not in _VARIANT_NAMES or not plain:
        return None
    rest = plain.group(3) or f"{plain.group(1)} {plain.group(2)}"
    candidates = [f"MATHEMATICAL {_VARIANT_NAMES[variant]} {rest}"]
    if variant in _LETTERLIKE_PREFIXES:
        candidates.append(f"{_LETTERLIKE_PREFIXES[variant]} {rest}")
    if variant == "italic" and rest == "SMALL H":
        candidates.append("PLANCK CONSTANT")
    for candidate in candidates:
        try:
            return unicodedata.lookup(candidate)
        except KeyError:
            continue
    return None


def _apply_mathvariants(mathml: str) -> str:
    def replace(match: re.Match) -> str:
        tag, variant, text = match.groups()
        styled = _styled_character(html.unescape(text), variant) if len(html.unescape(text)) == 1 else None
        return match.group(0) if styled is None else f"<{tag}>{styled}</{tag}>"

    return _STYLED_TOKEN.sub(replace, mathml)


def _render_text(text: str) -> str:
    """Replace the formulas in one HTML text run (entities still escaped) by MathML."""
    def replace(match: re.Match) -> str:
        if match.group("dollar"):
            return "$"
        display_source = match.group("display_dollars") or match.group("display_brackets") or match.group("environment")
        if display_source is not None:
            return tex_to_mathml(html.unescape(display_source), display=True)
        return tex_to_mathml(html.unescape(match.group("inline_parens") or match.group("inline_dollar")))

    return _MATH.sub(replace, text)


def render_math(page: str) -> str:
    """``page`` with every formula MathJax would typeset replaced by MathML (markup and scripts untouched)."""
    pieces, position = [], 0
    for match in _VERBATIM.finditer(page):
        pieces.append(_render_text(page[position:match.start()]))
        pieces.append(match.group(0))
        position = match.end()
    pieces.append(_render_text(page[position:]))
    return "".join(pieces)


# nbconvert's template blocks (lab and classic) that load code from a CDN when the page opens.
_ONLINE_LOADERS = [
    # MathJax: the loader tag and its configuration script
    re.compile(r"<!--\s*Load mathjax\s*-->\s*", re.IGNORECASE),
    re.compile(r"<script\b[^>]*\bsrc=[\"'][^\"']*mathjax[^\"']*[\"'][^>]*>\s*</script>\s*", re.IGNORECASE),
    re.compile(r"<!--\s*MathJax configuration\s*-->\s*", re.IGNORECASE),
    re.compile(r"<script type=\"text/x-mathjax-config\">.*?</script>\s*", re.DOTALL | re.IGNORECASE),
    re.compile(r"<!--\s*End of mathjax configuration\s*-->", re.IGNORECASE),
    # mermaid.js imported from a CDN for diagrams (their source stays visible as text), and the ipywidgets
    # renderer from unpkg
    re.compile(r"<script type=\"module\">(?:(?!</script>).)*?import\(\"https?://(?:(?!</script>).)*</script>\s*",
               re.DOTALL),
    re.compile(r"<script>(?:(?!</script>).)*?addWidgetsRenderer(?:(?!</script>).)*</script>", re.DOTALL),
]


_STYLE_BLOCK = re.compile(r"(<style\b[^>]*>)(.*?)(</style\s*>)", re.DOTALL | re.IGNORECASE)
_CSS_COMMENT_WITH_URL = re.compile(r"/\*(?:(?!\*/).)*?https?://(?:(?!\*/).)*?\*/", re.DOTALL)


def drop_online_loaders(page: str) -> str:
    """``page`` without the template scripts that fetch MathJax, mermaid.js or the widget renderer, and
    without the template's CSS comments that cite web pages (so that no web address is left in the page)."""
    for loader in _ONLINE_LOADERS:
        page = loader.sub("", page)
    return _STYLE_BLOCK.sub(lambda m: m.group(1) + _CSS_COMMENT_WITH_URL.sub("", m.group(2)) + m.group(3), page)


def offline_html(page: str) -> str:
    """An nbconvert HTML page that displays its formulas without network access and fetches nothing."""
    page = drop_online_loaders(render_math(page))
    if "<math" in page and MATHML_STYLE not in page:
        page = page.replace("</head>", MATHML_STYLE + "\n</head>", 1)
    return page
