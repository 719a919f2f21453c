"""The live A/B end to end under Pilot, through real engine processes (t5-tiny, eager): `V`
then `k` runs kv_cache=off (B) beside the baseline (A). Arm B warms in a second engine, then
the two serve alternate requests (the queued ones split too), the status bar compares them, `s` saves both arms from the
journal, and `Esc` keeps A, which takes B's records in. Eager configs: the A/B is what is
tested; a compile would make this one test minutes here."""

from __future__ import annotations

import argparse
import asyncio
import json
import time
from pathlib import Path

import pytest

from probe.engine.process.engine_process import EngineClient, launch_from_args
from probe.engine.process.local_link import LocalLink
from tui.app import InfertopApp


async def wait(pilot, predicate, timeout: float = 300.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError("timed out")
        await pilot.pause(0.2)


def status(app) -> str:
    return str(app.query_one("#status").render())


@pytest.mark.slow
async def test_a_live_ab_serves_alternate_arrivals_compares_and_keeps_a(tmp_path: Path):
    args = argparse.Namespace(model="t5-tiny", trace="chat", device="cpu", opt=[], speed=4.0,
                              buckets="64,128", requests=None, max_input=128, max_output=8)
    launch = launch_from_args(args)
    client = EngineClient(launch)
    snapshots = tmp_path / "snapshots"
    app = InfertopApp(LocalLink(client), options=launch.options, snapshot_dir=snapshots, speed=4.0,
                      apply_delay_s=0)
    try:
        async with app.run_test(size=(200, 45)) as pilot:
            await wait(pilot, lambda: app.view is not None and app.view.recent)
            a_id = app.view.config_id
            await pilot.press("V", "k")
            await wait(pilot, lambda: app.ab.running is not None and app.ab.running.split)
            await wait(pilot, lambda: app.ab.running.comparison is not None
                       and min(app.ab.running.comparison.requests_a,
                               app.ab.running.comparison.requests_b) >= 4)
            ab = app.ab.running
            line = status(app)
            assert f"A/B {a_id} (A) ↔ {ab.b_id} kv_cache=off (B)" in line
            # at 200 columns the keys stay whole (the rate's note is the first to go when the
            # verdict is long: tui/fit_line.py)
            assert "Enter adopts B, Esc keeps A" in line
            a, b = ab.arms()
            assert all(r.config_id == a_id for r in a) and all(r.config_id == ab.b_id for r in b)
            seqs_a, seqs_b = {r.seq for r in a}, {r.seq for r in b}
            assert not seqs_a & seqs_b
            first = min(seqs_b) - 1                  # the first request after the split: A's
            # every other one: one parity each (an arrival racing the queue's split may swap
            # one pair)
            assert sum(s % 2 == (first + 1) % 2 for s in seqs_b) >= len(seqs_b) - 1
            assert sum(s % 2 == first % 2 for s in seqs_a) >= len(seqs_a) - 1
            compared = ab.comparison
            assert (compared.requests_a, compared.requests_b) == ab.compared_n  # its own counts
            assert compared.verdict in line.replace("\n", " ")

            await pilot.press("s")                   # two engines: saved from the journal
            await wait(pilot, lambda: list(snapshots.glob("*.json")))
            saved = json.loads(next(snapshots.glob("*.json")).read_text())
            configs = {r["config_id"] for r in saved["requests"]}
            assert {a_id, ab.b_id} <= configs
            # what the two engines hold is not served yet, not lost
            assert not [r for r in saved["requests"] if r.get("error")]

            await pilot.press("escape")              # keep A
            await wait(pilot, lambda: app.ab.running is None)
            b_id = ab.b_id
            # arm A takes B's records in: its view's segments count them
            await wait(pilot, lambda: any(s.config_id == b_id and s.requests >= len(b)
                                          for s in app.view.segments))
            kept_at = app.view.t_s
            await wait(pilot, lambda: any(r.arrival_s > kept_at + 1 for r in app.view.recent))
            after = [r for r in app.view.recent if r.arrival_s > kept_at + 1]
            assert all(r.config_id == a_id for r in after)    # A serves every arrival again
            served = [r.seq for r in app.view.recent]
            assert len(served) == len(set(served))            # none served twice
            await app.action_quit()
    finally:
        await asyncio.to_thread(client.stop)
