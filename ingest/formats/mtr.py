"""Placeholder: being written in this session."""

from ..errors import ParseError
from ..registry import Format


def _parse(payload, ctx):
    raise ParseError("format", "mtr parser not written yet")


FORMAT = Format(name="mtr", payload="json", summary="", looks_like=lambda p: False, parse=_parse, example="mtr.jsonl")
