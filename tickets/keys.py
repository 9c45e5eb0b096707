"""The problem an anomaly belongs to: a stable key shared by every path with the same cause.

One failing element hurts many paths; each path's detector reports its own anomaly. The key
names the shared element where the evidence shows one, else the path:

- ``route_change``: the hop the old route left at the divergence point (``hop:IP``);
- ``mtu_blackhole``: the hop where the path MTU drops (``hop:IP``);
- ``rising_loss`` with the LAG signature: ``lag:k=K`` toward the destination (a bundle of K
  links with one failing member, seen by every path into that site);
- ``no_data``: the source host (its collector stopped publishing);
- ``clock_error``: a host, either end (the reconciler joins a problem open for either);
- anything else: the path.

>>> a = {"kind": "route_change", "source": "a", "destination": "b",
...      "evidence": {"divergence_ttl": 4, "old_hops": ["1.1.1.1", "2.2.2.2", "3.3.3.3"]}}
>>> problem_keys(a)
['route_change|hop:2.2.2.2']
>>> problem_keys({"kind": "throughput_drop", "source": "a", "destination": "b", "evidence": {}})
['throughput_drop|path:a>b']
>>> problem_keys({"kind": "clock_error", "source": "a", "destination": "b", "evidence": {}})
['clock_error|host:a', 'clock_error|host:b']
"""

from __future__ import annotations

from typing import Any, Mapping


def path_of(anomaly: Mapping[str, Any]) -> str:
    """``source>destination`` (empty ends stay empty), the form the topics key paths by."""
    return f"{anomaly.get('source') or ''}>{anomaly.get('destination') or ''}"


def divergence_hop(evidence: Mapping[str, Any]) -> str | None:
    """The old route's hop at the divergence TTL, from a route change's evidence (None if unanswered)."""
    ttl, old = evidence.get("divergence_ttl"), evidence.get("old_hops")
    if not isinstance(ttl, int) or not isinstance(old, list) or ttl < 1:
        return None
    index = (ttl - 1) - max(ttl - 2, 0)   # old_hops starts two hops before the divergence TTL
    if 0 <= index < len(old) and isinstance(old[index], str) and old[index]:
        return old[index]
    return None


def problem_keys(anomaly: Mapping[str, Any]) -> list[str]:
    """Candidate problem keys, best first; the first is the one a new ticket gets."""
    kind = anomaly["kind"]
    evidence = anomaly.get("evidence") or {}
    source, destination = anomaly.get("source"), anomaly.get("destination")
    if kind == "route_change" and (hop := divergence_hop(evidence)):
        return [f"{kind}|hop:{hop}"]
    if kind == "mtu_blackhole" and isinstance(evidence.get("mtu_drop_hop"), str):
        return [f"{kind}|hop:{evidence['mtu_drop_hop']}"]
    if kind == "rising_loss" and isinstance(evidence.get("lag_k_estimate"), int) and destination:
        return [f"{kind}|lag:k={evidence['lag_k_estimate']}|to:{destination}"]
    if kind == "no_data" and source:
        return [f"{kind}|host:{source}"]
    if kind == "clock_error" and source and destination:
        return [f"{kind}|host:{source}", f"{kind}|host:{destination}"]
    return [f"{kind}|path:{path_of(anomaly)}"]


def scope_of(key: str) -> str:
    """What a key groups by: ``path``, ``hop``, ``host`` or ``lag``.

    >>> scope_of("route_change|hop:10.0.0.1"), scope_of("loss_step|path:a>b")
    ('hop', 'path')
    """
    return key.split("|", 2)[1].split(":", 1)[0]


def related_kinds(kind: str) -> frozenset[str]:
    """Kinds that explain ``kind`` on the same path, or that it explains (the evaluation's table
    of known consequences): an open problem of such a kind on the path takes the anomaly in
    instead of a ticket of its own, whichever was seen first.

    >>> sorted(related_kinds("latency_shift"))
    ['clock_error', 'diurnal_saturation', 'route_change']
    >>> sorted(related_kinds("loss_step"))
    ['diurnal_saturation', 'rising_loss', 'throughput_drop', 'unreachable']
    """
    from pathwatch.evaluation.matching import CONSEQUENCES

    causes = {cause for cause, consequences in CONSEQUENCES.items() if kind in consequences}
    return frozenset(causes | set(CONSEQUENCES.get(kind, ())))
