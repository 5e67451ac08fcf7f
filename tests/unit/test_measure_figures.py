"""The capacity sum, on the worked example a queue owner would do by hand."""

from __future__ import annotations

from server.domain.measures.figures import capacity, round_up_to_minute, share


def test_the_worked_example_has_24_minutes_of_headroom() -> None:
    # 24 arrivals a day at 8 minutes each, 15 in backlog cleared over 5 days, 240 available.
    found = capacity(
        arrivals_per_day=24,
        handling_minutes_mean=8,
        backlog=15,
        clear_backlog_in_days=5,
        available_minutes_per_day=240,
    )

    assert found.demand_minutes_per_day == 192
    assert found.backlog_minutes_per_day == 24
    assert found.headroom_minutes_per_day == 24
    assert found.enough is True


def test_without_a_handling_time_the_minutes_are_unknown_not_zero() -> None:
    found = capacity(
        arrivals_per_day=3,
        handling_minutes_mean=None,
        backlog=4,
        clear_backlog_in_days=5,
        available_minutes_per_day=60,
    )

    assert (found.demand_minutes_per_day, found.headroom_minutes_per_day, found.enough) == (
        None,
        None,
        None,
    )


def test_a_share_of_nothing_is_unknown_and_minutes_round_up() -> None:
    assert share(1, 0) is None
    assert share(1, 4) == 0.25
    assert round_up_to_minute(61) == 120
    assert round_up_to_minute(60) == 60
