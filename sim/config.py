"""What a simulation run is asked for: mesh size, period, seed and the test cadences.

>>> config = SimConfig(seed=3, hosts=5, days=7)
>>> config.paths, config.end - config.start
(20, 604800)
>>> SimConfig(seed=1, hosts=2)
Traceback (most recent call last):
...
ValueError: --hosts: at least 3 hosts make a mesh, got 2
"""

from __future__ import annotations

from dataclasses import dataclass, field

from pathwatch.contract import timefmt

DEFAULT_START = "2026-01-05T00:00:00Z"
DAY_S = 86_400
MAX_HOSTS = 40
MAX_DAYS = 366


@dataclass(frozen=True)
class Cadences:
    """How often each test runs on every path (seconds), as a perfSONAR mesh config sets them."""

    latency_s: int = 600            # one latencybg (powstream) result per window
    latency_packets: int = 6000     # packets per result: 10 pps for the window
    throughput_s: int = 7200        # one iperf3 run per path per period
    throughput_jitter_s: int = 300  # per-run random slip of the scheduler
    throughput_run_s: int = 10      # iperf3 -t
    trace_s: int = 1200             # traceroute / pscheduler trace
    tracepath_s: int = 3600         # the extra tracepath test of hosts that run both tools

    def check(self) -> None:
        for name, value in vars(self).items():
            if not isinstance(value, int) or value <= 0:
                raise ValueError(f"cadence {name}: expected a positive whole number, got {value!r}")
        if self.throughput_run_s * 4 > self.throughput_s:
            raise ValueError("cadence throughput_run_s: runs must be far shorter than throughput_s")


def parse_cadences(settings: list[str] | tuple[str, ...] = ()) -> Cadences:
    """Cadences from ``NAME=SECONDS`` settings (the ``--cadence`` option), the rest left at defaults.

    >>> parse_cadences(["throughput_s=21600", "trace_s=3600"]).throughput_s
    21600
    >>> parse_cadences(["ping_s=5"])
    Traceback (most recent call last):
    ...
    ValueError: --cadence ping_s=5: no cadence ping_s (one of latency_s, latency_packets, throughput_s, throughput_jitter_s, throughput_run_s, trace_s, tracepath_s)
    """
    known = list(Cadences.__dataclass_fields__)
    values: dict[str, int] = {}
    for setting in settings:
        name, sep, text = setting.partition("=")
        name = name.strip()
        if not sep:
            raise ValueError(f"--cadence {setting}: expected NAME=SECONDS")
        if name not in known:
            raise ValueError(f"--cadence {setting}: no cadence {name} (one of {', '.join(known)})")
        try:
            values[name] = int(text)
        except ValueError:
            raise ValueError(f"--cadence {setting}: expected a whole number of seconds, got {text!r}") from None
    cadences = Cadences(**values)
    try:
        cadences.check()
    except ValueError as error:
        raise ValueError(f"--{error}") from None
    return cadences


@dataclass(frozen=True)
class SimConfig:
    """The options of ``pathwatch simulate``; errors name the option at fault."""

    seed: int
    hosts: int = 7
    days: int = 21
    start_text: str | None = None
    cadences: Cadences = field(default_factory=Cadences)
    benign: bool = True         # the benign behaviour catalogue (pathwatch.sim.benign); False: the old meshes
    benign_only: bool = False   # no pathology at all: every alarm on such a mesh is false

    def __post_init__(self) -> None:
        if not isinstance(self.seed, int) or self.seed < 0:
            raise ValueError(f"--seed: expected a whole number >= 0, got {self.seed!r}")
        if not 3 <= self.hosts <= MAX_HOSTS:
            raise ValueError(f"--hosts: at least 3 hosts make a mesh, got {self.hosts}" if self.hosts < 3
                             else f"--hosts: at most {MAX_HOSTS} hosts, got {self.hosts}")
        if not 1 <= self.days <= MAX_DAYS:
            raise ValueError(f"--days: expected 1 to {MAX_DAYS} days, got {self.days}")
        try:
            moment = timefmt.parse_rfc3339(self.start_text or DEFAULT_START)
        except ValueError as error:
            raise ValueError(f"--start: not an RFC 3339 time with zone ({error})") from None
        if moment.year < 2000 or moment.year > 2100:
            raise ValueError(f"--start: expected a year between 2000 and 2100, got {moment.year}")
        self.cadences.check()
        if self.benign_only and not self.benign:
            raise ValueError("--benign-only: the benign-only family needs the benign catalogue (drop --no-benign)")
        object.__setattr__(self, "_start", int(moment.timestamp()))

    @property
    def start(self) -> int:
        """Unix seconds of the first moment simulated."""
        return self._start  # type: ignore[attr-defined]

    @property
    def end(self) -> int:
        """Unix seconds just after the last moment simulated."""
        return self.start + self.days * DAY_S

    @property
    def paths(self) -> int:
        return self.hosts * (self.hosts - 1)
