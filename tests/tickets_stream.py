"""The anomaly stream the ticket tests replay (unit tests against a fake, integration against RT).

Made with the detectors' own Anomaly type, so ids and JSON are exactly what the pipeline emits.
"""

from __future__ import annotations

from dataclasses import dataclass

from pathwatch.models.anomaly import Anomaly

HOUR, DAY = 3600.0, 86400.0
T0 = 1_767_225_600.0   # 2026-01-01T00:00:00Z
HOP = "62.40.3.56"
TEN = [(f"ps1.s{i}.example", "ps1.far.example") for i in range(10)]


def loss_step(start: float, severity: str = "warning", source: str = "ps1.a.example",
              destination: str = "ps1.b.example") -> Anomaly:
    return Anomaly.open("loss_step", source, destination, start=start, detected_at=start + 600, severity=severity,
                        score=0.9, summary="Loss stepped from 0 to 0.5 %.", evidence={"loss_pct": 0.5, "baseline_loss_pct": 0.0})


def route_change(source: str, destination: str, start: float, hop: str = HOP) -> Anomaly:
    return Anomaly.open("route_change", source, destination, start=start, detected_at=start, severity="major", score=1.0,
                        summary=f"IP-level route change at hop 4: {hop} → 4.69.1.38 (11 → 9 hops).",
                        evidence={"divergence_ttl": 4, "old_hops": ["90.147.1.149", hop, "62.40.3.167", "62.40.2.84"],
                                  "new_hops": ["90.147.1.149", "4.69.1.38", "188.1.1.38", "131.169.1.112"],
                                  "old_as_path": [], "new_as_path": [], "as_changed": False, "rtt_step_ms": 3.4})


@dataclass(frozen=True)
class Step:
    anomaly: dict
    action: str          # what the reconciler must do: create, comment, resolve, reopen, update, skip
    ticket: str          # which ticket of the scenario it concerns: "loss", "route", "loss-later"


def scenario(tag: str = "") -> list[Step]:
    """Open, grow, repeat, close, reopen within the window, close; ten paths sharing one cause
    opening and closing; the first problem back after the window (a new ticket). ``tag`` makes
    the hosts and the shared hop distinct, so several runs can share one ticket system."""
    hosts = {"source": f"ps1.a{tag}.example", "destination": f"ps1.b{tag}.example"}
    hop = f"62.40.3.{56 + len(tag)}" if not tag else f"10.{len(tag)}.{sum(map(ord, tag)) % 250}.1"
    ten = [(f"ps1.s{i}{tag}.example", f"ps1.far{tag}.example") for i in range(10)]
    steps: list[Step] = []
    first = loss_step(T0, **hosts)
    grown = first.grown(severity="major", score=0.95, summary="Loss stepped from 0 to 2 %.", evidence={"loss_pct": 2.0})
    steps += [Step(first.to_dict(), "create", "loss"), Step(grown.to_dict(), "comment", "loss"),
              Step(grown.to_dict(), "skip", "loss"), Step(grown.closed(T0 + 2 * HOUR).to_dict(), "resolve", "loss")]
    again = loss_step(T0 + 5 * HOUR, **hosts)
    steps += [Step(again.to_dict(), "reopen", "loss"), Step(again.closed(T0 + 6 * HOUR).to_dict(), "resolve", "loss")]
    routes = [route_change(s, d, T0 + 10 * HOUR + i * 60, hop) for i, (s, d) in enumerate(ten)]
    steps += [Step(r.to_dict(), "create" if i == 0 else "comment", "route") for i, r in enumerate(routes)]
    steps += [Step(r.closed(T0 + 20 * HOUR + i * 60).to_dict(), "resolve" if i == 9 else "comment", "route")
              for i, r in enumerate(routes)]
    later = loss_step(T0 + 3 * DAY, **hosts)
    steps += [Step(later.to_dict(), "create", "loss-later")]
    return steps
