"""route_change and unreachable, from traces (and the reachability that latency and throughput show).

Routes are compared hop by hop: two traces are the same route when every TTL where both got an
answer has the same address and, when both reached the destination, the same length (silent hops
and a trace cut short by silence do not make a new route; nor does a destination met further out
behind silent TTLs, its nearer answers lost at a full queue: its own TTL is silent). A path
keeps the routes it has used (its ECMP variants), each remembered for ``forget_s`` after it was
last seen or, if it was in use longer than that, for as long as it was in use (at most
``remember_max_s``): a path that goes back to its long-standing route after a detour of days is
not changing again. A trace on none of them is a candidate change. The candidate opens
``route_change`` at once when an independent measurement agrees — the latency tests' one-way
delay steps at the same time (in the samples before the trace or the first one after it) and,
when the trace reached the destination, its RTT moved the same way by ``rtt_follow_share`` of
that step at least (a route lengthens the round trip as much as the one way; an NTP correction
moves the one-way delay alone, and the RTT not at all), or the trace's own RTT steps onto a new
AS — otherwise when the new route persists: on the next trace (of any tool) when the candidate
came with a new AS or an RTT step, on the next two without either (two independent one-off
detours onto the same backup path look like one trace after another). A trace of any tool on a
known route in between makes the candidate a blip. So a path that alternates among known
variants, or blips and comes back, stays quiet. A known route back after another has been in use
for ``settle_s`` (a detour that settled, then reverted days later) is no change either, but it is a
move of the route: the delay step it brings is shared with the levels detector as the route's.

A one-way delay step is a jump between two consecutive samples since the previous trace (for
a step seen with the candidate trace) or since the candidate trace (in the samples after it), so
it happened with the route change, not hours before (a latency shift of its own, a route change
already settled); a trace RTT step is measured from the median RTT of the last three traces on
known routes. A step counts when it is larger than ``owd_step_ms`` (one-way delay) or
``rtt_step_ms`` (a trace's RTT) and than ``step_sigmas`` times the series' noise from one sample
to the next (:func:`step_noise`): a level that wanders or ramps, as a standing queue's floor
does over the busy hours, moves as much between every two samples, so it neither hides a
route's jump nor makes one.

A new router that never answers leaves no new address: the trace keeps every answering hop of
the route in use and is silent at a TTL where that route answers. A router that skips an answer
now and then looks the same for one trace, and a one-way delay wobble at that moment says
nothing about which it is, so silence alone decides, against what each hop of each route is
known to do: per route and per TTL the detector counts the traces in which the hop was silent
and how often one silence followed another (its answer rate, and whether its misses come in
bursts). A silence that lasts ``L`` consecutive traces is a change when its chance falls below
``silence_alpha`` (:func:`run_chance`: the predictive chance of ``L`` misses in a row given the
misses seen so far, or, once the hop has shown bursts, its miss rate times its chance of going
on ``L − 1`` times). A run during which the route's silences moved — several hops silent at once,
or another hop falling silent or answering again — is what ICMP rate limiting does (routers from
some TTL on answering only now and then, for a while): its bursts are assumed as likely to go on
as not until the hop has shown otherwise, so only a silence that outlasts such a burst counts.
A first burst looks like a new silent router for as long as it lasts, but a new router between
the same two neighbours, on a route as long, that leaves the delay where it was is nothing a NOC
could see or act on: such a silence is a change only when the trace's RTT or the one-way delay
stepped with it, or once it has lasted ``silence_hold_s`` (longer than a rate limiter stays
engaged; a silent trace's RTT is kept out of the level it is compared with, and after a silence
of several traces that level is carried forward by its own trend over them: a queue filling for
the hour a router rate-limits moves the RTT as far, and steps nowhere).
The change dates from the first silent trace. A silence that ends earlier is counted into the
hop's rate. Only the route in use is judged: a trace silent on an older known route is the path
going back to that route. The silent TTL of a change is part of the new route (``"*"`` in its hops
and the evidence), so later traces silent there are on the new route and a trace answering there
is back on the old one. An open change closes when the old route returns, or when the new one
has settled in for ``settle_s``.

``unreachable`` opens after ``fail_streak`` consecutive failures — traces that stop short of a
destination that used to answer, or owamp/ping results that lost every packet — with no success
in between, that lost ``fail_packets`` latency probes in all (a 3-packet ping loses all of them
now and then on a lossy path; an unreachable destination loses everything), and closes at the
first trace that reaches or sample that gets packets back. A trace
that stops where the path MTU dropped is left to the MTU detector.
"""

from __future__ import annotations

import math
from collections import deque
from dataclasses import dataclass

from pathwatch.contract.timefmt import from_epoch
from pathwatch.models.anomaly import Anomaly
from pathwatch.models.base import Detector
from pathwatch.models.params import Params
from pathwatch.models.observe import LatencyObs, ThroughputObs, TraceObs
from pathwatch.models.window import median

SILENT = "*"   # in a route's hops: a router that does not answer (a new silent hop of a changed route)


@dataclass(frozen=True)
class RouteParams(Params):
    learn_s: float = 86400.0       # a tool's routes in its first day of traces are known without question
    owd_step_ms: float = 0.5       # one-way delay step that confirms a new route at once ...
    rtt_step_ms: float = 1.0       # ... trace RTT step (with a new AS) ...
    step_sigmas: float = 6.0       # ... and at least this many robust SDs of the baseline's noise
    ramp_share: float = 0.5        # ... and not beside a move the same way of this share of it (a ramp)
    settle_s: float = 12 * 3600.0  # a new route in use this long becomes the path's normal
    forget_s: float = 4 * 86400.0  # routes unseen this long are forgotten ...
    remember_max_s: float = 30 * 86400.0  # ... unless in use longer (remembered as long, up to this)
    rtt_follow_share: float = 0.5  # a reached candidate trace's RTT moved at least this share of the OWD step, the same way
    fail_streak: int = 2           # consecutive failures before unreachable opens ...
    fail_packets: int = 10         # ... losing at least this many latency probes in all (a trace's failure counts
                                   # as this many): a lossy path loses all of a 3-packet ping now and then
    reach_history: int = 12        # traces of history that say whether a destination answers
    # Chance, per trace and hop, below which a run of silent traces at a hop that answers is not
    # skipped answers but a new router that never answers. 100 path-days hold ~10^5 traces of ~10
    # hops each (two tools every 20-60 min): 1e-6 keeps chance silences below one per 100 path-days.
    silence_alpha: float = 1e-6
    # A silence at hops whose neighbours still answer as before, the route as long, is a new router
    # only when the delay moved with it (a trace RTT or one-way delay step) or it lasts this long:
    # longer than a router's ICMP rate limiter stays engaged (control-plane load comes and goes).
    silence_hold_s: float = 3 * 3600.0


def _flanked(known: tuple, route: tuple, silent: list[int]) -> bool:
    """Whether every silent TTL sits between hops that answer in ``route`` as in ``known`` (the
    destination counts) and the route is as long: nothing seen moved, only a router fell quiet.

    >>> _flanked(("a", "b", "c", "d"), ("a", None, "c", "d"), [2]), _flanked(("a", "b", "c"), ("a", None), [2])
    (True, False)
    """
    if len(route) != len(known):
        return False
    for ttl in silent:
        before = route[ttl - 2] if ttl >= 2 else None
        after = route[ttl] if ttl < len(route) else None
        if after is None or after != known[ttl] or (ttl >= 2 and before != known[ttl - 2]):
            return False
    return True


def route_of(obs: TraceObs) -> tuple[str | None, ...]:
    """The answering hops up to the last one that answered (trailing silence dropped)."""
    hops = obs.hops
    end = len(hops)
    while end and hops[end - 1] is None:
        end -= 1
    return hops[:end]


def answered_late(known: tuple, trace: tuple) -> bool:
    """Whether a trace that reached ``known``'s destination further out did so only because the
    destination's nearer answers were lost: every TTL from the known route's length to the
    trace's last is silent, and the last answer is the known destination's. A traceroute goes on
    to the next TTL when all its probes of one went unanswered (a full queue drops them), and a
    probe with a larger TTL still reaches a destination that near; it is the same route with the
    destination's TTL silent, judged as any silence (a new router that never answers makes that
    silence persist).

    >>> answered_late(("r1", "r2", "d"), ("r1", "r2", None, None, "d")), answered_late(("r1", "d"), ("r1", "x", "d"))
    (True, False)
    """
    return (len(trace) > len(known) and trace[-1] == known[-1]
            and all(hop is None for hop in trace[len(known) - 1:-1]))


def route_gaps(known: tuple, known_reached: bool, trace: tuple, trace_reached: bool) -> int | None:
    """How many TTLs a trace is silent at where the known route answers, or None when it is another route.

    Another route: an answering TTL disagrees (a known :data:`SILENT` hop answering counts), no
    TTL answers in both, or both reached the destination at different lengths — unless the trace
    met the destination further out behind silence (:func:`answered_late`: its TTL on the known
    route counts as silent).

    >>> route_gaps(("r1", "r2", "r3"), True, ("r1", None, "r3"), True)
    1
    >>> route_gaps(("r1", SILENT, "r3"), True, ("r1", None, "r3"), True)
    0
    >>> route_gaps(("r1", SILENT, "r3"), True, ("r1", "r2", "r3"), True) is None
    True
    >>> route_gaps(("r1", "r2", "r3"), True, ("r1", "r2", None, "r3"), True)
    1
    """
    if known_reached and trace_reached and len(known) != len(trace):
        if not answered_late(known, trace):
            return None
        trace = trace[:len(known)]
    if known == trace:            # the usual case: nothing can disagree, is any hop answering?
        return 0 if known.count(None) != len(known) else None
    common = gaps = 0
    for x, y in zip(known, trace):
        if x is None:
            continue
        if y is None:
            if x != SILENT:
                gaps += 1
        elif x != y:
            return None
        else:
            common += 1
    return gaps if common else None


def same_route(a: tuple, a_reached: bool, b: tuple, b_reached: bool) -> bool:
    """True when no answering TTL disagrees and, if both reached, the lengths agree.

    >>> same_route(("r1", None, "r3"), True, ("r1", "r2", "r3"), True)
    True
    >>> same_route(("r1", "r2", "r3"), True, ("r1", "x2", "r3"), True)
    False
    >>> same_route(("r1", "r2"), False, ("r1", "r2", "r3"), True)
    True
    """
    return route_gaps(a, a_reached, b, b_reached) is not None


def divergence(old: tuple, new: tuple) -> int:
    """1-based TTL of the first hop where two routes differ (answering hops only)."""
    for ttl, (x, y) in enumerate(zip(old, new), start=1):
        if x is not None and y is not None and x != y:
            return ttl
    return min(len(old), len(new)) + 1


def as_path(asns: tuple) -> tuple[int, ...]:
    """The AS sequence with repeats and unknowns removed."""
    out: list[int] = []
    for asn in asns:
        if asn is not None and (not out or out[-1] != asn):
            out.append(asn)
    return tuple(out)


class _Silence:
    """What one route's answering hops do about answering: misses per TTL, misses that followed a
    miss, and the runs of silence in progress."""

    __slots__ = ("misses", "repeats", "runs")

    def __init__(self):
        self.misses: dict[int, int] = {}
        self.repeats: dict[int, int] = {}
        # TTL → [silent traces in a row, time of the first, whether the route's silences moved meanwhile]
        self.runs: dict[int, list] = {}

    def end_runs(self, ttls) -> None:
        """Count the runs at ``ttls`` (answering again) into the rates: they were skipped answers."""
        for ttl in ttls:
            length = self.runs.pop(ttl)[0]
            self.misses[ttl] = self.misses.get(ttl, 0) + length
            self.repeats[ttl] = self.repeats.get(ttl, 0) + length - 1


def run_chance(misses: int, repeats: int, traces: int, length: int, bursty: bool = False) -> float:
    """The chance that a hop silent in ``misses`` of ``traces`` traces (``repeats`` of those misses
    right after another) is silent ``length`` traces in a row by chance.

    With independent misses (none has followed another yet) it is the predictive chance of
    ``length`` misses in a row given what was seen (a uniform prior on the miss rate): the rate's
    uncertainty counts, not only its estimate. Once misses came in bursts, or with ``bursty`` (the
    route's silences moved during the run, as rate limiting makes them), it is the miss rate times
    the chance of a miss following a miss to the power ``length − 1``, that chance counting one
    repeat more than seen (one half before any).

    >>> f"{run_chance(0, 0, 998, 2):.0e}", f"{run_chance(10, 0, 1000, 2):.0e}", f"{run_chance(10, 0, 1000, 3):.0e}"
    ('2e-06', '1e-04', '2e-06')
    >>> run_chance(20, 10, 1000, 3) > 1e-3      # misses in bursts: long runs are not unusual
    True
    >>> run_chance(0, 0, 998, 8, bursty=True) > 1e-6 > run_chance(0, 0, 998, 12, bursty=True)
    True
    """
    if repeats == 0 and not bursty:
        chance, seen = 1.0, traces + 2
        for i in range(length):
            chance *= min(1.0, (misses + 1 + i) / (seen + i))
        return chance
    p = min(1.0, (misses + 1) / (traces + 2))
    q = max(p, (repeats + 1) / (misses + 2) if bursty else (repeats + p) / (misses + 1))
    return p * q ** (length - 1)


class _Variant:
    __slots__ = ("hops", "asns", "reached", "first", "last", "count", "delay", "silence")

    def __init__(self, obs: TraceObs):
        self.hops = route_of(obs)
        self.asns = obs.asns[: len(self.hops)]
        self.reached = bool(obs.reached)
        self.first = self.last = obs.t
        self.count = 1
        self.delay: float | None = None     # (no longer read: kept so that pickled variants restore)
        self.silence: _Silence | None = None  # its hops' answer rates, once one of them was silent

    def matches(self, obs: TraceObs) -> bool:
        return same_route(self.hops, self.reached, route_of(obs), bool(obs.reached))


def step_noise(values) -> float:
    """The noise of a series from one value to the next: 1.4826 × the median absolute successive
    difference / √2, a robust standard deviation of the values that a slowly wandering level does
    not inflate, and that a ramp raises to its own move per step.

    >>> round(step_noise([1.0, 1.2, 0.9, 1.1, 1.0, 1.3, 0.8]), 2), round(step_noise([1.0, 2.0, 3.0, 4.0]), 2)
    (0.26, 1.05)
    """
    values = list(values)
    if len(values) < 2:
        return 0.0
    return 1.4826 * median([abs(b - a) for a, b in zip(values, values[1:])]) / math.sqrt(2)


def _latest_level(values) -> float:
    """The level of a series' latest values: the median of its last three."""
    values = list(values)
    return median(values[-3:])


def _expected_rtt(rtts, ahead: int = 2) -> float:
    """Where the RTT of the trace ``ahead`` traces after the middle of the last three would be
    without a change (2: the next trace): the level of the last three (their median) carried
    forward by the series' trend over the last seven (the change between the medians of their
    first and last three): nothing on a steady path, the ramp of a queue filling or draining.

    >>> round(_expected_rtt([10.0, 10.2, 9.9, 10.1]), 2), _expected_rtt([20.0, 19.0, 18.0, 17.0, 16.0, 15.0, 14.0])
    (10.1, 13.0)
    >>> _expected_rtt([20.0, 19.0, 18.0, 17.0, 16.0, 15.0, 14.0], ahead=4)
    11.0
    """
    latest = list(rtts)[-7:]
    level = _latest_level(latest)
    if len(latest) < 6:
        return level
    per_trace = (level - median(latest[:3])) / (len(latest) - 3)
    return level + ahead * per_trace


def _last_seen(variant: _Variant) -> float:
    return variant.last


class _ToolRoutes:
    """Known routes of one trace tool on one path, and the pending candidate."""

    __slots__ = ("name", "known", "first_seen", "candidate", "changed_from", "changed_at", "reach")

    def __init__(self, name: str, history: int):
        self.name = name
        self.known: list[_Variant] = []
        self.first_seen: float | None = None
        self.candidate: _Variant | None = None
        self.changed_from: list[_Variant] = []
        self.changed_at: float | None = None
        self.reach: deque[bool] = deque(maxlen=history)

    def find(self, obs: TraceObs, among: list[_Variant], route: tuple | None = None) -> _Variant | None:
        """The variant ``obs`` takes (``route``: its :func:`route_of`, when already known); see :meth:`best`."""
        if route is None:
            route = route_of(obs)
        return self.best(among, route, bool(obs.reached))[0]

    @staticmethod
    def best(among: list[_Variant], route: tuple, reached: bool) -> tuple[_Variant | None, int]:
        """The variant a trace takes — the first with the fewest silent gaps — and its gaps."""
        found, fewest = None, 0
        for variant in among:
            gaps = route_gaps(variant.hops, variant.reached, route, reached)
            if gaps is None:
                continue
            if gaps == 0:
                return variant, 0
            if found is None or gaps < fewest:
                found, fewest = variant, gaps
        return found, fewest


class RouteDetector(Detector):
    name = "route"
    kinds = ("route_change", "unreachable")
    reads = (TraceObs, LatencyObs, ThroughputObs)
    Params = RouteParams

    def __init__(self, source, destination, params=None, context=None):
        super().__init__(source, destination, params, context)
        self.tools: dict[str, _ToolRoutes] = {}
        self.rtts: deque[float] = deque(maxlen=24)      # last-hop RTTs of reached traces on known routes
        self.delays: deque[float] = deque(maxlen=36)    # latency minimum delays (baseline)
        self.owd_series: deque[tuple[float, float]] = deque(maxlen=48)  # (t, minimum delay) of every usable sample
        self.failures: list[str] = []                    # consecutive failure descriptions
        self.first_failure: float | None = None
        self.pmtu_max: int | None = None
        # What the path looked like at its previous trace (is a step fresh?), and before the pending candidate.
        self.trace_t: float | None = None        # the time of the path's latest trace (any tool)
        self.pending_t: float | None = None      # the time of the trace that made the pending candidate
        self.needs: dict[str, int] = {}          # traces on its route each tool's pending candidate needs
        self.pending_rtt: float | None = None    # the last-hop RTT of the trace that made the pending candidate
        self.failed_packets = 0                  # latency probes the failures in a row lost

    def observe(self, obs) -> list[Anomaly]:
        if isinstance(obs, TraceObs):
            return self._trace(obs)
        if isinstance(obs, LatencyObs):
            return self._latency(obs)
        return self._throughput(obs)

    def handlers(self) -> dict[type, object]:
        return {TraceObs: self._trace, LatencyObs: self._latency, ThroughputObs: self._throughput}

    # ------------------------------------------------------------------ reachability
    def _latency(self, obs: LatencyObs) -> list[Anomaly]:
        if not obs.ok or obs.sent == 0:
            return []
        if obs.lost >= obs.sent:
            return self._failure(obs.t, f"{'owamp' if obs.one_way else 'ping'} lost all {obs.sent} packets", obs.sent)
        delay = obs.delay_min_ms
        clock_ok = self.context.clocks_usable(obs)
        if delay is not None and (obs.loss or 0) < 0.5 and clock_ok:
            self.owd_series.append((obs.t, delay))
            pending = None                       # the first tool with a pending candidate route
            for tool in self.tools.values():
                if tool.candidate is not None:
                    pending = tool
                    break
            step = self._owd_step(self.pending_t) if pending is not None else None
            if step is not None and self._rtt_follows(step, self.pending_rtt):
                # The delay step arrived after the candidate trace: it confirms the change now,
                # before the next trace.
                out = self._start_change(obs.t, pending, f"confirmed by a one-way delay step of {step:+.1f} ms", step)
                return out + self._success(obs.t, "latency packets returned")
            if pending is None and "route_change" not in self.episodes:
                self.delays.append(delay)
        if self.failures or "unreachable" in self.episodes:
            return self._success(obs.t, "latency packets returned")
        return []

    def _throughput(self, obs: ThroughputObs) -> list[Anomaly]:
        if obs.ok and obs.bps and (self.failures or "unreachable" in self.episodes):
            return self._success(obs.t, "throughput test ran")
        return []

    def _failure(self, t: float, what: str, packets: int | None = None) -> list[Anomaly]:
        """Count a failure (``packets``: the latency probes it lost; None: a trace's, as many as
        ``fail_packets``); open ``unreachable`` after ``fail_streak`` of them in a row that lost
        ``fail_packets`` probes in all."""
        if not self.failures:
            self.first_failure, self.failed_packets = t, 0
        self.failures.append(what)
        self.failed_packets += self.p.fail_packets if packets is None else packets
        if len(self.failures) < self.p.fail_streak or self.failed_packets < self.p.fail_packets or self.is_open("unreachable"):
            return []
        return self.open(
            "unreachable", start=self.first_failure, at=t, severity="critical", score=1.0,
            summary=f"{self.destination} stopped answering from {self.source}: {self.failures[0]}.",
            evidence={"failures": self.failures[:5], "since": from_epoch(self.first_failure)},
        )

    def _success(self, t: float, what: str) -> list[Anomaly]:
        """Clear the failure streak and close ``unreachable`` (callers may skip it when neither exists)."""
        self.failures.clear()
        self.first_failure = None
        return self.close("unreachable", t, {"recovered": what})

    # ------------------------------------------------------------------ traces
    def _trace(self, obs: TraceObs) -> list[Anomaly]:
        if not obs.ok or obs.last_answer_ttl == 0:
            return []
        tool = self.tools.get(obs.tool)
        if tool is None:
            tool = self.tools[obs.tool] = _ToolRoutes(obs.tool, self.p.reach_history)
        reached = obs.reached
        if reached and not self.failures and "unreachable" not in self.episodes:
            tool.reach.append(True)     # the usual trace: it reached a path that was reachable
            out = []
        else:
            out = self._reachability(obs, tool)
        if tool.first_seen is None:
            tool.first_seen = obs.t
        if reached and obs.pmtu_bytes:
            self.pmtu_max = max(self.pmtu_max or 0, obs.pmtu_bytes)
        now, forget_s = obs.t, self.p.forget_s
        for variant in tool.known:      # (with every known route seen within forget_s there is nothing to forget)
            if not now - variant.last <= forget_s:
                self._forget(tool, now)
                break
        owd_before, self.trace_t = self.trace_t, obs.t      # (the previous trace's time)
        if obs.min_hop_mtu is not None and self._mtu_cut(obs):
            return out                  # tracepath re-probing under an MTU drop is not a new route
        out += self._route(obs, tool, owd_before)
        return out

    def _mtu_cut(self, obs: TraceObs) -> bool:
        return obs.min_hop_mtu is not None and self.pmtu_max is not None and obs.min_hop_mtu < self.pmtu_max

    def _reachability(self, obs: TraceObs, tool: _ToolRoutes) -> list[Anomaly]:
        """What a trace says of reachability, but for the usual one that :meth:`_trace` takes
        itself (it reached, with no failures counted and no ``unreachable`` open)."""
        reach, reached = tool.reach, obs.reached
        if reached:                     # (failures counted, or unreachable open: it answers again)
            out = self._success(obs.t, f"{obs.tool} reached the destination")
            reach.append(True)
            return out
        mtu_cut = self._mtu_cut(obs)
        out: list[Anomaly] = []
        if reached is False and not mtu_cut and sum(reach) >= max(2, len(reach) // 2):
            # (the destination answered at least half of the recent traces: this one failed)
            last = next((h for h in reversed(obs.hops) if h is not None), None)
            out = self._failure(obs.t, f"{obs.tool} stopped at hop {obs.last_answer_ttl} ({last})")
        if reached is False and not mtu_cut:
            reach.append(False)
        return out

    def _forget(self, tool: _ToolRoutes, now: float) -> None:
        """Drop the known routes not seen for forget_s (:meth:`_trace` asks only when one of them
        was not); a route in use for longer than forget_s is remembered as long as it was in use."""
        forget_s, most = self.p.forget_s, self.p.remember_max_s
        tool.known = [v for v in tool.known if now - v.last <= max(forget_s, min(v.last - v.first, most))]

    def _route(self, obs: TraceObs, tool: _ToolRoutes, owd_before: float | None = None) -> list[Anomaly]:
        out: list[Anomaly] = []
        route = obs.hops
        if route and route[-1] is None:
            route = route_of(obs)                # (else route_of's answer is the hops themselves)
        reached = bool(obs.reached)
        known, gaps = tool.best(tool.known, route, reached)
        # An open change ends when an old route comes back, or when the new one has settled in.
        if "route_change" in self.episodes and tool.changed_at is not None:
            if known is not None and any(known is v for v in tool.changed_from):
                self.context.route_moves.add(obs.t, None)
                out += self._end_change(tool, obs.t, "the previous route returned")
            elif obs.t - tool.changed_at >= self.p.settle_s:
                out += self._end_change(tool, obs.t, "the new route became the path's normal")
        # A pending candidate (of any tool on the path) that this trace takes better than a known route.
        for owner in self.tools.values():
            candidate = owner.candidate
            if candidate is None:
                continue
            taken = route_gaps(candidate.hops, candidate.reached, route, reached)
            if taken is not None and (known is None or taken < gaps):
                candidate.last, candidate.count = obs.t, candidate.count + 1
                if candidate.count < self.needs.get(owner.name, 2):
                    return out
                if owner is not tool:
                    tool.known.append(candidate)
                return out + self._start_change(obs.t, owner, f"seen on {candidate.count} traces in a row",
                                                self._rtt_step(obs))
        if known is not None:
            for owner in self.tools.values():   # a trace back on a known route: pending candidates were blips
                if owner.candidate is not None:
                    owner.known.append(owner.candidate)
                    owner.candidate = None
            silence = getattr(known, "silence", None)   # (variants pickled before it was kept have none)
            if gaps or (silence is not None and silence.runs):
                found = self._silences(obs, tool, known, route, gaps)
                if found:
                    return out + found       # (a new silent router: this trace is on the new route)
            if (obs.t - known.last >= self.p.settle_s and not gaps
                    and any(v.last > known.last for v in tool.known)):
                # An older route back after the path had settled on another: a move of the route
                # (no new change: the route is known), whose delay step is the route's, not a shift.
                self.context.route_moves.add(obs.t, None)
            known.last, known.count = obs.t, known.count + 1
            if "route_change" not in self.episodes and not gaps:   # (a silent trace may be a new route's)
                if obs.reached and obs.last_rtt_ms is not None:
                    self.rtts.append(obs.last_rtt_ms)
            return out
        if not tool.known:                       # every route forgotten (a long silence): learn anew
            tool.first_seen, tool.candidate = obs.t, None
        if obs.t - tool.first_seen <= self.p.learn_s:
            tool.known.append(_Variant(obs))
            return out
        tool.candidate = _Variant(obs)
        self.pending_rtt = obs.last_rtt_ms if reached else None
        self.pending_t = obs.t
        # One trace is enough only when an independent measurement agrees: the one-way delay of
        # the latency tests stepped since the previous trace, or the trace's RTT stepped onto a new AS.
        # Otherwise the new route must persist: two traces with a new AS or an RTT step, three without.
        owd_step = self._owd_step(owd_before)
        if owd_step is not None and self._rtt_follows(owd_step, self.pending_rtt):
            return out + self._start_change(obs.t, tool, f"confirmed by a one-way delay step of {owd_step:+.1f} ms", owd_step)
        rtt_step = self._trace_rtt_step(obs)
        new_as = self._new_as(obs, tool)
        if rtt_step is not None and new_as:
            return out + self._start_change(obs.t, tool, f"confirmed by a new AS and an RTT step of {rtt_step:+.1f} ms", rtt_step)
        self.needs[tool.name] = 2 if rtt_step is not None or new_as else 3
        return out

    def _silences(self, obs: TraceObs, tool: _ToolRoutes, known: _Variant, route: tuple, gaps: int) -> list[Anomaly]:
        """Keep the runs of silence at ``known``'s answering hops; a run too long for chance is a new silent router."""
        silence = getattr(known, "silence", None)     # (variants pickled before it was kept have none)
        if silence is None:
            silence = known.silence = _Silence()
        hops = known.hops
        silent = [ttl for ttl, (x, y) in enumerate(zip(hops, route), start=1)
                  if y is None and x is not None and x != SILENT] if gaps else []
        runs = silence.runs
        ended = [ttl for ttl in runs if ttl not in silent and ttl <= len(route)]
        started = [ttl for ttl in silent if ttl not in runs]
        if ended:
            silence.end_runs(ended)
        moved = len(silent) >= 2 or ((ended or started) and (runs or len(started) > 1))
        for ttl in silent:
            run = runs.get(ttl)
            if run is None:
                runs[ttl] = [1, obs.t, moved]
            else:
                run[0] += 1
                run[2] = run[2] or moved
        if not silent or self.is_open("route_change") or known is not max(tool.known, key=_last_seen):
            return []        # (silent on an older known route: the path going back to it)
        alpha = self.p.silence_alpha
        traces = known.count
        confirmed = []
        for ttl in silent:
            length, first, bursty = runs[ttl]
            chance = run_chance(silence.misses.get(ttl, 0), silence.repeats.get(ttl, 0), traces - length + 1,
                                length, bursty)
            if chance < alpha:
                confirmed.append((ttl, length, first, chance))
        if not confirmed:
            return []
        first = min(c[2] for c in confirmed)
        step = self._trace_rtt_step(obs, max(c[1] for c in confirmed))
        if step is None:
            step = self._owd_step(first)
        if step is None and obs.t - first < self.p.silence_hold_s and _flanked(hops, route, [c[0] for c in confirmed]):
            return []        # the same route with a router declining to answer, so far
        new_hops = list(route) + [None] * (len(hops) - len(route))
        for ttl, *_ in confirmed:
            new_hops[ttl - 1] = SILENT
        for ttl, x in enumerate(hops, start=1):
            if new_hops[ttl - 1] is None and x is not None and x != SILENT and ttl not in runs:
                new_hops[ttl - 1] = x
        ttl, length, _, chance = min(confirmed, key=lambda c: c[3])
        for c in confirmed:
            runs.pop(c[0], None)     # (a change, not skipped answers: kept out of the rates)
        candidate = _Variant(obs)
        candidate.hops = tuple(new_hops[: max(len(route), len(hops))])
        candidate.first = first
        tool.candidate = candidate
        missed = silence.misses.get(ttl, 0)
        return self._start_change(
            obs.t, tool, f"hop {ttl} silent on {length} traces in a row (it skipped {missed} of "
                         f"{traces - length + 1} answers before: chance {chance:.0e})", step)

    def _step(self, values, latest: float, reference: float, floor: float) -> float | None:
        """``latest`` − ``reference`` when it exceeds ``floor`` and ``step_sigmas`` times the noise of
        ``values`` from one sample to the next (:func:`step_noise`: a level that wanders slowly, as
        a standing queue's floor does, is not noise)."""
        step = latest - reference
        if abs(step) < floor:
            return None
        return step if abs(step) >= max(floor, self.p.step_sigmas * step_noise(values)) else None

    def _trace_rtt_step(self, obs: TraceObs, silent_traces: int = 0) -> float | None:
        """The step of the trace's last-hop RTT from the level of the latest traces on known routes, if
        big enough. After ``silent_traces`` traces kept out of that level (a silence's), from where
        the level's own trend has taken it over them (:func:`_expected_rtt`): a queue filling while a
        router rate-limits its answers for an hour moves the RTT as far, and steps nowhere."""
        if not obs.reached or obs.last_rtt_ms is None or len(self.rtts) < 3:
            return None
        reference = _expected_rtt(self.rtts, silent_traces + 1) if silent_traces > 1 else _latest_level(self.rtts)
        return self._step(self.rtts, obs.last_rtt_ms, reference, self.p.rtt_step_ms)

    def _owd_step(self, since: float | None) -> float | None:
        """The one-way delay's step since ``since`` (a trace's time), if it jumped and is big enough.

        The jump is the largest move between two consecutive samples from the last one before
        ``since`` on; it must exceed ``owd_step_ms`` and ``step_sigmas`` times the noise of the
        samples before it (:func:`step_noise`), and the latest sample must still be that far from
        the level before the jump (the median of up to three samples), the same way, and neither
        the move just before it nor the one just after may go the same way by ``ramp_share`` of the
        jump or more. A level that wanders or ramps (a standing queue filling or draining) moves
        about as much between every two samples, so no move stands out, and the first move of a
        ramp, after hours of a level standing still, goes on in the next; a route's change jumps
        once, from where the level stood to where it stays.
        """
        series = self.owd_series
        if since is None or len(self.delays) < 6 or len(series) < 2:
            return None
        values = [v for _, v in series]
        first = next((i for i, (t, _) in enumerate(series) if t > since), None)
        if first is None:
            return None
        at = max(range(max(1, first), len(values)), key=lambda k: abs(values[k] - values[k - 1]))
        jump = values[at] - values[at - 1]
        step = values[-1] - median(values[max(0, at - 3):at])
        floor = self.p.owd_step_ms
        if abs(jump) < floor or abs(step) < floor or jump * step <= 0:
            return None
        beside = [values[k] - values[k - 1] for k in (at - 1, at + 1) if 1 <= k < len(values)]
        if any(move * jump >= self.p.ramp_share * jump * jump for move in beside):
            return None     # the level moved that way just before or after too: a ramp (a queue filling or draining)
        before = values[max(0, at - 13):at]
        noise = step_noise(before) if len(before) >= 6 else step_noise(self.delays)
        least = max(floor, self.p.step_sigmas * noise)
        return step if abs(jump) >= least and abs(step) >= least else None

    def _rtt_follows(self, owd_step: float, rtt: float | None) -> bool:
        """Whether the candidate trace's RTT (when it reached) moved with a one-way delay step: the same
        way and by ``rtt_follow_share`` of it at least, beyond where the RTT's own trend would have
        taken it (:func:`_expected_rtt`). A route that lengthens one direction lengthens the round
        trip as much, at once; a clock correction (NTP) moves the one-way delay alone, and a queue
        filling or draining moves the RTT a like amount every trace."""
        if rtt is None or len(self.rtts) < 3:
            return True
        move = rtt - _expected_rtt(self.rtts)
        return move * owd_step > 0 and abs(move) >= self.p.rtt_follow_share * abs(owd_step)

    def _rtt_step(self, obs: TraceObs) -> float | None:
        """The RTT or OWD step that coincides with a change, for the evidence."""
        owd = self._owd_step(self.pending_t)
        return owd if owd is not None else self._trace_rtt_step(obs)

    def _new_as(self, obs: TraceObs, tool: _ToolRoutes) -> bool:
        new = set(as_path(obs.asns))
        if not new:
            return False
        known = set().union(*(set(as_path(v.asns)) for v in tool.known)) if tool.known else set()
        return bool(known) and bool(new - known)

    def _start_change(self, at: float, tool: _ToolRoutes, why: str, step: float | None) -> list[Anomaly]:
        candidate = tool.candidate
        tool.candidate = None
        if self.is_open("route_change"):
            tool.known.append(candidate)
            return []
        if not tool.known:      # every route was forgotten while it was pending (days without traces):
            tool.known.append(candidate)        # nothing to have changed from; learn it as the path's route
            return []
        # The known route that agrees with the new one longest is the one it diverged from.
        old = max(tool.known, key=lambda v: (divergence(v.hops, candidate.hops), v.last))
        ttl = divergence(old.hops, candidate.hops)
        old_as, new_as = as_path(old.asns), as_path(candidate.asns)
        as_changed = bool(new_as) and bool(old_as) and old_as != new_as
        evidence = {
            "divergence_ttl": ttl,
            "old_hops": list(old.hops[max(ttl - 2, 0): ttl + 2]),
            "new_hops": list(candidate.hops[max(ttl - 2, 0): ttl + 2]),
            "old_hop_count": len(old.hops),
            "new_hop_count": len(candidate.hops),
            "old_as_path": list(old_as),
            "new_as_path": list(new_as),
            "as_changed": as_changed,
            "rtt_step_ms": None if step is None else round(step, 3),
            "confirmation": why,
            "tool": tool.name,
            "known_routes": len(tool.known),
        }
        tool.changed_from = list(tool.known)
        tool.changed_at = candidate.first
        self.context.route_moves.add(candidate.first, step)
        tool.known = tool.known + [candidate]
        level = "AS-level" if as_changed else "IP-level"
        where = f"hop {ttl}: {old.hops[ttl - 1] if ttl <= len(old.hops) else 'end'} → " \
                f"{candidate.hops[ttl - 1] if ttl <= len(candidate.hops) else 'end'}"
        rtt = f", RTT/OWD {step:+.1f} ms" if step is not None else ""
        score = min(1.0, 0.6 + (0.2 if as_changed else 0) + (0.2 if step is not None else 0))
        return self.open(
            "route_change", start=candidate.first, at=at,
            # major when the AS path changed or the delay stepped with it; never critical alone (what
            # it brings, loss or a slower path, carries its own severity)
            severity="major" if as_changed or step is not None else "warning", score=score,
            summary=f"{level} route change at {where} ({len(old.hops)} → {len(candidate.hops)} hops{rtt}).",
            evidence=evidence,
        )

    def _end_change(self, tool: _ToolRoutes, t: float, why: str) -> list[Anomaly]:
        tool.changed_from, tool.changed_at = [], None
        self.rtts.clear()
        return self.close("route_change", t, {"ended": why})
