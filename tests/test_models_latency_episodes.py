"""latency_shift episodes mean what a user means: the failure modes seen on real RTT series.

Each series is an RTT series (one ping test every 4 minutes, like RIPE Atlas's) with noise, and
the change the test is about placed at a known sample.
"""

import numpy as np
import pytest

from pathwatch.models.config import DetectorConfig
from pathwatch.models.detectors.latency import VETOES, DelaySeries
from pathwatch.models.incidents import group
from pathwatch.models.monitor import PathMonitor
from pathwatch.models.observe import LatencyObs
from tests.detector_series import HOUR, T0

EVERY = 240.0
ONLY = DetectorConfig(enabled=("latency",))


def rtt(t: float, value: float) -> LatencyObs:
    return LatencyObs(t=t, ok=True, one_way=False, sent=3, lost=0, loss=0.0, delay_min_ms=value,
                      delay_median_ms=value + 0.5, delay_p95_ms=value + 1.0, clock_error_ms=None, synchronized=None)


def series(levels: list[tuple[float, float]], hours: float, *, seed: int = 1, noise: float = 0.4,
           spikes: dict[int, float] | None = None) -> list[LatencyObs]:
    """Samples every 4 minutes for ``hours``; ``levels`` is [(from hour, level ms)], ``spikes`` sample -> value."""
    rng = np.random.default_rng(seed)
    out = []
    for i in range(int(hours * 3600 / EVERY)):
        t = T0 + i * EVERY
        level = [v for h, v in levels if t >= T0 + h * HOUR][-1]
        value = (spikes or {}).get(i, level + abs(rng.normal(0, noise)))
        out.append(rtt(t, value))
    return out


def detect(observations):
    monitor = PathMonitor("probe", "anchor", ONLY)
    latest = {}
    for obs in observations:
        for anomaly in monitor.observe(obs):
            latest[anomaly.id] = anomaly
    return sorted(latest.values(), key=lambda a: a.start), monitor


def test_one_spike_the_other_way_does_not_close_an_open_shift():
    """A +40 ms shift at hour 10 with single samples back at the old level every 2 hours: one
    episode, still open, never "returned" at a spike."""
    spikes = {i: 200.0 for i in range(int(12 * HOUR / EVERY), int(60 * HOUR / EVERY), 30)}
    found, _ = detect(series([(0, 200.0), (10, 240.0)], 60, spikes=spikes))
    assert len(found) == 1 and found[0].end is None
    assert abs(found[0].start - (T0 + 10 * HOUR)) <= EVERY


def test_the_real_return_closes_the_shift_where_it_began():
    found, _ = detect(series([(0, 200.0), (10, 240.0), (30, 200.0)], 40))
    assert len(found) == 1
    assert abs(found[0].end - (T0 + 30 * HOUR)) <= EVERY
    assert found[0].evidence["ended"] == "delay returned to its baseline"


def test_a_step_inside_an_open_shift_is_its_own_change_of_the_same_incident():
    """270 ms, a +45 ms shift to 315, then +40 ms more: each step reported where it happened, the
    later following the earlier, one incident."""
    found, _ = detect(series([(0, 270.0), (10, 315.0), (20, 355.0)], 40))
    assert [round(a.evidence["level_ms"]) for a in found] == [315, 355]
    first, second = found
    assert abs(first.start - (T0 + 10 * HOUR)) <= EVERY and abs(second.start - (T0 + 20 * HOUR)) <= EVERY
    assert first.end == second.start and first.evidence["ended"] == "a further step"
    assert second.evidence["follows"] == first.id and second.evidence["from_level_ms"] == first.evidence["level_ms"]
    grouped = group(found)
    assert grouped[0].incident_id == grouped[1].incident_id == first.id


def test_jumping_through_the_baseline_is_a_new_shift_the_other_way():
    """202 → 170 → 235 ms: the rise is a shift of its own, found within the hour, not a return."""
    found, _ = detect(series([(0, 202.0), (10, 170.0), (20, 235.0)], 30))
    assert [a.evidence["step_ms"] > 0 for a in found] == [False, True]
    rise = found[1]
    assert abs(rise.start - (T0 + 20 * HOUR)) <= EVERY and rise.detected_at - rise.start <= HOUR
    assert found[0].evidence["ended"] == "the delay crossed its baseline to the other side"


def test_a_shift_starts_at_the_sample_that_stepped_not_where_it_was_confirmed():
    found, _ = detect(series([(0, 100.0), (5, 130.0)], 10))
    assert found[0].start == T0 + 5 * HOUR and found[0].detected_at > found[0].start


@pytest.mark.parametrize("seed", range(5))
def test_noise_alone_raises_nothing(seed):
    found, _ = detect(series([(0, 150.0)], 7 * 24, seed=seed, noise=2.0))
    assert found == []


def test_a_change_that_crept_is_held_and_kept_with_the_veto_that_held_it():
    """A floor that climbs 10 ms over an hour, a little each sample (a queue filling, no step),
    raises nothing within the day, and the monitor says which veto held it."""
    obs = series([(0, 50.0)], 12)
    for i, o in enumerate(obs):
        h = (o.t - T0) / HOUR
        if h >= 4:
            obs[i] = rtt(o.t, o.delay_min_ms + min(10.0, 10.0 * (h - 4)))
    found, monitor = detect(obs)
    assert found == []
    kept = monitor.vetoed()
    assert [v["veto"] for v in kept] == ["crept"] and kept[0]["verdict"] == "hold"
    assert set(v["veto"] for v in kept) <= set(VETOES)


def test_a_move_within_the_significance_inside_a_shift_is_no_change_of_its_own():
    """270 → 330 (+22 %), then 330 → 310: 20 ms is under the significance (27 ms), and 310 still
    beyond it from the baseline: no further step, no return; one shift, still open."""
    found, _ = detect(series([(0, 270.0), (10, 330.0), (20, 310.0)], 40))
    assert len(found) == 1 and found[0].end is None


def test_a_level_below_the_significance_is_dismissed_as_too_small_and_the_baseline_follows():
    """An RTT of 200 ms that settles 7 % higher: its samples are beyond the noise, the change under
    10 %: no shift, the veto kept, and a later 25 % step from the new level is found."""
    found, monitor = detect(series([(0, 200.0), (10, 214.0), (30, 268.0)], 40))
    assert [round(a.evidence["baseline_ms"]) for a in found] == [214]
    assert "too_small" in [v["veto"] for v in monitor.vetoed()]


def test_every_named_veto_is_a_method_of_the_detector():
    detector = DelaySeries("a", "b")
    assert all(callable(getattr(detector, f"_{veto}", None)) for veto in VETOES)


def test_a_few_lost_three_packet_pings_in_a_row_are_not_unreachable_but_a_dead_path_is():
    """Two or three 3-packet pings losing everything (9 probes) happen on a lossy path; four in a
    row (12 probes, 16 minutes) do not: unreachable then, and it closes at the next answer."""
    from dataclasses import replace

    config = DetectorConfig(enabled=("route",))

    def lost(obs):
        return replace(obs, lost=obs.sent, loss=1.0, delay_min_ms=None, delay_median_ms=None, delay_p95_ms=None)

    obs = series([(0, 100.0)], 10)
    for i in range(40, 43):
        obs[i] = lost(obs[i])
    for i in range(80, 84):
        obs[i] = lost(obs[i])
    monitor = PathMonitor("probe", "anchor", config)
    found = [a for o in obs for a in monitor.observe(o)]
    assert [(a.kind, a.start, a.end) for a in found if a.end is not None] == [("unreachable", obs[80].t, obs[84].t)]


def test_a_paths_one_way_delay_and_round_trip_are_two_series():
    """A host pair running owamp (10 ms one way) and ping (20 ms round trip), interleaved: a +8 ms
    step on the round trip alone is one shift of the RTT, found where it happened; the one-way
    series, never mixed with it, raises nothing."""
    from tests.detector_series import latency

    obs = []
    for i, ping in enumerate(series([(0, 20.0), (10, 28.0)], 20, noise=0.1)):
        obs.append(ping)
        obs.append(latency(ping.t + 60, 10.0 + 0.05 * (i % 3)))
    found, _ = detect(obs)
    assert [(a.evidence["one_way"], round(a.evidence["level_ms"])) for a in found] == [(False, 28)]
    assert abs(found[0].start - (T0 + 10 * HOUR)) <= EVERY


def test_a_return_that_ramps_back_is_a_return():
    """+40 ms at hour 10 (a step), back down over 20 minutes at hour 20 (a ramp: no sample-to-sample
    jump of half the change): the shift returned there, not held open until the ramp counts as a level."""
    def level(t: float) -> float:
        h = (t - T0) / HOUR
        return 200.0 + (40.0 if 10 <= h < 20 else 40.0 * max(0.0, 1 - (h - 20) * 3) if h >= 20 else 0.0)
    rng = np.random.default_rng(2)
    found, _ = detect([rtt(T0 + i * EVERY, level(T0 + i * EVERY) + abs(rng.normal(0, 0.4)))
                       for i in range(int(40 * HOUR / EVERY))])
    assert len(found) == 1
    assert found[0].end is not None and abs(found[0].end - (T0 + 20 * HOUR)) <= 3 * EVERY
