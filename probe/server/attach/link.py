"""`ServerLink`: the dashboard's EngineLink (probe/contract/engine_link.py) to a running
`infertop serve`, over its attach endpoints (routes.py). A thread of its own long-polls the
server's events and sends the asks in their order, so `send` never blocks and `poll(timeout)`
waits at most `timeout`.

A server that stops answering (refused, reset, timed out) for DEAD_AFTER_S is said once, as
EngineFailed, and the link stops there: the asks not sent yet are dropped, nothing is left
half-done on either side. A server that dropped this link (it did not fetch for a few seconds:
a suspended laptop) is attached again, as a new dashboard: it hears its role anew. A refused
key is said once and ends the link."""

from __future__ import annotations

import queue
import threading
import time
from collections import deque
from urllib.parse import urlsplit

import httpx2

from probe.common.atomic import write_json_atomic
from probe.contract.engine_link import (
    Ask,
    EngineFailed,
    EngineLive,
    Heard,
    LinkFacts,
    Role,
    SaveSnapshot,
    SnapshotFailed,
    SnapshotSaved,
)
from probe.contract.live import LiveView
from probe.server.attach.routes import PREFIX
from probe.server.attach.wire import WireError, decode_heard, encode_ask

WAIT_S = 5.0                # a long poll's wait on the server
DEAD_AFTER_S = 3.0          # no answer for this long: the server is gone
RETRY_S = 0.2               # between tries while it does not answer
CLOSE_S = 2.0               # close's bound: detach, then the thread's end
LOOPBACK = ("127.0.0.1", "localhost", "::1")


class LinkEnded(Exception):
    """The link cannot go on: why, as said to the user."""


class ServerLink:
    def __init__(self, url: str, api_key: str | None = None) -> None:
        self.url = url.rstrip("/")
        parts = urlsplit(self.url)
        self._where = parts.netloc or self.url
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self._client = httpx2.Client(base_url=self.url, headers=headers,
                                     timeout=httpx2.Timeout(WAIT_S + 10.0, connect=2.0),
                                     trust_env=parts.hostname not in LOOPBACK)
        self._heard: deque[Heard] = deque()
        self._arrived = threading.Condition()
        self._asks: queue.SimpleQueue[Ask] = queue.SimpleQueue()
        self._stop = threading.Event()
        self._link_id: str | None = None
        self._threads: list[threading.Thread] = []
        self.steering = False

    # -- EngineLink ---------------------------------------------------------------------------
    def open(self) -> None:
        if self._threads:       # opened already (to read the first view): once is enough
            return
        for target, name in ((self._events, "attach-events"), (self._sender, "attach-asks")):
            thread = threading.Thread(target=target, name=name, daemon=True)
            thread.start()
            self._threads.append(thread)

    def send(self, ask: Ask) -> None:
        if not self._stop.is_set():
            self._asks.put(ask)

    def poll(self, timeout: float) -> Heard | None:
        with self._arrived:
            if not self._heard:
                self._arrived.wait(max(timeout, 0.0))
            return self._heard.popleft() if self._heard else None

    def first_view(self, timeout: float) -> LiveView | None:
        """The server's live view, once it has sent one, left to `poll` with everything heard
        before it (the dashboard starts from it: the options it serves); None when the link
        ended or `timeout` passed first."""
        deadline = time.monotonic() + timeout
        with self._arrived:
            while True:
                views = [h.view for h in self._heard if isinstance(h, EngineLive)]
                if views:
                    return views[-1]
                left = deadline - time.monotonic()
                if left <= 0 or any(isinstance(h, EngineFailed) for h in self._heard):
                    return None
                self._arrived.wait(left)

    def _hear(self, heard: Heard) -> None:
        """Queued for `poll`; a live view replaces the one not polled yet (a dashboard that
        falls behind skips views, never another event)."""
        with self._arrived:
            if isinstance(heard, EngineLive) and any(isinstance(h, EngineLive)
                                                     for h in self._heard):
                self._heard = deque(h for h in self._heard if not isinstance(h, EngineLive))
            self._heard.append(heard)
            self._arrived.notify()

    def facts(self) -> LinkFacts:
        return LinkFacts(source=f"server {self._where}",
                         log=f"engine log: on the server's machine ({self._where})",
                         after_crash="the server's session is saved by the server (its --out)",
                         remote=True)

    def close(self) -> None:
        """Leave the server serving: detach (bounded), stop the threads."""
        already = self._stop.is_set()
        self._stop.set()
        link_id = self._link_id
        if link_id is not None and not already:
            try:
                self._client.post(f"{PREFIX}/detach", json={"link": link_id}, timeout=CLOSE_S)
            except httpx2.HTTPError:
                pass
        deadline = time.monotonic() + CLOSE_S
        for thread in self._threads:
            if thread is not threading.current_thread():
                thread.join(timeout=max(deadline - time.monotonic(), 0.0))
        self._client.close()

    # -- the threads ----------------------------------------------------------------------------
    def _events(self) -> None:
        try:
            self._fetch_events()
        except LinkEnded as exc:
            self._end(str(exc))
        except Exception as exc:  # the link's own fault: said once, never printed over the UI
            self._end(f"the link to the server failed ({type(exc).__name__}: {exc})")

    def _end(self, why: str) -> None:
        if not self._stop.is_set():     # closed meanwhile: nobody listens
            self._stop.set()
            self._hear(EngineFailed(why))

    def _fetch_events(self) -> None:
        after = 0
        while not self._stop.is_set():
            if self._link_id is None:
                self._attach()
                after = 0
            answer = self._call("GET", f"{PREFIX}/events",
                                params={"link": self._link_id, "after": after,
                                        "wait": WAIT_S})
            if answer is None:
                continue
            if answer.status_code == 404:       # dropped by the server: attach again
                self._link_id = None
                continue
            for item in _body(answer)["events"]:
                after = max(after, int(item["seq"]))
                try:
                    heard = decode_heard(item["event"])
                except WireError as exc:    # another version of infertop serves
                    raise LinkEnded(f"the server sent what this dashboard cannot read "
                                    f"({exc})") from None
                if isinstance(heard, Role):
                    self.steering = heard.steering
                self._hear(heard)

    def _attach(self) -> None:
        while not self._stop.is_set():
            answer = self._call("POST", f"{PREFIX}/attach")
            if answer is not None:
                body = _body(answer)
                self._link_id, self.steering = str(body["link"]), bool(body["steering"])
                return
        raise LinkEnded("closed")

    def _sender(self) -> None:
        while not self._stop.is_set():
            try:
                ask = self._asks.get(timeout=0.2)
            except queue.Empty:
                continue
            while self._link_id is None and not self._stop.is_set():
                time.sleep(RETRY_S)
            try:
                if isinstance(ask, SaveSnapshot):
                    self._save(ask.path)
                    continue
                self._call("POST", f"{PREFIX}/asks",
                           json={"link": self._link_id, "ask": encode_ask(ask)})
            except Exception:  # LinkEnded, or the client closed under it: the events
                return         # thread says why

    def _save(self, path: str) -> None:
        """`s`: the server's session so far, fetched and written here, on the dashboard's
        machine (atomically: a failed fetch or write leaves nothing half-written)."""
        answer = self._call("GET", f"{PREFIX}/session", params={"link": self._link_id})
        try:
            if answer is None:
                raise LinkEnded("the server is not serving")
            write_json_atomic(path, _body(answer))
        except LinkEnded as exc:
            self._hear(SnapshotFailed(path, str(exc)))
        except OSError as exc:
            self._hear(SnapshotFailed(path, f"{exc.strerror or exc}"))
        else:
            self._hear(SnapshotSaved(path))

    def _call(self, method: str, path: str, **kwargs) -> httpx2.Response | None:
        """One request, tried again while the server does not answer, up to DEAD_AFTER_S;
        None when closed meanwhile or the server answered 503."""
        since = time.monotonic()
        while not self._stop.is_set():
            try:
                answer = self._client.request(method, path, **kwargs)
            except httpx2.HTTPError as exc:
                why = (f"stopped answering ({type(exc).__name__}: {exc or 'no answer'}); what "
                       f"the dashboard showed is kept")
            else:
                if answer.status_code == 401:
                    raise LinkEnded(f"the server at {self._where} refused the API key "
                                    f"(--api-key or INFERTOP_API_KEY)")
                if answer.status_code == 404 and path.endswith("/attach"):
                    raise LinkEnded(f"{self.url} is not an infertop server with attach "
                                    f"(404 on {PREFIX}/attach)")
                if answer.status_code < 500:
                    return answer
                why = f"answered {answer.status_code}"
            if time.monotonic() - since > DEAD_AFTER_S:
                raise LinkEnded(f"the server at {self._where} {why}")
            self._stop.wait(RETRY_S)
        return None


def _body(answer: httpx2.Response) -> dict:
    try:
        doc = answer.json()
    except ValueError:
        raise LinkEnded(f"the server answered {answer.status_code} with no JSON") from None
    if answer.status_code >= 400 or not isinstance(doc, dict):
        message = doc.get("error", {}).get("message") if isinstance(doc, dict) else None
        raise LinkEnded(f"the server answered {answer.status_code}: {message or doc}")
    return doc

