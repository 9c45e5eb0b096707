"""Ticket text from anomalies: subject, body, and the comments on growth, recovery and return.

Pure: strings in, strings out. The body says what, where (hops included), since when, the
evidence in numbers, a one-line hypothesis, and links to Superset's path explorer filtered on
the path.

>>> rison({"a": ["x y", "b"], "n": 1})
"(a:!('x y',b),n:1)"
"""

from __future__ import annotations

import json
import re
import unicodedata
from typing import Any, Mapping
from urllib.parse import quote

from pathwatch.models.incidents import divergence_hop, path_of

_RISON_ID = re.compile(r"^[A-Za-z_./~-][A-Za-z0-9_./~-]*$")
# Characters a one-line field must not carry: controls and line breaks (a header or a table row
# ends there), bidi embeddings and overrides (they reorder what follows), invisible ones.
_BREAKING = re.compile("[\x00-\x1f\x7f-\x9f\u061c\u2028-\u202e\u2066-\u2069]+")
_INVISIBLE = re.compile("[\u200b-\u200f\u2060-\u2064\ufeff]+")
SUBJECT_MAX = 200   # UTF-8 bytes: RT keeps the first 200 of a longer subject


def rison(value: Any) -> str:
    """Rison (the URL-friendly JSON Superset's ``native_filters`` parameter takes)."""
    if value is None:
        return "!n"
    if value is True or value is False:
        return "!t" if value else "!f"
    if isinstance(value, (int, float)):
        return json.dumps(value)
    if isinstance(value, str):
        if value and _RISON_ID.match(value):
            return value
        return "'" + value.replace("!", "!!").replace("'", "!'") + "'"
    if isinstance(value, (list, tuple)):
        return "!(" + ",".join(rison(item) for item in value) + ")"
    if isinstance(value, Mapping):
        return "(" + ",".join(f"{rison(str(k))}:{rison(v)}" for k, v in sorted(value.items())) + ")"
    raise TypeError(f"rison: cannot encode {type(value).__name__}")


def path_explorer_url(superset_url: str | None, source: str | None, destination: str | None) -> str | None:
    """The path explorer dashboard with its Path filter set to the path (the same ``native_filters``
    link the anomaly tables carry, dashboards/bundle/datasets/pathwatch/anomalies.yaml).

    >>> path_explorer_url("http://s", "a", "b").split("?")[1]
    'native_filters=%28NATIVE_FILTER-path%3A%28extraFormData%3A%28filters%3A%21%28%28col%3Apath%2Cop%3AIN%2Cval%3A%21%28%27a%20%E2%86%92%20b%27%29%29%29%29%2CfilterState%3A%28value%3A%21%28%27a%20%E2%86%92%20b%27%29%29%2Cid%3ANATIVE_FILTER-path%2CownState%3A%28%29%29%29'
    """
    if not superset_url or not (source and destination):
        return None
    path = f"{source} → {destination}"   # the dashboards' path column
    filters = {"NATIVE_FILTER-path": {
        "extraFormData": {"filters": [{"col": "path", "op": "IN", "val": [path]}]},
        "filterState": {"value": [path]}, "id": "NATIVE_FILTER-path", "ownState": {}}}
    return f"{superset_url.rstrip('/')}/superset/dashboard/path-explorer/?native_filters=" + quote(rison(filters), safe="")


def _arrow(anomaly: Mapping[str, Any]) -> str:
    return f"{anomaly.get('source') or '?'} → {anomaly.get('destination') or '?'}"


def element(key: str) -> str:
    """The shared element a key names, for people ("hop 10.0.0.1", "host ps1.a", "path a → b").

    >>> element("route_change|hop:10.0.0.1"), element("loss_step|path:a>b"), element("loss_step|path:a>b|ipv6")
    ('hop 10.0.0.1', 'path a → b', 'path a → b over IPv6')
    """
    scope, _, what = key.split("|", 1)[1].partition(":")
    if scope == "path":
        what, _, family = what.partition("|ipv")
        return "path " + what.replace(">", " → ", 1) + (f" over IPv{family}" if family else "")
    if scope == "lag":
        return "a link bundle (" + what.replace("|to:", ", toward ") + ")"
    return f"{scope} {what}"


def one_line(text: str, limit: int = SUBJECT_MAX) -> str:
    """``text`` safe for a one-line field such as a subject: controls, line breaks and bidi
    overrides become spaces, invisible characters go, at most two combining marks stay on a
    letter, and past ``limit`` UTF-8 bytes it is cut and ends in "…". The rest (markup, quotes)
    is kept: it is text, and shown as text.

    >>> one_line("a\\r\\nBcc: x\\u202egnp.exe  <b>")
    'a Bcc: x gnp.exe <b>'
    >>> len(one_line("é" * 500).encode()) <= 200, one_line("x" * 300)[-2:]
    (True, 'x…')
    """
    flat = _INVISIBLE.sub("", _BREAKING.sub(" ", text))
    kept, marks = [], 0
    for char in flat:
        marks = marks + 1 if unicodedata.combining(char) else 0
        if marks <= 2:
            kept.append(char)
    data = " ".join("".join(kept).split()).encode()
    if len(data) <= limit:
        return data.decode()
    return data[: limit - len("…".encode())].decode("utf-8", "ignore") + "…"


def subject(anomaly: Mapping[str, Any], key: str) -> str:
    """One line (:func:`one_line`): kind, shared element, first path."""
    where = element(key)
    first = "" if where.startswith("path ") else f" ({_arrow(anomaly)})"
    return one_line(f"[pathwatch] {anomaly['kind'].replace('_', ' ')} at {where}{first}")


def hypothesis(anomaly: Mapping[str, Any]) -> str:
    """A one-line guess at the cause, from the kind and its evidence."""
    kind, e = anomaly["kind"], anomaly.get("evidence") or {}
    if kind == "route_change":
        hop = divergence_hop(e) or "an unanswered hop"
        ases = f" (AS path {'-'.join(map(str, e.get('old_as_path') or []))} → {'-'.join(map(str, e.get('new_as_path') or []))})" \
            if e.get("as_changed") else ""
        step = f", RTT/OWD {e['rtt_step_ms']:+.1f} ms" if isinstance(e.get("rtt_step_ms"), (int, float)) else ""
        return f"Traffic no longer goes through {hop} at hop {e.get('divergence_ttl')}: a link or peering change there{ases}{step}."
    if kind == "mtu_blackhole":
        if "path_mtu_now" in e:
            silent = ", and ICMP 'fragmentation needed' does not come back (silence beyond it)" if e.get("silent_after_drop") else ""
            return (f"MTU mismatch at hop {e.get('mtu_drop_ttl')} ({e.get('mtu_drop_hop')}): pmtu {e['path_mtu_now']} "
                    f"on a {e.get('path_mtu_before')}-byte path{silent}.")
        return "An MTU black hole: TCP stalls at the start of runs, as when large packets vanish and PMTUD fails."
    if kind == "rising_loss" and "lag_k_estimate" in e:
        k = e["lag_k_estimate"]
        return f"A failing member in a {k}-link aggregate: about 1 in {k} flows hash onto it and lose packets."
    if kind == "rising_loss":
        return f"Loss rising slowly (now {e.get('loss_pct')} %): a degrading optic, dirty fibre or a link filling up."
    if kind == "loss_step":
        return "Loss stepped up at once: a faulty link or interface, or a policer on the path."
    if kind == "throughput_drop":
        cause = (e.get("likely_cause") or {}).get("cause") or e.get("rule_cause")
        return f"Throughput dropped {e.get('drop_pct')} %; the run-cause classifier says: {cause}." if cause \
            else f"Throughput dropped {e.get('drop_pct')} %."
    if kind == "window_limited":
        return "A TCP window limit (rate ≈ window / RTT, no loss): raise the hosts' TCP buffers."
    if kind == "diurnal_saturation":
        return f"Congestion in the busy hours {e.get('busy_hours_utc')} UTC: a link near capacity at those times."
    if kind == "latency_shift":
        return f"One-way delay shifted {e.get('step_ms')} ms: a longer route or a new queue on the path."
    if kind == "clock_error":
        return "A host's clock is not synchronised (check NTP/PTP on both ends); one-way delays are wrong."
    if kind == "unreachable":
        return "The destination does not answer: host down, or a filter or broken route on the path."
    if kind == "no_data":
        return f"The collector on {anomaly.get('source')} stopped publishing: host down, pscheduler or the archiver stalled."
    return anomaly.get("summary") or kind


def _evidence_lines(evidence: Mapping[str, Any]) -> list[str]:
    """One line per evidence field, its text as it is (the body is sent as text/plain)."""
    lines = []
    for name, value in evidence.items():
        if isinstance(value, (dict, list)):
            value = json.dumps(value, separators=(", ", ": "), ensure_ascii=False)
        lines.append(f"  {name}: {value}")
    return lines


def where_lines(anomaly: Mapping[str, Any]) -> list[str]:
    """Source, destination and, when the evidence has them, the hops involved."""
    e = anomaly.get("evidence") or {}
    lines = [f"Where: {_arrow(anomaly)}"]
    if anomaly["kind"] == "route_change" and e.get("old_hops") is not None:
        first = max(int(e.get("divergence_ttl") or 1) - 2, 0) + 1
        lines.append(f"  old hops from TTL {first}: {' '.join(h or '*' for h in e['old_hops'])}")
        lines.append(f"  new hops from TTL {first}: {' '.join(h or '*' for h in e.get('new_hops') or [])}")
    if anomaly["kind"] == "mtu_blackhole" and e.get("mtu_drop_hop"):
        lines.append(f"  MTU drop at hop {e.get('mtu_drop_ttl')}: {e['mtu_drop_hop']}")
    return lines


def body(anomaly: Mapping[str, Any], key: str, superset_url: str | None = None) -> str:
    """The ticket's first message."""
    link = path_explorer_url(superset_url, anomaly.get("source"), anomaly.get("destination"))
    return "\n".join([
        f"What: {anomaly['summary']}",
        *where_lines(anomaly),
        f"Since: {anomaly['start']} (detected {anomaly['detected_at']})",
        f"Severity: {anomaly['severity']} (score {anomaly['score']})",
        f"Hypothesis: {hypothesis(anomaly)}",
        "Evidence:",
        *_evidence_lines(anomaly.get("evidence") or {}),
        f"Path explorer: {link}" if link else "Path explorer: (no Superset configured)",
        "",
        f"Problem key: {key}",
        f"Anomaly: {anomaly['id']} ({anomaly['kind']}, detector {anomaly.get('detector_version')})",
    ])


def grown_comment(anomaly: Mapping[str, Any], paths: int, new_path: bool, superset_url: str | None = None) -> str:
    """A comment when the problem reaches another path or gets more severe."""
    link = path_explorer_url(superset_url, anomaly.get("source"), anomaly.get("destination"))
    head = (f"Also on {_arrow(anomaly)} (now {paths} paths)." if new_path
            else f"Worse on {_arrow(anomaly)}: severity {anomaly['severity']}.")
    return "\n".join([head, f"What: {anomaly['summary']}", *where_lines(anomaly)[1:],
                      f"Since: {anomaly['start']}", f"Severity: {anomaly['severity']} (score {anomaly['score']})",
                      *([f"Path explorer: {link}"] if link else []), f"Anomaly: {anomaly['id']}"])


def related_comment(anomaly: Mapping[str, Any], problem_kind: str, superset_url: str | None = None) -> str:
    """Another kind of anomaly on an affected path of a ``problem_kind`` problem: a likely cause of
    it or a known consequence (the evaluation's table), said which.

    >>> lag = {"kind": "rising_loss", "source": "a", "destination": "b", "summary": "About 1 in 2 runs degraded.",
    ...        "start": "2026-01-01T00:00:00Z", "severity": "warning", "score": 1.0, "id": "x"}
    >>> related_comment(lag, "throughput_drop").splitlines()[0]
    'Related on a → b: rising loss, a likely cause of this throughput drop.'
    >>> related_comment({**lag, "kind": "latency_shift"}, "route_change").splitlines()[0]
    'Related on a → b: latency shift, a known consequence of this route change.'
    """
    from pathwatch.models.incidents import CONSEQUENCES

    kind, problem = anomaly["kind"], problem_kind.replace("_", " ")
    role = "a likely cause" if problem_kind in CONSEQUENCES.get(kind, ()) else "a known consequence"
    link = path_explorer_url(superset_url, anomaly.get("source"), anomaly.get("destination"))
    return "\n".join([f"Related on {_arrow(anomaly)}: {kind.replace('_', ' ')}, {role} of this {problem}.",
                      f"What: {anomaly['summary']}", f"Since: {anomaly['start']}",
                      f"Severity: {anomaly['severity']} (score {anomaly['score']})",
                      *([f"Path explorer: {link}"] if link else []), f"Anomaly: {anomaly['id']}"])


def recovered_comment(anomaly: Mapping[str, Any], still_open: int) -> str:
    """A path recovered, or its anomaly became another kind, while the ticket still has open ones.

    >>> step = {"id": "x", "kind": "loss_step", "source": "a", "destination": "b", "end": "2026-01-02T00:00:00Z"}
    >>> print(recovered_comment({**step, "evidence": {"became": "rising_loss"}}, 1))
    On a → b the loss step became a rising loss at 2026-01-02T00:00:00Z; still affected: 1 path(s).
    Anomaly: x
    """
    became = (anomaly.get("evidence") or {}).get("became")
    if became:
        what = f"On {_arrow(anomaly)} the {str(anomaly.get('kind')).replace('_', ' ')} became a {became.replace('_', ' ')}"
    else:
        what = f"Recovered on {_arrow(anomaly)}"
    return f"{what} at {anomaly.get('end')}; still affected: {still_open} path(s).\nAnomaly: {anomaly['id']}"


def resolved_text(anomaly: Mapping[str, Any], paths: int) -> str:
    """The comment that goes with resolving: the last path recovered, or its anomaly became another kind.

    >>> step = {"id": "x", "source": "a", "destination": "b", "end": "2026-01-02T00:00:00Z"}
    >>> print(resolved_text({**step, "evidence": {"became": "rising_loss"}}, 1))
    Resolved: on a → b this became a rising loss at 2026-01-02T00:00:00Z, followed on its own ticket.
    Anomaly: x
    """
    evidence = anomaly.get("evidence") or {}
    if evidence.get("became"):
        return (f"Resolved: on {_arrow(anomaly)} this became a {evidence['became'].replace('_', ' ')} at {anomaly.get('end')}, "
                f"followed on its own ticket.\nAnomaly: {anomaly['id']}")
    ended = evidence.get("ended") or evidence.get("recovered")
    why = f" ({ended})" if ended else ""
    return f"Resolved: {_arrow(anomaly)} recovered at {anomaly.get('end')}{why}; all {paths} path(s) are clear.\nAnomaly: {anomaly['id']}"


def reopened_text(anomaly: Mapping[str, Any], superset_url: str | None = None) -> str:
    """The comment that goes with reopening: the problem is back within the reopen window."""
    return "Back again within the reopen window.\n" + body(anomaly, "", superset_url).split("\n\nProblem key:")[0]
