"""The life of `infertop serve`: bind (127.0.0.1 unless told), load and warm the engine in its
thread while /health says not ready, serve, and on the first SIGTERM, SIGINT or SIGHUP drain:
stop accepting, finish what is held within --drain-s, save the session to --out, exit 128 +
the signal (as `replay` does: what `timeout`, systemd and Kubernetes expect of a stopped
process). A second signal ends the drain at once; what was served is still saved."""

from __future__ import annotations

import contextlib
import functools
import logging
import math
import signal
import socket
import sys
import threading
import time
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterator, TextIO

import uvicorn

from probe.analysis.fallbacks import fallback_lines
from probe.checks.interrupts import STOP_SIGNALS, exit_status, say
from probe.common.errors import Busy
from probe.contract.options import OptConfig
from probe.server.app import make_app
from probe.server.attach.hub import Hub
from probe.server.engine_host import EngineHost
from probe.server.seam import Limits
from probe.session_store.replay_outcome import kept_in, outcome
from probe.session_store.run_summary import energy_lines, run_summary

if TYPE_CHECKING:
    from probe.contract.prepared_workload import PreparedWorkload
    from probe.contract.settings import EngineSettings
    from probe.engine.engine import Engine

LOOPBACK = ("127.0.0.1", "localhost", "::1")
KEEP_ALIVE_S = 5            # an idle connection is closed after this


class _Server(uvicorn.Server):
    """uvicorn's server with the stop signals `replay` has: the first drains, a second ends
    the drain at once (uvicorn's own ends at once only on a second Ctrl-C), and none is raised
    again once the server has stopped (uvicorn's does, which would end the process before the
    session is saved)."""

    def __init__(self, config: uvicorn.Config, host: EngineHost, drain_s: float) -> None:
        super().__init__(config)
        self.host, self.drain_s = host, drain_s
        self.signum: int | None = None
        self.signalled_at = 0.0

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        if threading.current_thread() is not threading.main_thread():
            yield
            return
        previous = {s: signal.signal(s, self._stop) for s in STOP_SIGNALS}
        try:
            yield
        finally:
            for s, handler in previous.items():
                signal.signal(s, handler)

    def _stop(self, signum: int, frame: Any) -> None:
        if self.should_exit:
            self.force_exit = True
            say("infertop: stopping now; saving what was served")
            return
        self.signum, self.should_exit = signum, True
        self.signalled_at = time.monotonic()
        self.host.drain()
        say(f"infertop: {signal.Signals(signum).name}: draining (no new requests; up to "
            f"{self.drain_s:g} s for those held), then saving the session; signal again to "
            f"stop now")


def serve(args, options: OptConfig, workload: PreparedWorkload) -> int:
    """The command once its input is checked; returns the exit status."""
    settings, limits = engine_setup(args, workload)
    sock = bind(args.host, args.port)
    url = f"http://{url_host(args.host)}:{sock.getsockname()[1]}"
    document = functools.partial(served_document, workload=workload, args=args, url=url)
    failed: list[BaseException] = []
    server: _Server | None = None

    def on_failed(exc: BaseException) -> None:
        failed.append(exc)
        if server is not None:
            server.should_exit = True

    host = EngineHost(settings, options, limits, document=document, on_failed=on_failed,
                      slo=args.slo)
    hub = Hub(host, trace_name=f"served at {url}")
    config = uvicorn.Config(
        make_app(host, api_key=args.api_key, hub=hub), host=args.host, port=args.port,
        log_config=None, access_log=False, lifespan="off",
        # h11 and asyncio whatever else is installed (ray[serve] brings httptools and uvloop,
        # which uvicorn would pick): the header-size bound below is h11's
        http="h11", loop="asyncio",
        timeout_keep_alive=KEEP_ALIVE_S, timeout_graceful_shutdown=max(1, math.ceil(args.drain_s)),
        limit_concurrency=max(64, 4 * (args.max_queue + (args.max_batch or 8))),
        h11_max_incomplete_event_size=64 * 1024)
    server = _Server(config, host, args.drain_s)
    warn_if_exposed(args)
    print(f"infertop serve: {url}/v1 (model {args.model}, {options.label()}); /health is "
          f"ready once warm", file=sys.stderr)
    host.start()
    hub.start()
    server.run(sockets=[sock])
    hub.stop()
    if failed and not isinstance(failed[0], Exception):
        raise failed[0]
    drained = host.finish(0 if server.force_exit else
                          max(0.0, args.drain_s - (time.monotonic() - server.signalled_at)))
    if failed:
        raise failed[0]
    if not drained:
        print("infertop: the engine was still busy (a compile?) at the end of the drain",
              file=sys.stderr)
    return _save(host, args, server.signum or signal.SIGTERM)


def warn_if_exposed(args) -> None:
    if args.host not in LOOPBACK:
        print(f"infertop: serving on {args.host}, not loopback: any machine that reaches it "
              f"can send requests{'' if args.api_key else ' (no --api-key: anyone)'}",
              file=sys.stderr)


def engine_setup(args, workload: PreparedWorkload) -> tuple[EngineSettings, Limits]:
    """The engine's settings and what a request may ask, from the command's flags."""
    settings = replace(workload.engine_settings(
        model=args.model, device=args.device, max_input=args.max_input,
        compile_backend=args.compile_backend, keep_tokens=True, threads=args.threads,
        max_batch=args.max_batch, kv_budget_bytes=args.kv_budget, drift_every=args.drift_every,
        **({} if args.batch_window is None else {"batch_window_ms": args.batch_window})),
        max_new_tokens=args.max_output)
    return settings, Limits(model=args.model, max_prompt_tokens=args.max_input,
                            max_tokens=args.max_output, max_queue=args.max_queue)


def served_document(engine: Engine, workload: PreparedWorkload, args, url: str) -> dict:
    """The session JSON of a served engine: `replay`'s, its trace the server's address."""
    from probe.engine.process.headless import document_for

    doc = document_for(engine, workload, args.trace)
    doc["trace"] = {"name": f"served at {url}",
                    "requests": len(engine.session.freeze().records),
                    "fit": f"bucket edges planned on {args.trace}"}
    doc["settings"]["max_queue"] = args.max_queue
    return doc


def _save(host: EngineHost, args, signum: int) -> int:
    # saved before anything is printed: a pipe gone under the same Ctrl-C costs nothing
    saved = host.save(args.out)
    if saved is None:       # stopped while loading: nothing was served
        return exit_status(signum)
    data, error = saved
    print("\n".join([run_summary(data.records), *energy_lines(data),
                     *fallback_lines(data.events)]))
    journal = host.journal
    if error is not None:
        print(f"infertop: error: --out {args.out}: cannot write: {error.strerror or error}; "
              + kept_in(journal.path if journal else None, len(data.records),
                        journal.error if journal else None), file=sys.stderr)
    else:
        print(outcome(data.records, True, signum).summary(Path(args.out)))
    return exit_status(signum)


def url_host(host: str) -> str:
    return f"[{host}]" if ":" in host else host


@contextlib.contextmanager
def uvicorn_logs_to(log: TextIO) -> Iterator[None]:
    """uvicorn's own lines (its errors, a timed-out drain) go to the engine log: only infertop
    speaks on the terminal."""
    handler = logging.StreamHandler(log)
    logger = logging.getLogger("uvicorn")
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    try:
        yield
    finally:
        logger.removeHandler(handler)


def bind(host: str, port: int) -> socket.socket:
    """The listening socket, bound before the engine loads (a port in use is one line, and
    port 0 becomes the free port chosen, which the terminal is told)."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError as exc:
        sock.close()
        raise Busy(f"--port {port}: cannot listen on {host}:{port} "
                   f"({exc.strerror or exc})") from None
    sock.listen(2048)
    sock.set_inheritable(True)
    return sock
