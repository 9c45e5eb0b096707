"""The format registry: one entry per input format, each from its own module in ``formats/``.

Adding a format means writing ``formats/NAME.py`` with a module-level ``FORMAT`` and listing
it in ``_MODULES``; detection tries formats in that order.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from typing import Any

from .context import Context
from .errors import ParseError

_MODULES = ("pscheduler", "iperf3", "atlas", "scamper", "mtr", "owping", "tracepath", "traceroute", "ping")


@dataclass(frozen=True)
class Format:
    """One input format.

    ``payload`` is ``"json"`` (a decoded JSON object) or ``"text"`` (the tool's text output);
    ``looks_like`` tells a bare payload of this format; ``parse`` yields canonical records or
    raises ParseError; ``example`` names a raw-envelope file in ``ingest/example_envelopes/``.
    """

    name: str
    payload: str
    summary: str
    looks_like: Callable[[Any], bool]
    parse: Callable[[Any, Context], list]
    example: str


@cache
def formats() -> dict[str, Format]:
    """All formats by name, in detection order (imported on first use, not at import time)."""
    found = {}
    for module_name in _MODULES:
        fmt = importlib.import_module(f"{__package__}.formats.{module_name}").FORMAT
        found[fmt.name] = fmt
    return found


def get(name: str) -> Format:
    """The format called ``name``, or ParseError listing the known ones."""
    known = formats()
    if name not in known:
        raise ParseError("format", f"unknown format {name!r}; known: {', '.join(known)}")
    return known[name]


def detect(payload: Any) -> Format:
    """The first format whose ``looks_like`` accepts a bare payload, or ParseError."""
    for fmt in formats().values():
        if _is_payload_type(fmt, payload) and fmt.looks_like(payload):
            return fmt
    kind = "JSON object" if isinstance(payload, dict) else "text" if isinstance(payload, str) else type(payload).__name__
    raise ParseError("format", f"cannot tell the format of this {kind}; name it with --format or an envelope")


def _is_payload_type(fmt: Format, payload: Any) -> bool:
    return isinstance(payload, dict) if fmt.payload == "json" else isinstance(payload, str)


def parse_payload(fmt: Format, payload: Any, ctx: Context) -> list:
    """Check the payload's JSON type against the format, then parse it."""
    if not _is_payload_type(fmt, payload):
        expected = "a JSON object" if fmt.payload == "json" else "a string of tool output"
        raise ParseError("payload", f"format {fmt.name!r} expects {expected}, got {type(payload).__name__}")
    return fmt.parse(payload, ctx)
