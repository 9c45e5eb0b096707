"""Throughput level shifts: throughput_drop and window_limited (the delay's: :mod:`.latency`).

The series keeps a robust baseline (median and MAD of recent normal runs). A run joins it only
within half the low threshold of it, either way: runs kept out on one side alone (those halfway
down, so that a drop under way does not pull the baseline after it) bias its median up and its
spread down on a noisy path, until noise reads as a drop. A drop opens when ``tput_runs`` runs
over ``tput_span_s`` sit below the baseline by more than the larger of ``tput_drop_frac`` of it
and ``k_tput`` MADs — a persistent level change, not an outlier or a busy hour. It closes when
runs come back.

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

A level shift persists; a load pattern follows the clock. A dip that came back within
``daily_return_s`` is remembered by the hours it covered; a later one that stays within those
hours of a following day (or within the busy hours of the path's open diurnal saturation, from
the path's context) is the daily pattern again and is held.

A consequence is not named as its own cause. A throughput drop that the path's own packet loss
explains is the loss's: a loss-based TCP's rate falls at least as 1/sqrt(loss) (Mathis et al.:
rate <= MSS / (RTT sqrt(p)) C; CUBIC falls faster), so when the latency tests' probes — independent
of the flow: a slower bottleneck makes a flow lose its own packets, not the probes' — lose, in the
typical hour since the last normal run, significantly more than over ``loss_before_s`` before it,
and enough more that the baseline rate scaled by sqrt(before / now) falls below the low
threshold, no drop is named (the loss detector names the loss).
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
from pathwatch.models.level_tracker import DailyChanges, LevelTracker, mad
from pathwatch.models.window import median


@dataclass(frozen=True)
class LevelParams(Params):
    baseline: int = 24               # normal values kept for the baseline
    min_baseline: int = 6            # values needed before judging
    k_mad: float = 4.0               # MADs beyond the baseline that count as shifted
    tput_drop_frac: float = 0.3      # throughput below (1 - this) x baseline is low
    drop_major: float = 0.5          # severity: a throughput drop of this share is major ...
    drop_critical: float = 0.8       # ... and of this share critical; smaller ones are warnings
    k_tput: float = 2.5              # MADs below the throughput baseline that count as low
    tput_runs: int = 3               # low runs ...
    tput_span_s: float = 8 * 3600.0  # ... covering at least this long ...
    tput_tolerated: float = 0.25     # ... with at most this share of normal runs among them
    level_runs: int = 8              # or: the median of the last this many runs (over tput_span_s) ...
    level_z: float = 4.5             # ... this many standard errors below the baseline ...
    level_share: float = 5 / 6       # ... and this share of tput_drop_frac (25 % at its default)
    window_cv_max: float = 0.06      # window-limited runs are this flat (interval rate CV; after a drop, their median) ...
    window_spread_max: float = 0.075  # ... and their implied window this steady across runs (1.4826 MAD / median)
    window_same_max: float = 0.05    # ... the same window, run after run, within this share ...
    window_runs: int = 4             # ... over this many consecutive runs, too clean for loss to pace them
    daily_return_s: float = 22 * 3600.0  # a change back within this long (within the day) that recurs ...
    daily_slack_s: float = 2 * 3600.0    # ... within the hours it covered a day before (give or take this) ...
    daily_days: int = 2                  # ... on one of this many previous days is a daily pattern
    daily_factor: float = 2.0            # ... when no more than this many times that change's size
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


class LevelDetector(Detector):
    name = "levels"
    kinds = ("throughput_drop", "window_limited")
    reads = (ThroughputObs, LatencyObs)
    Params = LevelParams

    def __init__(self, source, destination, params=None, context=None):
        super().__init__(source, destination, params, context)
        self.tput = LevelTracker(self.p.baseline)
        self.low_runs: list[ThroughputObs] = []
        self.tput_kind: str | None = None
        self.recovered = 0
        self.normal_runs: deque[tuple[int, float | None]] = deque(maxlen=self.p.baseline)  # (retransmits, rtt)
        self.pace = HostPace(self.p.baseline)   # the normal runs' evenness and retransmits
        self.tails = HostTails(self.p.host_tail_span_s)   # the latency tests' delay tails: a loaded host
        self.recent_runs: deque[ThroughputObs] = deque(maxlen=self.p.level_runs)
        self.tput_daily = DailyChanges()
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
        c = self.context.p
        if self.pace.paced(obs, c.host_cv_factor, c.host_cv_min, c.host_retrans_quantile, p.min_baseline):
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
            if moved is not None and moved[1] > self.context.p.window_fill_max * held[0]:
                self.window_held = held = (held[0], held[1] + 1)
                if held[1] >= 2:
                    self.window_held = None
                    self.tput_kind = None if self.tput_kind == "window_limited" else self.tput_kind
                    return self.close("window_limited", obs.t, {"recovered_bps": obs.bps})
            elif held[1]:
                self.window_held = (held[0], 0)
            return []
        filled = window_held(obs, self.context.p)
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
            "window_limited", start=self.window_since, at=obs.t, severity="warning", score=0.5,   # (a host's buffer: a setting to fix, the path healthy)
            summary=f"Throughput flat at {level / 1e6:,.0f} Mb/s = {filled[0]} {reported / 1024:,.0f} KiB / RTT "
                    f"{rtt_ms:.0f} ms over {len(streak)} runs, {_retransmits_said(streak)}: the flow moves its whole "
                    f"{filled[0]} every round trip, a TCP window limit (an untuned host or a small buffer).",
            evidence=evidence,
        )

    def _filled(self, run: ThroughputObs) -> tuple[str, int] | None:
        """The window ``run`` filled (:func:`window_filled`), for a run already in the streak."""
        return window_filled(run, self.context.p.window_fill_min, self.context.p.window_fill_max)

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
        severity = severity_for(drop, 0.0, self.p.drop_major, self.p.drop_critical)
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
        self.pace.add(run, self.context.p.tester_share)

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
            if run.rtt_ms is None or not loss_cannot_pace(run, self.context.p.window_retrans_max, self.context.p.window_loss_share):
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

    # ------------------------------------------------------------------ latency tests
    def _latency(self, obs: LatencyObs) -> list[Anomaly]:
        """What a throughput judgement needs of the path's latency tests: their loss by the hour
        (a drop that loss explains) and their delay tails (a loaded host)."""
        if obs.ok and obs.sent and obs.lost < obs.sent:
            self._count_loss(obs)          # (a dead path's probes are all lost: no rate to compare)
            low = obs.delay_min_ms
            if low is not None and obs.delay_p95_ms is not None and obs.delay_median_ms is not None:
                self.tails.add(obs.t, p95_ms=obs.delay_p95_ms - low, median_ms=obs.delay_median_ms - low,
                               lost=obs.lost, sent=obs.sent)
        return []
