"""Deterministic identities: record ids and route fingerprints.

>>> a = measurement_id("trace", "a", "b", "2024-01-01T00:00:00Z", "traceroute")
>>> a == measurement_id("trace", "a", "b", "2024-01-01T00:00:00Z", "traceroute"), len(a)
(True, 36)
>>> path_fingerprint(["10.0.0.1", "10.0.0.2"]) == path_fingerprint(["10.0.0.1", "10.0.0.2"])
True
"""

from __future__ import annotations

import hashlib
import uuid
from collections.abc import Iterable

# Namespace for pathwatch's uuid5 ids. Changing it changes every id: never do.
PATHWATCH_NAMESPACE = uuid.UUID("7f3c2a52-4a4b-5a1e-9a55-70617468776e")


# SHA-1 already fed the namespace: each id copies it and adds its name.
_NAMESPACE_SHA1 = hashlib.sha1(PATHWATCH_NAMESPACE.bytes)
# uuid5 sets the top two bits of byte 8 to the RFC 4122 variant (10): its first hex digit becomes 8, 9, a or b.
_VARIANT_DIGIT = {digit: "89ab"[int(digit, 16) & 3] for digit in "0123456789abcdef"}


def uuid5_text(name: str) -> str:
    """``str(uuid.uuid5(PATHWATCH_NAMESPACE, name))`` without building UUID objects (under half the time).

    The version (5) and variant bits are written into the hex digits they land in.

    >>> all(uuid5_text(n) == str(uuid.uuid5(PATHWATCH_NAMESPACE, n)) for n in ("x", "", "é|ü", "a" * 200))
    True
    """
    sha1 = _NAMESPACE_SHA1.copy()
    sha1.update(name.encode("utf-8"))
    hexed = sha1.hexdigest()
    return f"{hexed[:8]}-{hexed[8:12]}-5{hexed[13:16]}-{_VARIANT_DIGIT[hexed[16]]}{hexed[17:20]}-{hexed[20:32]}"


def measurement_id(kind: str, source: str | None, destination: str | None, time: str, tool: str, *extra: object) -> str:
    """UUID5 over what identifies one measurement: kind, path, start time, tool and any extra discriminators."""
    key = "|".join([kind, source or "", destination or "", time, tool, *map(str, extra)])
    return uuid5_text(key)


def path_fingerprint(items: Iterable[object]) -> str:
    """First 16 hex digits of SHA-256 over the items joined by newlines (perfSONAR hashes hop IPs alike)."""
    return hashlib.sha256("\n".join(map(str, items)).encode()).hexdigest()[:16]
