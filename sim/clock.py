"""Time and identifier spellings the tools use: RFC 3339 Z, local ISO 8601 with offset, HTTP
dates, ISO 8601 durations, and stable UUIDs derived from what a result is about.

>>> rfc3339(1767571200)
'2026-01-05T00:00:00Z'
>>> local_iso(1767571200.25, -6)
'2026-01-04T18:00:00.250000-06:00'
>>> http_date(1767571200), iso_duration(0.0121)
('Mon, 05 Jan 2026 00:00:00 GMT', 'PT0.0121S')
>>> stable_uuid("ps.a", "trace", 1.5)
'...-...-4...-...-...'
"""

from __future__ import annotations

import hashlib
import time

_ZONES: dict[int, str] = {}


def rfc3339(seconds: float) -> str:
    """Whole-second RFC 3339 UTC, as collectors stamp envelopes."""
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(int(seconds)))


def local_iso(seconds: float, utc_offset_h: int, *, micro: bool = True) -> str:
    """ISO 8601 in a host's local zone, as pscheduler writes run and schedule times."""
    whole = int(seconds)
    text = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(whole + utc_offset_h * 3600))
    if micro:
        text += f".{round((seconds - whole) * 1e6) % 1000000:06d}"
    return text + _zone(utc_offset_h)


def _zone(utc_offset_h: int) -> str:
    zone = _ZONES.get(utc_offset_h)
    if zone is None:
        zone = _ZONES[utc_offset_h] = f"{'-' if utc_offset_h < 0 else '+'}{abs(utc_offset_h):02d}:00"
    return zone


def http_date(seconds: float) -> str:
    """iperf3's ``start.timestamp.time``."""
    return time.strftime("%a, %d %b %Y %H:%M:%S GMT", time.gmtime(int(seconds)))


def iso_duration(seconds: float) -> str:
    """pscheduler's duration spelling: ``PT0.0121S``, ``PT10M``."""
    if seconds >= 60 and seconds == int(seconds) and int(seconds) % 60 == 0:
        return f"PT{int(seconds) // 60}M"
    text = f"{seconds:.6f}".rstrip("0").rstrip(".")
    return f"PT{text}S"


def stable_uuid(*parts) -> str:
    """A UUID (version 4 layout) derived from ``parts``: the same result always gets the same id."""
    digest = hashlib.blake2b(repr(parts).encode(), digest_size=16).hexdigest()
    return f"{digest[:8]}-{digest[8:12]}-4{digest[13:16]}-{'89ab'[int(digest[16], 16) % 4]}{digest[17:20]}-{digest[20:32]}"
