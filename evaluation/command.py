"""``pathwatch evaluate``: score anomalies against labels, beside the WLCG/OSG baseline.

Reads the labels and anomalies (exit 2 naming the file, line and field when one is bad);
with ``--raw`` parses the raw input once, runs the baseline (:mod:`pathwatch.models.baseline_wlcg`)
over it and scores its alarms the same way; prints a table, or JSON with ``--json``, on
standard output; with ``--plots`` draws every case. Rejected raw inputs are reported on
standard error like ``pathwatch detect`` does, the rest is scored, and the exit status is 2.
Definitions: :mod:`pathwatch.evaluation.matching` and :mod:`pathwatch.evaluation.metrics`.
"""

from __future__ import annotations

import sys
from collections import Counter
from collections.abc import Sequence
from pathlib import Path

import orjson
from rich.console import Console

from pathwatch.evaluation.inputs import InputError, read_anomalies, read_labels
from pathwatch.evaluation.matching import HOUR, Label, match
from pathwatch.evaluation.metrics import DAY, incidents, score, score_grouped, score_strict
from pathwatch.evaluation.report import Report
from pathwatch.models.anomaly import Anomaly

EXIT_OK, EXIT_REJECTED = 0, 2


def data_extent(labels: Sequence[Label], anomalies: Sequence[Anomaly],
                record_times: Sequence[float]) -> tuple[float, float]:
    """(start, end) of the data: the earliest and latest time in labels, anomalies and raw records.

    >>> data_extent([Label("loss_step", "a", "b", 100.0, None)], [], [50.0, 400.0])
    (50.0, 400.0)
    """
    times = [t for label in labels for t in (label.start, label.end) if t is not None]
    times += [t for a in anomalies for t in (a.start, a.detected_at, a.end) if t is not None]
    times += list(record_times)
    return (min(times), max(times)) if times else (0.0, 0.0)


def distinct_paths(labels: Sequence[Label], anomalies: Sequence[Anomaly]) -> set[tuple]:
    """Directed paths named by labels and anomalies (both endpoints known)."""
    paths = {(x.source, x.destination) for x in [*labels, *anomalies]}
    return {p for p in paths if None not in p}


def run_evaluate(
    labels: Path,
    anomalies: Path,
    *,
    raw: list[Path],
    as_json: bool,
    plots: Path | None,
    console: Console,
    out: Console | None = None,
    tolerance_s: float = HOUR,
) -> int:
    """The ``evaluate`` command; returns its exit status (2 on bad input)."""
    if plots is not None and not raw:
        console.print("--plots needs --raw: the plots draw the raw measurements of each case")
        return EXIT_REJECTED
    try:
        label_rows = read_labels(labels)
        ours = read_anomalies(anomalies)
    except InputError as error:
        console.print(str(error), markup=False)
        return EXIT_REJECTED

    rejected: Counter = Counter()
    series: dict = {}
    if raw:
        from pathwatch.detect import parsed_records
        from pathwatch.models.baseline_wlcg import collect, covers, run_baseline, series_extent

        # parsed_records shows its own progress bar for big inputs on a terminal
        series = collect(parsed_records([str(p) for p in raw], None, rejected, console))
    start, end = data_extent(label_rows, ours, series_extent(series) if raw else ())
    paths = set(series) if raw else distinct_paths(label_rows, ours)
    path_days = len(paths) * max(end - start, 0.0) / DAY

    systems = {"pathwatch": (ours, match(label_rows, ours, end_of_data=end, tolerance_s=tolerance_s))}
    if raw:
        with console.status("running the WLCG/OSG baseline"):
            baseline = run_baseline(series)
        systems["WLCG"] = (baseline, match(label_rows, baseline, end_of_data=end, tolerance_s=tolerance_s,
                                           credits=covers))
    scores = {name: score(label_rows, found, matching, path_days=path_days)
              for name, (found, matching) in systems.items()}

    index = None
    if plots is not None:
        from pathwatch.evaluation.plots import cases

        index = _draw(cases(label_rows, systems, end_of_data=end), series,
                      {name: found for name, (found, _) in systems.items()}, plots, start, end, console)

    ours_match = systems["pathwatch"][1]
    report = Report(scores["pathwatch"], scores.get("WLCG"), tolerance_s=tolerance_s, start=start, end=end,
                    paths=len(paths), paths_from="raw" if raw else "labels and anomalies", labels=len(label_rows),
                    anomalies=len(ours), baseline_alarms=len(systems["WLCG"][0]) if raw else None,
                    plots=None if index is None else str(index),
                    strict=score_strict(label_rows, ours, ours_match, path_days=path_days),
                    grouped=score_grouped(label_rows, ours, ours_match, path_days=path_days),
                    incidents=len(incidents(ours)))
    if as_json:
        sys.stdout.buffer.write(orjson.dumps(report.to_dict(), option=orjson.OPT_INDENT_2) + b"\n")
        sys.stdout.flush()
    else:
        report.print(out or Console(width=None if sys.stdout.isatty() else 160))
    if rejected:
        console.print(f"rejected {sum(rejected.values())} raw inputs "
                      f"({', '.join(f'{f}: {n}' for f, n in sorted(rejected.items()))}); scored the rest")
        return EXIT_REJECTED
    return EXIT_OK


def _draw(to_draw, series, systems, directory: Path, start: float, end: float, console: Console) -> Path:
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TimeRemainingColumn

    from pathwatch.evaluation.plots import draw_all

    with Progress("drawing", BarColumn(), MofNCompleteColumn(), TimeRemainingColumn(), console=console,
                  transient=True, disable=not console.is_terminal) as progress:
        task = progress.add_task("plots", total=len(to_draw))
        index = draw_all(to_draw, series, systems, directory, data_start=start, end_of_data=end,
                         advance=lambda: progress.advance(task))
    console.print(f"wrote {len(to_draw)} plots and {index}")
    return index
