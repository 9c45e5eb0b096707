"""Router-level routes between simulated hosts: campus, regional, backbone PoPs, and detours.

A route is a tuple of :class:`Router` from the first hop to the destination host. ``frac`` is
how far along the path's round-trip time a router sits (0 at the source, 1 at the
destination), from the fibre distance travelled to reach it.

>>> from pathwatch.sim.sites import SITES
>>> plan = RoutePlanner()
>>> route = plan.route(SITES["umich"], SITES["cern"], "188.184.0.10", "ps.cern.example")
>>> route[-1].ip, 5 <= len(route) <= 20, route[-1].frac
('188.184.0.10', True, 1.0)
>>> [r.asn for r in route if r.asn][-3:]
[559, 513, 513]
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from .sites import NETWORKS, POPS, SITES, Place, Site, continent, distance_km

MIN_HOPS, MAX_HOPS = 5, 20
_SILENT_PERCENT = 6          # routers that never answer traceroute probes
# Where the US backbones hand over to GEANT, and where ESnet and Internet2 meet.
_TRANSATLANTIC = {"internet2": ("newy", "wash"), "esnet": ("newy", "bost")}
_EXCHANGE = ("chic", "wash", "sunn", "denv", "atla", "kans", "newy")
_INTERFACES = ("et-5-0-0", "ae-1", "xe-0-1-2", "et-3-1-0", "hundredgige0-0-0-1", "ae-12", "et-7-0-0")


@dataclass(frozen=True)
class Router:
    ip: str
    hostname: str | None
    network: str | None       # key of NETWORKS; None for private campus space
    place: Place
    frac: float = 0.0
    silent: bool = False      # never answers TTL-exceeded: a `*` in every trace
    asn: int | None = field(default=None, init=False)
    owner: str | None = field(default=None, init=False)

    def __post_init__(self) -> None:
        if self.network:
            object.__setattr__(self, "asn", NETWORKS[self.network].asn)
            object.__setattr__(self, "owner", NETWORKS[self.network].owner)


def hash_int(text: str) -> int:
    """A small stable hash (Python's ``hash`` of a str changes per process).

    >>> hash_int("abc")
    440920331
    """
    value = 2166136261
    for char in text.encode():
        value = ((value ^ char) * 16777619) & 0xFFFFFFFF
    return value


def _site_place(site: Site) -> Place:
    return Place(site.code, site.lat, site.lon)


def _along(point: Place, a: Place, b: Place) -> tuple[float, float]:
    """(position of ``point`` along a→b from 0 to 1, its distance off the line in km)."""
    dx, dy = b.lon - a.lon, b.lat - a.lat
    t = ((point.lon - a.lon) * dx + (point.lat - a.lat) * dy) / (dx * dx + dy * dy or 1e-9)
    return t, distance_km(point, Place("", a.lat + t * dy, a.lon + t * dx))


def _nearest(pops, where) -> Place:
    return min(pops, key=lambda pop: distance_km(pop, where))


def pops_between(backbone: str, a, b, limit: int) -> list[Place]:
    """The backbone's PoPs from the one nearest ``a`` to the one nearest ``b``, along the line.

    >>> [p.code for p in pops_between("internet2", SITES["uw"], SITES["umich"], 5)]
    ['seat', 'kans', 'chic', 'clev']
    """
    pops = POPS[backbone]
    first, last = _nearest(pops, a), _nearest(pops, b)
    if first == last:
        return [first]
    span = distance_km(first, last)
    middle = sorted((t, pop) for pop in pops if pop not in (first, last)
                    for t, off in [_along(pop, first, last)] if 0.05 < t < 0.95 and off < 0.15 * span)
    keep = [pop for _, pop in middle]
    while len(keep) > limit:
        keep.pop(len(keep) // 2)
    return [first, *keep, last]


class RoutePlanner:
    """Builds routes with stable router addresses: the same interface always gets the same IP."""

    def __init__(self) -> None:
        self._addresses: dict[tuple, str] = {}
        self._counters: dict[str, int] = {}

    def address(self, network: str, key: tuple) -> str:
        """An interface address in ``network``'s prefix, the same for the same key."""
        full = (network, *key)
        if full not in self._addresses:
            count = self._counters.get(network, 0) + 1
            self._counters[network] = count
            p0, p1 = NETWORKS[network].prefix
            self._addresses[full] = f"{p0}.{p1}.{(count * 37) // 250 % 250 + 1}.{(count * 37) % 250 + 1}"
        return self._addresses[full]

    def router(self, network: str, place: Place, role: str, key: tuple, name_index: int) -> Router:
        ip = self.address(network, key)
        info = NETWORKS[network]
        named = hash_int(ip) % 100 < info.named * 100
        hostname = f"{_INTERFACES[name_index % len(_INTERFACES)]}.{role}.{place.code}.{info.domain}" if named else None
        return Router(ip, hostname, network, place, silent=hash_int("silent" + ip) % 100 < _SILENT_PERCENT)

    def campus(self, site: Site, inbound: bool) -> list[Router]:
        """Campus routers from a host to its border (reverse them for the inbound side)."""
        place = _site_place(site)
        count = 1 + hash_int(site.code) % 3
        routers = []
        for index in range(count):
            if site.private_campus and index < count - 1:
                block = 10 + list(SITES).index(site.code)
                ip = f"10.{block}.{index + (8 if inbound else 0)}.1"
                routers.append(Router(ip, None, None, place))
            else:
                routers.append(self.router(site.campus, place, "campus", ("campus", index, inbound), index))
        if not inbound:  # the first hop (the host's gateway) always answers
            routers[0] = replace(routers[0], silent=False)
        return routers

    def regional(self, site: Site, inbound: bool) -> list[Router]:
        if site.regional is None:
            return []
        count = 1 + hash_int(site.regional + site.code) % 2
        return [self.router(site.regional, _site_place(site), "gw", (site.code, index, inbound), index + 3)
                for index in range(count)]

    def _backbone(self, network: str, pops: list[Place], via: str) -> list[Router]:
        routers, previous = [], via
        for pop in pops:
            routers.append(self.router(network, pop, "rtr", (pop.code, previous), len(routers)))
            previous = pop.code
        return routers

    def backbone_chain(self, src: Site, dst: Site, *, via: str | None = None, tag: str = "") -> list[Router]:
        """The backbone routers between the two sites' regions.

        ``via`` forces one network for the whole long haul (a detour through transit); ``tag``
        makes the routers distinct interfaces (another link of the same backbone).
        """
        if via is not None:
            return self._backbone(via, pops_between(via, src, dst, 4), "in" + tag)
        if continent(src) != continent(dst):
            us_site, eu_site = (src, dst) if continent(src) == "us" else (dst, src)
            us = us_site.backbone
            handoff = _nearest([p for p in POPS[us] if p.code in _TRANSATLANTIC[us]], us_site)
            us_part = pops_between(us, us_site, handoff, 4)
            eu_part = pops_between("geant", POPS["geant"][0], eu_site, 2)
            if continent(src) == "us":
                return self._backbone(us, us_part, "in" + tag) + self._backbone("geant", eu_part, handoff.code + tag)
            return (self._backbone("geant", eu_part[::-1], "in" + tag)
                    + self._backbone(us, us_part[::-1], "geant" + tag))
        if src.backbone == dst.backbone:
            return self._backbone(src.backbone, pops_between(src.backbone, src, dst, 5), "in" + tag)
        exchange = min((p for p in POPS[src.backbone] if p.code in _EXCHANGE),
                       key=lambda p: distance_km(p, src) + distance_km(p, dst))
        return (self._backbone(src.backbone, pops_between(src.backbone, src, exchange, 3), "in" + tag)
                + self._backbone(dst.backbone, pops_between(dst.backbone, exchange, dst, 3), exchange.code + tag))

    def route(self, src: Site, dst: Site, dst_ip: str, dst_name: str) -> tuple[Router, ...]:
        """The route from a host at ``src`` to the host ``dst_ip`` at ``dst`` (the host last)."""
        egress = self.campus(src, False) + self.regional(src, False)
        ingress = self.regional(dst, True)[::-1] + self.campus(dst, True)[::-1]
        core = self.backbone_chain(src, dst) if src.code != dst.code else []
        while len(egress) + len(core) + len(ingress) + 1 > MAX_HOPS and len(core) > 2:
            core.pop(len(core) // 2)
        chain = egress + core + ingress
        while len(chain) + 1 < MIN_HOPS:  # same-campus pairs: the campus core in between
            chain.append(self.router(src.campus, _site_place(src), "core", ("core", len(chain)), len(chain)))
        host = Router(dst_ip, dst_name, dst.campus, _site_place(dst))
        return with_fracs([*chain, host], src)

    def detour(self, route: tuple[Router, ...], src: Site, dst: Site, *, diverge: int, via: str | None,
               tag: str, extra_hops: int) -> tuple[Router, ...]:
        """``route`` with the routers from index ``diverge`` to the destination's own networks replaced.

        Without ``via`` the new hops are other interfaces (other links) at the same PoPs, so
        the path changes at the IP level only; with ``via`` they are that network's PoPs from
        the divergence point on (a new AS in the path). ``extra_hops`` adds or drops routers.
        """
        tail = list(route[len(route) - _local_tail(route, dst):])
        diverge = max(1, min(diverge, len(route) - len(tail)))
        head = list(route[:diverge])
        if via is not None:
            middle = self._backbone(via, pops_between(via, head[-1].place, dst, 4), head[-1].place.code + tag)
        else:
            middle = [self.router(r.network or src.backbone, r.place, "rtr", ("detour", tag, r.ip), i)
                      for i, r in enumerate(route[diverge:len(route) - len(tail)])]
            if not middle:
                tail[0] = self.router(tail[0].network or dst.campus, tail[0].place, "gw", ("detour", tag, tail[0].ip), 1)
        if extra_hops < 0:
            middle = middle[: max(1, len(middle) + extra_hops)]
        for index in range(max(0, extra_hops)):
            last = middle[-1] if middle else head[-1]
            network = via or last.network or src.backbone
            middle.append(self.router(network, last.place, "rtr", ("detour", tag, index, last.place.code), index + 2))
        chain = (head + middle)[: MAX_HOPS - len(tail)]
        return with_fracs(chain + tail, src)

    def ecmp_variants(self, route: tuple[Router, ...], positions: list[int], count: int) -> dict[int, tuple[Router, ...]]:
        """Parallel routers at ``positions``: index 0 is the route's own, the others other interfaces."""
        variants = {}
        for position in positions:
            base = route[position]
            alternatives = [base]
            for index in range(1, count):
                ip = self.address(base.network or "internet2", ("ecmp", base.ip, index))
                name = base.hostname.replace(".rtr.", f".rtr{index + 1}.", 1) if base.hostname else None
                alternatives.append(replace(base, ip=ip, hostname=name, silent=False))
            variants[position] = tuple(alternatives)
        return variants


def with_fracs(routers: list[Router], src: Site) -> tuple[Router, ...]:
    """The routers with ``frac`` set from the fibre distance travelled to reach each."""
    last = _site_place(src)
    travelled, marks = 0.0, []
    for router in routers:
        travelled += distance_km(last, router.place)
        marks.append(travelled)
        last = router.place
    total = travelled or 1.0
    out = []
    for index, (router, mark) in enumerate(zip(routers, marks)):
        frac = 1.0 if index == len(routers) - 1 else min(0.99, mark / total + 0.003 * (index + 1))
        out.append(replace(router, frac=round(frac, 4)))
    return tuple(out)


def _local_tail(route: tuple[Router, ...], dst: Site) -> int:
    """How many routers at the end (the host included) belong to the destination's own networks."""
    local = {dst.campus, dst.regional, None}
    count = 0
    for router in reversed(route):
        if router.network not in local:
            break
        count += 1
    return max(1, count)
