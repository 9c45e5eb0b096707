"""The one error a parser raises: malformed input, naming the field and the reason.

A measurement the tool itself reports as failed is *not* an error: it becomes a record with
``succeeded: false``. ``ParseError`` is for input that cannot be read as its format.
"""

from __future__ import annotations


class ParseError(ValueError):
    """Input that cannot be parsed, with the offending ``field`` (a dotted path) and a reason.

    >>> str(ParseError("end.sum_sent", "missing"))
    'end.sum_sent: missing'
    """

    def __init__(self, field: str | None, reason: str) -> None:
        self.field = field
        self.reason = reason
        super().__init__(f"{field}: {reason}" if field else reason)


def quote_line(line: str, limit: int = 80) -> str:
    """A line of tool text for an error message: stripped, cut to ``limit`` characters, quoted.

    >>> quote_line("  1  10.0.0.1  0.5 ms  ")
    "'1  10.0.0.1  0.5 ms'"
    """
    text = line.strip()
    return repr(text if len(text) <= limit else text[: limit - 3] + "...")
