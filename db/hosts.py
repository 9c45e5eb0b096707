"""The ``hosts`` table: each measurement host's site, which the dashboards filter and group by.

Hosts come from a collector mesh file (``collector/mesh_config.py``'s YAML, or a pSConfig template) or from
the ``mesh.json`` that ``pathwatch simulate`` writes beside its data.

>>> import json, tempfile
>>> folder = Path(tempfile.mkdtemp())
>>> _ = (folder / "mesh.json").write_text(json.dumps({"hosts": [
...     {"name": "ps1.cern.example", "site": "cern", "city": "Geneva CH", "address": "192.0.2.1", "asn": 513}]}))
>>> read_hosts(folder / "mesh.json")
[HostRow(name='ps1.cern.example', site='cern', city='Geneva CH', address='192.0.2.1', asn=513)]
"""

from __future__ import annotations

import json
from dataclasses import astuple, dataclass
from pathlib import Path


@dataclass(frozen=True)
class HostRow:
    name: str
    site: str
    city: str | None = None
    address: str | None = None
    asn: int | None = None


def read_hosts(path: Path) -> list[HostRow]:
    """The hosts of a simulator ``mesh.json``, a collector mesh YAML or a pSConfig template; a host
    without a site is its own site."""
    from pathwatch.collector.psconfig import is_psconfig

    if path.suffix == ".json" and not is_psconfig(data := json.loads(path.read_text())):
        hosts = data["hosts"]
        return [HostRow(h["name"], h.get("site") or h["name"], h.get("city"), h.get("address"), h.get("asn"))
                for h in hosts]
    from pathwatch.collector.mesh_file import load_mesh

    mesh = load_mesh(path)
    return [HostRow(h.name, h.site or h.name, None, h.address, None) for h in mesh.hosts.values()]


def upsert_hosts(url: str, hosts: list[HostRow]) -> int:
    """Insert or update ``hosts`` rows by name; returns how many were written."""
    import psycopg

    with psycopg.connect(url) as connection:
        connection.cursor().executemany(
            "INSERT INTO hosts (name, site, city, address, asn) VALUES (%s, %s, %s, %s, %s) "
            "ON CONFLICT (name) DO UPDATE SET site = excluded.site, city = excluded.city, "
            "address = excluded.address, asn = excluded.asn, updated_at = now()",
            [astuple(host) for host in hosts])
    return len(hosts)
