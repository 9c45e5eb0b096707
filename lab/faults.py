"""The faults the lab can inject, each a real change to the running namespaces (commands only).

Each fault is what the case study it stands for did to the network, not a change to the data:

========================  ====================================================================
``route_change``          ra and rb send site-to-site traffic over the backup path (other hops,
                          longer delay), both directions
``mtu_black_hole``        the rp–rb link shrinks to 1500 bytes between 9000-byte hosts and rp
                          drops the ICMP "fragmentation needed" it would send (nftables)
``lag_member_loss``       one aggregate member drops ``percent`` % of its packets both ways
                          (nftables): the flows the hash puts on it degrade, the others stay clean
``saturation``            a token bucket of ``rate_mbit`` on rp→rb (a busy link's queue; cross
                          traffic fills it, see the scenarios)
``cross_traffic``         a bulk transfer: iperf3 from ``from`` to ``to`` (``streams`` TCP
                          streams, port ``port``, not the measurement servers') until removed
``small_buffers``         a host's TCP buffers capped at ``window_kb`` (sysctl in its namespace):
                          throughput ≈ window / RTT
``firewall_loss``         ra drops ``percent`` % of site-to-site packets at random (nftables)
``host_dark``             a host's only link goes down: unreachable, its tests stop
``flaky_router``          benign: rp skips ``percent`` % of the "time exceeded" answers traces
                          rely on (ICMP rate limiting, as many routers do); nothing is wrong
========================  ====================================================================

>>> from pathwatch.lab.topology import Topology
>>> lab = Topology()
>>> FAULTS["lag_member_loss"].on(lab, {"member": 0, "percent": 2})[4]
['ip', 'netns', 'exec', 'pwl-ra', 'nft', 'add', 'rule', 'ip', 'pathwatch_lab_lag_member_loss', 'forward', 'oifname', 'ra-rp0', 'numgen', 'random', 'mod', '1000000', '<', '20000', 'drop']
>>> FAULTS["host_dark"].on(lab, {"host": "b2"})
[['ip', 'netns', 'exec', 'pwl-b2', 'ip', 'link', 'set', 'b2-rb', 'down']]
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from .topology import SITE_A_HOSTS, SITE_B_HOSTS, Topology

Commands = list[list[str]]
NFT_TABLE = "pathwatch_lab"


@dataclass(frozen=True)
class Fault:
    """One injectable fault: what it does, its parameters with defaults, and its commands."""

    name: str
    does: str
    defaults: dict[str, Any]
    on: Callable[[Topology, dict], Commands]
    off: Callable[[Topology, dict], Commands]


def _route_change(lab: Topology, path: str) -> Commands:
    return lab.route_commands("ra", "b", path) + lab.route_commands("rb", "a", path)


def _table(fault: str) -> str:
    return f"{NFT_TABLE}_{fault}"


def _nft_off(lab: Topology, node: str, fault: str) -> Commands:
    """Remove the fault's nftables table on ``node`` (adding it first makes this a no-op when absent)."""
    return [lab.exec(node, "nft", "add", "table", "ip", _table(fault)),
            lab.exec(node, "nft", "delete", "table", "ip", _table(fault))]


def _nft(lab: Topology, node: str, fault: str, hook: str, rule: str) -> Commands:
    """The fault's own nftables table on ``node``, anew, with one filter chain on ``hook`` holding ``rule``."""
    table = _table(fault)
    return _nft_off(lab, node, fault) + [
        lab.exec(node, "nft", "add", "table", "ip", table),
        lab.exec(node, "nft", "add", "chain", "ip", table, hook, f"{{ type filter hook {hook} priority 0 ; }}"),
        lab.exec(node, "nft", "add", "rule", "ip", table, hook, *rule.split())]


def _share(percent: float) -> str:
    """An nftables match true for ``percent`` % of packets, at random."""
    return f"numgen random mod 1000000 < {int(round(float(percent) * 10_000))}"


def _mtu(lab: Topology, mtu: int) -> Commands:
    link = lab.link("rp", "rb")
    return [lab.exec("rp", "ip", "link", "set", link.name, "mtu", str(mtu)),
            lab.exec("rb", "ip", "link", "set", link.peer_name, "mtu", str(mtu))]


def _member(lab: Topology, params: dict):
    members = lab.members_links()
    number = int(params["member"])
    if not 0 <= number < len(members):
        raise ValueError(f"member: the aggregate has members 0..{len(members) - 1}, not {number}")
    return members[number]


def _member_loss(lab: Topology, params: dict) -> Commands:
    link = _member(lab, params)
    return (_nft(lab, "ra", "lag_member_loss", "forward", f"oifname {link.name} {_share(params['percent'])} drop")
            + _nft(lab, "rp", "lag_member_loss", "forward", f"oifname {link.peer_name} {_share(params['percent'])} drop"))


def _member_clean(lab: Topology, params: dict) -> Commands:
    return _nft_off(lab, "ra", "lag_member_loss") + _nft_off(lab, "rp", "lag_member_loss")


def _bottleneck(lab: Topology, params: dict) -> Commands:
    """A token bucket on rp's side of the rp–rb link: its queue holds up to ``queue_ms``."""
    link = lab.link("rp", "rb")
    rate = f"{float(params['rate_mbit']):g}mbit"
    return [lab.exec("rp", "tc", "qdisc", "replace", "dev", link.name, "root", "tbf",
                     "rate", rate, "burst", "64kb", "latency", f"{float(params['queue_ms']):g}ms")]  # fmt: skip


def _bottleneck_off(lab: Topology, params: dict) -> Commands:
    return [lab.exec("rp", "tc", "qdisc", "del", "dev", lab.link("rp", "rb").name, "root")]


def _buffers(lab: Topology, host: str, window_kb: int | None) -> Commands:
    if window_kb is None:  # the kernel's defaults
        values = ("4096 131072 6291456", "4096 16384 4194304", "212992", "212992")
    else:
        size = int(window_kb) * 1024
        values = (f"4096 {size} {size}", f"4096 {size} {size}", str(size), str(size))
    return [lab.exec(host, "sysctl", "-qw", f"net.ipv4.tcp_rmem={values[0]}", f"net.ipv4.tcp_wmem={values[1]}",
                     f"net.core.rmem_max={values[2]}", f"net.core.wmem_max={values[3]}")]  # fmt: skip


def _bulk(lab: Topology, params: dict) -> Commands:
    """A one-off iperf3 server on ``to`` and, detached (its output nowhere: the lab does not wait
    for it), a client on ``from`` sending ``streams`` TCP streams until it is stopped."""
    for end in ("from", "to"):
        if params[end] not in lab.hosts:
            raise ValueError(f"{end}: one of {', '.join(lab.hosts)}, not {params[end]!r}")
    port, address = str(int(params["port"])), lab.address(params["to"])
    client = (f"setsid -f iperf3 -c {address} -p {port} -P {int(params['streams'])} -t 86400 "
              ">/dev/null 2>&1 </dev/null")
    return _bulk_stop(lab, params) + [
        lab.exec(params["to"], "iperf3", "-s", "-1", "-D", "-p", port),
        lab.exec(params["from"], "sh", "-c", f"sleep 0.2; {client}")]


def _bulk_stop(lab: Topology, params: dict) -> Commands:
    port = str(int(params["port"]))
    return [lab.exec(params["from"], "sh", "-c", f"pkill -f '[i]perf3 -c .* -p {port} ' || true"),
            lab.exec(params["to"], "sh", "-c", f"pkill -f '[i]perf3 -s -1 -D -p {port}$' || true")]


def _host_link(lab: Topology, host: str):
    router = "ra" if host in SITE_A_HOSTS else "rb"
    if host not in SITE_A_HOSTS + SITE_B_HOSTS:
        raise ValueError(f"host: one of {', '.join(lab.hosts)}, not {host!r}")
    link = lab.link(host, router)
    return link, router


def _dark(lab: Topology, params: dict) -> Commands:
    link, _ = _host_link(lab, params["host"])
    return [lab.exec(params["host"], "ip", "link", "set", link.name, "down")]


def _light(lab: Topology, params: dict) -> Commands:
    link, router = _host_link(lab, params["host"])
    return [lab.exec(params["host"], "ip", "link", "set", link.name, "up"),
            lab.exec(params["host"], "ip", "route", "replace", "default", "via", lab.end_address(link, router)),
            # the router gave up resolving the host while it was dark: ask afresh, as a returning host's ARP would
            lab.exec(router, "ip", "neigh", "flush", "dev", link.peer_name)]


def _firewall(lab: Topology, params: dict) -> Commands:
    sites = ", ".join(lab.site_subnets("b"))
    return _nft(lab, "ra", "firewall_loss", "forward", f"ip daddr {{ {sites} }} {_share(params['percent'])} drop")


FAULTS: dict[str, Fault] = {fault.name: fault for fault in (
    Fault("route_change", "site-to-site traffic takes the backup path (other hops, +delay)", {},
          lambda lab, p: _route_change(lab, "backup"), lambda lab, p: _route_change(lab, "primary")),
    Fault("mtu_black_hole", "rp–rb at 1500 bytes between 9000-byte hosts, ICMP frag-needed dropped", {},
          lambda lab, p: _mtu(lab, 1500) + _nft(lab, "rp", "mtu_black_hole", "output",
                                                "icmp type destination-unreachable icmp code frag-needed drop"),
          lambda lab, p: _mtu(lab, 9000) + _nft_off(lab, "rp", "mtu_black_hole")),
    Fault("lag_member_loss", "one aggregate member drops a share of its packets", {"member": 0, "percent": 2.0},
          _member_loss, _member_clean),
    Fault("saturation", "a token-bucket bottleneck on rp→rb", {"rate_mbit": 200, "queue_ms": 40},
          _bottleneck, _bottleneck_off),
    Fault("cross_traffic", "a bulk transfer between two hosts (iperf3, TCP)",
          {"from": "a2", "to": "b2", "streams": 4, "port": 5301}, _bulk, _bulk_stop),
    Fault("small_buffers", "a host's TCP buffers capped (window-limited)", {"host": "a1", "window_kb": 64},
          lambda lab, p: _buffers(lab, p["host"], p["window_kb"]), lambda lab, p: _buffers(lab, p["host"], None)),
    Fault("firewall_loss", "ra drops a small share of site-to-site packets", {"percent": 0.5},
          _firewall, lambda lab, p: _nft_off(lab, "ra", "firewall_loss")),
    Fault("host_dark", "a host's link goes down (unreachable)", {"host": "b2"}, _dark, _light),
    Fault("flaky_router", "benign: rp skips a share of its time-exceeded answers", {"percent": 5.0},
          lambda lab, p: _nft(lab, "rp", "flaky_router", "output", f"icmp type time-exceeded {_share(p['percent'])} drop"),
          lambda lab, p: _nft_off(lab, "rp", "flaky_router")),
)}  # fmt: skip


def parameters(fault: Fault, given: dict[str, str]) -> dict[str, Any]:
    """The fault's parameters: its defaults overridden by ``given`` (KEY=VALUE from the command line)."""
    unknown = set(given) - set(fault.defaults)
    if unknown:
        known = ", ".join(fault.defaults) or "none"
        raise ValueError(f"{fault.name}: unknown parameter {', '.join(sorted(unknown))} (it takes {known})")
    return {**fault.defaults, **given}
