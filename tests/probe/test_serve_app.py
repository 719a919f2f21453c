"""The HTTP app against a fake engine (probe/server/seam.py's width, no torch): a fault in
one request is a 500 for it alone, /health follows the engine's state, the API key is asked
everywhere but /health. uvicorn in a thread on a free loopback port; the official client."""

from __future__ import annotations

import json
import socket
import threading
import time
import urllib.error
import urllib.request

import openai
import pytest
import uvicorn

from probe.contract.records import RequestRecord
from probe.server.app import make_app
from probe.server.seam import Ask, Done, Limits, Listener, Refused, Tokens

KEY = "s3cret"


def record(ask: Ask, error: str | None = None) -> RequestRecord:
    n = 0 if error else ask.max_tokens
    return RequestRecord(id=ask.request_id, seq=0, config_id="c1", input_tokens=ask.prompt_tokens,
                         padded_tokens=ask.prompt_tokens, output_tokens=n, arrival_s=0.0,
                         start_s=0.0, first_token_s=None, end_s=0.0, queue_ms=0.0,
                         compile_stall_ms=0.0, encoder_ms=0.0, decoder_ms=0.0, ttft_ms=None,
                         tpot_ms=None, latency_ms=0.0, kv_cache_bytes=0, kv_cache_used_bytes=0,
                         kv_self_attention_bytes=0, kv_cross_attention_bytes=0, error=error,
                         tokens=None if error else tuple(range(10, 10 + n)))


class FakeEngine:
    """Answers in a thread, as the engine's does; a prompt saying `fault` fails."""
    limits = Limits(model="fake", max_prompt_tokens=32, max_tokens=8, max_queue=4)

    def __init__(self) -> None:
        self.state = "ready"
        self.cancelled: list[str] = []

    def count_prompt(self, prompt: str) -> int:
        return len(prompt.split())

    def submit(self, ask: Ask, listener: Listener) -> None:
        if self.state != "ready":
            raise Refused(503, f"the server is {self.state}", 1)

        def answer() -> None:
            if "fault" in ask.prompt:
                listener(Done(record(ask, "RuntimeError: planted")))
                return
            if ask.stream:
                for token in range(10, 10 + ask.max_tokens):
                    listener(Tokens((token,)))
            listener(Done(record(ask)))
        threading.Thread(target=answer).start()

    def cancel(self, request_id: str, why: str | None = None) -> None:
        self.cancelled.append(request_id)

    def decode(self, ids: tuple[int, ...]) -> str:
        return " ".join(f"t{i}" for i in ids)

    def metrics(self) -> bytes:
        return b"infertop_queue_depth 0.0\n"

    def in_flight(self, request_id: str) -> bool:
        return False


@pytest.fixture(scope="module")
def served():
    engine = FakeEngine()
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    server = uvicorn.Server(uvicorn.Config(make_app(engine, api_key=KEY), log_config=None,
                                           lifespan="off"))
    server.capture_signals = lambda: __import__("contextlib").nullcontext()  # type: ignore
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    while not server.started:
        time.sleep(0.02)
    yield engine, f"http://127.0.0.1:{sock.getsockname()[1]}"
    server.should_exit = True
    thread.join(timeout=10)


def client(url: str, key: str = KEY) -> openai.OpenAI:
    return openai.OpenAI(base_url=url + "/v1", api_key=key, max_retries=0, timeout=30)


def test_a_fault_in_one_request_is_a_500_for_it_alone(served):
    engine, url = served
    with pytest.raises(openai.InternalServerError) as caught:
        client(url).completions.create(model="fake", prompt="a fault here", max_tokens=3)
    assert "planted" in caught.value.body["message"]
    ok = client(url).completions.create(model="fake", prompt="fine", max_tokens=3)
    assert ok.choices[0].text == "t10 t11 t12" and ok.usage.completion_tokens == 3


def test_the_stream_carries_each_token_and_chat_has_its_shapes(served):
    _, url = served
    chunks = list(client(url).chat.completions.create(
        model="fake", messages=[{"role": "user", "content": "hi"}], max_tokens=4, stream=True,
        stream_options={"include_usage": True}))
    pieces = [c.choices[0].delta.content for c in chunks if c.choices and
              c.choices[0].finish_reason is None]
    assert "".join(pieces) == "t10 t11 t12 t13" and len(pieces) == 4
    assert chunks[0].choices[0].delta.role == "assistant"
    assert chunks[-1].usage.completion_tokens == 4


def test_the_key_is_asked_everywhere_but_health(served):
    engine, url = served
    with pytest.raises(openai.AuthenticationError):
        client(url, key="wrong").models.list()
    with pytest.raises(urllib.error.HTTPError) as caught:
        urllib.request.urlopen(url + "/metrics", timeout=10)
    assert caught.value.code == 401
    with urllib.request.urlopen(url + "/health", timeout=10) as response:
        assert json.load(response) == {"status": "ready"}


def test_health_and_requests_wait_for_the_engine_to_be_warm(served):
    engine, url = served
    engine.state = "warming"
    try:
        with pytest.raises(urllib.error.HTTPError) as caught:
            urllib.request.urlopen(url + "/health", timeout=10)
        assert caught.value.code == 503
        with pytest.raises(openai.APIStatusError) as refused:
            client(url).completions.create(model="fake", prompt="early", max_tokens=2)
        assert refused.value.status_code == 503
    finally:
        engine.state = "ready"


class _ByteTokens:
    """A byte-level tokenizer's decode: token i is byte i, bad sequences become U+FFFD."""

    def decode(self, ids: tuple[int, ...]) -> str:
        return bytes(ids).decode("utf-8", errors="replace")


@pytest.mark.parametrize("text", ["Grüße", "日本", "a€b", "x\N{GRINNING FACE}"])
def test_a_character_split_over_tokens_streams_whole_and_adds_up(text):
    from probe.server.app import _Reply
    from probe.server.asks import CompletionBody
    body = CompletionBody(model="m", prompt="p", prompt_tokens=1, max_tokens=1, stream=True,
                          include_usage=False)
    reply = _Reply(_ByteTokens(), "r1", body, chat=False)        # type: ignore[arg-type]
    ids = tuple(text.encode())
    pieces = [piece for token in ids for piece in reply.pieces((token,))]
    pieces.append(reply.rest())
    assert "\ufffd" not in "".join(pieces)
    assert "".join(pieces) == text
