"""Placeholder: being written in this session."""

from ..errors import ParseError
from ..registry import Format


def _parse(payload, ctx):
    raise ParseError("format", "pscheduler parser not written yet")


FORMAT = Format(name="pscheduler", payload="json", summary="", looks_like=lambda p: False, parse=_parse, example="pscheduler.jsonl")
