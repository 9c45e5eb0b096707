"""Shared test helpers: fixture paths and a one-call parser for envelopes and bare payloads."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from pathwatch.ingest.parse import Defaults, parse_value

FIXTURES = Path(__file__).parent / "fixtures"


def fixture_text(*parts: str) -> str:
    return FIXTURES.joinpath(*parts).read_text()


def parse_one(value, **defaults):
    """Parse one envelope or bare payload; returns the list of records (raises ParseError)."""
    return parse_value(value, Defaults(**defaults))[1]


def envelope(fmt: str, payload, source="src.example.net", destination="dst.example.net",
             collected_at="2024-03-01T12:00:00Z") -> dict:
    value = {"format": fmt, "payload": payload, "collected_at": collected_at}
    if source is not None:
        value["source"] = source
    if destination is not None:
        value["destination"] = destination
    return value


def require_tool(name: str) -> str:
    """Path of a measurement tool; fails (never skips) when it is missing: .ci/run installs them."""
    path = shutil.which(name) or shutil.which(name, path="/usr/sbin:/sbin:/usr/bin")
    if path is None:
        pytest.fail(f"{name} is not installed; run ./run setup (it installs the tools the tests use)")
    return path


# The one stream through the real pipeline (session-scoped), for the pipeline and dashboard tests.
from tests.stack.streamed import stream  # noqa: E402,F401
