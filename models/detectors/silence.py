"""no_data: a path whose measurements stop arriving beyond their own cadence.

Each series — throughput, one-way latency, ping, and traces per tool (a mesh running traceroute
and tracepath each hourly, minutes apart, would otherwise seem to trace every few minutes) —
keeps its recent inter-arrival gaps; its cadence is their median. When
nothing of a type arrives for ``misses`` cadences (and at least ``min_slack_s`` past one
cadence, and longer than any gap the schedule itself left among the recent ones), an event-time
deadline fires and the path opens ``no_data`` from the moment the next result was due. The next
arrival of every overdue type closes it. A type missing while the path's other types still arrive
(after its next result was due) is a test skipped or failing, not a silent path: it counts only
once it has been missing ``alone_s``.

A schedule with slip (pSConfig's ``slip`` with ``sliprand``) spreads its gaps from
``repeat - slip`` to ``repeat + slip``: with a slip of half the repeat, the longest is three times
the shortest, so the median of the first few gaps can sit near the shortest and a normal gap
look like ``misses`` cadences. The largest recent gap is what the schedule has shown it leaves;
it counts up to ``slip_cadences`` cadences (a gap kept only when no due time caught it: a
silence while the cadence was still being learnt must not blunt the next one for a whole history).
"""

from __future__ import annotations

from dataclasses import dataclass

from pathwatch.contract.timefmt import from_epoch
from pathwatch.models.anomaly import Anomaly
from pathwatch.models.base import Detector
from pathwatch.models.params import Params
from pathwatch.models.observe import LatencyObs, ThroughputObs, TraceObs
from pathwatch.models.window import SortedWindow



@dataclass(frozen=True)
class SilenceParams(Params):
    misses: float = 3.0          # cadences without a result before the path counts as silent
    min_slack_s: float = 1800.0  # and at least this long past the first missed result
    min_gaps: int = 3            # gaps seen before a cadence is trusted
    history: int = 12            # gaps kept per measurement type
    max_cadence_s: float = 86400.0  # results rarer than this have no cadence to miss
    slip_cadences: float = 6.0   # a gap left among the recent ones is the schedule's, up to this many cadences
    alone_s: float = 6 * 3600.0  # one type overdue while the path's other types still arrive: silent only this
                                 # long after its last result (a test skipped or failing, not the path)


_UNKNOWN = object()     # a cadence's wait not worked out since its gaps last moved


class _Cadence:
    __slots__ = ("last", "gaps", "wait")

    def __init__(self, history: int):
        self.last: float | None = None
        self.gaps = SortedWindow(history)
        # How long after the last result it is overdue (None: no cadence), kept until the gaps
        # move (a steady gap replacing an equal one leaves their median, and so the wait, as it was)
        self.wait = _UNKNOWN

    def period(self, min_gaps: int) -> float | None:
        if len(self.gaps) < min_gaps:
            return None
        return self.gaps.median()

    def kept_wait(self, p: SilenceParams) -> float | None:
        """:meth:`work_out_wait`, worked out again only once the gaps moved."""
        wait = self.wait
        if wait is _UNKNOWN:
            wait = self.wait = self.work_out_wait(p)
        return wait

    def work_out_wait(self, p: SilenceParams) -> float | None:
        """How long after the last result the next is overdue (None: no cadence yet, or too rare):
        ``misses`` cadences, at least ``min_slack_s`` past one, and beyond the largest recent gap
        (up to ``slip_cadences`` cadences), which is the schedule's own slip.

        >>> cadence = _Cadence(12)
        >>> cadence.gaps.extend((900.0, 4500.0, 900.0))   # 15, 75, 15 min: a 15-minute cadence
        >>> cadence.work_out_wait(SilenceParams())         # overdue after 75 min, not after 45
        4500.0
        """
        gaps = self.gaps
        if len(gaps.values) < p.min_gaps:
            return None
        period = gaps.median()
        if period > p.max_cadence_s:
            return None
        slip = gaps.sorted[-1]          # (gaps are later minus earlier times: never NaN)
        return max(p.misses * period, period + p.min_slack_s, min(slip, p.slip_cadences * period))

    def __getstate__(self):
        return None, {"last": self.last, "gaps": self.gaps}     # (the wait is worked out anew)

    def __setstate__(self, state) -> None:
        self.last, self.gaps = state[1]["last"], state[1]["gaps"]
        self.wait = _UNKNOWN


class SilenceDetector(Detector):
    name = "silence"
    kinds = ("no_data",)
    reads = (ThroughputObs, LatencyObs, TraceObs)
    Params = SilenceParams
    timed = True

    def __init__(self, source, destination, params=None, context=None):
        super().__init__(source, destination, params, context)
        self.cadences: dict[str, _Cadence] = {}
        self.overdue: set[str] = set()
        # When each type's next result is overdue (None: no cadence yet, or already overdue), and
        # the earliest of them; an observation changes only its own type's.
        self.dues: dict[str, float | None] = {}
        self._deadline: float | None = None
        # Types found overdue alone (the path's other types arriving since): overdue from this time.
        self.alone: dict[str, float] = {}


    def _due(self, kind: str) -> float | None:
        """When the next ``kind`` result is overdue (None: no cadence yet, or already overdue)."""
        cadence = self.cadences[kind]
        if cadence.last is None or kind in self.overdue:
            return None
        if kind in self.alone:
            return self.alone[kind]
        wait = cadence.kept_wait(self.p)
        return None if wait is None else cadence.last + wait

    def _others_arrive(self, kind: str) -> bool:
        """Whether another type of the path arrived after ``kind``'s next result was due: the path
        answers and its collector runs; only this test is missing."""
        cadence = self.cadences[kind]
        expected = cadence.last + (cadence.period(self.p.min_gaps) or 0.0)
        return any(other != kind and c.last is not None and c.last > expected for other, c in self.cadences.items())

    def _settle(self, kinds) -> None:
        """Recompute the due times of ``kinds``, then the deadline (their minimum, as ``min`` takes it)."""
        dues = self.dues
        for kind in kinds:
            dues[kind] = self._due(kind)
        self._deadline = _earliest(dues)

    def deadline(self) -> float | None:
        return self._deadline

    def on_time(self, now: float) -> list[Anomaly]:
        newly = []
        for kind in self.cadences:
            due = self._due(kind)
            if due is None or due > now:
                continue
            alone_until = self.cadences[kind].last + self.p.alone_s
            if kind not in self.alone and now < alone_until and self._others_arrive(kind):
                self.alone[kind] = alone_until      # (a test skipped or failing: not silence yet)
                continue
            newly.append(kind)
        self.overdue.update(newly)
        self._settle(self.cadences)
        if not newly or self.is_open("no_data"):
            return []
        kinds = sorted(self.overdue)
        expected = min(self.cadences[k].last + self.cadences[k].period(self.p.min_gaps) for k in kinds)
        last_seen = max(self.cadences[k].last for k in kinds)
        evidence = {
            "silent_types": kinds,
            "last_seen": {k: from_epoch(self.cadences[k].last) for k in kinds},
            "cadence_s": {k: round(self.cadences[k].period(self.p.min_gaps), 1) for k in kinds},
        }
        return self.open(
            "no_data", start=expected, at=now, severity="warning", score=1.0,
            summary=f"No {', '.join(kinds)} results since {from_epoch(last_seen)} "
                    f"(expected every {_human(min(evidence['cadence_s'].values()))}).",
            evidence=evidence,
        )

    def observe(self, obs) -> list[Anomaly]:
        # The scheduled test it comes from, whose cadence is learnt: ``latency`` (one-way), ``ping``,
        # the trace tool's name (``traceroute``, ``tracepath``, ...) or ``throughput``.
        cls = type(obs)
        if cls is LatencyObs:
            kind = "latency" if obs.one_way else "ping"
        elif cls is TraceObs:
            kind = obs.tool
        else:
            kind = "throughput"
        t = obs.t
        cadence = self.cadences.get(kind)
        if cadence is None:
            cadence = self.cadences[kind] = _Cadence(self.p.history)
        out: list[Anomaly] = []
        last = cadence.last
        overdue = self.overdue
        self.alone.pop(kind, None)
        if kind in overdue:
            overdue.discard(kind)
            if not overdue:
                out = self.close("no_data", t, {"resumed_at": from_epoch(t)})
        elif last is not None and t > last:
            if cadence.gaps.append(t - last):
                cadence.wait = _UNKNOWN
        if last is None or t > last:
            cadence.last = last = t
        # Only this type's due time moved: _settle for one type (which is not overdue now and has
        # a last time), the deadline left as it is when another type's due was and is the earliest.
        wait = cadence.kept_wait(self.p)
        dues = self.dues
        before, earliest = dues.get(kind), self._deadline
        dues[kind] = due = None if wait is None else last + wait
        if before is not None and due is not None and earliest is not None and before > earliest <= due:
            return out
        self._deadline = _earliest(dues)
        return out


def _earliest(dues: dict[str, float | None]) -> float | None:
    """The earliest due time, as ``min`` takes it (None: none)."""
    earliest = None
    for due in dues.values():
        if due is not None and (earliest is None or due < earliest):
            earliest = due
    return earliest


def _human(seconds: float) -> str:
    """``90`` → '90 s', ``5400`` → '1.5 h'."""
    if seconds >= 3600:
        return f"{seconds / 3600:.3g} h"
    if seconds >= 60:
        return f"{seconds / 60:.3g} min"
    return f"{seconds:.3g} s"
