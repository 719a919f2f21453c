"""What `infertop serve` refuses before a request reaches the engine (asks.py), and where
`--from` starts (from_file.py): values only, no server."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from probe.common.errors import BadInput
from probe.server.asks import ApiError, completion_body, parse_json
from probe.server.from_file import read_start
from probe.server.seam import Limits

LIMITS = Limits(model="t5-tiny", max_prompt_tokens=8, max_tokens=16, max_queue=2)


def count(prompt: str) -> int:
    return len(prompt.split())


def test_a_good_body_is_taken_as_asked():
    body = completion_body({"model": "t5-tiny", "prompt": "a b c", "max_tokens": 5,
                            "stream": True, "stream_options": {"include_usage": True},
                            "temperature": 0.0, "ignore_eos": True}, LIMITS, count)
    assert (body.prompt_tokens, body.max_tokens, body.stream, body.include_usage) == (3, 5, True,
                                                                                     True)
    assert completion_body({"model": "t5-tiny", "prompt": ["x"]}, LIMITS, count).max_tokens == 16


def test_chat_messages_are_joined_into_one_input():
    body = completion_body({"model": "t5-tiny", "messages": [
        {"role": "system", "content": "s"}, {"role": "user", "content": "u"}]}, LIMITS, count,
        chat=True)
    assert body.prompt == "system: s\nuser: u"


@pytest.mark.parametrize("fields, param", [
    ({"model": None}, "model"), ({"model": "t5-huge"}, "model"), ({"prompt": None}, "prompt"),
    ({"prompt": ["a", "b"]}, "prompt"), ({"prompt": "1 2 3 4 5 6 7 8 9"}, "prompt"),
    ({"max_tokens": 0}, "max_tokens"), ({"max_tokens": 17}, "max_tokens"),
    ({"max_tokens": True}, "max_tokens"), ({"max_tokens": 1.5}, "max_tokens"),
    ({"n": 2}, "n"), ({"stream": 1}, "stream"), ({"stream_options": []}, "stream_options"),
    ({"stream_options": {"include_usage": "yes"}}, "stream_options.include_usage"),
])
def test_each_bad_field_is_named(fields, param):
    body = {"model": "t5-tiny", "prompt": "a b", **fields}
    with pytest.raises(ApiError) as caught:
        completion_body({k: v for k, v in body.items() if v is not None}, LIMITS, count)
    assert caught.value.status == 400 and caught.value.body()["error"]["param"] == param


@given(st.binary(max_size=64))
def test_any_body_is_an_object_or_a_400(raw):
    try:
        assert isinstance(parse_json(raw), dict)
    except ApiError as exc:
        assert exc.status == 400 and exc.body()["error"]["type"] == "invalid_request_error"


def test_from_takes_tunes_choice_and_a_sessions_last_config(tmp_path):
    tune = tmp_path / "tune.json"
    tune.write_text(json.dumps({"trials": [], "final": {
        "trial": 3, "options": {"compile": "default", "batching": "continuous"},
        "settings": {"max_batch": 16}}}))
    start = read_start(str(tune))
    assert start.options.compile == "default" and start.settings == {"max_batch": 16}
    session = tmp_path / "s.json"
    session.write_text(json.dumps({"requests": [{"config_id": "c1"}, {"config_id": "c2"}],
                                   "configs": {"c1": {"batching": "off"},
                                               "c2": {"batching": "dynamic", "label": "x"}},
                                   "settings": {"max_batch": 4, "batch_window_ms": 20.0}}))
    start = read_start(str(session))
    assert start.options.batching == "dynamic"
    assert start.settings == {"max_batch": 4, "batch_window_ms": 20.0}


@pytest.mark.parametrize("text, says", [
    ("[1]", "neither"), ("{", "not JSON"), ('{"trials": [], "final": null}', "chose no config"),
    ('{"requests": [], "configs": {}}', "served no request"),
    ('{"trials": [], "final": {"options": {"compile": "fast"}}}', "compile"),
])
def test_from_refuses_what_it_cannot_start_from_in_one_line(tmp_path, text, says):
    path = tmp_path / "bad.json"
    path.write_text(text)
    with pytest.raises(BadInput, match=says) as caught:
        read_start(str(path))
    assert "\n" not in str(caught.value)
