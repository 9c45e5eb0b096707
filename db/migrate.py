"""Apply the numbered migrations in ``sql/`` once each, in order, recorded in ``schema_migrations``.

Each migration runs in its own transaction together with its bookkeeping row, under an advisory
lock so two runners cannot interleave. A migration that was applied and has since changed is an
error: migrations are append-only.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from pathwatch.sql import Migration, migrations

_LOCK_KEY = 0x70617468  # any constant shared by every runner

_BOOKKEEPING = """
CREATE TABLE IF NOT EXISTS schema_migrations (
    version     integer     PRIMARY KEY,
    name        text        NOT NULL,
    checksum    text        NOT NULL,
    applied_at  timestamptz NOT NULL DEFAULT now()
)"""


class MigrationError(RuntimeError):
    pass


@dataclass(frozen=True)
class Applied:
    version: int
    name: str
    newly: bool


def migrate(url: str, report: Callable[[str], None] = lambda _line: None,
            available: list[Migration] | None = None) -> list[Applied]:
    """Bring the database at ``url`` up to date; returns every migration with whether it ran now."""
    import psycopg

    available = migrations() if available is None else available
    result: list[Applied] = []
    with psycopg.connect(url, autocommit=True, connect_timeout=10) as connection:
        connection.execute("SELECT pg_advisory_lock(%s)", [_LOCK_KEY])
        try:
            connection.execute(_BOOKKEEPING)
            done = {row[0]: (row[1], row[2]) for row in
                    connection.execute("SELECT version, name, checksum FROM schema_migrations")}
            for migration in available:
                label = f"{migration.version:03d}_{migration.name}"
                if migration.version in done:
                    if done[migration.version][1] != migration.checksum:
                        raise MigrationError(
                            f"migration {label}.sql changed after it was applied; add a new migration instead")
                    result.append(Applied(migration.version, migration.name, False))
                    continue
                report(f"applying {label}")
                try:
                    with connection.transaction():
                        connection.execute(migration.sql)
                        connection.execute("INSERT INTO schema_migrations (version, name, checksum) VALUES (%s, %s, %s)",
                                           [migration.version, migration.name, migration.checksum])
                except psycopg.Error as error:
                    raise MigrationError(f"migration {label}.sql failed: {error}") from None
                result.append(Applied(migration.version, migration.name, True))
        finally:
            connection.execute("SELECT pg_advisory_unlock(%s)", [_LOCK_KEY])
    return result
