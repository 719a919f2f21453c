"""One self-contained HTML page from a report's markdown: the same sections, tables and notes,
with every figure it links (`![title](figures/x.svg)`) inlined — SVG as markup, PNG as a data
URI — so the page opens from disk with no network and no folder beside it. Any command that
writes a markdown report (bench; tune when it exists) gets its HTML from `html_document`.

Only the markdown the reports write is understood: headings, lists, pipe tables, quotes,
images, **bold**, *italic*, `code` and [links](to-local-files)."""

from __future__ import annotations

import base64
import html
import re
from pathlib import Path

IMAGE = re.compile(r"^!\[(?P<alt>[^\]]*)\]\((?P<src>[^)]+)\)$")
CODE = re.compile(r"`([^`]+)`")
LINK = re.compile(r"\[([^\]]+)\]\(([^)\s]+)\)")
BOLD = re.compile(r"\*\*(.+?)\*\*")
ITALIC = re.compile(r"(?<![\w*])\*(?!\s)(.+?)(?<!\s)\*(?![\w*])")
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
figure { margin: 1.2em 0; } figure svg, figure img { max-width: 100%; height: auto; }
"""


def inline(text: str) -> str:
    """A line's inline markdown as HTML, its text escaped; code spans are left as they are."""
    pieces = CODE.split(text)
    out = []
    for index, piece in enumerate(pieces):
        escaped = html.escape(piece, quote=False)
        if index % 2:
            out.append(f"<code>{escaped}</code>")
            continue
        escaped = LINK.sub(lambda m: f'<a href="{html.escape(m[2])}">{m[1]}</a>', escaped)
        escaped = BOLD.sub(r"<strong>\1</strong>", escaped)
        out.append(ITALIC.sub(r"<em>\1</em>", escaped))
    return "".join(out)


def figure_html(alt: str, src: str, base: Path) -> str:
    """A linked figure inlined: its SVG markup (no XML prologue, no namespace URIs: the HTML
    parser knows SVG), a PNG as base64; a file that is missing says so."""
    path = base / src
    if not path.is_file():
        return f"<p><em>figure missing: {html.escape(src)}</em></p>"
    if path.suffix.lower() == ".svg":
        svg = NAMESPACES.sub("", XML_HEAD.sub("", path.read_text(encoding="utf-8"), count=1))
        return f'<figure data-src="{html.escape(src)}">{svg}</figure>'
    data = base64.b64encode(path.read_bytes()).decode("ascii")
    return (f'<figure data-src="{html.escape(src)}"><img alt="{html.escape(alt)}" '
            f'src="data:image/png;base64,{data}"></figure>')


def _table(lines: list[str]) -> str:
    def cells(line: str) -> list[str]:
        return [c.strip().replace("\\|", "|")
                for c in re.split(r"(?<!\\)\|", line.strip().strip("|"))]
    head, body = cells(lines[0]), [cells(line) for line in lines[2:]]
    rows = ["<tr>" + "".join(f"<th>{inline(c)}</th>" for c in head) + "</tr>"]
    rows += ["<tr>" + "".join(f"<td>{inline(c)}</td>" for c in row) + "</tr>" for row in body]
    return "<table>" + "".join(rows) + "</table>"


def body_html(markdown: str, base: Path) -> str:
    lines, out, index = markdown.splitlines(), [], 0
    while index < len(lines):
        line = lines[index]
        if not line.strip():
            index += 1
            continue
        heading = re.match(r"^(#{1,4}) (.*)$", line)
        image = IMAGE.match(line.strip())
        if heading:
            level = len(heading[1])
            anchor = re.sub(r"[^\w]+", "-", heading[2].lower()).strip("-")
            out.append(f'<h{level} id="{anchor}">{inline(heading[2])}</h{level}>')
            index += 1
        elif image:
            out.append(figure_html(image["alt"], image["src"], base))
            index += 1
        else:
            kind = "|" if line.startswith("|") else "- " if line.startswith("- ") else \
                "> " if line.startswith("> ") else ""
            block = [line]          # the first line always: a stray "#" is a paragraph
            index += 1
            while index < len(lines) and lines[index].strip() and (
                    lines[index].startswith(kind) if kind else
                    not re.match(r"^(#|\||- |> |!\[)", lines[index])):
                block.append(lines[index])
                index += 1
            if kind == "|":
                out.append(_table(block))
            elif kind == "- ":
                out.append("<ul>" + "".join(f"<li>{inline(b[2:])}</li>" for b in block) + "</ul>")
            elif kind == "> ":
                out.append("<blockquote>" + "<br>".join(inline(b[2:]) for b in block)
                           + "</blockquote>")
            else:
                out.append("<p>" + " ".join(inline(b) for b in block) + "</p>")
    return "\n".join(out)


def html_document(markdown: str, base: Path, title: str) -> str:
    """The whole page: the markdown's sections with their figures inline, no outside reference."""
    return (f'<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
            f"<title>{html.escape(title)}</title><style>{STYLE}</style></head>\n<body>\n"
            f"{body_html(markdown, base)}\n</body></html>\n")
