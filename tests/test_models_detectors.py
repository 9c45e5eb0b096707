"""Each detector on focused synthetic series: it fires on its pathology and stays quiet on healthy ones."""

from __future__ import annotations

import pickle
from dataclasses import replace

import numpy as np
import pytest

from pathwatch.models.engine import replay_observations
from pathwatch.models.monitor import PathMonitor
from tests.detector_series import DAY, HOUR, T0, latency, latency_times, run, throughput_series, trace

A = ["10.0.0.1", "10.0.1.1", "192.0.2.1", "192.0.2.9", "10.9.0.1"]
A_ECMP = ["10.0.0.1", "10.0.1.2", "192.0.2.1", "192.0.2.9", "10.9.0.1"]
B = ["10.0.0.1", "10.0.1.1", "198.51.100.1", "198.51.100.7", "203.0.113.5", "10.9.0.1"]


def kinds(anomalies):
    return sorted(a.kind for a in anomalies)


def detect(observations, until=None):
    return replay_observations("a", "b", observations, until=until)


# ---------------------------------------------------------------- route_change
def _traces(rng, n, routes, start=T0, every=20 * 60, rtt=20.0):
    return [trace(start + i * every, list(routes[i % len(routes)]), rtt=rtt + rng.normal(0, 0.2)) for i in range(n)]


def test_ecmp_alternation_and_a_blip_are_not_route_changes():
    rng = np.random.default_rng(1)
    obs = _traces(rng, 200, [A, A_ECMP])
    obs[120] = trace(obs[120].t, B, rtt=20.1)  # one trace on another route, then back
    assert detect(obs) == []


def _owd(rng, start, end, level):
    return [latency(t, level + rng.normal(0, 0.05)) for t in np.arange(start, end, 600.0)]


def test_persistent_change_with_an_owd_step_opens_on_first_trace():
    rng = np.random.default_rng(2)
    before = _traces(rng, 100, [A, A_ECMP])
    change_t = before[-1].t + 20 * 60
    after = _traces(rng, 50, [B], start=change_t, rtt=27.0)
    owd = _owd(rng, T0 - 300, change_t - 600, 10.0) + _owd(rng, change_t - 300, after[-1].t, 13.5)
    found = [a for a in detect(before + after + owd) if a.kind == "route_change"]
    assert len(found) == 1
    change = found[0]
    assert change.start == change_t and change.detected_at == change_t
    assert change.evidence["divergence_ttl"] == 3
    assert change.evidence["old_hops"][1] == "192.0.2.1" or "192.0.2.1" in change.evidence["old_hops"]
    assert "198.51.100.1" in change.evidence["new_hops"]


def test_persistent_change_without_any_step_opens_on_third_trace_and_closes_on_revert():
    rng = np.random.default_rng(3)
    before = _traces(rng, 100, [A])
    start = before[-1].t + 20 * 60
    after = _traces(rng, 10, [B], start=start)
    back = _traces(rng, 10, [A], start=after[-1].t + 20 * 60)
    found = [a for a in detect(before + after + back) if a.kind == "route_change"]
    assert len(found) == 1
    assert found[0].start == start and found[0].detected_at == start + 2 * 20 * 60
    assert found[0].end == back[0].t


def test_two_blips_onto_the_same_detour_without_a_step_are_not_a_change():
    """Two traces in a row on the same one-off detour (no delay change) and back: not a change."""
    rng = np.random.default_rng(31)
    obs = _traces(rng, 120, [A])
    obs[100] = trace(obs[100].t, B, rtt=20.1)
    obs[101] = trace(obs[101].t, B, rtt=19.9)
    assert detect(obs) == []


def test_a_new_route_with_a_trace_rtt_step_opens_on_the_second_trace():
    rng = np.random.default_rng(32)
    before = _traces(rng, 100, [A])
    after = _traces(rng, 5, [B], start=before[-1].t + 20 * 60, rtt=24.0)
    found = [a for a in detect(before + after) if a.kind == "route_change"]
    assert len(found) == 1 and found[0].detected_at == after[1].t


def test_a_known_route_seen_by_another_tool_makes_a_candidate_a_blip():
    """tracepath (hourly) on a detour twice, traceroute on the known route in between: not a change."""
    rng = np.random.default_rng(33)
    obs = _traces(rng, 150, [A])
    obs += [trace(T0 + 600 + i * HOUR, A, tool="tracepath", rtt=20 + rng.normal(0, .2)) for i in range(50)]
    obs = sorted(obs, key=lambda o: o.t)
    detour = [i for i, o in enumerate(obs) if o.tool == "tracepath" and o.t > T0 + 1.5 * DAY][:2]
    for i in detour:
        obs[i] = trace(obs[i].t, B, tool="tracepath", rtt=20.0)
    assert detect(obs) == []
    # the same two tracepath traces with traceroute on the detour too is a change
    moved = [trace(o.t, B, tool=o.tool, rtt=20.0) if obs[detour[0]].t <= o.t <= obs[detour[1]].t else o for o in obs]
    assert kinds(detect(moved)) == ["route_change"]


def test_a_small_owd_step_on_a_steady_path_confirms_on_the_first_trace_but_not_on_a_noisy_one():
    """A 1 ms step is far outside a steady path's delay noise, not outside a noisy path's."""
    rng = np.random.default_rng(34)
    before = _traces(rng, 100, [A], rtt=60.0)
    change_t = before[-1].t + 20 * 60
    after = _traces(rng, 5, [B], start=change_t, rtt=61.5)
    for noise, first in ((0.02, True), (0.4, False)):
        owd = [latency(t, 30.0 + rng.normal(0, noise) + (1.0 if t >= change_t - 300 else 0.0))
               for t in np.arange(T0 - 300, after[-1].t, 600.0)]
        found = [a for a in detect(before + after + owd) if a.kind == "route_change"]
        assert len(found) == 1
        assert (found[0].detected_at == after[0].t) is first, noise


def _silent_change(rng, *, owd_step, dropped_only=False, shifted_before=False):
    """Route A for two days, then A with its 4th hop silent from ``change_t`` (a new router that never
    answers, or with ``dropped_only`` one dropped answer), latency every 10 min stepping by ``owd_step``."""
    silent = list(A)
    silent[3] = None
    before = _traces(rng, 150, [A], rtt=40.0)
    change_t = before[-1].t + 20 * 60
    after = _traces(rng, 30, [silent], start=change_t, rtt=40.0 + 2 * owd_step)
    if dropped_only:
        after = after[:1] + _traces(rng, 29, [A], start=after[1].t, rtt=40.0 + 2 * owd_step)
    step_t = change_t - 3 * HOUR if shifted_before else change_t - 300
    owd = [latency(t, 20.0 + rng.normal(0, 0.03) + (owd_step if t >= step_t else 0.0))
           for t in np.arange(T0 - 300, after[-1].t, 600.0)]
    if shifted_before:   # the traces' RTT moved with the delay, hours before the silent hop
        before = [trace(o.t, A, rtt=o.last_rtt_ms + 2 * owd_step) if o.t >= step_t else o for o in before]
    return [a for a in detect(before + after + owd) if a.kind == "route_change"], change_t, after


def test_a_new_silent_router_is_a_change_once_its_silence_outlasts_chance_dated_from_the_first_silent_trace():
    """Hop 4 answered all 150 traces, then stays silent: improbable by chance after four silent
    traces (three in a row after 150 answers: 1.7e-6, not yet below 1e-6; four: 4e-8) when the
    delay stepped with it; with the delay as before and the hop's neighbours answering as ever,
    once the silence outlasts a rate limiter (``silence_hold_s``: 3 h, the ninth trace after)."""
    rng = np.random.default_rng(35)
    for step, confirmed_by in ((-3.0, 3), (0.0, 9)):
        found, change_t, after = _silent_change(rng, owd_step=step)
        assert len(found) == 1 and found[0].start == change_t and found[0].detected_at == after[confirmed_by].t
        assert found[0].end is None
        assert found[0].evidence["divergence_ttl"] == 4 and "*" in found[0].evidence["new_hops"]


def test_one_dropped_answer_at_a_delay_step_is_not_a_change():
    # one dropped answer coinciding with a delay step; a route whose hop goes silent hours after
    # its delay moved is a silent router all the same, found by its silence once it outlasts a
    # rate limiter (the delay did not move with it)
    rng = np.random.default_rng(36)
    assert _silent_change(rng, owd_step=-3.0, dropped_only=True)[0] == []
    found, change_t, after = _silent_change(rng, owd_step=-3.0, shifted_before=True)
    assert len(found) == 1 and found[0].start == change_t and found[0].detected_at == after[9].t


def test_a_latency_shift_ending_as_a_hop_drops_its_answer_is_not_a_route_change():
    """Route A throughout; the delay (and the traces' RTT) 10 ms higher for two days from day 2;
    the first trace after it comes back misses hop 4's answer: back to A's usual delay, not a
    new silent router."""
    rng = np.random.default_rng(38)
    traces = _traces(rng, 72 * 5, [A])
    shift, back = T0 + 2 * DAY, T0 + 4 * DAY + 100   # (the sample before the next trace is back already)
    dropped = next(i for i, o in enumerate(traces) if o.t > back)
    silent = list(A)
    silent[3] = None
    traces = [trace(o.t, silent if i == dropped else A, rtt=o.last_rtt_ms + (20.0 if shift <= o.t < back else 0.0))
              for i, o in enumerate(traces)]
    owd = [latency(t, 10.0 + rng.normal(0, 0.03) + (10.0 if shift <= t < back else 0.0))
           for t in np.arange(T0 - 300, traces[-1].t, 600.0)]
    assert "route_change" not in kinds(detect(traces + owd))


def test_a_long_standing_route_returning_after_a_detour_of_days_is_not_a_second_change():
    rng = np.random.default_rng(37)
    before = _traces(rng, 72 * 8, [A])                      # 8 days on A
    detour = _traces(rng, 72 * 5, [B], start=before[-1].t + 1200, rtt=25.0)   # 5 days on B
    back = _traces(rng, 72 * 2, [A], start=detour[-1].t + 1200)
    owd = [latency(t, 10.0 + rng.normal(0, 0.03) + (2.5 if detour[0].t - 300 <= t < back[0].t - 300 else 0))
           for t in np.arange(T0 - 300, back[-1].t, 600.0)]
    found = [a for a in detect(before + detour + back + owd) if a.kind == "route_change"]
    assert len(found) == 1 and found[0].start == detour[0].t
    # ... also when the first trace back finds one of A's routers silent (with the delay step back)
    silent = list(A)
    silent[3] = None
    back_silent = [trace(back[0].t, silent)] + back[1:]
    found = [a for a in detect(before + detour + back_silent + owd) if a.kind == "route_change"]
    assert len(found) == 1 and found[0].start == detour[0].t
    # a route seen only briefly (here the first day alone) is forgotten after forget_s as before
    short = _traces(rng, 72, [A]) + _traces(rng, 72 * 6, [B], start=T0 + DAY, rtt=25.0)
    short += _traces(rng, 72, [A], start=short[-1].t + 1200)
    owd = [latency(t, 10.0 + rng.normal(0, 0.03) + (2.5 if t >= T0 + DAY - 300 else 0)) for t in
           np.arange(T0 - 300, short[-1].t, 600.0)]
    owd = [o if o.t < short[-72].t - 300 else latency(o.t, 10.0) for o in owd]
    assert len([a for a in detect(short + owd) if a.kind == "route_change"]) == 1


def test_an_owd_step_in_the_sample_after_the_candidate_trace_opens_before_the_next_trace():
    rng = np.random.default_rng(21)
    before = _traces(rng, 100, [A])
    change_t = before[-1].t + 15 * 60               # latency samples run every 10 min, traces every 20
    after = _traces(rng, 5, [B], start=before[-1].t + 20 * 60, rtt=28.0)   # (the round trip 8 ms longer too)
    owd = _owd(rng, T0 - 300, change_t, 10.0) + _owd(rng, change_t + 600, after[-1].t, 14.0)
    found = [a for a in detect(before + after + owd) if a.kind == "route_change"]
    assert len(found) == 1
    assert after[0].t < found[0].detected_at < after[1].t
    assert found[0].start == after[0].t


def test_new_as_with_an_rtt_step_confirms_a_change_at_once():
    rng = np.random.default_rng(4)
    asn_a, asn_b = [1, 1, 100, 100, 2], [1, 1, 300, 300, 300, 2]
    before = [trace(T0 + i * 1200, A, asns=asn_a, rtt=20 + rng.normal(0, .2)) for i in range(100)]
    after = [trace(T0 + (100 + i) * 1200, B, asns=asn_b, rtt=26 + rng.normal(0, .2)) for i in range(5)]
    found = [a for a in detect(before + after) if a.kind == "route_change"]
    assert len(found) == 1 and found[0].detected_at == after[0].t and found[0].evidence["as_changed"]


def test_a_one_trace_blip_onto_a_new_as_is_not_a_change():
    rng = np.random.default_rng(5)
    asn_a, asn_b = [1, 1, 100, 100, 2], [1, 1, 300, 300, 300, 2]
    obs = [trace(T0 + i * 1200, A, asns=asn_a, rtt=20 + rng.normal(0, .2)) for i in range(80)]
    obs[60] = trace(obs[60].t, B, asns=asn_b, rtt=20.3)
    assert detect(obs) == []


# ---------------------------------------------------------------- unreachable
def test_unreachable_opens_after_two_failures_and_closes_on_reach():
    rng = np.random.default_rng(5)
    ok = _traces(rng, 30, [A])
    cut = [trace(ok[-1].t + (i + 1) * 1200, A[:3] + [None] * 27, reached=False) for i in range(6)]
    again = _traces(rng, 3, [A], start=cut[-1].t + 1200)
    found = [a for a in detect(ok + cut + again) if a.kind == "unreachable"]
    assert len(found) == 1
    assert found[0].start == cut[0].t and found[0].detected_at == cut[1].t and found[0].end == again[0].t


def test_destination_that_never_answers_traces_is_not_unreachable():
    obs = [trace(T0 + i * 1200, A[:3] + [None] * 27, reached=False) for i in range(60)]
    assert detect(obs) == []


def test_total_loss_in_owamp_is_unreachable():
    times = latency_times(2)
    obs = [latency(t, 20.0, lost=6000 if i >= 200 else 0) for i, t in enumerate(times)]
    found = [a for a in detect(obs) if a.kind == "unreachable"]
    assert len(found) == 1 and found[0].start == times[200]


# ---------------------------------------------------------------- mtu_blackhole
def test_mtu_blackhole_from_tracepath_pmtu_drop_and_stalled_runs():
    rng = np.random.default_rng(6)
    obs = []
    for i in range(72):  # 1 day of tracepath at 9000 and runs every 2 h
        obs.append(trace(T0 + i * 1200, A, tool="tracepath", pmtu=9000))
    obs += [run(t, b) for t, b in throughput_series(rng, 1)]
    onset = T0 + DAY
    obs.append(trace(onset + 600, A[:3] + [None] * 5, reached=False, tool="tracepath", pmtu=1500, mtu_at=3))
    obs.append(run(onset + 1800, 17e6, stall_s=4.0, stall_retransmits=12))
    found = detect(obs)
    assert kinds(found) == ["mtu_blackhole"]
    assert found[0].evidence["path_mtu_now"] == 1500 and found[0].evidence["mtu_drop_ttl"] == 3


def test_one_stalled_run_alone_is_not_an_mtu_blackhole():
    rng = np.random.default_rng(7)
    obs = [run(t, b) for t, b in throughput_series(rng, 4)]
    obs[30] = run(obs[30].t, 5e9, stall_s=3.0, stall_retransmits=4)
    assert detect(obs) == []


# ---------------------------------------------------------------- levels
def test_throughput_drop_opens_after_a_persistent_low_level():
    rng = np.random.default_rng(8)
    runs = [run(t, b) for t, b in throughput_series(rng, 6)]
    onset = T0 + 3 * DAY
    runs = [r if r.t < onset else run(r.t, r.bps * 0.45, retransmits=3) for r in runs]
    found = detect(runs)
    assert kinds(found) == ["throughput_drop"]
    first_low = min(r.t for r in runs if r.t >= onset)
    assert found[0].start == first_low and found[0].detected_at - first_low <= 10 * HOUR


def test_healthy_throughput_noise_and_an_outlier_stay_quiet():
    rng = np.random.default_rng(9)
    runs = [run(t, b) for t, b in throughput_series(rng, 10, noise=0.1)]
    runs[50] = run(runs[50].t, 1e9)
    assert detect(runs) == []


def test_window_limited_runs_open_window_limited():
    rng = np.random.default_rng(10)
    runs = [run(t, b, rtt_ms=80.0, retransmits=int(rng.integers(0, 30))) for t, b in throughput_series(rng, 6)]
    onset = T0 + 3 * DAY
    window = 4 * 2**20
    runs = [r if r.t < onset else run(r.t, window * 8 / 0.080 * (1 + rng.normal(0, 0.01)), rtt_ms=80.0, cv=0.01)
            for r in runs]
    found = detect(runs)
    assert kinds(found) == ["window_limited"]
    assert abs(found[0].evidence["window_bytes"] - window) / window < 0.05


def test_a_congested_run_just_before_a_window_limit_does_not_hide_it():
    """Runs every 6 h; the one before the window limit began was congested (half the rate, 900
    retransmits), so it is among the low runs too: still a window limit, from its first flat run.
    A drop whose later runs retransmit is not one."""
    rng = np.random.default_rng(11)
    window, onset = 4 * 2**20, T0 + 3 * DAY
    series = list(throughput_series(rng, 6, every_h=6.0))
    congested = next(i for i, (t, _) in enumerate(series) if t >= onset) - 1

    def runs(limited):
        out = []
        for i, (t, b) in enumerate(series):
            if i == congested:
                out.append(run(t, b * 0.5, rtt_ms=80.0, retransmits=900))
            elif t >= onset:
                out.append(limited(t))
            else:
                out.append(run(t, b, rtt_ms=80.0, retransmits=int(rng.integers(0, 30))))
        return out
    found = detect(runs(lambda t: run(t, window * 8 / 0.080 * (1 + rng.normal(0, 0.01)), rtt_ms=80.0, cv=0.01)))
    assert kinds(found) == ["window_limited"]
    assert found[0].start >= onset
    dropped = detect(runs(lambda t: run(t, 4e8 * (1 + rng.normal(0, 0.01)), rtt_ms=80.0, cv=0.01, retransmits=300)))
    assert kinds(dropped) == ["throughput_drop"]


def test_latency_shift_up_opens_and_noise_stays_quiet():
    rng = np.random.default_rng(11)
    times = latency_times(4)
    onset = T0 + 2 * DAY
    obs = [latency(t, 20 + rng.normal(0, 0.1) + (6 if t >= onset else 0)) for t in times]
    found = detect(obs)
    assert kinds(found) == ["latency_shift"]
    assert found[0].start == onset and found[0].evidence["step_ms"] == pytest.approx(6, abs=0.5)
    quiet = [latency(t, 20 + rng.normal(0, 0.2)) for t in times]
    assert detect(quiet) == []


def test_a_settled_delay_shift_that_reverts_is_a_change_of_its_own():
    """Up 8 ms for four days (longer than the settling time: the new normal), then back: the move
    back after days is a lasting change a user must hear of (a route flapping back), not vetoed
    as "the old normal"."""
    rng = np.random.default_rng(19)
    times = latency_times(9)
    up, down = T0 + 2 * DAY, T0 + 6 * DAY   # up for four days: longer than the settling time
    obs = [latency(t, 20 + rng.normal(0, 0.1) + (8 if up <= t < down else 0)) for t in times]
    found = detect(obs)
    assert kinds(found) == ["latency_shift", "latency_shift"] and found[0].start == up
    assert found[0].evidence["ended"] == "the new delay became the path's normal"
    assert abs(found[1].start - down) <= HOUR and found[1].evidence["step_ms"] < -6
    assert found[1].evidence["follows"] == found[0].id       # (one problem: the incident grouper joins them)


# ---------------------------------------------------------------- loss
def _loss_series(rng, days, rate_at):
    return [latency(t, 20.0, lost=int(rng.binomial(6000, rate_at(t)))) for t in latency_times(days)]


def test_loss_step_from_zero_to_a_constant():
    rng = np.random.default_rng(12)
    onset = T0 + 4 * DAY
    obs = _loss_series(rng, 7, lambda t: 2e-3 if t >= onset else 1e-6)
    found = detect(obs)
    assert kinds(found) == ["loss_step"]
    assert abs(found[0].start - onset) <= HOUR and found[0].detected_at - onset <= 12 * HOUR


def test_a_step_that_starts_within_an_hour_is_named_within_hours():
    """The step starts 25 minutes into an hour: that hour's first samples lost nothing, which is no
    sign of bursts (the hour holds the change), so the step is named after its first hours."""
    rng = np.random.default_rng(12)
    onset = T0 + 4 * DAY + 25 * 60
    found = detect(_loss_series(rng, 7, lambda t: 3e-3 if t >= onset else 1e-6))
    assert kinds(found) == ["loss_step"]
    assert found[0].detected_at - onset <= 12 * HOUR


def test_a_few_lossy_samples_over_some_hours_are_bursts_not_a_step():
    """Six hours where four 10-minute samples each lose 3-7 % and the other 32 lose nothing: the
    hours' rate (0.6 %) would leave hardly any 6,000-packet sample lossless if it were steady."""
    rng = np.random.default_rng(20)
    bursts = {T0 + 4 * DAY + 6 * HOUR + m * 60 for m in (10, 60, 240, 310)}
    obs = [latency(t, 20.0, lost=int(rng.integers(180, 400)) if t in bursts else int(rng.binomial(6000, 1e-6)))
           for t in latency_times(7)]
    assert detect(obs) == []
    # the same loss spread over every sample of those hours is a step
    spread = [latency(t, 20.0, lost=int(rng.binomial(6000, 6e-3)) if T0 + 4 * DAY + 6 * HOUR <= t < T0 + 4 * DAY + 12 * HOUR
              else int(rng.binomial(6000, 1e-6))) for t in latency_times(7)]
    assert kinds(detect(spread)) == ["loss_step"]


def test_rising_loss_detected_before_it_passes_a_tenth_of_a_percent():
    rng = np.random.default_rng(13)
    onset, slope = T0 + 4 * DAY, 0.4e-2 / (14 * DAY)  # 0 → 0.4 % over two weeks
    obs = _loss_series(rng, 14, lambda t: 1e-6 + max(0.0, t - onset) * slope)
    monitor, emitted = PathMonitor("a", "b"), []
    for o in obs:
        emitted += monitor.observe(o)
    assert [a.severity for a in emitted] == ["warning", "major"], "opens once, re-emitted once as loss passes 0.1 %"
    assert len({a.id for a in emitted}) == 1 and emitted[1].evidence["last_day_loss_pct"] >= 0.1
    found = detect(obs)
    assert kinds(found) == ["rising_loss"]
    loss_then = (found[0].detected_at - onset) * slope
    assert loss_then < 1e-3, f"detected at {100 * loss_then:.3f} % loss"


def test_a_rise_that_starts_with_a_jump_is_a_step_then_a_rising_loss_from_its_start():
    """A failing member whose loss jumps to 0.013 % and then climbs: its first flat hours are named a
    step; once the loss keeps climbing, the step closes and a rising loss opens from its start,
    before the loss passes 0.1 % (median over four random series)."""
    onset = T0 + 4 * DAY + 34 * 60
    rate = lambda t: 1.4e-5 if t < onset else 1.3e-4 + 3e-3 * ((t - onset) / (8 * DAY)) ** 1.5  # noqa: E731
    rates_when_named = []
    for seed in range(4):
        rng = np.random.default_rng(seed)
        step, rise = detect(_loss_series(rng, 10, rate))
        assert (step.kind, rise.kind) == ("loss_step", "rising_loss")
        assert step.end == rise.detected_at and step.evidence["became"] == "rising_loss"
        assert rise.start == step.start and abs(rise.start - onset) <= HOUR and rise.end is None
        rates_when_named.append(rate(rise.detected_at))
    assert np.median(rates_when_named) < 1e-3, rates_when_named


def test_a_step_that_stays_flat_or_steps_again_is_not_renamed_a_rise():
    rng = np.random.default_rng(5)
    onset = T0 + 3 * DAY
    flat = detect(_loss_series(rng, 10, lambda t: 1.5e-3 if t >= onset else 1e-6))
    assert kinds(flat) == ["loss_step"] and flat[0].end is None
    again = detect(_loss_series(rng, 10, lambda t: 4e-3 if t >= onset + 3 * DAY else 1e-3 if t >= onset else 1e-6))
    assert kinds(again) == ["loss_step"] and again[0].end is None


def test_a_burst_hours_before_a_step_does_not_delay_it():
    """One sample losing 173 packets 3 h before a 0.135 % step (and a smaller burst before it): the
    burst hour counts at its quieter side's rate, not at the step's, so no rise towards the step is
    read into it and the step is named within hours."""
    rng = np.random.default_rng(0)
    onset = T0 + 4 * DAY + 34 * 60
    step_at = int((onset - T0) / 600)
    bursts = {step_at - 20: 173, step_at - 57: 33}
    found = detect(_bursty_loss_series(rng, 8, lambda t: 1.35e-3 if t >= onset else 3e-5, bursts))
    assert kinds(found) == ["loss_step"]
    assert found[0].detected_at - onset <= 8 * HOUR, (found[0].detected_at - onset) / HOUR


def _bursty_loss_series(rng, days, rate_at, bursts):
    """Latency every 10 min at ``rate_at(t)``, plus one-off bursts: {sample index: packets lost}."""
    times = latency_times(days)
    return [latency(t, 20.0, lost=bursts.get(i, int(rng.binomial(6000, rate_at(t))))) for i, t in enumerate(times)]


def test_loss_bursts_on_a_slow_convex_ramp_do_not_make_it_a_step():
    """A convex ramp (the LAG member's loss grows ever faster) with one-off bursts of hundreds of
    packets riding on it: still rising_loss, found before 0.1 %, never loss_step."""
    rng = np.random.default_rng(41)
    onset, days, final = T0 + 4 * DAY, 17.0, 4e-3
    rate = lambda t: 1e-6 + final * (max(0.0, t - onset) / (days * DAY)) ** 1.4  # noqa: E731
    bursts = {int((onset - T0) / 600) + 150: 380, int((onset - T0) / 600) + 330: 220, 200: 170}
    obs = _bursty_loss_series(rng, 14, rate, bursts)
    found = detect(obs)
    assert kinds(found) == ["rising_loss"]
    assert rate(found[0].detected_at) < 1e-3, f"detected at {100 * rate(found[0].detected_at):.3f} % loss"


def test_loss_bursts_on_a_healthy_path_stay_quiet():
    rng = np.random.default_rng(42)
    bursts = {i: int(rng.integers(150, 400)) for i in rng.choice(1400, 6, replace=False)}
    assert detect(_bursty_loss_series(rng, 10, lambda t: 1e-5, bursts)) == []


def test_loss_only_in_the_same_busy_hours_every_day_is_not_a_step_or_a_rise():
    """Busy-hour congestion loss growing day by day stays with the diurnal detector (its first busy
    period alone may pass for a step, which ends with it); the same loss spread over the whole day
    is a rise."""
    rng = np.random.default_rng(43)
    onset = T0 + 4 * DAY
    growth = lambda t: 1e-6 + 6e-3 * max(0.0, t - onset) / (10 * DAY)  # noqa: E731
    busy = lambda t: 13 <= (t % DAY) / HOUR < 18  # noqa: E731
    periodic = detect(_loss_series(rng, 10, lambda t: growth(t) if busy(t) else 1e-6))
    assert "rising_loss" not in kinds(periodic)
    assert all(a.end is not None and a.end - a.start < DAY for a in periodic if a.kind == "loss_step")
    spread = _loss_series(rng, 10, lambda t: 1e-6 + (growth(t) - 1e-6) * 5 / 24)
    assert "rising_loss" in kinds(detect(spread))


def test_healthy_sporadic_loss_stays_quiet():
    rng = np.random.default_rng(14)
    assert detect(_loss_series(rng, 10, lambda t: 2e-5)) == []


def test_lag_member_signature_one_in_k_runs_degraded():
    # A flow losing 800-3000 packets in 10 s (p ~ 0.1-1 % at 20 ms) is held to a few percent of 9 Gb/s.
    rng = np.random.default_rng(15)
    onset, k = T0 + 3 * DAY, 4
    runs = []
    for i, (t, b) in enumerate(throughput_series(rng, 8)):
        if t >= onset and rng.random() < 1 / k:
            runs.append(run(t, b * 0.03, retransmits=int(rng.integers(800, 3000))))
        else:
            runs.append(run(t, b, retransmits=int(rng.integers(0, 20))))
    found = [a for a in detect(runs) if a.kind == "rising_loss"]
    assert len(found) == 1
    assert 3 <= found[0].evidence["lag_k_estimate"] <= 6


def _member_loss(rng, k, *, every_flow):
    """Latency probes losing 0.02 % from day 3 (a step to them), and throughput runs: one in
    ``k`` collapsed by the same loss while the rest stay clean, or, ``every_flow``, all of them."""
    onset = T0 + 3 * DAY
    probes = _loss_series(rng, 9, lambda t: 2e-4 if t >= onset else 1e-6)
    runs = [run(t, b * 0.03, retransmits=int(rng.integers(800, 3000)))
            if t >= onset and (every_flow or rng.random() < 1 / k) else run(t, b, retransmits=int(rng.integers(0, 20)))
            for t, b in throughput_series(rng, 9)]
    return onset, sorted(probes + runs, key=lambda o: o.t)


def test_a_step_the_probes_see_while_most_runs_stay_clean_becomes_the_lag_members_rising_loss():
    """Probes hashed onto a failing member see its loss, named a step within hours; a step is every
    flow's loss and would slow every run, so once one run in k collapses while the rest stay clean
    the step was the member's: it closes as having become the rising loss, dated from its start."""
    onset, observations = _member_loss(np.random.default_rng(21), 4, every_flow=False)
    found = detect(observations)
    step = [a for a in found if a.kind == "loss_step"]
    rise = [a for a in found if a.kind == "rising_loss"]
    assert len(step) == 1 and len(rise) == 1, kinds(found)
    assert step[0].end is not None and rise[0].end is None
    assert rise[0].start == step[0].start and abs(step[0].start - onset) <= HOUR
    assert rise[0].evidence["was"] == "loss_step" and 3 <= rise[0].evidence["lag_k_estimate"] <= 6


def test_a_step_that_slows_every_run_stays_a_step():
    onset, observations = _member_loss(np.random.default_rng(21), 4, every_flow=True)
    found = detect(observations)
    assert "rising_loss" not in kinds(found) and "loss_step" in kinds(found)


def test_a_block_of_degraded_runs_is_not_a_lag_signature_but_the_same_runs_interleaved_are():
    """A throughput drop that came and went leaves a block of bad runs, as many as 1 in 3 of the
    window: a level change, not a LAG member; the same number spread among clean runs is 1 in k."""
    rng = np.random.default_rng(44)
    series = list(throughput_series(rng, 8))
    onset = T0 + 4 * DAY
    late = [i for i, (t, _) in enumerate(series) if t >= onset]
    block = set(late[:16])
    spread = set(late[::3][:16])

    def runs(bad):
        return [run(t, b * 0.03, retransmits=int(rng.integers(800, 3000))) if i in bad
                else run(t, b, retransmits=int(rng.integers(0, 20))) for i, (t, b) in enumerate(series)]
    assert "rising_loss" not in kinds(detect(runs(block)))
    assert "rising_loss" in kinds(detect(runs(spread)))


def test_a_thirty_percent_drop_on_a_noisy_path_is_found_from_the_runs_median():
    """Runs with 15 % noise drop to 69 % of the baseline: the per-run threshold (2.5 MADs, ~37 %
    down) sees half of them, the median of 8 runs sees the level — once the runs below that
    threshold span ``tput_span_s``, as the per-run test asks (a few hours' dip pulls the median as
    far): within a day and a run. Ten healthy noisy paths stay quiet."""
    drop = T0 + 5 * DAY
    found, quiet = 0, []
    for seed in range(60, 70):
        rng = np.random.default_rng(seed)
        series = list(throughput_series(rng, 10, noise=0.15))
        dropped = [run(t, b * (0.69 if t >= drop else 1.0)) for t, b in series]
        hits = [a for a in detect(dropped) if a.kind == "throughput_drop"]
        found += len(hits) >= 1 and hits[0].start >= drop - 2 * HOUR and hits[0].detected_at - drop <= DAY + 2 * HOUR
        quiet += [seed] if detect([run(t, b) for t, b in series]) else []
    assert found >= 9, f"{found} of 10"
    assert quiet == []


def test_a_drop_to_half_that_came_and_went_on_a_noisy_path_is_not_a_lag_signature():
    """Every run at half the rate for three days (noise puts some just above the collapse line and
    some below, interleaved), then back, and one run that collapses on its own a day later: the
    runs beside the slow ones were slow too, not clean."""
    drop, back, stray = T0 + 4 * DAY, T0 + 7 * DAY, T0 + 8.5 * DAY
    fired = []
    for seed in range(150, 160):
        rng = np.random.default_rng(seed)
        runs = [run(t, b * (0.48 if drop <= t < back else 1.0), retransmits=int(rng.integers(0, 25)))
                for t, b in throughput_series(rng, 12, noise=0.15)]
        first_after = next(i for i, r in enumerate(runs) if r.t >= stray)
        runs[first_after] = run(runs[first_after].t, 1.6e9, retransmits=400)
        fired += [seed] if "rising_loss" in kinds(detect(runs)) else []
    assert fired == []


def test_a_two_member_lag_half_the_runs_degraded_at_random_is_a_lag_signature():
    """Half the runs (those hashed onto the bad one of two members) collapse, at random: found with
    k = 2 on nearly every such series (ten series; chance streaks may hold one or two back)."""
    found_k2 = 0
    for seed in range(45, 55):
        rng = np.random.default_rng(seed)
        onset = T0 + 3 * DAY
        runs = [run(t, b * 0.02, retransmits=int(rng.integers(800, 3000))) if t >= onset and rng.random() < 0.5
                else run(t, b, retransmits=int(rng.integers(0, 20))) for t, b in throughput_series(rng, 8)]
        found = [a for a in detect(runs) if a.kind == "rising_loss"]
        found_k2 += len(found) == 1 and found[0].evidence["lag_k_estimate"] == 2
    assert found_k2 >= 8, f"{found_k2} of 10"


def _failing_member_runs(rng, days, onset, *, congested=0.0):
    """Runs every 2 h; from ``onset`` the one in six hashed onto a failing member collapses to a few
    percent of the rate; with ``congested``, that share of the others loses 40-75 % to congestion."""
    runs = []
    for t, b in throughput_series(rng, days):
        if t >= onset and rng.random() < 1 / 6:
            runs.append(run(t, b * rng.uniform(0.005, 0.05), retransmits=int(rng.integers(5, 60))))
        elif congested and rng.random() < congested:
            runs.append(run(t, b * rng.uniform(0.25, 0.6), retransmits=int(rng.integers(200, 1500))))
        else:
            runs.append(run(t, b, retransmits=int(rng.integers(0, 20))))
    return runs


def test_a_failing_member_on_a_path_whose_congestion_costs_runs_half_their_rate():
    """One run in 15 loses 40-75 % of its rate to congestion (the path's own history learns that
    rate of bad runs); from day 8 the flows hashed onto a failing member of six collapse to a few
    percent. All bad runs together are barely more than such a path sees; the collapsed ones are
    far more than its history of collapses explains. Found on most of twelve such series."""
    found = 0
    for seed in range(300, 312):
        rng = np.random.default_rng(seed)
        onset = T0 + 8 * DAY
        runs = _failing_member_runs(rng, 14, onset, congested=1 / 15)
        hits = [a for a in detect(runs) if a.kind == "rising_loss"]
        found += len(hits) == 1 and hits[0].start >= onset - DAY
    assert found >= 7, f"{found} of 12"


def test_flows_collapsing_on_a_failing_member_are_found_from_their_fifth_collapse():
    """A member of six fails: the flows hashed onto it collapse to a few percent of the rate while
    the others stay clean. A clean path hardly ever sees a run collapse, so five such runs are the
    signature (seven degraded runs were needed before, at 2 % expected outliers); healthy paths
    whose runs collapse now and then, as often as such a path's clean runs do, stay quiet."""
    collapses_before_found = []
    for seed in range(320, 330):
        rng = np.random.default_rng(seed)
        onset = T0 + 3 * DAY
        runs = _failing_member_runs(rng, 12, onset)
        hits = [a for a in detect(runs) if a.kind == "rising_loss"]
        assert len(hits) == 1 and hits[0].start >= onset, seed
        collapses_before_found.append(sum(1 for r in runs if r.t <= hits[0].detected_at and r.bps < 0.1 * 9e9))
    assert np.median(collapses_before_found) <= 5, collapses_before_found
    fired = []
    for seed in range(330, 340):
        rng = np.random.default_rng(seed)
        runs = [run(t, b * (rng.uniform(0.005, 0.05) if rng.random() < 0.005 else 1.0), retransmits=int(rng.integers(0, 20)))
                for t, b in throughput_series(rng, 21)]
        fired += [seed] if detect(runs) else []
    assert fired == []


def test_busy_hour_degradation_is_not_a_lag_signature():
    rng = np.random.default_rng(16)
    runs = []
    for t, b in throughput_series(rng, 8):
        busy = 13 <= (t % DAY) / HOUR < 17
        runs.append(run(t, b * 0.5, retransmits=1500) if busy and t > T0 + 2 * DAY else run(t, b, retransmits=5))
    assert "rising_loss" not in kinds(detect(runs))


# ---------------------------------------------------------------- diurnal
def test_diurnal_saturation_within_three_days_and_mild_swing_quiet():
    rng = np.random.default_rng(17)
    onset_day = T0 + 5 * DAY
    obs, mild = [], []
    for t, b in throughput_series(rng, 10):
        hour = (t % DAY) / HOUR
        busy = 12 <= hour < 17
        swing = 1 - 0.08 * busy
        mild.append(run(t, b * swing))
        obs.append(run(t, b * (0.45 if busy and t >= onset_day else swing)))
    found = detect(obs)
    assert kinds(found) == ["diurnal_saturation"]
    assert found[0].detected_at - (onset_day + 12 * HOUR) <= 3 * DAY
    assert found[0].evidence["start_hour"] in range(10, 15)
    assert detect(mild) == []


def test_a_busy_window_holding_one_run_a_day_is_found_within_three_days():
    """Runs every 2 hours, busy from 20:30 to 22:30 UTC: one run a day in the trough, found when
    the latency tests' queue rises in those hours too (one run a day alone is too little)."""
    rng = np.random.default_rng(18)
    onset = T0 + 5 * DAY

    def busy(t):
        return t >= onset and 20.5 <= (t % DAY) / HOUR < 22.5

    runs = [run(t, b * (0.45 if busy(t) else 1.0)) for t, b in throughput_series(rng, 10, start=T0 + HOUR)]
    queue = [latency(t, 20.0, queue=3.0 if busy(t) else 0.3) for t in latency_times(10)]
    found = detect(runs + queue)
    assert kinds(found) == ["diurnal_saturation"]
    assert found[0].detected_at - (onset + 20.5 * HOUR) <= 3 * DAY
    assert found[0].evidence["start_hour"] in (19, 20, 21) and found[0].evidence["signal"] == "throughput"
    assert "diurnal_saturation" not in kinds(detect(runs))


def test_with_runs_every_six_hours_outside_the_busy_hours_the_latency_tests_queue_finds_saturation():
    """Runs at 02, 08, 14 and 20 UTC never meet the 10:00-13:00 busy hours; from day 4 most
    latency packets queue there (the median up 1.4 ms, the 95th percentile to ~6 ms). A healthy
    path's mild busy-hour queue (95th percentile 0.9 ms, the median as ever) stays quiet."""
    rng = np.random.default_rng(22)
    onset = T0 + 4 * DAY
    runs = [run(t, b) for t, b in throughput_series(rng, 9, every_h=6.0, start=T0 + 2 * HOUR)]

    def sample(t, busy_tail, busy_median=0.1):
        busy = 10 <= (t % DAY) / HOUR < 13
        tail = busy_tail if busy else 0.3
        return replace(latency(t, 20.0, queue=busy_median if busy else 0.1),
                       delay_p95_ms=20.0 + tail * rng.uniform(0.8, 1.2))

    saturated = [sample(t, 6.0, 1.5) if t >= onset else sample(t, 0.3) for t in latency_times(9)]
    found = [a for a in detect(runs + saturated) if a.kind == "diurnal_saturation"]
    assert len(found) == 1 and found[0].detected_at - (onset + 10 * HOUR) <= 3 * DAY
    assert found[0].evidence["signal"] == "queueing" and found[0].evidence["start_hour"] in (9, 10, 11)
    mild = [sample(t, 0.9) for t in latency_times(9)]
    assert "diurnal_saturation" not in kinds(detect(runs + mild))


def test_a_busy_hour_trough_needs_the_latency_tests_queue_to_rise_in_those_hours_when_there_are_any():
    """The same afternoon throughput trough every day: saturation when the latency tests queue in
    the afternoon too; with latency tests that stay flat all day it is not a full queue."""
    rng = np.random.default_rng(48)
    onset = T0 + 4 * DAY
    busy = lambda t: t >= onset and 12 <= (t % DAY) / HOUR < 17  # noqa: E731
    runs = [run(t, b * (0.45 if busy(t) else 1.0)) for t, b in throughput_series(rng, 9)]
    flat = [latency(t, 20.0, queue=0.3 + rng.normal(0, 0.02)) for t in latency_times(9)]
    queued = [latency(t, 20.0, queue=(4.0 if busy(t) else 0.3) + rng.normal(0, 0.02)) for t in latency_times(9)]
    assert "diurnal_saturation" not in kinds(detect(runs + flat))
    assert "diurnal_saturation" in kinds(detect(runs + queued))


def test_a_level_drop_in_the_afternoon_after_one_afternoon_dip_is_not_diurnal_saturation():
    """One bad afternoon, then two days later the level drops in the afternoon and stays down: the
    afternoon is low on two days, but the runs after it never come back up: not a daily trough."""
    rng = np.random.default_rng(46)
    dip_day, drop = T0 + 3 * DAY, T0 + 5 * DAY + 13 * HOUR
    runs = []
    for t, b in throughput_series(rng, 8):
        hour = (t % DAY) / HOUR
        dipped = dip_day <= t < dip_day + DAY and 13 <= hour < 17
        runs.append(run(t, b * (0.4 if dipped or t >= drop else 1.0)))
    assert "diurnal_saturation" not in kinds(detect(runs))


def test_busy_hour_dips_that_skip_a_day_do_not_open_diurnal_saturation():
    """Runs that collapse at 13-17 h on two days with a normal day between (chance, as a bad LAG
    member's runs land): not repeated every day; the same dips on consecutive days are."""
    rng = np.random.default_rng(47)
    series = list(throughput_series(rng, 8, every_h=1.0))

    def runs(days):
        return [run(t, b * (0.3 if int((t - T0) // DAY) in days and 13 <= (t % DAY) / HOUR < 17 else 1.0))
                for t, b in series]
    assert "diurnal_saturation" not in kinds(detect(runs({3, 5})))
    assert kinds(detect(runs({3, 4, 5, 6}))) == ["diurnal_saturation"]


# ---------------------------------------------------------------- clock
def test_clock_error_from_negative_delays_and_from_drift():
    times = latency_times(2)
    onset = times[150]
    bad = [latency(t, 20.0 if t < onset else -35.0) for t in times]
    found = detect(bad)
    assert kinds(found) == ["clock_error"] and found[0].start == onset
    drift = [latency(t, 20.0 + max(0.0, t - onset) / HOUR * 8.0) for t in times]
    assert "clock_error" in kinds(detect(drift))


def test_a_clock_stepped_back_into_sync_ends_clock_trouble_and_opens_no_drift():
    # A receiver's clock 85 ms ahead and creeping back (0.7 ms/h), then stepped back into sync: the
    # floor's window then holds a slow monotone slope and one big jump, which is no drift.
    times = latency_times(2)
    wrong, back = times[100], times[200]

    def floor(t):
        return round(20.0 + 85.0 - (t - wrong) / HOUR * 0.72, 1) if wrong <= t < back else 19.6

    found = [a for a in detect([latency(t, floor(t), clock_error=196.0 if wrong <= t < back else None) for t in times])
             if a.kind == "clock_error"]
    assert len(found) == 1
    assert found[0].start == wrong and found[0].end is not None and found[0].end < back + 2 * HOUR


def test_large_reported_clock_error_is_clock_error_and_small_is_not():
    times = latency_times(1)
    assert kinds(detect([latency(t, 20.0, clock_error=250.0 if i > 50 else 1.0) for i, t in enumerate(times)])) == ["clock_error"]
    assert detect([latency(t, 20.0, clock_error=5.0) for t in times]) == []


# ---------------------------------------------------------------- no_data
def test_two_trace_tools_each_hourly_minutes_apart_are_two_cadences_not_one_of_minutes():
    """traceroute on the hour and tracepath 5 minutes later: quiet; then tracepath stops and
    no_data names it once three of its hours are missed."""
    hours = [T0 + h * HOUR for h in range(72)]
    both = [trace(t, A) for t in hours] + [trace(t + 300, A, tool="tracepath") for t in hours]
    assert "no_data" not in kinds(detect(both))
    stopped = [o for o in both if o.tool == "traceroute" or o.t < T0 + 48 * HOUR]
    found = [a for a in detect(stopped) if a.kind == "no_data"]
    assert len(found) == 1 and found[0].evidence["silent_types"] == ["tracepath"]


def test_no_data_opens_when_a_path_falls_silent_and_closes_when_it_resumes():
    times = latency_times(3)
    gap = [t for t in times if not (T0 + DAY <= t < T0 + DAY + 6 * HOUR)]
    found = detect([latency(t, 20.0) for t in gap])
    assert kinds(found) == ["no_data"]
    assert found[0].start == pytest.approx(T0 + DAY, abs=1) and found[0].end == T0 + DAY + 6 * HOUR
    silent_end = detect([latency(t, 20.0) for t in times[:200]], until=times[-1])
    assert kinds(silent_end) == ["no_data"] and silent_end[0].end is None


def _slipped(rng, days: float, repeat: float, slip: float, step: float) -> list[float]:
    """Start times of a pSConfig schedule with ``slip`` and ``sliprand``, each start landing on a
    whole ``step`` (the lab's runs start on whole real seconds)."""
    n = int(days * DAY / repeat)
    return sorted({T0 + step * round((k * repeat + rng.uniform(0, slip)) / step) for k in range(n)})


def test_a_schedule_with_slip_is_no_silence_however_its_first_gaps_fall_and_an_outage_still_is():
    """Gaps of a slipped schedule run from ``repeat - slip`` to ``repeat + slip``: a ping every
    45 min with 30 min of random slip, on 15-minute steps (as the lab's ran), leaves gaps of 15 to
    75 min, and its first three can be 15, 75, 15 (a cadence of 15 min, a normal 60-minute gap four
    of them). No such schedule raises no_data over two days; five missed runs in a row are a
    silence, dated from the first run missed."""
    quiet = []
    for seed in range(60):
        times = _slipped(np.random.default_rng(seed), 2, 45 * 60, 30 * 60, 15 * 60)
        quiet += [a for a in detect([latency(t, 20.0) for t in times]) if a.kind == "no_data"]
    assert quiet == []
    first_gaps = [T0, T0 + 900, T0 + 5400, T0 + 6300, T0 + 9900]
    later = _slipped(np.random.default_rng(7), 2, 45 * 60, 30 * 60, 15 * 60)
    assert detect([latency(t, 20.0) for t in first_gaps + [t + 12600 for t in later]]) == []
    times = _slipped(np.random.default_rng(8), 3, 45 * 60, 30 * 60, 15 * 60)
    before, after = [t for t in times if t < T0 + DAY], [t for t in times if t >= T0 + DAY + 5 * 45 * 60]
    found = [a for a in detect([latency(t, 20.0) for t in before + after]) if a.kind == "no_data"]
    assert len(found) == 1 and found[0].end == after[0]
    assert before[-1] < found[0].start <= before[-1] + 75 * 60


# ---------------------------------------------------------------- state
def test_monitor_state_pickles_mid_stream_without_changing_results():
    rng = np.random.default_rng(18)
    onset = T0 + 3 * DAY
    obs = sorted([latency(t, 20 + (6 if t >= onset else 0), lost=int(rng.binomial(6000, 2e-3 if t >= onset else 0)))
                  for t in latency_times(6)] + [run(t, b) for t, b in throughput_series(rng, 6)], key=lambda o: o.t)
    straight, resumed = PathMonitor("a", "b"), PathMonitor("a", "b")
    out_straight, out_resumed = [], []
    for i, o in enumerate(obs):
        out_straight += straight.observe(o)
        if i == len(obs) // 2:
            resumed = pickle.loads(pickle.dumps(resumed))
        out_resumed += resumed.observe(o)
    assert out_straight == out_resumed and out_straight


def test_one_in_six_runs_dipping_to_a_share_of_the_rate_is_not_a_lag_member_but_collapsing_is():
    """Bursts of cross traffic and other people's bursts now and then leave a run a third to a half
    of the rate, with some retransmits; a chance cluster of them — one in six runs for four days,
    interleaved with clean runs — is no failing member: a member that drops packets holds every
    flow hashed onto it at the loss-limited rate (MSS / (RTT·√p)), a few percent of a clean run's.
    The same runs collapsed to that are found."""
    fired, found = [], 0
    for seed in range(400, 410):
        rng = np.random.default_rng(seed)
        onset, back = T0 + 5 * DAY, T0 + 9 * DAY
        series = list(throughput_series(rng, 12))
        hit = [onset <= t < back and rng.random() < 1 / 6 for t, _ in series]

        def runs(keep):
            return [run(t, b * keep(), retransmits=int(rng.integers(60, 300))) if bad
                    else run(t, b, retransmits=int(rng.integers(0, 20))) for (t, b), bad in zip(series, hit)]
        fired += [seed] if "rising_loss" in kinds(detect(runs(lambda: rng.uniform(0.3, 0.5)))) else []
        found += "rising_loss" in kinds(detect(runs(lambda: rng.uniform(0.01, 0.05))))
    assert fired == []
    assert found >= 8, f"{found} of 10"


def test_one_test_type_missing_while_the_others_arrive_is_silence_only_after_alone_s():
    """Latency every 10 minutes and tracepath every 30: two hours without traces while the latency
    tests go on is a skipped or failing test, not a silent path; eight hours is no_data naming
    tracepath from when its result was due, closed by the next trace; all stopping is silence at once."""
    from pathwatch.models.config import DetectorConfig

    def path(trace_gap: tuple[float, float], all_gap: tuple[float, float] | None = None):
        obs = []
        for t in latency_times(3):
            if all_gap and all_gap[0] <= t < all_gap[1]:
                continue
            obs.append(latency(t, 20.0))
            if (t - T0) % 1800 == 0 and not trace_gap[0] <= t < trace_gap[1]:
                obs.append(trace(t + 60, ["10.0.0.1", "10.0.0.2"], tool="tracepath"))
        return sorted(obs, key=lambda o: o.t)

    only = DetectorConfig(enabled=("silence",))
    short = path((T0 + DAY, T0 + DAY + 2 * HOUR))
    assert replay_observations("a", "b", short, config=only) == []
    long = replay_observations("a", "b", path((T0 + DAY, T0 + DAY + 8 * HOUR)), config=only)
    assert [(a.kind, a.evidence["silent_types"]) for a in long] == [("no_data", ["tracepath"])]
    assert long[0].start == pytest.approx(T0 + DAY + 60, abs=1) and long[0].end == T0 + DAY + 8 * HOUR + 60
    dark = replay_observations("a", "b", path((0, 0), (T0 + DAY, T0 + DAY + 2 * HOUR)), config=only)
    assert [a.kind for a in dark] == ["no_data"] and dark[0].detected_at - T0 - DAY < HOUR
