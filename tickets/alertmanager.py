"""Alertmanager as an optional front: anomalies go in as alerts, grouped notifications come
back through a webhook and become the same ticket operations.

Posting (:class:`AlertPoster`): one alert per anomaly, labelled with its problem key (the
group), anomaly id, kind, path and severity; the whole anomaly rides along in the ``anomaly``
annotation. An open anomaly is re-posted every ``repost_s`` (below Alertmanager's
``resolve_timeout``, or it would expire); a closed one is posted with ``endsAt``. Alertmanager
only notifies when a group's set of alerts changes, not when annotations do, so severity is a
label: when it rises, the old alert is resolved and the new one fires.

Receiving (:func:`receiver`): each notification lists every alert of one group; the firing
ones are applied first, then resolved ones whose anomaly has no firing alert (an anomaly that
Alertmanager resolved because it was not re-posted is closed at its ``endsAt``). A ticket
system that is down answers 503, so Alertmanager sends the notification again.
"""

from __future__ import annotations

import json
import logging
import threading
from datetime import datetime, timezone
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Callable, Mapping

import requests

from pathwatch.contract.timefmt import format_utc
from pathwatch.tickets.backends.base import BackendError, BackendUnavailable
from pathwatch.models.incidents import problem_keys
from pathwatch.tickets.reconcile import SKIP, Outcome, Reconciler
from pathwatch.tickets.service import BadAnomaly, parse

log = logging.getLogger(__name__)


def _now() -> str:
    return format_utc(datetime.now(timezone.utc))


def alert_of(anomaly: Mapping[str, Any], ends_at: str | None = None, severity: str | None = None) -> dict[str, Any]:
    """The Alertmanager alert of one anomaly state (``ends_at`` resolves it).

    >>> a = {"id": "x", "kind": "loss_step", "source": "a", "destination": "b", "severity": "major",
    ...      "start": "2026-01-01T00:00:00Z", "end": None, "summary": "Loss.", "evidence": {}}
    >>> alert = alert_of(a)
    >>> alert["labels"]["problem_key"], alert["labels"]["severity"], "endsAt" in alert
    ('loss_step|path:a>b', 'major', False)
    """
    labels = {"alertname": f"pathwatch_{anomaly['kind']}", "problem_key": problem_keys(anomaly)[0],
              "anomaly_id": anomaly["id"], "kind": anomaly["kind"], "source": anomaly.get("source") or "",
              "destination": anomaly.get("destination") or "", "severity": severity or anomaly["severity"]}
    alert = {"labels": labels, "annotations": {"summary": anomaly["summary"], "anomaly": json.dumps(anomaly)},
             "startsAt": anomaly["start"]}
    if ends_at is not None:
        alert["endsAt"] = ends_at
    return alert


class AlertPoster:
    """Posts anomaly states to Alertmanager and keeps the open ones alive (see the module doc)."""

    def __init__(self, url: str, timeout: float = 10.0):
        self.url = url.rstrip("/")
        self.timeout = timeout
        self.session = requests.Session()
        self.active: dict[str, dict[str, Any]] = {}   # anomaly id -> its latest open state
        self._lock = threading.Lock()

    def _post(self, alerts: list[dict[str, Any]]) -> None:
        try:
            response = self.session.post(f"{self.url}/api/v2/alerts", json=alerts, timeout=self.timeout)
        except requests.RequestException as error:
            raise BackendUnavailable(f"alertmanager {self.url}: {type(error).__name__}: {error}") from None
        if response.status_code >= 500:
            raise BackendUnavailable(f"alertmanager {self.url}: HTTP {response.status_code}")
        if response.status_code != 200:
            raise BackendError(f"alertmanager {self.url}: HTTP {response.status_code}: {response.text[:200]}")

    def handle(self, anomaly: Mapping[str, Any]) -> Outcome:
        """Post one anomaly state (the service's Handler calls this in place of a Reconciler)."""
        key = problem_keys(anomaly)[0]
        with self._lock:
            before = self.active.get(anomaly["id"])
            alerts = []
            if before is not None and before["severity"] != anomaly["severity"]:
                alerts.append(alert_of(before, ends_at=_now()))
            closed = anomaly["end"] is not None
            alerts.append(alert_of(anomaly, ends_at=_now() if closed else None))
            self._post(alerts)
            if closed:
                self.active.pop(anomaly["id"], None)
            else:
                self.active[anomaly["id"]] = dict(anomaly)
        return Outcome("alert-resolved" if closed else "alert", anomaly["id"], key)

    def forget(self) -> None:
        """(The Handler calls this after errors; the poster keeps nothing it could get wrong.)"""

    def repost(self) -> int:
        """Post every open anomaly again (before resolve_timeout lets them expire); returns how many."""
        with self._lock:
            alerts = [alert_of(a) for a in self.active.values()]
        if alerts:
            self._post(alerts)
        return len(alerts)

    def reload(self) -> int:
        """After a restart: take the open anomalies back from Alertmanager's active alerts."""
        try:
            response = self.session.get(f"{self.url}/api/v2/alerts", params={"active": "true", "silenced": "true",
                                        "inhibited": "true", "filter": 'alertname=~"pathwatch_.*"'}, timeout=self.timeout)
            response.raise_for_status()
        except requests.RequestException as error:
            raise BackendUnavailable(f"alertmanager {self.url}: {error}") from None
        with self._lock:
            for alert in response.json():
                try:
                    anomaly = parse(alert["annotations"]["anomaly"])
                except (BadAnomaly, KeyError):
                    continue
                if anomaly["end"] is None and anomaly["severity"] == alert["labels"].get("severity"):
                    self.active[anomaly["id"]] = anomaly
            return len(self.active)

    def keep_alive(self, every_s: float, stopping: threading.Event) -> threading.Thread:
        """A thread re-posting the open anomalies every ``every_s`` seconds until ``stopping``."""
        def loop() -> None:
            while not stopping.wait(every_s):
                try:
                    self.repost()
                except BackendError as error:
                    log.warning("tickets: re-posting alerts: %s", error)

        thread = threading.Thread(target=loop, name="alertmanager-repost", daemon=True)
        thread.start()
        return thread


def _ends(text: str) -> str:
    """Alertmanager's time (nanoseconds, offsets) as the contract's RFC 3339 UTC."""
    value = text.replace("Z", "+00:00")
    if "." in value:
        head, _, rest = value.partition(".")
        digits = len(rest) - len(rest.lstrip("0123456789"))
        value = f"{head}.{rest[:min(digits, 6)]}{rest[digits:]}"
    return format_utc(datetime.fromisoformat(value))


def anomalies_of(notification: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The anomaly states one grouped notification stands for, firing ones first."""
    firing, resolved = [], []
    for alert in notification.get("alerts") or []:
        anomaly = parse(alert.get("annotations", {}).get("anomaly"))
        if alert.get("status") == "resolved":
            if anomaly["end"] is None:
                anomaly["end"] = max(_ends(alert["endsAt"]), anomaly["start"])
            resolved.append(anomaly)
        else:
            firing.append(anomaly)
    open_ids = {a["id"] for a in firing}
    return firing + [a for a in resolved if a["id"] not in open_ids]


def receiver(reconciler: Reconciler, port: int, host: str = "127.0.0.1",
             on_outcome: Callable[[Outcome, dict], None] | None = None) -> ThreadingHTTPServer:
    """An HTTP server (not yet serving) turning Alertmanager's webhook notifications into ticket
    operations; call ``serve_forever()`` (it handles one notification at a time)."""
    lock = threading.Lock()

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            try:
                notification = json.loads(self.rfile.read(length))
                anomalies = anomalies_of(notification)
            except (ValueError, BadAnomaly) as error:
                log.error("tickets: Alertmanager notification rejected: %s", error)
                return self._answer(400, f"not a pathwatch notification: {error}")
            try:
                with lock:
                    for anomaly in anomalies:
                        outcome = reconciler.handle(anomaly)
                        if on_outcome is not None:
                            on_outcome(outcome, anomaly)
                        if outcome.action != SKIP:
                            log.info("tickets: %s %s (%s)", outcome.action, outcome.ticket.reference if outcome.ticket else "-", outcome.key)
            except BackendUnavailable as error:
                log.warning("tickets: %s; Alertmanager will send again", error)
                return self._answer(503, str(error))
            except BackendError as error:
                log.error("tickets: %s", error)
                return self._answer(422, str(error))
            self._answer(200, "ok")

        def _answer(self, code: int, text: str) -> None:
            data = text.encode()
            self.send_response(code)
            self.send_header("Content-Type", "text/plain")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *args: Any) -> None:
            pass

    return ThreadingHTTPServer((host, port), Handler)
