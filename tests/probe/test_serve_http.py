"""`infertop serve` as a client sees it: one t5-tiny server (continuous batching, 2 slots, a
queue of 2) started on a free loopback port for the whole file, spoken to with the official
`openai` client (and raw HTTP for what that client cannot send). The last test stops it with
SIGTERM under load and reads the session it saved: every request that got a 200 is there,
with the tokens its usage said."""

from __future__ import annotations

import http.client
import json
import re
import signal
import subprocess
import threading
import time
import urllib.request
from pathlib import Path

import openai
import pytest

from tests.probe.serve_child import serving

MODEL = "t5-tiny"
LONG = 480          # tokens: a stream that holds its slot while a test looks
pytestmark = pytest.mark.timeout(300)


class Server:
    def __init__(self, child: subprocess.Popen, port: int, out: Path) -> None:
        self.child, self.port, self.out = child, port, out
        self.url = f"http://127.0.0.1:{port}"
        self.ok: dict[str, dict] = {}       # request id → usage, for every 200

    def client(self, **kwargs) -> openai.OpenAI:
        return openai.OpenAI(base_url=self.url + "/v1", api_key="unused", max_retries=0,
                             timeout=120, **kwargs)

    def metric(self, name: str) -> float:
        with urllib.request.urlopen(self.url + "/metrics", timeout=30) as response:
            text = response.read().decode()
        found = re.findall(rf"^{re.escape(name)} (\S+)$", text, re.M)
        return sum(float(v) for v in found)

    def wait_metric(self, name: str, at_least: float, seconds: float = 60) -> float:
        deadline = time.monotonic() + seconds
        while True:
            value = self.metric(name)
            if value >= at_least or time.monotonic() > deadline:
                return value
            time.sleep(0.05)


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    out = tmp_path_factory.mktemp("serve") / "served.json"
    with serving(["--model", MODEL, "--device", "cpu", "--opt", "batching=continuous",
                  "--max-batch", "2", "--max-queue", "2", "--max-input", "64",
                  "--max-output", "512", "--drift-every", "0", "--threads", "1",
                  "--drain-s", "60", "--out", str(out)]) as (child, port):
        yield Server(child, port, out)


def _complete(server: Server, request_id: str, max_tokens: int = 4, **kwargs):
    raw = server.client().completions.with_raw_response.create(
        model=MODEL, prompt="translate English to German: the house is small",
        max_tokens=max_tokens, extra_headers={"X-Request-Id": request_id}, **kwargs)
    completion = raw.parse()
    server.ok[request_id] = completion.usage.model_dump()
    return raw, completion


def test_a_completion_answers_with_its_usage_and_echoes_the_request_id(server):
    raw, completion = _complete(server, "plain-1", max_tokens=5)
    assert raw.headers["x-request-id"] == "plain-1" and completion.id == "plain-1"
    assert completion.usage.completion_tokens == 5
    assert completion.usage.prompt_tokens > 0
    assert completion.choices[0].finish_reason == "length"
    assert server.client().models.list().data[0].id == MODEL
    with pytest.raises(openai.BadRequestError) as caught:     # one record an id
        _complete(server, "plain-1")
    assert caught.value.body["param"] == "X-Request-Id"


def test_a_stream_is_one_chunk_per_token_then_the_usage(server):
    stream = server.client().completions.create(
        model=MODEL, prompt="summarize: a long day at the office", max_tokens=6, stream=True,
        stream_options={"include_usage": True}, extra_headers={"X-Request-Id": "stream-1"})
    chunks = list(stream)
    tokens = [c for c in chunks if c.choices and c.choices[0].finish_reason is None]
    finals = [c for c in chunks if c.choices and c.choices[0].finish_reason == "length"]
    usage = [c.usage for c in chunks if c.usage is not None]
    assert len(tokens) == 6 and len(finals) == 1 and len(usage) == 1
    assert usage[0].completion_tokens == 6
    server.ok["stream-1"] = usage[0].model_dump()


def test_a_chat_completion_joins_the_messages(server):
    chat = server.client().chat.completions.create(
        model=MODEL, max_tokens=3, extra_headers={"X-Request-Id": "chat-1"},
        messages=[{"role": "system", "content": "be brief"}, {"role": "user", "content": "hi"}])
    assert chat.usage.completion_tokens == 3
    server.ok["chat-1"] = chat.usage.model_dump()


@pytest.mark.parametrize("fields, param", [
    ({"model": "t5-huge"}, "model"),
    ({"max_tokens": 0}, "max_tokens"),
    ({"max_tokens": 513}, "max_tokens"),
    ({"max_tokens": "8"}, "max_tokens"),
    ({"prompt": 12}, "prompt"),
    ({"prompt": "word " * 200}, "prompt"),
    ({"stream": "yes"}, "stream"),
])
def test_a_bad_field_is_a_400_naming_it(server, fields, param):
    body = {"model": MODEL, "prompt": "hello", "max_tokens": 4, **fields}
    with pytest.raises(openai.BadRequestError) as caught:
        server.client().completions.create(**body)
    assert caught.value.status_code == 400
    assert caught.value.body["param"] == param, caught.value.body


def _post(server: Server, body: bytes, headers: dict | None = None) -> tuple[int, dict]:
    connection = http.client.HTTPConnection("127.0.0.1", server.port, timeout=60)
    connection.request("POST", "/v1/completions", body=body,
                       headers={"Content-Type": "application/json", **(headers or {})})
    response = connection.getresponse()
    answer = response.status, json.loads(response.read() or b"{}")
    connection.close()
    return answer


def test_malformed_json_and_a_body_over_the_limit_are_400s(server):
    status, body = _post(server, b'{"model": "t5-tiny", "prompt": ')
    assert status == 400 and body["error"]["code"] == "invalid_json"
    # declared over the limit: refused before it is read (sending it all would race the
    # server's close of the connection)
    connection = http.client.HTTPConnection("127.0.0.1", server.port, timeout=60)
    connection.putrequest("POST", "/v1/completions")
    connection.putheader("Content-Type", "application/json")
    connection.putheader("Content-Length", str(2 << 20))
    connection.endheaders(b'{"model": "t5-tiny", "prompt": "')
    response = connection.getresponse()
    assert response.status == 400
    assert json.loads(response.read())["error"]["code"] == "body_too_large"
    connection.close()


def _open_stream(server: Server, request_id: str) -> tuple[http.client.HTTPConnection, object]:
    """A long stream, read until its first token: it holds a slot from then on."""
    connection = http.client.HTTPConnection("127.0.0.1", server.port, timeout=120)
    connection.request("POST", "/v1/completions", headers={
        "Content-Type": "application/json", "X-Request-Id": request_id},
        body=json.dumps({"model": MODEL, "prompt": "a b c", "max_tokens": LONG,
                         "stream": True}))
    response = connection.getresponse()
    assert response.status == 200
    assert response.readline().startswith(b"data: ")
    return connection, response


def test_a_full_queue_is_a_429_and_a_client_that_leaves_frees_its_slot(server):
    failed_before = server.metric('infertop_requests_total{config="c1",status="failed"}')
    held = [_open_stream(server, f"hold-{i}") for i in range(2)]     # both slots
    waiting = [threading.Thread(target=_complete, args=(server, f"queued-{i}")) for i in range(2)]
    for thread in waiting:
        thread.start()
    assert server.wait_metric("infertop_queue_depth", 2) >= 2
    with pytest.raises(openai.RateLimitError) as caught:
        server.client().completions.create(model=MODEL, prompt="hello", max_tokens=2)
    assert caught.value.response.headers["retry-after"] == "1"
    for connection, _ in held:      # both clients leave mid-stream
        connection.sock.close()
        connection.close()
    for thread in waiting:
        thread.join(timeout=120)
    assert set(server.ok) >= {"queued-0", "queued-1"}
    failed = server.wait_metric('infertop_requests_total{config="c1",status="failed"}',
                                failed_before + 2)
    assert failed == failed_before + 2


def test_sigterm_drains_and_the_session_holds_every_request_that_got_a_200(server):
    streams = [_open_stream(server, f"drain-{i}") for i in range(2)]
    server.child.send_signal(signal.SIGTERM)
    for i, (connection, response) in enumerate(streams):
        events = [line for line in response.read().decode().splitlines() if line]
        assert events[-1] == "data: [DONE]"
        assert len([e for e in events if '"finish_reason":null' in e]) == LONG - 1
        connection.close()
        server.ok[f"drain-{i}"] = {"completion_tokens": LONG}
    assert server.child.wait(timeout=120) == 128 + signal.SIGTERM
    with pytest.raises(OSError):    # it stopped accepting
        urllib.request.urlopen(server.url + "/health", timeout=5)
    records = {r["id"]: r for r in json.loads(server.out.read_text())["requests"]}
    for request_id, usage in server.ok.items():
        record = records[request_id]
        assert record["error"] is None
        assert record["output_tokens"] == usage["completion_tokens"]
        if "prompt_tokens" in usage:
            assert record["input_tokens"] == usage["prompt_tokens"]
    cancelled = [r for r in records.values() if r["id"].startswith("hold-")]
    assert [r["error"].startswith("cancelled") for r in cancelled] == [True, True]


def test_the_served_session_becomes_a_trace_that_replay_offers_again(server, tmp_path, capsys):
    from infertop.cli import main

    trace, again = tmp_path / "served.jsonl", tmp_path / "again.json"
    assert main(["trace", "from-session", str(server.out), "-o", str(trace)]) == 0
    assert main(["replay", "--model", MODEL, "--device", "cpu", "--trace", str(trace),
                 "--max-input", "64", "--max-output", "512", "--speed", "1000",
                 "--requests", "5",     # the short ones: the drain's long streams come last
                 "--drift-every", "0", "--opt", "decode=fullgraph", "--out", str(again)]) == 0
    capsys.readouterr()
    served = sorted((r for r in json.loads(server.out.read_text())["requests"]
                     if r["error"] is None), key=lambda r: (r["arrival_s"], r["seq"]))[:5]
    replayed = json.loads(again.read_text())["requests"]
    assert [(r["id"], r["input_tokens"], r["output_tokens"]) for r in replayed] == [
        (r["id"], r["input_tokens"], r["output_tokens"]) for r in served]
    offsets = [[(r["arrival_s"] - rs[0]["arrival_s"]) / scale for r in rs]
               for rs, scale in ((served, 1000.0), (replayed, 1.0))]
    assert all(abs(a - b) < 1e-4 for a, b in zip(*offsets))
