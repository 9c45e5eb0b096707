"""Detector configuration: which detectors run and their parameters, from a file or defaults.

A config file (YAML or JSON) maps detector names to parameter overrides; ``enabled`` lists the
detectors to run (all by default); ``incidents`` tunes how anomalies are grouped into incidents
(:class:`pathwatch.models.incidents.IncidentParams`); ``context`` the facts a path's detectors
share (:class:`pathwatch.models.context.ContextParams`)::

    enabled: [route, levels, latency, loss, diurnal, mtu, clock, silence]
    levels: {tput_runs: 4}
    incidents: {onset_window_s: 7200}
    context: {stall_s: 3.0}

>>> DetectorConfig.from_mapping({"silence": {"misses": 4}}).params["silence"].misses
4.0
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

from pathwatch.models.base import Detector
from pathwatch.models.context import ContextParams, PathContext
from pathwatch.models.params import Params
from pathwatch.models.incidents import IncidentParams


def detector_classes() -> dict[str, type[Detector]]:
    """Every detector class by name, in the order a monitor runs them."""
    from pathwatch.models.detectors import ALL

    return {cls.name: cls for cls in ALL}


@dataclass(frozen=True)
class DetectorConfig:
    enabled: tuple[str, ...] = ()
    params: dict[str, Params] = field(default_factory=dict)
    incidents: IncidentParams = field(default_factory=IncidentParams)
    context: ContextParams = field(default_factory=ContextParams)

    def __post_init__(self) -> None:
        classes = detector_classes()
        if not self.enabled:
            object.__setattr__(self, "enabled", tuple(classes))
        unknown = [name for name in self.enabled if name not in classes]
        if unknown:
            raise ValueError(f"enabled: unknown detector(s) {', '.join(unknown)}; known: {', '.join(classes)}")
        filled = {name: self.params.get(name) or classes[name].Params() for name in classes}
        object.__setattr__(self, "params", filled)

    @classmethod
    def from_mapping(cls, data: dict[str, Any], *, where: str = "config") -> DetectorConfig:
        classes = detector_classes()
        data = dict(data or {})
        enabled = data.pop("enabled", None)
        incidents = data.pop("incidents", None) or {}
        if not isinstance(incidents, dict):
            raise ValueError(f"{where}.incidents: expected a mapping of parameters")
        context = data.pop("context", None) or {}
        if not isinstance(context, dict):
            raise ValueError(f"{where}.context: expected a mapping of parameters")
        if enabled is not None and (not isinstance(enabled, list) or not all(isinstance(e, str) for e in enabled)):
            raise ValueError(f"{where}.enabled: expected a list of detector names")
        params = {}
        for name, values in data.items():
            if name not in classes:
                raise ValueError(f"{where}: unknown detector {name!r}; known: {', '.join(classes)}")
            if not isinstance(values, dict):
                raise ValueError(f"{where}.{name}: expected a mapping of parameters")
            params[name] = classes[name].Params.from_mapping(values, where=f"{where}.{name}")
        return cls(enabled=tuple(enabled or ()), params=params,
                   incidents=IncidentParams.from_mapping(incidents, where=f"{where}.incidents"),
                   context=ContextParams.from_mapping(context, where=f"{where}.context"))

    @classmethod
    def from_file(cls, path: str | Path) -> DetectorConfig:
        import yaml

        text = Path(path).read_text()
        data = yaml.safe_load(text) or {}
        if not isinstance(data, dict):
            raise ValueError(f"{path}: expected a mapping of detector names to parameters")
        return cls.from_mapping(data, where=str(path))

    @cached_property
    def digest(self) -> str:
        """A digest of every setting (enabled detectors, their parameters, incidents, context): two
        configurations that run the detectors alike have the same one.

        >>> DetectorConfig().digest == DetectorConfig.from_mapping({}).digest
        True
        >>> DetectorConfig().digest == DetectorConfig.from_mapping({"silence": {"misses": 4}}).digest
        False
        """
        settings = {"enabled": list(self.enabled), "incidents": asdict(self.incidents), "context": asdict(self.context),
                    "params": {name: asdict(params) for name, params in sorted(self.params.items())}}
        return hashlib.sha256(json.dumps(settings, sort_keys=True, default=str).encode()).hexdigest()[:16]

    def build(self, source: str | None, destination: str | None, context: PathContext | None = None) -> list[Detector]:
        """The enabled detectors of one path, sharing ``context`` (a new one when None)."""
        classes = detector_classes()
        context = context if context is not None else PathContext(self.context)
        return [classes[name](source, destination, self.params[name], context) for name in self.enabled]
