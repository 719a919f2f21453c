"""Layout pictures (pytest-textual-snapshot's snapshots) at 120×40 and 80×24, from the synthetic session:
the main states, those that stress the text (queue growing, a compile running, failed
requests, continuous batching with an option the engine changed), and those that show what
the engine measures besides latency (the paged KV pool; drift, roofline and break-even). Update with
`pytest tests/tui/test_layout.py --snapshot-update` after an intended change, and look at the
report before committing the new SVGs."""

from __future__ import annotations

import pytest

from tests.fake_engine import FakeEngine

SIZES = {"wide": (120, 40), "compact": (80, 24)}


@pytest.mark.parametrize("size", SIZES)
@pytest.mark.parametrize("at", ["baseline", "compiling", "bucketing", "overloaded", "failing",
                                "continuous", "paged", "measured"])
def test_layout(snap_compare, make_app, at, size):
    assert snap_compare(make_app(FakeEngine(), at=at), terminal_size=SIZES[size])


def test_layout_after_pressing_bucketing(snap_compare, make_app):
    assert snap_compare(make_app(FakeEngine(), at="compiled"), press=["b"],
                        terminal_size=SIZES["wide"])


def test_layout_help(snap_compare, make_app):
    assert snap_compare(make_app(FakeEngine()), press=["question_mark"],
                        terminal_size=SIZES["wide"])
