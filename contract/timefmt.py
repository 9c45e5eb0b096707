"""RFC 3339 UTC times, the only time format records carry."""

from __future__ import annotations

from datetime import datetime, timezone

_EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)


def format_utc(moment: datetime) -> str:
    """``2024-05-01T12:00:00Z``, with microseconds only when non-zero.

    >>> format_utc(datetime(2024, 5, 1, 12, 0, 0, 500, tzinfo=timezone.utc))
    '2024-05-01T12:00:00.000500Z'
    """
    if moment.tzinfo is None:
        raise ValueError("naive datetime: a time zone is required")
    moment = moment.astimezone(timezone.utc)
    if moment.year >= 1000:  # isoformat() is strftime's text plus "+00:00" (and .ffffff when non-zero), faster
        return moment.isoformat()[:-6] + "Z"
    text = moment.strftime("%Y-%m-%dT%H:%M:%S")  # the C library's rendering of years before 1000 (unpadded)
    if moment.microsecond:
        text += f".{moment.microsecond:06d}"
    return text + "Z"


def from_epoch(seconds: float) -> str:
    """Format Unix seconds (int or float) as RFC 3339 UTC.

    >>> from_epoch(1471318787)
    '2016-08-16T03:39:47Z'
    """
    return format_utc(datetime.fromtimestamp(seconds, tz=timezone.utc))


def parse_rfc3339(text: str, *, assume_utc: bool = False) -> datetime:
    """Parse an ISO 8601 / RFC 3339 timestamp; naive times are UTC only when ``assume_utc``.

    >>> parse_rfc3339("2016-02-19T04:35:50Z").year
    2016
    """
    moment = datetime.fromisoformat(text.replace("z", "Z"))
    if moment.tzinfo is None:
        if not assume_utc:
            raise ValueError(f"{text!r} has no time zone")
        moment = moment.replace(tzinfo=timezone.utc)
    return moment


def normalize(text: str, *, assume_utc: bool = False) -> str:
    """Any ISO 8601 timestamp as canonical RFC 3339 UTC.

    >>> normalize("2024-05-01T10:00:00-04:00"), normalize("2024-05-01T14:00:00.5Z")
    ('2024-05-01T14:00:00Z', '2024-05-01T14:00:00.500000Z')

    A time that is not a year 1-9999 time in UTC is a ValueError like any other bad time:

    >>> normalize("0001-01-01T00:00:00+01:00")
    Traceback (most recent call last):
    ...
    ValueError: '0001-01-01T00:00:00+01:00' is outside years 1-9999 in UTC
    """
    moment = parse_rfc3339(text, assume_utc=assume_utc)
    try:
        return format_utc(moment)
    except OverflowError:  # astimezone past datetime's range
        raise ValueError(f"{text!r} is outside years 1-9999 in UTC") from None
