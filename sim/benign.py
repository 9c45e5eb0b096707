"""The benign behaviour catalogue: what real networks do that is NOT a pathology.

Nothing here is labelled (an alarm about it is a false alarm), except the untuned host at the
end of the table, a pathology the catalogue brings along because it, too, is there from the
first day. Every behaviour's parameters are drawn per seed (domain randomisation) from the
catalogue's own random streams, so a mesh with the catalogue off (``SimConfig(benign=False)``,
``pathwatch simulate --no-benign``) is byte for byte what the simulator wrote before it.

Standing queues and ``diurnal_saturation`` are told apart the way labels have always told them:
a path whose runs lose a deep share of their rate in the busy hours (keep 0.2-0.6) is a labelled
saturation; the benign queue's test stream keeps 90-97 % (within a healthy path's daily swing
of up to 12 %): the queue sits on a link with room for the test's stream, and its drops hit the
probes (as a saturation's do here) while the TCP run keeps its share.

=================  =======================================  ==========================================
behaviour          parameters drawn per seed                what it leaves in the data
=================  =======================================  ==========================================
standing queue     1-2 hosts' uplink, in or out; peak       min one-way delay climbs by up to
(busy link)        12-17 h local, width 2-4 h (Gaussian),   ``floor_ms`` over the local busy hours and
                   ``floor_ms`` 5-20, ``loss`` 0.02-0.3 %   falls back at night (RTT of runs and of
                   at the peak; the test's stream keeps     hops behind the queue too, and the RTT of
                   90-97 % of its rate                      the reverse path); probe loss while busy;
                                                            no trough beyond a healthy swing. A
                                                            labelled ``diurnal_saturation`` gets the
                                                            same floor rise (5-20 ms) on its trough.
partly answering   10-30 % of routers answer 90-99.9 %      a ``*`` now and then at that router's TTL
hops               of probes (miss log-uniform 0.1-10 %)
ICMP rate          10-30 % of paths; 0.2-3 bursts a day,    in a burst, routers from a middle TTL on
limiting           15-90 min; routers answer 25-70 %        answer only now and then (the destination
                                                            still does)
slow-path routers  4-10 % of routers; +2-30 ms with noise   that hop's RTT inflated and noisy in every
                   of the same order                        trace; later hops and the destination not
asymmetric routes  15-35 % of host pairs: the reverse       forward and reverse traces through
                   direction through transit (AS 3356 or    different networks; one-way delays unequal,
                   6939) from the start                     their sum the RTT; tracepath ``back``
NTP steps and      per host 0.3-2 corrections a day, step   one-way delays move by a fraction of a ms,
slews              or slew (5-60 min), offsets within 80 %  opposite on A→B and B→A; RTT unchanged;
                   of the host's clock-error estimate       max-clock-error as before
host reboots,      per host 0-2 reboots (3-10 min) and 0-1  no result on any path to or from the host
maintenance        windows (10-20 min); no run skipped      that long: one missed result, well below
                   beside one they take                     a silence (30 min+) or a labelled no_data
                                                            (6 h - 4 d)
CPU-loaded hosts   per host 0-3 episodes of 2-8 h; rate     throughput dips (CPU-bound: uneven per
                   kept 55-90 %, jitter weight 10-40 %,     second, never NIC-flat) and more one-way
                   scale 0.2-2 ms                           delay jitter on every path of the host
cross-traffic      per path 0.5-4 a week, 10 min - 3 h;     a dip of one or a few runs with
bursts             rate kept 25-70 %; probe loss 0.05-1 %   retransmits; a short loss burst (one to
                   for the first 5-30 min                   three latency windows)
test schedule      throughput runs skipped 1-4 %, traces    a missing run now and then (never two of
                   0.5-2 % (never two in a row); 5 % of     a test in a row); uneven trace spacing
                   traces up to 2 min late
untuned host       meshes of 6+ hosts: one host (not the    ``window_limited`` from the data start on
(LABELLED)         silent one), TCP buffer 256 KiB - 4 MiB  its outgoing paths where window/RTT binds:
                   (binding on few paths where it can);     flat near window/RTT, no retransmits,
                   its paths come on top of the budget      flat cwnd
=================  =======================================  ==========================================

>>> import numpy as np
>>> from pathwatch.sim.config import SimConfig
>>> from pathwatch.sim.mesh import build_mesh
>>> config = SimConfig(seed=3)
>>> mesh = build_mesh(config.hosts, np.random.default_rng([3, 1]))
>>> cat = draw_catalogue(mesh, config)
>>> 1 <= len({q.host for q in cat.queues.values()}) <= 2, all(5 <= q.floor_ms <= 20 for q in cat.queues.values())
(True, True)
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace

import numpy as np

from .config import DAY_S, SimConfig
from .effects import Modifiers, busy_window, hour_of_day
from .episode import Episode
from .mesh import Host, SimulatedMesh, Path
from .routes import hash_int, with_fracs

# Stream numbers of the catalogue's random generators ([seed, stream, ...]); the simulator's own use 1-4.
STREAM_DRAW, STREAM_UNTUNED, STREAM_TRACE, STREAM_SKIP, STREAM_PATH = 5, 6, 7, 8, 9
UNTUNED_WINDOWS = (256 * 1024, 512 * 1024, 1024 * 1024, 2 * 1024 * 1024, 4 * 1024 * 1024)
# Paths whose labelled pathology is about loss or daily load keep their label's signature alone.
_QUEUE_FREE = frozenset({"diurnal_saturation", "rising_loss", "loss_step"})
_BASE_DROP = 0.004            # measure_trace's healthy per-answer loss (kept for routers not drawn here)


@dataclass(frozen=True)
class StandingQueue:
    """A busy link's standing queue on one directed path, over the host's local busy hours."""

    host: str
    direction: str            # "out": the host's uplink outwards; "in": towards it
    peak_utc_h: float
    width_h: float
    floor_ms: float
    loss: float
    keep: float               # share of its rate the test's single stream keeps at the peak


@dataclass(frozen=True)
class Window:
    """A stretch of time [start, end) with a strength (rate kept, loss, ...)."""

    start: float
    end: float
    keep: float = 1.0
    loss: float = 0.0
    jitter_weight: float = 0.0
    jitter_ms: float = 0.0
    loss_s: float = 0.0       # the loss lasts this long from the start (0: the whole window)


@dataclass(frozen=True)
class ClockWander:
    """A host's NTP-disciplined clock offset: piecewise linear between corrections (ms)."""

    times: tuple[float, ...]
    offsets_ms: tuple[float, ...]
    steps: int
    slews: int

    def offset_ms(self, t: np.ndarray) -> np.ndarray:
        if not self.times:
            return np.zeros(len(t))
        return np.interp(t, self.times, self.offsets_ms)


@dataclass
class Catalogue:
    """Every benign behaviour of one simulation (see the module's table)."""

    seed: int
    queues: dict[int, StandingQueue] = field(default_factory=dict)           # by path index
    returns: dict[int, StandingQueue] = field(default_factory=dict)          # paths whose way back crosses a queue
    diurnal_floor_ms: dict[int, float] = field(default_factory=dict)         # labelled saturations' floor rise
    answer_share: float = 0.0
    slow_share: float = 0.0
    # by path index: (first rate-limited TTL, answer probability in a burst, the bursts)
    rate_limited: dict[int, tuple[int, float, tuple[Window, ...]]] = field(default_factory=dict)
    clocks: dict[str, ClockWander] = field(default_factory=dict)
    outages: dict[str, tuple[Window, ...]] = field(default_factory=dict)     # by host
    loads: dict[str, tuple[Window, ...]] = field(default_factory=dict)       # by host
    bursts: dict[int, tuple[Window, ...]] = field(default_factory=dict)      # by path index
    skip_rates: dict[str, float] = field(default_factory=dict)               # by test
    late_share: float = 0.05
    asymmetric: list[tuple[str, str]] = field(default_factory=list)          # (a, b): b→a detours

    # -- routers: answer rates and slow paths, by address (a router is the same on every path) --

    def answer_miss(self, ip: str) -> float:
        """How often the router at ``ip`` leaves a probe unanswered."""
        h = hash_int(f"answer:{self.seed}:{ip}")
        if h % 1000 >= self.answer_share * 1000:
            return _BASE_DROP
        return 10 ** (-3.0 + 2.0 * ((h >> 10) % 1000) / 1000.0)

    def slow_path(self, ip: str) -> float:
        """Extra ms the router at ``ip`` takes to answer from its slow control plane (0: none)."""
        h = hash_int(f"slow:{self.seed}:{ip}")
        if h % 1000 >= self.slow_share * 1000:
            return 0.0
        return 2.0 + 28.0 * ((h >> 10) % 1000) / 1000.0

    def outage(self, path: Path, t: np.ndarray) -> np.ndarray:
        """Which test times fall while the source or destination host is down."""
        quiet = np.zeros(len(t), dtype=bool)
        for host in (path.src.name, path.dst.name):
            for w in self.outages.get(host, ()):
                quiet |= (t >= w.start) & (t < w.end)
        return quiet

    def describe(self) -> dict:
        """A JSON-ready summary for mesh.json (people and plots)."""
        def windows(ws):
            return [{"start": int(w.start), "end": int(w.end), "keep": round(w.keep, 3), "loss": round(w.loss, 6)}
                    for w in ws]
        return {
            "standing_queues": [{"path": i, "host": q.host, "direction": q.direction,
                                 "peak_utc_h": round(q.peak_utc_h, 2), "width_h": round(q.width_h, 2),
                                 "floor_ms": round(q.floor_ms, 2), "loss": round(q.loss, 5), "keep": round(q.keep, 3)}
                                for i, q in sorted(self.queues.items())],
            "diurnal_floor_ms": {str(i): round(v, 2) for i, v in sorted(self.diurnal_floor_ms.items())},
            "partly_answering_router_share": round(self.answer_share, 3),
            "slow_path_router_share": round(self.slow_share, 3),
            "icmp_rate_limited_paths": {str(i): {"from_hop": h, "answer": round(a, 3), "bursts": len(b)}
                                        for i, (h, a, b) in sorted(self.rate_limited.items())},
            "clock_corrections": {h: {"steps": c.steps, "slews": c.slews,
                                      "max_offset_ms": round(max(map(abs, c.offsets_ms), default=0.0), 3)}
                                  for h, c in sorted(self.clocks.items())},
            "outages": {h: windows(ws) for h, ws in sorted(self.outages.items()) if ws},
            "cpu_load": {h: windows(ws) for h, ws in sorted(self.loads.items()) if ws},
            "cross_traffic_bursts": {str(i): len(ws) for i, ws in sorted(self.bursts.items()) if ws},
            "skip_rates": {k: round(v, 4) for k, v in self.skip_rates.items()},
            "asymmetric_pairs": [list(p) for p in self.asymmetric],
        }


def _busy(t: np.ndarray, peak_utc_h: float, width_h: float) -> np.ndarray:
    """0..1: a Gaussian bump around the peak hour, each day 0.8-1.1 deep (day-to-day variation)."""
    distance = np.abs(hour_of_day(t) - peak_utc_h)
    distance = np.minimum(distance, 24.0 - distance)
    day = np.floor(t / DAY_S)
    depth = 0.8 + 0.3 * ((day * 2654435761 + int(peak_utc_h * 97)) % 1000) / 1000.0
    return np.minimum(1.0, depth * np.exp(-0.5 * (distance / width_h) ** 2))


def _windows(rng: np.random.Generator, start: int, end: int, per_day: float, shortest_s: float, longest_s: float,
             **strength) -> tuple[Window, ...]:
    """Poisson-many windows over [start, end), each with strengths drawn uniformly from (lo, hi)."""
    count = int(rng.poisson(per_day * (end - start) / DAY_S))
    out = []
    for _ in range(count):
        at = float(rng.uniform(start, end))
        length = float(rng.uniform(shortest_s, longest_s))
        drawn = {name: float(rng.uniform(*bounds)) for name, bounds in strength.items()}
        out.append(Window(at, at + length, **drawn))
    return tuple(sorted(out, key=lambda w: w.start))


def _clock(host: Host, config: SimConfig, rng: np.random.Generator) -> ClockWander:
    """Corrections at random times, each moving the offset to a new value within the estimate."""
    bound = 0.8 * host.clock_error_ms
    per_day = float(rng.uniform(0.3, 2.0))
    count = int(rng.poisson(per_day * config.days))
    at = np.sort(rng.uniform(config.start, config.end, count))
    times, offsets = [float(config.start)], [float(rng.uniform(-bound, bound))]
    steps = slews = 0
    for t in at.tolist():
        if t <= times[-1] + 1:
            continue
        target = float(rng.uniform(-bound, bound))
        if rng.random() < 0.4:   # ntpd/chrony step: at once
            steps += 1
            duration = 1.0
        else:                     # slew: at a bounded rate, over minutes
            slews += 1
            duration = float(rng.uniform(300, 3600))
        times += [t, t + duration]
        offsets += [offsets[-1], target]
    return ClockWander(tuple(times), tuple(offsets), steps, slews)


def draw_catalogue(mesh: SimulatedMesh, config: SimConfig) -> Catalogue:
    """Every benign behaviour of the mesh, drawn from the seed's catalogue stream."""
    rng = np.random.default_rng([config.seed, STREAM_DRAW])
    cat = Catalogue(seed=config.seed)
    hosts = list(mesh.hosts)
    # standing queues: 1-2 hosts' uplink in one direction
    for host in [hosts[i] for i in rng.permutation(len(hosts))[: int(rng.integers(1, 3))]]:
        direction = "out" if rng.random() < 0.5 else "in"
        local_peak = float(rng.uniform(12.0, 17.0))
        queue = StandingQueue(host.name, direction, (local_peak - host.site.utc_offset_h) % 24,
                              float(rng.uniform(2.0, 4.0)), float(rng.uniform(5.0, 20.0)),
                              float(10 ** rng.uniform(math.log10(2e-4), math.log10(3e-3))),
                              float(rng.uniform(0.9, 0.97)))
        for path in mesh.paths:
            if (path.src if direction == "out" else path.dst).name == host.name and path.index not in cat.queues:
                cat.queues[path.index] = queue
            elif (path.dst if direction == "out" else path.src).name == host.name and path.index not in cat.returns:
                cat.returns[path.index] = queue   # its ACKs and replies cross the queue: RTT only
    cat.diurnal_floor_ms = {path.index: float(rng.uniform(5.0, 20.0)) for path in mesh.paths}
    cat.answer_share = float(rng.uniform(0.1, 0.3))
    cat.slow_share = float(rng.uniform(0.04, 0.10))
    for path in mesh.paths:
        if rng.random() < rng.uniform(0.1, 0.3):
            first = int(rng.integers(max(2, len(path.route) // 3), max(3, len(path.route) - 1))) + 1
            bursts = _windows(rng, config.start, config.end, float(rng.uniform(0.2, 3.0)), 900, 5400)
            cat.rate_limited[path.index] = (first, float(rng.uniform(0.25, 0.7)), bursts)
    for host in hosts:
        cat.clocks[host.name] = _clock(host, config, rng)
        reboots = _windows(rng, config.start, config.end, float(rng.uniform(0, 2)) / max(1, config.days), 180, 600)
        upkeep = _windows(rng, config.start, config.end, float(rng.uniform(0, 1)) / max(1, config.days), 600, 1200)
        cat.outages[host.name] = tuple(sorted(reboots + upkeep, key=lambda w: w.start))
        cat.loads[host.name] = _windows(rng, config.start, config.end, float(rng.uniform(0, 3)) / max(1, config.days),
                                        2 * 3600, 8 * 3600, keep=(0.55, 0.9), jitter_weight=(0.1, 0.4),
                                        jitter_ms=(0.2, 2.0))
    for path in mesh.paths:
        per_day = float(rng.uniform(0.5, 4.0)) / 7
        cat.bursts[path.index] = _windows(rng, config.start, config.end, per_day, 600, 3 * 3600,
                                          keep=(0.25, 0.7), loss=(5e-4, 1e-2), loss_s=(300, 1800))
    cat.skip_rates = {"throughput": float(rng.uniform(0.01, 0.04)), "traceroute": float(rng.uniform(0.005, 0.02)),
                      "tracepath": float(rng.uniform(0.005, 0.02))}
    return cat


def asymmetric_mesh(mesh: SimulatedMesh, config: SimConfig, cat: Catalogue) -> SimulatedMesh:
    """The mesh with 15-35 % of host pairs routed asymmetrically: the reverse direction via transit.

    Both directions' RTT becomes the sum of the two one-way delays, and each direction's
    ``fwd_share`` its own share of it.
    """
    rng = np.random.default_rng([config.seed, STREAM_PATH])
    share = float(rng.uniform(0.15, 0.35))
    paths = list(mesh.paths)
    for a_index, a in enumerate(mesh.hosts):
        for b in mesh.hosts[a_index + 1:]:
            if rng.random() >= share or a.site == b.site:
                continue
            via = "transit" if rng.random() < 0.6 else "he"
            fwd, back = mesh.path(a.name, b.name), mesh.path(b.name, a.name)
            egress = max(1, sum(1 for r in back.route if r.network in (b.site.campus, b.site.regional, None)) - 1)
            detour = mesh.planner.detour(back.route, b.site, a.site, diverge=min(egress, len(back.route) - 2), via=via,
                                         tag=f"asym{back.index}", extra_hops=int(rng.integers(0, 3)))
            owd_fwd = fwd.rtt_ms * fwd.fwd_share
            owd_back = back.rtt_ms * (1 - back.fwd_share) * float(rng.uniform(1.15, 1.6))
            rtt = round(owd_fwd + owd_back, 3)
            paths[fwd.index] = replace(fwd, rtt_ms=rtt, fwd_share=owd_fwd / rtt,
                                       back_extra=len(detour) - len(fwd.route))
            paths[back.index] = replace(back, route=with_fracs(list(detour), b.site), ecmp={}, rtt_ms=rtt,
                                        fwd_share=owd_back / rtt, back_extra=len(fwd.route) - len(detour))
            cat.asymmetric.append((a.name, b.name))
    return replace(mesh, paths=tuple(paths))


def untuned_host_episodes(mesh: SimulatedMesh, config: SimConfig, taken: set[int], silent: str | None) -> list:
    """``window_limited`` from the data start on the outgoing paths of one untuned host where its
    buffer binds (window/RTT below the path's rate); the window is chosen so that no path of the
    host sits near the line (window/RTT between 60 % and 120 % of its rate), binding on at most
    three paths where it can (the rest of the mesh keeps room for the other pathologies).
    """
    rng = np.random.default_rng([config.seed, STREAM_UNTUNED])
    candidates = [h for h in mesh.hosts if h.name != silent]
    options = []   # (binding paths, host order, window, host, its free outgoing paths)
    for order, host in enumerate([candidates[i] for i in rng.permutation(len(candidates))]):
        own = [p for p in mesh.paths if p.src is host and p.index not in taken]
        for window in UNTUNED_WINDOWS:
            ratios = [window * 8 / (p.rtt_ms / 1000) / p.rate_bps for p in own]
            if any(r < 0.4 for r in ratios) and not any(0.6 <= r <= 1.2 for r in ratios):
                options.append((sum(r < 1.0 for r in ratios), order, window, host, own))
    if not options:
        return []
    few = [o for o in options if o[0] <= 3]
    _, _, window, host, own = few[int(rng.integers(len(few)))] if few else min(options, key=lambda o: o[:2])
    return [Episode("window_limited", p.src.name, p.dst.name, config.start, None,
                    {"window_bytes": window, "untuned_host": host.name})
            for p in own if window * 8 / (p.rtt_ms / 1000) < p.rate_bps]


def apply(cat: Catalogue, path: Path, t: np.ndarray, mods: Modifiers) -> Modifiers:
    """Add the catalogue's effects on ``path`` at test times ``t`` to ``mods`` (in place, returned)."""
    queue = cat.queues.get(path.index)
    if queue is not None and not _QUEUE_FREE.intersection(mods.episodes):
        busy = _busy(t, queue.peak_utc_h, queue.width_h)
        mods.floor_ms += queue.floor_ms * busy
        mods.floor_after = 0.1 if queue.direction == "out" else 0.9
        mods.congestion_loss += queue.loss * busy ** 2
        mods.rate_factor *= 1.0 - (1.0 - queue.keep) * busy
        mods.retransmit_factor *= 1.0 + 2.0 * busy
    back = cat.returns.get(path.index)
    if back is not None and not _QUEUE_FREE.intersection(mods.episodes):
        mods.return_floor_ms += back.floor_ms * _busy(t, back.peak_utc_h, back.width_h)
    floor = cat.diurnal_floor_ms.get(path.index)
    saturation = mods.episodes.get("diurnal_saturation")
    if floor and saturation is not None:
        p = saturation.params
        mods.floor_ms += floor * busy_window(t, saturation.start, p["busy_utc_h"], p["busy_hours"])
        mods.floor_after = 0.3
    clock_src, clock_dst = cat.clocks.get(path.src.name), cat.clocks.get(path.dst.name)
    if clock_src is not None and clock_dst is not None:
        mods.owd_delta_ms += clock_dst.offset_ms(t) - clock_src.offset_ms(t)
    for host in (path.src.name, path.dst.name):
        for w in cat.loads.get(host, ()):
            on = (t >= w.start) & (t < w.end)
            mods.rate_factor *= np.where(on, w.keep, 1.0)
            mods.cpu_bound |= on
            mods.jitter_weight = np.where(on, np.maximum(mods.jitter_weight, w.jitter_weight), mods.jitter_weight)
            mods.jitter_ms = np.where(on, np.maximum(mods.jitter_ms, w.jitter_ms), mods.jitter_ms)
    for w in cat.bursts.get(path.index, ()):
        on = (t >= w.start) & (t < w.end)
        mods.rate_factor *= np.where(on, w.keep, 1.0)
        mods.retransmit_factor *= np.where(on, 4.0, 1.0)
        lossy = on & (t < w.start + w.loss_s) if w.loss_s else on
        mods.congestion_loss += np.where(lossy, w.loss, 0.0)
    return mods


def rate_limit_bursts(cat: Catalogue, path: Path, t: np.ndarray) -> tuple[int, float, np.ndarray] | None:
    """(first rate-limited TTL, answer probability, which times fall in a burst) for a rate-limited path."""
    entry = cat.rate_limited.get(path.index)
    if entry is None:
        return None
    first, answer, bursts = entry
    on = np.zeros(len(t), dtype=bool)
    for w in bursts:
        on |= (t >= w.start) & (t < w.end)
    return first, answer, on


def thin_schedule(times: dict[tuple[int, str], np.ndarray], cat: Catalogue, config: SimConfig, mesh: SimulatedMesh) -> dict:
    """The schedule with runs skipped now and then (never two of a test in a row, never beside a run
    an outage takes: a gap stays one missed run long) and late traces."""
    rng = np.random.default_rng([config.seed, STREAM_SKIP])
    out = {}
    for key in sorted(times):
        values = times[key]
        rate = cat.skip_rates.get(key[1], 0.0)
        if rate and len(values):
            skip = rng.random(len(values)) < rate
            skip[1:] &= ~skip[:-1]            # never two in a row
            down = cat.outage(mesh.paths[key[0]], values)
            skip[1:] &= ~down[:-1]
            skip[:-1] &= ~down[1:]
            values = values[~skip]
            if key[1] != "throughput":
                late = rng.random(len(values)) < cat.late_share
                values = np.sort(values + np.where(late, rng.uniform(0, 120, len(values)), 0.0))
                values = values[values < config.end]
        out[key] = values
    return out
