"""Whether a throughput run's own host, not the network, set its pace.

A NIC or a network bottleneck paces a TCP flow as evenly from one second to the next as it
always does on that path, and a network that slows a flow does so by losing its packets (the
sender retransmits). A sender or receiver short of CPU moves its bytes in uneven gulps and loses
nothing. So a run whose per-second rates spread ``cv_factor`` times (and at least ``cv_min``)
more than the path's usual runs' do, while it retransmits no more than they do (up to their
``retrans_quantile``), was paced by its host: it says nothing about the path's capacity, and
the throughput detectors count it neither as low nor as normal. A run at the rate its test asked
for (iperf3 -b, pscheduler's bandwidth) is as even as its tester's pacing: its spread says nothing
of how evenly the path paces a flow, so it is not kept as the path's usual spread.

>>> from pathwatch.models.observe import ThroughputObs
>>> def run(cv, retransmits=0):
...     return ThroughputObs(0.0, True, None, 6e8, retransmits, 10.0, None, 8948, 10.0, 1, False, 0.0, cv, 0)
>>> pace = HostPace(24)
>>> for cv in (0.003, 0.004, 0.005, 0.004, 0.003, 0.006):
...     pace.add(run(cv), 0.9)
>>> pace.paced(run(0.08), 3.0, 0.01, 0.75, 6), pace.paced(run(0.005), 3.0, 0.01, 0.75, 6), pace.paced(run(0.08, 40), 3.0, 0.01, 0.75, 6)
(True, False, False)
>>> from dataclasses import replace
>>> tester = HostPace(24)
>>> for cv in (0.0001, 0.0002, 0.0001, 0.0003, 0.0001, 0.0002):      # iperf3 -b 600M: at its rate
...     tester.add(replace(run(cv), target_bps=6e8), 0.9)
>>> tester.paced(run(0.03), 3.0, 0.01, 0.75, 6)      # no usual spread of the path's own known
False
"""

from __future__ import annotations

from collections import deque

from pathwatch.models.observe import ThroughputObs
from pathwatch.models.significance import tail_exceeds
from pathwatch.models.window import median


class HostPace:
    """The path's usual runs' interval CVs and retransmits, and whether a run's host paced it."""

    __slots__ = ("cvs", "retransmits")

    def __init__(self, size: int) -> None:
        self.cvs: deque[float] = deque(maxlen=size)
        self.retransmits: deque[int] = deque(maxlen=size)

    def __getstate__(self):
        return (list(self.cvs), list(self.retransmits), self.cvs.maxlen)

    def __setstate__(self, state) -> None:
        cvs, retransmits, size = state
        self.cvs, self.retransmits = deque(cvs, maxlen=size), deque(retransmits, maxlen=size)

    def add(self, run: ThroughputObs, tester_share: float) -> None:
        """Keep a usual run of the path: its retransmits, and its spread unless it ran at the rate its
        test asked for (``tester_share`` of it or more: its tester, not the path, paced it)."""
        self.retransmits.append(run.retransmits or 0)
        if run.interval_cv is not None and not (run.target_bps and run.bps and run.bps >= tester_share * run.target_bps):
            self.cvs.append(run.interval_cv)

    def paced(self, run: ThroughputObs, cv_factor: float, cv_min: float, retrans_quantile: float, min_runs: int) -> bool:
        """Whether ``run`` was paced by its host (see the module's docstring); False until
        ``min_runs`` usual runs are known."""
        cvs, cv = self.cvs, run.interval_cv
        if cv is None or cv < cv_min or len(cvs) < min_runs or cv < cv_factor * median(cvs):
            return False
        ordered = sorted(self.retransmits)
        return (run.retransmits or 0) <= ordered[min(len(ordered) - 1, int(retrans_quantile * len(ordered)))]


class HostTails:
    """The path's latency tests' delay tails, and whether its host was loaded at a run's time.

    A host short of CPU timestamps some of the probes it sends or receives late, whichever path
    they are on: the one-way delay's tail (95th percentile above the minimum) grows while the
    floor, the typical delay (median above the minimum) and loss stay as they were. A queue on
    the path delays the typical packet too and, full, loses some; a slower link or a new route
    moves the floor or nothing. So a run slowed while the path's latest latency test (within
    ``recent_s`` before it) holds a tail ``tail_factor`` times (and ``tail_min_ms``) above its
    usual, the median and loss unmoved, was slowed by a loaded host, not the network (a receiver
    short of CPU may drop the run's own segments, so its retransmits say nothing either way).
    The usual is read from the past hours' medians (``span_s`` of them at most, 12 at least).

    >>> tails = HostTails(86400.0)
    >>> for i in range(120):
    ...     tails.add(i * 600.0, p95_ms=0.2, median_ms=0.05, lost=0, sent=6000)
    >>> tails.loaded(120 * 600.0, 1800.0, 3.0, 0.5, 0.2, 0.01)
    False
    >>> for i in range(120, 126):
    ...     tails.add(i * 600.0, p95_ms=1.0, median_ms=0.05, lost=0, sent=6000)   # a host busy
    >>> tails.loaded(126 * 600.0, 1800.0, 3.0, 0.5, 0.2, 0.01)
    True
    >>> for i in range(126, 132):
    ...     tails.add(i * 600.0, p95_ms=1.0, median_ms=0.9, lost=12, sent=6000)   # a queue: median and loss up
    >>> tails.loaded(132 * 600.0, 1800.0, 3.0, 0.5, 0.2, 0.01)
    False
    """

    __slots__ = ("hours", "current", "latest")

    def __init__(self, span_s: float) -> None:
        # Per past hour (at most ``span_s`` of them): (median tail, median typical delay, lost,
        # sent) — bounded whatever the tests' cadence; the hour being filled, as [hour, tails,
        # typical delays, lost, sent]; the latest sample.
        self.hours: deque[tuple[float, float, int, int]] = deque(maxlen=max(1, int(span_s // 3600)))
        self.current: list | None = None
        self.latest: tuple[float, float, float, int, int] | None = None   # (t, p95 − min, median − min, lost, sent)

    def __getstate__(self):
        return (self.hours.maxlen, list(self.hours), self.current, self.latest)

    def __setstate__(self, state) -> None:
        size, hours, self.current, self.latest = state
        self.hours = deque(hours, maxlen=size)

    def add(self, t: float, *, p95_ms: float, median_ms: float, lost: int, sent: int) -> None:
        """Keep a latency sample's tail and typical delay above its minimum, and its loss."""
        hour, current = int(t // 3600), self.current
        if current is None or current[0] != hour:
            if current is not None:
                self.hours.append((median(current[1]), median(current[2]), current[3], current[4]))
            current = self.current = [hour, [], [], 0, 0]
        current[1].append(p95_ms)
        current[2].append(median_ms)
        current[3] += lost
        current[4] += sent
        self.latest = (t, p95_ms, median_ms, lost, sent)

    def loaded(self, t: float, recent_s: float, tail_factor: float, tail_min_ms: float, median_slack_ms: float,
               loss_alpha: float) -> bool:
        """Whether the latest sample at or before ``t`` (within ``recent_s``) shows a loaded host
        (above) against the past hours'; False without it or with fewer than 12 past hours. The
        typical delay may rise by ``median_slack_ms`` (owamp's delays are tenths of a millisecond:
        their differences are compared to the microsecond, as a float's last bits are no delay);
        the loss is unmoved unless the sample lost significantly more than the past hours did
        (its share of all their losses above its share of the packets, binomial test at
        ``loss_alpha``): one packet lost of 6,000 after none is no queue overflowing.

        >>> tails = HostTails(86400.0)
        >>> for i in range(72):
        ...     tails.add(i * 600.0, p95_ms=0.3, median_ms=0.0, lost=0, sent=6000)
        >>> tails.add(72 * 600.0, p95_ms=2.3, median_ms=20.2 - 20.0, lost=1, sent=6000)   # (0.2000000000000028)
        >>> tails.loaded(72 * 600.0, 1800.0, 3.0, 0.5, 0.2, 0.01)
        True
        """
        latest, hours = self.latest, self.hours
        if latest is None or latest[0] > t or latest[0] < t - recent_s or len(hours) < 12:
            return False
        usual_tail = median(h[0] for h in hours)
        if latest[1] < max(tail_factor * usual_tail, usual_tail + tail_min_ms):
            return False
        if round(latest[2] - median(h[1] for h in hours), 3) > median_slack_ms:
            return False
        lost_before, sent_before = sum(h[2] for h in hours), sum(h[3] for h in hours)
        lost, sent = latest[3], latest[4]
        return sent > 0 and (not lost or bool(tail_exceeds(lost, lost + lost_before, sent / (sent + sent_before), loss_alpha)))
