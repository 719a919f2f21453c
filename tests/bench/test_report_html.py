"""report.html from report.md: the markdown the reports write, as HTML, figures inline; and
the page as headless Chromium shows it (skipped where no Chromium is installed)."""

from __future__ import annotations

import base64
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from probe.report_charts.html_report import body_html, html_document
from tests.bench.html_page import Page
from tools.report_look import browser, screenshot


def test_the_reports_markdown_becomes_html(tmp_path: Path) -> None:
    (tmp_path / "figures").mkdir()
    (tmp_path / "figures" / "a.svg").write_text(
        '<?xml version="1.0"?>\n<!DOCTYPE svg PUBLIC "-//W3C//DTD SVG 1.1//EN" '
        '"http://www.w3.org/Graphics/SVG/1.1/DTD/svg11.dtd">\n'
        '<svg xmlns:xlink="http://www.w3.org/1999/xlink" xmlns="http://www.w3.org/2000/svg">'
        '<g id="cdf-0"/></svg>')
    (tmp_path / "figures" / "b.png").write_bytes(b"\x89PNG\r\n\x1a\nfake")
    markdown = "\n".join([
        "# infertop bench: t5-tiny on chat", "", "- model **t5-tiny**, `--quick`", "- two", "",
        "## E1 — Compile modes", "", "| config | p50 |", "|---|---|", "| a \\| b | 1 ms |", "",
        "*Graph-break reasons*", "", "> a note", "> another", "",
        "![E1 — CDF](figures/a.svg)", "", "![PNG](figures/b.png)", "", "![gone](figures/c.svg)",
        "", "![outside](../x.svg)", "", "Snapshots: `runs/x.json`", "", "```", "# a  b", "-- --",
        "```", "", "#stray"])
    text = html_document(markdown, tmp_path, "t")
    page = Page(text)
    assert [(e[1].get("id"), e[2]) for e in page.all("h1")] == [
        ("infertop-bench-t5-tiny-on-chat", "infertop bench: t5-tiny on chat")]
    assert [e[2] for e in page.all("h2")] == ["E1 — Compile modes"]
    assert [e[2] for e in page.all("li")] == ["model t5-tiny, --quick", "two"]
    assert [e[2] for e in page.all("th")] == ["config", "p50"]
    assert [e[2] for e in page.all("td")] == ["a | b", "1 ms"]
    assert [e[2] for e in page.all("em")][0] == "Graph-break reasons"
    assert [e[2].split() for e in page.all("blockquote")] == [["a", "note", "another"]]
    assert [e[2] for e in page.all("pre")] == ["# a  b\n-- --\n"]
    assert '<g id="cdf-0"/>' in text and "http" not in text and "<?xml" not in text
    assert "data:image/png;base64," + base64.b64encode(b"\x89PNG\r\n\x1a\nfake").decode() in text
    assert "figure missing: figures/c.svg" in text and "figure missing: ../x.svg" in text
    assert "<p><figure" not in text
    assert "#stray" in [e[2] for e in page.all("p")] and "```" not in text


ALLOWED_TAGS = {"code", "a", "strong", "em", "p", "h1", "h2", "h3", "h4", "h5", "h6", "ul", "ol",
                "li", "blockquote", "br", "table", "thead", "tbody", "tr", "th", "td", "pre",
                "hr"}


@given(st.lists(st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=40),
                max_size=6))
def test_any_text_is_escaped(lines: list[str]) -> None:
    """Whatever a report line holds, it opens no element of its own (no script, no image, no
    link to fetch): the only tags are the renderer's."""
    tags = {e[0] for e in Page(body_html("\n".join(lines), Path("/nonexistent"))).elements}
    assert tags <= ALLOWED_TAGS


@pytest.mark.skipif(browser() is None, reason="no Chromium here (Debian: apt-get install chromium)")
def test_chromium_shows_every_figure_of_the_report(tmp_path: Path, make_result) -> None:
    """The page as a browser renders it, offline: tall enough for the figures, and drawn (not
    a blank page). The screenshot is left in tmp_path for whoever wants to look."""
    pytest.importorskip("matplotlib")
    from PIL import Image

    from probe.bench.report import write_report
    from tests.bench.figure_report import synthetic_bench
    from tests.bench.test_bench_report import plan
    out = tmp_path / "bench"
    report = synthetic_bench(out, plan.__wrapped__(), make_result)
    write_report(out, report)
    shot = screenshot(out / "report.html", tmp_path / "shot.png", size="1200x3000")
    image = Image.open(shot).convert("L")
    assert image.size == (1200, 3000)
    # the first chart (E1's timeline) lies in the top 3000 px: lines and text, not blank
    dark = sum(image.histogram()[:128])
    assert dark > 0.01 * image.size[0] * image.size[1]
