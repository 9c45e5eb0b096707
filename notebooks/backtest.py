"""Backtests: a labelled simulated mesh through the ``models/`` detectors with other parameters.

The same pieces as ``pathwatch simulate | detect | evaluate``: :func:`labelled_set` simulates
and parses once; :func:`sweep` replays the records through :func:`pathwatch.models.engine.replay`
(the engine ``pathwatch detect`` runs, the ``PathMonitor`` the stream keeps) once per parameter
value and scores each run with :mod:`pathwatch.evaluation` (the definitions ``evaluate`` prints).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import pandas as pd

DAY = 86400.0


@dataclass
class LabelledSet:
    """Parsed records of one simulated mesh, its labels and its extent."""

    records: list[dict[str, Any]]
    labels: list  # pathwatch.evaluation.matching.Label
    paths: int
    start: float
    end: float
    directory: Path

    @property
    def path_days(self) -> float:
        return self.paths * (self.end - self.start) / DAY


def labelled_set(directory: Path, *, seed: int, hosts: int, days: int, start: str | None = None) -> LabelledSet:
    """Simulate a mesh into ``directory`` (reused when already there) and parse it with the project's parsers."""
    from pathwatch.evaluation.inputs import read_labels, simulated_records
    from pathwatch.models.observe import epoch

    directory = Path(directory)
    records = simulated_records(directory, seed=seed, hosts=hosts, days=days, start=start, reuse=True)
    times = [epoch(r["time"]) for r in records]
    return LabelledSet(records, read_labels(directory / "labels.jsonl"),
                       len({(r["source"], r["destination"]) for r in records}), min(times), max(times), directory)


def detector_config(overrides: dict[str, dict[str, Any]] | None = None):
    """The detectors' configuration with per-detector overrides, as ``pathwatch detect --config`` reads it."""
    from pathwatch.models.config import DetectorConfig

    return DetectorConfig.from_mapping(overrides or {})


def run_once(data: LabelledSet, overrides: dict[str, dict[str, Any]] | None = None) -> tuple[list, dict]:
    """(anomalies, scores per kind) of one replay of ``data`` with ``overrides``."""
    from pathwatch.evaluation.matching import match
    from pathwatch.evaluation.metrics import score
    from pathwatch.models.engine import replay

    found = replay(data.records, detector_config(overrides)).anomalies
    scores = score(data.labels, found, match(data.labels, found, end_of_data=data.end), path_days=data.path_days)
    return found, scores


def sweep(data: LabelledSet, detector: str, parameter: str, values: Sequence[Any], kinds: Sequence[str] = ("all",),
          base: dict[str, dict[str, Any]] | None = None) -> pd.DataFrame:
    """One row per (value, kind): labels, detected, true/false alarms, precision, recall, F1, delays."""
    import pandas as pd

    rows = []
    for value in values:
        overrides = {name: dict(params) for name, params in (base or {}).items()}
        overrides.setdefault(detector, {})[parameter] = value
        found, scores = run_once(data, overrides)
        for kind in kinds:
            s = scores.get(kind)
            if s is None:
                continue
            rows.append({"value": value, "kind": kind, "anomalies": len(found), "labels": s.labels,
                         "detected": s.detected, "true_alarms": s.true_alarms, "false_alarms": s.false_alarms,
                         "precision": s.precision, "recall": s.recall, "f1": s.f1,
                         "delay_median_h": None if s.delay_median_s is None else s.delay_median_s / 3600,
                         "delay_max_h": None if s.delay_max_s is None else s.delay_max_s / 3600})
    return pd.DataFrame(rows)


def vetoed_table(records: Sequence[dict[str, Any]], overrides: dict[str, dict[str, Any]] | None = None, *,
                 source: str | None = None, destination: str | None = None) -> pd.DataFrame:
    """Why did this not alarm? Every candidate change a named veto held back or dismissed when
    ``records`` (canonical record dicts) are replayed with ``overrides``, one row each (path, kind,
    veto, verdict, start and decision time as UTC timestamps, baseline, level, threshold), oldest
    first; only the path ``source`` > ``destination`` when given."""
    import pandas as pd

    from pathwatch.models.engine import replay

    rows = [v for v in replay(records, detector_config(overrides), keep_vetoed=True).vetoed
            if (source is None or v["source"] == source) and (destination is None or v["destination"] == destination)]
    table = pd.DataFrame(rows, columns=["source", "destination", "kind", "veto", "verdict", "start", "at",
                                        "baseline_ms", "level_ms", "threshold_ms"])
    for column in ("start", "at"):
        table[column] = pd.to_datetime(table[column], unit="s", utc=True)
    return table.sort_values("at", kind="stable").reset_index(drop=True)


def label_table(data: LabelledSet) -> pd.DataFrame:
    """The injected pathologies (labels) as a table."""
    import pandas as pd

    return pd.DataFrame([{"kind": x.kind, "source": x.source, "destination": x.destination,
                          "start": pd.Timestamp(x.start, unit="s", tz="UTC"),
                          "end": None if x.end is None else pd.Timestamp(x.end, unit="s", tz="UTC")}
                         for x in data.labels])
