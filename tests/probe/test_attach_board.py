"""The dashboards one server holds (probe/server/attach/board.py): the first steers and the
others watch, each told which; a watcher steers only once nobody does; a link that stops
fetching is dropped and holds nothing; a fetch lets go of what it acknowledged and a slow link
keeps only the newest live view."""

from __future__ import annotations

import json

from hypothesis import given
from hypothesis import strategies as st

from probe.contract.engine_link import EngineLive, Role, SnapshotSaved, WarmProgress
from probe.server.attach.board import DROP_S, Board
from probe.server.attach.wire import decode_heard
from tests.tui.synthetic import stage


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def heard(board: Board, link: str, after: int = 0) -> list:
    held = board.fetch(link, after)
    assert held is not None
    return [decode_heard(json.loads(h.json)) for h in held]


def test_the_first_steers_the_others_watch_and_take_over_only_when_it_leaves():
    board = Board(Clock())
    first, steers = board.attach()
    second, watcher_steers = board.attach()
    assert steers and not watcher_steers
    assert heard(board, first)[-1].steering
    assert "dashboard 1 steers" in heard(board, second)[-1].text
    assert not board.steer(second)      # refused while the first steers
    board.detach(first)
    told = heard(board, second)[-1]
    assert isinstance(told, Role) and not told.steering and "nobody steers" in told.text
    assert board.steer(second) and board.steers(second)
    assert heard(board, second)[-1] == Role(True, "dashboard 2 steers this server")


def test_a_link_that_stops_fetching_is_dropped_and_holds_nothing():
    clock = Clock()
    board = Board(clock)
    first, _ = board.attach()
    second, _ = board.attach()
    clock.now = DROP_S / 2
    board.fetch(second, 0)
    clock.now = DROP_S + 1
    assert board.drop_stale() == [first]
    assert board.fetch(first, 0) is None and not board.steers(first)
    assert board.steer(second)
    board.detach(second)
    assert not board.attached.is_set() and board.count() == 0


@given(st.lists(st.sampled_from(["live", "progress", "saved"]), max_size=30),
       st.integers(0, 40))
def test_a_fetch_lets_go_of_what_it_acknowledged_and_keeps_the_newest_view(kinds, after):
    board = Board(Clock())
    link, _ = board.attach()
    views = [stage("baseline"), stage("compiled")]
    sent = [Role(True, "dashboard 1 steers this server")]
    for i, kind in enumerate(kinds):
        event = {"live": EngineLive(views[i % 2]), "progress": WarmProgress(f"step {i}", i),
                 "saved": SnapshotSaved(f"s{i}.json")}[kind]
        board.publish(event)
        sent.append(event)
    held = board.fetch(link, 0)
    assert held is not None
    got = [decode_heard(json.loads(h.json)) for h in held]
    lives = [e for e in sent if isinstance(e, EngineLive)]
    assert [e for e in got if not isinstance(e, EngineLive)] == [
        e for e in sent if not isinstance(e, EngineLive)]
    assert [e for e in got if isinstance(e, EngineLive)] == lives[-1:]
    seqs = [h.seq for h in held]
    assert seqs == sorted(seqs)
    rest = board.fetch(link, after)
    assert rest is not None and all(h.seq > after for h in rest)
    assert [h.seq for h in rest] == [s for s in seqs if s > after]
