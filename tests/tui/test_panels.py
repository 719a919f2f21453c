"""Each panel's content from a snapshot (plain functions, no app), and what the two layouts
keep."""

from __future__ import annotations

import io
from dataclasses import replace

from rich.console import Console

from probe.common.units import fmt_s
from probe.contract.device_sample import DeviceSample
from probe.contract.figures import EnergyStats
from probe.contract.records import GraphBreakRecord
from tests.fake_engine import FakeEngine
from tui.widgets.device import device_detail, device_headline, device_title
from tui.widgets.graph_breaks import break_headline, break_reasons
from tui.widgets.kv_cache import kv_detail, kv_headline
from tui.widgets.latency import latency_table, log_ticks
from tui.widgets.recompiles import compile_counts, compile_feed, latest_event, short_reason
from tui.widgets.segments import DRIFT, segment_rows, segments_columns
from tui.widgets.throughput import OVERLOADED, throughput_detail, throughput_headline


def text(renderable, width: int = 100) -> str:
    console = Console(width=width, record=True, color_system=None, file=io.StringIO())
    console.print(renderable)
    return console.export_text()


def test_latency_numbers_show_window_and_segment_percentiles(stages):
    compiled = stages["compiled"]
    shown = text(latency_table(compiled))
    c2 = next(s for s in compiled.segments if s.config_id == "c2")
    assert "window" in shown and "c2" in shown
    assert "2.05 s" in shown                                          # window latency p50
    assert "33.4 s" in shown and round(c2.latency_ms.p50 / 1000, 1) == 33.4
    assert shown.count("12 ms") >= 3                                  # compiled TPOT


def test_log_ticks_span_the_data():
    ticks, labels = log_ticks(150.0, 62_000.0)
    assert ticks == [100.0, 1000.0, 10_000.0, 100_000.0]
    assert labels == ["100 ms", "1.00 s", "10 s", "100 s"]


def test_recompile_feed_newest_first_with_reason_and_waiting_request(stages):
    compiled = stages["compiled"]
    feed = text(compile_feed(compiled.compile_events), width=120).splitlines()
    assert "0/3" in feed[1] and "req-0066" in feed[1] and "input_ids.size(1) 112→23" in feed[1]
    assert "compile" in feed[-1] and "61.8s" in feed[-1]
    assert text(compile_counts(compiled)).startswith("1 compile · 3 recompiles")


def test_every_event_kind_reads(stages):
    base = stages["compiled"].compile_events[0]
    events = (
        replace(base, kind="fallback", compile_id="-", reason="compile failed, serving eager"),
        replace(base, kind="limit", compile_id="-", request_id=None),
        replace(base, kind="cudagraph", compile_id="0/0_1", duration_s=None))
    shown = text(compile_feed(events), width=140)
    assert "fallback" in shown and "serving eager" in shown
    assert "limit" in shown and "prewarm" in shown     # no request waited: a prewarm compile
    assert "cudagraph" in shown and "running" in shown
    view = replace(stages["compiled"], compile_events=stages["compiled"].compile_events + events)
    assert "1 fallback · 1 limit · 1 cudagraph" in text(compile_counts(view))
    assert "last 0/0_1 cudagraph running" in text(latest_event(events))


def test_short_reason_compacts_size_mismatches_only():
    reason = ("0/0: tensor 'input_ids' size mismatch at index 1. expected 64, actual 37; "
              "0/1: ___check_obj_id(L['self'], 1401)")
    assert short_reason(reason) == "input_ids.size(1) 64→37; ___check_obj_id(L['self'], 1401)"
    assert short_reason(None) == ""


def test_graph_breaks_per_config_with_locations(stages):
    bucketing = stages["bucketing"]
    extra = GraphBreakRecord("c1", "Unsupported: call_function", "probe/engine/decode/hf_generate.py:40", 1)
    view = replace(bucketing, graph_breaks=bucketing.graph_breaks + (extra,))
    shown = text(break_reasons(view, width=120))
    # the current config's reasons; the others only counted, newest first (issue 22)
    assert "earlier: c2 12 breaks at 3 sites · c1 1 break" in shown
    assert "Unsupported: call_function" not in shown
    assert "×6 Data-dependent branching" in shown
    assert "transformers/generation/stopping_criteria.py:512" in shown
    assert "c3 compile=default bucketing=on: 12 breaks at 3 sites" in shown
    assert text(break_headline(view)).startswith("12 breaks at 3 sites · 35 graphs in c3")


def test_graph_breaks_of_a_config_without_any_are_not_an_old_configs(stages):
    bucketing = stages["bucketing"]
    view = replace(bucketing, config_id="c4")
    shown = text(break_reasons(view, width=120))
    assert shown.startswith("no graph breaks in c4")
    assert "×6 Data-dependent branching" not in shown and "earlier: c3 12 breaks" in shown


def test_graph_breaks_count_sites_not_log_lines(stages):
    """Dynamo logs one site once per frame it compiles there: 13 breaks may be 6 places."""
    c3 = next(s for s in stages["bucketing"].segments if s.config_id == "c3")
    many = replace(c3, graph_breaks=13, graph_break_sites=6)
    view = replace(stages["bucketing"], segments=(many,))
    assert text(break_headline(view)).startswith("13 breaks at 6 sites · ")
    one = replace(view, segments=(replace(c3, graph_breaks=1, graph_break_sites=1),))
    assert text(break_headline(one)).startswith("1 break at 1 site · ")


def test_device_on_a_cpu_says_whose_cpu_each_figure_is(stages):
    sample = replace(stages["baseline"].device_sample, util_pct=87.0, process_cpu_pct=150.0)
    assert text(device_headline(sample)) == "machine CPU 87% · engine 150% of a core\n"
    assert text(device_headline(sample, width=30)) == "machine 87% · engine 1.5 cores\n"
    detail = text(device_detail(sample))
    assert "engine RSS 1.31 GiB / 15.6 GiB" in detail and "machine free" in detail
    assert "100% = all cores busy" in detail and "power" not in detail
    unknown = replace(sample, process_cpu_pct=None)
    assert text(device_headline(unknown)) == "machine CPU 87% · engine CPU N/A\n"
    assert str(device_title(sample)) == "Device · CPU 2 cores"


def test_device_on_a_gpu_says_na_for_what_nvml_cannot_tell():
    sample = DeviceSample(kind="GPU", name="NVIDIA H200", util_pct=None,
                          mem_used_bytes=12 * 1024 ** 3, mem_total_bytes=139 * 1024 ** 3,
                          mem_free_bytes=127 * 1024 ** 3, power_w=None, temperature_c=61.0,
                          torch_allocated_bytes=8 * 1024 ** 3, torch_reserved_bytes=None)
    assert text(device_headline(sample)).startswith("GPU N/A · mem 12.0 GiB / 139 GiB")
    assert str(device_title(sample)) == "Device · GPU NVIDIA H200"
    shown = text(device_detail(sample))
    assert "engine CPU N/A (host)" in shown
    assert "engine 40% of a core" in text(device_detail(replace(sample, process_cpu_pct=40.0)))
    assert "power N/A · temp 61 °C" in shown
    assert "torch alloc 8.00 GiB · reserved N/A" in shown
    assert text(device_headline(None)).startswith("no device sample")


def test_kv_panel_shows_waste_and_headroom(stages):
    bucketing = stages["bucketing"]
    shown = text(kv_detail(bucketing), width=60)
    c3 = next(s for s in bucketing.segments if s.config_id == "c3")
    assert round(c3.kv_waste_pct) == 22 and "waste 22% of what c3 held, never filled" in shown
    assert f"headroom ≈{bucketing.kv.headroom_requests:,} req" in text(kv_headline(bucketing))
    assert "no request" in text(kv_detail(stages["compiling"]), width=60)
    none = replace(bucketing, kv=replace(bucketing.kv, headroom_requests=None,
                                         free_device_bytes=None))
    assert "headroom —" in text(kv_headline(none))
    assert "free N/A" in text(kv_detail(none), width=60)


def test_kv_panel_names_every_figure(stages):
    """No two figures both called "used" without saying whose: each says held or used, and
    of what (the latest request, the peak, a config's mean request, the per-request p95)."""
    kv = replace(stages["bucketing"].kv, now_bytes=3 * 2 ** 20, now_used_bytes=2 * 2 ** 20,
                 peak_bytes=9 * 2 ** 20, per_request_p95_bytes=4 * 2 ** 20)
    view = replace(stages["bucketing"], kv=kv)
    lines = [line.strip() for line in
             (text(kv_headline(view)) + text(kv_detail(view), width=60)).splitlines()]
    assert lines[0].startswith("peak held 9.00 MiB · headroom ≈")
    assert lines[1] == "latest request held 3.00 MiB · used 2.00 MiB"
    assert lines[2].startswith("self-attention ")
    assert lines[3].startswith("c3 mean request held ") and " · used " in lines[3]
    assert lines[4].startswith("waste ") and lines[4].endswith(" of what c3 held, never filled")
    assert lines[5].startswith("per-request p95 held 4.00 MiB · free ")
    for line in lines:
        if "used" in line:
            assert "held" in line and ("latest request" in line or "mean request" in line)


def test_throughput_says_overload_plainly_and_counts_failures(stages):
    compiling = stages["compiling"]
    # A compile stall grows the queue without the offered load exceeding capacity.
    assert OVERLOADED not in text(throughput_detail(compiling), width=60).replace("\n", " ")
    overloaded = replace(compiling, replay=replace(compiling.replay, overloaded=True))
    assert OVERLOADED == "offered load exceeds capacity — queue growing"
    assert OVERLOADED in text(throughput_detail(overloaded), width=60).replace("\n", " ")
    assert "queue 16" in text(throughput_headline(compiling))
    failing = replace(compiling, replay=replace(compiling.replay, failed=3, overloaded=False))
    shown = text(throughput_detail(failing), width=60)
    assert "failed 3" in shown and OVERLOADED not in shown


def test_segment_rows_pair_previous_and_current(stages):
    rows = segment_rows(stages["bucketing"])
    assert [str(r["config"]) for r in rows] == ["prev c2", "now c3"]
    assert rows[1]["recomp"] == "2" and rows[0]["recomp"] == "3"
    assert [str(r["config"]) for r in segment_rows(stages["baseline"])] == ["now c1"]


def measured(view, joules: dict[str, float]):
    """The view with these configs' J/token, as energy_stats would give them."""
    return replace(view, segments=tuple(
        replace(s, energy=EnergyStats(source="RAPL package-0", j_per_token=joules[s.config_id]))
        if s.config_id in joules else s for s in view.segments))


def test_segments_show_j_per_token_with_now_over_prev_where_measured(stages):
    view = measured(stages["bucketing"], {"c2": 0.5, "c3": 0.4})
    assert segments_columns(view, 200)[7:10] == ("tok/s", "J/token", DRIFT)
    assert "KV peak" in segments_columns(view, 200)
    assert not {"KV peak", "graphs"} & set(segments_columns(view, 120))   # J/token's room
    assert "KV peak" in segments_columns(stages["bucketing"], 120)
    rows = segment_rows(view)
    assert [r["J/token"] for r in rows] == ["0.5", "0.4 0.80×"]
    # a segment without a counter: no ratio; no segment measured: no column at all
    rows = segment_rows(measured(stages["bucketing"], {"c3": 0.4}))
    assert [r["J/token"] for r in rows] == ["—", "0.4"]
    assert "J/token" not in segments_columns(stages["bucketing"], 200)
    assert "J/token" not in segments_columns(view, 80)


async def test_the_panel_draws_the_column_only_once_measured(make_app, stages, read_screen):
    view = measured(stages["compiled"], {"c1": 0.0123, "c2": 0.00456})
    app = make_app(FakeEngine(), at="compiled")
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        assert "J/token" not in read_screen(app)
        app.view = view
        await pilot.pause()
        shown = read_screen(app)
    assert "J/token" in shown and "0.00456 0.37×" in shown
    header = next(line for line in shown.splitlines() if "drift tok·req" in line)
    assert header.rstrip(" │").endswith("breaks")     # the last column whole: nothing cut


async def test_the_wide_layout_shows_every_panel_in_full(make_app, read_screen):
    app = make_app(FakeEngine(), at="compiled")
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        shown = read_screen(app)
    for title in ("Latency", "Throughput & queue", "KV cache", "Device", "Recompilations",
                  "Graph breaks", "Segments"):
        assert f"─ {title}" in shown, title
    assert "config change" in shown and "session time (s)" in shown    # the plot
    assert "guard failure / reason" in shown                          # the feed


async def test_the_compact_layout_keeps_status_numbers_and_segments(make_app, read_screen):
    app = make_app(FakeEngine(), at="compiled")
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        shown = read_screen(app)
    assert "c2 compile=default" in shown.splitlines()[0]               # status bar
    assert "latency  window" in shown and "TPOT" in shown              # numbers
    assert "prev c1" in shown and "now c2" in shown                    # segments
    assert "1 compile · 3 recompiles" in shown and "last 0/3 recompile" in shown
    assert "session time (s)" not in shown                             # no plot
    assert "guard failure / reason" not in shown                       # no feed detail


def test_batching_shows_occupancy_padding_and_slots(stages):
    from probe.analysis.live_figures import batch_status
    baseline = stages["baseline"]
    window = tuple(replace(r, batch_size=4.0, padded_tokens=r.input_tokens * 2)
                   for r in baseline.recent[-10:])
    batch = batch_status("continuous", 8, window)
    assert batch.occupancy_mean == 4.0 and batch.padding_waste == 0.5
    shown = replace(baseline, batch=batch, options=replace(baseline.options, batching="continuous"))
    detail = text(throughput_detail(shown), width=60)
    assert "batch continuous: 4.0/8 · pad 50" in detail
    assert "▄" * 10 in detail                      # half-full, ten requests
    assert "slots" in text(kv_headline(shown))
    assert "per-slot p95 held" in text(kv_detail(shown), width=60)
    assert "batch" not in text(throughput_detail(baseline), width=60)


def test_the_feed_shows_each_compiles_guard_check_when_the_engine_measured_it(stages):
    events = stages["compiled"].compile_events
    assert "guards" not in text(compile_feed(events), width=140)   # a session saved without it
    measured = (replace(events[0], guard_us=502.4), replace(events[1], guard_us=1234.0),
                replace(events[2], guard_us=None))
    feed = text(compile_feed(measured), width=140).splitlines()
    assert feed[0].split()[:5] == ["at", "kind", "id", "took", "guards"]
    assert "—" not in feed[1] and "1.2ms" in feed[2] and "502µs" in feed[3]


def test_the_compile_seconds_are_split_as_dynamo_timed_them_when_the_engine_did(stages):
    from probe.contract.figures import CompilePhases
    compiled = stages["compiled"]
    total = sum(s.compile_s for s in compiled.segments)
    plain = text(compile_counts(compiled), width=140)
    assert f"({fmt_s(total)})" in plain and "tracing" not in plain   # saved without the split
    phases = CompilePhases(tracing_s=30.0, aot_s=2.0, inductor_s=8.0)
    segments = tuple(replace(s, compile_phases=phases if s.config_id == "c2" else None)
                     for s in compiled.segments)
    view = replace(compiled, segments=segments)
    # the parts leave out what dynamo did not time: the line names the rest, and sums
    assert (f"({fmt_s(total)}: tracing 30.0 s · aot 2.00 s · inductor 8.00 s · other "
            f"{fmt_s(total - 40.0)})") in text(compile_counts(view, width=200), width=200)
    assert f"({fmt_s(total)}, {100 * (total - 40.0) / total:.0f}% other)" in text(
        compile_counts(view, width=60), width=140)
    assert f"({fmt_s(total)})" in text(compile_counts(view, width=40), width=140)
    cached = CompilePhases(tracing_s=5.2, aot_s=0.0, inductor_s=0.0, cache_load_s=7.1)
    view = replace(compiled, segments=tuple(
        replace(s, compile_phases=cached if s.config_id == "c2" else None)
        for s in compiled.segments))
    shown = text(compile_counts(view, width=200), width=200)    # the parts that took time
    assert (f"({fmt_s(total)}: tracing 5.20 s · cache load 7.10 s · other "
            f"{fmt_s(total - 12.3)})") in shown


def test_rates_decay_and_say_so_when_nothing_is_served(stages):
    """Issue 38: "0.15 req/s served" and "9.45 tok/s" stayed frozen for 125 s while nothing was
    served (a compile ran)."""
    from probe.analysis.live_figures import window_stats
    from tui.widgets.throughput import throughput_headline
    view = stages["compiling"]
    records = tuple(r for r in view.recent if r.ok)[-30:]
    last = max(r.end_s for r in records)
    fresh = window_stats(records, now_s=last + 1.0)
    stale = window_stats(records, now_s=last + 120.0)
    assert fresh.idle_s is None and abs(stale.idle_s - 120.0) < 1e-6
    assert stale.throughput_rps < fresh.throughput_rps and stale.tokens_per_s < fresh.tokens_per_s
    shown = throughput_headline(replace(view, window=stale)).plain
    assert "nothing served for 2 min (compiling)" in shown
    assert f"{stale.throughput_rps:.2f}" in shown or "req/s" in shown


def test_drift_that_waits_for_its_reference_says_so(stages):
    """The engine decodes a drift reference only when idle: under a queue that never empties
    the sampled requests wait, and the drift cell and subtitle say that, not a bare "—"."""
    from probe.analysis.drift import drift_waiting
    from tests.probe.test_journal import record
    from tui.widgets.segments import segments_subtitle

    served = [replace(record(i, "c1"), tokens=(1, 2, 3) if i % 8 == 0 else None)
              for i in range(34)]
    assert drift_waiting(served, {}) == 5 and drift_waiting(served, {"r0": (1, 2, 3)}) == 4
    view = stages["baseline"]
    view = replace(view, segments=tuple(replace(s, drift=None, drift_waiting=5)
                                        for s in view.segments))
    (row,) = segment_rows(view)
    assert row[DRIFT] == "5 sampled, wait"
    assert "5 sampled requests wait for their fp32 reference" in segments_subtitle(view, 200)
    assert "wait" in segments_subtitle(view, 60)
