"""Parse files (or standard input) into outcomes, with the fallbacks bare tool files need.

A bare tool output carries no collection time; unless one is given, the file's modification
time stands in for it (standard input: the time it was read), as a collector would have
stamped it. Envelopes carry their own and are not affected.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from dataclasses import dataclass, replace
from datetime import datetime, timezone
from pathlib import Path

from pathwatch.contract.timefmt import format_utc

from .errors import ParseError
from .parse import Defaults, Outcome, parse_item
from .reader import Item, read_items

STDIN = "-"


@dataclass(frozen=True)
class Located:
    """An outcome and the input it came from (a path, or ``-`` for standard input)."""

    origin: str
    outcome: Outcome


def _read(origin: str) -> tuple[bytes, str]:
    """(bytes, fallback collection time) of a path or standard input."""
    if origin == STDIN:
        return sys.stdin.buffer.read(), format_utc(datetime.now(timezone.utc))
    path = Path(origin)
    data = path.read_bytes()
    return data, format_utc(datetime.fromtimestamp(path.stat().st_mtime, tz=timezone.utc))


def parse_paths(origins: list[str], defaults: Defaults = Defaults(), *, as_dicts: bool = False) -> Iterator[Located]:
    """Outcomes for every item of every input, in order; unreadable inputs become rejected outcomes.

    ``as_dicts``: records as JSON-ready dicts (see :func:`pathwatch.ingest.parse.parse_item`).
    """
    for origin in origins:
        try:
            data, fallback_time = _read(origin)
        except OSError as error:
            item = Item("file", b"", error=ParseError(None, f"cannot read: {error.strerror or error}"))
            yield Located(origin, Outcome(item, error=item.error))
            continue
        file_defaults = defaults if defaults.collected_at else replace(defaults, collected_at=fallback_time)
        for item in read_items(data):
            yield Located(origin, parse_item(item, file_defaults, as_dicts=as_dicts))
