"""The mesh file: which hosts measure which, with what tool and how often (in the spirit of psconfig).

A mesh file (YAML or JSON; ``collector/mesh.example.yaml`` is a complete one) has hosts, named
groups of them and tests::

    name: lab                                     # optional; default: the file name's stem
    hosts:
      - {name: ps-a, address: 192.0.2.10, site: SITE-A}
      - {name: ps-b, address: ps-b.example.edu}
    groups:
      all: {type: mesh, hosts: [ps-a, ps-b]}      # every ordered pair of different hosts
      out: {type: disjoint, a: [ps-a], b: [ps-b]} # a→b and b→a (only a→b with unidirectional: true)
    tests:
      - name: ping-all
        type: latency                             # throughput | trace | latency
        tool: ping                                # iperf3 | traceroute | tracepath | mtr | scamper | ping
        group: all
        interval: PT5M                            # ISO 8601 duration or seconds
        jitter: 30                                # each run starts up to this much later (like psconfig's slip)
        options: {count: 10}                      # per tool, see the *Options classes

A host's ``name`` is what records call it (the envelope's source/destination); ``address`` is
what the tools are pointed at. Expansion turns every test into (test, source, destination)
tasks; a collector runs the tasks whose source is its own host.

>>> data = {
...     "hosts": [{"name": "a", "address": "10.0.0.1"}, {"name": "b", "address": "10.0.0.2"},
...               {"name": "c", "address": "10.0.0.3"}],
...     "groups": {"all": {"type": "mesh", "hosts": ["a", "b", "c"]}},
...     "tests": [{"name": "rtt", "type": "latency", "tool": "ping", "group": "all", "interval": "PT1M"}]}
>>> mesh = mesh_from_data(data, default_name="lab")
>>> [task.key for task in tasks_for(mesh, "a")]
['rtt:a>b', 'rtt:a>c']
>>> mesh.tests[0].interval, mesh.tests[0].options.count
(60.0, 10)
>>> try:
...     mesh_from_data({**data, "tests": [{**data["tests"][0], "interval": "soon"}]})
... except MeshError as error:
...     print(error)
tests[0].interval: not a number of seconds or an ISO 8601 duration such as PT30S: 'soon'
"""

from __future__ import annotations

import ipaddress
import math
import socket
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Annotated, Any, Literal

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, ValidationError

TEST_TYPES = {"throughput": ("iperf3",), "trace": ("traceroute", "tracepath", "mtr", "scamper"), "latency": ("ping",)}
HOST_NAME = r"^[A-Za-z0-9][A-Za-z0-9._-]*$"


class MeshError(ValueError):
    """A mesh file that cannot be used, naming the file (when known), the field and the reason.

    >>> str(MeshError("tests[2].interval", "must be > 0", origin="mesh.yaml"))
    'mesh.yaml: tests[2].interval: must be > 0'
    """

    def __init__(self, field: str | None, reason: str, origin: str | None = None) -> None:
        self.field, self.reason, self.origin = field, reason, origin
        where = ": ".join(part for part in (origin, field) if part)
        super().__init__(f"{where}: {reason}" if where else reason)


def seconds(value: Any) -> float:
    """A duration in seconds from a number or an ISO 8601 duration (days at most: no months, years).

    >>> seconds("PT1H30M"), seconds(90), seconds("P1W"), seconds("2.5")
    (5400.0, 90.0, 604800.0, 2.5)
    """
    import isodate

    if isinstance(value, bool):
        raise ValueError(f"not a number of seconds or an ISO 8601 duration such as PT30S: {value!r}")
    if isinstance(value, (int, float)):
        result = float(value)
    elif isinstance(value, str):
        try:
            result = float(value)
        except ValueError:
            try:
                duration = isodate.parse_duration(value.strip())
            except (isodate.ISO8601Error, ValueError):
                raise ValueError(f"not a number of seconds or an ISO 8601 duration such as PT30S: {value!r}") from None
            if isinstance(duration, isodate.Duration):
                raise ValueError(f"{value!r} counts months or years, whose length varies: use days (P30D)") from None
            result = duration.total_seconds()
    else:
        raise ValueError(f"not a number of seconds or an ISO 8601 duration such as PT30S: {value!r}")
    if not math.isfinite(result) or result < 0:
        raise ValueError(f"must be a finite duration >= 0, got {value!r}")
    return result


Seconds = Annotated[float, BeforeValidator(seconds)]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


# --- tool options: one class per tool; ``timeout`` bounds the whole run (default per tool) ---


class ToolOptions(_Strict):
    timeout: Seconds | None = Field(None, gt=0, description="Seconds the run may take before it is interrupted.")
    ip_version: Literal[4, 6] | None = Field(None, description="Force IPv4 or IPv6.")
    executable: str | None = Field(None, min_length=1, description="The tool's path or name (default: found on PATH).")


class Iperf3Options(ToolOptions):
    duration: int = Field(10, ge=1, le=86_400, description="-t: whole seconds of traffic.")
    omit: int = Field(0, ge=0, le=600, description="-O: whole seconds of slow start left out.")
    port: int | None = Field(None, ge=1, le=65535, description="-p: the server's port (default 5201).")
    protocol: Literal["tcp", "udp"] = "tcp"
    streams: int = Field(1, ge=1, le=128, description="-P: parallel streams.")
    reverse: bool = Field(False, description="-R: the server sends.")
    bandwidth: str | None = Field(None, pattern=r"^\d+(\.\d+)?[KMGkmg]?$", description="-b: target rate (UDP), e.g. 100M.")
    connect_timeout: Seconds = Field(5, gt=0, description="--connect-timeout, seconds.")
    busy_retries: int = Field(2, ge=0, le=10, description="Retries (after 10-60 s) when the server is busy with another test.")


class PingOptions(ToolOptions):
    count: int = Field(10, ge=1, le=100_000, description="-c: packets.")
    interval: Seconds = Field(1.0, gt=0, description="-i: seconds between packets (below 0.2 needs root).")
    packet_size: int | None = Field(None, ge=0, le=65_507, description="-s: payload bytes.")
    deadline: Seconds | None = Field(None, gt=0, description="-w: seconds before ping stops (default count × interval + 5).")


class TracerouteOptions(ToolOptions):
    max_hops: int = Field(30, ge=1, le=255, description="-m")
    queries: int = Field(3, ge=1, le=10, description="-q: probes per hop.")
    wait: Seconds = Field(5, gt=0, description="-w: seconds to wait for a reply.")
    protocol: Literal["udp", "icmp", "tcp"] = Field("udp", description="udp, -I (icmp) or -T (tcp); icmp and tcp need root.")
    numeric: bool = Field(True, description="-n: addresses only, no reverse DNS.")


class TracepathOptions(ToolOptions):
    max_hops: int = Field(30, ge=1, le=255, description="-m")
    numeric: bool = Field(True, description="-n")


class MtrOptions(ToolOptions):
    count: int = Field(10, ge=1, le=1000, description="-c: rounds of probes.")
    interval: Seconds | None = Field(None, gt=0, description="-i: seconds between rounds (mtr's default 1; below 1 needs root).")
    gracetime: Seconds | None = Field(None, gt=0, description="-G: seconds to wait for late replies at the end (mtr's default 5).")
    max_hops: int = Field(30, ge=1, le=255, description="-m")
    numeric: bool = Field(True, description="-n")


class ScamperOptions(ToolOptions):
    method: Literal["udp-paris", "icmp-paris", "udp", "icmp", "tcp", "tcp-ack"] = Field("udp-paris", description="trace -P")
    max_hops: int = Field(30, ge=1, le=255, description="trace -m")
    wait: Seconds = Field(5, ge=1, description="trace -w: seconds to wait for a reply.")


OPTIONS: dict[str, type[ToolOptions]] = {
    "iperf3": Iperf3Options, "ping": PingOptions, "traceroute": TracerouteOptions,
    "tracepath": TracepathOptions, "mtr": MtrOptions, "scamper": ScamperOptions,
}  # fmt: skip


# --- the file as written ---


class Host(_Strict):
    name: str = Field(pattern=HOST_NAME, description="What records call the host.")
    address: str = Field(min_length=1, pattern=r"^\S+$", description="IP address or DNS name the tools are pointed at.")
    site: str | None = None


class _GroupSpec(_Strict):
    type: Literal["mesh", "disjoint"]
    hosts: list[str] | None = None
    a: list[str] | None = None
    b: list[str] | None = None
    unidirectional: bool = False


class _TestSpec(_Strict):
    name: str = Field(pattern=HOST_NAME)
    type: Literal["throughput", "trace", "latency"]
    tool: Literal["iperf3", "traceroute", "tracepath", "mtr", "scamper", "ping"]
    group: str
    interval: Seconds = Field(gt=0)
    jitter: Seconds = 0.0
    options: dict[str, Any] = Field(default_factory=dict)


class _MeshSpec(_Strict):
    name: str | None = Field(None, min_length=1)
    hosts: list[Host] = Field(min_length=1)
    groups: dict[str, _GroupSpec] = Field(min_length=1)
    tests: list[_TestSpec] = Field(min_length=1)


# --- the checked mesh ---


@dataclass(frozen=True)
class MeshTest:
    """One test: what runs (tool, options), how often, between the pairs of its group."""

    name: str
    type: str
    tool: str
    group: str
    interval: float
    jitter: float
    options: ToolOptions
    pairs: tuple[tuple[str, str], ...]


@dataclass(frozen=True)
class Task:
    """One scheduled measurement: a test from ``source`` to ``destination``."""

    test: MeshTest
    source: Host
    destination: Host

    @property
    def key(self) -> str:
        return f"{self.test.name}:{self.source.name}>{self.destination.name}"

    @property
    def throughput(self) -> bool:
        return self.test.type == "throughput"


@dataclass(frozen=True)
class MeshConfig:
    name: str
    hosts: dict[str, Host]
    tests: tuple[MeshTest, ...]


def _loc(parts: Iterable[Any]) -> str:
    """``('tests', 2, 'interval')`` → ``tests[2].interval``."""
    text = ""
    for part in parts:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else str(part))
    return text


def _first_error(error: ValidationError, prefix: tuple = ()) -> MeshError:
    first = error.errors(include_url=False)[0]
    message = first["msg"].removeprefix("Value error, ")
    if first["type"] == "extra_forbidden":
        message = "unknown field"
    elif first["type"] == "missing":
        message = "missing"
    return MeshError(_loc((*prefix, *first["loc"])) or None, message)


def _members(names: list[str] | None, hosts: dict[str, Host], where: str, minimum: int) -> list[str]:
    if names is None:
        raise MeshError(where, "missing")
    if len(names) < minimum:
        raise MeshError(where, f"needs at least {minimum} host{'s' if minimum > 1 else ''}")
    seen: set[str] = set()
    for index, name in enumerate(names):
        if name not in hosts:
            raise MeshError(f"{where}[{index}]", f"unknown host {name!r}; hosts: {', '.join(hosts)}")
        if name in seen:
            raise MeshError(f"{where}[{index}]", f"host {name!r} is listed twice")
        seen.add(name)
    return names


def group_pairs(spec: _GroupSpec, hosts: dict[str, Host], where: str) -> tuple[tuple[str, str], ...]:
    """Ordered (source, destination) pairs of a group; a host is never paired with itself."""
    if spec.type == "mesh":
        for other in ("a", "b"):
            if getattr(spec, other) is not None:
                raise MeshError(f"{where}.{other}", "a mesh group lists its hosts in 'hosts' (a/b are for disjoint groups)")
        members = _members(spec.hosts, hosts, f"{where}.hosts", 2)
        return tuple((a, b) for a in members for b in members if a != b)
    if spec.hosts is not None:
        raise MeshError(f"{where}.hosts", "a disjoint group lists its sides in 'a' and 'b'")
    side_a = _members(spec.a, hosts, f"{where}.a", 1)
    side_b = _members(spec.b, hosts, f"{where}.b", 1)
    pairs = [(a, b) for a in side_a for b in side_b if a != b]
    if not spec.unidirectional:
        pairs += [(b, a) for a, b in pairs]
    return tuple(dict.fromkeys(pairs))


def mesh_from_data(data: Any, default_name: str = "mesh") -> MeshConfig:
    """Check decoded mesh data and build the MeshConfig; raises MeshError naming the field."""
    if not isinstance(data, dict):
        raise MeshError(None, f"a mesh file is a mapping with hosts, groups and tests, got {type(data).__name__}")
    try:
        spec = _MeshSpec.model_validate(data)
    except ValidationError as error:
        raise _first_error(error) from None
    hosts: dict[str, Host] = {}
    for index, host in enumerate(spec.hosts):
        if host.name in hosts:
            raise MeshError(f"hosts[{index}].name", f"host {host.name!r} is defined twice")
        hosts[host.name] = host
    pairs = {name: group_pairs(group, hosts, f"groups.{name}") for name, group in spec.groups.items()}
    tests: list[MeshTest] = []
    for index, test in enumerate(spec.tests):
        where = f"tests[{index}]"
        if test.name in {t.name for t in tests}:
            raise MeshError(f"{where}.name", f"test {test.name!r} is defined twice")
        if test.tool not in TEST_TYPES[test.type]:
            raise MeshError(f"{where}.tool", f"a {test.type} test runs {' or '.join(TEST_TYPES[test.type])}, not {test.tool}")
        if test.group not in pairs:
            raise MeshError(f"{where}.group", f"unknown group {test.group!r}; groups: {', '.join(pairs)}")
        if test.jitter >= test.interval:
            raise MeshError(f"{where}.jitter", f"must be shorter than the interval ({test.interval:g} s)")
        try:
            options = OPTIONS[test.tool].model_validate(test.options)
        except ValidationError as error:
            raise _first_error(error, ("tests", index, "options")) from None
        tests.append(MeshTest(test.name, test.type, test.tool, test.group, test.interval, test.jitter, options,
                          pairs[test.group]))  # fmt: skip
    return MeshConfig(spec.name or default_name, hosts, tuple(tests))


def expand(mesh: MeshConfig) -> list[Task]:
    """Every (test, source, destination) task of the mesh, in file order."""
    return [Task(test, mesh.hosts[a], mesh.hosts[b]) for test in mesh.tests for a, b in test.pairs]


def tasks_for(mesh: MeshConfig, host: str) -> list[Task]:
    """The tasks a collector on ``host`` runs: those whose source it is."""
    if host not in mesh.hosts:
        raise MeshError("--host", f"{host!r} is not a host of mesh {mesh.name!r}; hosts: {', '.join(mesh.hosts)}")
    return [task for task in expand(mesh) if task.source.name == host]


def find_local_host(mesh: MeshConfig, is_local: Callable[[str], bool]) -> str:
    """The one mesh host whose address ``is_local``; MeshError when none or several are.

    >>> mesh = MeshConfig("m", {"a": Host(name="a", address="10.0.0.1"), "b": Host(name="b", address="10.0.0.2")}, ())
    >>> find_local_host(mesh, lambda address: address == "10.0.0.2")
    'b'
    """
    local = [host.name for host in mesh.hosts.values() if is_local(host.address)]
    if len(local) == 1:
        return local[0]
    if not local:
        raise MeshError("--host", f"no host of mesh {mesh.name!r} has an address of this machine; name it with --host")
    raise MeshError("--host", f"several hosts of mesh {mesh.name!r} are this machine ({', '.join(local)}); name one with --host")


def address_is_local(address: str) -> bool:
    """True when ``address`` (an IP or a name, resolved) belongs to this machine: a socket can bind it."""
    try:
        infos = socket.getaddrinfo(address, None, type=socket.SOCK_DGRAM)
    except (socket.gaierror, UnicodeError):
        return False
    for family, _, _, _, sockaddr in infos:
        ip = ipaddress.ip_address(sockaddr[0].split("%")[0])
        if ip.is_unspecified or ip.is_multicast:
            continue
        try:
            with socket.socket(family, socket.SOCK_DGRAM) as probe:
                probe.bind((sockaddr[0], 0, *sockaddr[2:]) if family == socket.AF_INET6 else (sockaddr[0], 0))
            return True
        except OSError:
            continue
    return False
