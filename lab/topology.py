"""The lab's network as data: namespaces, links, addresses and routes, and the commands that build it.

Two sites joined by two paths. The primary path's first link is an aggregate of ``members``
parallel links (equal-cost multipath with the kernel's L4 hash, so each flow stays on one
member, as a LAG hashes flows); the backup path is one router longer and slower::

    a1 ─┐                                 ┌─ b1
        ├─ ra ═══ (k members) ═══ rp ─────┤
    a2 ─┘    \\                        rb ─┴─ b2
              └── rq ──── rr ─────────┘

Every node is a network namespace ``<prefix><node>``; each link is a veth pair with its own
``10.<net>.<link>.0/24`` (the lower address on the first node). All links carry 9000-byte
frames (jumbo-frame hosts). The long-haul links (rp–rb on the primary path, rq–rr on the
backup) delay each packet ``primary_delay_ms`` / ``backup_delay_ms`` one way: they are
delay lines (``delayline.py``: two TUN devices and a process between them), as this kind of
machine's kernel has no netem; their ends are point-to-point addresses on the same subnet
numbering. Addresses exist only inside the namespaces the lab makes.

The functions here only build command lines (lists of arguments); ``lab/apply.py`` runs them.

>>> lab = Topology()
>>> [link.name for link in lab.links][3:7]
['b2-rb', 'ra-rp0', 'ra-rp1', 'rp-rb']
>>> lab.address("b1"), lab.address("a1")   # hosts hold .1 of their link, routers .2
('10.78.3.1', '10.78.1.1')
>>> lab.nexthops("ra", "b")   # site B from ra: over each aggregate member
['10.78.5.2', '10.78.6.2']
"""

from __future__ import annotations

from dataclasses import dataclass, field

SITE_A_HOSTS = ("a1", "a2")
SITE_B_HOSTS = ("b1", "b2")
ROUTERS = ("ra", "rp", "rb", "rq", "rr")


@dataclass(frozen=True)
class Link:
    """A veth pair between ``a`` and ``b`` on subnet ``10.<net>.<index>.0/24`` (a is .1, b is .2)."""

    a: str
    b: str
    index: int
    delay_ms: float = 0.0
    mtu: int = 9000
    member: int | None = None  # its number in the aggregate, for its members

    @property
    def name(self) -> str:
        """The interface name on ``a``'s side (``a-b``, with the member number for members)."""
        return f"{self.a}-{self.b}{'' if self.member is None else self.member}"

    @property
    def peer_name(self) -> str:
        return f"{self.b}-{self.a}{'' if self.member is None else self.member}"


@dataclass(frozen=True)
class Topology:
    """The lab: ``prefix`` of its namespaces, the first octets of its addresses, aggregate size, delays."""

    prefix: str = "pwl-"
    net: int = 78
    members: int = 2
    primary_delay_ms: float = 5.0
    backup_delay_ms: float = 12.0
    links: tuple[Link, ...] = field(init=False)

    def __post_init__(self) -> None:
        if not 2 <= self.members <= 4:
            raise ValueError(f"members: the aggregate has 2 to 4 members, not {self.members}")
        links = [Link("a1", "ra", 1), Link("a2", "ra", 2), Link("b1", "rb", 3), Link("b2", "rb", 4)]
        index = 5
        for member in range(self.members):
            links.append(Link("ra", "rp", index, member=member))
            index += 1
        links.append(Link("rp", "rb", index, delay_ms=self.primary_delay_ms))
        links.append(Link("ra", "rq", index + 1))
        links.append(Link("rq", "rr", index + 2, delay_ms=self.backup_delay_ms))
        links.append(Link("rr", "rb", index + 3))
        object.__setattr__(self, "links", tuple(links))

    # --- what is where ---------------------------------------------------------------------------
    @property
    def nodes(self) -> tuple[str, ...]:
        return SITE_A_HOSTS + SITE_B_HOSTS + ROUTERS

    @property
    def hosts(self) -> tuple[str, ...]:
        return SITE_A_HOSTS + SITE_B_HOSTS

    def namespace(self, node: str) -> str:
        return f"{self.prefix}{node}"

    def subnet(self, link: Link) -> str:
        return f"10.{self.net}.{link.index}.0/24"

    def end_address(self, link: Link, node: str) -> str:
        return f"10.{self.net}.{link.index}.{1 if node == link.a else 2}"

    def link(self, a: str, b: str, member: int | None = None) -> Link:
        for link in self.links:
            if {link.a, link.b} == {a, b} and link.member == member:
                return link
        raise KeyError(f"no link {a}-{b}" + ("" if member is None else f" member {member}"))

    def members_links(self) -> list[Link]:
        return [link for link in self.links if link.member is not None]

    def address(self, host: str) -> str:
        """A measurement host's address (its end of the link to its router)."""
        return self.end_address(next(link for link in self.links if host in (link.a, link.b)), host)

    def site_subnets(self, site: str) -> list[str]:
        hosts = SITE_A_HOSTS if site == "a" else SITE_B_HOSTS
        return [self.subnet(next(link for link in self.links if host in (link.a, link.b))) for host in hosts]

    def nexthops(self, node: str, site: str, path: str = "primary") -> list[str]:
        """The next hops ``node`` uses towards ``site``'s hosts on ``path`` (several over the aggregate)."""
        toward_b = site == "b"
        hops = {("ra", True, "primary"): [self.end_address(link, "rp") for link in self.members_links()],
                ("ra", True, "backup"): [self.end_address(self.link("ra", "rq"), "rq")],
                ("rb", False, "primary"): [self.end_address(self.link("rp", "rb"), "rp")],
                ("rb", False, "backup"): [self.end_address(self.link("rr", "rb"), "rr")],
                ("rp", True, "primary"): [self.end_address(self.link("rp", "rb"), "rb")],
                ("rp", False, "primary"): [self.end_address(link, "ra") for link in self.members_links()],
                ("rq", True, "backup"): [self.end_address(self.link("rq", "rr"), "rr")],
                ("rq", False, "backup"): [self.end_address(self.link("ra", "rq"), "ra")],
                ("rr", True, "backup"): [self.end_address(self.link("rr", "rb"), "rb")],
                ("rr", False, "backup"): [self.end_address(self.link("rq", "rr"), "rq")]}  # fmt: skip
        return hops[(node, toward_b, path)]

    # --- commands --------------------------------------------------------------------------------
    def exec(self, node: str, *argv: str) -> list[str]:
        return ["ip", "netns", "exec", self.namespace(node), *argv]

    def route_commands(self, node: str, site: str, path: str) -> list[list[str]]:
        """Routes from ``node`` to ``site``'s subnets over ``path`` (multipath over several hops)."""
        hops = self.nexthops(node, site, path)
        via = ["via", hops[0]] if len(hops) == 1 else [part for hop in hops for part in ("nexthop", "via", hop)]
        return [self.exec(node, "ip", "route", "replace", subnet, *via) for subnet in self.site_subnets(site)]

    def delay_links(self) -> list[Link]:
        return [link for link in self.links if link.delay_ms]

    def build_commands(self) -> list[list[str]]:
        """The namespaces, their settings and the veth links, from nothing (delay lines come next)."""
        commands: list[list[str]] = []
        for node in self.nodes:
            commands.append(["ip", "netns", "add", self.namespace(node)])
            commands.append(self.exec(node, "ip", "link", "set", "lo", "up"))
            commands.append(self.exec(node, "sysctl", "-qw", "net.ipv4.icmp_ratelimit=0",
                                      "net.ipv4.icmp_msgs_per_sec=100000", "net.ipv4.icmp_msgs_burst=100000"))  # fmt: skip
        for router in ROUTERS:
            commands.append(self.exec(router, "sysctl", "-qw", "net.ipv4.ip_forward=1",
                                      "net.ipv4.fib_multipath_hash_policy=1"))  # fmt: skip
        for link in self.links:
            if link.delay_ms:
                continue
            commands.append(["ip", "link", "add", link.name, "netns", self.namespace(link.a), "mtu", str(link.mtu),
                             "type", "veth", "peer", "name", link.peer_name, "netns", self.namespace(link.b),
                             "mtu", str(link.mtu)])  # fmt: skip
            for node, name in ((link.a, link.name), (link.b, link.peer_name)):
                commands.append(self.exec(node, "ip", "addr", "add", f"{self.end_address(link, node)}/24", "dev", name))
                commands.append(self.exec(node, "ip", "link", "set", name, "up"))
        return commands

    def delay_line_argv(self, link: Link, python: str) -> list[str]:
        """The command of the process that is ``link`` (``python``: the interpreter to run it with)."""
        ends = [f"{self.namespace(node)}:{name}:{self.end_address(link, node)}"
                for node, name in ((link.a, link.name), (link.b, link.peer_name))]
        return [python, "-m", "pathwatch.lab.delayline", "--a", ends[0], "--b", ends[1],
                "--delay-ms", f"{link.delay_ms:g}", "--mtu", str(link.mtu)]  # fmt: skip

    def routing_commands(self) -> list[list[str]]:
        """Default routes of the hosts, the routers' routes between the sites (primary path)."""
        commands = []
        for host in SITE_A_HOSTS:
            commands.append(self.exec(host, "ip", "route", "add", "default", "via",
                                      self.end_address(self.link(host, "ra"), "ra")))  # fmt: skip
        for host in SITE_B_HOSTS:
            commands.append(self.exec(host, "ip", "route", "add", "default", "via",
                                      self.end_address(self.link(host, "rb"), "rb")))  # fmt: skip
        for node, site, path in (("ra", "b", "primary"), ("rb", "a", "primary"), ("rp", "a", "primary"),
                                 ("rp", "b", "primary"), ("rq", "a", "backup"), ("rq", "b", "backup"),
                                 ("rr", "a", "backup"), ("rr", "b", "backup")):  # fmt: skip
            commands += self.route_commands(node, site, path)
        return commands

    def down_commands(self) -> list[list[str]]:
        """Deleting the namespaces deletes their veths, qdiscs, routes and nft tables with them."""
        return [["ip", "netns", "del", self.namespace(node)] for node in self.nodes]
