"""The session JSON: what `replay --out`, the dashboard's `s` and `bench` write, and what
`--load`, `snapshot show` and `snapshot compare` read. Written atomically."""

from __future__ import annotations

import functools
import json
import math
import os
import platform
import sys
import types
import typing
from dataclasses import MISSING, asdict, fields
from pathlib import Path
from types import MappingProxyType
from typing import Any

from probe.contract.device_sample import DeviceSample
from probe.contract.errors import ConfigError
from probe.contract.options import OptConfig
from probe.contract.records import (
    CompileEvent,
    GraphBreakRecord,
    KVPool,
    Notice,
    RequestRecord,
    RooflineStatus,
)
from probe.contract.session import ConfigEntry, SessionData
from probe.contract.slo import slo_from_dict
from workloads.atomic import write_atomic
from workloads.errors import TraceError
from workloads.rows import shown
from workloads.textio import JsonProblem, parse_json, read_text

SCHEMA_VERSION = 1


def environment(device) -> dict[str, Any]:
    """Where a session ran. torch is imported here, not at the top: reading a snapshot
    (`--load`, `snapshot show`) must not pay for it."""
    import torch
    import transformers
    if device.type == "cuda":
        name = torch.cuda.get_device_name(device)
    else:
        name = platform.processor() or platform.machine()
    return {"python": sys.version.split()[0], "torch": torch.__version__,
            "transformers": transformers.__version__, "device": str(device),
            "device_name": name, "cpu_count": os.cpu_count(),
            "torch_threads": torch.get_num_threads(), "platform": platform.platform()}


def session_document(data: SessionData, *, environment: dict, model: dict, trace: dict,
                     settings: dict | None = None, live: dict | None = None) -> dict[str, Any]:
    return {
        "schema_version": SCHEMA_VERSION,
        "slo": None if data.slo is None else data.slo.as_dict(),
        "environment": environment,
        "model": model,
        "trace": trace,
        "settings": settings or {},
        "configs": {cid: entry.as_dict() for cid, entry in data.configs.items()},
        "requests": [_record_dict(r) for r in data.records],
        "segments": [s.as_dict() for s in data.segments()],
        "compile_events": [asdict(e) for e in data.events],
        "graph_breaks": [asdict(b) for b in data.breaks],
        "notices": [asdict(n) for n in data.notices],
        "reference_tokens": {rid: list(tokens) for rid, tokens in data.references.items()},
        "kv_pools": {cid: asdict(pool) for cid, pool in data.kv_pools.items()},
        "live": live or {},
    }


def saved_live_parts(document: dict[str, Any], source: str = "snapshot"
                     ) -> tuple[DeviceSample | None, RooflineStatus | None]:
    """The device sample and roofline a session was saved with (None when it has none)."""
    live = document.get("live", {})
    try:
        sample, roofline = live.get("device_sample"), live.get("roofline")
        return (None if sample is None else _build(DeviceSample, sample, "live.device_sample"),
                None if roofline is None else _build(RooflineStatus, roofline, "live.roofline"))
    except _ShapeError as exc:
        raise ConfigError(f"{source}: not an infertop session: {exc}") from None


def _record_dict(record: RequestRecord) -> dict[str, Any]:
    """A record as saved: `tokens` only when they were kept (`--tokens`)."""
    raw = asdict(record)
    if raw["tokens"] is None:
        del raw["tokens"]
    else:
        raw["tokens"] = list(raw["tokens"])
    return raw


def write_json_atomic(path: str | os.PathLike, document: dict) -> Path:
    """Write to a temporary file in the same folder, then rename: never a half-written file."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    return write_atomic(path, [json.dumps(document, indent=1), "\n"])


# The sections a reader touches, and the JSON type each must have when present.
SECTIONS: dict[str, type] = {
    "environment": dict, "model": dict, "trace": dict, "settings": dict, "configs": dict,
    "requests": list, "segments": list, "compile_events": list, "graph_breaks": list,
    "notices": list, "reference_tokens": dict, "kv_pools": dict, "live": dict}
RECORD_SECTIONS = (("requests", RequestRecord), ("compile_events", CompileEvent),
                   ("graph_breaks", GraphBreakRecord), ("notices", Notice))
OPTION_NAMES = frozenset(f.name for f in fields(OptConfig))
MAX_SAVED_INT = 2 ** 53


def read_document(path: str | os.PathLike) -> dict[str, Any]:
    """The parsed snapshot, its version and its sections' types checked: ConfigError naming
    what is wrong and where (the file, its line for JSON syntax, the section)."""
    try:
        document = parse_json(read_text(Path(path)))
    except TraceError as exc:  # unreadable, a device, not UTF-8 text
        raise ConfigError(f"snapshot {exc}") from None
    except JsonProblem as exc:
        raise ConfigError(f"snapshot {exc.located(path)}: {exc}") from None
    version = document.get("schema_version") if isinstance(document, dict) else None
    if type(version) is not int or version != SCHEMA_VERSION:
        raise ConfigError(f"snapshot {path}: schema_version {shown(version)} is not supported "
                          f"(this infertop reads {SCHEMA_VERSION})")
    for section, kind in SECTIONS.items():
        if section in document and not isinstance(document[section], kind):
            raise ConfigError(f"snapshot {path}: not an infertop session: {section!r} must be a "
                              f"JSON {'object' if kind is dict else 'list'}, got "
                              f"{type(document[section]).__name__}")
    surrogate = _unpaired_surrogate(document)
    if surrogate is not None:
        raise ConfigError(f"snapshot {path}: not an infertop session: {surrogate}: holds an "
                          f"unpaired surrogate (a lone \\ud800-\\udfff escape)")
    return document


def session_data(document: dict[str, Any], source: str = "snapshot") -> SessionData:
    """Rebuild the raw records of a saved session (for --load, show and compare) from a
    read_document() result; a record of the wrong shape is a ConfigError naming it and its field."""
    try:
        configs = {cid: _config(cid, raw) for cid, raw in document.get("configs", {}).items()}
        records, events, breaks, notices = (
            tuple(_build(cls, raw, f"{section}[{index}]")
                  for index, raw in enumerate(document.get(section, [])))
            for section, cls in RECORD_SECTIONS)
        references = {rid: _value(tokens, tuple[int, ...], f"reference_tokens.{rid}")
                      for rid, tokens in document.get("reference_tokens", {}).items()}
        pools = {cid: _build(KVPool, raw, f"kv_pools.{cid}")
                 for cid, raw in document.get("kv_pools", {}).items()}
    except _ShapeError as exc:
        raise ConfigError(f"{source}: not an infertop session: {exc}") from None
    slo = slo_from_dict(document.get("slo"), f"{source}: slo")
    return SessionData(records=records, events=events, breaks=breaks,
                       configs=MappingProxyType(configs), notices=notices,
                       references=MappingProxyType(references),
                       kv_pools=MappingProxyType(pools), slo=slo)


class _ShapeError(ValueError):
    """A value of a saved session that is not what the records hold; the message says where."""


def _config(config_id: str, raw: Any) -> ConfigEntry:
    where = f"configs.{config_id}"
    if not isinstance(raw, dict):
        raise _ShapeError(f"{where}: expected an object, got {type(raw).__name__}")
    try:
        options = OptConfig(**{k: v for k, v in raw.items() if k in OPTION_NAMES})
    except ConfigError as exc:
        raise _ShapeError(f"{where}: {exc}") from None
    notes = _value(raw.get("notes", []), tuple[str, ...], f"{where}.notes")
    return ConfigEntry(config_id, options, notes)


def _build(cls: type, raw: Any, where: str) -> Any:
    """One record from its saved dict: every field of `cls` checked against its annotation;
    unknown keys (from a newer infertop) are ignored, a missing field without a default is not."""
    if not isinstance(raw, dict):
        raise _ShapeError(f"{where}: expected an object, got {type(raw).__name__}")
    hints = _hints(cls)
    values = {}
    for field in fields(cls):
        if field.name in raw:
            values[field.name] = _value(raw[field.name], hints[field.name], f"{where}.{field.name}")
        elif field.default is MISSING and field.default_factory is MISSING:
            raise _ShapeError(f"{where}: field {field.name!r} is missing")
    return cls(**values)


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
        elif _is(value, kind):
            return value
    raise _ShapeError(f"{where}: expected {_describe(hint)}, got {shown(value)}")


def _is(value: Any, kind: Any) -> bool:
    if kind is float:  # a whole number is a number too; NaN and infinities are not figures
        return _is(value, int) or (isinstance(value, float) and math.isfinite(value))
    if kind is int:  # bounded: larger is no count or byte size, and overflows numpy's int64
        return isinstance(value, int) and not isinstance(value, bool) and abs(value) <= MAX_SAVED_INT
    return isinstance(value, kind)


def _describe(hint: Any) -> str:
    names = {float: "a finite number", int: "a whole number", str: "a string", type(None): "null"}
    return " or ".join("a list" if typing.get_origin(k) is tuple else names.get(k, str(k))
                       for k in _kinds(hint))


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
