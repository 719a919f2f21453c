"""`infertop replay`: serve a trace headless and save the session, with exit statuses a script
can trust — 0 every request served, 1 some failed (the snapshot is still written and the last
line says how many and why) or the snapshot could not be written (the journal keeps what was
served, and the line says how to recover it), 128 + the signal when stopped by Ctrl-C, SIGTERM
or SIGHUP (130, 143, 129: what was served is saved first)."""

from __future__ import annotations

import signal
import sys
import threading
from contextlib import ExitStack
from pathlib import Path
from types import FrameType
from typing import Callable, Optional, Union

from probe.analysis.fallbacks import fallback_lines
from probe.checks.interrupts import (
    STOP_SIGNALS,
    Interrupted,
    interrupts_never_lost,
    say,
    signal_of,
)
from probe.common.atomic import write_json_atomic
from probe.contract.options import OptConfig
from probe.contract.records import Notice
from probe.engine.engine import Engine
from probe.engine.process.headless_journal import (
    JournaledReplayer,
    dispatch_of,
    open_headless_journal,
    remove_journal,
)
from probe.engine.process.replay_progress import ReplayProgress
from probe.engine.state_files import SAID
from probe.engine.workload_setup import PreparedWorkload
from probe.session_store.journal import JournalWriter
from probe.session_store.replay_outcome import ReplayOutcome, kept_in, outcome
from probe.session_store.run_summary import energy_lines, run_summary

# what signal.signal returns and takes back: a function, SIG_DFL/SIG_IGN, or None (not set
# from Python)
SignalHandler = Union[Callable[[int, Optional[FrameType]], object], int, None]


class GracefulInterrupt:
    """The first Ctrl-C, SIGTERM or SIGHUP sets `stop` (the request in progress finishes,
    then the replay ends and the session is saved); a second raises Interrupted to stop at
    once (records already made are still saved: a record exists only once its request is
    done). `signum`: the first signal received. Once `saving` is set, a signal only waits:
    the snapshot being written is what every signal asked for."""

    def __init__(self) -> None:
        self.stop = threading.Event()
        self.signum: int | None = None
        self.saving = False
        self._previous: dict[int, SignalHandler] = {}
        self._stack = ExitStack()

    def _handle(self, signum, frame) -> None:
        if self.saving:
            say("infertop: saving what was served; a moment")
            return
        if self.stop.is_set():
            raise Interrupted(self.signum or signum)
        self.signum = signum
        self.stop.set()
        what = "interrupted" if signum == signal.SIGINT else signal.Signals(signum).name
        again = "Ctrl-C" if signum == signal.SIGINT else f"send {what}"
        say(f"infertop: {what}: finishing the request in progress, then saving what was "
            f"served ({again} again to save now)")

    def __enter__(self) -> GracefulInterrupt:
        # the second signal's Interrupted, raised inside a callback that swallows it, is
        # delivered again instead of lost
        self._stack.enter_context(interrupts_never_lost())
        self._previous = {s: signal.signal(s, self._handle) for s in STOP_SIGNALS}
        return self

    def __exit__(self, *exc) -> None:
        for s, handler in self._previous.items():
            signal.signal(s, handler)
        self._stack.close()


def serve_and_save(engine: Engine, loop, out: str | Path, document: Callable[[], dict],
                   journal: JournalWriter | None = None,
                   before_summary: Callable[[], None] | None = None,
                   note: Callable[[str], None] = lambda text: None,
                   asked: int | None = None) -> ReplayOutcome:
    """Run the replay under GracefulInterrupt and always save what was served. A snapshot
    that cannot be written (a full disk) is one line naming the journal that keeps it.
    `note`: tells a supervising parent (stop_supervisor) when the save starts and ends. A
    stop is recorded in the session itself (a warning notice: which signal, how many of the
    `asked` requests were served), so the snapshot, `snapshot show` and the doctor say so."""
    from probe.engine.process.headless import run_replay

    interrupted, signum = False, int(signal.SIGINT)
    with GracefulInterrupt() as interrupt:
        try:
            run_replay(loop, interrupt.stop)
        except KeyboardInterrupt as exc:
            interrupted, signum = True, signal_of(exc)
        if interrupt.signum is not None:
            interrupted, signum = True, interrupt.signum
        interrupt.saving = True
        if interrupted:
            served = sum(1 for r in engine.session.freeze().records if r.ok)
            engine.session.add_notice(interruption_notice(engine.clock.now_s(), signum,
                                                          served, asked))
        data = engine.session.freeze()
        records = data.records
        # every fallback, whole (contract/fallbacks); printed after the save, so a terminal
        # or pipe that is gone (`| tee` under the same Ctrl-C) cannot cost the session
        summary = [run_summary(records), *energy_lines(data), *fallback_lines(data.events)]
        note("saving")
        try:
            path = write_json_atomic(out, document())
            note("saved")
        except OSError as exc:
            _print_summary(before_summary, summary)
            print(f"infertop: error: --out {out}: cannot write: {exc.strerror or exc}; "
                  + kept_in(journal.path if journal else None, len(records),
                            journal.error if journal else None), file=sys.stderr)
            return outcome(records, interrupted, signum, saved=False)
        _print_summary(before_summary, summary)
    if journal is not None:
        remove_journal(journal)
    result = outcome(records, interrupted, signum)
    print(result.summary(path))
    return result


def interruption_notice(t_s: float, signum: int, served: int, asked: int | None) -> Notice:
    """The session's own record of a replay a signal stopped."""
    name = "Ctrl-C (SIGINT)" if signum == signal.SIGINT else signal.Signals(signum).name
    of = f" of {asked} asked" if asked is not None else ""
    return Notice(t_s, "warning", f"replay interrupted by {name}: {served}{of} request(s) "
                                  f"served; the rest were never served")


def serve_replay(args, options: OptConfig, workload: PreparedWorkload,
                 metrics_exporter: Callable,
                 note: Callable[[str], None] = lambda text: None) -> int:
    """The command once its input is checked: the engine, its journal, the progress, the
    replay, the save; returns the exit status."""
    from probe.engine.process.headless import document_for, engine_for, replay_loop

    engine = engine_for(workload, model=args.model, device=args.device, options=options,
                        max_input=args.max_input, threads=args.threads,
                        keep_tokens=args.tokens, compile_backend=args.compile_backend,
                        max_batch=args.max_batch, kv_budget_bytes=args.kv_budget,
                        drift_every=args.drift_every,
                        batch_window_ms=getattr(args, "batch_window", None))
    total = len(workload.trace.requests)
    asked = min(args.requests, total) if args.requests else total
    journal, problem = open_headless_journal(engine, workload, args.trace, options, asked)
    engine.session.set_slo(args.slo)      # the journaled session's, so a recovery keeps it
    if journal is not None:
        note(f"journal {journal.path}")     # what a supervising parent salvages from
        print(f"session journal: {journal.path} (if this run dies: infertop snapshot recover "
              f"{journal.path} -o OUT.json)", file=sys.stderr)
    elif not any(said in (problem or "") for said in SAID):   # one warning per folder
        print(f"infertop: warning: {problem}: a run killed before it saves loses what it "
              f"served", file=sys.stderr)
    progress = ReplayProgress(asked, events=engine.session.events)
    journal_said = [journal is None]

    def on_records(records) -> None:
        progress(records)
        # its disk is full: said once, as it happens
        if journal is not None and not journal_said[0] and journal.error:
            journal_said[0] = True
            print(f"infertop: warning: {journal.error}: journaling stopped; serving goes on, "
                  f"and the snapshot at the end keeps everything", file=sys.stderr)

    loop = replay_loop(engine, workload, speed=args.speed or 1.0, max_requests=args.requests,
                       concurrency=args.concurrency, on_records=on_records)
    if journal is not None:
        loop.replayer = JournaledReplayer(
            loop.replayer, lambda scheduled: journal.dispatch(dispatch_of(engine, scheduled)))
    exporter = metrics_exporter(args.metrics_port, engine.session, lambda: loop.queue_depth)
    try:
        result = serve_and_save(engine, loop, args.out,
                                lambda: document_for(engine, workload, args.trace, asked=asked),
                                journal=journal, before_summary=progress.close, note=note,
                                asked=asked)
    finally:
        if exporter is not None:
            exporter.close()
        engine.close()
        if journal is not None:
            journal.close()
    return result.exit_status


def _print_summary(before_summary: Callable[[], None] | None, lines: list[str]) -> None:
    if before_summary is not None:
        before_summary()
    for line in lines:
        print(line)
