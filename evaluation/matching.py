"""Which anomalies match which labels, and which are explained or false alarms.

Definitions (times in Unix seconds; ``end_of_data`` is the latest time in the labels, the
anomalies and the raw records):

* A label's window is ``[start − tolerance, end]`` and an anomaly's is ``[start, end]``; a
  missing (null) end stands for ``end_of_data``. Windows are closed: touching ends overlap.
* An anomaly **matches** a label when its source and destination equal the label's, the two
  windows overlap, and the label's kind is one the anomaly is *credited* for. A pathwatch
  anomaly is credited for its own kind only (:func:`own_kind`); a WLCG baseline alarm for the
  kinds its rule covers (:func:`pathwatch.models.baseline_wlcg.covers`).
* An anomaly that matches no label is **explained** when, on the same path with overlapping
  windows (the label's widened by the tolerance after its end too, since a route that reverts
  shifts delay back), there is a label of a kind L whose known consequences (:data:`CONSEQUENCES`)
  include the anomaly's kind: a throughput drop during a route change is a true symptom of the
  route change, not a false alarm. Explained anomalies are neither true nor false alarms.
* Every other anomaly is a **false alarm**.

>>> label = Label("route_change", "a", "b", start=1000.0, end=2000.0)
>>> found = [make_anomaly("route_change", "a", "b", 500.0, end=700.0),  # within the 1 h tolerance: matches
...          make_anomaly("throughput_drop", "a", "b", 1500.0),         # a consequence: explained
...          make_anomaly("loss_step", "a", "b", 1500.0)]               # a false alarm
>>> m = match([label], found, end_of_data=5000.0)
>>> m.hits, [m.status(i) for i in range(3)]
(((0,),), ['match', 'explained', 'false'])
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from pathwatch.models.anomaly import Anomaly
# Label kind -> anomaly kinds that are known consequences of it (explained, not false alarms): the
# incidents' table, so what the grouping joins to a cause is what the evaluation explains by it.
from pathwatch.models.incidents import CONSEQUENCES

HOUR = 3600.0


@dataclass(frozen=True)
class Label:
    """One labelled pathology episode on one directed path; ``end`` None lasts to the end of data."""

    kind: str
    source: str | None
    destination: str | None
    start: float
    end: float | None = None
    line: int = 0


def own_kind(anomaly: Anomaly) -> frozenset[str]:
    """What a pathwatch anomaly is credited for: its own kind."""
    return frozenset((anomaly.kind,))


def overlaps(a_start: float, a_end: float, b_start: float, b_end: float) -> bool:
    """Closed intervals [a_start, a_end] and [b_start, b_end] share a point.

    >>> overlaps(0, 1, 1, 2), overlaps(0, 1, 1.5, 2)
    (True, False)
    """
    return a_start <= b_end and b_start <= a_end


@dataclass(frozen=True)
class Matching:
    """Per label the anomalies that match it; per anomaly the labels it matches and whether it is explained."""

    hits: tuple[tuple[int, ...], ...]
    matched: tuple[tuple[int, ...], ...]
    explained: tuple[bool, ...]

    def status(self, index: int) -> str:
        """``match``, ``explained`` or ``false`` for the anomaly at ``index``."""
        if self.matched[index]:
            return "match"
        return "explained" if self.explained[index] else "false"


def match(
    labels: Sequence[Label],
    anomalies: Sequence[Anomaly],
    *,
    end_of_data: float,
    tolerance_s: float = HOUR,
    credits: Callable[[Anomaly], frozenset[str]] = own_kind,
) -> Matching:
    """Match anomalies to labels as the module docstring defines it."""
    by_path: dict[tuple, list[int]] = defaultdict(list)
    for index, label in enumerate(labels):
        by_path[(label.source, label.destination)].append(index)
    hits: list[list[int]] = [[] for _ in labels]
    matched: list[tuple[int, ...]] = []
    explained: list[bool] = []
    for j, anomaly in enumerate(anomalies):
        a_end = max(anomaly.start, end_of_data if anomaly.end is None else anomaly.end)
        kinds = credits(anomaly)
        mine: list[int] = []
        consequence = False
        for i in by_path.get((anomaly.source, anomaly.destination), ()):
            label = labels[i]
            l_end = end_of_data if label.end is None else label.end
            if not overlaps(anomaly.start, a_end, label.start - tolerance_s, l_end):
                continue
            if label.kind in kinds:
                mine.append(i)
                hits[i].append(j)
            elif anomaly.kind in CONSEQUENCES.get(label.kind, ()):
                consequence = True
        for i in by_path.get((anomaly.source, anomaly.destination), ()):
            # A label's consequences may also follow its end (a route reverting shifts delay back).
            label = labels[i]
            l_end = end_of_data if label.end is None else label.end
            if anomaly.kind in CONSEQUENCES.get(label.kind, ()) and overlaps(
                    anomaly.start, a_end, label.start - tolerance_s, l_end + tolerance_s):
                consequence = True
        matched.append(tuple(mine))
        explained.append(consequence and not mine)
    return Matching(tuple(map(tuple, hits)), tuple(matched), tuple(explained))


def make_anomaly(kind: str, source: str, destination: str, start: float, *, end: float | None = None,
            detected_at: float | None = None) -> Anomaly:
    """A minimal anomaly for examples and tests (detected at its start unless told)."""
    made = Anomaly.open(kind, source, destination, start=start,
                        detected_at=start if detected_at is None else detected_at,
                        severity="warning", score=1.0, summary=f"{kind} on {source} → {destination}", evidence={})
    return made if end is None else made.closed(end)
