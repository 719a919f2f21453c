"""The engine of `infertop serve`, in a thread of its own: the engine `replay` builds, fed by
LiveArrivals instead of a trace, journaled as `replay` journals. It loads, warms the configured
shapes (only then is /health ready), serves until drained, and answers each request through
its listener: the tokens made so far after each continuous step (when the request streams),
then its record.

Why a thread and not the dashboard's engine process: a request's tokens go from the step that
made them to its socket with no pipe between. The cost is the GIL: the event loop runs between
the engine's bytecodes (Python's switch interval, 5 ms), so while dynamo traces a compile the
server still answers, more slowly. The long compiles happen in the warm-up, before /health says
ready; a compile a request triggers later (a shape the warm-up did not cover) is that request's
compile stall, and its record says so."""

from __future__ import annotations

import threading
import time
from collections import Counter
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Callable

from probe.common.atomic import write_json_atomic
from probe.contract.options import OptConfig
from probe.contract.records import RequestRecord
from probe.contract.session import Session, SessionData
from probe.contract.settings import EngineSettings
from probe.engine.process.headless_journal import JournaledReplayer, dispatch_of, remove_journal
from probe.engine.state_files import new_replay_journal, state_folder_problem
from probe.server.arrivals import LiveArrivals
from probe.server.seam import CANCELLED, STOPPED, Ask, Done, Limits, Listener, Refused, Tokens
from probe.session_store.journal import CONTEXT_SECTIONS, JournaledSession, JournalWriter
from workloads.trace_records import TraceRequest

if TYPE_CHECKING:
    from probe.engine.continuous_scheduler import ContinuousScheduler
    from probe.engine.engine import Engine
    from probe.engine.serving import ServingLoop
    from probe.monitoring.prometheus import PrometheusExporter

RETRY_AFTER_S = 1
MAX_SERVED_SHAPES = 8   # a warm switch's prewarm without bucketing: the widths met most
STOP_WAIT_S = 1.0       # a stop's wait for the records of what it cancels (a step or two)


class EngineHost:
    """A ServedEngine (seam.py). `start` returns at once; `on_failed` is called (from the
    engine's thread) if loading or serving dies, with the exception."""

    def __init__(self, settings: EngineSettings, options: OptConfig, limits: Limits, *,
                 document: Callable[[Engine], dict],
                 on_failed: Callable[[BaseException], None] = lambda exc: None,
                 slo: Any = None) -> None:
        self.limits = limits
        self.settings = settings        # as the command gave them (an engine sizes its slots)
        self._options, self._slo = options, slo
        self.document = document        # the session JSON of the engine (run.py)
        self._on_failed = on_failed
        self._state = "loading"
        self.arrivals = LiveArrivals()
        self._lock = threading.Lock()
        self._listeners: dict[str, Listener] = {}
        self._sent: dict[str, int] = {}          # streaming requests: tokens heard so far
        self._cancelled: dict[str, str] = {}     # id → why, kept until its record comes
        self._used: set[str] = set()             # every id taken: one record an id
        self.engine: Engine | None = None
        self.loop: ServingLoop | None = None
        self.journal: JournalWriter | None = None
        self.journal_problem: str | None = None
        self.exporter: PrometheusExporter | None = None
        self.error: BaseException | None = None
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._main, name="engine", daemon=True)

    # -- the seam, called from the event loop ---------------------------------------------
    @property
    def state(self) -> str:
        return self._state

    def start(self) -> None:
        self.thread.start()

    def count_prompt(self, prompt: str) -> int:
        engine = self.engine
        if engine is None:
            raise Refused(503, f"the engine is {self._state}")
        return len(engine.loaded.tokenizer(prompt, add_special_tokens=False).input_ids)

    def decode(self, ids: tuple[int, ...]) -> str:
        assert self.engine is not None
        return str(self.engine.loaded.tokenizer.decode(list(ids), skip_special_tokens=True))

    def in_flight(self, request_id: str) -> bool:
        with self._lock:
            return request_id in self._used

    def queue_depth(self) -> int:
        loop = self.loop
        return 0 if loop is None else loop.queue_depth + self.arrivals.backlog

    def submit(self, ask: Ask, listener: Listener) -> None:
        if self._state != "ready":
            raise Refused(503, f"the server is {self._state}", RETRY_AFTER_S)
        if self.queue_depth() >= self.limits.max_queue:
            raise Refused(429, f"the queue is full ({self.limits.max_queue} waiting); "
                               f"retry later", RETRY_AFTER_S)
        with self._lock:
            self._used.add(ask.request_id)
            self._listeners[ask.request_id] = listener
            if ask.stream:
                self._sent[ask.request_id] = 0
        self.arrivals.arrive(TraceRequest(timestamp_ms=0.0, input_length=ask.prompt_tokens,
                                          output_length=ask.max_tokens, text=ask.prompt,
                                          id=ask.request_id), at=ask.arrived_s)

    def cancel(self, request_id: str, why: str | None = None) -> None:
        with self._lock:
            if self._listeners.pop(request_id, None) is not None:
                self._sent.pop(request_id, None)
                self._cancelled[request_id] = why or CANCELLED

    def metrics(self) -> bytes:
        return b"" if self.exporter is None else self.exporter.exposition()

    def held(self) -> int:
        """Requests taken and not yet answered with their record."""
        with self._lock:
            return len(self._listeners)

    # -- the engine's thread ----------------------------------------------------------------
    def _main(self) -> None:
        try:
            self._load_and_warm()
            assert self.loop is not None
            self._state = "ready"
            self.loop.run(self.stop)
        except BaseException as exc:  # said by the command, which ends
            self.error = exc
            self._state = "failed"
            self._fail_everyone(f"the engine failed: {exc}")
            self._on_failed(exc)
            return
        if self._state != "failed":
            self._state = "stopped"

    def _load_and_warm(self) -> None:
        from probe.engine.engine import Engine
        from probe.engine.serving import ServingLoop
        from probe.monitoring.prometheus import PrometheusExporter

        engine = self.engine = Engine(self.settings, self._options)
        # its compiles only: a warm switch compiles another engine beside it (attach/hub.py)
        engine.probe.watch_only(threading.get_ident())
        self._state = "warming"
        warm(engine)
        try:
            self.journal = JournalWriter(new_replay_journal())
        except OSError as exc:
            self.journal_problem = f"no session journal: {state_folder_problem(exc)}"
        journal = self.journal
        # a fresh session, served requests only; counted per visit as the dashboard's is
        # (a dashboard attached may switch the config back: a return opens a segment)
        engine.session = (Session(per_visit=True) if journal is None
                          else JournaledSession(journal, per_visit=True))
        engine.config_id = ""
        engine.set_options(self._options)
        replayer: Any = self.arrivals
        if journal is not None:
            document = self.document(engine)
            journal.header(time.time() - engine.clock.now_s(),
                           {name: document[name] for name in CONTEXT_SECTIONS})
            replayer = JournaledReplayer(
                self.arrivals, lambda scheduled: journal.dispatch(dispatch_of(engine, scheduled)))
        engine.session.set_slo(self._slo)
        loop = ServingLoop(engine, replayer, on_records=self._on_records)
        loop.after_step = self._after_step
        self.exporter = PrometheusExporter(engine.session, self.queue_depth, port=None)
        self.loop = loop

    def _after_step(self, scheduler: ContinuousScheduler) -> list[RequestRecord]:
        with self._lock:
            streaming = set(self._sent)
            cancelled = dict(self._cancelled)
        if streaming:
            for request_id, ids in scheduler.tokens_so_far(streaming).items():
                self._hear(request_id, ids)
        records = []
        for why in set(cancelled.values()):
            records += scheduler.cancel({i for i, w in cancelled.items() if w == why}, why)
        return records

    def _hear(self, request_id: str, ids: list[int]) -> None:
        with self._lock:
            listener, sent = self._listeners.get(request_id), self._sent.get(request_id, 0)
            if listener is None or len(ids) <= sent:
                return
            self._sent[request_id] = len(ids)
        listener(Tokens(tuple(ids[sent:])))

    def _on_records(self, records: list[RequestRecord]) -> None:
        for record in records:
            if record.ok and record.tokens is not None and record.id in self._sent:
                self._hear(record.id, list(record.tokens))
            with self._lock:
                listener = self._listeners.pop(record.id, None)
                self._sent.pop(record.id, None)
                self._cancelled.pop(record.id, None)
            if listener is not None:
                listener(Done(record))

    def _fail_everyone(self, error: str) -> None:
        with self._lock:
            listeners, self._listeners = self._listeners, {}
        for request_id, listener in listeners.items():
            listener(Done(failed_record(request_id, error)))

    # -- the end ------------------------------------------------------------------------------
    def drain(self) -> None:
        """No more arrivals: what is queued is still served."""
        if self._state == "ready":
            self._state = "draining"
        self.arrivals.close()

    def save(self, path: str) -> tuple[SessionData, OSError | None] | None:
        """The served session written to `path` (whole or not at all), then the engine closed
        and, once the session is saved, its journal removed: the session's data and the
        write's error, if any; None when the engine never loaded (nothing was served)."""
        engine = self.engine
        if engine is None:
            return None
        if self.exporter is not None:
            self.exporter.close()
        data = engine.session.freeze()
        try:
            write_json_atomic(path, self.document(engine))
        except OSError as exc:
            return data, exc
        finally:
            engine.close()
        if self.journal is not None:
            remove_journal(self.journal)
        return data, None

    def finish(self, timeout_s: float) -> bool:
        """Stop the loop once what it holds is served (or at once: `timeout_s` 0, and what
        it still holds is cancelled, so each has its record); True if the engine's thread
        ended in time (a compile may hold it)."""
        self.drain()
        if self.loop is not None and timeout_s > 0:
            self.loop.replay_done.wait(timeout_s)
        with self._lock:
            held = list(self._listeners)
        for request_id in held:
            self.cancel(request_id, STOPPED)
        deadline = time.monotonic() + STOP_WAIT_S
        while self._cancelled and self.thread.is_alive() and time.monotonic() < deadline:
            time.sleep(0.01)
        self.stop.set()
        self.thread.join(timeout=max(timeout_s, 2.0))
        return not self.thread.is_alive()


def warm(engine: Engine, served: Sequence[int] = ()) -> int:
    """Compile the configured shapes before the first request: every bucket edge, through the
    path the config serves with (a continuous batch's join and step, or the whole-request
    decode). Without bucketing, the input widths `served` so far (a warm switch's: the shapes
    the server has met), else one. Its records go to a session the served one replaces: the
    served session holds only what clients asked for. Returns the shapes warmed."""
    from probe.engine.continuous_scheduler import ContinuousScheduler
    from probe.engine.model.requests import EngineRequest

    if not engine.options.compiled:
        return 0
    widths = engine.bucket_edges or tuple(sorted(set(served))) or (
        min(64, engine.settings.max_input_tokens),)
    now = engine.clock.now_s()
    requests = [EngineRequest(id=f"warm-{i}", seq=-(i + 1), input_length=width,
                              output_length=2, arrival_s=now)
                for i, width in enumerate(widths)]
    if engine.options.batching == "continuous":
        ContinuousScheduler(engine).serve_all(requests, per_join=1)
    elif engine.bucket_edges or not served:
        engine.prewarm()
    else:
        for request in requests:
            engine.rehearse([request])
    return len(widths)


def served_widths(records: Sequence[RequestRecord], most: int = MAX_SERVED_SHAPES
                  ) -> tuple[int, ...]:
    """The input widths the server has met, the `most` most frequent: what a warm switch's
    engine prewarms without bucketing."""
    counts = Counter(r.padded_tokens for r in records if r.ok and r.padded_tokens > 0)
    return tuple(width for width, _ in counts.most_common(most))


def failed_record(request_id: str, error: str) -> RequestRecord:
    return RequestRecord(id=request_id, seq=-1, config_id="", input_tokens=0, padded_tokens=0,
                         arrival_s=0.0, start_s=0.0, queue_ms=0.0, compile_stall_ms=0.0,
                         output_tokens=0, first_token_s=None, end_s=0.0, encoder_ms=0.0,
                         decoder_ms=0.0, ttft_ms=None, tpot_ms=None, latency_ms=0.0,
                         batch_size=0, kv_cache_bytes=0, kv_cache_used_bytes=0,
                         kv_self_attention_bytes=0, kv_cross_attention_bytes=0, error=error)
