"""The session JSON: what `replay --out`, the dashboard's `s` and `bench` write, and what
`--load`, `snapshot show` and `snapshot compare` read. Written atomically."""

from __future__ import annotations

import functools
import math
import os
import re
import types
import typing
from dataclasses import MISSING, asdict, fields, is_dataclass
from pathlib import Path
from types import MappingProxyType
from typing import Any, Callable, Mapping, Sequence

from probe.analysis.session_diagnosis import attach_diagnoses
from probe.analysis.stats import session_segments
from probe.common.errors import BadInput, TraceError
from probe.common.shown import shown
from probe.common.terminal_text import terminal_text
from probe.common.textio import JsonProblem, parse_json, read_text
from probe.contract.device_sample import DeviceSample
from probe.contract.figures import ConfigEnergy
from probe.contract.objective import slo_from_dict
from probe.contract.options import OptConfig
from probe.contract.records import (
    BatchSteps,
    CompileEvent,
    GraphBreakRecord,
    KVPool,
    LedgerEntry,
    Notice,
    RequestRecord,
    RooflineStatus,
)
from probe.contract.session import ConfigEntry, SessionData
from probe.session_store.record_ranges import CONTEXT, context_problem, problem_of

SCHEMA_VERSION = 1


def snapshot_document(data: SessionData, *, environment: dict, model: dict, trace: dict,
                      settings: dict | None = None, live: dict | None = None) -> dict[str, Any]:
    document = {
        "schema_version": SCHEMA_VERSION,
        "slo": None if data.slo is None else data.slo.as_dict(),
        "environment": environment,
        "model": model,
        "trace": trace,
        "settings": settings or {},
        "configs": {cid: entry.as_dict() for cid, entry in data.configs.items()},
        "requests": [_record_dict(r) for r in data.records],
        "segments": [s.as_dict() for s in session_segments(data)],
        "compile_events": [asdict(e) for e in data.events],
        "graph_breaks": [asdict(b) for b in data.breaks],
        "notices": [asdict(n) for n in data.notices],
        "reference_tokens": {rid: list(tokens) for rid, tokens in data.references.items()},
        "kv_pools": {cid: asdict(pool) for cid, pool in data.kv_pools.items()},
        "batch_steps": {cid: asdict(steps) for cid, steps in data.batch_steps.items()},
        "energy": {cid: asdict(energy) for cid, energy in data.energy.items()},
        "compile_ledger": [ledger_dict(e) for e in data.compile_ledger],
        "live": live or {},
    }
    return attach_diagnoses(document, data, saved_live_parts(document))


def saved_serving(document: dict[str, Any]) -> str | None:
    """The config the engine served when the session was saved (`live.config_id`), if the file
    says: SessionData.current_config's `serving`."""
    live = document.get("live")
    serving = live.get("config_id") if isinstance(live, dict) else None
    return serving if isinstance(serving, str) else None


def saved_live_parts(document: dict[str, Any], source: str = "snapshot", *,
                     for_terminal: bool = False
                     ) -> tuple[DeviceSample | None, RooflineStatus | None]:
    """The device sample and roofline a session was saved with (None when it has none)."""
    live = document.get("live", {})
    clean = terminal_text if for_terminal else None
    try:
        sample, roofline = live.get("device_sample"), live.get("roofline")
        return (None if sample is None else
                _build(DeviceSample, sample, "live.device_sample", clean),
                None if roofline is None else
                _build(RooflineStatus, roofline, "live.roofline", clean))
    except _ShapeError as exc:
        raise BadInput(f"{source}: not an infertop session: {exc}") from None


def _record_dict(record: RequestRecord) -> dict[str, Any]:
    """A record as saved: `tokens` only when they were kept (`--tokens`)."""
    raw = asdict(record)
    if raw["tokens"] is None:
        del raw["tokens"]
    else:
        raw["tokens"] = list(raw["tokens"])
    return raw


def ledger_dict(entry: LedgerEntry) -> dict[str, Any]:
    """A compile ledger entry as saved (JSON's types: its stalled requests a list)."""
    return {**asdict(entry), "stalled_requests": list(entry.stalled_requests)}


# The sections a reader touches, and the JSON type each must have when present.
SECTIONS: dict[str, type] = {
    "environment": dict, "model": dict, "trace": dict, "settings": dict, "configs": dict,
    "requests": list, "segments": list, "compile_events": list, "graph_breaks": list,
    "notices": list, "reference_tokens": dict, "kv_pools": dict, "batch_steps": dict, "energy": dict,
    "compile_ledger": list, "live": dict}
RECORD_SECTIONS = (("requests", RequestRecord), ("compile_events", CompileEvent),
                   ("graph_breaks", GraphBreakRecord), ("notices", Notice))
KEYED_SECTIONS = (("kv_pools", KVPool), ("batch_steps", BatchSteps), ("energy", ConfigEnergy))
OPTION_NAMES = frozenset(f.name for f in fields(OptConfig))
MAX_SAVED_INT = 2 ** 53
# read_text refused undecodable bytes, so a parsed string holds a surrogate only from a
# \\uD800-\\uDFFF escape: without one in the text, the document-wide walk is skipped.
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")


def read_document(path: str | os.PathLike) -> dict[str, Any]:
    """The parsed snapshot, its version and its sections' types checked: BadInput naming
    what is wrong and where (the file, its line for JSON syntax, the section)."""
    try:
        text = read_text(Path(path))
        document = parse_json(text)
    except TraceError as exc:  # unreadable, a device, not UTF-8 text
        raise BadInput(f"snapshot {exc}") from None
    except JsonProblem as exc:
        raise BadInput(f"snapshot {exc.located(path)}: {exc}") from None
    may_hold_surrogates = _SURROGATE_ESCAPE.search(text) is not None
    del text  # the document alone from here: a large session is held once
    version = document.get("schema_version") if isinstance(document, dict) else None
    if type(version) is not int or version != SCHEMA_VERSION:
        raise BadInput(f"snapshot {path}: schema_version {shown(version)} is not supported "
                          f"(this infertop reads {SCHEMA_VERSION})")
    for section, kind in SECTIONS.items():
        if section in document and not isinstance(document[section], kind):
            raise BadInput(f"snapshot {path}: not an infertop session: {section!r} must be a "
                              f"JSON {'object' if kind is dict else 'list'}, got "
                              f"{type(document[section]).__name__}")
    surrogate = _unpaired_surrogate(document) if may_hold_surrogates else None
    if surrogate is not None:
        raise BadInput(f"snapshot {path}: not an infertop session: {surrogate}: holds an "
                          f"unpaired surrogate (a lone \\ud800-\\udfff escape)")
    return document


def session_data(document: dict[str, Any], source: str = "snapshot", *,
                 for_terminal: bool = False) -> SessionData:
    """Rebuild the raw records of a saved session (for --load, show and compare) from a
    read_document() result; a record of the wrong shape is a BadInput naming it and its field.
    `for_terminal`: every string (ids, reasons, notes, errors) through terminal_text, for a
    session that is shown (not for `export`, which keeps the data as saved)."""
    clean = terminal_text if for_terminal else None
    key = clean or str
    try:
        configs = {key(cid): _config(cid, raw, clean)
                   for cid, raw in document.get("configs", {}).items()}
        records, events, breaks, notices = (
            tuple(_build(cls, raw, f"{section}[{index}]", clean)
                  for index, raw in enumerate(document.get(section, [])))
            for section, cls in RECORD_SECTIONS)
        references = {key(rid): _value(tokens, tuple[int, ...], f"reference_tokens.{rid}")
                      for rid, tokens in document.get("reference_tokens", {}).items()}
        pools, steps, energy = ({key(cid): _build(cls, raw, f"{section}.{cid}", clean)
                                 for cid, raw in document.get(section, {}).items()}
                                for section, cls in KEYED_SECTIONS)
        ledger = tuple(_build(LedgerEntry, raw, f"compile_ledger[{index}]", clean)
                       for index, raw in enumerate(document.get("compile_ledger", [])))
    except _ShapeError as exc:
        raise BadInput(f"{source}: not an infertop session: {exc}") from None
    slo = slo_from_dict(document.get("slo"), f"{source}: slo")
    return SessionData(records=records, events=events, breaks=breaks,
                       configs=MappingProxyType(configs), notices=notices,
                       references=MappingProxyType(references),
                       kv_pools=MappingProxyType(pools), slo=slo,
                       batch_steps=MappingProxyType(steps),
                       energy=MappingProxyType(energy), compile_ledger=ledger)


def saved_session(document: dict[str, Any], source: str = "snapshot", *,
                  for_terminal: bool = False) -> SessionData:
    """session_data() of a saved snapshot, refused where its records contradict the session:
    a record, compile event or graph break naming a config the session does not have, a
    figure out of its range (record_ranges: a negative or absurd time, a zero batch, a
    negative count). Every reader of a session uses this one check: `snapshot show|compare|
    export`, `doctor`, `--load`, the charts; `snapshot recover` skips the lines it refuses."""
    data = session_data(document, source, for_terminal=for_terminal)
    refused = f"{source}: not an infertop session:"

    def check(where: str, config_id: str | None, item: Any, named: str = "") -> None:
        if config_id is not None and config_id not in data.configs:
            named = named or f"{where}.config_id {shown(config_id)}"
            raise BadInput(f"{refused} {named} is not one of the session's configs "
                           f"({', '.join(data.configs) or 'none'})")
        problem = problem_of(item)
        if problem is not None:
            raise BadInput(f"{refused} {where}.{problem}")

    groups: tuple[tuple[str, Sequence[Any]], ...] = (
        ("requests", data.records), ("compile_events", data.events), ("graph_breaks", data.breaks),
        ("notices", data.notices), ("compile_ledger", data.compile_ledger))
    for section, items in groups:
        for index, item in enumerate(items):
            check(f"{section}[{index}]", getattr(item, "config_id", None), item)
    keyed: tuple[tuple[str, Mapping[str, Any]], ...] = (
        ("kv_pools", data.kv_pools), ("batch_steps", data.batch_steps), ("energy", data.energy))
    for section, by_config in keyed:     # as the compile ledger: a config the session declares
        for config_id, item in by_config.items():
            check(f"{section}.{config_id}", config_id, item, f"{section}.{shown(config_id)}")
    saved_live_parts(document, source)      # the doctor's and the dashboard's: every reader's
    for section in CONTEXT:     # where and how it ran (the section's type: read_document)
        problem = context_problem(section, document.get(section) or {})
        if problem is not None:
            raise BadInput(f"{refused} {section}.{problem}")
    return data


def checked_item(cls: type, raw: Any, where: str) -> Any:
    """One record of kind `cls` from its saved dict, with its types and ranges checked as
    saved_session checks them; BadInput naming the field otherwise (a journal's line)."""
    try:
        item = _build(cls, raw, where)
    except _ShapeError as exc:
        raise BadInput(str(exc)) from None
    problem = problem_of(item)
    if problem is not None:
        raise BadInput(f"{where}.{problem}")
    return item


class _ShapeError(ValueError):
    """A value of a saved session that is not what the records hold; the message says where."""


def _config(config_id: str, raw: Any, clean: Callable[[str], str] | None) -> ConfigEntry:
    where = f"configs.{config_id}"
    if not isinstance(raw, dict):
        raise _ShapeError(f"{where}: expected an object, got {type(raw).__name__}")
    try:
        options = OptConfig(**{k: v for k, v in raw.items() if k in OPTION_NAMES})
    except BadInput as exc:
        raise _ShapeError(f"{where}: {exc}") from None
    notes = _value(raw.get("notes", []), tuple[str, ...], f"{where}.notes")
    if clean is not None:
        config_id, notes = clean(config_id), tuple(map(clean, notes))
    return ConfigEntry(config_id, options, notes)


def _build(cls: type, raw: Any, where: str, clean: Callable[[str], str] | None = None) -> Any:
    """One record from its saved dict: every field of `cls` checked against its annotation;
    unknown keys (from a newer infertop) are ignored, a missing field without a default is not.
    The checks are compiled once per class (`_plan`): a 300,000-record session is read in
    seconds, not minutes; a value that fails is named by the slow, general `_value`. `clean`
    is applied to every string field (terminal_text, for a session that is shown)."""
    if type(raw) is not dict:
        raise _ShapeError(f"{where}: expected an object, got {type(raw).__name__}")
    values = {}
    for name, accept, required in _plan(cls, clean):
        if name in raw:
            value = accept(raw[name])
            if value is _REFUSED:
                value = _value(raw[name], _hints(cls)[name], f"{where}.{name}")
                if clean is not None and isinstance(value, tuple):
                    value = tuple(clean(v) if isinstance(v, str) else v for v in value)
            values[name] = value
        elif required:
            raise _ShapeError(f"{where}: field {name!r} is missing")
    return cls(**values)


_REFUSED = object()


@functools.lru_cache(maxsize=None)
def _plan(cls: type, clean: Callable[[str], str] | None
          ) -> tuple[tuple[str, Callable[[Any], Any], bool], ...]:
    """(field, its acceptor, required) for each field of `cls`."""
    hints = _hints(cls)
    return tuple((f.name, _acceptor(hints[f.name], clean),
                  f.default is MISSING and f.default_factory is MISSING) for f in fields(cls))


@functools.lru_cache(maxsize=None)
def _acceptor(hint: Any, clean: Callable[[str], str] | None) -> Callable[[Any], Any]:
    """A function returning the value as the record holds it (lists as tuples), or _REFUSED.
    The one rule for a value of the types JSON produces (so `type(v) is int` excludes bool): a
    whole number is a number too, bounded (larger is no count or byte size, and overflows
    numpy's int64); NaN and infinities are not figures."""
    kinds = _kinds(hint)
    if any(typing.get_origin(kind) is tuple or is_dataclass(kind) for kind in kinds):
        return lambda value: _tuple_or_refused(value, hint)
    exact = {kind for kind in kinds if kind in (str, type(None), bool)}
    numbers = float in kinds
    whole = int in kinds or numbers

    def accept(value: Any) -> Any:
        kind = type(value)
        if kind is str and clean is not None and str in exact:
            return clean(value)
        if kind in exact:
            return value
        if kind is int and whole:
            return value if -MAX_SAVED_INT <= value <= MAX_SAVED_INT else _REFUSED
        if kind is float and numbers:
            return value if math.isfinite(value) else _REFUSED
        return _REFUSED
    return accept


def _tuple_or_refused(value: Any, hint: Any) -> Any:
    try:
        return _value(value, hint, "")
    except _ShapeError:
        return _REFUSED


@functools.lru_cache(maxsize=None)
def _hints(cls: type) -> dict[str, Any]:
    return typing.get_type_hints(cls)


def _kinds(hint: Any) -> tuple[Any, ...]:
    """`float | None` -> (float, NoneType); `int` -> (int,)."""
    return typing.get_args(hint) if typing.get_origin(hint) in (typing.Union, types.UnionType) else (hint,)


def _value(value: Any, hint: Any, where: str) -> Any:
    """`value` if it is of one of the types `hint` names (JSON lists become tuples)."""
    for kind in _kinds(hint):
        if typing.get_origin(kind) is tuple:
            item = typing.get_args(kind)[0]
            if isinstance(value, list):
                return tuple(_value(v, item, f"{where}[{i}]") for i, v in enumerate(value))
        elif is_dataclass(kind) and isinstance(kind, type):
            if type(value) is dict:    # a value inside a record (EnergyPhases): its fields
                return _build(kind, value, where)
        elif _acceptor(kind, None)(value) is not _REFUSED:
            return value
    raise _ShapeError(f"{where}: expected {_describe(hint)}, got {shown(value)}")


def _describe(hint: Any) -> str:
    names = {float: "a finite number", int: "a whole number", str: "a string", type(None): "null"}
    return " or ".join("a list" if typing.get_origin(k) is tuple else
                       f"an object ({k.__name__})" if is_dataclass(k) and isinstance(k, type)
                       else names.get(k, str(k)) for k in _kinds(hint))


def _unpaired_surrogate(document: Any) -> str | None:
    """Where the first string holding an unpaired surrogate (from a \\ud800 escape) is: no
    UTF-8 terminal can print one. Iterative: the document may be nested ~1000 deep."""
    stack: list[tuple[str, Any]] = [("", document)]
    while stack:
        where, value = stack.pop()
        if isinstance(value, dict):
            stack.extend((f"{where}.{k}" if where else str(k), v) for k, v in value.items())
            stack.extend((f"{where} (a key)", k) for k in value)
        elif isinstance(value, list):
            stack.extend((f"{where}[{i}]", v) for i, v in enumerate(value))
        elif isinstance(value, str):
            try:
                value.encode("utf-8")
            except UnicodeEncodeError:
                return where or "the document"
    return None
