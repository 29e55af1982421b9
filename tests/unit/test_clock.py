"""The simulator's clock: timers on SimPy's queue, in SimPy's order, cancellable; the held call."""

import pytest

from sim.model import clock as clock_module
from sim.model.clock import PURGE_AT, Clock, Timer


def test_timers_fire_in_time_order_and_ties_in_the_order_they_were_set():
    clock = Clock()
    fired = []
    for name, delay in (("c", 2.0), ("a", 1.0), ("b", 1.0), ("d", 0.0)):
        clock.call_in(delay, lambda n: fired.append((n, clock.now)), name)
    clock.run()
    assert fired == [("d", 0.0), ("a", 1.0), ("b", 1.0), ("c", 2.0)]
    assert clock.fired == 4 and clock.last_event_s == 2.0


def test_a_cancelled_timer_does_nothing_and_is_not_counted():
    clock = Clock()
    fired = []
    clock.call_in(1.0, fired.append, "kept")
    clock.call_in(0.5, fired.append, "cancelled").cancel()
    clock.run()
    assert fired == ["kept"] and clock.fired == 1 and clock.last_event_s == 1.0


def test_a_timer_set_while_one_fires_counts_from_that_event():
    clock = Clock()
    fired = []
    clock.call_in(1.0, lambda: clock.call_in(0.5, lambda: fired.append(clock.now)))
    clock.run()
    assert fired == [1.5]


def test_a_run_cut_at_a_time_leaves_now_there_and_the_rest_pending():
    clock = Clock()
    fired = []
    for delay in (1.0, 3.0):
        clock.call_in(delay, fired.append, delay)
    clock.run(until=2.0)
    assert fired == [1.0] and clock.now == 2.0 and clock.last_event_s == 1.0
    clock.run()
    assert fired == [1.0, 3.0] and clock.now == 3.0


def test_a_negative_delay_is_refused():
    with pytest.raises(ValueError, match="negative delay"):
        Clock().call_in(-0.1, print)


def _live(clock: Clock) -> int:
    return sum(isinstance(e, Timer) and not e.cancelled for _, _, _, e in clock.env._queue)


def test_dead_timers_are_dropped_once_most_of_the_queue_and_the_rest_keep_their_order():
    """Thousands of cancelled timers among live ones, ties included: the queue stays
    short, and the live ones fire exactly as they would have with the dead ones kept."""
    clock = Clock()
    fired = []
    live = []
    for k in range(3000):
        timer = clock.call_in(float(k % 7), fired.append, k)  # many ties per time
        if k % 5:
            timer.cancel()
            timer.cancel()  # twice: counted once
        else:
            live.append(k)
        assert len(clock.env._queue) <= max(PURGE_AT, 2 * len(live) + 1)
    assert _live(clock) == len(live) == 600
    assert clock.dead == len(clock.env._queue) - 600
    clock.run()
    assert fired == sorted(live, key=lambda k: (k % 7, k))  # by time, ties as set
    assert clock.fired == 600 and clock.dead == 0 and not clock.env._queue


def _keep_alive_run(purge_at: int, monkeypatch) -> tuple[list[tuple[float, int]], int]:
    """Requests that each cancel the keep-alive the one before set, as they fire (the
    pattern that fills the queue with dead timers): what fired, and when; the longest
    the queue grew."""
    monkeypatch.setattr(clock_module, "PURGE_AT", purge_at)
    clock = Clock()
    fired: list[tuple[float, int]] = []
    kept: list[Timer] = []
    longest = [0]

    def request(k: int) -> None:
        longest[0] = max(longest[0], len(clock.env._queue))
        fired.append((clock.now, k))
        if kept:
            kept.pop().cancel()
        kept.append(clock.call_in(60.0, fired.append, (clock.now, -k)))
        if k < 4000:
            clock.call_in(0.25 * (k % 3), request, k + 1)  # zero delays: ties with `now`

    clock.call_in(0.0, request, 0)
    clock.run()
    assert clock.dead == 0
    return fired, longest[0]


def test_dropping_dead_timers_while_others_fire_changes_nothing(monkeypatch):
    never, longest_kept = _keep_alive_run(10**9, monkeypatch)
    purged, longest = _keep_alive_run(PURGE_AT, monkeypatch)
    assert purged == never and len(never) == 4002  # each request, the last keep-alive
    assert longest <= PURGE_AT < 200 < longest_kept  # ~240 dead keep-alives when kept


def test_a_cut_run_leaves_the_dead_counted_and_an_event_due_at_its_end_queued():
    clock = Clock()
    fired = []
    clock.call_in(5.0, lambda: None).cancel()
    clock.call_in(1.0, fired.append, "at the cut")  # SimPy's run(until) leaves it too
    clock.run(until=1.0)
    assert clock.dead == 1 and _live(clock) == 1 and not fired and clock.now == 1.0
    clock.run()
    assert fired == ["at the cut"] and clock.dead == 0 and clock.last_event_s == 1.0


def test_a_cut_at_or_before_now_is_refused():
    clock = Clock()
    clock.call_in(2.0, lambda: None)
    clock.run(until=1.0)
    with pytest.raises(ValueError, match="must be greater"):
        clock.run(until=1.0)


def test_a_timer_cancelled_after_it_fired_or_never_set_changes_no_count():
    clock = Clock()
    done = clock.call_in(1.0, lambda: None)
    clock.run()
    done.cancel()
    Timer(clock, lambda: None, ()).cancel()  # a sentinel never queued
    assert clock.dead == 0 and not clock.env._queue


def test_a_held_call_fires_in_the_order_a_timer_set_at_its_place_would():
    """`call_next` keys its call as `call_in` would: by time, then ties in setting order,
    before timers set after it and after those set before."""
    clock = Clock()
    fired = []

    def arrive(k: int) -> None:
        fired.append(("arrival", k, clock.now))
        if k < 2:
            clock.call_next(1.0, arrive, k + 1)  # ties with the timer set just below
        clock.call_in(1.0, fired.append, ("timer", k, clock.now + 1.0))

    clock.call_in(1.0, fired.append, ("timer", -1, 1.0))  # set before the first arrival
    clock.call_next(1.0, arrive, 0)
    clock.run()
    assert fired == [
        ("timer", -1, 1.0),
        ("arrival", 0, 1.0),
        ("arrival", 1, 2.0),  # set before arrival 0's timer, at the same time
        ("timer", 0, 2.0),
        ("arrival", 2, 3.0),
        ("timer", 1, 3.0),
        ("timer", 2, 4.0),
    ]
    assert clock.fired == 7


@pytest.mark.parametrize("due", [2.0, 3.0])  # at the cut, and past it
def test_a_held_call_due_at_or_past_a_cut_waits_for_the_next_run(due):
    clock = Clock()
    fired = []
    clock.call_next(due, fired.append, "held")
    clock.run(until=2.0)
    assert not fired and clock.now == 2.0
    clock.run()
    assert fired == ["held"] and clock.now == due


def test_a_run_ends_at_its_last_live_event_not_at_a_cancelled_timer_after_it():
    clock = Clock()
    clock.call_in(1.0, lambda: None)
    clock.call_in(1000.0, lambda: None).cancel()
    clock.run()
    assert clock.now == 1.0 and clock.env.now == 1.0 and clock.dead == 0


def test_a_run_after_a_cut_with_nothing_live_left_keeps_the_cut_time():
    clock = Clock()
    clock.call_in(1.0, lambda: None)
    clock.call_in(5.0, lambda: None).cancel()
    clock.run(until=2.0)
    clock.run()
    assert clock.now == 2.0  # time never runs backwards to the last live event


def test_a_second_held_call_while_one_is_pending_is_refused():
    clock = Clock()
    clock.call_next(1.0, print, "first")
    with pytest.raises(RuntimeError, match="still pending"):
        clock.call_next(2.0, print, "second")


def test_an_event_that_raises_leaves_simpys_time_level_with_the_clock():
    clock = Clock()

    def fail() -> None:
        raise RuntimeError("boom")

    clock.call_in(10.0, fail)
    with pytest.raises(RuntimeError):
        clock.run()
    assert clock.now == clock.env.now == clock.last_event_s == 10.0 and clock.fired == 1
    with pytest.raises(ValueError):
        clock.run(until=5.0)  # before now: going back in time is refused
