"""A daily rise of a delay series on a path with no throughput tests (ping, owamp, RIPE Atlas
alone): one ``diurnal_saturation`` naming its busy hours and size (signal ``delay``), not a
latency change every evening — and nothing where the rise is below the significance, where the
delay stepped and stayed, or where throughput tests say the link keeps its rate."""

import math

import numpy as np

from pathwatch.models.monitor import PathMonitor
from pathwatch.models.observe import LatencyObs
from tests.detector_series import DAY, HOUR, T0, latency, latency_times, run, throughput_series

EVERY = 240.0


def rtt(t: float, value: float) -> LatencyObs:
    """A RIPE Atlas-like ping result: the minimum of 3 packets, nothing else."""
    return LatencyObs(t=t, ok=True, one_way=False, sent=3, lost=0, loss=0.0, delay_min_ms=value,
                      delay_median_ms=None, delay_p95_ms=None, clock_error_ms=None, synchronized=None)


def evening(t: float, rise: float, *, start_h: float = 19.0, end_h: float = 22.0) -> float:
    """``rise`` over ``start_h``..``end_h`` UTC, ramping up and down over a quarter of an hour."""
    h = (t % DAY) / HOUR
    return rise * max(0.0, min(1.0, (h - start_h) * 4, (end_h - h) * 4))


def rtt_series(days: float, value, seed: int = 3) -> list[LatencyObs]:
    rng = np.random.default_rng(seed)
    return [rtt(T0 + i * EVERY, value(T0 + i * EVERY) + abs(rng.normal(0, 1.5)))
            for i in range(int(days * DAY / EVERY))]


def detect(observations) -> tuple[list, PathMonitor]:
    monitor, latest = PathMonitor("probe", "anchor"), {}
    for obs in sorted(observations, key=lambda o: o.t):
        for anomaly in monitor.observe(obs):
            latest[anomaly.id] = anomaly
    return sorted(latest.values(), key=lambda a: a.start), monitor


def test_an_evening_rise_every_day_is_one_daily_alarm_naming_its_hours():
    found, _ = detect(rtt_series(8, lambda t: 120.0 + evening(t, 35.0)))
    daily = [a for a in found if a.kind == "diurnal_saturation"]
    assert len(daily) == 1
    alarm = daily[0]
    assert alarm.evidence["signal"] == "delay" and alarm.evidence["one_way"] is False
    assert alarm.evidence["start_hour"] in (18, 19) and alarm.evidence["width_h"] <= 4
    assert 25.0 <= alarm.evidence["rise_ms"] <= 40.0
    assert alarm.start < T0 + 2 * DAY            # it began on the first days it was seen
    assert alarm.end is None
    assert "Daily delay rise" in alarm.summary and "no throughput tests" in alarm.summary
    # once named, the evenings are its own symptom, not a latency change each
    late = [a for a in found if a.kind == "latency_shift" and a.start > T0 + 3 * DAY]
    assert late == []


def test_a_rise_below_the_significance_is_no_daily_alarm():
    """+8 ms on 120 ms: under 10 % of the level, what operators do not call a change."""
    found, _ = detect(rtt_series(8, lambda t: 120.0 + evening(t, 8.0)))
    assert [a.kind for a in found if a.kind == "diurnal_saturation"] == []


def test_a_level_that_stepped_and_stayed_is_no_daily_pattern():
    found, _ = detect(rtt_series(8, lambda t: 120.0 + (40.0 if t >= T0 + 3 * DAY + 19 * HOUR else 0.0)))
    assert [a.kind for a in found] == ["latency_shift"]


def test_throughput_tests_that_keep_their_rate_decide_against_a_delay_rise():
    """The same evening rise on a path that also runs iperf3, whose runs keep their rate in those
    hours: a queue on a link with room for the test's stream, not a full link."""
    rng = np.random.default_rng(5)
    runs = [run(t, bps, rtt_ms=120.0) for t, bps in throughput_series(rng, 8, every_h=1.0)]
    found, _ = detect(rtt_series(8, lambda t: 120.0 + evening(t, 35.0)) + runs)
    assert [a for a in found if a.kind == "diurnal_saturation"] == []


def test_a_one_way_rise_within_the_clocks_error_bound_is_no_daily_alarm():
    """A one-way floor that swells 1.5 ms every afternoon with clocks good to 1 ms: a clock that
    follows the day's temperature may do that; twice the bound is what the path must show."""
    rng = np.random.default_rng(9)

    def floor(t: float) -> float:
        return 20.0 + 1.5 * math.exp(-0.5 * (((t % DAY) / HOUR - 15) / 2.0) ** 2)
    found, _ = detect([latency(t, floor(t) + rng.normal(0, 0.05), clock_error=1.0) for t in latency_times(6)])
    assert [a for a in found if a.kind == "diurnal_saturation"] == []
    found, _ = detect([latency(t, floor(t) + rng.normal(0, 0.05), clock_error=0.1) for t in latency_times(6)])
    assert [a.evidence["signal"] for a in found if a.kind == "diurnal_saturation"] == ["delay"]


def test_a_day_far_above_the_pattern_still_alarms_at_its_step():
    """+80 ms from 19:30 to 21:00 on day 8, on top of that evening's +35 ms: a change of its own,
    opened at its step (not where the evening's ramp began) and closed as the evening ends."""
    extra_from, extra_to = T0 + 8 * DAY + 19.5 * HOUR, T0 + 8 * DAY + 21 * HOUR
    found, _ = detect(rtt_series(10, lambda t: 120.0 + evening(t, 35.0) + (80.0 if extra_from <= t < extra_to else 0.0)))
    shifts = [a for a in found if a.kind == "latency_shift" and a.start > T0 + 3 * DAY]
    assert shifts and abs(shifts[0].start - extra_from) <= 2 * EVERY
    assert shifts[0].evidence["step_ms"] > 70.0
    assert all(a.end is not None and a.end <= T0 + 8 * DAY + 22.5 * HOUR for a in shifts)
    assert len([a for a in found if a.kind == "diurnal_saturation"]) == 1
