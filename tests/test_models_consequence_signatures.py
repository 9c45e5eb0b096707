"""Issue 16: a consequence is not named as its own cause.

A path whose packet loss rises slows every loss-based TCP flow on it (Mathis et al.: rate <= MSS /
(RTT sqrt(p)) C, so the rate falls at least as 1/sqrt(p)): the throughput drop is the loss's, not
a drop of unknown cause. A route onto a longer (or shorter) path moves every packet's delay at
the moment the route moves: the delay step is the route's. Small constructed series, no simulator.
"""

from __future__ import annotations

import numpy as np

from pathwatch.models.config import DetectorConfig
from pathwatch.models.engine import replay_observations
from tests.detector_series import DAY, HOUR, T0, latency, latency_times, run, throughput_series, trace

ONSET = T0 + 3 * DAY + 8 * HOUR


def detect(observations, enabled):
    observations = sorted(observations, key=lambda o: o.t)
    return replay_observations("a", "b", observations, config=DetectorConfig(enabled=enabled))


def lossy_path(rng, *, loss_after, burst_only=False, days=5):
    """Runs every 2 h at ~9 Gb/s that keep 2 % of the rate from ``ONSET``; latency tests every
    10 min (6000 probes) losing 1e-5 before it and ``loss_after`` from it (or, ``burst_only``, one
    hour of heavy loss and none otherwise)."""
    obs = [run(t, bps * 0.02 if t >= ONSET else bps, retransmits=60 if t >= ONSET else 2)
           for t, bps in throughput_series(rng, days, noise=0.04)]
    for t in latency_times(days):
        rate = 1e-5
        if t >= ONSET:
            rate = (0.05 if ONSET <= t < ONSET + HOUR else 1e-5) if burst_only else loss_after
        obs.append(latency(t, 10.0, lost=int(rng.binomial(6000, rate))))
    return obs


def test_a_throughput_drop_that_the_paths_new_loss_explains_is_the_losss():
    """Probe loss up 100x (1e-5 -> 1e-3): a loss-based TCP's rate falls at least 10x, past any
    drop threshold. The old code named a throughput_drop beside the loss."""
    for seed in range(3):
        found = detect(lossy_path(np.random.default_rng(seed), loss_after=1e-3), ("levels",))
        assert not [a for a in found if a.kind == "throughput_drop"], (seed, [a.summary for a in found])


def test_a_drop_without_new_loss_or_with_one_burst_is_still_a_throughput_drop():
    """The same drop with the probes' loss unchanged (a slower bottleneck: the flow loses only its
    own packets), or with one burst in an hour no run saw: a throughput drop of its own."""
    for seed in range(3):
        for kwargs in ({"loss_after": 1e-5}, {"loss_after": 1e-5, "burst_only": True}):
            found = detect(lossy_path(np.random.default_rng(seed), **kwargs), ("levels",))
            assert [a for a in found if a.kind == "throughput_drop"], (seed, kwargs)


OLD = ["10.0.0.1", "10.0.1.1", "10.0.2.1", "10.0.3.1", "10.0.9.9"]
NEW = ["10.0.0.1", "10.0.1.1", "172.16.5.1", "172.16.6.1", "172.16.7.1", "10.0.9.9"]


def rerouted_path(*, route_moves: bool, days=5, step_ms=5.0):
    """One-way delay 10 ms every 10 min, traces every hour; at ``ONSET`` the delay steps up by
    ``step_ms`` and (``route_moves``) the traces take a new route from the next one on."""
    obs = [latency(t, 10.0 + (step_ms if t >= ONSET else 0.0) + 0.02 * ((t // 600) % 3)) for t in latency_times(days)]
    for i in range(int(days * 24)):
        t = T0 + i * HOUR + 300.0
        moved = route_moves and t >= ONSET
        obs.append(trace(t, NEW if moved else OLD, rtt=25.0 if moved else 20.0))
    return obs


def test_a_delay_step_taken_with_a_route_move_is_the_routes():
    """The route detector names the route change; the levels detector, sharing its moves through
    the path's monitor, names no latency shift of its own (the old code named both)."""
    found = detect(rerouted_path(route_moves=True), ("route", "levels", "latency"))
    kinds = [a.kind for a in found]
    assert "route_change" in kinds and "latency_shift" not in kinds, [a.summary for a in found]


def test_a_delay_step_without_a_route_move_is_still_a_latency_shift():
    found = detect(rerouted_path(route_moves=False), ("route", "levels", "latency"))
    assert [a.kind for a in found] == ["latency_shift"], [a.summary for a in found]
