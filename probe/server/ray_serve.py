"""`infertop serve --ray N`: the same Starlette app (app.py) as a Ray Serve deployment of N
replicas behind Ray Serve's HTTP proxy on --host/--port; Ray Serve balances, not infertop.
Each replica loads its own engine (engine_host.py) and journals its own session, which it
saves to --out's name with `.rK` before `.json` (S.r0.json, S.r1.json): one engine's clock,
KV pool and compiles to a file, as `replay` saves one.

This process starts Ray on this machine, deploys, and waits. A small Ray actor, the board,
is what the replicas and this process share: each replica reports its state to it (so /health
is ready only once every replica is warm) and reads from it when to drain; this process
reads from it what each replica saved. The first SIGTERM, SIGINT or SIGHUP drains every
replica (no new requests, up to --drain-s for those held), a second stops them at once;
each saves its session, then Serve and Ray are shut down and the exit status is 128 + the
signal."""

from __future__ import annotations

import functools
import logging
import os
import signal
import sys
import threading
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from probe.checks.interrupts import STOP_SIGNALS, exit_status, say
from probe.common.errors import BadInput
from probe.server.engine_host import EngineHost, failed_record
from probe.server.seam import STOPPED, Ask, Done, Limits, Listener, Tokens
from probe.session_store.run_summary import run_summary

if TYPE_CHECKING:
    from probe.contract.options import OptConfig
    from probe.contract.prepared_workload import PreparedWorkload

INSTALL_HINT = "pip install 'infertop[serve-ray]'"
APP_NAME = "infertop"
REPLICA_HEADER = "X-Infertop-Replica"   # which replica answered: r0, r1, …
POLL_S = 0.2                # a replica's look at the board; this process's too
TERMINAL_SIGNALS = (signal.SIGINT, signal.SIGHUP)    # what a terminal sends its process group
SHUTDOWN_S = 20.0           # Serve's wait for replies to leave a replica, drained and saved
SAVE_MARGIN_S = 60.0        # past --drain-s, how long a replica may take to save


def replica_path(out: str, index: int) -> str:
    """Where replica `index` saves its session: S.json → S.r0.json."""
    stem, dot, ext = out.rpartition(".")
    return f"{stem}.r{index}.{ext}" if dot and "/" not in ext else f"{out}.r{index}"


def require_serve() -> Any:
    try:
        from ray import serve
    except ImportError:
        raise BadInput(f"--ray needs Ray Serve, which is not installed here: {INSTALL_HINT}") \
            from None
    return serve


@dataclass(frozen=True)
class Stop:
    """What the board tells the replicas: drain (finish what is held), or stop now."""
    now: bool
    signum: int


class Board:
    """The state the replicas and the driver share (a Ray actor: its methods run one at a
    time)."""

    def __init__(self, replicas: int) -> None:
        self.replicas = replicas
        self.states: dict[int, str] = {}
        self.saved: dict[int, dict | None] = {}
        self.stop: Stop | None = None

    def join(self) -> int:
        index = len(self.states)
        self.states[index] = "loading"
        return index

    def report(self, index: int, state: str) -> tuple[bool, Stop | None]:
        """A replica's state; answers whether every replica is ready, and the stop if any."""
        self.states[index] = state
        ready = [s for s in self.states.values() if s == "ready"]
        return len(ready) >= self.replicas, self.stop

    def tell(self, stop: Stop) -> None:
        if self.stop is None or stop.now:
            self.stop = stop

    def done(self, index: int, saved: dict | None) -> None:
        self.saved[index] = saved

    def view(self) -> tuple[dict[int, str], dict[int, dict | None]]:
        return dict(self.states), dict(self.saved)


class _AllReady:
    """The replica's engine as the app sees it, but ready only once every replica is."""

    def __init__(self, host: EngineHost) -> None:
        self.host = host
        self.limits: Limits = host.limits
        self.all_ready = False
        self._lock = threading.Lock()
        self._waiting: dict[str, Listener] = {}     # submitted, no Done heard yet

    def __getattr__(self, name: str) -> Any:
        """count_prompt, cancel, decode, metrics, in_flight: the host's own."""
        return getattr(self.host, name)

    @property
    def state(self) -> str:
        own = self.host.state
        return "warming" if own == "ready" and not self.all_ready else own

    def submit(self, ask: Ask, listener: Listener) -> None:
        def heard(item: Tokens | Done) -> None:
            if isinstance(item, Done):
                with self._lock:
                    if self._waiting.pop(ask.request_id, None) is None:
                        return      # told already by stopped()
            listener(item)

        with self._lock:
            self._waiting[ask.request_id] = listener
        try:
            self.host.submit(ask, heard)
        except BaseException:
            with self._lock:
                self._waiting.pop(ask.request_id, None)
            raise

    def stopped(self) -> None:
        """The engine stopped with requests held: each client hears it (a 500, or an error
        event closing its stream), as no uvicorn of ours cancels their handlers here."""
        with self._lock:
            waiting, self._waiting = self._waiting, {}
        for request_id, listener in waiting.items():
            listener(Done(failed_record(request_id, STOPPED)))


def _tagged(app: Any, name: str) -> Any:
    """The ASGI app, each reply carrying the replica's name in REPLICA_HEADER, and not the
    app's X-Request-Id: Serve's proxy gives the request the client's (or makes one), which
    the app takes as its id, and echoes it itself."""
    value = name.encode()

    async def tagged(scope, receive, send):
        async def send_tagged(message):
            if message["type"] == "http.response.start":
                headers = [(k, v) for k, v in message.get("headers", [])
                           if k.lower() != b"x-request-id"]
                message = {**message, "headers": [*headers,
                                                  (REPLICA_HEADER.lower().encode(), value)]}
            await send(message)
        await app(scope, receive, send_tagged)
    return tagged


class Replica:
    """One Ray Serve replica: its engine in a thread, the app, and a watcher thread that
    reports to the board and drains and saves when told."""

    def __init__(self, board: Any, args: Any, options: OptConfig,
                 workload: PreparedWorkload, url: str) -> None:
        import ray

        from probe.server.run import engine_setup, served_document
        self.board, self.args, self.url = board, args, url
        self.index: int = ray.get(board.join.remote())
        settings, limits = engine_setup(args, workload)
        document = functools.partial(served_document, workload=workload, args=args, url=url)
        self.host = EngineHost(settings, options, limits, document=document, slo=args.slo)
        self.view = _AllReady(self.host)
        self._saved = threading.Lock()
        self._finished = False
        self.host.start()
        threading.Thread(target=self._watch, name="board", daemon=True).start()

    def __serve_build_asgi_app__(self) -> Any:
        from probe.server.app import make_app

        return _tagged(make_app(self.view, api_key=self.args.api_key), f"r{self.index}")

    def _watch(self) -> None:
        import ray

        while True:
            all_ready, stop = ray.get(self.board.report.remote(self.index, self.host.state))
            self.view.all_ready = all_ready
            if stop is not None:
                break
            time.sleep(POLL_S)
        self.host.drain()
        deadline = time.monotonic() + (0.0 if stop.now else self.args.drain_s)
        while time.monotonic() < deadline and not stop.now and self.host.held():
            time.sleep(POLL_S)
            stop = ray.get(self.board.report.remote(self.index, self.host.state))[1] or stop
        self._finish()

    def _finish(self) -> None:
        import ray

        with self._saved:
            if self._finished:
                return
            self._finished = True
            self.host.finish(0)
            self.view.stopped()
            ray.get(self.board.done.remote(self.index, self._save()))

    def _save(self) -> dict | None:
        path = replica_path(self.args.out, self.index)
        saved = self.host.save(path)
        if saved is None:       # stopped while loading: nothing was served
            return None
        data, error = saved
        journal = self.host.journal
        return {"path": path, "records": len(data.records), "summary": run_summary(data.records),
                "error": None if error is None else
                f"cannot write: {error.strerror or error}; the journal "
                f"{journal.path if journal else '(none)'} keeps it"}

    def __del__(self) -> None:
        """Serve's shutdown: a replica the board never stopped saves what it served."""
        if getattr(self, "host", None) is not None:
            self._finish()


class _Signals:
    """The driver's stop signals: the first drains, a second stops at once."""

    def __init__(self) -> None:
        self.signum: int | None = None
        self.now = False
        self.changed = threading.Event()

    def __call__(self, signum: int, frame: Any) -> None:
        if self.signum is not None:
            self.now = True
            say("infertop: stopping every replica now; saving what was served")
        else:
            self.signum = signum
            say(f"infertop: {signal.Signals(signum).name}: draining every replica, then "
                f"saving their sessions; signal again to stop now")
        self.changed.set()


def serve_ray(args: Any, options: OptConfig, workload: PreparedWorkload) -> int:
    """`infertop serve --ray N` once its input is checked; returns the exit status."""
    import ray

    from probe.server.run import bind, url_host, warn_if_exposed

    serve = require_serve()
    replicas = int(args.ray)
    sock = bind(args.host, args.port)       # a port in use is one line; 0 picks a free one
    port = sock.getsockname()[1]
    sock.close()
    url = f"http://{url_host(args.host)}:{port}"
    args.out = os.path.abspath(args.out)    # the replicas' working folder is Ray's
    cpus = os.cpu_count() or 1
    share = min(1.0, cpus / replicas)
    if args.threads is None:
        args.threads = max(1, cpus // replicas)
    signals = _Signals()
    previous = {s: signal.signal(s, signals) for s in STOP_SIGNALS}
    # Ray's processes inherit a blocked SIGINT and SIGHUP (a blocked signal stays blocked
    # across exec): Ctrl-C and a closed terminal reach the whole process group, and would
    # kill Serve's proxy mid-drain; this process alone decides when they stop.
    mask = signal.pthread_sigmask(signal.SIG_BLOCK, TERMINAL_SIGNALS)
    try:
        ray.init(address="local", num_cpus=cpus, include_dashboard=False,
                 log_to_driver=False, logging_level=logging.WARNING)
    except (ConnectionError, ValueError, RuntimeError) as exc:
        for s, handler in previous.items():
            signal.signal(s, handler)
        raise BadInput(f"--ray {replicas}: cannot start Ray on this machine: {exc}") from None
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, mask)
    for s in STOP_SIGNALS:              # ray.init puts its own SIGTERM handler in
        signal.signal(s, signals)
    try:
        board = ray.remote(num_cpus=0)(Board).remote(replicas)
        serve.start(http_options={"host": args.host, "port": port},
                    logging_config={"log_level": "WARNING"})
        deployment = serve.deployment(serve.ingress()(Replica)).options(
            name="replica", num_replicas=replicas, ray_actor_options={"num_cpus": share},
            max_ongoing_requests=args.max_queue + (args.max_batch or 8) + 8,
            graceful_shutdown_timeout_s=SHUTDOWN_S,
            graceful_shutdown_wait_loop_s=POLL_S, health_check_period_s=2.0)
        warn_if_exposed(args)
        serve.run(deployment.bind(board, args, options, workload, url), name=APP_NAME,
                  route_prefix="/", blocking=False)
        print(f"infertop serve: {url}/v1 (model {args.model}, {options.label()}, {replicas} "
              f"Ray Serve replicas); /health is ready once every replica is warm",
              file=sys.stderr)
        failed = _wait(ray, board, signals)
        return _stop(ray, serve, board, signals, args, failed)
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)
        if ray.is_initialized():
            ray.shutdown()


def _wait(ray: Any, board: Any, signals: _Signals) -> list[int]:
    """Until a stop signal or a replica fails; the failed replicas."""
    while not signals.changed.wait(POLL_S):
        states, _ = ray.get(board.view.remote())
        failed = [index for index, state in states.items() if state == "failed"]
        if failed:
            return failed
    return []


def _stop(ray: Any, serve: Any, board: Any, signals: _Signals, args: Any,
          failed: list[int]) -> int:
    signum = signals.signum or signal.SIGTERM
    ray.get(board.tell.remote(Stop(now=signals.now or bool(failed), signum=signum)))
    deadline = time.monotonic() + args.drain_s + SAVE_MARGIN_S
    told_now = signals.now
    while time.monotonic() < deadline:
        states, saved = ray.get(board.view.remote())
        if len(saved) >= len(states):
            break
        if signals.now and not told_now:
            ray.get(board.tell.remote(Stop(now=True, signum=signum)))
            told_now = True
        signals.changed.clear()
        signals.changed.wait(POLL_S)
    # the app first: each replica waits for its replies to reach the proxy (and one not yet
    # saved saves in its __del__); then the proxy and the controller
    try:
        serve.delete(APP_NAME)
    except (RuntimeError, TimeoutError) as exc:     # the controller's wait: the proxy goes
        print(f"infertop: Ray Serve: {exc}", file=sys.stderr)
    serve.shutdown()
    states, saved = ray.get(board.view.remote())
    for index in sorted(states):
        result = saved.get(index)
        if result is None:
            print(f"replica r{index}: nothing served", file=sys.stderr)
            continue
        print(f"replica r{index}:\n{result['summary']}")
        if result["error"]:
            print(f"infertop: error: --out {result['path']}: {result['error']}",
                  file=sys.stderr)
        else:
            print(f"replica r{index}: {result['records']} requests saved to {result['path']}")
    if failed:
        print(f"infertop: error: replica {', '.join(f'r{i}' for i in failed)} failed (its "
              f"engine log is in Ray's session folder)", file=sys.stderr)
        return 1
    return exit_status(signum)
