"""The simulated mesh: hosts at R&E sites, and every directed path between them with its
healthy behaviour (base RTT, capacity, noise, daily swing, ECMP, silent routers).

>>> import numpy as np
>>> mesh = build_mesh(7, np.random.default_rng(1))
>>> len(mesh.hosts), len(mesh.paths)
(7, 42)
>>> all(1.0 <= p.rtt_ms <= 150.0 and 5 <= len(p.route) <= 20 for p in mesh.paths)
True
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace

import numpy as np

from .routes import RoutePlanner, Router, hash_int
from .sites import NETWORKS, SITES, Site, distance_km

GBPS = 1e9
PROFILES = ("pscheduler", "raw", "mixed")
# What each collector profile publishes: throughput / trace formats; latency is always pscheduler.
THROUGHPUT_FORMAT = {"pscheduler": "pscheduler", "raw": "iperf3", "mixed": "pscheduler"}
TRACE_TOOLS = {"pscheduler": ("traceroute",), "raw": ("tracepath",), "mixed": ("traceroute", "tracepath")}
_FIBRE_KM_PER_MS_RTT = 100.0  # light in fibre: ~200 km/ms one way
_IPERF_VERSIONS = ("3.9", "3.12", "3.16", "3.17.1")
_KERNELS = ("5.14.0-427.el9.x86_64", "6.1.0-26-amd64", "5.15.0-122-generic", "6.8.0-45-generic")


@dataclass(frozen=True)
class Host:
    name: str
    site: Site
    address: str
    nic_bps: float
    uplink_bps: float
    mtu: int
    profile: str               # pscheduler | raw | mixed: what its collector publishes
    archiver: str              # run | archiver: the pscheduler result shape it archives
    iperf_version: str
    powstream_version: str
    trace_tool: str            # traceroute | paris-traceroute (pscheduler trace tool)
    tracepath_names: bool      # tracepath -b (name and address) rather than -n
    congestion: str
    clock_error_ms: float      # its share of owamp's max-clock-error when healthy
    kernel: str

    @property
    def tools(self) -> tuple[str, ...]:
        return TRACE_TOOLS[self.profile]


@dataclass(frozen=True)
class Diurnal:
    """A path's harmless daily swing: busy hours around ``peak_utc_h`` (Gaussian, ``width_h``)."""

    peak_utc_h: float
    width_h: float
    throughput_drop: float     # at the peak, as a fraction of the normal rate
    queue_weight: float        # share of packets that meet a small queue at the peak
    queue_ms: float


@dataclass(frozen=True)
class Path:
    index: int
    src: Host
    dst: Host
    route: tuple[Router, ...]
    ecmp: dict[int, tuple[Router, ...]]
    rtt_ms: float
    fwd_share: float           # one-way delay / RTT
    mtu: int                   # end-to-end path MTU
    narrow_hop: int | None     # index of the router behind a 1500-byte link (PMTUD works) on a 9000 path
    capacity_bps: float
    rate_bps: float            # typical single-stream iperf3 summary
    nic_limited: bool          # pinned at a host's line rate
    rate_cv: float
    retransmits_mean: float
    jitter_ms: float           # exponential scale of delay above the minimum
    tail_weight: float
    tail_ms: float
    loss_base: float           # per-packet loss when healthy
    diurnal: Diurnal
    blip_rate: float           # share of traces that take a one-off other route
    asymm: dict[int, int] = field(default_factory=dict)  # tracepath: hop index → return hops
    back_extra: int = 0
    clock_offset_ms: float = 0.0

    @property
    def key(self) -> tuple[str, str]:
        return self.src.name, self.dst.name

    @property
    def mss(self) -> int:
        return self.mtu - 52


@dataclass(frozen=True)
class SimulatedMesh:
    hosts: tuple[Host, ...]
    paths: tuple[Path, ...]
    planner: RoutePlanner

    def host(self, name: str) -> Host:
        return next(h for h in self.hosts if h.name == name)

    def path(self, src: str, dst: str) -> Path:
        return next(p for p in self.paths if p.src.name == src and p.dst.name == dst)


def _choose_sites(count: int, rng: np.random.Generator) -> list[tuple[Site, int]]:
    """(site, number at the site) for each host: distinct sites first, then second hosts."""
    codes = list(SITES)
    order = list(rng.permutation(len(codes)))
    chosen = []
    for index in range(count):
        site = SITES[codes[order[index % len(codes)]]]
        chosen.append((site, index // len(codes) + 1))
    return chosen


def _hosts(count: int, rng: np.random.Generator) -> list[Host]:
    profiles = [PROFILES[i % 3] for i in range(count)]
    profiles = [profiles[i] for i in rng.permutation(count)]
    hosts = []
    for (site, number), profile in zip(_choose_sites(count, rng), profiles):
        p0, p1 = NETWORKS[site.campus].prefix
        nic = float(rng.choice([1, 10, 40, 100], p=[0.1, 0.55, 0.15, 0.2])) * GBPS
        hosts.append(Host(
            name=f"ps{number}.{site.code}.{NETWORKS[site.campus].domain}",
            site=site,
            address=f"{p0}.{p1}.{200 + number}.{10 + hash_int(site.code) % 200}",
            nic_bps=nic,
            uplink_bps=float(rng.choice([10, 100], p=[0.3, 0.7])) * GBPS,
            mtu=9000 if rng.random() < 0.65 else 1500,
            profile=profile,
            archiver="archiver" if rng.random() < 0.5 else "run",
            iperf_version=str(rng.choice(_IPERF_VERSIONS)),
            powstream_version=str(rng.choice(["4.4.6", "5.0.1", "5.1.2"])),
            trace_tool=str(rng.choice(["traceroute", "paris-traceroute"])),
            tracepath_names=bool(rng.random() < 0.4),
            congestion=str(rng.choice(["cubic", "cubic", "cubic", "htcp", "bbr"])),
            clock_error_ms=float(rng.uniform(0.1, 1.2)),
            kernel=str(rng.choice(_KERNELS)),
        ))
    return _ensure_jumbo_tracepath(hosts)


def _ensure_jumbo_tracepath(hosts: list[Host]) -> list[Host]:
    """At least two tracepath-running hosts and one more host with 9000-byte MTU (MTU black holes need them)."""
    runners = [i for i, h in enumerate(hosts) if "tracepath" in h.tools]
    others = [i for i, h in enumerate(hosts) if "tracepath" not in h.tools]
    for index in runners[:2] + others[:1]:
        hosts[index] = replace(hosts[index], mtu=9000)
    return hosts


def _rtt_ms(route: tuple[Router, ...], src: Host, rng: np.random.Generator) -> float:
    travelled, last = 0.0, src.site
    for router in route:
        travelled += distance_km(last, router.place)
        last = router.place
    slack = rng.uniform(1.05, 1.25)
    return float(np.clip(travelled * slack / _FIBRE_KM_PER_MS_RTT + rng.uniform(0.6, 1.4), 1.0, 150.0))


def _throughput(src: Host, dst: Host, rtt_ms: float, rng: np.random.Generator) -> tuple[float, float, bool, float]:
    """(capacity, typical single-stream rate, pinned at a NIC's line rate, run-to-run cv)."""
    capacity = min(src.nic_bps, dst.nic_bps, src.uplink_bps, dst.uplink_bps)
    if capacity <= 1 * GBPS:
        return capacity, 0.941 * capacity * rng.uniform(0.995, 1.0), True, float(rng.uniform(0.002, 0.006))
    stream_cap = rng.uniform(18, 35) * GBPS  # one iperf3 stream is CPU-bound on fast hosts
    efficiency = rng.uniform(0.72, 0.95) - 0.25 * rtt_ms / 150.0
    return capacity, float(min(stream_cap, capacity * efficiency)), False, float(rng.uniform(0.05, 0.15))


def _path(index: int, src: Host, dst: Host, planner: RoutePlanner, rng: np.random.Generator) -> Path:
    route = planner.route(src.site, dst.site, dst.address, dst.name)
    rtt = _rtt_ms(route, src, rng)
    capacity, rate, pinned, cv = _throughput(src, dst, rtt, rng)
    middle = [i for i in range(2, len(route) - 2) if route[i].network not in (None, src.site.campus)]
    ecmp = {}
    if middle and rng.random() < 0.3:
        spots = sorted(rng.choice(middle, size=min(len(middle), int(rng.integers(1, 3))), replace=False).tolist())
        ecmp = planner.ecmp_variants(route, spots, int(rng.integers(2, 4)))
    mtu = min(src.mtu, dst.mtu)
    narrow = None
    if mtu == 9000 and middle and rng.random() < 0.12:
        narrow, mtu = int(rng.choice(middle)), 1500
    local_peak = rng.uniform(13.0, 17.0)
    diurnal = Diurnal(
        peak_utc_h=float((local_peak - src.site.utc_offset_h) % 24),
        width_h=float(rng.uniform(2.0, 3.5)),
        throughput_drop=0.0 if pinned else float(rng.uniform(0.02, 0.12)),
        queue_weight=float(rng.uniform(0.0, 0.15)),
        queue_ms=float(rng.uniform(0.1, 0.8)),
    )
    asymm = {i: i + 1 + int(rng.choice([-1, 1, 2])) for i in range(1, len(route) - 1) if rng.random() < 0.08}
    return Path(
        index=index, src=src, dst=dst, route=route, ecmp=ecmp, rtt_ms=round(rtt, 3),
        fwd_share=float(rng.uniform(0.46, 0.54)), mtu=mtu, narrow_hop=narrow,
        capacity_bps=capacity, rate_bps=rate, nic_limited=pinned, rate_cv=cv,
        retransmits_mean=0.0 if pinned else float(rng.gamma(1.2, 12.0) * math.sqrt(rate / (10 * GBPS))),
        jitter_ms=float(rng.uniform(0.015, 0.12) * (1 + rtt / 80)),
        tail_weight=float(rng.uniform(0.001, 0.006)), tail_ms=float(rng.uniform(0.4, 2.5)),
        loss_base=float(10 ** rng.uniform(-5.6, -4.3)),
        diurnal=diurnal, blip_rate=float(rng.uniform(0.0, 0.004)),
        asymm=asymm, back_extra=int(rng.choice([0, 0, 0, 1, -1, 2])),
        clock_offset_ms=float(rng.normal(0.0, 0.04)),
    )


def build_mesh(hosts: int, rng: np.random.Generator) -> SimulatedMesh:
    """Hosts at distinct sites (while they last) and the full mesh of directed paths."""
    host_list = _hosts(hosts, rng)
    planner = RoutePlanner()
    paths = []
    for src in host_list:
        for dst in host_list:
            if src is not dst:
                paths.append(_path(len(paths), src, dst, planner, rng))
    return SimulatedMesh(tuple(host_list), tuple(paths), planner)
