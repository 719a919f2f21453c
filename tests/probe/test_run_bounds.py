"""A replay that could not finish is refused before the model loads: the trace's arrivals
over --speed may span at most MAX_REPLAY_S (the flags' own ranges are in test_cli_validation)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from infertop.cli import main
from probe.common.argtypes import MAX_REPLAY_S, check_replay_span
from probe.common.errors import BadInput, TraceError


def test_the_span_is_the_arrivals_over_the_speed() -> None:
    check_replay_span(0.0, MAX_REPLAY_S * 1000.0, 1.0, "t")
    with pytest.raises(TraceError, match="span 32 days at --speed 1; the longest replay is 31"):
        check_replay_span(0.0, (MAX_REPLAY_S + 86_400) * 1000.0, 1.0, "t")
    check_replay_span(0.0, (MAX_REPLAY_S + 86_400) * 1000.0, 2.0, "t")


def test_a_replay_of_a_century_long_trace_is_refused_in_one_line(tmp_path: Path, capsys) -> None:
    trace = tmp_path / "far.jsonl"
    trace.write_text("".join(json.dumps({"timestamp": t, "input_length": 8, "output_length": 4})
                             + "\n" for t in (0, 1e10)))
    out = tmp_path / "o.json"
    code = main(["replay", "--model", "t5-tiny", "--trace", str(trace), "--out", str(out)])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and "the longest replay is 31 days" in err[-1] and not out.exists()
    assert not any("Traceback" in line for line in err)


def test_a_preset_with_outputs_beyond_memory_is_refused(monkeypatch) -> None:
    from probe.checks import checkpoint_check
    from probe.checks.engine_inputs import check_model

    monkeypatch.setattr(checkpoint_check.psutil, "virtual_memory",
                        lambda: type("M", (), {"available": 10 ** 9})())
    check_model("t5-tiny", 1024)
    with pytest.raises(BadInput, match="per request of 131,072 tokens"):
        check_model("t5-small", 131_072)
