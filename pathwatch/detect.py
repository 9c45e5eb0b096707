"""``pathwatch detect``: parse inputs, replay them through the detectors, write anomalies.

Parsing and replay are the same code the streaming job runs (the ingest parsers and
:func:`pathwatch.models.engine.replay`); this module only adds files, counts and tables.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
from rich.console import Console
from rich.table import Table

from pathwatch.console import bytes_progress, describe_reject

EXIT_OK, EXIT_REJECTED = 0, 2


def parsed_records(inputs: list[str], fmt: str | None, rejected: Counter, console: Console) -> Iterator[dict[str, Any]]:
    """Canonical record dicts from the inputs; each reject is printed and counted by format."""
    from pathwatch.ingest.files import parse_paths
    from pathwatch.ingest.parse import Defaults

    progress = bytes_progress(console, inputs, "reading")
    try:
        for located in parse_paths(inputs, Defaults(fmt)):
            outcome = located.outcome
            if progress is not None:
                progress.advance(progress.task_ids[0], len(outcome.item.raw) + 1)
            if outcome.error is not None:
                rejected[outcome.format or "?"] += 1
                console.print(describe_reject(located.origin, outcome.item.location, outcome.error.field,
                                              outcome.error.reason), markup=False)
                continue
            for record in outcome.records:
                yield record.model_dump(mode="json")
    finally:
        if progress is not None:
            progress.stop()


def run_detect(inputs: list[str], out: Path, *, format: str | None, config: Path | None, until: str | None,
               console: Console, vetoed: Path | None = None) -> int:
    """The ``detect`` command; returns its exit status."""
    from pathwatch.contract.timefmt import from_epoch, parse_rfc3339
    from pathwatch.ingest import registry
    from pathwatch.models.config import DetectorConfig
    from pathwatch.models.engine import replay

    if format is not None and format not in registry.formats():
        console.print(f"--format: unknown format {format!r}; known: {', '.join(registry.formats())}")
        return EXIT_REJECTED
    try:
        detector_config = DetectorConfig.from_file(config) if config else DetectorConfig()
    except (OSError, ValueError) as error:
        console.print(f"--config: {error}", markup=False)
        return EXIT_REJECTED
    try:
        until_s = parse_rfc3339(until).timestamp() if until else None
    except ValueError as error:
        console.print(f"--until: not an RFC 3339 time with zone: {error}", markup=False)
        return EXIT_REJECTED
    rejected: Counter = Counter()
    result = replay(parsed_records(inputs, format, rejected, console), detector_config, until=until_s,
                    keep_vetoed=vetoed is not None)
    out.parent.mkdir(parents=True, exist_ok=True)
    with out.open("wb") as handle:
        for anomaly in result.anomalies:
            handle.write(orjson.dumps(anomaly.to_dict()) + b"\n")
    if vetoed is not None:
        vetoed.parent.mkdir(parents=True, exist_ok=True)
        with vetoed.open("wb") as handle:
            for row in result.vetoed:
                handle.write(orjson.dumps({**row, "start": from_epoch(row["start"]), "at": from_epoch(row["at"])}) + b"\n")
    _summary(console, result, rejected, out)
    return EXIT_REJECTED if rejected else EXIT_OK


def _summary(console: Console, result, rejected: Counter, out: Path) -> None:
    """Per root kind: incidents, still open, and the anomalies they hold (a root's members count with it)."""
    roots = {a.id: a for a in result.anomalies if a.incident == a.id}
    members = Counter(a.incident for a in result.anomalies)
    by_kind = Counter(root.kind for root in roots.values())
    open_incidents = {a.incident for a in result.anomalies if a.is_open}
    still_open = Counter(root.kind for root in roots.values() if root.id in open_incidents)
    held = Counter()
    for root in roots.values():
        held[root.kind] += members[root.id]
    table = Table(title=f"{len(roots)} incidents ({len(result.anomalies)} anomalies) on {result.paths} paths "
                        f"from {result.records} records → {out}")
    for column in ("root kind", "incidents", "still open", "anomalies"):
        table.add_column(column, justify="left" if column == "root kind" else "right")
    for kind, count in sorted(by_kind.items()):
        table.add_row(kind, str(count), str(still_open[kind]), str(held[kind]))
    console.print(table)
    for reason, count in sorted(result.skipped.items()):
        console.print(f"skipped {count} records: {reason}")
    if rejected:
        console.print(f"rejected {sum(rejected.values())} inputs ({', '.join(f'{f}: {n}' for f, n in sorted(rejected.items()))})")
