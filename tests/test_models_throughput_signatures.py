"""Issue 16: throughput kinds named only from what their cause alone does on the wire.

A path MTU black hole stalls a run's start with retransmits (the vanished head segment resent at
each timeout); a slow start on a long fat path moves as little in its first seconds but loses
nothing. Small constructed series, no simulator.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from pathwatch.models.config import DetectorConfig
from pathwatch.models.engine import replay_observations
from tests.detector_series import DAY, HOUR, T0, latency, latency_times, run, throughput_series


def detect(observations, enabled=("mtu", "levels")):
    return replay_observations("a", "b", observations, config=DetectorConfig(enabled=enabled))


def long_fat_path(rng, days=4, *, stall_retransmits=0, keep=1.0, windows=False):
    """A 170 ms, 6 Gb/s path whose every run takes 1-2 s of slow start before it moves a tenth of
    its rate; in the busy hours (08-16 h) runs stall 2 s with ``stall_retransmits`` and keep
    ``keep`` of the rate; ``windows``: each run reports its largest window (rate × RTT)."""
    obs = []
    for i, (t, bps) in enumerate(throughput_series(rng, days, level=6e9)):
        busy = 8 * HOUR <= (t - T0) % DAY < 16 * HOUR   # busy hours: a longer RTT
        rate = bps * keep if busy else bps
        rtt = 170.0 + 5.0 * busy
        r = run(t, rate, rtt_ms=rtt, retransmits=10, stall_s=2.0 if busy else 1.0,
                stall_retransmits=stall_retransmits if busy else 0)
        obs.append(replace(r, window_bytes=int(rate * rtt / 8e3)) if windows else r)
    return obs


def test_a_slow_start_on_a_long_fat_path_is_no_mtu_blackhole():
    """Runs whose first 2 s move under a tenth of the run's rate, without a retransmit, at the
    usual rate: slow start (the old code named them a black hole every busy afternoon)."""
    found = detect(long_fat_path(np.random.default_rng(1)))
    assert not [a for a in found if a.kind in ("mtu_blackhole", "throughput_drop")], [a.summary for a in found]


@pytest.mark.parametrize("windows", [False, True])
def test_stalls_that_retransmit_and_crawl_are_an_mtu_blackhole(windows):
    """Stalls that resend the lost segment at every timeout, the run crawling on at a few hundred
    kb/s, its window a few segments: the black hole's own signature (docs/pathologies.md, MTU
    black hole: 380 kb/s on a 2.67 Gb/s path)."""
    found = detect(long_fat_path(np.random.default_rng(1), stall_retransmits=4, keep=0.002, windows=windows))
    assert [a.kind for a in found if a.kind == "mtu_blackhole"], [a.summary for a in found]


@pytest.mark.parametrize("windows", [False, True])
def test_a_busy_hour_start_that_loses_segments_is_no_mtu_blackhole(windows):
    """Busy-hour runs whose slow start overshoots a full queue: the stall retransmits, but the run
    carries on at a third of its rate with a third of its window (a congestion loss halves the
    window once; a hole resets it to one segment at every timeout). The old code named a black
    hole every busy afternoon."""
    found = detect(long_fat_path(np.random.default_rng(1), stall_retransmits=6, keep=0.35, windows=windows))
    assert not [a for a in found if a.kind == "mtu_blackhole"], [a.summary for a in found]


def dipped(rng, *, low_runs, keep=0.65, days=5, onset=T0 + 3 * DAY + 8 * HOUR):
    """Runs every 2 h at ~9 Gb/s; ``low_runs`` runs from ``onset`` keep ``keep`` of the rate (None: to the end)."""
    obs = []
    for t, bps in throughput_series(rng, days, noise=0.04):
        k = (t - onset) // (2 * HOUR)
        low = t >= onset and (low_runs is None or k < low_runs)
        obs.append(run(t, bps * keep if low else bps, retransmits=10))
    return obs


def test_a_dip_that_is_back_up_when_it_could_be_named_is_no_throughput_drop():
    """Four low runs over 6 h (a loaded host, a burst of cross traffic), then the rate is back: the
    old code named a drop on the first run back at the baseline."""
    for seed in range(4):
        found = detect(dipped(np.random.default_rng(seed), low_runs=4), enabled=("levels",))
        assert not [a for a in found if a.kind == "throughput_drop"], (seed, [a.summary for a in found])


def test_a_drop_that_persists_is_named_while_it_lasts():
    for seed in range(4):
        found = detect(dipped(np.random.default_rng(seed), low_runs=None), enabled=("levels",))
        drops = [a for a in found if a.kind == "throughput_drop"]
        assert len(drops) == 1 and drops[0].detected_at - (T0 + 3 * DAY + 8 * HOUR) <= 12 * HOUR, [a.summary for a in found]


def nic_paced(rng, *, cv_low, keep=0.65, days=5, onset=T0 + 3 * DAY + 8 * HOUR, hours=12.0):
    """A 1 Gb/s path its NIC paces evenly (interval CV ~0.004); for ``hours`` from ``onset`` its runs
    keep ``keep`` of the rate with interval CV ``cv_low`` and no retransmits."""
    obs = []
    for t, bps in throughput_series(rng, days, level=0.94e9, noise=0.003):
        low = onset <= t < onset + hours * HOUR
        cv = cv_low * rng.uniform(0.7, 1.3) if low else rng.uniform(0.002, 0.006)
        obs.append(run(t, min(bps, 0.94e9) * (keep if low else 1.0), cv=cv, retransmits=0))
    return obs


def test_runs_a_loaded_host_paces_unevenly_are_no_throughput_drop():
    """Half a day of runs at 65 % that move their bytes in uneven gulps (CV ~0.08 where the NIC's
    pace gives ~0.004) and lose nothing: the host's CPU sets the pace, not the network."""
    for seed in range(4):
        found = detect(nic_paced(np.random.default_rng(seed), cv_low=0.08), enabled=("levels",))
        assert not [a for a in found if a.kind == "throughput_drop"], (seed, [a.summary for a in found])


def test_an_even_drop_on_the_same_path_is_a_throughput_drop():
    """The same drop paced as evenly as ever (a slower link or a policer): the network's."""
    for seed in range(4):
        found = detect(nic_paced(np.random.default_rng(seed), cv_low=0.004), enabled=("levels",))
        assert [a.kind for a in found if a.kind in ("throughput_drop", "window_limited")], (seed, [a.summary for a in found])


def test_a_host_busy_every_afternoon_on_a_standing_queue_path_is_no_diurnal_saturation():
    """A benign standing queue raises the delay floor and loses a few probes every afternoon (the
    latency tests corroborate a queue) while the TCP runs keep their rate; the hourly runs that
    fall in three of those hours are slowed by their own host's CPU (uneven seconds, no
    retransmits). The old code named a diurnal saturation from them; they say nothing about the
    path's queue."""
    from tests.detector_series import latency, latency_times

    rng = np.random.default_rng(3)
    obs = []
    for t, bps in throughput_series(rng, 5, every_h=1.0, level=0.94e9, noise=0.003):
        loaded = 12.5 <= (t - T0) % DAY / HOUR < 15.5
        obs.append(run(t, min(bps, 0.94e9) * (0.6 if loaded else 1.0), retransmits=0,
                       cv=0.09 if loaded else rng.uniform(0.002, 0.006)))
    for t in latency_times(5):
        busy = 11.0 <= (t - T0) % DAY / HOUR < 16.0
        obs.append(latency(t, 10.0 + rng.normal(0, 0.02) + 8.0 * busy, queue=0.3 + 0.5 * busy,
                           lost=int(rng.binomial(6000, 2e-3 if busy else 1e-5))))
    found = detect(obs, enabled=("diurnal", "levels"))
    assert not [a for a in found if a.kind == "diurnal_saturation"], [a.summary for a in found]


@pytest.mark.parametrize("seed", range(6))
def test_a_noisy_path_is_no_throughput_drop(seed):
    """Three weeks of runs every 2 h on a path whose rate swings ±17 % run to run (cross traffic
    from many flows), nothing changing. The old baseline kept out every run halfway to the
    threshold, so its median crept up and its spread down until noise read as a 30 % drop."""
    obs = [run(t, bps, retransmits=10) for t, bps in throughput_series(np.random.default_rng(seed), 21, noise=0.17)]
    found = detect(obs, enabled=("levels",))
    assert not [a for a in found if a.kind == "throughput_drop"], [a.summary for a in found]


def loaded_host(rng, *, load=(T0 + 3 * DAY + 7 * HOUR, T0 + 3 * DAY + 17 * HOUR), queue=False, days=5):
    """Runs every 2 h at ~9 Gb/s and latency tests every 10 min (tail p95 − min 0.3 ms); during
    ``load`` (a 10-hour backup job on the receiver) the runs keep 60 % and the latency tests'
    tail grows to 1.8 ms while their median and loss stay — or, with ``queue``, a queue on the
    path: the median rises with the tail (a queue that fills without overflowing: lost probes
    would make the drop the loss's, named by the loss detector)."""
    obs = []
    for t, bps in throughput_series(rng, days, noise=0.04):
        obs.append(run(t, bps * (0.6 if load[0] <= t < load[1] else 1.0), retransmits=10))
    for t in latency_times(days):
        busy = load[0] <= t < load[1]
        sample = latency(t, 20.0 + rng.normal(0, 0.02), queue=0.05 + (0.8 if busy and queue else 0.0))
        obs.append(replace(sample, delay_p95_ms=sample.delay_min_ms + (1.8 if busy else 0.3)))
    return sorted(obs, key=lambda o: o.t)


def test_runs_slowed_while_the_host_is_loaded_are_no_throughput_drop():
    """Ten hours of runs at 60 % while the path's latency tests show the host's tell: a longer
    delay tail with the typical delay and loss as before (the old code named a drop)."""
    for seed in range(4):
        found = detect(loaded_host(np.random.default_rng(seed)), enabled=("levels",))
        assert not [a for a in found if a.kind == "throughput_drop"], (seed, [a.summary for a in found])


def test_a_loaded_host_seen_in_owamps_tenths_of_a_millisecond_is_no_throughput_drop():
    """owamp reports delays in tenths of a millisecond. The loaded host stamps the typical probe
    two ticks late (median − min 0.2 ms, the slack allowed, which floats compute as 0.2000000000000028)
    and one of its tests loses a probe after days of none: the old code read the first as a rise
    past the slack and the second as loss up, and named a drop."""
    load = (T0 + 3 * DAY + 7 * HOUR, T0 + 3 * DAY + 17 * HOUR)
    for seed in range(4):
        rng = np.random.default_rng(seed)
        obs = [run(t, bps * (0.6 if load[0] <= t < load[1] else 1.0), retransmits=10)
               for t, bps in throughput_series(rng, 5, noise=0.04)]
        for i, t in enumerate(latency_times(5)):
            busy = load[0] <= t < load[1]
            floor = round(36.0 + rng.normal(0, 0.05), 1)
            typical, tail = (round(floor + 0.2, 1), round(floor + 2.3, 1)) if busy else (floor, round(floor + 0.3, 1))
            obs.append(replace(latency(t, floor, lost=int(busy and i % 6 == 0)),
                               delay_median_ms=typical, delay_p95_ms=tail))
        found = detect(sorted(obs, key=lambda o: o.t), enabled=("levels",))
        assert not [a for a in found if a.kind == "throughput_drop"], (seed, [a.summary for a in found])


def test_runs_slowed_while_a_queue_fills_the_path_are_still_a_throughput_drop():
    """The same runs at 60 %, for good, with the latency tests' median delay rising with their
    tail: a queue on the path, the network's, still named."""
    for seed in range(4):
        found = detect(loaded_host(np.random.default_rng(seed), queue=True, load=(T0 + 3 * DAY + 7 * HOUR, T0 + 9 * DAY)),
                       enabled=("levels",))
        assert [a for a in found if a.kind == "throughput_drop"], seed


def loaded_for_hours(rng, *, after=(0.95, 0.95, 0.85, 0.8)):
    """Runs every 2 h on a path that swings ±10 % run to run; at day 3, 08 h, four runs over 6 h at
    50-66 % (a host busy for some hours), then the rate back at ``after`` of the baseline, then as
    ever."""
    dip, before = (0.57, 0.5, 0.66, 0.64), (0.82, 1.0)
    episode = before + dip + tuple(after)
    onset = T0 + 3 * DAY + 4 * HOUR
    obs = []
    for t, bps in throughput_series(rng, 6, noise=0.1):
        k = int((t - onset) // (2 * HOUR))
        obs.append(run(t, 7e9 * episode[k] if 0 <= k < len(episode) else bps * 7 / 9, retransmits=15))
    return obs


def test_a_few_hours_dip_and_a_noisy_way_back_are_no_throughput_drop():
    """The dip lasts 6 h — shorter than a drop must persist (``tput_span_s``) — but with the runs on
    either side of it low by noise the median of the last eight runs sat a quarter down: the old level
    test named a drop. The runs clearly low (below the per-run threshold) span only the dip."""
    for seed in range(6):
        found = detect(loaded_for_hours(np.random.default_rng(seed)), enabled=("levels",))
        assert not [a for a in found if a.kind == "throughput_drop"], (seed, [a.summary for a in found])


def test_a_drop_that_stays_after_the_noisy_runs_is_named():
    """The same runs, the rate staying at 60 % after them: a drop, named once its low runs span ``tput_span_s``."""
    for seed in range(6):
        found = detect(loaded_for_hours(np.random.default_rng(seed), after=(0.95, 0.6, 0.62, 0.58) + (0.6,) * 30),
                       enabled=("levels",))
        assert [a for a in found if a.kind == "throughput_drop"], seed
