"""diurnal_saturation: the same busy hours every day, with throughput in a trough.

Every ``every_s`` the last ``window_days`` of throughput runs are searched for the hour-of-day
window (``widths`` hours wide, any start) whose runs sit lowest against the rest of the day. It
is saturation when that trough is deep (``depth`` below the rest), significant (one-sided
Mann–Whitney), and there on at least ``min_days`` separate days — a mild daily swing, one bad
afternoon or a level drop do not qualify. A day shows the trough when its busy-hour runs are low
(at least half of them, not their average) *and the runs after the busy hours are back up* (a
level drop, a window limit setting in, stays down), and the trough repeats: every day since the
first that has runs in the busy hours shows it (a few runs that collapse at random — a bad LAG
member — fall into some day's busy hours by chance, seldom into every day's). A window that
holds only one run a day (``sparse_min_in``) is searched when none of ``min_in`` runs shows a
trough, and counts only with latency tests that agree and on ``sparse_min_days`` days: one run is
a sample of one, and a run that a burst of cross traffic or a busy host slowed lands in the same
three hours on two days in a row far more often than on three (on a path whose benign standing
queue, in those hours, corroborates any trough there). A run its own window held counts at the
rate its window moves at the path's lowest RTT (:meth:`DiurnalDetector._share`): in a queue's
hours a window-bound rate falls with the round trips alone, which the latency tests measure.

Saturation is a full queue: where the path has latency tests in and outside those hours, their
typical queueing delay or loss (medians) must rise in the busy hours too, significantly (one-sided
Mann–Whitney), for the episode to open — runs collapsing on a bad LAG member, or a host busy at
those hours, leave the queue alone; both are reported as corroboration. Paths without throughput
tests, or whose runs are too few a day for every busy window to hold one (runs every 6 hours may
never fall into the busy hours), are judged on the latency tests' queueing alone: the samples'
95th percentile above the minimum delay, a busy-hour rise of ``queue_rise_ms`` and
``queue_factor`` times the rest — with the typical queueing (median), the loss or the delay floor
rising in those hours too (below): a tail that grows alone while the typical delay and the loss
stay is a loaded host's tell (:class:`pathwatch.models.pace.HostTails`: a busy CPU stamps and sends
a few packets late), where a full queue delays most packets or drops them. A path with no
throughput tests at all is judged on its delay itself too (:meth:`DiurnalDetector._delay_rise`):
the minimum delay higher in the same hours every day by the path's significance. It closes once
``quiet_days`` whole days pass without the trough.

A standing queue — one that never drains in the busy hours — delays every packet: the latency
tests' delay floor rising in the busy hours corroborates too. The open episode is one problem
growing: re-emitted (the same id) on each day its trough is seen again, with the days seen, its
depth and the busy hours' queueing, loss and floor, and its busy hours are written to
the path's context (:class:`pathwatch.models.context.BusyHours`) for its other detectors, whose delay rises, loss and
troughs within them are its symptoms, not new problems.

Runs their own host paced (:mod:`pathwatch.models.pace`: uneven per second, no more retransmits
than usual — a host short of CPU) are left out: a host busy at some hours slows its runs without
any queue on the path. So are runs whose start stalls as in an MTU black hole (near-silence that
retransmits, and the run crawling on: :mod:`pathwatch.models.stall`), but not a slow start's slow
first seconds on a long fat path nor a busy hour's lossy start, which are the trough's own runs.
"""

from __future__ import annotations

import math
import sys
from collections import deque
from dataclasses import dataclass

import numpy as np

from pathwatch.models.anomaly import SEVERITIES, Anomaly
from pathwatch.models.base import Detector, severity_for
from pathwatch.models.params import Params
from pathwatch.models.observe import LatencyObs, ThroughputObs
from pathwatch.models.pace import HostPace
from pathwatch.models.significance import mannwhitney_pvalue
from pathwatch.models.tcp import bytes_in_flight, window_held

DAY = 86400.0


@dataclass(frozen=True)
class DiurnalParams(Params):
    window_days: float = 3.0
    every_s: float = 4 * 3600.0    # how often the search runs
    depth: float = 0.3             # busy-hour median at least this far below the rest of the day
    min_days: int = 2              # separate days that show the trough
    min_in: int = 4                # runs inside the window needed ...
    sparse_min_in: int = 3         # ... or, when no such window shows a trough, this many (a busy
                                   # window of 3 hours holds one run a day at a 2-hour cadence),
                                   # then only with latency tests that see the queue rise too ...
    sparse_min_days: int = 3       # ... and on this many days to open (one run a day is a sample of one)
    alpha: float = 1e-3            # Mann-Whitney level
    major_depth: float = 0.5       # severity: a trough this deep (a rise this share of the rest) is major ...
    critical_depth: float = 0.8    # ... and this deep critical; shallower ones are warnings
    queue_seen_ms: float = 0.5     # busy-hour queueing, or a delay floor above its flanks, this much higher at
                                   # least shows a queue (owamp reports tenths of a ms; NTP moves a one-way delay by tenths)
    quiet_days: int = 2
    queue_rise_ms: float = 1.5     # judged on queueing: busy-hour queueing rise ...
    queue_factor: float = 3.0      # ... and ratio to the rest of the day
    host_runs: int = 24            # usual runs kept to tell runs their own host paced (the context's host_*) ...
    host_min_runs: int = 6         # ... and needed before judging


WIDTHS = (3, 4, 5, 6, 8)


def window_medians(t: np.ndarray, x: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """For every window of ``WIDTHS`` hours starting on any hour: (values inside, median inside,
    median outside). A median over no values is meaningless (:func:`busy_window` skips those).

    Each row's median is found from its running count of chosen values, in sorted order: where
    it first reaches the middle ranks (for all rows at once, by one ``searchsorted`` on the
    counts, each row lifted above the one before; a rank no count reaches is taken at index 0).

    >>> n_in, m_in, m_out = window_medians(np.array([0.5, 1.5, 5.5, 9.5]) * 3600, np.array([1.0, 2.0, 8.0, 9.0]))
    >>> int(n_in[0]), float(m_in[0]), float(m_out[0])
    (2, 1.5, 8.5)
    """
    size, windows = len(x), len(_STARTS)
    if not size:
        nothing = np.full(windows, np.nan)
        return np.zeros(windows, dtype=int), nothing, nothing
    order = np.argsort(x, kind="stable")
    xs, hours = x[order], (t[order] % DAY) / 3600.0
    lag = hours[None, :] - _HOURS[:, None]                      # (the 24 starts; the same float operations)
    offsets = np.where(lag < 0, lag + 24, lag)                  # (lag % 24 for a lag within ±24: the same floats)
    ranks = np.empty((2 * windows, size), dtype=np.int64)       # inside rows, then outside rows
    # (offsets[_STARTS] < _WIDTHS[:, None]: each width against the 24 starts, rows in that order)
    np.cumsum((offsets[None, :, :] < _WIDTHS_3D).reshape(windows, size), axis=1, out=ranks[:windows])
    np.subtract(np.arange(1, size + 1), ranks[:windows], out=ranks[windows:])
    counts = ranks[:, -1].copy()
    lift = _ROWS * (size + 1)
    ranks += lift[:, None]                                      # (lifted in place: no second array)
    lifted = ranks.ravel()
    low = np.searchsorted(lifted, (counts + 1) // 2 + lift) - _ROWS * size
    high = np.searchsorted(lifted, counts // 2 + 1 + lift) - _ROWS * size
    low[low >= size] = 0                                        # (no such rank: argmax's 0)
    high[high >= size] = 0
    medians = (xs[low] + xs[high]) / 2
    return counts[:windows], medians[:windows], medians[windows:]


def busy_window(t: np.ndarray, x: np.ndarray, lower_is_worse: bool, min_in: int,
                medians: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None) -> tuple[int, int, float] | None:
    """(start hour, width, depth) of the hour-of-day window where ``x`` is worst against the rest.

    Depth is 1 − in/out of the medians when lower is worse (throughput), in/out − 1 otherwise;
    every window of ``WIDTHS`` hours starting on any hour holding at least ``min_in`` values (and
    twice as many outside) is tried at once. ``medians`` is :func:`window_medians` of ``t`` and
    ``x`` when the caller has it (it depends on neither ``min_in`` nor ``lower_is_worse``).
    """
    n_in, m_in, m_out = medians if medians is not None else window_medians(t, x)
    usable = (n_in >= min_in) & (len(x) - n_in >= 2 * min_in)
    if not usable.any():
        return None
    m_in, m_out = m_in[usable], m_out[usable]
    valid = m_out > 0
    if not valid.any():
        return None
    ratio = np.where(valid, m_in / np.where(valid, m_out, 1.0), np.nan)
    depth = 1 - ratio if lower_is_worse else ratio - 1
    best = int(np.nanargmax(depth))
    index = np.flatnonzero(usable)[best]
    return int(_STARTS[index]), int(_WIDTHS[index]), float(depth[best])


_WIDTHS = np.repeat(np.array(WIDTHS), 24)
_STARTS = np.tile(np.arange(24), len(WIDTHS))
_WIDTHS_3D = np.array(WIDTHS)[:, None, None]
_HOURS = np.arange(24)
_ROWS = np.arange(2 * len(_STARTS))


def floor_over_flanks(t: np.ndarray, floor: np.ndarray, start: float, width: float) -> tuple[np.ndarray, np.ndarray]:
    """The delay floor in each day's busy hours and in the ``width`` hours on either side of them,
    each less the straight line through the two flanks' medians that day: (busy residuals, flank
    residuals). A standing queue lifts the busy hours above both flanks; a clock that drifts or
    steps moves the floor along a line or once, not up and back down, and leaves no residual rise.

    >>> t = np.arange(0.0, 3 * DAY, 600.0)
    >>> drift = 0.7 * t / 3600.0                         # a clock drifting 0.7 ms an hour
    >>> busy, flanks = floor_over_flanks(t, drift, 12, 3)
    >>> round(float(np.median(busy) - np.median(flanks)), 6)
    0.0
    >>> queue = drift + 8.0 * ((((t % DAY) / 3600.0) - 12) % 24 < 3)   # ... and a standing queue 12-15 h
    >>> busy, flanks = floor_over_flanks(t, queue, 12, 3)
    >>> round(float(np.median(busy) - np.median(flanks)), 6)
    8.0
    """
    width = min(width, 8.0)            # (flanks of up to 8 h, the busy hours' own length)
    hours = (((t % DAY) / 3600.0) - start) % 24
    day = np.floor((t - start * 3600.0) / DAY)
    busy_out, flank_out = [], []
    for d in np.unique(day[hours < width]):
        inside = (day == d) & (hours < width)
        before = (day == d - 1) & (hours >= 24 - width)
        after = (day == d) & (hours >= width) & (hours < 2 * width)
        if not before.any() or not after.any():
            continue
        tb, ta = float(np.median(t[before])), float(np.median(t[after]))
        fb, fa = float(np.median(floor[before])), float(np.median(floor[after]))
        slope = (fa - fb) / (ta - tb)
        busy_out.append(floor[inside] - (fb + slope * (t[inside] - tb)))
        flanks = before | after
        flank_out.append(floor[flanks] - (fb + slope * (t[flanks] - tb)))
    if not busy_out:
        return np.empty(0), np.empty(0)
    return np.concatenate(busy_out), np.concatenate(flank_out)


def _most(values: np.ndarray, lower_is_worse: bool) -> float:
    """The value at least half of ``values`` are as bad as: the upper median when lower is worse.

    >>> _most(np.array([181.0, 6089.0]), True), _most(np.array([1.0, 5.0, 6.0]), False)
    (6089.0, 5.0)
    """
    ordered = np.sort(values)
    return float(ordered[len(ordered) // 2] if lower_is_worse else ordered[(len(ordered) - 1) // 2])


def depth_bound(sorted_x: list[float], lower_is_worse: bool, min_in: int, enough: float = math.inf) -> float:
    """The deepest trough :func:`busy_window` could find in these values, whatever their hours, or
    the first depth found that reaches ``enough`` (whether the deepest reaches it is then
    answered the same).

    A window holding ``n`` values has an inside median no lower than the median of the ``n``
    smallest values and an outside median no higher than that of the others (mirrored when
    higher is worse); rounding keeps both orders, so the depth it computes never exceeds this.
    Only for positive values (``inf`` when they are not, or hold a NaN: no bound). One window
    size at a time, deepest so far kept (a NaN depth, of infinite values, is never the deepest).

    >>> depth_bound([1.0, 1.0, 1.0, 1.0, 1.0, 1.0], True, 2), depth_bound([0.5, 1.0, 1.0, 1.0, 1.0, 1.0], True, 2)
    (0.0, 0.25)
    """
    size = len(sorted_x)
    if not size or not sorted_x[0] > 0 or _holds_nan(sorted_x):
        return math.inf
    best = -math.inf
    for n_in in range(min_in, size - 2 * min_in + 1):
        n_out = size - n_in
        if lower_is_worse:
            m_in = (sorted_x[(n_in + 1) // 2 - 1] + sorted_x[n_in // 2]) / 2
            m_out = (sorted_x[n_in + (n_out + 1) // 2 - 1] + sorted_x[n_in + n_out // 2]) / 2
            depth = 1 - m_in / m_out
        else:
            m_in = (sorted_x[n_out + (n_in + 1) // 2 - 1] + sorted_x[n_out + n_in // 2]) / 2
            m_out = (sorted_x[(n_out + 1) // 2 - 1] + sorted_x[n_out // 2]) / 2
            depth = m_in / m_out - 1
        if depth > best:
            best = depth
            if best >= enough:
                return best
    return best


def _holds_nan(values: list) -> bool:
    """``any(v != v for v in values)``, asked only when their sum is a NaN (no NaN, no NaN sum)."""
    try:
        total = sum(values)
    except OverflowError:                   # (an integer too large for a float)
        total = math.nan
    return total != total and any(v != v for v in values)


_HALF_MAX = sys.float_info.max / 2


def rough_depth_bound(sorted_x: list[float], lower_is_worse: bool, min_in: int) -> float:
    """No lower than :func:`depth_bound`, from two values: every window size's inside median is
    no lower than the ``(min_in + 1) // 2``-th smallest value and its outside median no higher
    than the ``min_in``-th largest (mirrored when higher is worse). ``inf`` where depth_bound has
    no bound or its search is empty.

    >>> rough_depth_bound([1.0, 5.0, 6.0, 6.0, 6.0, 6.0, 6.0, 9.0, 10.0], True, 3), depth_bound([1.0, 5.0, 6.0, 6.0, 6.0, 6.0, 6.0, 9.0, 10.0], True, 3)
    (0.16666666666666663, 0.16666666666666663)
    """
    size = len(sorted_x)
    if size < 3 * min_in or not sorted_x[0] > 0 or not sorted_x[-1] < _HALF_MAX:
        return math.inf                     # (a median of two huge values may overflow to inf)
    total = sum(sorted_x)
    if total != total:                      # (a NaN among positive values)
        return math.inf
    if lower_is_worse:
        return 1 - sorted_x[(min_in + 1) // 2 - 1] / sorted_x[size - min_in]
    return sorted_x[size - (min_in + 1) // 2] / sorted_x[min_in - 1] - 1


class DiurnalDetector(Detector):
    name = "diurnal"
    kinds = ("diurnal_saturation",)
    reads = (ThroughputObs, LatencyObs)
    Params = DiurnalParams

    def __init__(self, source, destination, params=None, context=None):
        super().__init__(source, destination, params, context)
        self.runs: deque[tuple[float, float]] = deque()
        # (t, median − min delay, loss, 95th percentile − min delay, min delay): the queue a sample met
        self.queue: deque[tuple[float, float, float, float, float]] = deque()
        self.next_check: float | None = None
        self.window: tuple[int, int] | None = None
        self.last_trough_day: int | None = None
        self.days_seen = 0                    # days the open episode's trough was seen on
        self.pace = HostPace(self.p.host_runs)   # the path's usual runs' evenness and retransmits
        self.rtt_low = math.inf               # the lowest RTT of the path's runs: a window-bound run is counted at it
        self.ran = False                      # whether the path has throughput tests at all
        # (t, minimum delay, clocks' error bound) of each delay series (one-way: True, round trip:
        # False), kept while the path has no throughput tests: a daily rise is judged on the delay
        self.delays: dict[bool, deque[tuple[float, float, float]]] = {False: deque(), True: deque()}

    def observe(self, obs) -> list[Anomaly]:
        if isinstance(obs, ThroughputObs):
            return self._observe_run(obs)
        return self._observe_latency(obs)

    def handlers(self) -> dict[type, object]:
        return {ThroughputObs: self._observe_run, LatencyObs: self._observe_latency}

    def _observe_run(self, obs: ThroughputObs) -> list[Anomaly]:
        p = self.p
        if not self.ran:
            self.ran = True                   # (the runs say whether the link is full: see _delay_rise)
            for series in self.delays.values():
                series.clear()
        if obs.ok and not obs.udp and obs.bps and not self.context.stalls.black_hole(obs):
            c = self.context.p
            if not self.pace.paced(obs, c.host_cv_factor, c.host_cv_min, c.host_retrans_quantile, p.host_min_runs):
                self.runs.append((obs.t, self._share(obs)))
                self.pace.add(obs, c.tester_share)
        return self._advance(obs.t)

    def _share(self, run: ThroughputObs) -> float:
        """The rate ``run`` shows the path giving a flow: its own, or, for a run its window held
        (it kept a window iperf3 reports in flight every round trip, too clean for loss to pace
        it), what that window moves at the path's lowest RTT of runs.

        A window-bound rate is W / RTT: in a queue's hours it falls with the round trips alone
        (the untuned host's 256 kB over 28 ms, then 42 ms: a third less) while the flow keeps all
        it may in flight — a standing queue on a link with room for it, which the latency tests
        measure directly. What a saturated link takes from such a flow is its window: loss that
        cuts it (the run retransmits, no longer clean) and a rate below W / RTT.

        >>> d = DiurnalDetector("a", "b")
        >>> quiet = ThroughputObs(0.0, True, None, 75.4e6, 0, 27.3, 257_300, 8948, 10.0, 1, False, 0.0, 0.01, 0)
        >>> busy = ThroughputObs(7200.0, True, None, 49.5e6, 0, 41.8, 257_300, 8948, 10.0, 1, False, 0.0, 0.01, 0)
        >>> round(d._share(quiet) / 1e6, 1), round(d._share(busy) / 1e6, 1)   # the same window: no trough
        (75.4, 75.8)
        """
        if run.rtt_ms:
            self.rtt_low = min(self.rtt_low, run.rtt_min_ms or run.rtt_ms)
        if window_held(run, self.context.p):
            return bytes_in_flight(run)[0] * 8000.0 / self.rtt_low
        return run.bps

    def _observe_latency(self, obs: LatencyObs) -> list[Anomaly]:
        t, low, middle = obs.t, obs.delay_min_ms, obs.delay_median_ms
        if obs.ok and obs.sent and obs.lost < obs.sent and low is not None and middle is not None:
            queued = middle - low
            tail = obs.delay_p95_ms - low if obs.delay_p95_ms is not None else queued
            self.queue.append((t, queued, obs.loss or 0.0, tail, low))
        if (not self.ran and obs.ok and obs.sent and obs.lost < obs.sent and low is not None and low >= 0
                and self.context.clocks_usable(obs)):
            self.delays[obs.one_way].append((t, low, obs.clock_error_ms or 0.0))
        return self._advance(t)

    def _advance(self, t: float) -> list[Anomaly]:
        """Drop values older than the window; search for the trough when a check is due."""
        p = self.p
        horizon = t - p.window_days * DAY
        runs, queue = self.runs, self.queue
        while runs and runs[0][0] < horizon:
            runs.popleft()
        while queue and queue[0][0] < horizon:
            queue.popleft()
        for series in self.delays.values():
            while series and series[0][0] < horizon:
                series.popleft()
        if self.next_check is None:
            self.next_check = t + p.every_s
        if t < self.next_check:
            return []
        self.next_check = t + p.every_s
        return self._check(t)

    def _check(self, now: float) -> list[Anomaly]:
        found = self._trough()
        if self.is_open("diurnal_saturation"):
            if found is not None:
                day = int(found["last_day"])
                if self.last_trough_day is None or day > self.last_trough_day:
                    self.last_trough_day = day
                    return self._seen_again(found)
            elif self.last_trough_day is not None and now // DAY - self.last_trough_day > self.p.quiet_days:
                start, width = self.window
                end = self.last_trough_day * DAY + (start + width) * 3600.0
                self.window = self.last_trough_day = self.context.busy.window = None
                return self.close("diurnal_saturation", end, {"ended": "no busy-hour trough for whole days"})
            return []
        if found is None:
            return []
        self.window = self.context.busy.window = (found["start_hour"], found["width_h"])
        self.last_trough_day = int(found["last_day"])
        self.days_seen = int(found["days"])
        start, width = self.window
        busy = f"{start:02d}:00–{(start + width) % 24:02d}:00 UTC"
        if found["signal"] == "throughput":
            what = f"throughput {100 * found['depth']:.0f} % below the rest of the day"
        elif found["signal"] == "delay":
            what = (f"minimum {'one-way delay' if found['one_way'] else 'RTT'} {found['busy_delay_ms']:.1f} ms vs "
                    f"{found['other_delay_ms']:.1f} ms ({found['rise_ms']:+.1f} ms; no throughput tests on the path "
                    f"to say whether the link is full)")
        else:
            what = f"95th-percentile queueing delay {found['busy_queue_ms']:.1f} ms vs {found['other_queue_ms']:.1f} ms"
        return self.open(
            "diurnal_saturation", start=found["first_t"], at=now,
            severity=severity_for(found["depth"], 0.0, self.p.major_depth, self.p.critical_depth), score=min(1.0, found["depth"] + 0.3),
            summary=f"{'Daily delay rise' if found['signal'] == 'delay' else 'Daily saturation'} {busy}: {what} "
                    f"on {found['days']} days.",
            evidence={k: v for k, v in found.items() if k not in ("first_t", "last_day")} | {"busy_hours_utc": busy},
        )

    def _seen_again(self, found: dict) -> list[Anomaly]:
        """The open episode re-emitted (the same id) on a day its trough is seen again: the same
        saturation growing — days seen, the trough's depth, the busy hours' queueing and loss —
        rather than a new problem each afternoon."""
        self.days_seen += 1
        current = self.episodes["diurnal_saturation"]
        start, width = self.window
        facts = {k: v for k, v in found.items() if k not in ("first_t", "last_day", "start_hour", "width_h", "days")}
        evidence = {**current.evidence, **facts, **self._corroboration(start, width),
                    "days_seen": self.days_seen}
        severity = max(current.severity, severity_for(found["depth"], 0.0, self.p.major_depth, self.p.critical_depth), key=SEVERITIES.index)
        head = current.summary.split(" Seen on ")[0]
        grown = current.grown(severity=severity, score=max(current.score, min(1.0, found["depth"] + 0.3)),
                              summary=f"{head} Seen on {self.days_seen} days.", evidence=evidence)
        self.episodes["diurnal_saturation"] = grown
        return [grown]

    def _trough(self) -> dict | None:
        p = self.p
        fewest = min(p.min_in, p.sparse_min_in)
        if (len(self.runs) >= 3 * fewest
                and self._may_qualify(self.runs, [r[1] for r in self.runs], lower_is_worse=True, min_in=fewest)):
            t = np.array([r[0] for r in self.runs])
            x = np.array([r[1] for r in self.runs])
            medians = window_medians(t, x)      # (shared by both searches)
            # the deepest window of min_in runs first; the deepest of fewer when that shows no trough
            if self._deep_enough(t, x, medians, fewest):
                for min_in in dict.fromkeys((p.min_in, p.sparse_min_in)):
                    found = self._judge(t, x, lower_is_worse=True, signal="throughput", min_in=min_in, medians=medians)
                    if found is not None:
                        return found
        # No throughput runs, or too few a day for every busy window to hold one (every 6 hours they
        # may never fall into the busy hours): the latency tests' queueing, which runs far more often
        if len(self.queue) >= 6 * p.min_in and not self._runs_cover_the_day():
            # the 95th percentile: a queue that half the packets meet hardly moves the median
            tails = [(q[3] if len(q) > 3 else q[1]) + 0.1 for q in self.queue]   # (+0.1 ms keeps ratios finite)
            if self._may_qualify(self.queue, list(tails), lower_is_worse=False, min_in=p.min_in):
                t = np.array([q[0] for q in self.queue])
                found = self._judge(t, np.array(tails), lower_is_worse=False, signal="queueing", min_in=p.min_in)
                if found is not None:
                    return found
        if not self.ran:
            for one_way in (False, True):
                found = self._delay_rise(one_way)
                if found is not None:
                    return found
        return None

    def _delay_rise(self, one_way: bool) -> dict | None:
        """A daily rise of a delay series itself, on a path with no throughput tests (ping, owamp or
        RIPE Atlas alone): the minimum delay higher in the same hours every day, by at least the
        path's significance (the context's: 5 ms and 10 % for a round trip), and back down after.

        Every packet waiting longer in those hours, and only in those, is a queue that stands
        through them: load that follows the clock. Throughput tests are what tell a full link
        (their runs lose their share) from a queue on a link with room for them (they keep it):
        where a path has them, they decide (a delay rise alone only corroborates); without them the
        recurring rise is all there is to see, and what a user of a ping mesh wants named once, with
        its hours and size, rather than as a change every evening. A one-way rise must also exceed
        twice the clocks' typical error bound (a clock's oscillator may follow the day's temperature)."""
        series = self.delays[one_way]
        if len(series) < 6 * self.p.min_in or series[-1][0] - series[0][0] < (self.p.min_days - 0.5) * DAY:
            return None
        t = np.array([v[0] for v in series])
        x = np.array([v[1] for v in series])
        ms, share = self.context.significance(one_way)
        if one_way:
            ms = max(ms, 2 * float(np.median([v[2] for v in series])))
        found = self._judge(t, x, lower_is_worse=False, signal="delay", min_in=self.p.min_in, significance=(ms, share))
        if found is not None:
            found["one_way"] = one_way
        return found

    def _deep_enough(self, t: np.ndarray, x: np.ndarray, medians: tuple, min_in: int) -> bool:
        """False when no window of at least ``min_in`` runs is ``depth`` deep, so that :meth:`_judge`
        finds no throughput trough for ``min_in`` or more (their windows are among these). Finite
        runs only (a NaN depth may be the only one of fewer windows): True otherwise, undecided."""
        if not (np.abs(x) < _HALF_MAX).all():    # (NaNs, infinities, medians that may overflow)
            if not np.isfinite(x).all():
                return True
            found = busy_window(t, x, True, min_in, medians)
            return found is not None and found[2] >= self.p.depth
        # (busy_window's deepest window reaching depth, without picking it: is any usable window's
        # depth, 1 - in/out of their medians, that deep? None is NaN here)
        n_in, m_in, m_out = medians
        usable = (n_in >= min_in) & (len(x) - n_in >= 2 * min_in) & (m_out > 0)
        return bool((1 - m_in[usable] / m_out[usable] >= self.p.depth).any())

    def _runs_cover_the_day(self) -> bool:
        """Whether throughput runs come often enough that the narrowest busy window holds one a day."""
        runs = self.runs
        if len(runs) < 2:
            return False
        per_day = (len(runs) - 1) / max(runs[-1][0] - runs[0][0], 1.0) * DAY
        return per_day >= 24 / min(WIDTHS)

    def _may_qualify(self, series: deque, x: list[float], *, lower_is_worse: bool, min_in: int) -> bool:
        """False when :meth:`_judge` is sure to find nothing: too short a span, or no window deep enough."""
        p = self.p
        if series[-1][0] - series[0][0] < (p.min_days - 0.5) * DAY:
            return False
        x.sort()
        needed = p.depth if lower_is_worse else p.queue_factor - 1
        return rough_depth_bound(x, lower_is_worse, min_in) >= needed and depth_bound(x, lower_is_worse, min_in, needed) >= needed

    def _judge(self, t: np.ndarray, x: np.ndarray, *, lower_is_worse: bool, signal: str, min_in: int,
               medians: tuple | None = None, significance: tuple[float, float] | None = None) -> dict | None:
        """The busy window's facts when ``x`` shows a daily trough (``lower_is_worse``: throughput)
        or rise in it, else None. A rise is judged on queueing (``queue_rise_ms``, ``queue_factor``)
        or, given a ``significance`` (ms, share of the rest of the day), on the delay itself."""
        p = self.p
        if t[-1] - t[0] < (p.min_days - 0.5) * DAY:
            return None
        found = busy_window(t, x, lower_is_worse, min_in, medians)
        if found is None:
            return None
        start, width, depth = found
        inside = (((t % DAY) / 3600.0 - start) % 24) < width
        if lower_is_worse and depth < p.depth:
            return None
        x_in, x_out = x[inside], x[~inside]
        m_out = np.median(x_out)
        if significance is not None:
            # the rise a user calls a change: the larger of the significance's ms and share
            needed = max(significance[0], significance[1] * m_out) / m_out
            if depth < needed:
                return None
        elif not lower_is_worse and (np.median(x_in) - m_out < p.queue_rise_ms or depth < p.queue_factor - 1):
            return None
        else:
            needed = p.depth if lower_is_worse else p.queue_factor - 1
        needed *= 0.75                          # (each day's, and the way back down, against three quarters of it)

        def low(sel: np.ndarray) -> bool:
            # most of the day's busy-hour runs, not their average: one run that collapsed (a bad
            # LAG member) beside a normal one is no trough
            ratio = _most(x[sel], lower_is_worse) / m_out
            return (1 - ratio if lower_is_worse else ratio - 1) >= needed

        # One busy period a day: number them from the window's start hour (a window may span midnight).
        days = np.floor((t - start * 3600.0) / DAY).astype(int)
        back_up = (1 - x / m_out if lower_is_worse else x / m_out - 1) < needed    # each run on its own
        trough_days, normal_days = [], []
        for day in np.unique(days[inside]):
            sel = inside & (days == day)
            if not low(sel):
                normal_days.append(int(day))
                continue
            # the dip comes back: a run within the widest window's hours after it is back up
            end = day * DAY + (start + width) * 3600.0
            after = (t >= end) & (t < end + max(WIDTHS) * 3600.0)
            if after.any():                     # (none yet: the day is still pending)
                (trough_days if back_up[after].any() else normal_days).append(int(day))
        if len(trough_days) < p.min_days:
            return None
        if min_in < p.min_in and not self.is_open("diurnal_saturation") and len(trough_days) < p.sparse_min_days:
            return None     # one run a day: chance lows land in the same hours on two days far more often than on three
        if not self.is_open("diurnal_saturation") and any(day > trough_days[0] for day in normal_days):
            return None                         # to open, the trough must repeat on every day
        alternative = "less" if lower_is_worse else "greater"
        if mannwhitney_pvalue(x_in, x_out, alternative, p.alpha) > p.alpha:
            return None     # (last of the checks: the costliest)
        first_t = float(t[inside & (days == trough_days[0])][0])
        facts = {"signal": signal, "start_hour": int(start), "width_h": int(width), "depth": round(depth, 3),
                 "days": len(trough_days), "first_t": first_t,
                 "last_day": int((trough_days[-1] * DAY + start * 3600.0) // DAY)}   # calendar day it began
        if lower_is_worse:
            facts.update({"busy_bps": round(float(np.median(x_in))), "other_bps": round(float(m_out))})
        elif signal == "delay":
            facts.update({"busy_delay_ms": round(float(np.median(x_in)), 2), "other_delay_ms": round(float(m_out), 2),
                          "rise_ms": round(float(np.median(x_in) - m_out), 2)})
        else:
            facts.update({"busy_queue_ms": round(float(np.median(x_in)), 2), "other_queue_ms": round(float(m_out), 2)})
        if self.is_open("diurnal_saturation"):
            return facts    # (an open episode only needs to know the trough is still there: no corroboration)
        corroboration = self._corroboration(start, width)
        if signal == "throughput" and corroboration and not corroboration["queueing_or_loss_rise"]:
            return None     # latency tests see neither queueing nor loss rise in those hours: not a full queue
        if signal == "throughput" and min_in < p.min_in and not corroboration:
            return None     # one run a day is too little alone: it takes the latency tests to agree
        if signal == "queueing" and not corroboration.get("queueing_or_loss_rise"):
            return None     # a tail that grows alone, the typical delay, floor and loss as before: a loaded host
        facts.update(corroboration)
        return facts

    def _corroboration(self, start: int, width: int) -> dict:
        if len(self.queue) < 12:
            return {}
        t = np.array([q[0] for q in self.queue])
        inside = (((t % DAY) / 3600.0 - start) % 24) < width
        if inside.all() or not inside.any():
            return {}
        q = np.array([v[1] for v in self.queue])
        loss = np.array([v[2] for v in self.queue])
        signals = [(loss[inside], loss[~inside], np.median)]
        if np.median(q[inside]) - np.median(q[~inside]) >= self.p.queue_seen_ms:
            signals.append((q[inside], q[~inside], np.median))
        floor = None
        if all(len(v) > 4 for v in self.queue):      # (samples kept before the floor was: without it)
            floor = floor_over_flanks(t, np.array([v[4] for v in self.queue]), start, width)
            if len(floor[0]) and len(floor[1]):
                if np.median(floor[0]) - np.median(floor[1]) >= self.p.queue_seen_ms:
                    signals.append((floor[0], floor[1], np.median))
            else:
                floor = None

        # A full queue in the busy hours delays or drops the latency tests' packets there, all
        # through them: the busy hours' typical queueing, their typical loss (medians: a burst of
        # cross traffic that loses a few samples' probes is not a queue full for hours) or, a queue that never drains
        # (a standing queue delays every packet), their delay floor (median of the minima) higher
        # than the hours on either side of them that day — delays by ``queue_seen_ms`` at least (a
        # drifting or stepping clock moves the floor too, but along a line or once, not up and back
        # down), and significantly.
        rise = any(shown(busy) > shown(other)
                   and mannwhitney_pvalue(busy, other, "greater", self.p.alpha) <= self.p.alpha
                   for busy, other, shown in signals if np.ptp(np.concatenate((busy, other))) > 0)
        facts = {"queueing_or_loss_rise": bool(rise),
                 "busy_queueing_ms": round(float(np.median(q[inside])), 2),
                 "other_queueing_ms": round(float(np.median(q[~inside])), 2),
                 "busy_loss_pct": round(100 * float(loss[inside].mean()), 4),
                 "other_loss_pct": round(100 * float(loss[~inside].mean()), 4)}
        if floor is not None:
            facts["busy_floor_rise_ms"] = round(float(np.median(floor[0]) - np.median(floor[1])), 2)
        return facts
