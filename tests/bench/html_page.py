"""A report page parsed by the standard library's HTML parser, for tests that check what a
browser would build from it."""

from __future__ import annotations

from html.parser import HTMLParser


class Page(HTMLParser):
    """The parsed page: every element as (tag, attributes, its text), in document order."""

    def __init__(self, text: str) -> None:
        super().__init__()
        self.elements: list[list] = []
        self.open: list[list] = []
        self.feed(text)

    def handle_starttag(self, tag, attrs):
        element = [tag, dict(attrs), ""]
        self.elements.append(element)
        if tag not in ("br", "img", "meta", "hr"):
            self.open.append(element)

    def handle_endtag(self, tag):
        while self.open and self.open.pop()[0] != tag:
            pass

    def handle_data(self, data):
        for element in self.open:
            element[2] += data

    def all(self, tag: str) -> list[list]:
        return [e for e in self.elements if e[0] == tag]
