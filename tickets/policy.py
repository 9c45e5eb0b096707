"""Who gets a ticket and how urgent: severity → priority, minimum severity, rate limits, quiet
mode per kind/site, the reopen window. Pure: times are passed in, nothing is read at import.

A policy file (YAML or JSON; every key optional)::

    min_severity: warning            # anomalies below this open no ticket
    priorities: {info: 10, warning: 30, major: 60, critical: 90}
    reopen_window_s: 86400           # a problem back within this long reopens its ticket
    rate_limit: {max_new: 20, per_s: 3600}   # new tickets per kind and site
    quiet:                           # no new tickets or comments (resolving still happens)
      - {kind: clock_error}
      - {site: cern.example, until: "2026-01-20T00:00:00Z"}
    sites: {ps1.cern.example: CERN} # host → site (default: the host name without its first label)

>>> policy = Policy()
>>> policy.priority("major"), policy.wants("info"), policy.wants("critical")
(60, False, True)
>>> site_of("ps1.cern.cern.example", {})
'cern.cern.example'
"""

from __future__ import annotations

from collections import deque
from pathlib import Path
from typing import Any, Literal, Mapping

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from pathwatch.contract.timefmt import parse_rfc3339

SEVERITIES = ("info", "warning", "major", "critical")
Severity = Literal["info", "warning", "major", "critical"]


def rank(severity: str) -> int:
    """0 for info … 3 for critical.

    >>> rank("warning") < rank("critical")
    True
    """
    return SEVERITIES.index(severity)


class PolicyError(ValueError):
    """A policy file that cannot be used; the message names the file and the field."""


class RateLimit(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    max_new: int = Field(20, ge=1, description="New tickets allowed per kind and site per window.")
    per_s: float = Field(3600.0, gt=0, description="The window, in seconds (wall clock).")


class QuietRule(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    kind: str | None = None
    site: str | None = None
    until: str | None = Field(None, description="RFC 3339; the rule holds until then (always if unset).")

    def matches(self, kind: str, sites: set[str], now: float) -> bool:
        if self.until is not None and now >= parse_rfc3339(self.until).timestamp():
            return False
        return (self.kind is None or self.kind == kind) and (self.site is None or self.site in sites)


class Policy(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    min_severity: Severity = "warning"
    priorities: dict[Severity, int] = Field(default_factory=lambda: {"info": 10, "warning": 30, "major": 60, "critical": 90})
    reopen_window_s: float = Field(86400.0, ge=0)
    rate_limit: RateLimit = Field(default_factory=RateLimit)
    quiet: list[QuietRule] = Field(default_factory=list)
    sites: dict[str, str] = Field(default_factory=dict)

    def priority(self, severity: str) -> int:
        return self.priorities.get(severity, self.priorities.get("warning", 30))  # type: ignore[arg-type]

    def wants(self, severity: str) -> bool:
        """Does an anomaly of this severity deserve a ticket?"""
        return rank(severity) >= rank(self.min_severity)

    def sites_of(self, anomaly: Mapping[str, Any]) -> set[str]:
        return {site_of(host, self.sites) for host in (anomaly.get("source"), anomaly.get("destination")) if host}

    def quiet_for(self, anomaly: Mapping[str, Any], now: float) -> bool:
        """True when a quiet rule covers the anomaly's kind and either end's site at ``now``."""
        sites = self.sites_of(anomaly)
        return any(rule.matches(anomaly["kind"], sites, now) for rule in self.quiet)


def site_of(host: str, sites: Mapping[str, str]) -> str:
    """The host's site from the policy's table, else its name without the first label."""
    if host in sites:
        return sites[host]
    return host.split(".", 1)[1] if "." in host else host


def load(path: str | Path | None) -> Policy:
    """The policy of a YAML or JSON file (None: the defaults)."""
    if path is None:
        return Policy()
    path = Path(path)
    try:
        text = path.read_text()
    except OSError as error:
        raise PolicyError(f"policy file {path}: {error.strerror}") from None
    import yaml  # YAML is a superset of JSON

    try:
        data = yaml.safe_load(text) or {}
    except yaml.YAMLError as error:
        raise PolicyError(f"policy file {path}: {error}") from None
    try:
        return Policy.model_validate(data)
    except ValidationError as error:
        first = error.errors()[0]
        where = ".".join(str(part) for part in first["loc"]) or "(top level)"
        raise PolicyError(f"policy file {path}, field {where}: {first['msg']}") from None


class RateLimiter:
    """At most ``max_new`` new tickets per bucket (kind and site) in any ``per_s`` seconds.

    >>> limiter = RateLimiter(RateLimit(max_new=2, per_s=60))
    >>> [limiter.allow("loss_step|cern", now) for now in (0, 1, 2, 61)]
    [True, True, False, True]
    """

    def __init__(self, limit: RateLimit):
        self.limit = limit
        self._recent: dict[str, deque[float]] = {}

    def allow(self, bucket: str, now: float) -> bool:
        """True (and counted) if one more new ticket fits in ``bucket`` at ``now``."""
        times = self._recent.setdefault(bucket, deque())
        while times and times[0] <= now - self.limit.per_s:
            times.popleft()
        if len(times) >= self.limit.max_new:
            return False
        times.append(now)
        return True
