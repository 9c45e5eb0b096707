"""The Kafka message key of a path: every topic is keyed by it, so a path stays in one partition
and every stage sees its measurements in order.

>>> path_key("a", None)
'a>'
>>> envelope_key({"source": "a", "destination": "b"})
b'a>b'
>>> envelope_key({"test": {"type": "trace", "spec": {"source": "a", "dest": "b"}}})  # a pscheduler run
b'a>b'
>>> envelope_key("not an object") is None
True
"""

from __future__ import annotations

from typing import Any


def path_key(source: str | None, destination: str | None) -> str:
    """The key every stage partitions a path by (``source>destination``, empty ends stay empty)."""
    return f"{source or ''}>{destination or ''}"


def envelope_key(value: Any) -> bytes | None:
    """The message key of a decoded raw envelope, before it is parsed: its ``source>destination``,
    read from a pscheduler run's test spec when the envelope names no endpoint; None when nothing
    names one."""
    if not isinstance(value, dict):
        return None
    source, destination = value.get("source"), value.get("destination")
    if source is None and destination is None:  # a pscheduler run, or an archiver's input holding one
        for run in (value, value.get("result"), value.get("data")):
            test = run.get("test") if isinstance(run, dict) else None
            spec = test.get("spec") if isinstance(test, dict) else None
            if isinstance(spec, dict):
                source, destination = spec.get("source"), spec.get("dest") or spec.get("destination")
                break
    if source is None and destination is None:
        return None
    return path_key(source, destination).encode()
