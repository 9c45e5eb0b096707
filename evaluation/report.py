"""The evaluation report: a JSON-ready dict and a rich table, pathwatch and the WLCG baseline per kind.

pathwatch is scored as matched (consequences of a labelled cause explained), and, when given,
strict (no explained credit) and incident-grouped (one alarm per incident): the JSON's
``pathwatch_strict`` and ``pathwatch_grouped``, and the table's ``strict``/``grouped`` rows.

>>> from pathwatch.evaluation.metrics import Score
>>> row = {"all": Score("all", 2, 1, 1, 1, 0, (60.0,), 10.0)}
>>> r = Report(row, None, tolerance_s=3600.0, start=0.0, end=86400.0, paths=10, paths_from="raw",
...            labels=2, anomalies=2)
>>> d = r.to_dict()
>>> d["pathwatch"]["all"]["f1"], d["wlcg"], d["data"]["path_days"]
(0.5, None, 10.0)
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from rich import box
from rich.console import Console
from rich.table import Table

from pathwatch.contract.timefmt import from_epoch
from pathwatch.evaluation.metrics import DAY, Score, human_duration

NO_BASELINE = "WLCG/OSG baseline not scored: pass --raw with the raw input to run it beside pathwatch."
SYSTEMS = ("pathwatch", "wlcg")


@dataclass(frozen=True)
class Report:
    ours: dict[str, Score]
    baseline: dict[str, Score] | None
    tolerance_s: float
    start: float
    end: float
    paths: int
    paths_from: str
    labels: int
    anomalies: int
    baseline_alarms: int | None = None
    plots: str | None = None
    strict: dict[str, Score] | None = None
    grouped: dict[str, Score] | None = None
    incidents: int | None = None

    @property
    def days(self) -> float:
        return max(self.end - self.start, 0.0) / DAY

    def to_dict(self) -> dict[str, Any]:
        return {
            "tolerance_s": self.tolerance_s,
            "data": {"start": from_epoch(self.start), "end": from_epoch(self.end), "days": round(self.days, 3),
                     "paths": self.paths, "paths_from": self.paths_from,
                     "path_days": round(self.paths * self.days, 3)},
            "labels": self.labels, "anomalies": self.anomalies, "incidents": self.incidents,
            "baseline_alarms": self.baseline_alarms,
            "pathwatch": {kind: s.to_dict() for kind, s in self.ours.items()},
            "pathwatch_strict": _scores(self.strict),
            "pathwatch_grouped": _scores(self.grouped),
            "wlcg": None if self.baseline is None else {kind: s.to_dict() for kind, s in self.baseline.items()},
            "note": None if self.baseline is not None else NO_BASELINE,
            "plots": self.plots,
        }

    def table(self) -> Table:
        title = (f"{self.labels} labels, {self.anomalies} pathwatch anomalies"
                 + (f", {self.baseline_alarms} WLCG alarms" if self.baseline_alarms is not None else "")
                 + f" on {self.paths} paths × {self.days:.1f} days (tolerance {human_duration(self.tolerance_s)})")
        table = Table(title=title, caption=NO_BASELINE if self.baseline is None else None, box=box.SIMPLE_HEAD,
                      caption_justify="left")
        for name in ("kind", "by", "found", "alarms", "false", "expl.", "prec.", "recall", "F1",
                     "delay med.", "delay max", "false/100pd"):
            table.add_column(name, justify="left" if name in ("kind", "by") else "right", no_wrap=True)
        for kind, ours in self.ours.items():
            rows = ([("ours", ours)] + ([("strict", self.strict[kind])] if self.strict and kind in self.strict else [])
                    + ([("grouped", self.grouped[kind])] if self.grouped and kind in self.grouped else [])
                    + ([("WLCG", self.baseline[kind])] if self.baseline else []))
            if all(s.labels == 0 and s.true_alarms + s.false_alarms + s.explained == 0 for _, s in rows):
                continue
            for n, (system, s) in enumerate(rows):
                table.add_row(kind if n == 0 else "", system, *_cells(s), end_section=n == len(rows) - 1,
                              style="bold" if kind == "all" else None)
        return table

    def print(self, console: Console) -> None:
        console.print(self.table())
        console.print("found: labels detected / labels · alarms: true + false (explained ones apart) · delay: "
                      "label start to first detection · false/100pd: false alarms per 100 path-days · strict: "
                      "no explained credit · grouped: one alarm per incident (incident_id)", style="dim")


def _scores(scores: dict[str, Score] | None) -> dict[str, Any] | None:
    return None if scores is None else {kind: s.to_dict() for kind, s in scores.items()}


def _cells(s: Score) -> list[str]:
    def ratio(value: float | None) -> str:
        return "–" if value is None else f"{value:.2f}"

    fa = s.false_alarms_per_100_path_days
    return [f"{s.detected}/{s.labels}", str(s.true_alarms + s.false_alarms), str(s.false_alarms), str(s.explained),
            ratio(s.precision), ratio(s.recall), ratio(s.f1),
            human_duration(s.delay_median_s) or "–", human_duration(s.delay_max_s) or "–",
            "–" if fa is None else f"{fa:.2f}"]
