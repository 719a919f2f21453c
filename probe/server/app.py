"""The HTTP API, OpenAI's schema: POST /v1/completions (the prompt is the encoder's input),
POST /v1/chat/completions (the messages joined into one input), GET /v1/models, GET /health
(ready once the configuration is warm), GET /metrics (the exporter's Prometheus names).

Starlette on uvicorn: a maintained ASGI framework and server that give streaming responses
with client-disconnect detection, graceful shutdown with a deadline and slow-client timeouts,
all of which `http.server` lacks; Starlette rather than FastAPI because the request bodies are
checked here field by field (asks.py) to answer OpenAI's error body, not FastAPI's.

Each request carries an id: the client's `X-Request-Id` if it sent one (a load generator joins
its records with the session's by it), else one made here; it is the session record's id and
is echoed in the reply's `X-Request-Id` header and body `id`. The engine always decodes
`max_tokens` tokens (finish_reason "length"), as load generators ask with ignore_eos."""

from __future__ import annotations

import asyncio
import functools
import hmac
import json
import time
import uuid
from typing import AsyncIterator

from starlette.applications import Starlette
from starlette.datastructures import Headers
from starlette.middleware import Middleware
from starlette.requests import ClientDisconnect, Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route
from starlette.types import ASGIApp, Receive, Scope, Send

from probe.server.asks import (
    MAX_BODY_BYTES,
    ApiError,
    CompletionBody,
    body_too_large,
    completion_body,
    parse_json,
)
from probe.server.attach.hub import Hub
from probe.server.attach.routes import attach_routes
from probe.server.seam import STOPPED, Ask, Done, Refused, ServedEngine, Tokens

BODY_TIMEOUT_S = 30.0       # a client that sends its body slower than this is cut off
MAX_REQUEST_ID = 128
POLL_DISCONNECT_S = 0.5     # how often a non-streaming request checks its client is there
REPLACEMENT = "\ufffd"      # what a byte-level tokenizer decodes an incomplete character to


def make_app(engine: ServedEngine, *, api_key: str | None = None,
             hub: Hub | None = None) -> Starlette:
    """`hub`: the attach endpoints too (dashboards watching and steering this server), behind
    the same key. Every endpoint but /health asks for the key: the routes' own middleware, so
    that a path or method that no route takes is still 404 or 405."""
    api = _Api(engine)
    keyed = [Middleware(RequireKey, key=api_key)] if api_key else []
    attach = [] if hub is None else attach_routes(hub, keyed)
    return Starlette(routes=[*attach,
        Route("/v1/completions", functools.partial(api.complete, chat=False), methods=["POST"],
              middleware=keyed),
        Route("/v1/chat/completions", functools.partial(api.complete, chat=True),
              methods=["POST"], middleware=keyed),
        Route("/v1/models", api.models, methods=["GET"], middleware=keyed),
        Route("/health", api.health, methods=["GET"]),
        Route("/metrics", api.metrics, methods=["GET"], middleware=keyed),
    ])


class RequireKey:
    """ASGI middleware: the request's `Authorization: Bearer KEY`, compared in constant time,
    or OpenAI's 401 before the endpoint runs."""

    def __init__(self, app: ASGIApp, key: str) -> None:
        self.app, self.key = app, key.encode()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        scheme, _, token = Headers(scope=scope).get("authorization", "").partition(" ")
        if scheme.lower() == "bearer" and hmac.compare_digest(token.strip().encode(), self.key):
            await self.app(scope, receive, send)
            return
        denied = ApiError(401, "a valid API key is required (Authorization: Bearer KEY)", None,
                          "invalid_api_key", "authentication_error")
        await error_response(denied)(scope, receive, send)


def error_response(error: ApiError, headers: dict[str, str] | None = None) -> JSONResponse:
    return JSONResponse(error.body(), status_code=error.status, headers=headers)


class _Api:
    def __init__(self, engine: ServedEngine) -> None:
        self.engine = engine

    async def health(self, request: Request) -> Response:
        state = self.engine.state
        return JSONResponse({"status": state}, status_code=200 if state == "ready" else 503)

    async def metrics(self, request: Request) -> Response:
        body = await asyncio.to_thread(self.engine.metrics)
        return Response(body, media_type="text/plain; version=0.0.4; charset=utf-8")

    async def models(self, request: Request) -> Response:
        return JSONResponse({"object": "list", "data": [
            {"id": self.engine.limits.model, "object": "model", "created": 0,
             "owned_by": "infertop", "max_model_len": self.engine.limits.max_prompt_tokens}]})

    async def complete(self, request: Request, *, chat: bool) -> Response:
        arrived_s = time.perf_counter()    # its queue time starts here, before its body is read
        request_id = request.headers.get("x-request-id") or f"cmpl-{uuid.uuid4().hex}"
        headers = {"X-Request-Id": request_id}
        queue: asyncio.Queue[Tokens | Done] = asyncio.Queue()
        loop = asyncio.get_running_loop()

        def listener(item: Tokens | Done) -> None:      # from the engine's thread
            loop.call_soon_threadsafe(queue.put_nowait, item)

        try:
            _check_request_id(request_id)
            body = completion_body(parse_json(await _read_body(request)), self.engine.limits,
                                   self.engine.count_prompt, chat=chat)
            if self.engine.in_flight(request_id):
                raise ApiError(400, f"X-Request-Id {request_id!r} was already used in this "
                                    f"session",
                               "X-Request-Id", "duplicate_request_id")
            self.engine.submit(Ask(request_id, body.prompt, body.prompt_tokens, body.max_tokens,
                                   body.stream, arrived_s), listener)
        except ApiError as exc:
            return error_response(exc, {**headers, **({"Connection": "close"}
                                                       if exc.code == "body_too_large" else {})})
        except Refused as exc:
            more = {} if exc.retry_after_s is None else {"Retry-After": str(exc.retry_after_s)}
            kind = "rate_limit_exceeded" if exc.status == 429 else "unavailable"
            return error_response(ApiError(exc.status, exc.message, None, kind, kind),
                                  {**headers, **more})
        except ClientDisconnect:
            return Response(status_code=400)
        reply = _Reply(self.engine, request_id, body, chat)
        if body.stream:
            return StreamingResponse(self._stream(reply, queue), headers=headers,
                                     media_type="text/event-stream")
        try:
            done = await self._until_done(request, queue)
        except asyncio.CancelledError:      # a drain past its deadline, a second signal
            self.engine.cancel(request_id, STOPPED)
            raise
        if done is None:
            self.engine.cancel(request_id)
            return Response(status_code=499)    # nobody is there to read it
        if not done.record.ok:
            return error_response(_server_error(done), headers)
        return JSONResponse(reply.whole(done), headers=headers)

    async def _until_done(self, request: Request, queue: asyncio.Queue) -> Done | None:
        """The request's record, or None once its client has gone."""
        while True:
            try:
                item = await asyncio.wait_for(queue.get(), POLL_DISCONNECT_S)
            except TimeoutError:
                if await request.is_disconnected():
                    return None
                continue
            if isinstance(item, Done):
                return item

    async def _stream(self, reply: _Reply, queue: asyncio.Queue) -> AsyncIterator[str]:
        """One event per token as the engine makes it, the last with its finish_reason, the
        usage if asked, then [DONE]. A client that leaves cancels this generator (Starlette
        watches the socket): the engine takes the request out at its next step."""
        why = None          # the client left (the generator closed), unless the server stops
        try:
            while True:
                item = await queue.get()
                if isinstance(item, Tokens):
                    for piece in reply.pieces(item.ids):
                        yield _event(reply.chunk(piece))
                    continue
                if not item.record.ok:
                    yield _event(_server_error(item).body())
                else:
                    yield _event(reply.chunk(reply.rest(), finish="length"))
                    if reply.body.include_usage:
                        yield _event(reply.usage_chunk(item))
                yield "data: [DONE]\n\n"
                return
        except asyncio.CancelledError:
            why = STOPPED
            raise
        finally:
            self.engine.cancel(reply.request_id, why)    # nothing if it was served


class _Reply:
    """The reply's JSON, OpenAI's shapes for completions and chat completions."""

    def __init__(self, engine: ServedEngine, request_id: str, body: CompletionBody,
                 chat: bool) -> None:
        self.engine, self.request_id, self.body, self.chat = engine, request_id, body, chat
        self.created = int(time.time())
        self._ids: list[int] = []
        self._text = ""
        self._first = True

    def _head(self, kind: str) -> dict:
        return {"id": self.request_id, "object": kind, "created": self.created,
                "model": self.body.model}

    def pieces(self, ids: tuple[int, ...]) -> list[str]:
        """Each token's text: the whole text so far decoded again, less what was sent (a
        SentencePiece token's leading space shows only in context). A character split over
        byte tokens decodes as U+FFFD until its last byte comes, so a trailing U+FFFD is held
        back, as vLLM's incremental detokenizer does, and sent with the byte that completes it."""
        pieces = []
        for token in ids:
            self._ids.append(token)
            text = self.engine.decode(tuple(self._ids)).rstrip(REPLACEMENT)
            pieces.append(text[len(self._text):] if text.startswith(self._text) else "")
            self._text = text
        return pieces

    def rest(self) -> str:
        """What the whole text holds beyond what was sent: bytes that never completed a
        character, sent with the last chunk so the stream adds up to the whole reply."""
        text = self.engine.decode(tuple(self._ids))
        return text[len(self._text):] if text.startswith(self._text) else ""

    def chunk(self, piece: str, finish: str | None = None) -> dict:
        if self.chat:
            delta: dict = {"content": piece} if piece or not finish else {}
            if self._first and not finish:
                delta["role"] = "assistant"
                self._first = False
            return {**self._head("chat.completion.chunk"),
                    "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}
        return {**self._head("text_completion"),
                "choices": [{"index": 0, "text": piece, "logprobs": None,
                             "finish_reason": finish}]}

    def usage_chunk(self, done: Done) -> dict:
        kind = "chat.completion.chunk" if self.chat else "text_completion"
        return {**self._head(kind), "choices": [], "usage": _usage(done)}

    def whole(self, done: Done) -> dict:
        text = self.engine.decode(done.record.tokens or ())
        choice: dict = ({"index": 0, "message": {"role": "assistant", "content": text},
                         "finish_reason": "length"} if self.chat else
                        {"index": 0, "text": text, "logprobs": None, "finish_reason": "length"})
        return {**self._head("chat.completion" if self.chat else "text_completion"),
                "choices": [choice], "usage": _usage(done)}


def _usage(done: Done) -> dict:
    record = done.record
    return {"prompt_tokens": record.input_tokens, "completion_tokens": record.output_tokens,
            "total_tokens": record.input_tokens + record.output_tokens}


def _server_error(done: Done) -> ApiError:
    return ApiError(500, f"the engine failed this request: {done.record.error}", None,
                    "engine_error", "server_error")


def _event(value: dict) -> str:
    return f"data: {json.dumps(value, separators=(',', ':'))}\n\n"


def _check_request_id(request_id: str) -> None:
    if len(request_id) > MAX_REQUEST_ID or not request_id.isprintable():
        raise ApiError(400, f"X-Request-Id must be at most {MAX_REQUEST_ID} printable "
                            f"characters", "X-Request-Id", "invalid_value")


async def _read_body(request: Request) -> bytes:
    """The body, refused past MAX_BODY_BYTES (its declared length first, then as it comes)
    or when it comes slower than BODY_TIMEOUT_S."""
    declared = request.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > MAX_BODY_BYTES:
        raise body_too_large(int(declared))
    chunks, size = [], 0
    try:
        async with asyncio.timeout(BODY_TIMEOUT_S):
            async for chunk in request.stream():
                size += len(chunk)
                if size > MAX_BODY_BYTES:
                    raise body_too_large(size)
                chunks.append(chunk)
    except TimeoutError:
        raise ApiError(408, f"the body did not arrive within {BODY_TIMEOUT_S:g} s", None,
                       "timeout") from None
    return b"".join(chunks)
