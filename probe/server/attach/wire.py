"""The attach channel's values as JSON: each `Ask` and `Heard` (probe/contract/engine_link.py)
in a tagged envelope, `{"kind": "SetOptions", ...its fields}`, checked field by field on the
way in by pydantic's TypeAdapter over the frozen dataclasses themselves (no second schema to
keep in step). The tag is needed: an untagged union would read ABStart as SetOptions, the
same shape.

A LiveView's `diagnosis` and `checklist` are typed loosely in the contract (their types live in
probe/analysis), so they travel under their own adapters and come back as the
SegmentDiagnosis and ChecklistItem values they were: decode(encode(x)) == x. Floats keep
their infinities (JSON's `Infinity`, as Python's json reads and writes it). Torch-free."""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any, get_args

from pydantic import TypeAdapter, ValidationError

from probe.analysis.checklist import ChecklistItem
from probe.analysis.diagnosis import SegmentDiagnosis
from probe.common.errors import BadInput
from probe.contract.engine_link import Ask, Heard
from probe.contract.live import LiveView
from probe.contract.protocol import ArmLive, EngineLive

ASK_KINDS: dict[str, type] = {kind.__name__: kind for kind in get_args(Ask)}
HEARD_KINDS: dict[str, type] = {kind.__name__: kind for kind in get_args(Heard)}
_WITH_VIEW = (EngineLive, ArmLive)      # the Heard kinds that carry a LiveView as `view`


class WireError(BadInput):
    """A document that is not an Ask or a Heard: unknown kind, or a field that does not fit."""


_ADAPTERS: dict[Any, TypeAdapter] = {}


def _adapter(kind: Any) -> TypeAdapter:
    if kind not in _ADAPTERS:
        _ADAPTERS[kind] = TypeAdapter(kind)
    return _ADAPTERS[kind]


def encode_view(view: LiveView) -> dict:
    plain = replace(view, diagnosis=None, checklist=())
    return {**_adapter(LiveView).dump_python(plain, mode="json"),
            "diagnosis": _adapter(SegmentDiagnosis | None).dump_python(view.diagnosis,
                                                                       mode="json"),
            "checklist": _adapter(tuple[ChecklistItem, ...]).dump_python(view.checklist,
                                                                         mode="json")}


def decode_view(doc: Any) -> LiveView:
    if not isinstance(doc, dict):
        raise WireError(f"a live view must be an object, not {type(doc).__name__}")
    plain = {**doc, "diagnosis": None, "checklist": ()}
    try:
        view = _adapter(LiveView).validate_python(plain)
        return replace(
            view,
            diagnosis=_adapter(SegmentDiagnosis | None).validate_python(doc.get("diagnosis")),
            checklist=_adapter(tuple[ChecklistItem, ...]).validate_python(
                doc.get("checklist", ())))
    except ValidationError as exc:
        raise WireError(f"a live view that does not fit: {_first_error(exc)}") from None


def _encode(value: Any, kinds: dict[str, type]) -> dict:
    kind = type(value).__name__
    if kinds.get(kind) is not type(value):
        raise TypeError(f"{kind} is not one of {', '.join(kinds)}")
    if isinstance(value, _WITH_VIEW):
        return {"kind": kind, "view": encode_view(value.view)}
    return {"kind": kind, **_adapter(type(value)).dump_python(value, mode="json")}


def _decode(doc: Any, kinds: dict[str, type], what: str) -> Any:
    if not isinstance(doc, dict) or not isinstance(doc.get("kind"), str):
        raise WireError(f"{what}: an object with a string `kind` is expected")
    fields = {k: v for k, v in doc.items() if k != "kind"}
    kind = kinds.get(doc["kind"])
    if kind is None:
        raise WireError(f"{what}: unknown kind {doc['kind']!r} (one of {', '.join(kinds)})")
    if kind in _WITH_VIEW:
        return kind(decode_view(fields.get("view")))
    try:
        return _adapter(kind).validate_python(fields)
    except ValidationError as exc:
        raise WireError(f"{what} {doc['kind']}: {_first_error(exc)}") from None


def _first_error(exc: ValidationError) -> str:
    error = exc.errors()[0]
    where = ".".join(str(part) for part in error["loc"]) or "(the value)"
    return f"{where}: {error['msg']}"


def encode_ask(ask: Ask) -> dict:
    return _encode(ask, ASK_KINDS)


def decode_ask(doc: Any) -> Ask:
    return _decode(doc, ASK_KINDS, "ask")


def encode_heard(heard: Heard) -> dict:
    return _encode(heard, HEARD_KINDS)


def decode_heard(doc: Any) -> Heard:
    return _decode(doc, HEARD_KINDS, "event")


def dumps(doc: Any) -> bytes:
    """JSON with infinities kept (`Infinity`: Python's json reads it back)."""
    return json.dumps(doc, separators=(",", ":")).encode()
