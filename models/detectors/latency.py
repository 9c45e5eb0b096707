"""latency_shift: the minimum delay of a path's latency tests (owamp, ping, Atlas) moved to a new level.

The signature. Propagation delay is the floor under every packet: a longer fibre, a new path
through other routers or a clock stepped moves the *minimum* delay of every sample at once and it
stays there; a queue adds to some packets and drains. So the detector follows the minimum delay
against a robust baseline (median and MAD of recent normal samples), a path's one-way delay and
its round trip apart (:class:`DelaySeries` each). A change's
*significance* is the larger of the path's significance (:meth:`PathContext.significance
<pathwatch.models.context.PathContext.significance>`: 5 ms and 10 % of the baseline for a round
trip, 1 ms and 5 % one-way), ``k_mad`` robust SDs and, one-way, the clocks' error bound. Samples
beyond the noise or ``sample_share`` of the significance count toward a change; a shift is named
when they hold a level for ``runs`` samples over ``span_s`` (not an outlier), the level reaches
the significance, and the change *stepped* there: at least ``jump_share`` of it between one
sample and the one before it.

Episodes mean what a user means by "the delay changed":

- A shift opens at the sample where the step happened (not where it was confirmed), at the
  level the pending samples hold (their median).
- A single outlier never closes it. While open, the samples that leave the episode's level
  (beyond the samples' threshold, or nearer the baseline than the level) are a candidate move;
  one back at the level clears them. A move held for ``runs`` samples over ``span_s`` is one of
  three things: back within the significance of the baseline — the shift **returned** (closed
  where the return began; a fall however it came down, as what a queue added drains in a ramp,
  a rise only having stepped or held ``creep_s``, as a queue fills in a ramp); having stepped (or
  held ``creep_s`` as a level), across the baseline to the other side — a **new shift** the other
  way; or at another level on the same side, a significance away from the last — a **further
  step** (a smaller move moves the episode's level quietly). The last two close the episode where
  the move began and open the next change there, its evidence ``follows`` the previous one's id (the
  incident grouper joins them: one problem, each change reported).
- A shift that lasts ``settle_s`` (outside a saturated path's busy hours) is the new normal:
  closed, the baseline taken from its samples. A move later back to the level before it is a
  change of its own (a route flapping back after days is one a user must hear of), which
  ``follows`` the settled shift: the same problem ending, one incident however long it lasted.

Named vetoes. A candidate that held its level is checked by :data:`VETOES`, in order; the first
that applies either **holds** it (not yet: it may still become a shift) or **dismisses** it (the
samples become the normal; no shift). Every dismissal, and the first hold of each candidate, is
kept in :attr:`LatencyDetector.vetoed` (and :meth:`PathMonitor.vetoed
<pathwatch.models.monitor.PathMonitor.vetoed>`), so an analyst can ask why a change did not
alarm; a shift that a veto held before it opened names it in its evidence (``held_by``).

=================  =======  ==================================================================
veto               verdict  why (the physical signature it reads)
=================  =======  ==================================================================
too_small          dismiss  the level held is within the significance of the baseline: a real
                            but small change (or noise); the baseline follows it
daily_pattern      hold     the same hours rose on one of ``daily_days`` previous days and came
                            back within the day (or the path's diurnal saturation's busy hours,
                            from its context): a load follows the clock; a level shift stays
queue_drained      dismiss  a fall back to the lowest normal delay of the last ``floor_s``: the
                            baseline had crept up with a swelling queue, which drained
old_normal_back    dismiss  back to the level before a route move (context) that dismissed a
                            shift: the route reverting, which the route detector tells
crept              hold     not a step: a queue fills a little per sample; named only once it
                            held ``creep_s`` as a level
queue_swinging     dismiss  held ``creep_s`` but never a level (its samples' MAD over that day
                            above the threshold): a queue still swinging with the day
clock_offset       dismiss  one-way, within twice the clocks' error bound: their new offset
route_move         dismiss  the path's route moved as the delay stepped, the same way (context):
                            the new route's propagation delay, the route change's consequence
=================  =======  ==================================================================

Parameters are :class:`LatencyParams` (config section ``latency``).
"""

from __future__ import annotations

import math
from collections import deque
from dataclasses import dataclass

from pathwatch.models.anomaly import Anomaly
from pathwatch.models.base import Detector, severity_for
from pathwatch.models.level_tracker import DailyChanges, LevelTracker, mad
from pathwatch.models.observe import LatencyObs
from pathwatch.models.params import Params
from pathwatch.models.window import median

HOLD, DISMISS = "hold", "dismiss"
VETOES: tuple[str, ...] = ("too_small", "daily_pattern", "queue_drained", "old_normal_back", "crept", "queue_swinging",
                           "clock_offset", "route_move")


@dataclass(frozen=True)
class LatencyParams(Params):
    """Parameters of :class:`LatencyDetector` (config section ``latency``).

    Parameters
    ----------
    baseline : int, default 24
        Normal samples kept for the baseline (median and MAD).
    min_baseline : int, default 6
        Samples needed before anything is judged.
    k_mad : float, default 4.0
        Robust SDs (1.4826 MAD) beyond the baseline that count as shifted: a noisy path's own
        spread is not a change.
    sample_share : float, default 0.5
        A sample counts toward a change beyond this share of the significance (or the noise, ``k_mad``):
        the samples of a level near the significance fall on both sides of it; the level itself must
        reach the significance (veto ``too_small``).
    runs : int, default 3
        Samples beyond the threshold needed to call a level held (opening, returning, stepping on) ...
    span_s : float, default 1800
        ... spanning at least this long (seconds): an outlier or a burst is not a level.
    jump_share : float, default 0.5
        A shift steps: at least this share of it between one sample and the one before (a propagation
        change moves every packet at once).
    creep_s : float, default 79200
        A change that crept there (a queue filling) is named only once it held this long as a level
        (22 h: a day's queue drains within its day).
    gap_s : float, default 3600
        A step is seen only from a sample this recent; after a longer silence the change counts as crept.
    settle_s : float, default 259200
        A shift lasting this long (3 days) becomes the path's normal.
    floor_s : float, default 93600
        A fall back to the lowest normal delay of this long (26 h) is a queue draining.
    route_slack_s : float, default 7200
        A step this long before a route move (a trace interval or two) is the route's.
    daily_return_s : float, default 79200
        A change back within this long is remembered as a possible daily pattern ...
    daily_slack_s : float, default 7200
        ... a later one within those hours, give or take this, ...
    daily_days : int, default 2
        ... of one of this many previous days ...
    daily_factor : float, default 2.0
        ... and no more than this many times its size is the pattern again.
    major_rel : float, default 0.25
        Severity: a step of this share of the baseline is major ...
    critical_rel : float, default 1.0
        ... and of this share critical (a doubled delay); smaller ones are warnings.
    vetoes_kept : int, default 32
        Vetoed candidates remembered for :attr:`LatencyDetector.vetoed`.
    """

    baseline: int = 24
    min_baseline: int = 6
    k_mad: float = 4.0
    sample_share: float = 0.5
    runs: int = 3
    span_s: float = 1800.0
    jump_share: float = 0.5
    creep_s: float = 22 * 3600.0
    gap_s: float = 3600.0
    settle_s: float = 3 * 86400.0
    floor_s: float = 26 * 3600.0
    route_slack_s: float = 2 * 3600.0
    daily_return_s: float = 22 * 3600.0
    daily_slack_s: float = 2 * 3600.0
    daily_days: int = 2
    daily_factor: float = 2.0
    major_rel: float = 0.25
    critical_rel: float = 1.0
    vetoes_kept: int = 32


class LatencyDetector(Detector):
    """``latency_shift`` on each of a path's delay series apart: its one-way delay (owamp) and its
    round trip (ping, RIPE Atlas). A perfSONAR host pair often runs both, and the two levels are
    different numbers: each series has its own :class:`DelaySeries` (baseline, episodes, vetoes)."""

    name = "latency"
    kinds = ("latency_shift",)
    reads = (LatencyObs,)
    Params = LatencyParams

    def __init__(self, source, destination, params=None, context=None):
        super().__init__(source, destination, params, context)
        self.vetoed: deque[dict] = deque(maxlen=self.p.vetoes_kept)
        self.series = {one_way: DelaySeries(source, destination, self.p, self.context, self.vetoed)
                       for one_way in (True, False)}

    def observe(self, obs: LatencyObs) -> list[Anomaly]:
        return self.series[obs.one_way].observe(obs)

    def open_episodes(self) -> list[Anomaly]:
        return [a for part in self.series.values() for a in part.open_episodes()]

    def retire(self, end: float | None, why: str) -> list[Anomaly]:
        return [a for part in self.series.values() for a in part.retire(end, why)]


class DelaySeries(Detector):
    """One delay series of a path (one-way or round trip): its baseline, its shifts and the vetoes
    that held candidates back (kept in the ``vetoed`` it is given, the path's latency detector's)."""

    name = "latency"
    kinds = ("latency_shift",)
    reads = (LatencyObs,)
    Params = LatencyParams

    def __init__(self, source, destination, params=None, context=None, vetoed: deque | None = None):
        super().__init__(source, destination, params, context)
        p = self.p
        self.delay = LevelTracker(p.baseline)   # the baseline, and the samples pending beyond it
        self.direction = 0                      # the pending change's (or open shift's) direction
        self.settled_from: tuple[float, float] | None = None   # (baseline, threshold) before a route move
        self.settled: Anomaly | None = None     # the shift that last became the normal (a move back follows it)
        self.daily = DailyChanges()
        self.held_by: list[str] = []            # the vetoes that held the pending change
        self.last: float | None = None          # the sample before this one ...
        self.last_t: float | None = None        # ... its time ...
        self.before: float | None = None        # ... and the one before the pending change began (NaN: after a gap)
        self.floor_lows: deque[float] = deque()   # the lowest normal delay of each of the last hours ...
        self.floor_low, self.floor_until = math.inf, 0.0   # ... and of this one, until this time
        # While a shift is open: its level, and the samples (t, value) that left it since, with the
        # sample before the first of them.
        self.level: float | None = None
        self.moving: list[tuple[float, float]] = []
        self.moving_from: float | None = None
        self.vetoed: deque[dict] = vetoed if vetoed is not None else deque(maxlen=p.vetoes_kept)

    def observe(self, obs: LatencyObs) -> list[Anomaly]:
        value = obs.delay_min_ms
        if (not obs.ok or value is None or obs.sent == 0 or obs.lost >= obs.sent or value < 0
                or not self.context.clocks_usable(obs)):
            return []
        shift, p = self.delay, self.p
        before, self.last = self.last, value
        before_t, self.last_t = self.last_t, obs.t
        if len(shift.base.values) < p.min_baseline:
            shift.add(value)
            return []
        floor, rel = self.context.significance(obs.one_way)
        # A sample counts toward a change beyond the noise (k MADs) or sample_share of the
        # significance; the level a change holds must reach the significance itself.
        base, threshold = shift.reference(p.k_mad, p.sample_share * floor, p.sample_share * rel)
        significance = max(threshold, floor, rel * abs(base))
        bound = obs.clock_error_ms
        if bound is not None and obs.one_way:
            # (a one-way delay moves within its clocks' error bound without the path)
            threshold, significance = max(threshold, bound), max(significance, bound)
        direction = (value > base + threshold) - (value < base - threshold)
        if self.level is not None:
            return self._while_open(obs, value, before, base, threshold, significance)
        if direction == 0 and not shift.pending:
            shift.add(value)               # the usual sample: at the baseline, nothing pending
            if value < self.floor_low:
                self.floor_low = value
            if obs.t >= self.floor_until:
                self._floor_hour(obs.t)
            return []
        # After a silence, what the delay did in it is unknown: a change pending before it starts
        # again (the silence is no time it was seen to stay), and none is told to step across it.
        silent = before_t is not None and obs.t - before_t > p.gap_s
        if direction == 0 or silent or (shift.pending and direction != self.direction):
            pending = shift.pending
            if not silent and len(pending) >= p.runs and pending[-1][0] - pending[0][0] >= p.span_s:
                self.daily.record(pending[0][0], obs.t, self.direction, p, self._pending_size(base))   # (came back)
                self._floor_forgotten()
            pending.clear()
            self.held_by = []
            if direction == 0:
                shift.add(value)
                return []
        self.direction = direction
        if not shift.pending:
            self.before = math.nan if silent else before
        shift.pending.append((obs.t, value))
        first_t = shift.pending[0][0]
        if len(shift.pending) < p.runs or obs.t - first_t < p.span_s:
            return []
        level = self._pending_level(obs.t)
        candidate = _Candidate(first_t, obs.t, direction, base, significance, level, abs(value - base))
        for veto, check in _CHECKS:
            verdict = check(self, candidate, obs)
            if verdict is None:
                continue
            if verdict == DISMISS or veto not in self.held_by:
                self._keep_veto(veto, verdict, candidate)
            if verdict == DISMISS:
                self._pending_is_normal()
                return []
            if veto not in self.held_by:
                self.held_by.append(veto)
            return []
        start, level = self._onset(candidate)
        settled, self.settled = self.settled, None
        back = settled is not None and abs(level - settled.evidence["baseline_ms"]) <= settled.evidence["threshold_ms"]
        return self._open_shift(obs, start, base, threshold, significance, level, follows=settled if back else None,
                                back=back)

    # ------------------------------------------------------------------ the vetoes, in VETOES order
    def _too_small(self, c: _Candidate, obs: LatencyObs) -> str | None:
        """Dismiss: the level held is within the significance of the baseline (its samples were
        beyond the noise, the change is not one a user calls significant): the baseline follows."""
        return DISMISS if abs(c.level - c.base) < c.threshold else None

    def _daily_pattern(self, c: _Candidate, obs: LatencyObs) -> str | None:
        """Hold: within the hours a change the same way came back from on a previous day (no more
        than ``daily_factor`` times its size), or a rise within the saturated path's busy hours."""
        p = self.p
        if self.daily.explains(c.start, c.now, c.direction, p, c.size) or (
                c.direction > 0 and self.context.busy.covers(c.start, c.now, p.daily_slack_s)
                and c.size <= p.daily_factor * self.daily.largest(c.direction)):
            return HOLD
        return None

    def _queue_drained(self, c: _Candidate, obs: LatencyObs) -> str | None:
        """Dismiss: down to where the floor was within the last ``floor_s``, the baseline having
        crept up since without a step."""
        floor = min(self.floor_low, min(self.floor_lows, default=self.floor_low))
        return DISMISS if c.direction < 0 and c.level >= floor - c.threshold else None

    def _old_normal_back(self, c: _Candidate, obs: LatencyObs) -> str | None:
        """Dismiss: back to the level before a route move dismissed a shift (the route reverting:
        the old normal, which the route detector tells)."""
        settled = self.settled_from
        if settled is not None and abs(c.level - settled[0]) <= settled[1]:
            self.settled_from = None
            return DISMISS
        return None

    def _crept(self, c: _Candidate, obs: LatencyObs) -> str | None:
        """Hold: a change that did not step (a queue filling), until it held ``creep_s``."""
        if self.held_by and "crept" not in self.held_by:
            return None     # (it outlasted the daily pattern it began as: it persists)
        if self._stepped(c, obs) or c.now - c.start >= self.p.creep_s:
            return None
        return HOLD

    def _queue_swinging(self, c: _Candidate, obs: LatencyObs) -> str | None:
        """Dismiss: a change that crept, outlasted ``creep_s`` and never held a level (its last day's
        samples spread about its level by more than the threshold)."""
        if self.held_by and "crept" not in self.held_by or self._stepped(c, obs):
            return None
        day = [v for t, v in self.delay.pending if t >= c.now - self.p.creep_s]
        return DISMISS if mad(day, c.level) > c.threshold else None

    def _clock_offset(self, c: _Candidate, obs: LatencyObs) -> str | None:
        """Dismiss: a one-way change within what the clocks may move it (twice their bound)."""
        return DISMISS if abs(c.level - c.base) <= self._clocks_may_move(obs) else None

    def _route_move(self, c: _Candidate, obs: LatencyObs) -> str | None:
        """Dismiss: the route moved the same way as the delay stepped (the new route's delay; the
        old one coming back, the route reverting, is the old normal again)."""
        if self.context.route_moves.near(c.start, c.now, c.direction, self.p.route_slack_s):
            self.settled_from = (c.base, c.threshold)
            self._floor_forgotten()
            return DISMISS
        return None

    # ------------------------------------------------------------------ an open shift
    def _while_open(self, obs: LatencyObs, value: float, before: float | None, base: float,
                    threshold: float, significance: float) -> list[Anomaly]:
        """Follow an open shift: a move off its level held for ``runs`` samples over ``span_s``
        returns, crosses or steps on; anything shorter (an outlier) is ignored. A move back within
        the significance of the baseline is a return; one that stays beyond it and is significant
        itself is a further step or a crossing; a smaller one moves the episode's level quietly."""
        p, shift = self.p, self.delay
        opened = self.episodes["latency_shift"]
        shift.pending.append((obs.t, value))
        if self._at_level(value, base, threshold):
            self.moving.clear()
            if obs.t - opened.start >= p.settle_s and not self.context.busy.covers(obs.t, obs.t, p.daily_slack_s):
                # (not in a saturated path's busy hours: the new normal is taken from quiet hours; the
                # old level coming back later is a change of its own, as a route flapping back is)
                out = self._close_shift(obs.t, "the new delay became the path's normal")
                self.settled = out[0] if out else None
                self._pending_is_normal()
                return out
            return []
        if not self.moving:
            self.moving_from = before
        self.moving.append((obs.t, value))
        start = self.moving[0][0]
        if len(self.moving) < p.runs or obs.t - start < p.span_s:
            return []
        moved_to = median(v for _, v in self.moving)
        if self._at_level(moved_to, base, threshold):
            self.moving.clear()            # (outliers both ways about the level)
            return []
        towards = (moved_to > base + significance) - (moved_to < base - significance)
        jump = self.moving_from is not None and abs(self.moving[0][1] - self.moving_from) >= p.jump_share * abs(moved_to - self.level)
        if not (self.moving_from is None or jump or towards == 0 and moved_to < self.level) and obs.t - start < p.creep_s:
            # a queue creeping on the new level: not yet (a fall back to the baseline is back however
            # it came down: what a queue added drains in a ramp; a rise back to it is a queue filling)
            return []
        if towards != 0 and abs(moved_to - self.level) < significance:
            self.level, self.moving = moved_to, []     # (a move too small to be a change of its own)
            return []
        if towards == 0:
            self.daily.record(opened.start, start, self.direction, p, abs(self.level - base))
            out = self._close_shift(start, "delay returned to its baseline")
            kept = [v for t, v in shift.pending if t >= start]
            shift.pending.clear()
            for v in kept[-p.baseline:]:
                shift.add(v)
            self.direction = 0
            return out
        why = "a further step" if towards == self.direction else "the delay crossed its baseline to the other side"
        out = self._close_shift(start, why)
        self.direction = towards
        shift.pending = [(t, v) for t, v in shift.pending if t >= start]
        self.before = self.moving_from
        return out + self._open_shift(obs, start, base, threshold, significance, moved_to, follows=opened)

    def _at_level(self, value: float, base: float, threshold: float) -> bool:
        """Whether ``value`` sits at the open shift's level: within the threshold of it, and no
        nearer the baseline (where the two bands overlap, a value nearer the baseline may be the
        shift's return)."""
        off = abs(value - self.level)
        return off <= threshold and off <= abs(value - base)

    def _open_shift(self, obs: LatencyObs, start: float, base: float, threshold: float, significance: float,
                    level: float, follows: Anomaly | None, back: bool = False) -> list[Anomaly]:
        """Open a shift to ``level`` from ``start``; ``follows``: the change before it in the same
        problem (a further step or crossing; ``back``: the shift that settled, this the way back)."""
        p, shift = self.p, self.delay
        shift.frozen = (base, threshold)
        self._floor_forgotten()
        self.level, self.moving = level, []
        step = level - base
        what = "one-way delay" if obs.one_way else "RTT"
        evidence = {"baseline_ms": round(base, 3), "level_ms": round(level, 3), "step_ms": round(step, 3),
                    "threshold_ms": round(significance, 3), "samples": len(shift.pending), "one_way": obs.one_way}
        summary = f"Minimum {what} shifted {step:+.1f} ms (from {base:.1f} to {level:.1f} ms)."
        if back:
            evidence.update(follows=follows.id)
            summary = f"Minimum {what} shifted {step:+.1f} ms (from {base:.1f} to {level:.1f} ms), back to its level before a shift that had settled."
        elif follows is not None:
            was = follows.evidence["level_ms"]
            evidence.update(follows=follows.id, from_level_ms=was)
            summary = f"Minimum {what} stepped {level - was:+.1f} ms (from {was:.1f} to {level:.1f} ms; baseline {base:.1f} ms)."
        if self.held_by:
            evidence["held_by"] = list(self.held_by)
        self.held_by = []
        return self.open(
            "latency_shift", start=start, at=obs.t,
            severity=severity_for(abs(step) / max(base, 1.0), 0.0, p.major_rel, p.critical_rel),
            score=min(1.0, abs(step) / max(significance, 1e-9) / 4),
            summary=summary, evidence=evidence,
        )

    def _close_shift(self, t: float, why: str) -> list[Anomaly]:
        self.delay.frozen = None
        self.level, self.moving, self.moving_from = None, [], None
        self.held_by = []
        return self.close("latency_shift", t, {"ended": why})

    # ------------------------------------------------------------------ helpers
    def _onset(self, c: _Candidate) -> tuple[float, float]:
        """Where the change happened and the level it took: its first sample and ``c.level``, but
        for a change a daily pattern held that has now grown beyond it (``daily_factor`` times the
        pattern's size), the largest step within it — the change is that step, on top of the
        day's rise — and the level of the samples from it on."""
        pending = self.delay.pending
        if (not ("daily_pattern" in self.held_by or self._on_pattern(c))
                or c.size <= self.p.daily_factor * self.daily.largest(c.direction)):
            return c.start, c.level
        at, largest = self._largest_step(c.direction)
        after = median(v for _, v in pending[at:])
        before = median(v for _, v in pending[:at]) if at else c.base
        if largest < self.p.jump_share * c.direction * (after - before):
            return c.start, c.level
        return pending[at][0], after

    def _largest_step(self, direction: int) -> tuple[int, float]:
        """(index, size) of the pending samples' largest step ``direction``-wards, the first from
        the sample before them."""
        pending = self.delay.pending
        prev = pending[0][1] if self.before is None or math.isnan(self.before) else self.before
        at, largest = 0, -math.inf
        for i, (_, v) in enumerate(pending):
            if direction * (v - prev) > largest:
                at, largest = i, direction * (v - prev)
            prev = v
        return at, largest

    def _on_pattern(self, c: _Candidate) -> bool:
        """Whether the candidate lies in a known daily pattern's hours (the same way, whatever its
        size): a change that came back from them on a previous day, or the saturated path's busy hours."""
        p = self.p
        return self.daily.explains(c.start, c.now, c.direction, p) or (
            c.direction > 0 and self.context.busy.covers(c.start, c.now, p.daily_slack_s))

    def _pending_level(self, now: float) -> float:
        """The pending change's level: the median of its samples (of the last two spans once a
        daily pattern held it: the level is what stays after the pattern)."""
        pending = self.delay.pending
        if "daily_pattern" in self.held_by:
            return median(v for t, v in pending if t >= now - 2 * self.p.span_s)
        return median(v for _, v in pending)

    def _stepped(self, c: _Candidate, obs: LatencyObs) -> bool:
        """Whether the pending change came as a step: from the sample before it (or, in a known
        daily pattern's hours, anywhere in it: a step on top of the day's rise), at least
        ``jump_share`` of its size in one sample interval, and one-way more than twice the clocks'
        error bound (each sample may be off by the bound, either way)."""
        before = self.before
        if before is None:
            return True
        if math.isnan(before):
            return False    # the path was silent before it: whether the delay stepped or crept is unknown
        jump = c.direction * (self.delay.pending[0][1] - before)
        if jump < self.p.jump_share * c.direction * (c.level - c.base) and self._on_pattern(c):
            jump = self._largest_step(c.direction)[1]    # (a step on top of the day's own rise)
        return jump >= self.p.jump_share * c.direction * (c.level - c.base) and jump > self._clocks_may_move(obs)

    @staticmethod
    def _clocks_may_move(obs: LatencyObs) -> float:
        """How far the clocks may move a delay between two samples: twice their error bound for a
        one-way delay, nothing for an RTT."""
        return 2 * (obs.clock_error_ms or 0.0) if obs.one_way else 0.0

    def _keep_veto(self, veto: str, verdict: str, c: _Candidate) -> None:
        self.vetoed.append({"kind": "latency_shift", "veto": veto, "verdict": verdict, "start": c.start, "at": c.now,
                            "baseline_ms": round(c.base, 3), "level_ms": round(c.level, 3),
                            "threshold_ms": round(c.threshold, 3)})

    def _pending_is_normal(self) -> None:
        """The pending delays are the path's normal now: the baseline takes the latest of them."""
        shift = self.delay
        shift.rebase(v for _, v in shift.pending[-self.p.baseline:])
        shift.pending.clear()
        self.direction, self.held_by = 0, []

    def _pending_size(self, base: float) -> float:
        return max(abs(v - base) for _, v in self.delay.pending) if self.delay.pending else 0.0

    def _floor_forgotten(self) -> None:
        """Forget the recent floor: the delay moved by a step since."""
        self.floor_lows.clear()
        self.floor_low = math.inf

    def _floor_hour(self, t: float) -> None:
        """Keep the hour's lowest normal delay among the last ``floor_s`` of them; start the next."""
        lows = self.floor_lows
        lows.append(self.floor_low)
        while len(lows) > self.p.floor_s / 3600.0:
            lows.popleft()
        self.floor_low, self.floor_until = math.inf, (t // 3600.0 + 1) * 3600.0


# The vetoes' checks, in VETOES order: (name, DelaySeries method).
_CHECKS = tuple((veto, getattr(DelaySeries, f"_{veto}")) for veto in VETOES)


@dataclass(frozen=True, slots=True)
class _Candidate:
    """A pending change that held its level: what the vetoes read."""

    start: float        # its first sample's time
    now: float          # the latest sample's time
    direction: int      # +1 up, -1 down
    base: float         # the baseline's median ...
    threshold: float    # ... and the significance: the distance beyond it that counts as a change
    level: float        # the level it holds
    size: float         # how far the latest sample is from the baseline
