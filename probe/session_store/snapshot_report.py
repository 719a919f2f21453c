"""`infertop snapshot show FILE` and `infertop snapshot compare A B`, as plain text.

Figures are recomputed from the snapshot's raw records by probe/analysis/stats.py (the one place they
are computed), so a snapshot written by an older infertop reads the same as a new one.
"""

from __future__ import annotations

import functools
import os
import re
from collections import Counter
from dataclasses import fields
from typing import Callable

from probe.analysis.config_changes import served_before
from probe.analysis.diagnosis import context_from_document
from probe.analysis.session_diagnosis import SessionDiagnosis, diagnose_session
from probe.analysis.side_compile_cost import side_compiles
from probe.analysis.stats import phases_within, session_segments
from probe.analysis.steady_state import cold_chain
from probe.analysis.tpot_figure import config_tpot
from probe.common.errors import BadInput
from probe.common.terminal_text import terminal_text
from probe.common.units import NO_DATA, fmt_bytes, fmt_fraction, fmt_ms, fmt_num, fmt_ratio, fmt_s
from probe.contract.figures import SegmentStats
from probe.contract.options import OptConfig
from probe.contract.records import LedgerEntry
from probe.contract.session import SessionData
from probe.session_store.doctor_compare import cause_moves
from probe.session_store.ledger_table import ledger_text
from probe.session_store.peer_imports.imported_text import (
    imported_header,
    imported_label,
    imported_lines,
)
from probe.session_store.snapshot import read_document, saved_live_parts, saved_session
from probe.session_store.tables import text_table

# (name, how to read it from a segment, how to show it, lower is better?)
METRICS: tuple[tuple[str, Callable[[SegmentStats], float | None], Callable, bool | None], ...] = (
    ("latency p50", lambda s: s.latency_ms.p50, fmt_ms, True),
    ("latency p95", lambda s: s.latency_ms.p95, fmt_ms, True),
    ("latency p99", lambda s: s.latency_ms.p99, fmt_ms, True),
    ("warm latency p50", lambda s: s.warm.latency_ms.p50 if s.warm else None, fmt_ms, True),
    ("warm latency p95", lambda s: s.warm.latency_ms.p95 if s.warm else None, fmt_ms, True),
    ("ttft p50", lambda s: s.ttft_ms.p50, fmt_ms, True),
    ("tpot p50", lambda s: s.tpot_ms.p50, fmt_ms, True),
    ("throughput (req/s)", lambda s: s.throughput_rps, lambda v: fmt_num(v, 2), False),
    ("tokens/s", lambda s: s.tokens_per_s, lambda v: fmt_num(v, 1), False),
    ("goodput (req/s)", lambda s: s.goodput_rps, lambda v: fmt_num(v, 2), False),
    ("goodput tokens/s", lambda s: s.goodput_tokens_per_s, lambda v: fmt_num(v, 1), False),
    ("SLO attainment", lambda s: s.slo_attainment, fmt_fraction, False),
    ("requests", lambda s: s.requests, lambda v: fmt_num(v, 0), None),
    ("failed", lambda s: s.failed, lambda v: fmt_num(v, 0), True),
    ("compiles", lambda s: s.compiles, lambda v: fmt_num(v, 0), True),
    ("recompiles", lambda s: s.recompiles, lambda v: fmt_num(v, 0), True),
    ("compile time", lambda s: s.compile_s, fmt_s, True),
    *((f"  of it {name}", lambda s, name=name: _split(s) and _split(s).parts()[name],
       fmt_s, True) for name in ("tracing", "aot", "inductor", "cache load")),
    ("graph breaks", lambda s: s.graph_breaks, lambda v: fmt_num(v, 0), True),
    ("graphs", lambda s: s.graphs, lambda v: fmt_num(v, 0), True),
    ("KV cache peak", lambda s: s.kv_cache_peak_bytes, fmt_bytes, True),
    ("padding waste", lambda s: s.padding_waste, fmt_fraction, True),
    # energy (probe/analysis/energy.py): per token the lower the better; power is neither
    ("J/token", lambda s: _energy(s, "j_per_token"), lambda v: _sig(v, "J"), True),
    ("J/good token", lambda s: _energy(s, "j_per_good_token"), lambda v: _sig(v, "J"), True),
    ("avg power", lambda s: _energy(s, "avg_power_w"), lambda v: _sig(v, "W"), None),
    ("idle power", lambda s: _energy(s, "idle_power_w"), lambda v: _sig(v, "W"), None),
)


def _energy(segment: SegmentStats, name: str) -> float | None:
    return None if segment.energy is None else getattr(segment.energy, name)


def _sig(value: float | None, unit: str) -> str:
    """Three significant digits: a J/token spans 1e-4 (a GPU) to 10 (a busy CPU)."""
    return NO_DATA if value is None else f"{value:.3g} {unit}"


def energy_unmeasured(sa: SegmentStats, sb: SegmentStats) -> list[str]:
    """Why a side of a comparison has no energy rows: said, never left blank."""
    reasons = {side: s.energy.text() for side, s in (("A", sa), ("B", sb))
               if s.energy is not None and s.energy.unavailable is not None}
    if len(reasons) == 2 and reasons["A"] == reasons["B"]:
        return [f"A and B {reasons['A']}"]
    return [f"{side} {text}" for side, text in reasons.items()]


def _split(segment: SegmentStats):
    """The segment's compile split, within its compile seconds (stats.phases_within)."""
    return phases_within(segment.compile_phases, segment.compile_s)


def _load(path: str) -> tuple[dict, SessionData]:
    document = read_document(path)
    return document, saved_session(document, source=f"snapshot {path}", for_terminal=True)


def _field(document: dict, section: str, key: str) -> object:
    """A header value: a JSON scalar as saved (a string made terminal-safe), anything else "?"
    (read_document checked that the sections are objects; what they hold is free-form)."""
    value = document.get(section, {}).get(key, "?")
    if isinstance(value, str):
        return terminal_text(value)
    return value if isinstance(value, (int, float, bool)) or value is None else "?"


def _label(data: SessionData, config_id: str, document: dict | None = None) -> str:
    imported = None if document is None else imported_label(document, config_id)
    if imported is not None:
        return imported
    entry = data.configs.get(config_id)
    return entry.options.label() if entry else config_id


def served_precisions(data: SessionData) -> str:
    """What the session's requests were served in, most first: "fp32 180 req · bf16 20 req"
    (the model's dtype when it was saved says only what the last config loaded). Served
    requests only: a failed or lost one was served in nothing ("· 22 failed" says them)."""
    counts = Counter(entry.options.precision if entry else "?" for entry in
                     (data.configs.get(r.config_id) for r in data.records if r.ok))
    failed = sum(not r.ok for r in data.records)
    parts = [f"{name} {count:,} req" for name, count in counts.most_common()]
    return " · ".join(parts + ([f"{failed:,} failed"] if failed else []))


def _header(path: str, document: dict, data: SessionData | None = None) -> list[str]:
    model = functools.partial(_field, document, "model")
    env = functools.partial(_field, document, "environment")
    parameters = model("parameters")
    # an imported session was served by another tool's server: infertop's precision is not it
    served = (served_precisions(data) if data is not None and data.records
              and not imported_header(document) else "")
    precision = f"served {served}" if served else f"{model('dtype')}"
    lines = [terminal_text(path),
             f"  model {model('name')} ({precision}, {parameters:,} parameters)"
             if isinstance(parameters, int) else f"  model {model('name')} ({precision})",
             f"  trace {_field(document, 'trace', 'name')}, device {env('device')} "
             f"({env('device_name')}), torch {env('torch')}"]
    return lines + imported_header(document)


def slo_line(data: SessionData) -> list[str]:
    return [f"  SLO {data.slo.text()} (goodput counts requests within every bound)"] \
        if data.slo else []


def show(path: str) -> str:
    """A saved session's segments (one per config, in order of use) as a table."""
    document, data = _load(path)
    segments = session_segments(data)
    lines = _header(path, document, data) + slo_line(data)
    if not segments:
        return "\n".join(lines + ["", "no configs were served in this session"]
                         + imported_lines(document))
    energy = any(s.energy is not None and s.energy.j_per_token is not None for s in segments)
    # beside throughput: J/token where a counter was read, the SLO's figures where it has one
    columns = ["config", "requests", "failed", "p50", "p95", "p99", "warm", "warm p50",
               "warm p95", "ttft p50", "tpot p50", "warm tpot", "tokens/s",
               *(["J/token"] if energy else []),
               *(["goodput", "good tok/s", "attained"] if data.slo else []),
               "compiles", "recompiles", "compile", "breaks", "graphs", "KV peak", "padding"]
    rows = []
    chain = cold_chain(data.records, data.events)
    for s in segments:
        warm = s.warm.latency_ms if s.warm else None
        j = None if s.energy is None else s.energy.j_per_token
        rows.append([s.config_id, s.requests, s.failed, fmt_ms(s.latency_ms.p50),
                     fmt_ms(s.latency_ms.p95), fmt_ms(s.latency_ms.p99),
                     s.warm.requests if s.warm else NO_DATA, fmt_ms(warm.p50 if warm else None),
                     fmt_ms(warm.p95 if warm else None), fmt_ms(s.ttft_ms.p50),
                     fmt_ms(s.tpot_ms.p50),
                     fmt_ms(config_tpot(data.records, data.events, s.config_id, None,
                                        chain).tpot_ms),
                     fmt_num(s.tokens_per_s, 1),
                     *([NO_DATA if j is None else f"{j:.3g}"] if energy else []),
                     *([fmt_num(s.goodput_rps, 2), fmt_num(s.goodput_tokens_per_s, 1),
                        fmt_fraction(s.slo_attainment)] if data.slo else []),
                     s.compiles, s.recompiles, fmt_s(s.compile_s), s.graph_breaks, s.graphs,
                     fmt_bytes(s.kv_cache_peak_bytes), fmt_fraction(s.padding_waste)])
    lines += ["", text_table(columns, rows),
              "  warm: requests that waited on no compile, directly or queued behind one "
              "(docs/steady-state.md); warm tpot: the TPOT p50 the latency panel and the "
              "doctor print (tpot_figure)", ""]
    for s in segments:
        entry = data.configs.get(s.config_id)
        notes = f"  ({'; '.join(entry.notes)})" if entry and entry.notes else ""
        lines.append(f"  {s.config_id}: {_label(data, s.config_id, document)}{notes}")
        lines += [f"      {line}" for line in visit_lines(data, s.config_id)]
        phases = phases_within(s.compile_phases, s.compile_s)
        if phases is not None and phases.total_s:
            lines.append(f"      compile split: {phases.split_text(s.compile_s)}")
        if s.energy is not None:
            lines.append(f"      {s.energy.text()}")
    if data.breaks:
        lines += ["", "graph breaks:"]
        for b in sorted(data.breaks, key=lambda b: -b.count)[:10]:
            lines.append(f"  {b.config_id} ×{b.count} {b.location}: {b.reason[:100]}")
    lines += ledger_lines(data.compile_ledger)
    lines += notice_lines(data)
    return "\n".join(lines + imported_lines(document))


def visit_lines(data: SessionData, config_id: str) -> list[str]:
    """A return to options served before (a segment of its own), and compiles a side engine
    ran beside the serving config (a warm switch: charged here, with what they cost)."""
    lines = []
    first = served_before(data.configs, config_id)
    if first is not None:
        lines.append(f"served again: {first}'s options, a segment of its own ({first}'s "
                     f"figures are those of its own visit)")
    side = side_compiles(data, config_id)
    if side is not None:
        lines.append(f"compiled beside the serving config (warm switch): {side.text()}")
    return lines


NOTICES_SHOWN = 10


def notice_lines(data: SessionData) -> list[str]:
    """The session's warnings and errors (an interrupted replay, a fallback, a fault), the
    latest `NOTICES_SHOWN`; its info notices are the dashboard's feed."""
    said = [n for n in data.notices if n.level in ("warning", "error")]
    if not said:
        return []
    more = len(said) - NOTICES_SHOWN
    return (["", "notices:"] + [f"  {n.level}: {n.text}" for n in said[-NOTICES_SHOWN:]]
            + ([f"  (and {more} earlier)"] if more > 0 else []))


def ledger_lines(entries: tuple[LedgerEntry, ...]) -> list[str]:
    """The compile ledger's table (probe/session_store/ledger_table.py), under its title."""
    return ["", "compile ledger:", ledger_text(entries)] if entries else []


def _pairs(a: SessionData, b: SessionData):
    """Segments of A and B that served the same options; a single segment each is a pair
    whatever its options (that is the usual before/after comparison)."""
    sa, sb = session_segments(a), session_segments(b)
    if len(sa) == 1 and len(sb) == 1:
        return [(sa[0], sb[0])], [], [], "the only config of each session"
    by_options = {_options(a, s): s for s in sa if s.config_id in a.configs}
    pairs = [(by_options[options], s) for s in sb if (options := _options(b, s)) in by_options]
    matched = {first.config_id for first, _ in pairs}
    only_a = [s for s in sa if s.config_id not in matched]
    only_b = [s for s in sb if _options(b, s) not in by_options]
    if not pairs and sa and sb:
        n = min(len(sa), len(sb))
        return list(zip(sa[:n], sb[:n])), sa[n:], sb[n:], "paired in order of use (no config served by both)"
    return pairs, only_a, only_b, "configs with the same options"


def _options(data: SessionData, segment: SegmentStats) -> OptConfig | None:
    entry = data.configs.get(segment.config_id)
    return entry.options if entry else None


def _option_diff(a: OptConfig | None, b: OptConfig | None) -> list[str]:
    if a is None or b is None:
        return []
    return [f"{f.name}: {getattr(a, f.name)} → {getattr(b, f.name)}" for f in fields(OptConfig)
            if getattr(a, f.name) != getattr(b, f.name)]


def metric_rows(sa: SegmentStats, sb: SegmentStats) -> list[list[str]]:
    """metric, A, B, B − A, B / A, and which is better where the direction is known."""
    rows = []
    for name, read, show_value, lower_better in METRICS:
        va, vb = read(sa), read(sb)
        if va is None and vb is None:
            continue
        delta = ratio = None
        if va is not None and vb is not None:
            delta = vb - va
            ratio = vb / va if va else None
        if delta is None:
            delta_text = NO_DATA
        elif show_value is fmt_fraction:
            delta_text = f"{100 * delta:+.1f} pp"
        else:
            shown = show_value(abs(delta))
            delta_text = ("+" if delta > 0 else "−" if delta < 0 else "±") + shown
        better = ""
        if lower_better is not None and delta:
            better = "B" if (delta < 0) == lower_better else "A"
        rows.append([name, show_value(va), show_value(vb), delta_text, fmt_ratio(ratio), better])
    return rows


def _doctor(document: dict, data: SessionData, path: str) -> SessionDiagnosis:
    parts = saved_live_parts(document, source=f"snapshot {path}")
    return diagnose_session(data, context_from_document(document, parts, saved=path))
CONFIG_SUFFIX = re.compile(r"^(?P<path>.+):(?P<config>c\d+)$")


def split_config(argument: str) -> tuple[str, str | None]:
    """ "S.json:c2" → ("S.json", "c2"); a path that exists as written is a path (a file may
    be named "x:c1")."""
    found = CONFIG_SUFFIX.match(argument)
    if found is None or os.path.exists(argument):
        return argument, None
    return found["path"], found["config"]


def _chosen(data: SessionData, config_id: str, argument: str) -> SegmentStats:
    segment = next((s for s in session_segments(data) if s.config_id == config_id), None)
    if segment is None:
        served = ", ".join(s.config_id for s in session_segments(data)) or "none"
        raise BadInput(f"{argument}: no config {config_id} in that session "
                          f"(its configs: {served})")
    return segment


def _first_config(data: SessionData, path: str) -> str:
    if not data.configs:
        raise BadInput(f"{path}: no configs were served in this session")
    return next(iter(data.configs))


def compare(path_a: str, path_b: str) -> str:
    """Per-metric deltas and ratios (B relative to A) and the config differences. "FILE:c2"
    chooses one config of a session, so two configs of one session compare too
    (`snapshot compare S.json:c1 S.json:c2`)."""
    (path_a, config_a), (path_b, config_b) = split_config(path_a), split_config(path_b)
    doc_a, a = _load(path_a)
    doc_b, b = _load(path_b)
    lines = ["A: " + "\n   ".join(_header(path_a, doc_a, a) + slo_line(a)),
             "B: " + "\n   ".join(_header(path_b, doc_b, b) + slo_line(b)), ""]
    if a.slo != b.slo:
        lines.append("SLO differs: goodput and attainment are each against its own session's")
    for name, key in (("model", ("model", "name")), ("dtype", ("model", "dtype")),
                      ("device", ("environment", "device")),
                      ("torch", ("environment", "torch")), ("trace", ("trace", "name"))):
        va, vb = _field(doc_a, *key), _field(doc_b, *key)
        if va != vb:
            lines.append(f"{name} differs: {va} → {vb}")
    if config_a is not None or config_b is not None:
        first = _chosen(a, config_a or _first_config(a, path_a), path_a)
        second = _chosen(b, config_b or _first_config(b, path_b), path_b)
        pairs, only_a, only_b = [(first, second)], [], []
        how = f"the configs chosen: {first.config_id} vs {second.config_id}"
    else:
        pairs, only_a, only_b, how = _pairs(a, b)
    lines.append(f"compared: {how}")
    doctor_a, doctor_b = _doctor(doc_a, a, path_a), _doctor(doc_b, b, path_b)
    for sa, sb in pairs:
        lines += ["", f"A {sa.config_id} [{_label(a, sa.config_id, doc_a)}]  vs  "
                      f"B {sb.config_id} [{_label(b, sb.config_id, doc_b)}]"]
        differences = _option_diff(_options(a, sa), _options(b, sb))
        if imported_label(doc_a, sa.config_id) or imported_label(doc_b, sb.config_id):
            differences = ["not comparable: an imported side was served by another tool's "
                           "server, its queue, compile and KV figures unmeasured (0)"]
        lines.append("config differences: " + ("; ".join(differences) if differences else "none"))
        lines += [text_table(["metric", "A", "B", "B − A", "B / A", "better"],
                                 metric_rows(sa, sb))]
        lines += energy_unmeasured(sa, sb)
        da, db = doctor_a.segment(sa.config_id), doctor_b.segment(sb.config_id)
        if da is not None and db is not None:
            lines += cause_moves(da, db)
    for side, data, document, only in (("A", a, doc_a, only_a), ("B", b, doc_b, only_b)):
        lines += [f"only in {side}: {s.config_id} [{_label(data, s.config_id, document)}]"
                  for s in only]
    return "\n".join(lines)
