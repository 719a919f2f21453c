"""One self-contained HTML page from a report's markdown: the same sections, tables and notes,
with every figure it links (`![title](figures/x.svg)`) inlined — SVG as markup, PNG as a data
URI — so the page opens from disk with no network and no folder beside it. Any command that
writes a markdown report (bench, tune) gets its HTML from `html_document`.

The markdown is rendered by markdown-it-py (CommonMark with GitHub's pipe tables; it comes with
Textual), with raw HTML off: whatever a report line holds is escaped, never an element."""

from __future__ import annotations

import base64
import html
import re
from pathlib import Path
from urllib.parse import unquote

from markdown_it import MarkdownIt
from markdown_it.token import Token

XML_HEAD = re.compile(r"^.*?(?=<svg\b)", re.S)
NAMESPACES = re.compile(r'\s+xmlns(:\w+)?="[^"]*"')
STYLE = """
body { font: 15px/1.45 system-ui, sans-serif; max-width: 1180px; margin: 2em auto;
       padding: 0 1em; color: #111; }
h1 { font-size: 1.6em; } h2 { border-bottom: 1px solid #ccc; margin-top: 2em; }
table { border-collapse: collapse; margin: 0.8em 0; font-size: 0.85em; display: block;
        overflow-x: auto; }
th, td { border: 1px solid #bbb; padding: 3px 7px; text-align: left; vertical-align: top; }
th { background: #eee; }
blockquote { margin: 0.5em 0; padding: 0.2em 1em; border-left: 4px solid #bbb; color: #333; }
code { background: #f2f2f2; padding: 0 3px; border-radius: 3px; }
pre { background: #f6f6f6; padding: 0.5em; overflow-x: auto; }
figure { margin: 1.2em 0; } figure svg, figure img { max-width: 100%; height: auto; }
"""


def figure_html(alt: str, src: str, base: Path) -> str:
    """A linked figure inlined: its SVG markup (no XML prologue, no namespace URIs: the HTML
    parser knows SVG), a PNG as base64; a file that is missing, or not beside the report, says
    so."""
    path = base / src
    if not path.is_file() or not path.resolve().is_relative_to(base.resolve()):
        return f"<p><em>figure missing: {html.escape(src)}</em></p>"
    if path.suffix.lower() == ".svg":
        svg = NAMESPACES.sub("", XML_HEAD.sub("", path.read_text(encoding="utf-8"), count=1))
        return f'<figure data-src="{html.escape(src)}">{svg}</figure>'
    data = base64.b64encode(path.read_bytes()).decode("ascii")
    return (f'<figure data-src="{html.escape(src)}"><img alt="{html.escape(alt)}" '
            f'src="data:image/png;base64,{data}"></figure>')


def _renderer(base: Path) -> MarkdownIt:
    md = MarkdownIt("commonmark", {"html": False}).enable("table")

    def image(_renderer, tokens: list[Token], index: int, _options, _env) -> str:
        token = tokens[index]
        return figure_html(token.content, unquote(str(token.attrGet("src") or "")), base)

    md.add_render_rule("image", image)
    return md


def _anchors_and_figures(tokens: list[Token]) -> None:
    """Each heading gets an id from its text; a paragraph that is only a figure loses its <p>
    (a <figure> may not sit in one)."""
    for index, token in enumerate(tokens[:-2]):
        following = tokens[index + 1]
        if token.type == "heading_open":
            anchor = re.sub(r"[^\w]+", "-", following.content.lower()).strip("-")
            token.attrSet("id", anchor)
        elif (token.type == "paragraph_open" and following.children is not None
              and [c.type for c in following.children] == ["image"]):
            token.hidden = tokens[index + 2].hidden = True


def body_html(markdown: str, base: Path) -> str:
    md = _renderer(base)
    tokens = md.parse(markdown)
    _anchors_and_figures(tokens)
    return md.renderer.render(tokens, md.options, {})


def html_document(markdown: str, base: Path, title: str) -> str:
    """The whole page: the markdown's sections with their figures inline, no outside reference."""
    return (f'<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
            f"<title>{html.escape(title)}</title><style>{STYLE}</style></head>\n<body>\n"
            f"{body_html(markdown, base)}\n</body></html>\n")
