"""Each injected pathology leaves its signature (docs/pathologies.md) in the parsed records, and healthy
paths look healthy. Episodes are placed by hand (fixed magnitudes) on a 7-host, 7-day mesh;
only the paths under test are generated and parsed (with the project's parsers, which must
accept every line)."""

from __future__ import annotations

import statistics
from collections import Counter

import orjson
import pytest

from pathwatch.ingest.parse import parse_value
from pathwatch.sim.config import DAY_S, Cadences, SimConfig
from pathwatch.sim.generate import path_lines, plan
from pathwatch.sim.episode import Episode

# Sparser latency and trace tests than the defaults keep the parsing quick; throughput as default.
# The benign catalogue is off: each pathology's own signature, exactly (the catalogue's: test_sim_benign.py).
CONFIG = SimConfig(seed=11, hosts=7, days=7, cadences=Cadences(latency_s=1800, trace_s=3600, tracepath_s=7200),
                   benign=False)
ONSET = CONFIG.start + 3 * DAY_S + 10 * 3600 + 17 * 60
BUSY_UTC_H = 14.0


def _pick(mesh, taken: set, test) -> object:
    for path in sorted(mesh.paths, key=lambda p: -p.rtt_ms):
        if path.key not in taken and test(path):
            taken.add(path.key)
            return path
    raise AssertionError("no path fits")


def _placed(sim) -> dict[str, object]:
    """A path per case, away from the silent host (N) and the bad-clock host (C)."""
    mesh = sim.mesh
    silent, clock = mesh.hosts[0], mesh.hosts[1]
    taken = {p.key for p in mesh.paths if p.src is silent or clock in (p.src, p.dst)}
    fast = lambda p: not p.nic_limited  # noqa: E731
    cases = {
        "mtu_blackhole": _pick(mesh, taken, lambda p: p.mtu == 9000 and p.narrow_hop is None and "tracepath" in p.src.tools),
        "window_limited": _pick(mesh, taken, lambda p: fast(p) and p.rtt_ms > 40),
        "lag_seen": _pick(mesh, taken, lambda p: fast(p) and p.src.congestion != "bbr"),
        "lag_unseen": _pick(mesh, taken, lambda p: fast(p) and p.src.congestion != "bbr"),
        "route_change": _pick(mesh, taken, lambda p: len(p.route) >= 7 and p.src.site != p.dst.site),
        "diurnal_saturation": _pick(mesh, taken, fast),
        "throughput_drop": _pick(mesh, taken, fast),
        "latency_shift": _pick(mesh, taken, lambda p: True),
        "loss_step": _pick(mesh, taken, lambda p: fast(p) and p.src.congestion != "bbr"),
        "unreachable": _pick(mesh, taken, lambda p: True),
    }
    cases["clock_out"] = mesh.path(clock.name, mesh.hosts[2].name)
    cases["clock_in"] = mesh.path(mesh.hosts[2].name, clock.name)
    cases["silent"] = mesh.path(silent.name, mesh.hosts[3].name)
    cases["into_silent"] = mesh.path(mesh.hosts[3].name, silent.name)
    cases["healthy"] = [p for p in mesh.paths if p.key not in taken][:3]
    return cases


def _episodes(sim, cases) -> list[Episode]:
    mesh = sim.mesh
    silent, clock = mesh.hosts[0], mesh.hosts[1]

    def on(case, kind, params, start=ONSET):
        path = cases[case]
        return Episode(kind, path.src.name, path.dst.name, start, None, params)

    busy_start = ONSET - ONSET % DAY_S + DAY_S + int(BUSY_UTC_H * 3600)
    route = cases["route_change"].route
    episodes = [
        on("mtu_blackhole", "mtu_blackhole", {"narrow_ttl": len(cases["mtu_blackhole"].route) // 2 + 1,
                                              "tracepath": "pmtu", "stall_s": 4, "rate_after_bps": 2e7}),
        on("window_limited", "window_limited", {"window_bytes": 262144}),
        on("lag_seen", "rising_loss", {"ramp_days": 3.0, "final_loss": 0.005, "shape": 1.0, "members": 4,
                                        "owamp_on_bad_member": True}),
        on("lag_unseen", "rising_loss", {"ramp_days": 3.0, "final_loss": 0.005, "shape": 1.0, "members": 3,
                                          "owamp_on_bad_member": False}),
        on("route_change", "route_change", {"rtt_delta_ms": 4.0, "owd_delta_ms": 3.5, "diverge_ttl": len(route) // 2,
                                            "new_as": "transit", "extra_hops": 1}),
        on("diurnal_saturation", "diurnal_saturation", {"busy_utc_h": BUSY_UTC_H, "busy_hours": 4.0, "keep": 0.35,
                                                        "loss": 0.002, "queue_ms": 6.0, "queue_weight": 0.7}, busy_start),
        on("throughput_drop", "throughput_drop", {"keep": 0.4, "retransmit_factor": 1.2}),
        on("latency_shift", "latency_shift", {"owd_delta_ms": 12.0, "rtt_delta_ms": 12.0, "from_ttl": 3}),
        on("loss_step", "loss_step", {"loss": 0.01}),
        on("unreachable", "unreachable", {"last_ttl": len(cases["unreachable"].route) // 2, "flag": None,
                                          "error": "No route to host"}),
    ]
    for path in mesh.paths:
        if path.src is silent:
            episodes.append(Episode("no_data", path.src.name, path.dst.name, ONSET, None, {"host": silent.name}))
        elif clock in (path.src, path.dst):
            episodes.append(Episode("clock_error", path.src.name, path.dst.name, ONSET, None,
                                    {"host": clock.name, "mode": "step", "step_ms": 300.0, "error_ms": 120.0}))
    return episodes


@pytest.fixture(scope="module")
def setup():
    base = plan(CONFIG)
    cases = _placed(base)
    return base.with_episodes(_episodes(base, cases)), cases


@pytest.fixture(scope="module")
def parsed(setup):
    sim, _ = setup
    cache = {}

    def records(path) -> dict[str, list]:
        if path.key not in cache:
            out = {"latency": [], "throughput": [], "trace": []}
            for line in path_lines(sim, *path.key):
                fmt, found = parse_value(orjson.loads(line.data))  # raises on any reject
                for record in found:
                    out[record.kind].append(record)
            cache[path.key] = out
        return cache[path.key]

    return records


def _epoch(record) -> float:
    from datetime import datetime

    return datetime.fromisoformat(record.time).timestamp()


def _split(records, at=ONSET, settle=0.0):
    return [r for r in records if _epoch(r) < at], [r for r in records if _epoch(r) >= at + settle]


def _median(values):
    return statistics.median(values)


def _dominant(traces) -> str:
    return statistics.mode(t.path_id for t in traces)


def test_mtu_blackhole_tracepath_gives_up_and_iperf3_stalls(setup, parsed):
    sim, cases = setup
    path = cases["mtu_blackhole"]
    recs = parsed(path)
    tracepath = [t for t in recs["trace"] if t.tool == "tracepath"]
    before, after = _split(tracepath, settle=120)  # tracepath's time is its collection time
    assert all(t.reached for t in before) or sum(t.reached for t in before) > 0.95 * len(before)
    assert {t.pmtu_bytes for t in before} == {9000}
    assert all(not t.reached and t.pmtu_bytes == 1500 for t in after)
    assert all(any(h.mtu == 1500 for h in t.hops) for t in after)
    others = [t for t in recs["trace"] if t.tool != "tracepath"]
    assert all(t.hops[-1].ip == path.dst.address for t in _split(others)[1])  # small probes still get through
    runs_before, runs_after = _split(recs["throughput"])
    assert _median([r.throughput_bps for r in runs_before]) > 1e9
    for run in runs_after:
        stalled = run.intervals[:3]
        assert all(i.throughput_bps < 1e6 for i in stalled) and sum(i.retransmits for i in stalled) >= 3
        assert run.throughput_bps < 1e8
    loss_after = [r.loss_ratio for r in _split(recs["latency"])[1]]
    assert _median(loss_after) < 1e-3


def test_window_limited_runs_sit_flat_at_window_over_rtt(setup, parsed):
    _, cases = setup
    recs = parsed(cases["window_limited"])
    before, after = _split(recs["throughput"])
    for run in after:
        assert run.throughput_bps == pytest.approx(262144 * 8 / (run.rtt_ms / 1000), rel=0.05)
        assert run.retransmits == 0
        steady = [i.throughput_bps for i in run.intervals[2:]]
        assert statistics.pstdev(steady) / statistics.fmean(steady) < 0.02
    assert _median([r.throughput_bps for r in before]) > 3 * _median([r.throughput_bps for r in after])


def _degraded_share(runs, normal):
    return sum(r.throughput_bps < 0.5 * normal for r in runs) / len(runs)


def test_failing_lag_member_one_run_in_k_and_a_slow_loss_ramp(setup, parsed):
    _, cases = setup
    seen, unseen = parsed(cases["lag_seen"]), parsed(cases["lag_unseen"])
    for recs, members in ((seen, 4), (unseen, 3)):
        before, after = _split(recs["throughput"], settle=DAY_S / 2)
        normal = _median([r.throughput_bps for r in before])
        assert _degraded_share(before, normal) < 0.1
        assert 1 / members - 0.2 < _degraded_share(after, normal) < 1 / members + 0.25
        bad = [r for r in after if r.throughput_bps < 0.5 * normal]
        good = [r for r in after if r.throughput_bps >= 0.5 * normal]
        per_mb = lambda runs: _median([r.retransmits / (r.throughput_bps * r.duration_s / 8e6) for r in runs])  # noqa: E731
        assert per_mb(bad) > 10 * per_mb(good)
    lat_before, lat_after = _split(seen["latency"])
    first_day = [r.loss_ratio for r in lat_after if _epoch(r) < ONSET + DAY_S]
    last_day = [r.loss_ratio for r in lat_after if _epoch(r) >= ONSET + 3 * DAY_S]
    assert _median([r.loss_ratio for r in lat_before]) < 2e-4
    assert _median(first_day) < _median(last_day) and 0.003 < _median(last_day) < 0.007
    assert _median([r.loss_ratio for r in _split(unseen["latency"])[1]]) < 2e-4  # the probes miss the bad member


def test_route_change_new_hops_and_a_delay_step_at_once(setup, parsed):
    _, cases = setup
    recs = parsed(cases["route_change"])
    before, after = _split(recs["trace"])
    assert _dominant(before) != _dominant(after)
    old, new = set(_dominant_hops(before)), set(_dominant_hops(after))
    assert new - old, "the new route has new addresses"
    lat_before, lat_after = _split(recs["latency"])
    step = _median([r.delay_min_ms for r in lat_after]) - _median([r.delay_min_ms for r in lat_before])
    assert step == pytest.approx(3.5, abs=0.25)
    tp_before, tp_after = _split(recs["throughput"])
    assert _median([r.rtt_ms for r in tp_after]) - _median([r.rtt_ms for r in tp_before]) == pytest.approx(4.0, abs=1.0)


def _dominant_hops(traces) -> list[str]:
    top = _dominant(traces)
    return [h.ip for h in next(t for t in traces if t.path_id == top).hops if h.ip]


def test_diurnal_saturation_busy_hours_every_day(setup, parsed):
    _, cases = setup
    recs = parsed(cases["diurnal_saturation"])
    start = ONSET - ONSET % DAY_S + DAY_S + BUSY_UTC_H * 3600

    def busy(r):
        hour = (_epoch(r) % DAY_S) / 3600
        return BUSY_UTC_H + 0.5 <= hour <= BUSY_UTC_H + 3.5

    runs = _split(recs["throughput"], at=start)[1]
    in_busy = [r.throughput_bps for r in runs if busy(r)]
    off = [r.throughput_bps for r in runs if not busy(r) and not BUSY_UTC_H - 1 < (_epoch(r) % DAY_S) / 3600 < BUSY_UTC_H + 5]
    assert in_busy and off and _median(in_busy) < 0.6 * _median(off)
    lat = _split(recs["latency"], at=start)[1]
    busy_lat = [r for r in lat if busy(r)]
    off_lat = [r for r in lat if not BUSY_UTC_H - 1 < (_epoch(r) % DAY_S) / 3600 < BUSY_UTC_H + 5]
    assert _median([r.loss_ratio for r in busy_lat]) > 0.001 > 0.0002 > _median([r.loss_ratio for r in off_lat])
    queue = lambda rs: _median([r.delay_p95_ms - r.delay_min_ms for r in rs])  # noqa: E731
    assert queue(busy_lat) > queue(off_lat) + 2.0
    before = _split(recs["latency"], at=start)[0]
    assert _median([r.loss_ratio for r in before]) < 2e-4


def test_throughput_drop_alone(setup, parsed):
    _, cases = setup
    recs = parsed(cases["throughput_drop"])
    before, after = _split(recs["throughput"])
    assert _median([r.throughput_bps for r in after]) / _median([r.throughput_bps for r in before]) == pytest.approx(0.4, abs=0.1)
    lat_before, lat_after = _split(recs["latency"])
    assert _median([r.delay_min_ms for r in lat_after]) == pytest.approx(_median([r.delay_min_ms for r in lat_before]), abs=0.15)
    assert _dominant(_split(recs["trace"])[0]) == _dominant(_split(recs["trace"])[1])


def test_latency_shift_without_a_route_change(setup, parsed):
    _, cases = setup
    recs = parsed(cases["latency_shift"])
    lat_before, lat_after = _split(recs["latency"])
    assert _median([r.delay_min_ms for r in lat_after]) - _median([r.delay_min_ms for r in lat_before]) == pytest.approx(12.0, abs=0.2)
    traces_before, traces_after = _split(recs["trace"])
    assert _dominant(traces_before) == _dominant(traces_after)
    last = lambda ts: _median([t.hops[-1].rtt_ms for t in ts if t.hops[-1].rtt_ms])  # noqa: E731
    assert last(traces_after) - last(traces_before) == pytest.approx(12.0, abs=1.0)


def test_loss_step_and_the_mathis_collapse(setup, parsed):
    _, cases = setup
    recs = parsed(cases["loss_step"])
    lat_before, lat_after = _split(recs["latency"])
    assert _median([r.loss_ratio for r in lat_before]) < 2e-4
    assert _median([r.loss_ratio for r in lat_after]) == pytest.approx(0.01, abs=0.002)
    before, after = _split(recs["throughput"])
    assert _median([r.throughput_bps for r in after]) < 0.3 * _median([r.throughput_bps for r in before])


def test_clock_error_impossible_one_way_delays(setup, parsed):
    _, cases = setup
    out_before, out_after = _split(parsed(cases["clock_out"])["latency"])
    in_before, in_after = _split(parsed(cases["clock_in"])["latency"])
    # the bad clock steps 300 ms ahead (then drifts slowly): what it sends looks 300 ms faster,
    # what it receives 300 ms slower
    soon = lambda rs: [r.delay_min_ms for r in rs if _epoch(r) < ONSET + 6 * 3600]  # noqa: E731
    assert _median(soon(out_after)) == pytest.approx(_median([r.delay_min_ms for r in out_before]) - 300, abs=6)
    assert _median(soon(in_after)) == pytest.approx(_median([r.delay_min_ms for r in in_before]) + 300, abs=6)
    assert all(r.delay_min_ms < 0 for r in out_after)
    assert all(r.max_clock_error_ms > 100 for r in out_after + in_after)
    assert all(r.max_clock_error_ms < 5 for r in out_before + in_before)
    tp_before, tp_after = _split(parsed(cases["clock_out"])["throughput"])
    assert _median([r.rtt_ms for r in tp_after]) == pytest.approx(_median([r.rtt_ms for r in tp_before]), rel=0.05)


def test_unreachable_destination(setup, parsed):
    _, cases = setup
    path = cases["unreachable"]
    recs = parsed(path)
    runs = _split(recs["throughput"])[1]
    assert runs and all(not r.succeeded and "unable to connect to server" in r.error for r in runs)
    assert all(r.loss_ratio == 1.0 and r.packets_received == 0 for r in _split(recs["latency"])[1])
    traces = _split(recs["trace"])[1]
    assert all(t.reached is not True and path.dst.address not in {h.ip for h in t.hops} for t in traces)
    assert all(t.hop_count == 30 for t in traces)
    assert all(r.succeeded for r in _split(recs["throughput"])[0])


def test_no_data_silences_what_the_host_sends_only(setup, parsed):
    _, cases = setup
    silent = parsed(cases["silent"])
    for kind in ("latency", "throughput", "trace"):
        before, after = _split(silent[kind])
        assert before and not after, kind
    into = parsed(cases["into_silent"])
    assert _split(into["latency"], settle=DAY_S)[1]


def test_healthy_paths_swing_mildly_and_stay_clean(setup, parsed):
    _, cases = setup
    for path in cases["healthy"]:
        recs = parsed(path)
        runs = [r for r in recs["throughput"] if r.succeeded]
        overall = _median([r.throughput_bps for r in runs])
        by_hour = {}
        for r in runs:
            by_hour.setdefault(int(_epoch(r) % DAY_S // 3600), []).append(r.throughput_bps)
        assert min(_median(v) for v in by_hour.values() if len(v) >= 3) > 0.75 * overall
        losses = [r.loss_ratio for r in recs["latency"]]
        assert statistics.fmean(losses) < 5e-4 and _median(losses) < 2e-4
        assert all(r.max_clock_error_ms < 5 for r in recs["latency"])
        reached = [t for t in recs["trace"] if t.tool == "tracepath"]
        assert sum(t.reached for t in reached) >= 0.97 * len(reached)


def test_ecmp_alternates_among_a_few_routes_on_a_healthy_path(setup, parsed):
    sim, _ = setup
    touched = {(e.src, e.dst) for e in sim.episodes}
    path = next(p for p in sim.mesh.paths if p.ecmp and p.key not in touched)
    traces = parsed(path)["trace"]
    same_tool = [t for t in traces if t.tool == traces[0].tool]
    shares = sorted(Counter(t.path_id for t in same_tool).values(), reverse=True)
    assert len(shares) >= 2 and shares[1] > 0.15 * len(same_tool), shares[:4]
