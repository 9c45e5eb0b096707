"""What a path's detectors share: one :class:`PathContext` per directed path, built once by the
path's :class:`~pathwatch.models.monitor.PathMonitor` and handed to every detector.

A detector reads and writes the path's facts here, never another detector's attributes, and
no detector imports another:

- :class:`BusyHours` — the busy hours of the path's open diurnal saturation (written by the
  diurnal detector): a delay or loss rise, or a throughput trough, confined to them is the
  saturation's own daily symptom, not a new problem (read by the level, latency and loss detectors).
- :class:`RouteMoves` — when the path's route moved, with the delay step seen with it (written by
  the route detector): a delay step taken with a route move is the new route's propagation delay
  (read by the latency detector).
- :class:`~pathwatch.models.stall.BlackHoleStalls` — the one judge of whether a throughput run's
  stalled start is an MTU black hole's (asked by the MTU, level and diurnal detectors, so they
  agree on every run), built from :class:`ContextParams`.

>>> context = PathContext()
>>> context.busy.window is None, len(context.route_moves.times), context.stalls.stall_s
(True, 0, 2.0)
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass

from pathwatch.models.params import Params
from pathwatch.models.stall import BlackHoleStalls

DAY = 86400.0


@dataclass(frozen=True)
class ContextParams(Params):
    """Parameters of the facts a path's detectors share (config section ``context``).

    Parameters
    ----------
    stall_s : float, default 2.0
        Seconds of near-silence at the start of a throughput run that count as a stall (an MTU
        black hole holds every full-size segment: the first seconds move almost nothing).
    stall_retransmits_min : int, default 2
        Retransmits in those seconds a black hole's stall shows (its RTO expiries; a slow start
        on a long path is slow without them).
    crawl_fraction : float, default 0.05
        A black hole's run stays under this share of the path's usual runs' window (else rate);
        a congested start carries on within a few times of its usual window.
    usual_runs : int, default 10
        The path's last runs that were not a black hole's kept as the usual ones.
    min_usual_runs : int, default 3
        With fewer usual runs known, the stall alone decides.
    window_fill_min : float, default 0.9
        A run moves one of the windows iperf3 reports when rate × mean RTT is at least this share of
        it (``tcp.window_filled``; of half of it for Linux's doubled send buffer) ...
    window_fill_max : float, default 1.03
        ... and rate × lowest RTT at most this share (a window-bound flow cannot move more).
    window_retrans_max : int, default 0
        A run retransmitting at most this much is not paced by loss ...
    window_loss_share : float, default 0.05
        ... nor one retransmitting under this share of the loss that would hold a loss-based TCP
        to its rate (Mathis et al.): the window held it (``tcp.window_held``; the level and diurnal
        detectors read it).
    tester_share : float, default 0.9
        A run at this share of the rate its test asked for was paced by its tester: its evenness is
        not kept as the path's usual.
    host_cv_factor : float, default 3.0
        A run whose per-second rates spread this many times the path's usual runs' ...
    host_cv_min : float, default 0.01
        ... (and at least this interval CV) ...
    host_retrans_quantile : float, default 0.75
        ... retransmitting no more than this quantile of the path's usual runs was paced by its own
        host (``pace.HostPace``: a host short of CPU moves its bytes in uneven gulps and loses
        nothing); the level and diurnal detectors count it neither way.
    clock_error_max_ms : float, default 50.0
        A latency sample whose clocks' error bound (owamp's max-clock-error) is larger, or whose
        clocks say they are unsynchronised, says nothing of the path's delay: the route and
        latency detectors skip it (:meth:`PathContext.clocks_usable`); the clock detector reads it.
    one_way_abs_ms : float, default 1.0
        A one-way delay change smaller than this (ms) is not significant: owamp reports tenths, NTP
        moves a one-way delay by tenths ...
    one_way_rel : float, default 0.05
        ... nor one smaller than this share of the level before it.
    rtt_abs_ms : float, default 5.0
        A round-trip change (ping, RIPE Atlas) smaller than this is not significant ...
    rtt_rel : float, default 0.10
        ... nor one smaller than this share of the level before it: the significance operators set
        for an RTT (a round trip crosses the far host's ICMP handling and both directions' own
        variation; a few-packet ping's minimum moves by milliseconds and percents with the path
        unchanged). The latency detector's shifts and the diurnal detector's daily delay rises
        are judged by it (:meth:`PathContext.significance`).
    """

    stall_s: float = 2.0
    stall_retransmits_min: int = 2
    crawl_fraction: float = 0.05
    usual_runs: int = 10
    min_usual_runs: int = 3
    window_fill_min: float = 0.9
    window_fill_max: float = 1.03
    window_retrans_max: int = 0
    window_loss_share: float = 0.05
    tester_share: float = 0.9
    host_cv_factor: float = 3.0
    host_cv_min: float = 0.01
    host_retrans_quantile: float = 0.75
    clock_error_max_ms: float = 50.0
    one_way_abs_ms: float = 1.0
    one_way_rel: float = 0.05
    rtt_abs_ms: float = 5.0
    rtt_rel: float = 0.10


class BusyHours:
    """A path's busy hours while its diurnal saturation is open.

    >>> busy = BusyHours()
    >>> busy.window = (13, 5)
    >>> busy.covers(13.5 * 3600, 17 * 3600, 3600.0), busy.covers(9 * 3600, 20 * 3600, 3600.0)
    (True, True)
    >>> busy.covers(13.5 * 3600, 23.5 * 3600, 3600.0), busy.covers(7 * 3600, 17 * 3600, 3600.0)
    (False, False)
    """

    __slots__ = ("window",)

    def __init__(self) -> None:
        self.window: tuple[int, int] | None = None   # (start hour UTC, width in hours) while open

    def __getstate__(self):
        return (self.window,)               # (never falsy: pickle calls __setstate__ only then)

    def __setstate__(self, state) -> None:
        self.window = state[0]

    def covers(self, start: float, end: float, slack: float) -> bool:
        """Whether ``start``..``end`` lies within one day's busy hours, widened on each side by
        ``slack`` seconds or, when longer, the window's width: the window found is the trough's
        deepest hours, and the load ramps up to them and back down over about as long."""
        if self.window is None:
            return False
        hour, width = self.window
        slack = max(slack, width * 3600.0)
        opens = (start + slack - hour * 3600.0) // DAY * DAY + hour * 3600.0   # the last busy start by then
        return start >= opens - slack and end <= opens + width * 3600.0 + slack


class RouteMoves:
    """When a path's route moved (a change opened, or the previous route came back), with the
    delay step the route detector saw with it.

    >>> moves = RouteMoves()
    >>> moves.add(7200.0, 3.0)
    >>> moves.near(6000.0, 9000.0, 1, 3600.0), moves.near(6000.0, 9000.0, -1, 3600.0), moves.near(12000.0, 13000.0, 1, 3600.0)
    (True, False, False)
    """

    __slots__ = ("times",)

    def __init__(self) -> None:
        self.times: deque[tuple[float, float | None]] = deque(maxlen=8)   # (time of the first trace on the new route, step ms)

    def __getstate__(self):
        return (list(self.times),)

    def __setstate__(self, state) -> None:
        self.times = deque(state[0], maxlen=8)

    def add(self, t: float, step: float | None) -> None:
        self.times.append((t, step))

    def near(self, start: float, end: float, direction: int, slack: float) -> bool:
        """Whether the route moved between ``slack`` before ``start`` and ``end`` (a trace shows a
        move up to a trace interval after the delay stepped) with a delay step the same way, or of
        unknown size."""
        return any(start - slack <= t <= end and (step is None or step * direction > 0) for t, step in self.times)


class PathContext:
    """The facts one path's detectors share (see the module docstring)."""

    def __init__(self, params: ContextParams | None = None, family: int | None = None) -> None:
        p = self.p = params if params is not None else ContextParams()
        self.family = family    # 6: the path's IPv6 measurements (a path of their own); None: the rest
        self.busy = BusyHours()
        self.route_moves = RouteMoves()
        self.stalls = BlackHoleStalls(p.stall_s, p.stall_retransmits_min, p.crawl_fraction, p.usual_runs,
                                      p.min_usual_runs)

    def significance(self, one_way: bool) -> tuple[float, float]:
        """(ms, share of the level): a change of a delay series is significant when it is at least
        the larger of the two (``one_way_*`` for a one-way delay, ``rtt_*`` for a round trip).

        >>> PathContext().significance(False), PathContext().significance(True)
        ((5.0, 0.1), (1.0, 0.05))
        """
        p = self.p
        return (p.one_way_abs_ms, p.one_way_rel) if one_way else (p.rtt_abs_ms, p.rtt_rel)

    def clocks_usable(self, obs) -> bool:
        """Whether a latency sample's clocks let its delay speak for the path (see
        ``clock_error_max_ms``); an RTT's clock is one host's and always does."""
        return obs.synchronized is not False and (obs.clock_error_ms or 0.0) <= self.p.clock_error_max_ms
