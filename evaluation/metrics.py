"""Per-kind scores from a matching: precision, recall, F1, detection delay, false alarms per 100 path-days.

Definitions, per kind K (and once over all kinds, the ``all`` row):

* **recall** = labels of kind K with at least one matching anomaly ÷ labels of kind K.
* **precision** = true alarms ÷ (true alarms + false alarms). An anomaly that matches labels is
  a true alarm of each kind among the labels it matches (for pathwatch that is its own kind; a
  WLCG alarm can be credited to several); an unmatched, unexplained anomaly is a false alarm
  of its own kind. Explained anomalies count in neither. In the ``all`` row each anomaly
  counts once.
* **F1** = 2PR / (P + R); 0 when one of them is 0 and the other undefined; undefined (None)
  when there are neither labels nor alarms.
* **detection delay** of a detected label = the earliest ``detected_at`` among its matching
  anomalies − the label's start, never below 0 (a detection inside the tolerance before the
  start counts as immediate); reported as the median and the maximum over detected labels.
* **false alarms per 100 path-days** = false alarms ÷ (distinct paths × days of data) × 100.

Two stricter readings of the same matching (:func:`score_strict`, :func:`score_grouped`):

* **strict**: no "explained" credit — every anomaly that matches no label of its own kind is a
  false alarm of its kind, also a true consequence of a labelled cause (a latency shift at a
  route change) and also a member of a true incident.
* **incident-grouped**: anomalies carrying the same ``incident_id`` (the id of their problem's
  root anomaly; an anomaly without one is its own incident) are ONE alarm. An incident is a
  true alarm, of the kind of each label any of its members matches, when any member matches a
  label; its other members are not counted at all. An incident no member of which matches a
  label is ONE false alarm, of its root's kind (the member whose id is the incident's, else its
  earliest). Recall and detection delay are the per-anomaly ones (a label is found when any
  anomaly matches it).

On a benign-only mesh (no labels) every alarm is false: strict counts anomalies, grouped counts
incidents, both per kind and per 100 path-days.

>>> from pathwatch.evaluation.matching import Label, make_anomaly, match
>>> labels = [Label("loss_step", "a", "b", 0.0, 7200.0), Label("loss_step", "b", "a", 0.0, 7200.0)]
>>> found = [make_anomaly("loss_step", "a", "b", 600.0, detected_at=900.0),
...          make_anomaly("loss_step", "c", "d", 600.0)]
>>> s = score(labels, found, match(labels, found, end_of_data=86400.0), path_days=4.0)["loss_step"]
>>> s.recall, s.precision, s.f1, s.delay_median_s, s.false_alarms_per_100_path_days
(0.5, 0.5, 0.5, 900.0, 25.0)
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from statistics import median
from typing import Any

from pathwatch.evaluation.matching import Label, Matching
from pathwatch.models.anomaly import KINDS, Anomaly

ALL = "all"
DAY = 86400.0


@dataclass(frozen=True)
class Score:
    """The counts behind one row of the report, and the metrics derived from them."""

    kind: str
    labels: int
    detected: int
    true_alarms: int
    false_alarms: int
    explained: int
    delays_s: tuple[float, ...]
    path_days: float

    @property
    def recall(self) -> float | None:
        return self.detected / self.labels if self.labels else None

    @property
    def precision(self) -> float | None:
        alarms = self.true_alarms + self.false_alarms
        return self.true_alarms / alarms if alarms else None

    @property
    def f1(self) -> float | None:
        p, r = self.precision, self.recall
        if p is None and r is None:
            return None
        if p is None or r is None or p + r == 0:
            return 0.0
        return 2 * p * r / (p + r)

    @property
    def delay_median_s(self) -> float | None:
        return float(median(self.delays_s)) if self.delays_s else None

    @property
    def delay_max_s(self) -> float | None:
        return max(self.delays_s) if self.delays_s else None

    @property
    def false_alarms_per_100_path_days(self) -> float | None:
        return 100 * self.false_alarms / self.path_days if self.path_days > 0 else None

    def to_dict(self) -> dict[str, Any]:
        def r(value: float | None, digits: int = 4) -> float | None:
            return None if value is None else round(value, digits)

        return {
            "labels": self.labels, "detected": self.detected, "true_alarms": self.true_alarms,
            "false_alarms": self.false_alarms, "explained": self.explained,
            "precision": r(self.precision), "recall": r(self.recall), "f1": r(self.f1),
            "delay_median_s": r(self.delay_median_s, 1), "delay_max_s": r(self.delay_max_s, 1),
            "delay_median": human_duration(self.delay_median_s), "delay_max": human_duration(self.delay_max_s),
            "false_alarms_per_100_path_days": r(self.false_alarms_per_100_path_days),
        }


def detection_delays(labels: Sequence[Label], anomalies: Sequence[Anomaly], matching: Matching) -> list[float | None]:
    """Per label: seconds from its start to the first matching anomaly's detection (≥ 0), or None if missed."""
    return [max(0.0, min(anomalies[j].detected_at for j in hits) - label.start) if hits else None
            for label, hits in zip(labels, matching.hits)]


def score(
    labels: Sequence[Label],
    anomalies: Sequence[Anomaly],
    matching: Matching,
    *,
    path_days: float,
    kinds: Sequence[str] = KINDS,
) -> dict[str, Score]:
    """One :class:`Score` per kind (in ``kinds`` order, plus any other kind seen) and the ``all`` row."""
    n_labels, delays = _label_counts(labels, anomalies, matching)
    true, false, explained = Counter(), Counter(), Counter()
    for j, anomaly in enumerate(anomalies):
        status = matching.status(j)
        if status == "match":
            true.update({labels[i].kind for i in matching.matched[j]} | {ALL})
        else:
            (explained if status == "explained" else false).update((anomaly.kind, ALL))
    return _scores(n_labels, delays, true, false, explained, path_days, kinds)


def incidents(anomalies: Sequence[Anomaly]) -> dict[str, list[int]]:
    """Member indices per incident id, in order of first appearance.

    >>> from dataclasses import replace
    >>> from pathwatch.evaluation.matching import make_anomaly
    >>> root = make_anomaly("route_change", "a", "b", 0.0)
    >>> member = replace(make_anomaly("latency_shift", "a", "b", 60.0), incident_id=root.id)
    >>> list(incidents([root, member, make_anomaly("loss_step", "c", "d", 0.0)]).values())
    [[0, 1], [2]]
    """
    groups: dict[str, list[int]] = {}
    for j, anomaly in enumerate(anomalies):
        groups.setdefault(anomaly.incident, []).append(j)
    return groups


def root_of(anomalies: Sequence[Anomaly], incident_id: str, members: Sequence[int]) -> int:
    """The index of the incident's root: the member whose id is the incident's, else its earliest."""
    for j in members:
        if anomalies[j].id == incident_id:
            return j
    return min(members, key=lambda j: (anomalies[j].start, anomalies[j].detected_at))


def _label_counts(labels: Sequence[Label], anomalies: Sequence[Anomaly], matching: Matching
                  ) -> tuple[Counter, dict[str, list[float]]]:
    n_labels: Counter = Counter()
    delays: dict[str, list[float]] = defaultdict(list)
    for label, delay in zip(labels, detection_delays(labels, anomalies, matching)):
        for key in (label.kind, ALL):
            n_labels[key] += 1
            if delay is not None:
                delays[key].append(delay)
    return n_labels, delays


def _scores(n_labels: Counter, delays: dict, true: Counter, false: Counter, explained: Counter,
            path_days: float, kinds: Sequence[str]) -> dict[str, Score]:
    order = list(kinds) + sorted({*n_labels, *true, *false, *explained} - set(kinds) - {ALL}) + [ALL]
    return {kind: Score(kind, n_labels[kind], len(delays[kind]), true[kind], false[kind], explained[kind],
                        tuple(delays[kind]), path_days) for kind in order}


def score_strict(
    labels: Sequence[Label],
    anomalies: Sequence[Anomaly],
    matching: Matching,
    *,
    path_days: float,
    kinds: Sequence[str] = KINDS,
) -> dict[str, Score]:
    """:func:`score` without "explained" credit: every anomaly matching no label is a false alarm.

    >>> from pathwatch.evaluation.matching import Label, make_anomaly, match
    >>> labels = [Label("route_change", "a", "b", 0.0, None)]
    >>> found = [make_anomaly("route_change", "a", "b", 0.0), make_anomaly("latency_shift", "a", "b", 0.0)]
    >>> m = match(labels, found, end_of_data=86400.0)
    >>> today, strict = (f(labels, found, m, path_days=1.0)["all"] for f in (score, score_strict))
    >>> today.false_alarms, strict.false_alarms
    (0, 1)
    """
    n_labels, delays = _label_counts(labels, anomalies, matching)
    true, false = Counter(), Counter()
    for j, anomaly in enumerate(anomalies):
        if matching.matched[j]:
            true.update({labels[i].kind for i in matching.matched[j]} | {ALL})
        else:
            false.update((anomaly.kind, ALL))
    return _scores(n_labels, delays, true, false, Counter(), path_days, kinds)


def score_grouped(
    labels: Sequence[Label],
    anomalies: Sequence[Anomaly],
    matching: Matching,
    *,
    path_days: float,
    kinds: Sequence[str] = KINDS,
) -> dict[str, Score]:
    """One alarm per incident (see the module docstring); ``explained`` stays 0.

    >>> from dataclasses import replace
    >>> from pathwatch.evaluation.matching import Label, make_anomaly, match
    >>> labels = [Label("route_change", "a", "b", 0.0, None)]
    >>> root = make_anomaly("route_change", "a", "b", 0.0)
    >>> found = [root, replace(make_anomaly("latency_shift", "a", "b", 0.0), incident_id=root.id),
    ...          make_anomaly("clock_error", "c", "d", 0.0)]
    >>> s = score_grouped(labels, found, match(labels, found, end_of_data=86400.0), path_days=1.0)
    >>> s["route_change"].true_alarms, s["latency_shift"].false_alarms, s["clock_error"].false_alarms
    (1, 0, 1)
    >>> s["all"].precision
    0.5
    """
    n_labels, delays = _label_counts(labels, anomalies, matching)
    true, false = Counter(), Counter()
    for incident_id, members in incidents(anomalies).items():
        matched = {labels[i].kind for j in members for i in matching.matched[j]}
        if matched:
            true.update(matched | {ALL})
        else:
            false.update((anomalies[root_of(anomalies, incident_id, members)].kind, ALL))
    return _scores(n_labels, delays, true, false, Counter(), path_days, kinds)


def human_duration(seconds: float | None) -> str | None:
    """A duration in the unit a person reads it in.

    >>> [human_duration(s) for s in (42, 720, 5400, 86400 * 2.5, None)]
    ['42 s', '12 min', '1.5 h', '2.5 d', None]
    """
    if seconds is None:
        return None
    if seconds < 90:
        return f"{seconds:.0f} s"
    if seconds < 90 * 60:
        return f"{seconds / 60:.0f} min"
    if seconds < 36 * 3600:
        return f"{seconds / 3600:.1f} h"
    return f"{seconds / DAY:.1f} d"
