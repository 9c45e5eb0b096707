"""The issue's detection targets, checked on one simulated mesh end to end.

:func:`score_seed` simulates a mesh, parses it once, replays it through the detectors and the
WLCG/OSG baseline, and scores both; :func:`missed_targets` lists every target the scores miss:

* per kind F1 ≥ 0.95, and at least the baseline's;
* false alarms ≤ 1 per 100 path-days;
* route changes detected on the first trace after the change (delay ≤ one trace interval, plus
  the interval's jitter allowance);
* rising loss detected before the loss passes 0.1 % (from the label's injected ramp);
* diurnal saturation within 3 days of onset;
* every kind detected no later than the baseline (median delay).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from pathwatch.evaluation.inputs import read_labels, simulated_records
from pathwatch.evaluation.matching import match
from pathwatch.evaluation.metrics import ALL, Score, detection_delays, score

DAY = 86400.0
F1_TARGET = 0.95
FALSE_ALARMS_PER_100_PATH_DAYS = 1.0
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

    def to_dict(self) -> dict[str, Any]:
        return {"seed": self.seed, "records": self.records,
                "ours": {k: s.to_dict() for k, s in self.ours.items()},
                "wlcg": {k: s.to_dict() for k, s in self.baseline.items()},
                "rising_loss_at_detection_pct": [None if v is None else round(100 * v, 4)
                                                 for v in self.rising_loss_at_detection],
                "missed_targets": missed_targets(self)}


def score_seed(seed: int, workdir: Path, *, hosts: int, days: int, cadences: list[str] | tuple[str, ...] = ()) -> SeedScore:
    """Simulate seed ``seed`` (``cadences``: ``NAME=SECONDS`` test cadences), detect, score both."""
    from pathwatch.models.baseline_wlcg import collect, covers, run_baseline, series_extent
    from pathwatch.models.engine import replay

    out = workdir / f"seed-{seed}"
    records = simulated_records(out, seed=seed, hosts=hosts, days=days, cadences=cadences)
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
    )
    raw_labels = [orjson.loads(line) for line in (out / "labels.jsonl").read_bytes().splitlines()]
    for label, row, delay in zip(labels, raw_labels, detection_delays(labels, ours, ours_match)):
        if label.kind == "rising_loss":
            result.rising_loss_at_detection.append(None if delay is None else _ramp_loss(row.get("params") or {}, delay))
    return result


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
        theirs = s.baseline.get(kind)
        if (ours.f1 or 0.0) < F1_TARGET:
            missed.append(f"{kind}: F1 {ours.f1:.2f} < {F1_TARGET}")
        if theirs is not None and (theirs.f1 or 0.0) > (ours.f1 or 0.0):
            missed.append(f"{kind}: F1 {ours.f1:.2f} behind the baseline's {theirs.f1:.2f}")
        if theirs is not None and theirs.delay_median_s is not None and (
                ours.delay_median_s is None or ours.delay_median_s > theirs.delay_median_s):
            missed.append(f"{kind}: median delay {ours.delay_median_s} s behind the baseline's {theirs.delay_median_s} s")
    fa = s.ours[ALL].false_alarms_per_100_path_days or 0.0
    if fa > FALSE_ALARMS_PER_100_PATH_DAYS:
        missed.append(f"{fa:.2f} false alarms per 100 path-days > {FALSE_ALARMS_PER_100_PATH_DAYS}")
    route = s.ours.get("route_change")
    if route and route.delay_max_s is not None and route.delay_max_s > s.trace_interval_s * 1.25:
        missed.append(f"route_change: detected {route.delay_max_s / 60:.0f} min after the change, "
                      f"later than the first trace ({s.trace_interval_s / 60:.0f} min cadence)")
    for loss in s.rising_loss_at_detection:
        if loss is not None and loss >= RISING_LOSS_LIMIT:
            missed.append(f"rising_loss: detected at {100 * loss:.3f} % loss, not before 0.1 %")
    diurnal = s.ours.get("diurnal_saturation")
    if diurnal and diurnal.delay_max_s is not None and diurnal.delay_max_s > DIURNAL_DAYS * DAY:
        missed.append(f"diurnal_saturation: detected {diurnal.delay_max_s / DAY:.1f} days after onset (> 3)")
    return missed
