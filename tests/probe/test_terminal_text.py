"""Strings from files never reach the terminal raw: `terminal_text` escapes control characters
and ESC sequences, and `snapshot show`, `snapshot compare`, `trace stats`, the error lines and
the `--load` view run every file string through it (the Pilot test is in tests/tui)."""

from __future__ import annotations

import dataclasses
import json
import re
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from infertop.cli import main
from probe.common.terminal_stream import escaped
from probe.common.terminal_text import terminal_text
from tests.probe.saved_sessions import saved
from tests.probe.test_snapshot_reading import valid_document
from tui.launch import saved_view

# Written out here, not imported: what a terminal acts on (C0 but newline, DEL, C1, bidi).
RAW = re.compile("[\x00-\x09\x0b-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]")
HOSTILE_PARTS = ["\x1b]0;pwned\x07", "\x1b[2J", "\x1b[31m", "\x9b2J", "\x9d0;t\x9c", "\r",
                 "\x08", "\x00", "\u202e", "[bold]b[/]", "[/]", "\n", "é中"]
hostile = st.lists(st.sampled_from(HOSTILE_PARTS) | st.characters(
    max_codepoint=0x2100, exclude_categories=("Cs",)), max_size=12).map("".join)
FUZZ = settings(max_examples=40, deadline=None,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])


@given(st.text())
def test_no_control_character_survives_and_printable_text_is_kept(text: str) -> None:
    safe = terminal_text(text)
    assert not RAW.search(safe) and "\n" not in safe
    assert terminal_text(safe) == safe                      # idempotent: guards may stack
    if text.isprintable():
        assert safe == text


def test_escapes_are_visible_and_newlines_kept_only_when_asked() -> None:
    assert terminal_text("a\x1b]0;x\x07b") == "a\\x1b]0;x\\x07b"
    assert terminal_text("\x9b\u202e") == "\\x9b\\u202e"
    assert terminal_text("l1\nl2", keep_newlines=True) == "l1\nl2"
    assert terminal_text("l1\nl2") == "l1\\x0al2"
    assert terminal_text("[bold]é 中[/]") == "[bold]é 中[/]"  # markup is the dashboard's matter


def hostile_document(text: str) -> dict[str, Any]:
    """A valid session with `text` in every string a printer or a panel shows."""
    document = valid_document()
    document["model"]["name"] = f"m{text}"
    document["model"]["dtype"] = text
    document["trace"]["name"] = f"t{text}"
    document["environment"].update(device=text, device_name=text, torch=text)
    document["configs"]["c1"]["notes"] = [text]
    for record in document["requests"]:
        record["error"] = f"E{text}"
        record["id"] = f"{record['id']}{text}"
    for section, key in (("graph_breaks", "reason"), ("graph_breaks", "location"),
                         ("notices", "text"), ("compile_events", "reason"),
                         ("compile_events", "function")):
        for entry in document[section]:
            entry[key] = text
    return document


def _strings(value: Any):
    """Every string inside a value: dataclasses, mappings, sequences."""
    if isinstance(value, str):
        yield value
    elif dataclasses.is_dataclass(value) and not isinstance(value, type):
        for field in dataclasses.fields(value):
            yield from _strings(getattr(value, field.name))
    elif isinstance(value, dict) or hasattr(value, "items"):
        for key, item in value.items():
            yield from _strings(key)
            yield from _strings(item)
    elif isinstance(value, (list, tuple)):
        for item in value:
            yield from _strings(item)


@FUZZ
@given(text=hostile)
def test_show_and_compare_print_nothing_raw(tmp_path: Path, capsys, text: str) -> None:
    path = tmp_path / "hostile.json"
    path.write_text(json.dumps(hostile_document(text)))
    assert main(["snapshot", "show", str(path)]) == 0
    assert main(["snapshot", "compare", str(path), str(path)]) == 0
    out = capsys.readouterr()
    assert not RAW.search(out.out) and not RAW.search(out.err)
    assert "mm" not in out.out and "model m" in out.out      # the name is there, escaped


@FUZZ
@given(text=hostile)
def test_the_loaded_view_holds_no_raw_string(tmp_path: Path, text: str) -> None:
    path = tmp_path / "hostile.json"
    path.write_text(json.dumps(hostile_document(text)))
    view = saved_view(path)
    assert view.model == terminal_text(f"m{text}")
    assert not any(RAW.search(s) or "\n" in s for s in _strings(view))


@FUZZ
@given(text=hostile)
def test_an_error_line_about_a_hostile_file_is_one_safe_line(tmp_path: Path, capsys,
                                                             text: str) -> None:
    document = hostile_document(text)
    document["requests"][0]["seq"] = text                  # wrong type: quoted in the error
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(document))
    assert main(["snapshot", "show", str(path)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and not RAW.search(err)


def test_trace_stats_of_a_hostile_trace_prints_nothing_raw(tmp_path: Path, capsys) -> None:
    path = tmp_path / "t.jsonl"
    rows = [{"timestamp": i, "input_tokens": 10, "output_tokens": 5, "bad\x1b]0;x\x07": 1}
            for i in range(3)]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows) + "\x1b[2J{\n")
    main(["trace", "stats", str(path)])
    out = capsys.readouterr()
    assert not RAW.search(out.out) and not RAW.search(out.err)


# -- nothing raw: hostile names and reasons (issue 37) -----------------------------------------

HOSTILE = "\x1b]0;owned\x07\x1b[2J\x9b\u202e"


def raw(text: str) -> bool:
    return any(c in text for c in "\x1b\x07\x9b\u202e")


def test_doctor_escapes_a_failure_reason_and_json_escapes_c1_and_bidi(tmp_path, capsys):
    path = saved(tmp_path, name=f"s{HOSTILE}.json", error=f"boom {HOSTILE}", output_tokens=0,
                 ttft_ms=None, tpot_ms=None, first_token_s=None)
    assert main(["doctor", str(path)]) == 0
    assert not raw(capsys.readouterr().out)
    assert main(["doctor", "--json", str(path)]) == 0
    out = capsys.readouterr().out
    assert not raw(out) and "\\u009b" in out and "\\u202e" in out
    assert any(HOSTILE in text for text in strings(json.loads(out)))   # the same string back


def strings(value) -> list[str]:
    if isinstance(value, dict):
        return [t for v in value.values() for t in strings(v)]
    if isinstance(value, list):
        return [t for v in value for t in strings(v)]
    return [value] if isinstance(value, str) else []


@pytest.mark.parametrize("name", ["a\x1b[2Jb.jsonl", "a\nb.jsonl"])
def test_trace_generate_prints_an_output_name_escaped_on_one_line(tmp_path, capsys, name):
    assert main(["trace", "generate", "--profile", "chat", "-n", "3",
                 "-o", str(tmp_path / name)]) == 0
    out = capsys.readouterr().out
    wrote = [line for line in out.splitlines() if line.startswith("wrote ")]
    assert len(wrote) == 1 and not raw(out) and "\\x" in wrote[0]


def test_every_line_a_command_prints_passes_the_terminal_text_function():
    assert escaped(f"ok\t{HOSTILE}\r\x1b[2Kdone\n") == \
        "ok\t\\x1b]0;owned\\x07\\x1b[2J\\x9b\\u202e\r\x1b[2Kdone\n"


def test_matplotlib_warnings_go_to_the_log_escaped(tmp_path, caplog, capsys):
    pytest.importorskip("matplotlib")
    import warnings

    from probe.report_charts.canvas import warnings_to_log
    with warnings_to_log("chart x"):
        warnings.warn(f"Glyph 27 ({HOSTILE}) missing from font", UserWarning, stacklevel=1)
    assert not raw(capsys.readouterr().err)
    assert any("Glyph 27" in r.getMessage() and not raw(r.getMessage()) for r in caplog.records)
