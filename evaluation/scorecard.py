"""The issue's detection targets, checked on one simulated mesh end to end.

:func:`score_seed` simulates a mesh, parses it once, replays it through the detectors and the
WLCG/OSG baseline, and scores both — pathwatch three ways (as ``pathwatch evaluate`` does, strict,
and incident-grouped: :mod:`pathwatch.evaluation.metrics`); :func:`missed_targets` lists every
target the scores miss:

* per kind F1 ≥ 0.95 with incidents grouped, and at least the baseline's F1 (per anomaly);
* per kind recall ≥ 0.95;
* false alarms ≤ 1 per 100 path-days grouped and ≤ 2 strict, per kind and over all kinds;
* route changes detected on the first trace after the change: no later than that trace (found in
  the raw records: a skipped or late trace moves it) plus a quarter of the trace interval;
* rising loss detected before the loss passes 0.1 % (from the label's injected ramp);
* diurnal saturation within 3 days of onset;
* every kind detected no later than the baseline (median delay).

On a benign-only mesh (``benign_only=True``: no labels) only the false-alarm targets apply.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from pathwatch.evaluation.inputs import read_labels, simulated_records
from pathwatch.evaluation.matching import match
from pathwatch.evaluation.metrics import ALL, Score, detection_delays, incidents, score, score_grouped, score_strict

DAY = 86400.0
F1_TARGET = 0.95
FALSE_ALARMS_PER_100_PATH_DAYS = 1.0          # grouped
STRICT_FALSE_ALARMS_PER_100_PATH_DAYS = 2.0   # strict
RECALL_TARGET = 0.95
ROUTE_ALLOWANCE = 0.25    # of a trace interval, after the first trace past the change
RISING_LOSS_LIMIT = 1e-3
DIURNAL_DAYS = 3.0


@dataclass
class SeedScore:
    seed: int
    ours: dict[str, Score]
    baseline: dict[str, Score]
    trace_interval_s: float
    rising_loss_at_detection: list[float | None] = field(default_factory=list)
    records: int = 0
    strict: dict[str, Score] = field(default_factory=dict)
    grouped: dict[str, Score] = field(default_factory=dict)
    benign_only: bool = False
    anomalies: int = 0
    incidents: int = 0
    false_alarm_examples: list[dict] = field(default_factory=list)
    # per route_change label detected: (detection delay, seconds from the change to the path's first trace)
    route_first_trace: list[tuple[float, float]] = field(default_factory=list)

    @property
    def route_lateness_s(self) -> float | None:
        """How long after the first trace that could show it the latest route change was found."""
        return max((delay - first for delay, first in self.route_first_trace), default=None)

    def to_dict(self) -> dict[str, Any]:
        return {"seed": self.seed, "family": "benign-only" if self.benign_only else "labelled",
                "records": self.records, "anomalies": self.anomalies, "incidents": self.incidents,
                "trace_interval_s": self.trace_interval_s,
                "route_change_after_first_trace_s": None if self.route_lateness_s is None
                else round(self.route_lateness_s, 1),
                "ours": {k: s.to_dict() for k, s in self.ours.items()},
                "ours_strict": {k: s.to_dict() for k, s in self.strict.items()},
                "ours_grouped": {k: s.to_dict() for k, s in self.grouped.items()},
                "wlcg": {k: s.to_dict() for k, s in self.baseline.items()},
                "false_alarm_incidents": self.false_alarm_examples,
                "rising_loss_at_detection_pct": [None if v is None else round(100 * v, 4)
                                                 for v in self.rising_loss_at_detection],
                "missed_targets": missed_targets(self)}


def score_seed(seed: int, workdir: Path, *, hosts: int, days: int, cadences: list[str] | tuple[str, ...] = (),
               benign_only: bool = False, benign: bool = True) -> SeedScore:
    """Simulate seed ``seed`` (``cadences``: ``NAME=SECONDS`` test cadences; ``benign_only``: the
    benign-only family; ``benign=False``: without the benign catalogue, as meshes were before it),
    detect, score both."""
    from pathwatch.models.baseline_wlcg import collect, covers, run_baseline, series_extent
    from pathwatch.models.engine import replay

    out = workdir / f"seed-{seed}{'-benign' if benign_only else ''}"
    records = simulated_records(out, seed=seed, hosts=hosts, days=days, cadences=cadences, benign_only=benign_only,
                                benign=benign)
    ours = replay(records).anomalies
    series = collect(records)
    baseline = run_baseline(series)
    labels = read_labels(out / "labels.jsonl")
    start, end = series_extent(series)
    path_days = len(series) * (end - start) / DAY
    ours_match = match(labels, ours, end_of_data=end)
    mesh = orjson.loads((out / "mesh.json").read_bytes())
    cadences = mesh["cadences_s"]
    result = SeedScore(
        seed=seed,
        ours=score(labels, ours, ours_match, path_days=path_days),
        baseline=score(labels, baseline, match(labels, baseline, end_of_data=end, credits=covers), path_days=path_days),
        trace_interval_s=float(cadences["trace_s"]),
        records=len(records),
        strict=score_strict(labels, ours, ours_match, path_days=path_days),
        grouped=score_grouped(labels, ours, ours_match, path_days=path_days),
        benign_only=benign_only,
        anomalies=len(ours),
        incidents=len(incidents(ours)),
        false_alarm_examples=false_alarm_incidents(ours, ours_match),
    )
    raw_labels = [orjson.loads(line) for line in (out / "labels.jsonl").read_bytes().splitlines()]
    traces = _trace_times(records)
    for label, row, delay in zip(labels, raw_labels, detection_delays(labels, ours, ours_match)):
        if label.kind == "route_change" and delay is not None:
            after = [t for t in traces.get((label.source, label.destination), ()) if t >= label.start]
            if after:
                result.route_first_trace.append((delay, min(after) - label.start))
        if label.kind == "rising_loss":
            result.rising_loss_at_detection.append(None if delay is None else _ramp_loss(row.get("params") or {}, delay))
    return result


def false_alarm_incidents(anomalies, matching, limit: int = 60) -> list[dict]:
    """The incidents no member of which matches a label (their root, member count and kinds), for people
    chasing a false alarm: what, where, when."""
    from pathwatch.contract.timefmt import from_epoch
    from pathwatch.evaluation.metrics import root_of

    out = []
    for incident_id, members in incidents(anomalies).items():
        if any(matching.matched[j] for j in members):
            continue
        root = anomalies[root_of(anomalies, incident_id, members)]
        out.append({"kind": root.kind, "source": root.source, "destination": root.destination,
                    "start": from_epoch(root.start), "members": len(members),
                    "member_kinds": sorted({anomalies[j].kind for j in members}), "summary": root.summary[:160]})
    return out[:limit]


def _trace_times(records) -> dict[tuple, list[float]]:
    """Start times of every trace record, per directed path."""
    from pathwatch.contract.timefmt import parse_rfc3339

    out: dict[tuple, list[float]] = {}
    for record in records:
        if record.get("kind") == "trace":
            out.setdefault((record.get("source"), record.get("destination")), []).append(
                parse_rfc3339(record["time"]).timestamp())
    return out


def _ramp_loss(params: dict, seconds: float) -> float:
    """The injected loss ``seconds`` into a ramp: final · (elapsed / ramp length) ^ shape."""
    ramp_s = params.get("ramp_days", 1.0) * DAY
    return params.get("final_loss", 0.0) * min(1.0, seconds / ramp_s) ** params.get("shape", 1.0)


def missed_targets(s: SeedScore) -> list[str]:
    """Human sentences, one per target this seed misses (empty when all are met)."""
    missed = []
    for kind, ours in s.ours.items():
        if kind == ALL or not ours.labels:
            continue
        grouped = s.grouped.get(kind, ours)
        theirs = s.baseline.get(kind)
        if (grouped.f1 or 0.0) < F1_TARGET:
            missed.append(f"{kind}: F1 {grouped.f1 or 0.0:.2f} grouped < {F1_TARGET}")
        if (ours.recall or 0.0) < RECALL_TARGET:
            missed.append(f"{kind}: recall {ours.recall or 0.0:.2f} < {RECALL_TARGET}")
        if theirs is not None and (theirs.f1 or 0.0) > (ours.f1 or 0.0):
            missed.append(f"{kind}: F1 {ours.f1 or 0.0:.2f} behind the baseline's {theirs.f1:.2f}")
        if theirs is not None and theirs.delay_median_s is not None and (
                ours.delay_median_s is None or ours.delay_median_s > theirs.delay_median_s):
            missed.append(f"{kind}: median delay {ours.delay_median_s} s behind the baseline's {theirs.delay_median_s} s")
    missed += false_alarm_misses(s.grouped or s.ours, s.strict or s.ours)
    late = s.route_lateness_s
    if late is not None and late > ROUTE_ALLOWANCE * s.trace_interval_s:
        missed.append(f"route_change: detected {late / 60:.0f} min after the first trace that could show it "
                      f"({s.trace_interval_s / 60:.0f} min cadence)")
    for loss in s.rising_loss_at_detection:
        if loss is not None and loss >= RISING_LOSS_LIMIT:
            missed.append(f"rising_loss: detected at {100 * loss:.3f} % loss, not before 0.1 %")
    diurnal = s.ours.get("diurnal_saturation")
    if diurnal and diurnal.delay_max_s is not None and diurnal.delay_max_s > DIURNAL_DAYS * DAY:
        missed.append(f"diurnal_saturation: detected {diurnal.delay_max_s / DAY:.1f} days after onset (> 3)")
    return missed


def false_alarm_misses(grouped: dict[str, Score], strict: dict[str, Score]) -> list[str]:
    """The false-alarm targets missed, per kind and over all kinds (``all``): grouped ≤ 1, strict ≤ 2
    per 100 path-days."""
    missed = []
    for name, scores, limit in (("grouped", grouped, FALSE_ALARMS_PER_100_PATH_DAYS),
                                ("strict", strict, STRICT_FALSE_ALARMS_PER_100_PATH_DAYS)):
        for kind, s in scores.items():
            fa = s.false_alarms_per_100_path_days or 0.0
            if fa > limit:
                where = "over all kinds" if kind == ALL else kind
                missed.append(f"{where}: {fa:.2f} false alarms per 100 path-days {name} > {limit:g}")
    return missed
