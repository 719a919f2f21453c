"""Keys stay responsive while the engine is busy: every key reaches the engine while its
reader thread is stuck and a thread hogs the GIL. What is asserted is the order (each command
arrives while the reader is still blocked), never a speed: the time from key to engine is
printed (`pytest -s`; the budget is 100 ms), as a shared 2-core machine makes any timed
assertion flaky. `HANG_S` only tells a hang from a slow machine.

Keys go in the way a terminal's do (the driver posts a Key event), not through
`pilot.press`, which waits for the process to go idle after each key: a GIL hog never lets
it, and its waits would be measured too. Toggles are sent without the settling delay here
(apply_delay_s=0): what is measured is the dashboard's own latency, not the wait it adds on
purpose.
"""

from __future__ import annotations

import asyncio
import threading
import time
from dataclasses import replace

from textual import events

from probe.contract.protocol import PUBLISH_INTERVAL_S, EngineLive
from tests.fake_engine import FakeEngine

KEYS = (("c", "c"), ("b", "b"), ("space", " "), ("plus", "+"), ("minus", "-"), ("r", "r"),
        ("g", "g"), ("space", " "), ("k", "k"), ("B", "B")) * 2
HANG_S = 60.0


async def _press_and_measure(app, engine: FakeEngine) -> list[float]:
    latencies = []
    for key, char in KEYS:
        before = len(engine.received)
        event = events.Key(key, char)
        event.set_sender(app)
        start = time.perf_counter()
        app._driver.send_message(event)
        deadline = start + HANG_S
        while len(engine.received) == before and time.perf_counter() < deadline:
            await asyncio.sleep(0.001)
        received = engine.received[before:]
        assert received, f"{key!r} sent nothing within {HANG_S} s"
        latencies.append(received[0].at - start)
        await asyncio.sleep(0.05)          # keys a person types, not a paste
    return latencies


def _report(name: str, latencies: list[float]) -> None:
    ms = sorted(x * 1000 for x in latencies)
    print(f"\n{name}: key → engine, n={len(ms)}: median {ms[len(ms) // 2]:.1f} ms, "
          f"max {ms[-1]:.1f} ms; all: {', '.join(f'{x:.0f}' for x in ms)}")


async def test_keys_reach_the_engine_while_its_reader_is_blocked(make_app, gil_hog):
    engine = FakeEngine()
    engine.hold()                          # the reader thread is stuck inside poll()
    app = make_app(engine, at="compiling", apply_delay_s=0)
    async with app.run_test(size=(120, 40)):
        gil_hog()
        latencies = await _press_and_measure(app, engine)   # the reader is stuck all along
        engine.release()
    _report("reader blocked + GIL hog", latencies)


async def test_keys_reach_the_engine_while_full_snapshots_stream_in(make_app, stages, gil_hog):
    engine = FakeEngine()
    alternate = (stages["compiled"], stages["bucketing"])   # every panel changes each time
    stop = threading.Event()

    def stream() -> None:                   # at the engine process's publish rate
        n = 0
        while not stop.wait(PUBLISH_INTERVAL_S):
            n += 1
            engine.emit(EngineLive(replace(alternate[n % 2], t_s=1000.0 + n)))

    app = make_app(engine, at="compiling", apply_delay_s=0)
    async with app.run_test(size=(120, 40)):
        feeder = threading.Thread(target=stream, daemon=True)
        feeder.start()
        gil_hog()
        try:
            latencies = await _press_and_measure(app, engine)
        finally:
            stop.set()
            feeder.join()
        assert app.view.t_s > 1000.0     # snapshots really were drawn meanwhile
    _report("snapshots streaming + GIL hog", latencies)
