"""The benign behaviour catalogue (pathwatch.sim.benign) leaves each behaviour's signature in the
rendered data and in the records the project's parsers make of it — and no label.

Most cases place one behaviour by hand (a hand-made Catalogue, fixed magnitudes) on a mesh with
no pathology, so the signature is the behaviour's alone; a few check what a seed draws (ranges,
the untuned host, the benign-only family). Only the paths under test are generated and parsed.
"""

from __future__ import annotations

import statistics
from dataclasses import replace
from datetime import datetime

import numpy as np
import orjson
import pytest

from pathwatch.ingest.parse import parse_value
from pathwatch.sim.benign import Catalogue, ClockWander, StandingQueue, Window, draw_catalogue
from pathwatch.sim.config import DAY_S, Cadences, SimConfig
from pathwatch.sim.generate import path_lines, plan
from pathwatch.sim.writer import LABELS

CONFIG = SimConfig(seed=21, hosts=6, days=4, cadences=Cadences(latency_s=1800))
PEAK_UTC_H = 14.0


@pytest.fixture(scope="module")
def base():
    """The seed's mesh with no pathology at all (the catalogue is set per test)."""
    return plan(CONFIG).with_episodes([])


def _epoch(record) -> float:
    return datetime.fromisoformat(record.time).timestamp()


def _hour(record) -> float:
    return _epoch(record) % DAY_S / 3600


def parsed(sim, path) -> dict[str, list]:
    out = {"latency": [], "throughput": [], "trace": []}
    for line in path_lines(sim, *path.key):
        _, found = parse_value(orjson.loads(line.data))  # raises on any reject
        for record in found:
            out[record.kind].append(record)
    return out


def _quiet_path(sim, test=lambda p: True):
    """A path with one route (no ECMP), long enough to have middle routers."""
    return next(p for p in sim.mesh.paths if not p.ecmp and len(p.route) >= 7 and test(p))


def _median(values):
    return statistics.median(values)


def _traces(records, tool=None):
    traces = records["trace"]
    tool = tool or traces[0].tool
    return [t for t in traces if t.tool == tool]


def _dest_rtt(trace) -> float | None:
    return trace.hops[-1].rtt_ms if trace.reached else None


# --- standing queues ---------------------------------------------------------------------------

def test_a_standing_queue_raises_the_delay_floor_only_in_busy_hours(base):
    path = _quiet_path(base)
    back = base.mesh.path(path.dst.name, path.src.name)
    queue = StandingQueue(path.src.name, "out", PEAK_UTC_H, 3.0, floor_ms=12.0, loss=0.003, keep=0.95)
    sim = replace(base, benign=Catalogue(seed=CONFIG.seed, queues={path.index: queue}, returns={back.index: queue}))
    busy = lambda r: abs(_hour(r) - PEAK_UTC_H) <= 1.0  # noqa: E731
    night = lambda r: abs(_hour(r) - PEAK_UTC_H) >= 8.0  # noqa: E731
    recs = parsed(sim, path)
    lat = recs["latency"]
    floor_busy = _median([r.delay_min_ms for r in lat if busy(r)])
    floor_night = _median([r.delay_min_ms for r in lat if night(r)])
    assert floor_busy - floor_night >= 7.0, (floor_busy, floor_night)
    assert abs(floor_night - path.rtt_ms * path.fwd_share) < 1.0   # falls back at night
    assert statistics.fmean(r.loss_ratio for r in lat if busy(r)) > 1e-3
    assert statistics.fmean(r.loss_ratio for r in lat if night(r)) < 3e-4
    # the path's own single stream keeps (nearly) its rate: no trough, hence no diurnal_saturation label
    runs = [r for r in recs["throughput"] if r.succeeded]
    rate = lambda when: _median([r.throughput_bps for r in runs if when(r)])  # noqa: E731
    assert rate(busy) >= 0.85 * rate(night)
    dest = [(_dest_rtt(t), t) for t in _traces(recs) if t.reached]
    assert _median([d for d, t in dest if busy(t)]) - _median([d for d, t in dest if night(t)]) >= 7.0
    # the other direction's one-way floor stays put; its RTT (ACKs, replies cross the queue) does not
    rev = parsed(sim, back)
    assert abs(_median([r.delay_min_ms for r in rev["latency"] if busy(r)])
               - _median([r.delay_min_ms for r in rev["latency"] if night(r)])) < 0.3
    rev_runs = [r for r in rev["throughput"] if r.succeeded and r.rtt_ms]
    assert _median([r.rtt_ms for r in rev_runs if busy(r)]) - _median([r.rtt_ms for r in rev_runs if night(r)]) >= 5.0


def test_a_labelled_saturation_gets_the_floor_rise_on_top_of_its_trough():
    sim = plan(SimConfig(seed=21, hosts=7, days=7, cadences=Cadences(latency_s=1800)))
    episode = next(e for e in sim.episodes if e.kind == "diurnal_saturation")
    path = sim.mesh.path(episode.src, episode.dst)
    floor = sim.benign.diurnal_floor_ms[path.index]
    lat = parsed(sim, path)["latency"]
    busy_h = episode.params["busy_utc_h"] + episode.params["busy_hours"] / 2
    mid = lambda r: abs((_hour(r) - busy_h + 12) % 24 - 12) <= 0.5  # noqa: E731
    before = [r.delay_min_ms for r in lat if mid(r) and _epoch(r) < episode.start - 3600]
    after = [r.delay_min_ms for r in lat if mid(r) and _epoch(r) >= episode.start + 3600]
    assert 5.0 <= floor <= 20.0
    assert _median(after) - _median(before) >= 0.6 * floor


# --- routers -----------------------------------------------------------------------------------

def test_a_partly_answering_hop_is_silent_now_and_then_at_its_ttl(base):
    cat = Catalogue(seed=CONFIG.seed, answer_share=1.0)   # every router has its own answer rate
    sim = replace(base, benign=cat)
    path = _quiet_path(sim)
    candidates = [(ttl, r) for ttl, r in enumerate(path.route[:-1], start=1)
                  if not r.silent and 0.02 <= cat.answer_miss(r.ip) <= 0.1]
    assert candidates, "no router answering 90-98 % on the path"
    ttl, router = candidates[0]
    traces = _traces(parsed(sim, path))
    silent = sum(1 for t in traces if t.hops[ttl - 1].ip is None)
    answered = sum(1 for t in traces if t.hops[ttl - 1].ip == router.ip)
    assert silent + answered == len(traces)            # the same router, or nobody: never another route
    miss = cat.answer_miss(router.ip)
    n = len(traces)
    assert 1 <= silent and abs(silent - miss * n) <= 4 * (n * miss * (1 - miss)) ** 0.5 + 1, (silent, miss, n)
    assert all(t.reached for t in traces)              # the destination always answers


def test_drawn_answer_rates_lie_between_90_and_99_9_percent():
    sim = plan(CONFIG)
    routers = {r.ip for p in sim.mesh.paths for r in p.route[:-1]}
    rates = [1 - sim.benign.answer_miss(ip) for ip in routers]
    partial = [r for r in rates if r != 1 - 0.004]
    assert partial and all(0.9 - 1e-9 <= r <= 0.999 + 1e-9 for r in partial)
    assert 0.05 <= len(partial) / len(rates) <= 0.45


def test_icmp_rate_limiting_silences_later_hops_in_bursts_only(base):
    path = _quiet_path(base)
    burst = Window(CONFIG.start + DAY_S + 6 * 3600, CONFIG.start + DAY_S + 12 * 3600)
    sim = replace(base, benign=Catalogue(seed=CONFIG.seed, rate_limited={path.index: (4, 0.3, (burst,))}))
    traces = _traces(parsed(sim, path))
    later = [ttl for ttl in range(4, len(path.route)) if not path.route[ttl - 1].silent]
    inside = [t for t in traces if burst.start <= _epoch(t) < burst.end]
    outside = [t for t in traces if not burst.start - 1800 <= _epoch(t) < burst.end + 1800]
    share = lambda ts: statistics.fmean(t.hops[ttl - 1].ip is None for t in ts for ttl in later)  # noqa: E731
    assert share(inside) >= 0.5 and share(outside) <= 0.05, (share(inside), share(outside))
    assert all(t.reached for t in inside)              # the destination still answers
    early = [ttl for ttl in range(1, 4) if not path.route[ttl - 1].silent]
    assert statistics.fmean(t.hops[ttl - 1].ip is None for t in inside for ttl in early) <= 0.05


def test_a_slow_path_router_answers_late_and_noisily_while_the_destination_does_not(base):
    cat = Catalogue(seed=CONFIG.seed, slow_share=1.0)     # every router answers from its slow path
    sim = replace(base, benign=cat)
    path = _quiet_path(sim)
    ttl = next(i for i, r in enumerate(path.route[:-1], start=1) if not r.silent and cat.slow_path(r.ip) >= 5)
    router = path.route[ttl - 1]
    traces = _traces(parsed(sim, path))
    hop = [t.hops[ttl - 1].rtt_ms for t in traces if t.hops[ttl - 1].ip == router.ip]
    dest = [_dest_rtt(t) for t in traces]
    assert _median(hop) >= router.frac * path.rtt_ms + 0.5 * cat.slow_path(router.ip)
    q = lambda v: np.percentile(v, 75) - np.percentile(v, 25)  # noqa: E731
    assert q(hop) >= 0.4 * cat.slow_path(router.ip) and q(dest) < 0.3, (q(hop), q(dest))
    assert abs(_median(dest) - path.rtt_ms) < 1.0


# --- asymmetric routes -------------------------------------------------------------------------

def test_asymmetric_routes_go_back_through_another_network_and_split_the_rtt_unevenly():
    sim = plan(CONFIG).with_episodes([])
    assert sim.benign.asymmetric, "the seed drew no asymmetric pair"
    a, b = sim.benign.asymmetric[0]
    fwd, back = sim.mesh.path(a, b), sim.mesh.path(b, a)
    assert fwd.rtt_ms == back.rtt_ms and abs(fwd.fwd_share + back.fwd_share - 1) < 1e-4   # RTT kept to 1 µs
    there, home = parsed(sim, fwd), parsed(sim, back)
    via_transit = lambda records: {h.ip for t in _traces(records) for h in t.hops  # noqa: E731
                                   if h.ip and h.ip.startswith(("4.69.", "184.105."))}  # transit, HE prefixes
    assert via_transit(home) and not via_transit(there)
    owd_there = _median([r.delay_min_ms for r in there["latency"]])
    owd_home = _median([r.delay_min_ms for r in home["latency"]])
    assert owd_home > 1.1 * owd_there
    assert abs(owd_there + owd_home - fwd.rtt_ms) < 0.5 + 0.02 * fwd.rtt_ms


# --- clocks --------------------------------------------------------------------------------------

def test_an_ntp_slew_moves_the_two_directions_opposite_and_leaves_the_rtt(base):
    path = _quiet_path(base)
    back = base.mesh.path(path.dst.name, path.src.name)
    at = CONFIG.start + 2 * DAY_S
    clocks = {h.name: ClockWander((float(CONFIG.start),), (0.0,), 0, 0) for h in base.mesh.hosts}
    clocks[path.src.name] = ClockWander((float(CONFIG.start), at, at + 900.0), (0.0, 0.0, 0.8), 0, 1)
    sim = replace(base, benign=Catalogue(seed=CONFIG.seed, clocks=clocks))
    there, home = parsed(sim, path), parsed(sim, back)

    def move(records, field):
        before = [getattr(r, field) for r in records if _epoch(r) < at]
        after = [getattr(r, field) for r in records if _epoch(r) >= at + 1800]
        return _median(after) - _median(before)

    assert move(there["latency"], "delay_min_ms") == pytest.approx(-0.8, abs=0.1)   # the sender ahead: shorter
    assert move(home["latency"], "delay_min_ms") == pytest.approx(0.8, abs=0.1)
    dest = [t for t in _traces(there) if t.reached]
    before = [_dest_rtt(t) for t in dest if _epoch(t) < at]
    after = [_dest_rtt(t) for t in dest if _epoch(t) >= at + 1800]
    assert abs(_median(after) - _median(before)) < 0.1


def test_drawn_clock_corrections_stay_within_the_hosts_error_estimate():
    sim = plan(SimConfig(seed=5, hosts=7, days=21))
    t = np.linspace(sim.config.start, sim.config.end, 20000)
    corrections = 0
    for host in sim.mesh.hosts:
        wander = sim.benign.clocks[host.name]
        corrections += wander.steps + wander.slews
        assert np.abs(wander.offset_ms(t)).max() <= 0.8 * host.clock_error_ms + 1e-9
    assert corrections >= len(sim.mesh.hosts)


# --- hosts -------------------------------------------------------------------------------------

def test_a_reboot_leaves_a_short_gap_on_every_path_of_the_host(base):
    host = base.mesh.hosts[2]
    down = Window(CONFIG.start + DAY_S + 3 * 3600.0, CONFIG.start + DAY_S + 3 * 3600.0 + 1200)
    sim = replace(base, benign=Catalogue(seed=CONFIG.seed, outages={host.name: (down,)}))
    out_path = next(p for p in sim.mesh.paths if p.src is host)
    in_path = next(p for p in sim.mesh.paths if p.dst is host)
    other = next(p for p in sim.mesh.paths if host not in (p.src, p.dst))
    for path in (out_path, in_path):
        lat = sorted(_epoch(r) for r in parsed(sim, path)["latency"])
        assert not any(down.start <= t < down.end for t in lat)
        assert max(np.diff(lat)) <= 2 * 1800 + 1     # one result missing (20 min down, 30 min windows)
        assert any(t >= down.end for t in lat)
    assert any(down.start <= _epoch(r) < down.end for r in parsed(sim, other)["latency"])


def test_drawn_outages_are_well_below_a_labelled_silence():
    for seed in (1, 2, 3):
        sim = plan(SimConfig(seed=seed))
        windows = [w for ws in sim.benign.outages.values() for w in ws]
        assert all(180 <= w.end - w.start <= 1200 for w in windows)
        shortest_no_data = min((e.end or sim.config.end) - e.start for e in sim.episodes if e.kind == "no_data")
        assert shortest_no_data >= 6 * 3600


def test_a_loaded_host_slows_throughput_and_jitters_latency_on_all_its_paths(base):
    host = base.mesh.hosts[1]
    load = Window(CONFIG.start + DAY_S, CONFIG.start + DAY_S + 8 * 3600, keep=0.6, jitter_weight=0.4, jitter_ms=1.5)
    sim = replace(base, benign=Catalogue(seed=CONFIG.seed, loads={host.name: (load,)}))
    for path in [next(p for p in sim.mesh.paths if p.src is host and not p.nic_limited),
                 next(p for p in sim.mesh.paths if p.dst is host and not p.nic_limited)]:
        recs = parsed(sim, path)
        during = lambda r: load.start <= _epoch(r) < load.end  # noqa: E731
        runs = [r for r in recs["throughput"] if r.succeeded]
        assert _median([r.throughput_bps for r in runs if during(r)]) <= 0.75 * _median(
            [r.throughput_bps for r in runs if not during(r)])
        spread = lambda rs: _median([r.delay_mean_ms - r.delay_min_ms for r in rs])  # noqa: E731
        lat = recs["latency"]
        assert spread([r for r in lat if during(r)]) >= spread([r for r in lat if not during(r)]) + 0.3


def test_a_loaded_host_is_not_nic_flat_on_a_nic_limited_path():
    base = plan(SimConfig(seed=22, hosts=6, days=3)).with_episodes([])
    path = next(p for p in base.mesh.paths if p.nic_limited)
    load = Window(base.config.start + DAY_S, base.config.start + DAY_S + 8 * 3600, keep=0.7, jitter_weight=0.2,
                  jitter_ms=0.5)
    sim = replace(base, benign=Catalogue(seed=22, loads={path.src.name: (load,)}))
    runs = [r for r in parsed(sim, path)["throughput"] if r.succeeded]

    def cv(run):  # per-second spread after slow start: a CPU-bound sender is uneven, a NIC-pinned one flat
        rates = [i.throughput_bps for i in run.intervals[3:]]
        return statistics.pstdev(rates) / statistics.fmean(rates)

    during = [cv(r) for r in runs if load.start <= _epoch(r) < load.end]
    outside = [cv(r) for r in runs if not load.start <= _epoch(r) < load.end]
    assert during and _median(during) >= 0.04 and _median(outside) < 0.01, (_median(during), _median(outside))


def test_a_cross_traffic_burst_dips_a_few_runs_and_loses_a_few_probes(base):
    path = _quiet_path(base, lambda p: not p.nic_limited)
    burst = Window(CONFIG.start + 2 * DAY_S, CONFIG.start + 2 * DAY_S + 4 * 3600, keep=0.4, loss=0.005)
    sim = replace(base, benign=Catalogue(seed=CONFIG.seed, bursts={path.index: (burst,)}))
    recs = parsed(sim, path)
    during = lambda r: burst.start <= _epoch(r) < burst.end  # noqa: E731
    runs = [r for r in recs["throughput"] if r.succeeded]
    hit = [r for r in runs if during(r)]
    assert 1 <= len(hit) <= 3
    assert max(r.throughput_bps for r in hit) <= 0.7 * _median([r.throughput_bps for r in runs if not during(r)])
    lat = recs["latency"]
    assert min(r.loss_ratio for r in lat if during(r)) >= 0.002
    assert statistics.fmean(r.loss_ratio for r in lat if not during(r)) < 5e-4


def test_drawn_cross_traffic_loses_probes_for_minutes_only(base):
    sim = plan(CONFIG)
    bursts = [w for ws in sim.benign.bursts.values() for w in ws]
    assert bursts and all(300 <= w.loss_s <= 1800 and 600 <= w.end - w.start <= 3 * 3600 for w in bursts)
    path = _quiet_path(base, lambda p: not p.nic_limited)
    burst = Window(CONFIG.start + 2 * DAY_S, CONFIG.start + 2 * DAY_S + 4 * 3600, keep=0.4, loss=0.005, loss_s=1200)
    lat = parsed(replace(base, benign=Catalogue(seed=CONFIG.seed, bursts={path.index: (burst,)})), path)["latency"]
    lossy = [r.loss_ratio for r in lat if burst.start <= _epoch(r) < burst.start + 1200]
    later = [r.loss_ratio for r in lat if burst.start + 1200 <= _epoch(r) < burst.end]
    assert lossy and min(lossy) >= 0.002 and max(later) < 0.002


# --- schedule ----------------------------------------------------------------------------------

def test_runs_are_skipped_now_and_then_but_never_two_in_a_row():
    sim = plan(SimConfig(seed=2))
    classic = plan(SimConfig(seed=2, benign=False))
    cad = sim.config.cadences
    skipped = 0
    for path in sim.mesh.paths:
        now, before = sim.schedule.times[(path.index, "throughput")], classic.schedule.times[(path.index, "throughput")]
        assert set(now.tolist()) <= set(before.tolist())
        skipped += len(before) - len(now)
        assert np.diff(now).max() < 2 * cad.throughput_s + 2 * cad.throughput_jitter_s + 120
    total = sum(len(classic.schedule.times[(p.index, "throughput")]) for p in sim.mesh.paths)
    assert 0.005 * total <= skipped <= 0.05 * total


def test_no_run_is_skipped_beside_an_outage():
    for seed in (2, 3, 4):
        sim = plan(SimConfig(seed=seed))
        classic = plan(SimConfig(seed=seed, benign=False))
        for path in sim.mesh.paths:
            for test in ("throughput", *path.src.tools):
                before = classic.schedule.times[(path.index, test)]
                kept = sim.schedule.times[(path.index, test)]
                down = sim.benign.outage(path, before)
                for i in np.flatnonzero(down).tolist():
                    for j in (i - 1, i + 1):
                        if 0 <= j < len(before) and not down[j]:   # kept, perhaps up to 2 min late (traces)
                            at = np.searchsorted(kept, before[j] - 1e-6)
                            assert at < len(kept) and kept[at] <= before[j] + 121, (seed, path.index, test, j)


# --- the untuned host (labelled) and the families ----------------------------------------------

def test_an_untuned_host_is_window_limited_from_its_first_run():
    sim = plan(SimConfig(seed=3, hosts=7, days=5))
    untuned = [e for e in sim.episodes if "untuned_host" in e.params]
    assert untuned and all(e.kind == "window_limited" and e.start == sim.config.start and e.end is None
                           for e in untuned)
    assert {e.src for e in untuned} == {untuned[0].params["untuned_host"]}
    episode = untuned[0]
    path = sim.mesh.path(episode.src, episode.dst)
    window = episode.params["window_bytes"]
    runs = [r for r in parsed(sim, path)["throughput"] if r.succeeded]
    assert _epoch(runs[0]) < sim.config.start + 3 * 3600
    for run in runs:   # flat near window/RTT from the first run, no retransmits, flat cwnd
        ceiling = window * 8 / (run.rtt_ms / 1000)
        assert 0.85 * ceiling <= run.throughput_bps <= 1.02 * ceiling, (run.throughput_bps, ceiling)
        assert run.retransmits == 0
        assert run.tcp_window_bytes <= window
    assert window * 8 / (path.rtt_ms / 1000) < path.rate_bps   # it binds: slower than the path's own rate


def test_the_benign_only_family_has_no_labels(tmp_path):
    from rich.console import Console

    from pathwatch.sim.command import run_simulate

    sim = plan(SimConfig(seed=4, hosts=4, days=4, benign_only=True))
    assert sim.episodes == [] and sim.benign is not None and sim.benign.queues
    assert run_simulate(tmp_path, seed=4, hosts=4, days=4, start=None, console=Console(quiet=True),
                        benign_only=True) == 0
    assert (tmp_path / LABELS).read_bytes() == b""
    mesh = orjson.loads((tmp_path / "mesh.json").read_bytes())
    assert mesh["family"] == "benign-only" and mesh["episodes"] == [] and mesh["benign"]["standing_queues"]


def test_benign_only_needs_the_catalogue():
    with pytest.raises(ValueError, match="--benign-only"):
        SimConfig(seed=1, benign=False, benign_only=True)


def test_the_catalogue_draws_per_seed():
    mesh = plan(SimConfig(seed=8, benign=False)).mesh
    one, two = draw_catalogue(mesh, SimConfig(seed=8)), draw_catalogue(mesh, SimConfig(seed=9))
    assert one.describe() == draw_catalogue(mesh, SimConfig(seed=8)).describe()
    assert one.describe() != two.describe()
    for q in one.queues.values():
        assert 5 <= q.floor_ms <= 20 and 2e-4 <= q.loss <= 3e-3 and 0.9 <= q.keep <= 0.97
