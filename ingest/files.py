"""Parse files (or standard input) into outcomes, with the fallbacks bare tool files need.

Inputs are streamed (:func:`pathwatch.ingest.reader.read_stream`): JSON Lines one line at a
time, so memory follows the largest line, within the reader's :class:`Limits`.

A bare tool output carries no collection time; unless one is given, the file's modification
time stands in for it (standard input: the time it was read), as a collector would have
stamped it. Envelopes carry their own and are not affected.
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Iterator
from dataclasses import dataclass, replace
from datetime import datetime, timezone
from typing import BinaryIO

from pathwatch.contract.timefmt import format_utc

from .errors import ParseError
from .parse import Defaults, Outcome, parse_item
from .reader import DEFAULT_LIMITS, Item, Limits, read_stream

STDIN = "-"


@dataclass(frozen=True)
class Located:
    """An outcome and the input it came from (a path, or ``-`` for standard input)."""

    origin: str
    outcome: Outcome


@contextlib.contextmanager
def open_input(origin: str) -> Iterator[tuple[BinaryIO, str]]:
    """(binary stream, fallback collection time) of a path or standard input; raises OSError."""
    if origin == STDIN:
        yield sys.stdin.buffer, format_utc(datetime.now(timezone.utc))
        return
    with open(origin, "rb") as stream:
        mtime = os.fstat(stream.fileno()).st_mtime
        yield stream, format_utc(datetime.fromtimestamp(mtime, tz=timezone.utc))


def _unreadable(origin: str, error: OSError) -> Located:
    item = Item("file", b"", error=ParseError(None, f"cannot read: {error.strerror or error}"))
    return Located(origin, Outcome(item, error=item.error))


def parse_paths(origins: list[str], defaults: Defaults = Defaults(), *, as_dicts: bool = False,
                limits: Limits = DEFAULT_LIMITS) -> Iterator[Located]:
    """Outcomes for every item of every input, in order; unreadable inputs become rejected outcomes.

    ``as_dicts``: records as JSON-ready dicts (see :func:`pathwatch.ingest.parse.parse_item`).
    ``limits``: the longest line and deepest JSON read (:class:`pathwatch.ingest.reader.Limits`).
    """
    for origin in origins:
        try:
            with open_input(origin) as (stream, fallback_time):
                file_defaults = defaults if defaults.collected_at else replace(defaults, collected_at=fallback_time)
                for item in read_stream(stream, limits):
                    yield Located(origin, parse_item(item, file_defaults, as_dicts=as_dicts))
        except OSError as error:
            yield _unreadable(origin, error)
