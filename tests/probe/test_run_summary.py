"""replay's summary table uses stats.py's figures; its progress is a throttled counter on a
terminal and one line per request when piped."""

from __future__ import annotations

import io

from hypothesis import given, settings
from hypothesis import strategies as st

from probe.analysis.stats import summarize, throughput_rps
from probe.common.units import fmt_ms, fmt_rate
from probe.contract.records import RequestRecord
from probe.engine.process.replay_progress import ReplayProgress
from probe.session_store.run_summary import run_summary


def record(seq: int, latency_ms: float, error: str | None = None) -> RequestRecord:
    return RequestRecord(
        id=f"r{seq}", seq=seq, config_id="c1", input_tokens=10, padded_tokens=16,
        output_tokens=0 if error else 4, arrival_s=seq * 0.1, start_s=seq * 0.1,
        first_token_s=None if error else seq * 0.1 + 0.01, end_s=seq * 0.1 + latency_ms / 1e3,
        queue_ms=0.0, compile_stall_ms=0.0, encoder_ms=1.0, decoder_ms=2.0,
        ttft_ms=None if error else latency_ms / 2, tpot_ms=None if error else latency_ms / 8,
        latency_ms=latency_ms, kv_cache_bytes=0, kv_cache_used_bytes=0,
        kv_self_attention_bytes=0, kv_cross_attention_bytes=0, error=error)


@settings(max_examples=30, deadline=None)
@given(latencies=st.lists(st.floats(0.5, 5e4), min_size=1, max_size=40),
       failed=st.integers(0, 3))
def test_the_summary_shows_the_figures_stats_computes(latencies, failed):
    records = [record(i, ms) for i, ms in enumerate(latencies)]
    records += [record(len(latencies) + i, 1.0, "boom") for i in range(failed)]
    text = run_summary(records)
    latency = summarize(latencies)
    row = next(line for line in text.splitlines() if line.startswith("latency"))
    assert row.split()[1:] == " ".join(
        fmt_ms(v) for v in (latency.p50, latency.p95, latency.p99, latency.max)).split()
    assert fmt_rate(throughput_rps(records), "req/s") in text
    assert text.splitlines()[-1].endswith(f"served, {failed} failed")


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_on_a_terminal_the_counter_is_throttled_and_ends_its_line():
    now = [0.0]
    stream = Terminal()
    progress = ReplayProgress(10, stream, clock=lambda: now[0], interval_s=0.5)
    for seq in range(10):
        now[0] = seq * 0.1
        progress([record(seq, 5.0, "x" if seq == 3 else None)])
    progress.close()
    shown = stream.getvalue()
    assert shown.count("\r") == 3                        # t=0, 0.5, and the last at close
    assert shown.endswith("\r9/10 served, 1 failed\n")
    assert "r0" not in shown                             # no per-request lines


def test_piped_it_is_one_labelled_line_per_request_with_the_served_count():
    """Issue 38: the README promises `N/M served`; piped, the lines had none, and a bare
    latency column."""
    stream = io.StringIO()
    progress = ReplayProgress(3, stream)
    progress([record(0, 5.0), record(1, 6.0, "boom")])
    progress.close()
    lines = stream.getvalue().splitlines()
    assert len(lines) == 2 and "\r" not in stream.getvalue()
    assert lines[0] == ("[1/3 served] r0 config=c1 in=10 out=4 latency=5.0 ms "
                        "compile_wait=0.0 ms (own service 0.0 ms)")
    assert lines[1] == "[1/3 served, 1 failed] r1 config=c1 in=10 out=0 failed: boom"


def test_a_request_queued_behind_a_compile_prints_its_compile_wait():
    """Issue 38: `stall= 0.0 ms` for a request the doctor put at 90% compile: its own service
    ran no compile, but it waited in the queue behind one. The line prints the doctor's figure
    (compile_wait_ms) and labels the record's own-service stall."""
    from dataclasses import replace

    from probe.analysis.attribution import attribute
    from probe.analysis.compile_wait import compile_wait_ms
    from probe.contract.records import CompileEvent
    queued = replace(record(0, 1000.0), start_s=0.9, first_token_s=0.91, end_s=1.0,
                     queue_ms=900.0)
    event = CompileEvent("0/0", "compile", "decode_step", 0.0, 0.9, None, "other", "c1")
    stream = io.StringIO()
    ReplayProgress(1, stream, events=lambda: [event])([queued])
    assert "compile_wait=900.0 ms (own service 0.0 ms)" in stream.getvalue()
    doctor = attribute([queued], [event])
    assert doctor.cause("compile").ms == compile_wait_ms(queued, [event]) == 900.0


def test_fallbacks_are_said_as_they_happen_and_in_the_summary_whole():
    """Issue 38: the replay never said dynamo hit its recompile limit (only the doctor did, cut:
    "Hard failure due to full"), nor a calibration stopped at its floor."""
    from probe.analysis.fallbacks import CALIBRATION_FLOOR, degraded_event, fallback_lines
    from probe.contract.records import CompileEvent
    whole = ("FailOnRecompileLimitHit: Hard failure due to fullgraph=True: recompile_limit "
             "reached with fullgraph=True. Excessive recompilations can degrade performance")
    limit = CompileEvent("2/8", "limit", "decode_step", 12.0, None, whole, "r9", "c3")
    floor = degraded_event(1.0, CALIBRATION_FLOOR, "stopped at its ×0.125 floor: 266%", "c1")
    events = [floor]
    stream = io.StringIO()
    progress = ReplayProgress(3, stream, events=lambda: list(events))
    progress([record(0, 5.0)])
    events.append(limit)
    progress([record(1, 5.0)])
    progress([record(2, 5.0)])
    said = stream.getvalue()
    assert said.count("fallback: ") == 2 and whole in said and "×0.125 floor: 266%" in said
    summary = "\n".join(fallback_lines(events))
    assert summary.startswith("fallbacks (2):") and whole in summary
    assert "recompile limit (the rest runs eager) · c3 · decode_step" in summary


def test_the_doctor_quotes_a_fallback_whole():
    from probe.analysis.findings import recompile_limit
    from probe.contract.records import CompileEvent
    whole = "FailOnRecompileLimitHit: Hard failure due to fullgraph=True " + "x" * 120
    found = recompile_limit([CompileEvent("2/8", "limit", "decode_step", 12.0, None, whole,
                                          "r9", "c3")])
    assert found is not None and whole in found.evidence
