import pytest

from workloads.vclock import VirtualClock


def test_runs_at_speed_and_maps_back() -> None:
    clock = VirtualClock(100.0, speed=10.0)
    assert clock.virtual_at(101.0) == pytest.approx(10.0)
    assert clock.real_at(25.0) == pytest.approx(102.5)


def test_speed_change_keeps_the_past_and_does_not_jump() -> None:
    clock = VirtualClock(0.0, speed=1.0)
    clock.set_speed(5.0, 10.0)
    assert clock.virtual_at(5.0) == pytest.approx(5.0)  # no jump at the change
    assert clock.real_at(3.0) == pytest.approx(3.0)  # due before the change: unchanged
    assert clock.real_at(6.0) == pytest.approx(5.1)


def test_pause_stops_virtual_time_and_shifts_what_was_not_yet_due() -> None:
    clock = VirtualClock(0.0)
    clock.pause(2.0)
    assert clock.virtual_at(50.0) == pytest.approx(2.0)
    assert clock.real_at(3.0) is None
    assert clock.real_at(1.0) == pytest.approx(1.0)
    assert clock.real_at(2.0) == pytest.approx(2.0)
    clock.set_speed(4.0, 2.0)  # while paused: applies on resume
    assert clock.paused
    clock.resume(12.0)
    assert clock.real_at(3.0) == pytest.approx(12.5)
    assert clock.real_at(2.0) == pytest.approx(2.0)


def test_forgetting_history_keeps_future_answers() -> None:
    clock = VirtualClock(0.0)
    for change in range(1, 50):
        clock.set_speed(float(change), 1.0 + change % 3)
    before = [clock.real_at(v) for v in (200.0, 300.0)]
    clock.forget_before(150.0)
    assert [clock.real_at(v) for v in (200.0, 300.0)] == before


def test_speed_must_be_positive() -> None:
    with pytest.raises(ValueError):
        VirtualClock(0.0, speed=0.0)


def test_starting_paused_reaches_time_zero_only_on_resume() -> None:
    clock = VirtualClock(0.0, paused=True)
    assert clock.real_at(0.0) is None
    clock.resume(7.0)
    assert clock.real_at(0.0) == pytest.approx(7.0)
