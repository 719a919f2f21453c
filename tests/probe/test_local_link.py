"""The replay's EngineLink (probe/engine/process/local_link.py) over a scripted handle: what it
decides below the seam (cut over, split, end, restart) and that the replay's commands reach
the engine while its polling thread waits on a busy one."""

from __future__ import annotations

import threading

from probe.contract.engine_link import (
    ABEnd,
    ABEnded,
    ABSplit,
    ABStart,
    CutOverDone,
    GiveUp,
    Restart,
    Restarted,
    SetOptions,
    WarmSwitch,
)
from probe.contract.options import OptConfig
from probe.contract.protocol import EngineFailed, WarmReady
from probe.contract.records import CompileInProgress
from probe.engine.process.local_link import LocalLink
from tests.fake_engine import FakeEngine

COMPILED = OptConfig(compile="default")


def opened(engine: FakeEngine) -> LocalLink:
    link = LocalLink(engine)
    link.open()
    assert link.poll(0.01) is None and engine.starts == 1
    return link


def test_a_warm_side_engine_is_cut_over_to_once_ready():
    engine = FakeEngine()
    link = opened(engine)
    link.send(WarmSwitch(COMPILED))
    assert link.poll(0.01) is None and engine.warm_asks == [COMPILED]
    engine.emit(WarmReady(3, 12.5))
    assert link.poll(0.5) == CutOverDone(3, 12.5) and engine.cut_overs == 1


def test_an_ab_splits_when_arm_b_is_warm_and_ends_as_asked():
    engine = FakeEngine()
    link = opened(engine)
    link.send(ABStart(COMPILED))
    engine.emit(WarmReady(2, 4.0))
    assert link.poll(0.5) == ABSplit(2, 4.0)
    assert engine.ab == "split" and engine.cut_overs == 0      # split, not cut over
    link.send(ABEnd(adopt=True))
    assert link.poll(0.01) == ABEnded("adopt") and engine.ab_ends == ["adopt"]
    link.send(ABEnd(adopt=False))                              # nothing running: no-op
    assert link.poll(0.01) is None and engine.ab_ends == ["adopt"]


def test_the_serving_engine_dying_ends_an_ab_and_is_said_once():
    engine = FakeEngine()
    link = opened(engine)
    link.send(ABStart(COMPILED))
    assert link.poll(0.01) is None
    engine.die("the engine process exited (code -9)")
    first = link.poll(0.5)
    assert isinstance(first, EngineFailed)
    assert link.poll(0.01) == ABEnded("failed", "the serving engine stopped")
    assert link.poll(0.05) is None                             # said once


def test_a_give_up_restarts_on_the_options_given_with_the_compile_abandoned():
    engine = FakeEngine()
    link = opened(engine)
    compiling = CompileInProgress("0/1", "forward", "r1", 3.0, 0.0)
    link.send(GiveUp(compiling, OptConfig()))
    assert link.poll(0.01) == Restarted()
    assert engine.restarts == 1 and engine.abandoned == compiling
    assert engine.commands(SetOptions) == [SetOptions(OptConfig())]
    link.send(Restart())
    assert link.poll(0.01) == Restarted() and engine.restarts == 2


def test_the_replays_commands_reach_the_engine_while_the_poll_waits_on_it():
    engine = FakeEngine()
    link = opened(engine)
    engine.hold()                       # a poll stuck on a busy engine
    poller = threading.Thread(target=link.poll, args=(0.2,), daemon=True)
    poller.start()
    link.send(SetOptions(COMPILED))
    assert engine.commands(SetOptions) == [SetOptions(COMPILED)]
    engine.release()
    poller.join(5)


def test_an_engine_that_cannot_start_is_said_and_restart_tries_again():
    class Broken(FakeEngine):
        def start(self) -> None:
            raise OSError("cannot fork")

    engine = Broken()
    link = LocalLink(engine)
    link.open()
    said = link.poll(0.01)
    assert isinstance(said, EngineFailed) and "cannot fork" in said.error
    link.send(Restart())
    assert link.poll(0.01) == Restarted() and engine.restarts == 1


def test_facts_read_the_journal_once_the_engine_is_down_not_at_each_call():
    """The dashboard asks for facts at every binding check: the journal is read when the
    engine goes down, for what `s` and `R` can still do, and not before."""
    engine = FakeEngine()
    reads: list[int] = []
    promise = engine.journal_promise
    engine.journal_promise = lambda: reads.append(1) or promise()   # type: ignore[method-assign]
    link = opened(engine)
    for _ in range(20):
        assert link.facts().after_crash == ""
    assert reads == []
    engine.die("the engine process exited (code -9)")
    assert isinstance(link.poll(0.5), EngineFailed)
    said = [link.facts().after_crash for _ in range(20)]
    assert len(reads) == 1 and said[0] and len(set(said)) == 1
