"""Level shifts: throughput_drop and window_limited (throughput), latency_shift (delay).

Each series keeps a robust baseline (median and MAD of recent normal values). A throughput run
joins it only within half the low threshold of it, either way: runs kept out on one side alone
(those halfway down, so that a drop under way does not pull the baseline after it) bias its
median up and its spread down on a noisy path, until noise reads as a drop. A shift opens when
every value over at least ``*_runs`` values and ``*_span_s`` seconds sits beyond the baseline by
more than the larger of an absolute floor, a fraction of the baseline and ``k`` MADs — a
persistent level change, not an outlier or a busy hour. It closes when values come back. A
delay shift that lasts ``delay_settle_s`` becomes the new normal (closed, re-baselined); a later
return to the level it had before is then the old normal coming back, not a new shift.

Throughput also drops when the median of the last ``level_runs`` runs sits ``level_z``
standard errors and ``level_share`` × ``tput_drop_frac`` below the baseline: on a noisy path a
30 % drop leaves half its runs above the per-run threshold, but not their median — while the
runs among them below that threshold span ``tput_span_s`` too (a few hours' dip with runs low by
noise on either side of it pulls the median as far). A drop persists: either way it is named
only while the latest run still sits nearer the low runs' level than the baseline. Low runs
that are over by the time they span ``tput_span_s`` (a host busy for some hours, a burst of
cross traffic) were a passing load, not a lasting drop; a run back up defers the verdict to the
next one. A run its own host paced says nothing about the
path's capacity and counts neither way: its per-second rates spread ``host_cv_factor`` times
more than the path's normal runs' (a NIC or a network bottleneck paces a flow as evenly as
ever; a sender or receiver short of CPU moves its bytes in uneven gulps) while it retransmits
no more than they do (a network that slows a flow loses packets; a busy CPU loses none), or
the path's latest latency test before it shows a loaded host's tell
(:class:`pathwatch.models.pace.HostTails`: a longer delay tail, the typical delay and loss as
before).

A throughput drop whose runs are flat, retransmit (next to) nothing and move a steady
``window = rate × RTT`` is a TCP window limit, so it opens ``window_limited`` instead (from its
first such run, when a congested run or two just before it were low too); runs that stall at
the start as in a black hole (near-silence that retransmits) are left to the MTU detector. A
window limit is also named from its absolute signature, with no "before" to compare with (an
untuned host from the first run): runs in a row that move one of the windows iperf3 reports every
round trip (rate × RTT, the bytes in flight: the congestion window, the receiver's advertised window
or the send buffer autotuning never grew), flat, without retransmits, the same window each run.
"Next to nothing" is measured against the loss that would explain the rate: a loss-based TCP at
``rate`` over ``RTT`` loses p = (C · MSS / (RTT · rate))² of its packets (Mathis et al.), so a run
retransmitting under ``window_loss_share`` of that many is paced by something other than loss — one
retransmit in a 3-second run at 46 Mb/s over 10 ms is 60 times too few (a real kernel's window-limited
runs lose a segment now and then), while a fast long path must be clean.

A level shift persists; a load pattern follows the clock. A change that came back within
``daily_return_s`` is remembered by the hours it covered; a later change in the same direction
that stays within those hours of a following day (or within the busy hours of the path's open
diurnal saturation) is the daily pattern again and is held — opened, from where it began, only
once it outlasts them (when no more than ``daily_factor`` times the size of the change it
repeats). A floor falling back to its lowest normal level of the last ``delay_floor_s``, its
baseline having crept up with a swelling queue without a step since, is the queue draining. A
one-way delay step within the clocks' own error bound (owamp's
max-clock-error) is not a shift: NTP moves a one-way delay that much with the path unchanged.

A delay shift steps: a propagation change moves every packet at once, so at least
``delay_jump_share`` of the change happens between one sample and the next (within ``delay_gap_s``:
a path back from a silence may return midway through its daily queue, and what it did meanwhile is
unknown; a change pending when the path fell silent starts again from the sample back, the silence
being no time it was seen to stay) — and, for a one-way delay, more than twice the clocks' error
bound (each sample may be off by the bound, either way: an NTP correction from one side of it to the
other). A queue building creeps past any threshold a little per sample; a floor that crept there is
named only once it has stayed ``delay_creep_s`` (a day's queue drains within its day) as a level:
over that day its samples sit within the threshold of the change's level (the median of its
samples), by their median absolute deviation from it (a queue that no longer drains under the
threshold keeps swinging with the day; the baseline takes where it stands). Whatever way it came, a
one-way change that stays within what the clocks may move it (twice their bound) is their new
offset, not a shift: the baseline follows. A shift ends the way it began, by a step back; a queue on
the new path creeping up past the old level does not end it.

A consequence is not named as its own cause. A throughput drop that the path's own packet loss
explains is the loss's: a loss-based TCP's rate falls at least as 1/sqrt(loss) (Mathis et al.:
rate <= MSS / (RTT sqrt(p)) C; CUBIC falls faster), so when the latency tests' probes — independent
of the flow: a slower bottleneck makes a flow lose its own packets, not the probes' — lose, in the
typical hour since the last normal run, significantly more than over ``loss_before_s`` before it,
and enough more that the baseline rate scaled by sqrt(before / now) falls below the low
threshold, no drop is named (the loss detector names the loss). A delay step taken while the
path's route moved (the route detector's moves, in the path's context, within
``route_slack_s``: a trace shows a move up to a trace interval after the delay stepped, and a
step the same way as the route's) is the route's new propagation path: no latency shift is
named, its delay becomes the path's normal and the old one coming back (the route reverting) is
the old normal again.
"""

from __future__ import annotations

import math
from collections import deque
from dataclasses import dataclass
from itertools import repeat
from operator import sub

from pathwatch.models.anomaly import Anomaly
from pathwatch.models.base import Detector, severity_for
from pathwatch.models.params import Params
from pathwatch.models.observe import LatencyObs, ThroughputObs
from pathwatch.models.pace import HostPace, HostTails
from pathwatch.models.significance import poisson_tail_below
from pathwatch.models.tcp import bytes_in_flight, loss_cannot_pace, window_filled, window_held
from pathwatch.models.window import SortedWindow, median


@dataclass(frozen=True)
class LevelParams(Params):
    baseline: int = 24               # normal values kept for the baseline
    min_baseline: int = 6            # values needed before judging
    k_mad: float = 4.0               # MADs beyond the baseline that count as shifted
    tput_drop_frac: float = 0.3      # throughput below (1 - this) x baseline is low
    k_tput: float = 2.5              # MADs below the throughput baseline that count as low
    tput_runs: int = 3               # low runs ...
    tput_span_s: float = 8 * 3600.0  # ... covering at least this long ...
    tput_tolerated: float = 0.25     # ... with at most this share of normal runs among them
    level_runs: int = 8              # or: the median of the last this many runs (over tput_span_s) ...
    level_z: float = 4.5             # ... this many standard errors below the baseline ...
    level_share: float = 5 / 6       # ... and this share of tput_drop_frac (25 % at its default)
    delay_abs_ms: float = 1.0        # delay shifts smaller than this are ignored
    delay_rel: float = 0.05          # ... and smaller than this fraction of the baseline
    delay_runs: int = 3              # consecutive shifted samples ...
    delay_span_s: float = 1800.0     # ... covering at least this long
    delay_settle_s: float = 3 * 86400.0  # a delay shift lasting this long becomes the new normal
    delay_jump_share: float = 0.5    # a delay shift steps: this share of it between one sample and the next ...
    delay_creep_s: float = 22 * 3600.0   # ... or it crept there and has stayed this long
    delay_gap_s: float = 3600.0      # a step is seen only from a sample this recent (after a gap: as if it crept)
    window_cv_max: float = 0.06      # window-limited runs are this flat (interval rate CV; after a drop, their median) ...
    window_spread_max: float = 0.075  # ... and their implied window this steady across runs (1.4826 MAD / median)
    window_retrans_max: int = 0      # ... and retransmit at most this much, or ...
    window_loss_share: float = 0.05  # ... under this share of the loss that would hold a loss-based TCP to their rate
    window_fill_min: float = 0.9     # from its first runs: rate x mean RTT this share of a window iperf3 reports ...
    window_fill_max: float = 1.03    # ... and rate x lowest RTT no more than this (a window-limited flow cannot move more)
    window_same_max: float = 0.05    # ... the same window, run after run, within this share ...
    window_runs: int = 4             # ... over this many consecutive runs, too clean for loss to pace them
    daily_return_s: float = 22 * 3600.0  # a change back within this long (within the day) that recurs ...
    daily_slack_s: float = 2 * 3600.0    # ... within the hours it covered a day before (give or take this) ...
    daily_days: int = 2                  # ... on one of this many previous days is a daily pattern
    daily_factor: float = 2.0            # ... when no more than this many times that change's size
    delay_floor_s: float = 26 * 3600.0   # a delay falling back to its lowest normal level of this long is no shift
    tester_share: float = 0.9        # a run at this share of the rate its test asked for was paced by its tester
    host_cv_factor: float = 3.0      # a run whose per-second rates spread this many times the path's usual ...
    host_cv_min: float = 0.01        # ... (and at least this interval CV) ...
    host_retrans_quantile: float = 0.75  # ... retransmitting no more than this quantile of the path's normal runs is host-paced
    host_tail_recent_s: float = 1800.0   # or: a run whose path's latest latency test (this long before it at most) ...
    host_tail_factor: float = 3.0        # ... hold a delay tail (p95 − min) this many times the usual ...
    host_tail_min_ms: float = 0.5        # ... and this much above it ...
    host_median_slack_ms: float = 0.2    # ... with the typical delay (median − min) within this of its usual ...
    host_loss_alpha: float = 0.01        # ... and loss not up (binomial test at this level)
    host_tail_span_s: float = 26 * 3600.0  # ... (the usual: the hourly medians of this long before it)
    loss_hours: int = 48             # hourly (lost, sent) bins of the path's latency tests kept ...
    loss_before_s: float = 24 * 3600.0   # ... the loss a normal rate went with: over this long up to the run
    loss_alpha: float = 1e-4         # loss during the drop above the loss before it at this level (Poisson) ...
    loss_min_lost: int = 10          # ... with at least this many probes lost, and by Mathis (rate ~ 1/sqrt(loss))
                                     # enough to take the baseline rate below the low threshold: the loss's drop
    route_slack_s: float = 2 * 3600.0    # a delay step this long before a route move (a trace interval or two) is the route's
    cause_model: bool = True         # ask the run-cause classifier (models/artifacts) for evidence


def window_spread(windows: list[float], center: float) -> float:
    """The robust spread of runs' implied windows (rate × RTT) about their median ``center``:
    1.4826 MAD / median, compared with ``window_spread_max``.

    >>> round(window_spread([60e3, 62e3, 61e3, 70e3], 61.5e3), 3)    # one run disturbed: still steady
    0.024
    """
    return 1.4826 * mad(windows, center) / center


def _retransmits_said(runs: list[ThroughputObs]) -> str:
    """How the window-limited summaries put the runs' retransmits."""
    if any(r.retransmits for r in runs):
        return "too few retransmits for loss to set the pace"
    return "no retransmits"


def mad(values, center: float | None = None) -> float:
    """Median absolute deviation from ``center`` (by default the median of ``values``).

    >>> mad([1.0, 2.0, 4.0, 9.0])
    1.5
    """
    m = median(values) if center is None else center
    return median(map(abs, map(sub, values, repeat(m))))      # (abs(v - m) of each, mapped in C)


class _Shift:
    """A robust level-shift tracker for one series: baseline values and the current run of outliers."""

    __slots__ = ("base", "pending", "frozen", "_cached", "_adds", "_worked", "_moved")
    REFRESH = 4  # values added between recomputations of the baseline median and MAD

    def __init__(self, size: int):
        # (kept in sorted order too: the median needs no sort, and an equal value replacing the
        # oldest leaves the median and MAD as they were)
        self.base = SortedWindow(size)
        self.pending: list[tuple[float, float]] = []   # (t, value) beyond the baseline, same direction
        self.frozen: tuple[float, float] | None = None  # (median, threshold) while a shift is open
        self._cached: tuple[float, float] | None = None
        self._adds = 0
        # The last (median, threshold) worked out, and whether the baseline's values moved since:
        # a recomputation of values that did not move gives it again.
        self._worked: tuple[float, float] | None = None
        self._moved = True

    def add(self, value: float) -> None:
        if self.base.append(value):
            self._moved = True
        self._adds += 1
        values = self.base.values            # (the window's deque: len and maxlen without a Python call)
        if self._adds >= self.REFRESH or len(values) < values.maxlen:
            self._cached, self._adds = None, 0

    def rebase(self, values) -> None:
        self.base.clear()
        self.base.extend(values)
        self._cached, self._adds, self._moved = None, 0, True

    def reference(self, k: float, floor: float, rel: float) -> tuple[float, float]:
        """(baseline median, distance beyond it that counts as shifted)."""
        if self.frozen is not None:
            return self.frozen
        if self._cached is None:
            if self._moved or self._worked is None:
                base = self.base
                m = base.median()               # (median(base), without the sort)
                self._worked, self._moved = (m, max(floor, rel * abs(m), k * 1.4826 * mad(base, m))), False
            self._cached = self._worked
        return self._cached


DAY = 86400.0


class _Daily:
    """A series' recent changes that came back within ``daily_return_s``: (start, end, direction).

    A level shift persists; a load pattern follows the clock. A change confined to hours that
    changed the same way on a previous day, when that one came back within the day, is the daily
    pattern again (:meth:`explains`), not a shift.

    >>> p = LevelParams()
    >>> daily = _Daily()
    >>> daily.record(13 * 3600.0, 18 * 3600.0, 1, p, size=12.0)
    >>> daily.explains(DAY + 13.5 * 3600, DAY + 17 * 3600, 1, p, 14.0), daily.explains(DAY + 13.5 * 3600, DAY + 23 * 3600, 1, p, 14.0)
    (True, False)
    >>> daily.explains(DAY + 13.5 * 3600, DAY + 17 * 3600, 1, p, 30.0)   # far more than that day's: not its pattern
    False
    """

    __slots__ = ("spans",)

    def __init__(self) -> None:
        self.spans: deque[tuple[float, float, int, float]] = deque(maxlen=32)   # (start, end, direction, size)

    def __getstate__(self):
        return (list(self.spans),)

    def __setstate__(self, state) -> None:
        self.spans = deque(state[0], maxlen=32)

    def record(self, start: float, end: float, direction: int, p: LevelParams, size: float = math.inf) -> None:
        """Keep a change of ``size`` that came back at ``end`` (one within ``daily_slack_s`` of the last joins it)."""
        spans = self.spans
        if spans and spans[-1][2] == direction and start - spans[-1][1] <= p.daily_slack_s:
            joined = spans.pop()
            start, size = joined[0], max(size, joined[3])
        horizon = start - p.daily_days * DAY - p.daily_return_s - p.daily_slack_s
        while spans and spans[0][1] < horizon:
            spans.popleft()                 # (too old to explain anything from now on)
        if end - start <= p.daily_return_s:
            spans.append((start, end, direction, size))

    def largest(self, direction: int) -> float:
        """The largest change kept in ``direction`` (inf when none is: no size to go by)."""
        return max((span[3] for span in self.spans if span[2] == direction), default=math.inf)

    def explains(self, start: float, now: float, direction: int, p: LevelParams, size: float = 0.0) -> bool:
        """Whether a change from ``start`` to ``now``, now of ``size``, stays within the hours (±
        ``daily_slack_s``) a change in the same direction that came back covered on one of the
        ``daily_days`` days before, and within ``daily_factor`` times its size (a load varies from
        day to day; a step far beyond it is something else)."""
        slack = p.daily_slack_s
        for first, last, towards, then in self.spans:
            if towards == direction and size <= p.daily_factor * then:
                for days in range(1, p.daily_days + 1):
                    if first + days * DAY - slack <= start and now <= last + days * DAY + slack:
                        return True
        return False


class LevelDetector(Detector):
    name = "levels"
    kinds = ("throughput_drop", "window_limited", "latency_shift")
    reads = (ThroughputObs, LatencyObs)
    Params = LevelParams

    def __init__(self, source, destination, params=None, context=None):
        super().__init__(source, destination, params, context)
        self.tput = _Shift(self.p.baseline)
        self.low_runs: list[ThroughputObs] = []
        self.delay = _Shift(self.p.baseline)
        self.delay_dir = 0
        self.settled_from: tuple[float, float] | None = None   # (baseline, threshold) before a settled shift
        self.tput_kind: str | None = None
        self.recovered = 0
        self.normal_runs: deque[tuple[int, float | None]] = deque(maxlen=self.p.baseline)  # (retransmits, rtt)
        self.pace = HostPace(self.p.baseline)   # the normal runs' evenness and retransmits
        self.tails = HostTails(self.p.host_tail_span_s)   # the latency tests' delay tails: a loaded host
        self.recent_runs: deque[ThroughputObs] = deque(maxlen=self.p.level_runs)
        self.delay_daily, self.tput_daily = _Daily(), _Daily()
        self.delay_held = False       # the pending delay change was held as a daily pattern
        self.delay_last: float | None = None   # the delay sample before this one ...
        self.delay_last_t: float | None = None  # ... its time ...
        self.delay_from: float | None = None   # ... and the one before the pending change began (NaN: after a gap)
        self.floor_lows: deque[float] = deque()   # the lowest normal delay of each of the last hours ...
        self.floor_low, self.floor_until = float("inf"), 0.0   # ... and of this one, until this time
        self.dip: list | None = None          # [first run's time, runs] of the runs below the baseline lately
        self.window_streak: deque[ThroughputObs] = deque(maxlen=self.p.window_runs)  # window-bound runs in a row
        self.window_since: float | None = None    # ... since this run's time
        self.window_held: tuple[float, int] | None = None   # (window, runs above it) of an episode opened so
        self.loss_bins: deque[list] = deque(maxlen=self.p.loss_hours)   # [hour, lost, sent] of the latency tests
        self.loss_normal: tuple[float, int, int] | None = None   # (hour of the last normal run, lost, sent before it)

    def observe(self, obs) -> list[Anomaly]:
        if isinstance(obs, ThroughputObs):
            return self._throughput(obs)
        return self._latency(obs)

    def handlers(self) -> dict[type, object]:
        return {ThroughputObs: self._throughput, LatencyObs: self._latency}

    # ------------------------------------------------------------------ throughput
    def _throughput(self, obs: ThroughputObs) -> list[Anomaly]:
        if not obs.ok or obs.udp or not obs.bps or self.context.stalls.black_hole(obs):
            return []
        bound = self._window_bound_run(obs)
        found = [] if self._host_paced(obs) else self._against_baseline(obs)
        return bound + found if bound else found

    def _host_paced(self, obs: ThroughputObs) -> bool:
        """Whether the run's own host, not the network, set its pace (:mod:`pathwatch.models.pace`,
        against the path's normal runs): such a run says nothing about the path's capacity."""
        p = self.p
        if self.pace.paced(obs, p.host_cv_factor, p.host_cv_min, p.host_retrans_quantile, p.min_baseline):
            return True
        return self.tails.loaded(obs.t, p.host_tail_recent_s, p.host_tail_factor, p.host_tail_min_ms,
                                 p.host_median_slack_ms, p.host_loss_alpha)

    def _window_bound_run(self, obs: ThroughputObs) -> list[Anomaly]:
        """Open ``window_limited`` from the absolute signature of a window limit, whether or not the
        path was ever faster: ``window_runs`` runs in a row, too clean for loss to pace them, that
        each move one of the windows iperf3 reports every round trip (:func:`window_filled`: the
        same one, congestion or receive window or send buffer, within ``window_same_max`` of its size
        in the first run; an autotuned window differs run to run; a flow whose window is not the limit
        keeps less than it in flight, and one that is cannot move more), flat (their median interval
        CV, as after a drop: cross traffic that lengthens round trips moves a window-bound rate with
        them) and moving a steady window (``window_spread_max``). The episode closes once two runs in
        a row move more than that window per round trip."""
        p, streak, held = self.p, self.window_streak, self.window_held
        if held is not None:
            moved = bytes_in_flight(obs)
            if moved is not None and moved[1] > p.window_fill_max * held[0]:
                self.window_held = held = (held[0], held[1] + 1)
                if held[1] >= 2:
                    self.window_held = None
                    self.tput_kind = None if self.tput_kind == "window_limited" else self.tput_kind
                    return self.close("window_limited", obs.t, {"recovered_bps": obs.bps})
            elif held[1]:
                self.window_held = (held[0], 0)
            return []
        filled = window_held(obs, p)
        first = self._filled(streak[0]) if streak else None
        if filled is None or (streak and (first is None or first[0] != filled[0]
                                          or abs(filled[1] - first[1]) > p.window_same_max * first[1])):
            streak.clear()                      # not window-bound, or another window: another streak
        if filled is None:
            return []
        if not streak:
            self.window_since = obs.t
        streak.append(obs)
        if len(streak) < p.window_runs or "window_limited" in self.episodes or "throughput_drop" in self.episodes:
            return []
        cvs = [r.interval_cv for r in streak if r.interval_cv is not None]
        if 2 * len(cvs) < len(streak) or median(cvs) > p.window_cv_max:
            return []
        implied = [bytes_in_flight(r)[0] for r in streak]     # (every run in the streak filled a window: it has both)
        level_window = median(implied)
        if window_spread(implied, level_window) > p.window_spread_max:
            return []
        reported = median(self._filled(r)[1] for r in streak)
        level, rtt_ms = median(r.bps for r in streak), median(r.rtt_ms for r in streak)
        self.window_held = (reported, 0)
        evidence = {"window_bytes": round(reported), "window": filled[0], "rtt_ms": round(rtt_ms, 3),
                    "level_bps": round(level), "window_fill": round(level_window / reported, 3), "runs": len(streak),
                    "interval_cv": round(median(cvs), 4),
                    "retransmits": [r.retransmits for r in streak], "signature": "absolute"}
        if len(self.tput.base.values) >= p.min_baseline and self.tput.frozen is None:
            base = self.tput.base.median()
            if base > level * (1 + 2 * p.window_spread_max):
                evidence["baseline_bps"] = round(base)
        return self.open(
            "window_limited", start=self.window_since, at=obs.t, severity=severity_for(0.0, 0.0, 0.5, 0.8), score=0.5,
            summary=f"Throughput flat at {level / 1e6:,.0f} Mb/s = {filled[0]} {reported / 1024:,.0f} KiB / RTT "
                    f"{rtt_ms:.0f} ms over {len(streak)} runs, {_retransmits_said(streak)}: the flow moves its whole "
                    f"{filled[0]} every round trip, a TCP window limit (an untuned host or a small buffer).",
            evidence=evidence,
        )

    def _filled(self, run: ThroughputObs) -> tuple[str, int] | None:
        """The window ``run`` filled (:func:`window_filled`), for a run already in the streak."""
        return window_filled(run, self.p.window_fill_min, self.p.window_fill_max)

    def _against_baseline(self, obs: ThroughputObs) -> list[Anomaly]:
        """throughput_drop (or window_limited) against the path's own baseline."""
        if len(self.tput.base.values) < self.p.min_baseline:
            self._add_normal(obs)
            return []
        base, spread = self.tput.reference(self.p.k_tput, 0.0, self.p.tput_drop_frac)
        low = obs.bps < base - spread
        self.recent_runs.append(obs)
        dip = self.dip
        if low:
            if dip is None:
                self.dip = [obs.t, 1]
            else:
                dip[1] += 1
        elif dip is not None and obs.bps >= base - spread / 2:
            if dip[1] >= 2:                 # back up: a dip of two or more low runs is kept as the hours it covered
                self.tput_daily.record(dip[0], obs.t, -1, self.p)
            self.dip = None
        if self.tput_kind is not None:
            # Recovery takes two runs in a row back above half the drop threshold.
            self.recovered = self.recovered + 1 if obs.bps >= base - spread / 2 else 0
            if self.recovered < 2:
                return []
            self.tput.frozen = None
            kind, self.tput_kind, self.recovered = self.tput_kind, None, 0
            self.low_runs.clear()
            if kind == "window_limited":
                self.window_held = None
            return self.close(kind, obs.t, {"recovered_bps": obs.bps})
        if not low and not self.low_runs:
            if abs(obs.bps - base) < spread / 2:   # runs halfway to the threshold, either way, stay out
                self._add_normal(obs)
            shifted = self._level_shift(base, spread)
            return [] if shifted is None else self._open_drop(shifted, base, spread, obs)
        self.low_runs.append(obs)
        runs = self.low_runs
        highs = sum(1 for r in runs if r.bps >= base - spread)
        if highs > self.p.tput_tolerated * len(runs):
            # Not a level: give the runs near the baseline back to it and start over.
            for r in runs:
                if abs(r.bps - base) < spread / 2:
                    self._add_normal(r)
            self.low_runs = []
            shifted = self._level_shift(base, spread)
            return [] if shifted is None else self._open_drop(shifted, base, spread, obs)
        if len(runs) < self.p.tput_runs or runs[-1].t - runs[0].t < self.p.tput_span_s:
            return []
        if median(r.bps for r in runs) >= base - spread or self._daily_trough(runs[0].t, obs.t):
            return []
        return self._open_drop([r for r in runs if r.bps < base - spread], base, spread, obs)

    def _daily_trough(self, start: float, now: float) -> bool:
        """Whether low runs from ``start`` to ``now`` are the path's daily trough again: within the
        hours a dip that came back covered on a previous day, or its diurnal saturation's busy hours."""
        p = self.p
        return self.tput_daily.explains(start, now, -1, p) or self.context.busy.covers(start, now, p.daily_slack_s)

    def _level_shift(self, base: float, spread: float) -> list[ThroughputObs] | None:
        """The recent runs when their median sits ``level_z`` standard errors (of a median of that
        many runs, from the baseline's MAD) and ``level_share`` × ``tput_drop_frac`` below the
        baseline: a drop that noise spreads on both sides of the per-run threshold is still a
        level change that persists: the runs below the per-run threshold among them span
        ``tput_span_s``, as the per-run test asks (a few hours' dip, a loaded host, pulls a
        noisy path's median down as far while it lasts)."""
        p, recent = self.p, self.recent_runs
        if len(recent) < p.level_runs or recent[-1].t - recent[0].t < p.tput_span_s:
            return None
        level = median(r.bps for r in recent)
        if level >= (1 - p.level_share * p.tput_drop_frac) * base:
            return None
        sigma = 1.4826 * mad(self.tput.base)
        standard_error = 1.2533 * sigma / len(recent) ** 0.5     # of the median of len(recent) normal values
        if base - level < p.level_z * standard_error:
            return None
        lows = [r for r in recent if r.bps < (base + level) / 2]   # the runs nearer the new level
        below = [r.t for r in lows if r.bps < base - spread]
        if not below or below[-1] - below[0] < p.tput_span_s:
            return None     # the runs clearly low span as long as the per-run test asks; a shorter dip was a passing load
        if self._daily_trough(lows[0].t, lows[-1].t):
            return None
        spans = self.tput_daily.spans
        if self.dip is None and spans and spans[-1][0] <= lows[0].t and lows[-1].t < spans[-1][1]:
            return None     # one dip that has come back up since, within the day: not a level that persists
        return lows

    def _open_drop(self, runs: list[ThroughputObs], base: float, spread: float, latest: ThroughputObs) -> list[Anomaly]:
        """Open throughput_drop (or window_limited when the low ``runs`` are window-bound), unless
        the ``latest`` run is back nearer the baseline than the low runs' level: a drop persists;
        one that is over by the time it could be named was a passing load (the next run decides)."""
        level = median(r.bps for r in runs)
        if latest.bps >= (base + level) / 2:
            return []
        at = latest.t
        self.low_runs = []
        window, bound = self._window_bound(runs)
        if window is not None and self.window_held is not None:
            return []       # window-bound runs on a path whose window limit is named already: the same limit
        if window is None and self._loss_explains(base, spread):
            return []       # the path's own loss rose enough to take its rate this low: the loss's effect
        self.tput.frozen = (base, spread)
        drop = 1 - level / base
        evidence = {
            "baseline_bps": round(base), "level_bps": round(level), "drop_pct": round(100 * drop, 1),
            "runs": len(runs), "retransmits": [r.retransmits for r in runs],
        }
        evidence.update(self._likely_cause(runs, base))
        score = min(1.0, drop / 0.8)
        severity = severity_for(drop, 0.0, 0.5, 0.8)
        if window is not None:
            self.tput_kind = "window_limited"
            evidence.update(window)
            return self.open(
                "window_limited", start=bound[0].t, at=at, severity=severity, score=score,
                summary=f"Throughput flat at {level / 1e6:,.0f} Mb/s ≈ window {window['window_bytes'] / 1024:,.0f} KiB / "
                        f"RTT {window['rtt_ms']:.0f} ms, {_retransmits_said(bound)}: a TCP window limit "
                        f"({100 * drop:.0f} % below the {base / 1e6:,.0f} Mb/s baseline).",
                evidence=evidence,
            )
        self.tput_kind = "throughput_drop"
        return self.open(
            "throughput_drop", start=runs[0].t, at=at, severity=severity, score=score,
            summary=f"Throughput dropped {100 * drop:.0f} % from {base / 1e6:,.0f} to {level / 1e6:,.0f} Mb/s.",
            evidence=evidence,
        )

    def _loss_explains(self, base: float, spread: float) -> bool:
        """Whether the loss the path's latency tests measured since its last normal run explains a
        drop of the throughput below ``base - spread``: significantly above the loss over
        ``loss_before_s`` up to that run (Poisson at ``loss_alpha``, ``loss_min_lost`` probes or
        more in all, and in the typical hour since: the median hour, as one burst slows no run in
        other hours), and by enough that a loss-based TCP's rate, which falls at least as
        1/sqrt(loss) (Mathis et al.: rate <= MSS / (RTT sqrt(p)) C; CUBIC falls faster, as p^-3/4,
        and retransmission timeouts faster still), falls from the baseline below the low threshold
        at the typical hour's loss.
        The probes are independent of the flow: a slower bottleneck makes the flow lose its own
        packets, not the probes'."""
        p, normal = self.p, self.loss_normal
        if normal is None:
            return False
        since, lost0, sent0 = normal
        lost, hours = 0, []
        for hour, lost_h, sent_h in self.loss_bins:
            if hour * 3600.0 >= since:
                lost += lost_h
                hours.append((lost_h / sent_h, lost_h, sent_h))
        if not hours or not sent0 or lost < p.loss_min_lost:
            return False
        before = max(lost0, 1) / sent0             # (no loss before: at most one packet's worth)
        # The loss the low runs met is the typical hour's (the median hour: a burst in an hour no
        # run saw slowed none), and that hour alone must lose significantly more than before.
        rate, lost_h, sent_h = sorted(hours)[(len(hours) - 1) // 2]
        if not lost_h or not poisson_tail_below(lost_h, before * sent_h, p.loss_alpha):
            return False
        return base * math.sqrt(before / rate) <= base - spread

    def _loss_at_normal(self, t: float) -> None:
        """Keep the latency tests' loss over ``loss_before_s`` up to a normal run at ``t``: the loss
        the path's normal rate went with (hours from the next one on are the loss after it)."""
        lost = sent = 0
        now = int(t // 3600.0) * 3600.0
        oldest = now - self.p.loss_before_s
        for hour, lost_h, sent_h in reversed(self.loss_bins):    # (hours in time order: newest first)
            start = hour * 3600.0
            if start < now:
                if start < oldest:
                    break                  # (this hour and all before it are older than loss_before_s)
                lost += lost_h
                sent += sent_h
        self.loss_normal = (now, lost, sent)

    def _count_loss(self, obs: LatencyObs) -> None:
        """Add a latency test's (lost, sent) to its hour's bin."""
        hour, bins = int(obs.t // 3600.0), self.loss_bins
        if bins and bins[-1][0] == hour:
            last = bins[-1]
            last[1] += obs.lost
            last[2] += obs.sent
        else:
            bins.append([hour, obs.lost, obs.sent])

    def _add_normal(self, run: ThroughputObs) -> None:
        self.tput.add(run.bps)
        self._loss_at_normal(run.t)
        self.normal_runs.append((run.retransmits or 0, run.rtt_ms))
        self.pace.add(run, self.p.tester_share)

    def _likely_cause(self, runs: list[ThroughputObs], base: float) -> dict:
        """The run-cause classifier's verdict on the low runs, and the rules', as evidence."""
        from pathwatch.models import run_cause

        rtts = [r for _, r in self.normal_runs if r]
        baseline = run_cause.Baseline(bps=base, retransmits=median(r for r, _ in self.normal_runs) if self.normal_runs else 0.0,
                                      rtt_ms=median(rtts) if rtts else None)
        rows = [run_cause.features(r, baseline) for r in runs]
        rules = [run_cause.rule_cause(row) for row in rows]
        facts = {"rule_cause": max(rules, key=rules.count)}    # (ties: the first, the same in every process)
        model = run_cause.shared_model() if self.p.cause_model else None
        if model is not None:
            causes = model.predict(rows)
            cause = max(causes, key=causes.count)
            facts["likely_cause"] = {"cause": cause, "share_of_runs": round(causes.count(cause) / len(causes), 2),
                                     "model": f"run_cause v{model.meta.get('version')}"}
        return facts

    def _window_bound(self, runs: list[ThroughputObs]) -> tuple[dict | None, list[ThroughputObs]]:
        """The window-limit evidence of the low ``runs`` and the runs it rests on: all of them, or
        the later ones when at most the first half are not window-bound (a congested run just
        before the limit began falls below the threshold too); (None, runs) when there is none."""
        for skip in range(len(runs) // 2 + 1):
            bound = runs[skip:]
            window = self._window_limit(bound) if len(bound) >= 2 or not skip else None
            if window is not None:
                return window, bound
        return None, runs

    def _window_limit(self, runs: list[ThroughputObs]) -> dict | None:
        """Evidence of a window limit when the low runs are flat (their median interval CV: one run
        disturbed by cross traffic, whose RTT moves a window-bound rate, does not undo it), too clean
        for loss to pace them, every one, and move a steady window (rate × RTT); else None."""
        p = self.p
        windows, rtts, cvs = [], [], []
        for run in runs:
            if run.rtt_ms is None or not loss_cannot_pace(run, p.window_retrans_max, p.window_loss_share):
                return None
            windows.append(run.bps * run.rtt_ms / 1000 / 8)
            rtts.append(run.rtt_ms)
            if run.interval_cv is not None:
                cvs.append(run.interval_cv)
        if 2 * len(cvs) < len(runs) or median(cvs) > p.window_cv_max:
            return None
        w = median(windows)
        if w <= 0 or window_spread(windows, w) > p.window_spread_max:
            return None
        return {"window_bytes": round(w), "rtt_ms": round(median(rtts), 3), "interval_cv": round(median(cvs), 4)}

    # ------------------------------------------------------------------ delay
    def _latency(self, obs: LatencyObs) -> list[Anomaly]:
        if obs.ok and obs.sent and obs.lost < obs.sent:
            self._count_loss(obs)          # (a dead path's probes are all lost: no rate to compare)
            low = obs.delay_min_ms
            if low is not None and obs.delay_p95_ms is not None and obs.delay_median_ms is not None:
                self.tails.add(obs.t, p95_ms=obs.delay_p95_ms - low, median_ms=obs.delay_median_ms - low,
                               lost=obs.lost, sent=obs.sent)
        value = obs.delay_min_ms
        if (not obs.ok or value is None or obs.sent == 0 or obs.lost >= obs.sent or value < 0
                or (obs.clock_error_ms or 0) > 50 or obs.synchronized is False):
            return []
        shift = self.delay
        p = self.p
        before, self.delay_last = self.delay_last, value
        before_t, self.delay_last_t = self.delay_last_t, obs.t
        if len(shift.base.values) < p.min_baseline:
            shift.add(value)
            return []
        base, threshold = shift.reference(p.k_mad, p.delay_abs_ms, p.delay_rel)
        bound = obs.clock_error_ms
        if bound is not None and bound > threshold and obs.one_way:
            threshold = bound               # a one-way delay moves within its clocks' error bound without the path
        direction = (value > base + threshold) - (value < base - threshold)
        if direction == 0 and not shift.pending and "latency_shift" not in self.episodes:
            shift.add(value)               # the usual sample: at the baseline, nothing pending
            if value < self.floor_low:
                self.floor_low = value
            if obs.t >= self.floor_until:
                self._floor_hour(obs.t)
            return []
        if self.is_open("latency_shift"):
            opened = self.episodes["latency_shift"]
            if direction != self.delay_dir and self._stepped_back(before, value, opened, obs):
                self.delay_daily.record(opened.start, obs.t, self.delay_dir, p, self._pending_size(base))
                return self._delay_reset(obs.t, "delay returned to its baseline")
            if obs.t - opened.start >= self.p.delay_settle_s and not self.context.busy.covers(obs.t, obs.t, p.daily_slack_s):
                # (not in a saturated path's busy hours: the new normal is taken from quiet hours)
                self.settled_from = (base, threshold)
                out = self._delay_reset(obs.t, "the new delay became the path's normal")
                shift.rebase(v for _, v in shift.pending[-self.p.baseline:])
                shift.pending.clear()
                return out
            shift.pending.append((obs.t, value))
            return []
        # After a silence, what the delay did in it is unknown: a change pending before it starts
        # again (the silence is no time it was seen to stay), and none is told to step across it.
        silent = before_t is not None and obs.t - before_t > p.delay_gap_s
        if direction == 0 or silent or (shift.pending and direction != self.delay_dir):
            pending = shift.pending
            if not silent and len(pending) >= p.delay_runs and pending[-1][0] - pending[0][0] >= p.delay_span_s:
                self.delay_daily.record(pending[0][0], obs.t, self.delay_dir, p, self._pending_size(base))   # (came back)
                self._floor_forgotten()
            pending.clear()
            self.delay_held = False
            if direction == 0:
                shift.add(value)
                return []
        self.delay_dir = direction
        if not shift.pending:
            self.delay_from = math.nan if silent else before
        shift.pending.append((obs.t, value))
        first_t = shift.pending[0][0]
        if len(shift.pending) < self.p.delay_runs or obs.t - first_t < self.p.delay_span_s:
            return []
        size = abs(value - base)
        if self.delay_daily.explains(first_t, obs.t, direction, p, size) or (
                direction > 0 and self.context.busy.covers(first_t, obs.t, p.daily_slack_s)
                and size <= p.daily_factor * self.delay_daily.largest(direction)):
            self.delay_held = True
            return []       # the hours it rose at a day before, come back since, or the busy hours' queue
        if self.delay_held:    # outlasted the daily pattern it began as: the level is what stays after it
            level = median(v for t, v in shift.pending if t >= obs.t - 2 * p.delay_span_s)
        else:
            level = median(v for _, v in shift.pending)
        if direction < 0 and level >= min(self.floor_low, min(self.floor_lows, default=self.floor_low)) - threshold:
            # Down to where its floor was within the last delay_floor_s, its baseline having crept up
            # since without a step: a queue that drained, the path's own floor, not a shift. The
            # baseline follows.
            self._pending_is_normal()
            return []
        if self.settled_from is not None and abs(level - self.settled_from[0]) <= self.settled_from[1]:
            # Back to the level it had before a shift that settled in: the old normal, not a new shift.
            self._pending_is_normal()
            self.settled_from = None
            return []
        if not self.delay_held and not self._stepped(base, level, direction, obs):
            if obs.t - first_t < p.delay_creep_s:
                return []   # a floor that crept past the threshold (a queue building) until it outlasts a day
                #             (one that outlasted the daily pattern it began as shows it persists instead)
            day = [v for t, v in shift.pending if t >= obs.t - p.delay_creep_s]
            if mad(day, level) > threshold:
                # Outlasted a day but never held a level: a queue still swinging with the day that
                # no longer drains under the threshold. Where its floor stands now is the normal.
                self._pending_is_normal()
                return []
        if abs(level - base) <= self._clocks_may_move(obs):
            # What stays is within what the clocks may move a one-way delay: their new offset (an
            # NTP correction, a slew), the path's normal. The baseline follows.
            self._pending_is_normal()
            return []
        if self.context.route_moves.near(first_t, obs.t, direction, p.route_slack_s):
            # The path's route moved as the delay stepped: a new propagation path, the route
            # change's own consequence, not a shift of unknown cause. Its delay is the new normal;
            # the old one coming back (the route reverting) is the old normal again.
            self.settled_from = (base, threshold)
            self._pending_is_normal()
            self._floor_forgotten()
            return []
        shift.frozen = (base, threshold)
        self._floor_forgotten()
        step = level - base
        what = "one-way delay" if obs.one_way else "RTT"
        return self.open(
            "latency_shift", start=first_t, at=obs.t,
            severity=severity_for(abs(step) / max(base, 1.0), 0.0, 0.25, 1.0),
            score=min(1.0, abs(step) / max(threshold, 1e-9) / 4),
            summary=f"Minimum {what} shifted {step:+.1f} ms (from {base:.1f} to {level:.1f} ms).",
            evidence={"baseline_ms": round(base, 3), "level_ms": round(level, 3), "step_ms": round(step, 3),
                      "threshold_ms": round(threshold, 3), "samples": len(shift.pending), "one_way": obs.one_way},
        )

    def _stepped(self, base: float, level: float, direction: int, obs: LatencyObs) -> bool:
        """Whether the pending delay change came as a step: from the sample before it, at least
        ``delay_jump_share`` of its size (``level`` - ``base``) in one sample interval, and for a
        one-way delay more than twice the clocks' error bound: each of the two samples may be off
        by the bound, either way (an NTP step from one end of it to the other moves that much).

        A propagation change (a longer fibre, another path through the same routers) moves every
        packet's delay at once; a queue fills, and its floor creeps past any threshold a little
        per sample.
        """
        before = self.delay_from
        if before is None:
            return True
        if math.isnan(before):
            return False    # the path was silent before it: whether the delay stepped or crept is unknown
        return self._a_step(direction * (self.delay.pending[0][1] - before), direction * (level - base), obs)

    def _stepped_back(self, before: float | None, value: float, opened: Anomaly, obs: LatencyObs) -> bool:
        """Whether the delay came back from the open shift ``opened`` as a step (see :meth:`_stepped`):
        a route or a fibre reverts at once; a queue on the new path creeps up past the old level."""
        if before is None:
            return True
        size = abs(opened.evidence["level_ms"] - opened.evidence["baseline_ms"])
        return self._a_step(-self.delay_dir * (value - before), size, obs)

    def _a_step(self, jump: float, size: float, obs: LatencyObs) -> bool:
        """Whether a move of ``jump`` between two samples (towards the change) makes a step of a
        change of ``size``: ``delay_jump_share`` of it at least, and more than the clocks may move."""
        return jump >= self.p.delay_jump_share * size and jump > self._clocks_may_move(obs)

    @staticmethod
    def _clocks_may_move(obs: LatencyObs) -> float:
        """How far the clocks may move a delay between two samples: twice their error bound for a
        one-way delay (each sample off by up to the bound, either way), nothing for an RTT."""
        return 2 * (obs.clock_error_ms or 0.0) if obs.one_way else 0.0

    def _pending_is_normal(self) -> None:
        """The pending delays are the path's normal now: the baseline takes the latest of them,
        and nothing is pending."""
        shift = self.delay
        shift.rebase(v for _, v in shift.pending[-self.p.baseline:])
        shift.pending.clear()
        self.delay_dir, self.delay_held = 0, False

    def _pending_size(self, base: float) -> float:
        """How far the pending delays went from ``base`` at most."""
        return max(abs(v - base) for _, v in self.delay.pending) if self.delay.pending else 0.0

    def _floor_forgotten(self) -> None:
        """Forget the recent floor: the delay moved by a step since (a shift, a change that came
        back), so falling back to it is no longer a queue draining where the baseline crept up."""
        self.floor_lows.clear()
        self.floor_low = float("inf")

    def _floor_hour(self, t: float) -> None:
        """Keep the hour's lowest normal delay among the last ``delay_floor_s`` of them; start the next."""
        lows = self.floor_lows
        lows.append(self.floor_low)
        while len(lows) > self.p.delay_floor_s / 3600.0:
            lows.popleft()
        self.floor_low, self.floor_until = float("inf"), (t // 3600.0 + 1) * 3600.0

    def _delay_reset(self, t: float, why: str) -> list[Anomaly]:
        self.delay.frozen = None
        self.delay.pending.clear()
        self.delay_dir, self.delay_held = 0, False
        return self.close("latency_shift", t, {"ended": why})
