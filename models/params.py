"""The base of every parameter set: a frozen dataclass of numbers with defaults, read from a mapping.

>>> from dataclasses import dataclass
>>> @dataclass(frozen=True)
... class Example(Params):
...     runs: int = 3
>>> Example.from_mapping({"runs": 5}, where="config.example").runs
5
>>> Example.from_mapping({"walks": 5}, where="config.example")
Traceback (most recent call last):
...
ValueError: config.example: unknown parameter(s) walks; known: runs
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any


@dataclass(frozen=True)
class Params:
    """Base of each detector's parameters (a frozen dataclass of numbers with defaults)."""

    @classmethod
    def from_mapping(cls, values: dict[str, Any], *, where: str) -> Params:
        known = {f.name: f for f in fields(cls)}
        unknown = sorted(set(values) - set(known))
        if unknown:
            raise ValueError(f"{where}: unknown parameter(s) {', '.join(unknown)}; known: {', '.join(sorted(known))}")
        converted = {}
        for name, value in values.items():
            default = getattr(cls(), name)
            if isinstance(default, bool) or not isinstance(default, (int, float)):
                converted[name] = value
            elif not isinstance(value, (int, float)) or isinstance(value, bool):
                raise ValueError(f"{where}.{name}: expected a number, got {value!r}")
            else:
                converted[name] = type(default)(value) if isinstance(default, float) else value
        return cls(**converted)
