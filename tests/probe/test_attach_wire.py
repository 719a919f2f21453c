"""The attach channel's JSON: every Ask and every Heard comes back equal, the dashboard's
synthetic live views (each stage, its doctor's diagnosis and checklist included) among them;
a document that is not one is refused by name."""

from __future__ import annotations

import json
from typing import get_args

import pytest
from hypothesis import given
from hypothesis import strategies as st

from probe.contract.engine_link import (
    ABEnd,
    ABEnded,
    ABSplit,
    ABStart,
    Ask,
    CutOverDone,
    EngineFailed,
    EngineLive,
    EngineLoading,
    GiveUp,
    Heard,
    Pause,
    ReplayFinished,
    ResetWindow,
    Restart,
    Restarted,
    Resume,
    Role,
    SaveSnapshot,
    SetOptions,
    SetSpeed,
    SnapshotFailed,
    SnapshotSaved,
    Steer,
    StopSide,
    WarmFailed,
    WarmProgress,
    WarmSwitch,
)
from probe.contract.options import OptConfig
from probe.contract.protocol import ArmLive, ArmStarted
from probe.contract.records import CompileInProgress
from probe.server.attach.wire import (
    WireError,
    decode_ask,
    decode_heard,
    dumps,
    encode_ask,
    encode_heard,
)
from tests.tui.synthetic import STAGES, stage

FAST = OptConfig(compile="default", bucketing="on")
ASKS = (SetOptions(FAST), SetSpeed(0.5), Pause(), Resume(), ResetWindow(),
        SaveSnapshot("/tmp/s.json"), WarmSwitch(FAST), StopSide(),
        GiveUp(CompileInProgress("0/1", "forward", "r3", 1.5, 0.25, "tracing"), FAST),
        Restart(), ABStart(FAST), ABEnd(adopt=True), Steer())
HEARD = (EngineLoading("loading t5-tiny on cpu"), EngineFailed("the server went away"),
         SnapshotSaved("/tmp/s.json"), SnapshotFailed("/tmp/s.json", "No space left"),
         ReplayFinished(), Restarted(), WarmProgress("prewarming 4 shapes", 4),
         WarmFailed("compile failed"), CutOverDone(4, 2.5), ArmStarted("c2", FAST, ("note",)),
         ABSplit(4, 1.25), ABEnded("failed", "arm B died"), Role(False, "c watches"))


def through_json(doc: dict) -> dict:
    return json.loads(dumps(doc))


def test_every_kind_is_covered():
    assert {type(a) for a in ASKS} == set(get_args(Ask))
    assert {type(h) for h in HEARD} | {EngineLive, ArmLive} == set(get_args(Heard))


@pytest.mark.parametrize("ask", ASKS, ids=lambda a: type(a).__name__)
def test_an_ask_comes_back_equal(ask):
    assert decode_ask(through_json(encode_ask(ask))) == ask


@pytest.mark.parametrize("heard", HEARD, ids=lambda h: type(h).__name__)
def test_a_heard_comes_back_equal(heard):
    assert decode_heard(through_json(encode_heard(heard))) == heard


@pytest.mark.parametrize("name", STAGES)
def test_a_live_view_comes_back_equal_with_its_diagnosis_and_checklist(name):
    view = stage(name)
    for heard in (EngineLive(view), ArmLive(view)):
        back = decode_heard(through_json(encode_heard(heard)))
        assert back == heard
        assert type(back.view.diagnosis) is type(view.diagnosis)
        assert all(type(a) is type(b) for a, b in zip(back.view.checklist, view.checklist))


def test_the_tag_tells_same_shaped_asks_apart():
    assert type(decode_ask(through_json(encode_ask(ABStart(FAST))))) is ABStart


@given(st.floats(allow_nan=False), st.text())
def test_any_float_and_text_come_back(seconds, text):
    for value in (ABSplit(3, seconds), Role(True, text), SetSpeed(seconds)):
        codec = (encode_ask, decode_ask) if isinstance(value, SetSpeed) else (
            encode_heard, decode_heard)
        assert codec[1](through_json(codec[0](value))) == value


@pytest.mark.parametrize("doc, says", [
    ({"kind": "Shutdown"}, "unknown kind 'Shutdown'"),
    ({"speed": 1.0}, "string `kind`"),
    ([], "string `kind`"),
    ({"kind": "SetSpeed", "speed": "fast"}, "speed"),
    ({"kind": "SetOptions", "options": {"compile": "sometimes"}}, "options"),
])
def test_a_document_that_is_not_an_ask_is_refused_by_name(doc, says):
    with pytest.raises(WireError, match=says):
        decode_ask(doc)
