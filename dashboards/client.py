"""A logged-in session on Superset's REST API: import and export bundles, list charts, fetch chart data.

Superset's API wants a JWT (``/api/v1/security/login``) and, for writes, the CSRF token of the
same session with a Referer header.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

import requests


class SupersetError(RuntimeError):
    """Superset answered with an error (the message carries the URL, status and Superset's words)."""


@dataclass
class Superset:
    url: str
    username: str
    password: str
    timeout_s: float = 120.0
    session: requests.Session = field(default_factory=requests.Session, repr=False)

    def __post_init__(self) -> None:
        self.url = self.url.rstrip("/")
        token = self._call("POST", "/api/v1/security/login", json={
            "username": self.username, "password": self.password, "provider": "db", "refresh": False},
            csrf=False)["access_token"]
        self.session.headers.update({"Authorization": f"Bearer {token}", "Referer": self.url})
        self.session.headers["X-CSRFToken"] = self._call("GET", "/api/v1/security/csrf_token/")["result"]

    def _call(self, method: str, path: str, csrf: bool = True, raw: bool = False, **kwargs: Any) -> Any:
        response = self.session.request(method, f"{self.url}{path}", timeout=self.timeout_s, **kwargs)
        if response.status_code >= 400:
            raise SupersetError(f"{method} {self.url}{path}: HTTP {response.status_code}: {response.text[:2000]}")
        return response.content if raw else response.json()

    # --- assets ----------------------------------------------------------------------------------
    def import_assets(self, bundle_zip: bytes, passwords: dict[str, str]) -> None:
        """``POST /api/v1/assets/import/``: databases, datasets, charts and dashboards, overwriting."""
        self._call("POST", "/api/v1/assets/import/", files={"bundle": ("bundle.zip", bundle_zip, "application/zip")},
                   data={"passwords": json.dumps(passwords)})

    def export_assets(self) -> bytes:
        """``GET /api/v1/assets/export/``: everything this Superset holds, as a zip."""
        return self._call("GET", "/api/v1/assets/export/", raw=True)

    # --- lookups ---------------------------------------------------------------------------------
    def _list(self, resource: str, columns: list[str]) -> list[dict[str, Any]]:
        rows, page = [], 0
        while True:
            query = f"(columns:!({','.join(columns)}),page:{page},page_size:100)"
            result = self._call("GET", f"/api/v1/{resource}/?q={query}")["result"]
            rows.extend(result)
            if len(result) < 100:
                return rows
            page += 1

    def databases(self) -> list[dict[str, Any]]:
        return self._list("database", ["id", "uuid", "database_name"])

    def delete_database(self, database_id: int) -> None:
        self._call("DELETE", f"/api/v1/database/{database_id}")

    def dashboards(self) -> list[dict[str, Any]]:
        return self._list("dashboard", ["id", "uuid", "slug", "dashboard_title"])

    def charts(self) -> list[dict[str, Any]]:
        return self._list("chart", ["id", "uuid", "slice_name", "viz_type"])

    def chart(self, chart_id: int) -> dict[str, Any]:
        return self._call("GET", f"/api/v1/chart/{chart_id}")["result"]

    def export_charts(self, chart_ids: list[int]) -> bytes:
        """``GET /api/v1/chart/export/``: the charts (and their datasets and database) as a zip."""
        return self._call("GET", f"/api/v1/chart/export/?q=!({','.join(map(str, chart_ids))})", raw=True)

    def chart_data(self, chart_id: int) -> dict[str, Any]:
        """``GET /api/v1/chart/{id}/data/``: the chart's saved query context, run."""
        return self._call("GET", f"/api/v1/chart/{chart_id}/data/")
