"""The numbered SQL migrations shipped with pathwatch (see README.md in this folder).

>>> [m.version for m in migrations()][:3]
[1, 2, 3]
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from importlib import resources

_NAME = re.compile(r"^(\d{3})_([a-z0-9_]+)\.sql$")


@dataclass(frozen=True)
class Migration:
    version: int
    name: str
    sql: str

    @property
    def checksum(self) -> str:
        return hashlib.sha256(self.sql.encode()).hexdigest()


def migrations() -> list[Migration]:
    """Every migration file, by version; raises ValueError on a duplicate version."""
    found: dict[int, Migration] = {}
    for entry in resources.files(__package__).iterdir():
        match = _NAME.match(entry.name)
        if not match:
            continue
        version = int(match.group(1))
        if version in found:
            raise ValueError(f"sql: two migrations numbered {version:03d}: {found[version].name} and {match.group(2)}")
        found[version] = Migration(version, match.group(2), entry.read_text())
    return [found[v] for v in sorted(found)]
