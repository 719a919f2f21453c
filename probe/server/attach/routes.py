"""The attach endpoints, in the server's Starlette app behind its API key:

- `POST /infertop/v1/attach` → `{"link": ID, "steering": bool}`: a new link; the first steers.
- `GET /infertop/v1/events?link=ID&after=N&wait=S` → `{"events": [{"seq": n, "event": {...}}]}`:
  the link's events numbered above N (those up to N are let go), waiting up to S seconds
  (at most MAX_WAIT_S) for one: a long poll. 404 once the link was dropped.
- `POST /infertop/v1/asks` `{"link": ID, "ask": {"kind": ..., ...}}` → 202: carried out if the
  link steers; a watcher hears a Role saying it was refused.
- `POST /infertop/v1/detach` `{"link": ID}` → 204: the dashboard left; it holds nothing.
- `GET /infertop/v1/session?link=ID` → the served session so far, as `--out` will hold it:
  any attached dashboard (`s`) writes it on its own machine; 503 while the engine loads.

A long poll rather than server-sent events: one request a batch, so a dashboard behind any
proxy works, and a dropped fetch is fetched again by its number. Torch-free."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Sequence

from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from probe.server.attach.board import Held
from probe.server.attach.hub import Hub
from probe.server.attach.wire import WireError, decode_ask

PREFIX = "/infertop/v1"
MAX_WAIT_S = 10.0
CHECK_S = 0.05              # how often a long poll looks for an event
DRAINING_WAIT_S = 0.5       # a long poll's wait once the server is not ready (drains)
MAX_ASK_BYTES = 64 * 1024

def attach_routes(hub: Hub, keyed: Sequence[Middleware] = ()) -> list[Route]:
    """`keyed`: the app's API-key check, run before each endpoint."""
    async def attach(request: Request) -> Response:
        link_id, steering = hub.attach()
        return JSONResponse({"link": link_id, "steering": steering})

    async def events(request: Request) -> Response:
        link_id = request.query_params.get("link", "")
        try:
            after = int(request.query_params.get("after", "0"))
            wait = min(max(float(request.query_params.get("wait", "5")), 0.0), MAX_WAIT_S)
        except ValueError:
            return _error(400, "after must be an integer and wait a number of seconds")
        # a stopping server waits for the requests it holds: a long poll there is short
        if hub.host.state != "ready":
            wait = min(wait, DRAINING_WAIT_S)
        deadline = asyncio.get_running_loop().time() + wait
        while True:
            held = hub.board.fetch(link_id, after)
            if held is None:
                return _error(404, "no such link: it was dropped (no fetch for a few "
                                   "seconds) or never attached; attach again")
            if held or asyncio.get_running_loop().time() >= deadline:
                return Response(_batch(held), media_type="application/json")
            await asyncio.sleep(CHECK_S)

    async def asks(request: Request) -> Response:
        body = await _small_json(request)
        if isinstance(body, Response):
            return body
        link_id = body.get("link")
        if not isinstance(link_id, str) or not hub.board.known(link_id):
            return _error(404, "no such link: attach again")
        try:
            ask = decode_ask(body.get("ask"))
        except WireError as exc:
            return _error(400, str(exc))
        hub.board.touch(link_id)
        hub.ask(link_id, ask)
        return JSONResponse({}, status_code=202)

    async def detach(request: Request) -> Response:
        body = await _small_json(request)
        if isinstance(body, Response):
            return body
        if isinstance(body.get("link"), str):
            hub.board.detach(body["link"])
        return Response(status_code=204)

    async def session(request: Request) -> Response:
        link_id = request.query_params.get("link", "")
        if not hub.board.known(link_id):
            return _error(404, "no such link: attach again")
        hub.board.touch(link_id)
        document = await asyncio.to_thread(hub.session_document)
        if document is None:
            return _error(503, "the engine has not loaded yet")
        return JSONResponse(document)

    return [Route(f"{PREFIX}/{endpoint.__name__}", endpoint, methods=[method],
                  middleware=keyed)
            for endpoint, method in ((attach, "POST"), (session, "GET"), (events, "GET"),
                                     (asks, "POST"), (detach, "POST"))]


def _batch(held: list[Held]) -> bytes:
    return (b'{"events":['
            + b",".join(b'{"seq":%d,"event":%s}' % (h.seq, h.json) for h in held) + b"]}")


def _error(status: int, message: str) -> JSONResponse:
    return JSONResponse({"error": {"message": message, "code": status}}, status_code=status)


async def _small_json(request: Request) -> dict | Response:
    body = b""
    async for chunk in request.stream():
        body += chunk
        if len(body) > MAX_ASK_BYTES:
            return _error(413, f"the body passes {MAX_ASK_BYTES} bytes")
    try:
        doc = json.loads(body)
    except ValueError:
        return _error(400, "the body is not JSON")
    return doc if isinstance(doc, dict) else _error(400, "the body must be a JSON object")
