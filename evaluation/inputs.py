"""Reading labels.jsonl and anomalies.jsonl, with errors that name the file, line and field.

Both are JSON Lines (blank lines skipped). A label is ``{kind, source, destination, start,
end}`` with RFC 3339 times (``end`` null: lasts to the end of the data; other keys ignored).
An anomaly is what ``pathwatch detect`` writes (:meth:`pathwatch.models.anomaly.Anomaly.to_dict`);
when an id appears more than once the last line wins, as for any consumer that upserts on id.

>>> parse_label({"kind": "loss_step", "source": "a", "destination": "b",
...              "start": "1970-01-01T01:00:00Z", "end": None}, line=1)
Label(kind='loss_step', source='a', destination='b', start=3600.0, end=None, line=1)
>>> parse_label({"kind": "loss", "source": "a", "destination": "b", "start": "x"}, line=7)
Traceback (most recent call last):
...
pathwatch.evaluation.inputs.FieldError: field kind: unknown kind 'loss'; known: route_change, ...
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson

from pathwatch.console import describe_reject
from pathwatch.contract.timefmt import parse_rfc3339
from pathwatch.evaluation.matching import Label
from pathwatch.models.anomaly import KINDS, Anomaly


class FieldError(ValueError):
    """A field of one row is missing or wrong."""

    def __init__(self, field: str | None, reason: str):
        super().__init__(f"field {field}: {reason}" if field else reason)
        self.field, self.reason = field, reason


class InputError(ValueError):
    """A labels or anomalies file cannot be used; ``str()`` is the one-line message for the user."""

    def __init__(self, path: Path, line: int | None, field: str | None, reason: str):
        super().__init__(describe_reject(str(path), f"line {line}" if line else "file", field, reason))
        self.path, self.line, self.field, self.reason = path, line, field, reason


def _time(row: dict[str, Any], name: str, *, nullable: bool = False) -> float | None:
    if name not in row:
        raise FieldError(name, "missing")
    value = row[name]
    if value is None and nullable:
        return None
    if not isinstance(value, str):
        raise FieldError(name, f"expected an RFC 3339 time, got {value!r}")
    try:
        return parse_rfc3339(value).timestamp()
    except ValueError as error:
        raise FieldError(name, f"not an RFC 3339 time with zone: {error}") from None


def _kind(row: dict[str, Any]) -> str:
    kind = row.get("kind")
    if kind not in KINDS:
        raise FieldError("kind", "missing" if kind is None else f"unknown kind {kind!r}; known: {', '.join(KINDS)}")
    return kind


def _host(row: dict[str, Any], name: str) -> str | None:
    if name not in row:
        raise FieldError(name, "missing")
    value = row[name]
    if value is not None and not isinstance(value, str):
        raise FieldError(name, f"expected a host name, got {value!r}")
    return value


def _end_after_start(start: float, end: float | None) -> None:
    if end is not None and end < start:
        raise FieldError("end", "before start")


def parse_label(row: dict[str, Any], *, line: int = 0) -> Label:
    """One label row as a :class:`Label`; raises :class:`FieldError`."""
    kind = _kind(row)
    source, destination = _host(row, "source"), _host(row, "destination")
    start = _time(row, "start")
    end = _time(row, "end", nullable=True) if "end" in row else None
    _end_after_start(start, end)
    return Label(kind, source, destination, start, end, line)


def parse_anomaly(row: dict[str, Any]) -> Anomaly:
    """One anomaly row as an :class:`Anomaly`; raises :class:`FieldError`."""
    if not isinstance(row.get("id"), str):
        raise FieldError("id", "missing" if row.get("id") is None else f"expected a string, got {row['id']!r}")
    _kind(row)
    for name in ("source", "destination"):
        _host(row, name)
    start = _time(row, "start")
    _time(row, "detected_at")
    _end_after_start(start, _time(row, "end", nullable=True) if "end" in row else None)
    for name in ("severity", "summary"):
        if not isinstance(row.get(name), str):
            raise FieldError(name, "missing" if row.get(name) is None else f"expected a string, got {row[name]!r}")
    if isinstance(row.get("score"), bool) or not isinstance(row.get("score"), (int, float)):
        raise FieldError("score", "missing" if row.get("score") is None else f"expected a number, got {row['score']!r}")
    if not isinstance(row.get("evidence", {}), (dict, type(None))):
        raise FieldError("evidence", "expected an object")
    return Anomaly.from_dict(row)


def _rows(path: Path):
    """(line number, decoded object) for each non-blank line; raises :class:`InputError`."""
    try:
        data = path.read_bytes()
    except OSError as error:
        raise InputError(path, None, None, f"cannot read: {error.strerror or error}") from None
    for number, text in enumerate(data.splitlines(), start=1):
        if not text.strip():
            continue
        try:
            value = orjson.loads(text)
        except orjson.JSONDecodeError as error:
            raise InputError(path, number, None, f"not JSON: {error}") from None
        if not isinstance(value, dict):
            raise InputError(path, number, None, "expected a JSON object")
        yield number, value


def read_labels(path: Path) -> list[Label]:
    """Every label in a labels.jsonl file, in file order."""
    labels = []
    for number, row in _rows(path):
        try:
            labels.append(parse_label(row, line=number))
        except FieldError as error:
            raise InputError(path, number, error.field, error.reason) from None
    return labels


def read_anomalies(path: Path) -> list[Anomaly]:
    """The last state of every anomaly id in an anomalies.jsonl file, in order of first appearance."""
    latest: dict[str, Anomaly] = {}
    for number, row in _rows(path):
        try:
            anomaly = parse_anomaly(row)
        except FieldError as error:
            raise InputError(path, number, error.field, error.reason) from None
        latest[anomaly.id] = anomaly
    return list(latest.values())


def simulated_records(directory: Path, *, seed: int, hosts: int, days: int, start: str | None = None,
                      reuse: bool = False, cadences: list[str] | tuple[str, ...] = (),
                      benign_only: bool = False, benign: bool = True) -> list[dict[str, Any]]:
    """Simulate a labelled mesh (``benign_only``: one of the benign-only family; ``benign=False``:
    without the benign catalogue) into ``directory`` and parse its raw.jsonl with the project's parsers.

    With ``reuse``, a directory that already holds a simulation (its labels.jsonl) is parsed as it
    is. Raises RuntimeError naming the seed when the simulation fails or a simulated input is rejected.
    """
    from collections import Counter

    from rich.console import Console

    from pathwatch.detect import parsed_records
    from pathwatch.sim.command import run_simulate

    quiet = Console(stderr=True, quiet=True)
    directory = Path(directory)
    if not (reuse and (directory / "labels.jsonl").exists()):
        if run_simulate(directory, seed=seed, hosts=hosts, days=days, start=start, console=quiet, cadences=cadences,
                        benign_only=benign_only, benign=benign) != 0:
            raise RuntimeError(f"simulating seed {seed} into {directory} failed")
    rejected: Counter = Counter()
    records = list(parsed_records([str(directory / "raw.jsonl")], None, rejected, quiet))
    if rejected:
        raise RuntimeError(f"seed {seed}: the parsers rejected simulated inputs: {dict(rejected)}")
    return records
