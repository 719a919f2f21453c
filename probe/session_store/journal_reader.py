"""A session journal read back (probe/session_store/journal.py writes it): every line it can
read, the ones it cannot named by line number, the requests dispatched and never served marked
lost, and the snapshot written from it while no engine runs (`snapshot recover`, the
dashboard's `s` after a crash). Torch-free."""

from __future__ import annotations

import json
import os
import re
import stat
import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from types import MappingProxyType
from typing import Any, Mapping

from probe.common.atomic import write_json_atomic
from probe.common.clock import SessionClock
from probe.common.errors import BadInput
from probe.common.shown import shown
from probe.contract.figures import ConfigEnergy
from probe.contract.objective import slo_from_dict
from probe.contract.options import OptConfig
from probe.contract.protocol import EngineExit
from probe.contract.records import (
    CompileEvent,
    GraphBreakRecord,
    KVPool,
    LedgerEntry,
    Notice,
    RequestRecord,
)
from probe.contract.session import SessionData
from probe.session_store.journal import CONTEXT_SECTIONS, Dispatch
from probe.session_store.record_ranges import CONTEXT, MAX_SESSION_S, context_problem
from probe.session_store.snapshot import checked_item, session_data, snapshot_document

# the kinds `_add` takes into a section as they are ("record" is read_journal's own: by seq)
_RECORD_KINDS: dict[str, tuple[str, type]] = {
    "compile_event": ("compile_events", CompileEvent), "notice": ("notices", Notice)}


@dataclass(frozen=True)
class Journal:
    """A journal read back: the session so far and where it ran."""
    path: str
    started_unix: float                     # wall-clock time of session time 0
    context: Mapping[str, Any]              # CONTEXT_SECTIONS of the session JSON
    data: SessionData
    dispatches: tuple[Dispatch, ...] = field(default=())
    unreadable: tuple[tuple[int, str], ...] = field(default=())   # (line number, why) skipped
    # (line number, what) written a second time: a record, a dispatch or a compile event the
    # journal holds already, kept once (the first)
    repeated: tuple[tuple[int, str], ...] = field(default=())

    def clock(self) -> SessionClock:
        """This session's clock, in this process: it reads on from where the session is now."""
        return SessionClock(start=time.perf_counter() - (time.time() - self.started_unix))

    @property
    def next_seq(self) -> int:
        """Where the replay goes on: after the last request dispatched (or served)."""
        seqs = [d.seq for d in self.dispatches] + [r.seq for r in self.data.records]
        return max(seqs, default=-1) + 1

    def crash_marks(self, end: EngineExit, *, restarted: bool
                    ) -> tuple[tuple[RequestRecord, ...], Notice]:
        """The requests the engine held when it ended, as failed records, and the notice that
        marks the moment on the timeline."""
        # within what every reader accepts, whatever clock the header was written with
        at_s = min(max(end.at_unix - self.started_unix, 0.0), MAX_SESSION_S)
        served = {r.seq for r in self.data.records}
        held = [d for d in self.dispatches if d.seq not in served]
        config_id = self._config_serving()
        lost = tuple(_lost_record(d, at_s, config_id, f"lost: the engine {end.said()} before "
                                                      f"serving it") for d in held)
        text = f"engine restarted after it {end.said()}" if restarted else f"the engine {end.said()}"
        if lost:
            text += f"; {len(lost)} request(s) it held are recorded as failed"
        return lost, Notice(at_s, "error", text)

    def document(self, end: EngineExit | None) -> dict[str, Any]:
        """The session JSON of everything served, the engine's end marked; `end` None: its
        engines still serve (a live A/B's two), and what they hold is not served yet, not lost."""
        data = self.data
        if end is not None:
            lost, notice = self.crash_marks(end, restarted=False)
            data = replace(data, records=data.records + lost, notices=data.notices + (notice,))
        context = dict(self.context)
        model = context.get("model")
        config = data.configs.get(self._config_serving())
        if isinstance(model, dict) and config is not None:  # as the engine writes it: the dtype served
            context["model"] = {**model, "dtype": config.options.precision}
        return snapshot_document(data, **{name: context.get(name) or {}
                                          for name in CONTEXT_SECTIONS})

    def _config_serving(self) -> str:
        return self.data.current_config() or "c1"


def _lost_record(dispatch: Dispatch, at_s: float, config_id: str, error: str) -> RequestRecord:
    waited_ms = max(at_s - dispatch.arrival_s, 0.0) * 1e3
    return RequestRecord(
        id=dispatch.request_id, seq=dispatch.seq, config_id=config_id,
        input_tokens=dispatch.input_tokens, padded_tokens=dispatch.input_tokens, output_tokens=0,
        arrival_s=dispatch.arrival_s, start_s=max(at_s, dispatch.arrival_s), first_token_s=None,
        end_s=max(at_s, dispatch.arrival_s), queue_ms=waited_ms, compile_stall_ms=0.0,
        encoder_ms=0.0, decoder_ms=0.0, ttft_ms=None, tpot_ms=None, latency_ms=waited_ms,
        kv_cache_bytes=0, kv_cache_used_bytes=0, kv_self_attention_bytes=0,
        kv_cross_attention_bytes=0, error=error)


def read_journal(path: str) -> Journal | None:
    """The journal at `path`; None when there is no session to continue (the engine ended
    before it wrote the session's header). BadInput when it cannot be read at all. A line
    that cannot be read (torn by a kill, of the wrong types, naming no config, a figure out of
    its range) is skipped and counted in `Journal.unreadable`, with its number and why: what
    the other lines hold is kept, and the session they make passes saved_session."""
    sections: dict[str, Any] = {"configs": {}, "requests": [], "compile_events": [],
                                "graph_breaks": [], "notices": [], "reference_tokens": {},
                                "kv_pools": {}, "energy": {}, "compile_ledger": {}}
    header: dict[str, Any] | None = None
    header_line = 0
    dispatches: list[Dispatch] = []
    unreadable: list[tuple[int, str]] = []
    seen = _Seen()
    try:
        # O_NONBLOCK: a FIFO given as a journal is refused below, not waited on
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
        if not stat.S_ISREG(os.fstat(fd).st_mode):     # /dev/zero: one endless line
            os.close(fd)
            raise BadInput(f"session journal {path}: not a regular file")
        with os.fdopen(fd, "rb") as handle:
            for number, line in enumerate(handle, start=1):
                if not line.strip():
                    continue
                try:
                    kind, value = _entry(line)
                    if kind == "session":
                        header, header_line = _header(value), number
                    elif kind == "dispatch":
                        dispatch = checked_item(Dispatch, _object(value, kind), kind)
                        if seen.first(number, kind, dispatch.seq):
                            dispatches.append(dispatch)
                    elif kind == "record":
                        record = _record(value)
                        if seen.first(number, kind, record.seq, f" (id {shown(record.id)})"):
                            sections["requests"].append(value)
                    elif kind == "compile_event":
                        _add(sections, kind, value)
                        exact = json.dumps(value, sort_keys=True)
                        if not seen.first(number, kind, exact, f" {shown(value.get('compile_id'))}"):
                            sections["compile_events"].pop()
                    elif kind == "config":
                        conflict = seen.declared(number, *_config_line(value))
                        if conflict is not None:
                            raise _Refused(f"session journal {path}: {conflict}")
                        _add(sections, kind, value)
                    else:
                        _add(sections, kind, value)
                except BadInput as exc:
                    unreadable.append((number, str(exc)))
    except _Refused as exc:
        raise BadInput(str(exc)) from None
    except OSError as exc:
        raise BadInput(f"session journal {path}: cannot read: {exc.strerror or exc}") from None
    if header is None:
        return None
    _drop_unknown_configs(sections, unreadable)
    # each graph's last entry, in the order the graphs first appeared (as the live session)
    sections["compile_ledger"] = list(sections["compile_ledger"].values())
    data = session_data(sections, source=f"session journal {path}")
    # a section that is not an object (a damaged header) is left out, as a missing one is
    context = {name: header.get(name) for name in CONTEXT_SECTIONS
               if isinstance(header.get(name), dict)}
    for section in CONTEXT:
        problem = context_problem(section, context.get(section) or {})
        if problem is not None:     # left out, as a missing one: not served with, nor shown
            unreadable.append((header_line, f"session header: {section}.{problem}"))
            del context[section]
    return Journal(path, float(header["started_unix"]), MappingProxyType(context), data,
                   tuple(dispatches), tuple(sorted(unreadable)), tuple(seen.repeated))


class _Refused(Exception):
    """The whole journal refused (not one line skipped): its lines contradict each other."""


class _Seen:
    """What the lines so far recorded, by the key that makes each one a single thing: a
    request's record and its dispatch by seq (one request, one number in a session), a
    compile event by its whole value, a config by its id."""

    def __init__(self) -> None:
        self._at: dict[tuple[str, object], int] = {}
        self._configs: dict[str, tuple[int, OptConfig]] = {}
        self.repeated: list[tuple[int, str]] = []       # (line number, what) kept once

    def first(self, number: int, kind: str, key: object, named: str = "") -> bool:
        """True for the first line of `key`; a later one is said in `repeated`."""
        first = self._at.setdefault((kind, key), number)
        if first == number:
            return True
        what = f"seq {key}" if isinstance(key, int) else "the same event"
        self.repeated.append((number, f"{kind} {what}{named} written again (first on line "
                                      f"{first}): kept once"))
        return False

    def declared(self, number: int, config_id: str, options: OptConfig) -> str | None:
        """Why a declaration of `config_id` cannot be taken (None: it can). A second one with
        other options is refused, never taken: records name a config by its id alone, so
        which of the two served a record after it no line says."""
        first = self._configs.setdefault(config_id, (number, options))
        if first[1] == options:
            return None
        return (f"line {number} declares config {shown(config_id)} again with other options "
                f"({options.label()}) than line {first[0]} ({first[1].label()}); which "
                f"records each served cannot be told, so nothing is recovered from it")


def _record(value: Any) -> RequestRecord:
    value = _object(value, "record")
    if "config_id" not in value:
        raise BadInput("record: missing config_id")
    record: RequestRecord = checked_item(RequestRecord, value, "record")
    return record


def _config_line(value: Any) -> tuple[str, OptConfig]:
    value = _object(value, "config")
    config_id = _key(value, "config_id", "config")
    data = session_data({"configs": {config_id: value}}, source="config")   # its options
    return config_id, data.configs[config_id].options


def _header(value: Any) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise BadInput(f"session header: expected an object, got {shown(value)}")
    started = value.get("started_unix")
    if not isinstance(started, (int, float)) or isinstance(started, bool) \
            or not 0 <= started < 1e11:
        raise BadInput(f"session header: started_unix: expected a time, got {shown(started)}")
    return value


def _entry(line: bytes) -> tuple[str, Any]:
    """(kind, value) of one line; BadInput for a line torn by a kill or otherwise unreadable."""
    try:
        entry = json.loads(line)
    except (ValueError, RecursionError):
        raise BadInput("not a whole JSON line (torn by a kill?)") from None
    if not isinstance(entry, dict) or not isinstance(entry.get("kind"), str):
        raise BadInput("not a journal entry (no kind)")
    if b"\\u" in line and _SURROGATE.search(line):
        try:        # a lone \ud800 escape: no terminal or UTF-8 file can hold it
            json.dumps(entry, ensure_ascii=False).encode("utf-8")
        except UnicodeEncodeError:
            raise BadInput("holds an unpaired surrogate (a lone \\ud800-\\udfff escape)") from None
    return entry["kind"], entry.get("value")


_SURROGATE = re.compile(rb"\\u[dD][89a-fA-F]")


def _object(value: Any, kind: str) -> dict[str, Any]:
    if type(value) is not dict:
        raise BadInput(f"{kind}: expected an object, got {shown(value)}")
    return value


def _key(value: dict[str, Any], name: str, kind: str) -> str:
    key = value.get(name)
    if name not in value:
        raise BadInput(f"{kind}: missing {name}")
    if type(key) is not str:
        raise BadInput(f"{kind}: {name}: expected a string, got {shown(key)}")
    return key


def _add(sections: dict[str, Any], kind: str, value: Any) -> None:
    """One journal entry into the session JSON's sections, checked on its own (so that one bad
    line costs that line only): BadInput naming what is wrong."""
    if kind == "config":
        config_id, _ = _config_line(value)
        sections["configs"].setdefault(config_id, value)     # the first (read_journal: alike)
    elif kind in _RECORD_KINDS:
        section, cls = _RECORD_KINDS[kind]
        checked_item(cls, _object(value, kind), kind)
        sections[section].append(value)
    elif kind == "graph_breaks":
        if type(value) is not list:
            raise BadInput(f"graph_breaks: expected a list, got {shown(value)}")
        for index, item in enumerate(value):
            checked_item(GraphBreakRecord, item, f"graph_breaks[{index}]")
        sections["graph_breaks"] = value
    elif kind == "reference":
        value = _object(value, kind)
        request_id = _key(value, "request_id", kind)
        session_data({"reference_tokens": {request_id: value.get("tokens")}}, source="reference")
        sections["reference_tokens"][request_id] = value["tokens"]
    elif kind == "kv_pool":
        value = _object(value, kind)
        config_id = _key(value, "config_id", kind)
        checked_item(KVPool, value.get("pool"), f"kv_pool.{config_id}")
        sections["kv_pools"][config_id] = value["pool"]
    elif kind == "energy":
        value = _object(value, kind)
        config_id = _key(value, "config_id", kind)
        fields = {k: v for k, v in value.items() if k != "config_id"}
        checked_item(ConfigEnergy, fields, f"energy.{config_id}")
        sections["energy"][config_id] = fields          # the last one written
    elif kind == "compile_ledger":
        if type(value) is not list:
            raise BadInput(f"compile_ledger: expected a list, got {shown(value)}")
        entries = [checked_item(LedgerEntry, item, f"compile_ledger[{index}]")
                   for index, item in enumerate(value)]
        for entry, item in zip(entries, value):         # each graph's last entry
            sections["compile_ledger"][(entry.config_id, entry.function, entry.key)] = item
    elif kind == "slo":
        slo_from_dict(value, "slo")
        sections["slo"] = value         # the last one set
    else:
        raise BadInput(f"unknown kind {shown(kind)}")


def _drop_unknown_configs(sections: dict[str, Any], unreadable: list[tuple[int, str]]) -> None:
    """Records naming a config no line declared cannot be shown: dropped, and counted."""
    known = sections["configs"]
    for section in ("requests", "compile_events"):
        kept = [r for r in sections[section]
                if r.get("config_id") is None or r.get("config_id") in known]
        unreadable += [(0, f"{section[:-1]}: names a config no line declares")] * (
            len(sections[section]) - len(kept))
        sections[section] = kept
    breaks = sections["graph_breaks"]
    sections["graph_breaks"] = [b for b in breaks if b.get("config_id") in known]
    for section in ("energy", "kv_pools"):
        unreadable += [(0, f"{section}.{shown(c)}: names a config no line declares")
                       for c in sections[section] if c not in known]
        sections[section] = {c: e for c, e in sections[section].items() if c in known}
    sections["compile_ledger"] = {g: e for g, e in sections["compile_ledger"].items()
                                  if g[0] in known}


def unreadable_text(unreadable: tuple[tuple[int, str], ...], shown_at_most: int = 3, *,
                    what: str = "unreadable") -> str:
    """`1 line unreadable: line 17, missing config_id` (the first few, then how many more);
    `what="repeated"` for Journal.repeated."""
    count = len(unreadable)
    parts = [f"line {n}, {why}" if n else why for n, why in unreadable[:shown_at_most]]
    more = f"; {count - shown_at_most} more" if count > shown_at_most else ""
    return f"{count} line{'s' if count != 1 else ''} {what}: {'; '.join(parts)}{more}"


def journal_notes(journal: Journal) -> str:
    """What reading the journal skipped and kept once, in a line ("" when nothing)."""
    parts = [unreadable_text(journal.unreadable)] if journal.unreadable else []
    if journal.repeated:
        parts.append(unreadable_text(journal.repeated, what="repeated"))
    return "; ".join(parts)


def save_from_journal(journal_path: str, out: str | os.PathLike, end: EngineExit | None, *,
                      serving: bool = False) -> Path:
    """Write the session JSON of what the engine served, from its journal alone (no engine
    needed: the dashboard's `s` while the engine is down); `end`: how it ended, if known.
    `serving`: its engines still serve (`s` during a live A/B, whose two engines each hold
    only their half): the requests they hold are left out, not recorded as lost.
    BadInput when the engine ended before its session began; OSError when `out` cannot be
    written."""
    journal = read_journal(journal_path)
    if journal is None:
        raise BadInput("the engine ended before its session began: nothing to save")
    ended = None if serving else end or EngineExit(time.time(), None, "not running")
    return write_json_atomic(out, journal.document(ended))
