"""Import the bundle into a running Superset, and export it back into the repository's form.

>>> masked_uri("postgresql://pathwatch_ro:s3cret@127.0.0.1:15433/pathwatch")
('postgresql+psycopg2://pathwatch_ro:XXXXXXXXXX@127.0.0.1:15433/pathwatch', 's3cret')
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import unquote, urlsplit, urlunsplit

from pathwatch.dashboards.bundle import (BUNDLE, MASK, BundleError, differences, for_superset, from_export,
                                         order_like, read_bundle, write_bundle, zip_bundle)
from pathwatch.dashboards.client import Superset


@dataclass(frozen=True)
class Target:
    """Where the bundle goes: a Superset (URL and admin) and the DSN its database should use."""
    superset_url: str
    username: str
    password: str
    database_url: str

    def session(self) -> Superset:
        return Superset(self.superset_url, self.username, self.password)


def masked_uri(database_url: str) -> tuple[str, str]:
    """(the DSN for Superset with the password masked, the password)."""
    parts = urlsplit(database_url)
    if parts.scheme not in ("postgresql", "postgres", "postgresql+psycopg2"):
        raise BundleError(f"database URL: expected postgresql://..., got scheme {parts.scheme!r}")
    password = unquote(parts.password or "")
    host = parts.hostname or ""
    netloc = f"{parts.username}:{MASK}@{host}" + (f":{parts.port}" if parts.port else "")
    return urlunsplit(("postgresql+psycopg2", netloc, parts.path, parts.query, parts.fragment)), password


@dataclass(frozen=True)
class ImportResult:
    databases: int
    datasets: int
    charts: int
    dashboards: int
    replaced_database: bool


def import_bundle(target: Target, folder: Path = BUNDLE) -> ImportResult:
    """Import (overwriting) every database, dataset, chart and dashboard of the bundle."""
    files = read_bundle(folder)
    uri, password = masked_uri(target.database_url)
    superset = target.session()
    replaced = _drop_same_name_databases(superset, files)
    payload = for_superset(files, uri)
    database_files = [path for path in files if path.startswith("databases/")]
    superset.import_assets(zip_bundle(payload), {path: password for path in database_files})

    def count(prefix: str) -> int:
        return sum(1 for path in files if path.startswith(prefix))

    return ImportResult(count("databases/"), count("datasets/"), count("charts/"), count("dashboards/"), replaced)


def _drop_same_name_databases(superset: Superset, files: dict) -> bool:
    """A database registered by name before the bundle existed (another uuid) would block the import."""
    ours = {data["database_name"]: str(data["uuid"]) for path, data in files.items() if path.startswith("databases/")}
    dropped = False
    for database in superset.databases():
        name = database["database_name"]
        if name in ours and str(database.get("uuid", ours[name])) != ours[name]:
            superset.delete_database(database["id"])
            dropped = True
    return dropped


def export_bundle(target: Target, folder: Path = BUNDLE, write: bool = True) -> list[str]:
    """Export from Superset into the bundle's form; returns the paths that differ from ``folder``.

    Files keep the names they have in ``folder`` (matched by uuid); new ones get a name from
    their title. With ``write=False`` nothing is written (a round-trip check).
    """
    current = read_bundle(folder)
    databases = {str(data["uuid"]) for path, data in current.items() if path.startswith("databases/")}
    exported = order_like(_rename_like(from_export(target.session().export_assets(), databases), current), current)
    changed = differences(current, exported)
    if write:
        write_bundle(exported, folder)
    return changed


def _rename_like(exported: dict, current: dict) -> dict:
    by_uuid = {str(data.get("uuid")): path for path, data in current.items() if data.get("uuid")}
    renamed = {}
    for path, data in exported.items():
        uuid = str(data.get("uuid", ""))
        if uuid in by_uuid:
            renamed[by_uuid[uuid]] = data
            continue
        folder, name = path.rsplit("/", 1) if "/" in path else ("", path)
        title = data.get("slice_name") or data.get("dashboard_title") or data.get("table_name") or name
        slug = re.sub(r"[^a-z0-9]+", "_", str(title).lower()).strip("_")
        renamed[f"{folder}/{slug}.yaml" if folder else path] = data
    return renamed
