"""Traces: which routers answer at each TTL, how fast, and what tracepath learns of the MTU.

The route is the path's own (one of its ECMP variants), the changed one after a route
change, or now and then a one-off blip. Silent routers never answer; any hop may drop a
probe. An unreachable destination ends the trace in silence or with an ICMP unreachable
flag. Only tracepath (full-size UDP probes) sees MTUs: a 1500-byte link with working PMTUD
shows ``pmtu 1500`` and the trace goes on; a black hole leaves silence beyond it.

>>> import numpy as np
>>> from pathwatch.sim.effects import modifiers
>>> from pathwatch.sim.mesh import build_mesh
>>> mesh = build_mesh(3, np.random.default_rng(1))
>>> path = mesh.paths[0]
>>> routes = PathRoutes.of(path, mesh, [])
>>> t = np.array([0.0])
>>> trace = measure_trace(path, routes, t, modifiers([], path.src.name, t), np.random.default_rng(0), "traceroute")[0]
>>> trace.reached, trace.hops[-1].ip == path.dst.address
(True, True)
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .benign import Catalogue, rate_limit_bursts
from .effects import Modifiers
from .mesh import SimulatedMesh, Path
from .routes import Router
from .episode import Episode

MAX_TTL = 30
_DROP_RATE = 0.004          # a router's answer lost (ICMP rate limiting); never the destination's
_SLOW_PATH_RATE = 0.03      # a router answering from its slow control plane


@dataclass(frozen=True, slots=True)
class Hop:
    ttl: int
    ip: str | None           # None: no answer
    hostname: str | None = None
    rtt_ms: float | None = None
    asn: int | None = None
    owner: str | None = None
    flag: str | None = None  # !H / !N from the last router of an unreachable destination
    pmtu_from: str | None = None  # tracepath: the router before a narrower link, reporting it
    echo_rtt_ms: float | None = None  # tracepath prints hop 1 twice


@dataclass(frozen=True, slots=True)
class Trace:
    time: float
    hops: tuple[Hop, ...]
    reached: bool
    local_mtu: int
    pmtu: int                # what tracepath ends up believing
    back: int | None         # tracepath "back N": hops on the return path


@dataclass(frozen=True)
class PathRoutes:
    """The routes a path's traces can take."""

    base: tuple[Router, ...]
    changed: tuple[Router, ...] | None
    blip: tuple[Router, ...]

    @classmethod
    def of(cls, path: Path, mesh: SimulatedMesh, episodes: list[Episode]) -> PathRoutes:
        src, dst = path.src.site, path.dst.site
        changed = None
        for episode in episodes:
            if episode.kind == "route_change":
                p = episode.params
                changed = mesh.planner.detour(path.route, src, dst, diverge=p["diverge_ttl"] - 1, via=p["new_as"],
                                              tag=f"rc{path.index}", extra_hops=p["extra_hops"])
        diverge = max(1, len(path.route) // 2 - 1)
        blip = mesh.planner.detour(path.route, src, dst, diverge=diverge, via=None, tag=f"blip{path.index}", extra_hops=0)
        return cls(path.route, changed, blip)

    def hop_count(self, changed: np.ndarray) -> np.ndarray:
        if self.changed is None:
            return np.full(len(changed), len(self.base))
        return np.where(changed, len(self.changed), len(self.base))


def _route(path: Path, routes: PathRoutes, changed: bool, blip: bool, variant: int) -> tuple[Router, ...]:
    if changed and routes.changed is not None:
        return routes.changed
    if blip:
        return routes.blip
    if not path.ecmp:
        return routes.base
    route = list(routes.base)
    for position, alternatives in path.ecmp.items():
        route[position] = alternatives[variant % len(alternatives)]
    return tuple(route)


@dataclass(frozen=True)
class _Draws:
    """The random numbers of a batch of traces, drawn at once (rows: traces, columns: TTLs)."""

    blip: np.ndarray
    variant: np.ndarray
    dropped: np.ndarray        # uniform draws: a router's answer is lost when below its miss rate
    extra_ms: np.ndarray       # ICMP generation time, sometimes a slow control plane
    host_ms: np.ndarray
    queue_share: np.ndarray
    echo: np.ndarray

    @classmethod
    def draw(cls, n: int, blip_rate: float, rng: np.random.Generator) -> _Draws:
        shape = (n, MAX_TTL)
        slow = np.where(rng.random(shape) < _SLOW_PATH_RATE, rng.uniform(1.0, 25.0, shape), 0.0)
        return cls(rng.random(n) < blip_rate, rng.integers(0, 3, n), rng.random(shape),
                   rng.exponential(0.25, shape) + slow, rng.exponential(0.04, n), rng.uniform(0, 3, shape),
                   rng.uniform(0.3, 1.0, n))


def _mtu_report(path: Path, route: tuple[Router, ...], tool: str) -> int | None:
    """TTL at which a healthy tracepath hears ``pmtu 1500`` (the link into that hop is narrower), if any."""
    if tool != "tracepath" or path.src.mtu != 9000:
        return None
    if path.narrow_hop is not None and path.narrow_hop < len(route):
        return path.narrow_hop + 1
    if path.dst.mtu == 1500:
        return len(route)
    return None


def _limits(path: Path, route: tuple[Router, ...], i: int, mods: Modifiers, tool: str) -> tuple[int, int | None, int | None]:
    """(last TTL that answers, first TTL of silence to MAX_TTL or None, TTL of a ``pmtu 1500`` report or None)."""
    report = _mtu_report(path, route, tool)
    if tool == "tracepath" and mods.mtu_blackhole[i]:
        narrow = min(mods.param("mtu_blackhole", "narrow_ttl"), len(route))
        heard = narrow if mods.param("mtu_blackhole", "tracepath") == "pmtu" else None
        return narrow - 1, narrow, heard
    if mods.unreachable[i]:
        last = min(mods.param("unreachable", "last_ttl"), len(route) - 1)
        silence = None if mods.param("unreachable", "flag") else last + 1
        return last, silence, report if report is not None and report <= last else None
    return len(route), None, report


@dataclass(frozen=True)
class _Benign:
    """The benign catalogue's share of a batch of traces (:mod:`pathwatch.sim.benign`)."""

    catalogue: Catalogue
    limited: tuple[int, float, np.ndarray] | None   # (first rate-limited TTL, answer probability, in a burst)
    answered: np.ndarray                             # uniform draws against that probability (traces, TTLs)
    slow_noise: np.ndarray                           # exponential noise of slow-path answers, x their delay

    @classmethod
    def draw(cls, catalogue: Catalogue, path: Path, t: np.ndarray, rng: np.random.Generator) -> _Benign:
        shape = (len(t), MAX_TTL)
        return cls(catalogue, rate_limit_bursts(catalogue, path, t), rng.random(shape), rng.exponential(0.6, shape))

    def silent(self, i: int, ttl: int, ip: str, u: float) -> bool:
        if u < self.catalogue.answer_miss(ip):
            return True
        if self.limited is not None and self.limited[2][i] and ttl >= self.limited[0]:
            return bool(self.answered[i, ttl - 1] >= self.limited[1])
        return False

    def slow_ms(self, i: int, ttl: int, ip: str) -> float:
        base = self.catalogue.slow_path(ip)
        return base * (0.5 + float(self.slow_noise[i, ttl - 1])) if base else 0.0


def _one(path: Path, routes: PathRoutes, t: float, i: int, mods: Modifiers, draws: _Draws, tool: str,
         benign: _Benign | None = None) -> Trace:
    changed = bool(mods.route_changed[i])
    route = _route(path, routes, changed, bool(draws.blip[i]), int(draws.variant[i]))
    rtt_total = path.rtt_ms + (float(mods.rtt_delta_ms[i]) if changed else 0.0)
    shift_from = mods.param("latency_shift", "from_ttl") or MAX_TTL + 1
    shift = 0.0 if changed else float(mods.rtt_delta_ms[i])
    queue = float(mods.queue_weight[i] * mods.queue_ms[i])
    floor, back_floor = float(mods.floor_ms[i]), float(mods.return_floor_ms[i])
    last, silence, report = _limits(path, route, i, mods, tool)
    flag = mods.param("unreachable", "flag") if mods.unreachable[i] else None
    dropped, extra, share = draws.dropped[i].tolist(), draws.extra_ms[i].tolist(), draws.queue_share[i].tolist()
    hops = []
    for index, router in enumerate(route[:last]):
        ttl = index + 1
        pmtu_from = route[index - 1].ip if ttl == report and index > 0 else None
        is_host = index == len(route) - 1
        quiet = (dropped[index] < _DROP_RATE) if benign is None else benign.silent(i, ttl, router.ip, dropped[index])
        if not is_host and (router.silent or quiet):
            hops.append(Hop(ttl, None, pmtu_from=pmtu_from))
            continue
        rtt = router.frac * rtt_total + (shift if ttl >= shift_from else 0.0)
        rtt += float(draws.host_ms[i]) if is_host else extra[index]
        if router.frac > 0.3:
            rtt += queue * share[index]
        if floor and router.frac >= mods.floor_after:
            rtt += floor
        if is_host:
            rtt += back_floor
        elif benign is not None:
            rtt += benign.slow_ms(i, ttl, router.ip)
        echo = round(max(0.01, rtt * float(draws.echo[i])), 3) if ttl == 1 else None
        hops.append(Hop(ttl, router.ip, router.hostname, round(max(0.01, rtt), 3), router.asn, router.owner,
                        flag if ttl == last else None, pmtu_from, echo))
    if silence is not None:
        hops.extend(Hop(ttl, None, pmtu_from=route[ttl - 2].ip if ttl == report else None)
                    for ttl in range(silence, MAX_TTL + 1))
    reached = last == len(route)
    pmtu = 1500 if any(h.pmtu_from for h in hops) else path.src.mtu
    back = len(route) + path.back_extra if reached else None
    return Trace(t, tuple(hops), reached, path.src.mtu, pmtu, back)


def measure_trace(path: Path, routes: PathRoutes, t: np.ndarray, mods: Modifiers, rng: np.random.Generator,
                  tool: str, *, catalogue: Catalogue | None = None,
                  benign_rng: np.random.Generator | None = None) -> list[Trace]:
    """One trace per start time in ``t`` as ``tool`` (traceroute or tracepath) sees it; with a benign
    ``catalogue`` (and its own ``benign_rng``) routers answer at their own rates, rate-limit in bursts
    and answer slowly where the catalogue says so."""
    draws = _Draws.draw(len(t), path.blip_rate, rng)
    benign = None
    if catalogue is not None:
        benign = _Benign.draw(catalogue, path, t, benign_rng if benign_rng is not None else np.random.default_rng(0))
    return [_one(path, routes, float(t[i]), i, mods, draws, tool, benign) for i in range(len(t))]
