"""clock_error and route_change named from what their cause alone does (issue 16).

A busy-hour standing queue raises the one-way delay floor every afternoon and lets it fall at
night; a router that skips an answer now and then leaves a silent hop in one trace. Neither is a
clock or a route change. Real clock errors (an offset step, a steady drift, negative delays) and
real route changes (a new answering router, a router that stays silent) are still found.
"""

from __future__ import annotations

import numpy as np

from pathwatch.models.engine import replay_observations
from pathwatch.models.detectors.route import RouteParams
from tests.detector_series import DAY, HOUR, T0, latency, trace

A = ["10.0.0.1", "10.0.1.1", "192.0.2.1", "192.0.2.9", "10.9.0.1"]
B = ["10.0.0.1", "10.0.1.1", "198.51.100.1", "198.51.100.7", "10.9.0.1"]


def detect(observations, source="a", destination="b"):
    return replay_observations(source, destination, observations)


def of_kind(anomalies, kind):
    return [a for a in anomalies if a.kind == kind]


# ---------------------------------------------------------------- clock_error
def busy(t: float) -> float:
    """0..1: the path's afternoon standing queue, up over 13–14 h, full to 17 h, down by 19 h (UTC)."""
    h = (t % DAY) / HOUR
    return float(np.clip(min(h - 13.0, (19.0 - h) / 2.0), 0.0, 1.0))


def standing_queue(rng, *, days=6, rise_ms=12.0, loss=0.003, queue_grows=0.0, every_s=60.0, packets=600):
    """One-minute owamp samples (600 packets) on a 20 ms path whose floor rises ``rise_ms`` every
    afternoon, losing ``loss`` while busy; the spread above the floor grows by ``queue_grows`` ms."""
    out = []
    for t in np.arange(T0, T0 + days * DAY, every_s):
        b = busy(t)
        lost = int(rng.binomial(packets, 1e-5 + loss * b))
        out.append(latency(float(t), float(20.0 + rise_ms * b + rng.normal(0, 0.02)), sent=packets, lost=lost,
                           queue=0.3 + queue_grows * b, clock_error=1.0))
    return out


def test_a_busy_hour_standing_queue_with_loss_is_not_a_clock():
    """Floor +12 ms every afternoon (12 ms/h up, 6 ms/h down), 0.3 % loss while busy, for 6 days."""
    rng = np.random.default_rng(160)
    assert of_kind(detect(standing_queue(rng)), "clock_error") == []
    # ... nor at 10-minute samples of 6000 packets, nor rising 15 ms
    rng = np.random.default_rng(161)
    assert of_kind(detect(standing_queue(rng, rise_ms=15.0, every_s=600.0, packets=6000)), "clock_error") == []


def test_a_standing_queue_whose_spread_grows_with_the_floor_is_not_a_clock():
    rng = np.random.default_rng(162)
    assert of_kind(detect(standing_queue(rng, loss=0.0, queue_grows=2.0)), "clock_error") == []


def test_a_standing_queue_whose_rtt_moves_with_the_floor_is_not_a_clock():
    """No loss, no spread growth: traces every 20 min see the same queue in their RTT."""
    rng = np.random.default_rng(163)
    owd = standing_queue(rng, loss=0.0)
    traces = [trace(float(t), A, rtt=float(40.0 + 12.0 * busy(t) + abs(rng.normal(0, 0.1))))
              for t in np.arange(T0 + 300, T0 + 6 * DAY, 1200.0)]
    assert of_kind(detect(sorted(owd + traces, key=lambda o: o.t)), "clock_error") == []


def test_a_floor_that_rises_at_the_same_hours_every_day_is_not_a_clock_after_the_first():
    """Nothing but the floor tells a lossless, traceless standing queue on its first afternoon
    from a clock; from the second on, the same hours moved alike the day before and came back."""
    rng = np.random.default_rng(164)
    found = of_kind(detect(standing_queue(rng, loss=0.0)), "clock_error")
    assert all(a.start < T0 + DAY and a.end is not None and a.end < T0 + DAY for a in found)


def _drifting(rng, *, ppm, onset, days=4, every_s=600.0, packets=6000, lost_rate=1e-4):
    """A 20 ms path whose receiver's clock runs ``ppm`` fast from ``onset`` (its error estimate stays
    small: a slewing clock NTP does not flag), with steady background loss and hourly traces whose RTT
    stays put (the clock adds to one direction what it takes from the other)."""
    owd = [latency(float(t), float(20.0 + ppm * 1e-6 * max(0.0, t - onset) * 1000.0 + rng.normal(0, 0.02)),
                   sent=packets, lost=int(rng.binomial(packets, lost_rate)), clock_error=1.0)
           for t in np.arange(T0, T0 + days * DAY, every_s)]
    traces = [trace(float(t), A, rtt=float(40.0 + abs(rng.normal(0, 0.1)))) for t in np.arange(T0 + 300, T0 + days * DAY, HOUR)]
    return sorted(owd + traces, key=lambda o: o.t)


def test_a_steady_clock_drift_is_found_within_hours_with_its_signed_drift_and_offset():
    onset = T0 + 1.5 * DAY
    for ppm, every_s, packets in ((3.0, 600.0, 6000), (-3.0, 600.0, 6000), (8.0, 60.0, 600)):
        rng = np.random.default_rng(165)
        found = of_kind(detect(_drifting(rng, ppm=ppm, onset=onset, every_s=every_s, packets=packets)), "clock_error")
        assert len(found) == 1, ppm
        clock = found[0]
        assert onset <= clock.start and clock.detected_at <= onset + 4 * HOUR, ppm
        assert np.sign(clock.evidence["drift_ms_per_h"]) == np.sign(ppm)
        assert np.sign(clock.evidence["offset_ms"]) == np.sign(ppm)


def test_a_clock_drifting_for_days_stays_one_open_clock_error():
    """A floor that never comes back is no time of day, however alike its hours look day after day."""
    rng = np.random.default_rng(166)
    found = of_kind(detect(_drifting(rng, ppm=1.5, onset=T0 + DAY, days=5)), "clock_error")
    assert len(found) == 1 and found[0].end is None


def test_an_offset_step_and_negative_delays_are_clock_errors_from_the_first_samples():
    times = np.arange(T0, T0 + 2 * DAY, 600.0)
    onset = float(times[150])
    # the sender's clock steps 150 ms ahead and the hosts say how wrong they may be
    stepped = [latency(float(t), 20.0 + (150.0 if t >= onset else 0.0), clock_error=180.0 if t >= onset else 1.0)
               for t in times]
    found = of_kind(detect(stepped), "clock_error")
    assert len(found) == 1 and found[0].start == onset and found[0].detected_at <= onset + 600.0
    assert round(found[0].evidence["offset_ms"]) == 150
    # the receiver's clock steps 60 ms behind with no error estimate at all: delays below zero
    behind = [latency(float(t), 20.0 - (60.0 if t >= onset else 0.0), clock_error=None) for t in times]
    found = of_kind(detect(behind), "clock_error")
    assert len(found) == 1 and found[0].start == onset and round(found[0].evidence["offset_ms"]) == -60


# ---------------------------------------------------------------- route_change
def _latency_wobbling_before(rng, traces, wobble_at, days):
    """owamp every 10 min at 20 ms; the sample just before each trace in ``wobble_at`` off by ±1.1 ms."""
    wobbly = {round(traces[i].t - 300.0) for i in wobble_at}
    return [latency(float(t), float(20.0 + rng.normal(0, 0.03) + (rng.choice((-1.1, 1.1)) if round(t) in wobbly else 0.0)))
            for t in np.arange(T0 - 300.0, T0 + days * DAY, 600.0)]


def test_a_hop_answering_99_percent_of_traces_is_no_route_change_even_with_delay_wobbles():
    """14 days of traces every 20 min; hop 3 skips 1 % of them at random, and at some skips the
    one-way delay wobbles by ±1.1 ms (what made 'a hop fell silent with a one-way delay step')."""
    rng = np.random.default_rng(170)
    times = np.arange(T0, T0 + 14 * DAY, 1200.0)
    skips = rng.random(len(times)) < 0.01
    traces = [trace(float(t), [None if skip and ttl == 2 else h for ttl, h in enumerate(A)],
                    rtt=float(40.0 + abs(rng.normal(0, 0.2)))) for t, skip in zip(times, skips)]
    skipped = [i for i in np.flatnonzero(skips) if times[i] > T0 + DAY]
    assert len(skipped) >= 5
    owd = _latency_wobbling_before(rng, traces, skipped[::2], 14)
    assert of_kind(detect(sorted(traces + owd, key=lambda o: o.t)), "route_change") == []


def test_icmp_rate_limiting_bursts_over_later_hops_are_no_route_change():
    """Hops 3 and 4 silent together now and then for one to three traces in a row (a router's ICMP
    rate limit), the destination answering throughout."""
    rng = np.random.default_rng(171)
    times = np.arange(T0, T0 + 14 * DAY, 1200.0)
    silent = np.zeros(len(times), dtype=bool)
    for start in rng.choice(np.arange(80, len(times) - 3), size=12, replace=False):
        silent[start:start + rng.integers(1, 4)] = True
    traces = [trace(float(t), [None if s and ttl in (2, 3) else h for ttl, h in enumerate(A)], rtt=40.0)
              for t, s in zip(times, silent)]
    assert of_kind(detect(traces), "route_change") == []


def test_a_router_rate_limiting_for_an_hour_while_a_queue_fills_is_no_route_change():
    """Hop 3 answers every trace for 6 days, then falls silent for three traces in a row (an hour of
    ICMP rate limiting) while the evening queue raises the RTT 0.35 ms a trace: after the silence
    the RTT stands 1.4 ms above the level before it, all of it the ramp's. The old code took that
    for a step with the silence, a new silent router (a route change)."""
    times = np.arange(T0, T0 + 7 * DAY, 1200.0)
    quiet = int(6.5 * DAY / 1200.0)
    ramp = lambda i: 0.35 * max(0, i - (quiet - 8))      # noqa: E731  (from eight traces before the silence on)
    rng = np.random.default_rng(176)
    traces = [trace(float(t), [None if quiet <= i < quiet + 3 and ttl == 2 else h for ttl, h in enumerate(A)],
                    rtt=float(40.0 + ramp(i) + rng.normal(0, 0.02)))
              for i, t in enumerate(times) if i < quiet + 6]
    assert of_kind(detect(traces), "route_change") == []


def _silent_from(rng, change_day: float, *, days: int = 8, rtt_step: float = 0.0, silent_traces: int | None = None):
    """Traces every 20 min, hop 3 answering 99 % of them; from ``change_day`` on it is silent (for
    ``silent_traces`` traces, else for good) and the RTT moves by ``rtt_step``; (times, change index, traces)."""
    times = np.arange(T0, T0 + days * DAY, 1200.0)
    change = int(change_day * DAY / 1200.0)
    index = np.arange(len(times))
    quiet = (index >= change) & (index < change + (silent_traces or len(times)))
    skips = (rng.random(len(times)) < 0.01) | quiet
    traces = [trace(float(t), [None if skip and ttl == 2 else h for ttl, h in enumerate(A)],
                    rtt=40.0 + (rtt_step if i >= change and (silent_traces is None or i < change + silent_traces) else 0.0))
              for i, (t, skip) in enumerate(zip(times, skips))]
    return times, change, traces


def test_a_hop_that_goes_silent_and_stays_silent_is_a_change_dated_from_its_first_silent_trace():
    """Hop 3 answers 99 % of 6 days of traces, then a router that never answers takes its place:
    with the RTT unchanged, named once the silence outlasts a rate limiter (``silence_hold_s``)."""
    times, change, traces = _silent_from(np.random.default_rng(172), 6)
    found = of_kind(detect(traces), "route_change")
    assert len(found) == 1
    hold = RouteParams().silence_hold_s
    assert found[0].start == times[change] and times[change] + hold <= found[0].detected_at <= times[change] + hold + 1200
    assert found[0].evidence["divergence_ttl"] == 3 and found[0].evidence["new_hops"][1] == "*"


def test_a_silent_new_router_that_moves_the_rtt_is_a_change_within_a_few_traces():
    """The same new silent router, the round trip 3 ms longer with it: the delay confirms the change."""
    times, change, traces = _silent_from(np.random.default_rng(172), 6, rtt_step=3.0)
    found = of_kind(detect(traces), "route_change")
    assert len(found) == 1
    assert found[0].start == times[change] and times[change + 1] < found[0].detected_at <= times[change + 4]


def test_a_router_quiet_for_an_hour_between_unchanged_neighbours_is_no_route_change():
    """A hop that had always answered is silent on five traces in a row (a rate limiter engaged for
    an hour and a half), its neighbours and the RTT as before: the old code named a route change
    after three."""
    for seed in range(3):
        _, _, traces = _silent_from(np.random.default_rng(seed), 4, silent_traces=5)
        assert of_kind(detect(traces), "route_change") == [], seed


def test_a_new_answering_router_is_a_change_on_the_first_trace_that_shows_it():
    rng = np.random.default_rng(173)
    times = np.arange(T0, T0 + 3 * DAY, 1200.0)
    change_t = float(times[150])
    traces = [trace(float(t), B if t >= change_t else A, rtt=40.0 + (3.0 if t >= change_t else 0.0)) for t in times]
    owd = [latency(float(t), float(20.0 + rng.normal(0, 0.03) + (1.5 if t >= change_t - 300 else 0.0)))
           for t in np.arange(T0 - 300.0, T0 + 3 * DAY, 600.0)]
    found = of_kind(detect(sorted(traces + owd, key=lambda o: o.t)), "route_change")
    assert len(found) == 1 and found[0].start == change_t and found[0].detected_at == change_t


def test_a_detour_that_settled_and_reverts_days_later_brings_no_latency_shift():
    """Route A for 6 days, then a detour B 4 ms shorter each way (one route change) through a link
    that queues every afternoon (its floor up 5 ms), in use for 5 days (it settles: the path's
    normal), then A back: the delay steps 4 ms up with the route. The return is no new change (A
    is known), and its step is the route's, no latency shift of unknown cause (the old code named
    one: the detour's first afternoon queue, rising through A's level, had passed for "the old
    normal back", and after the detour settled A's return was no move of the route)."""
    rng = np.random.default_rng(175)
    detour, back = T0 + 6 * DAY + 5 * HOUR, T0 + 11 * DAY + 9 * HOUR
    times = np.arange(T0, T0 + 13 * DAY, 1200.0)
    on_b = lambda t: detour <= t < back       # noqa: E731
    traces = [trace(float(t), B if on_b(t) else A, rtt=float(80.0 + (10.0 * busy(t) - 8.0 if on_b(t) else 0.0)
                                                               + abs(rng.normal(0, 0.05))))
              for t in times]
    owd = [latency(float(t), float(40.0 + (5.0 * busy(t) - 4.0 if on_b(t + 300) else 0.0) + rng.normal(0, 0.03)))
           for t in np.arange(T0 - 300.0, T0 + 13 * DAY, 600.0)]
    found = detect(sorted(traces + owd, key=lambda o: o.t))
    assert [a.start for a in of_kind(found, "route_change")] == [float(times[times >= detour][0])]
    assert of_kind(found, "latency_shift") == []


def test_a_one_way_delay_step_without_the_rtt_does_not_confirm_a_detour_at_once():
    """One trace on a detour while an NTP correction moves the one-way delay by 1.2 ms and the
    round trip not at all: a blip, not a change; with the RTT 2.5 ms shorter it is a change at once."""
    rng = np.random.default_rng(174)
    times = np.arange(T0, T0 + 3 * DAY, 1200.0)
    blip = float(times[150])
    owd = [latency(float(t), float(80.0 + rng.normal(0, 0.03) - (1.2 if t >= blip - 300 else 0.0)))
           for t in np.arange(T0 - 300.0, T0 + 3 * DAY, 600.0)]
    for extra, expected in ((0.0, []), (-2.5, [blip])):
        traces = [trace(float(t), B if t == blip else A, rtt=float(127.4 + abs(rng.normal(0, 0.03)) + (extra if t == blip else 0.0)))
                  for t in times]
        found = of_kind(detect(sorted(traces + owd, key=lambda o: o.t)), "route_change")
        assert [a.detected_at for a in found] == expected


def _queue_ramp(t: float) -> float:
    """A standing queue's floor: +3 ms/h from 16 h to 20 h (UTC), draining by 22 h30, every day."""
    h = (t % DAY) / HOUR
    return float(np.clip(min(3.0 * (h - 16.0), 4.8 * (22.5 - h)), 0.0, 12.0))


def test_a_detour_while_a_standing_queue_fills_is_no_route_change():
    """The floor ramps 0.5 ms between samples while the queue fills; one trace on a detour in the
    middle of it (its RTT up with the queue) is a blip: the ramp moved as much between every two samples."""
    rng = np.random.default_rng(175)
    times = np.arange(T0, T0 + 3 * DAY, 1200.0)
    blip = float(times[int((2 * DAY + 18.5 * HOUR) / 1200.0)])
    owd = [latency(float(t), float(12.0 + _queue_ramp(t) + rng.normal(0, 0.02))) for t in np.arange(T0 - 300.0, T0 + 3 * DAY, 600.0)]
    traces = [trace(float(t), B if t == blip else A, rtt=float(22.0 + _queue_ramp(t) + abs(rng.normal(0, 0.05))))
              for t in times]
    assert of_kind(detect(sorted(traces + owd, key=lambda o: o.t)), "route_change") == []


def test_a_route_change_while_a_standing_queue_drains_is_found_on_its_first_trace():
    """The floor falls 0.8 ms between samples as the queue drains; the route then adds 5 ms one way
    and 7 ms round trip: the jump stands out of the drain, so the first trace on the new route confirms it."""
    rng = np.random.default_rng(176)
    times = np.arange(T0, T0 + 3 * DAY, 1200.0)
    change_t = float(times[int((2 * DAY + 21 * HOUR) / 1200.0)])
    owd = [latency(float(t), float(12.0 + _queue_ramp(t) + (5.0 if t >= change_t - 300 else 0.0) + rng.normal(0, 0.02)))
           for t in np.arange(T0 - 300.0, T0 + 3 * DAY, 600.0)]
    traces = [trace(float(t), B if t >= change_t else A,
                    rtt=float(22.0 + _queue_ramp(t) + (7.0 if t >= change_t else 0.0) + abs(rng.normal(0, 0.05))))
              for t in times]
    found = of_kind(detect(sorted(traces + owd, key=lambda o: o.t)), "route_change")
    assert len(found) == 1 and found[0].start == change_t and found[0].detected_at == change_t


def test_the_chance_of_a_run_of_silences_follows_the_hops_answer_rate():
    from pathwatch.models.detectors.route import RouteParams, run_chance

    alpha = RouteParams().silence_alpha
    assert alpha == 1e-6
    # a hop that always answered: four silent traces are improbable after 150 traces, three after 400, two after 2000
    assert run_chance(0, 0, 150, 3) > alpha > run_chance(0, 0, 150, 4)
    assert run_chance(0, 0, 400, 2) > alpha > run_chance(0, 0, 400, 3)
    assert run_chance(0, 0, 2000, 2) < alpha
    # a hop answering 99 %: three in a row happen about once in 6e5 traces, four hardly ever
    assert run_chance(10, 0, 1000, 3) > alpha > run_chance(10, 0, 1000, 4)
    # a hop answering 90 % in bursts (one miss in ten follows another): seven
    assert run_chance(100, 10, 1000, 6) > alpha > run_chance(100, 10, 1000, 7)
    # while the route's silences move (rate limiting), a hop that always answered needs eleven
    assert run_chance(0, 0, 998, 10, bursty=True) > alpha > run_chance(0, 0, 998, 11, bursty=True)


def test_a_candidate_route_confirmed_after_every_known_route_was_forgotten_is_learnt():
    """A new route pending when the traces stopped for longer than forget_s: confirmed later with no
    known route left to compare with (max() of nothing), it is the path's route, not a change."""
    from pathwatch.models.detectors.route import RouteDetector
    from tests.detector_series import DAY, HOUR, T0, trace

    old = ["10.0.0.1", "10.0.0.2", "10.0.0.3", "10.0.0.4", "dst"]
    new = ["10.0.0.1", "10.0.0.2", "10.9.9.9", "10.0.0.4", "dst"]
    detector, t, out = RouteDetector("a", "b"), T0, []
    for _ in range(48):
        out += detector.observe(trace(t, old))
        t += HOUR
    out += detector.observe(trace(t, new))
    t += 4.5 * DAY
    for _ in range(3):
        out += detector.observe(trace(t, new))
        t += HOUR
    assert [a.kind for a in out if a.kind == "route_change"] == []


def test_a_detour_with_an_ntp_step_while_a_queue_drains_slowly_is_no_route_change():
    """One trace on a detour; the one-way floor steps -0.5 ms at the same time (an NTP correction:
    the clocks, not the path) while a queue drains, lowering the RTT 0.3 ms every trace. The RTT
    moved no more than its own trend: nothing follows the step, so the detour is a blip."""
    rng = np.random.default_rng(177)
    times = np.arange(T0, T0 + 3 * DAY, 1200.0)
    blip = float(times[int((2 * DAY + 15 * HOUR) / 1200.0)])

    def drain(t: float) -> float:       # 6 ms of queue gone over 6 h before the detour, more after
        return float(np.clip((t - (blip - 6 * HOUR)) / 1200.0 * 0.3, 0.0, 9.0))

    owd = [latency(float(t), float(45.2 - (0.5 if t >= blip else 0.0) + rng.normal(0, 0.004)), clock_error=1.8)
           for t in np.arange(T0 - 300.0, T0 + 3 * DAY, 600.0)]
    traces = [trace(float(t), B if t == blip else A, rtt=float(110.0 - drain(t) + abs(rng.normal(0, 0.02))))
              for t in times]
    assert of_kind(detect(sorted(traces + owd, key=lambda o: o.t)), "route_change") == []


def _trace_record(t: float, hops: list[tuple[str | None, str | None]], reached: bool) -> dict:
    from pathwatch.contract.timefmt import from_epoch

    return {"kind": "trace", "time": from_epoch(t), "succeeded": True, "tool": "traceroute",
            "destination_ip": A[-1], "reached": reached, "path_id": "|".join(ip or "*" for ip, _ in hops),
            "hops": [{"ttl": ttl, "ip": ip, "error": error, "rtt_ms": 20.0 if ip else None}
                     for ttl, (ip, error) in enumerate(hops, 1)]}


def test_a_host_gone_dark_behind_a_router_answering_host_unreachable_is_no_route_change():
    """Its last router answers for it at its TTL with !H: that says the destination is unreachable,
    not that the route moved (seen in the lab's host_dark scenario)."""
    from pathwatch.models.observe import observe

    times = np.arange(T0, T0 + 2 * DAY, 1200.0)
    dark_t = float(times[100])
    healthy = [(ip, None) for ip in A]
    dark = [(ip, None) for ip in A[:-1]] + [("10.9.0.254", "!H")]
    records = [_trace_record(float(t), dark if t >= dark_t else healthy, reached=t < dark_t) for t in times]
    found = detect([observe(record) for record in records])
    assert of_kind(found, "route_change") == []
    unreachable = of_kind(found, "unreachable")
    assert len(unreachable) == 1 and unreachable[0].start == dark_t


def test_a_destination_that_answers_admin_prohibited_itself_was_reached():
    from pathwatch.models.observe import observe

    obs = observe(_trace_record(T0, [(ip, None) for ip in A[:-1]] + [(A[-1], "!X")], reached=True))
    assert obs.reached is True and obs.hops[-1] == A[-1]


def _bulk_transfer(t: float) -> float:
    """1 from 13:05 to 18 h (UTC) every day: a bulk transfer that fills a bottleneck's queue at once."""
    return 1.0 if 13 * HOUR + 300 <= t % DAY < 18 * HOUR else 0.0


QUEUE_DAYS = 4
TRACE_TIMES = np.arange(T0, T0 + QUEUE_DAYS * DAY, 1200.0)   # a trace every 20 min


def _queue_loses_answers(rng, lost_at: set[int], *, late: list | None = None):
    """owamp every 10 min and the traces at ``TRACE_TIMES`` on a 5-hop path whose queue, full
    during an afternoon transfer (``_bulk_transfer``), adds 12 ms one way and 24 ms round trip; the
    traces in ``lost_at`` lost every answer from TTL 4 to TTL 6 at the full queue, and the
    destination answered the next probe, at TTL 7 (seen in the lab's saturation run: "end → None
    (4 → 6 hops)")."""
    owd = [latency(float(t), float(20.0 + 12.0 * _bulk_transfer(t) + rng.normal(0, 0.02)))
           for t in np.arange(T0 - 300.0, T0 + QUEUE_DAYS * DAY, 600.0)]
    late = late or A[:3] + [None, None, None, A[-1]]
    traces = [trace(float(t), late if i in lost_at else A,
                    rtt=float(40.0 + 24.0 * _bulk_transfer(t) + abs(rng.normal(0, 0.05))))
              for i, t in enumerate(TRACE_TIMES)]
    return sorted(traces + owd, key=lambda o: o.t)


def _busy_indices(day: int) -> list[int]:
    """The indices in ``TRACE_TIMES`` of one day's busy hours, in order."""
    return [i for i, t in enumerate(TRACE_TIMES) if day * DAY <= t - T0 < (day + 1) * DAY and _bulk_transfer(t)]


def test_a_destination_answering_late_behind_lost_answers_at_a_full_queue_is_no_route_change():
    """The queue comes on with a one-way delay and RTT step, and the first trace after it (on
    two days) lost the answers of TTL 4–6 and met the destination at TTL 7: the same route, its
    destination's nearer answers lost, not a route two hops longer."""
    lost = {_busy_indices(day)[0] for day in (2, 3)}
    observations = _queue_loses_answers(np.random.default_rng(177), lost)
    assert of_kind(detect(observations), "route_change") == []


def test_a_destination_answering_late_on_every_trace_is_a_change_once_the_silence_persists():
    """From one afternoon on, every trace meets the destination at TTL 7, its last router still
    answering at TTL 4 and TTLs 5–6 silent (two new routers that never answer): the destination's
    TTL silent on trace after trace, so a route change, dated from its first trace."""
    first = _busy_indices(2)[2]
    observations = _queue_loses_answers(np.random.default_rng(178), set(range(first, len(TRACE_TIMES))),
                                        late=A[:4] + [None, None, A[-1]])
    found = of_kind(detect(observations), "route_change")
    assert len(found) == 1 and found[0].start == TRACE_TIMES[first]
    assert found[0].detected_at <= TRACE_TIMES[first + 3]


def test_a_detour_as_a_standing_queue_starts_to_drain_is_no_route_change():
    """The floor stood still for hours, then starts falling 0.5 ms a sample (10-minute samples, the
    queue draining) two samples before one trace takes a detour and comes back. The drain's first
    moves are the only moves in the samples before, so their noise is nil; what tells the drain from
    a route's jump is that the level was already moving that way: no route change. The same detour
    with the delay jumping from where it stood is a change at once."""
    rng = np.random.default_rng(178)
    times = np.arange(T0, T0 + 3 * DAY, 1200.0)
    blip = float(times[int((2 * DAY + 19 * HOUR) / 1200.0)])

    def drain(t: float) -> float:       # from 25 min before the detour on, 0.05 ms a minute
        return float(np.clip((t - (blip - 1500.0)) / 60.0 * 0.05, 0.0, 8.0))

    owd = [latency(float(t), float(round(71.1 - drain(t) + rng.normal(0, 0.01), 1)))
           for t in np.arange(T0 - 300.0, T0 + 3 * DAY, 600.0)]
    traces = [trace(float(t), B if t == blip else A, rtt=float(114.6 - 2 * drain(t) + abs(rng.normal(0, 0.02))))
              for t in times]
    assert of_kind(detect(sorted(traces + owd, key=lambda o: o.t)), "route_change") == []
    jumped = [latency(o.t, o.delay_min_ms - (1.5 if o.t >= blip - 300 else 0.0) + drain(o.t)) for o in owd]
    rtts = [trace(o.t, B if o.t == blip else A, rtt=114.6 - (3.0 if o.t == blip else 0.0)) for o in traces]
    found = of_kind(detect(sorted(jumped + rtts, key=lambda o: o.t)), "route_change")
    assert [a.detected_at for a in found] == [blip]
