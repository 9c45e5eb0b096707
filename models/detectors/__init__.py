"""The detectors, one module per family; ``ALL`` is the order a path monitor runs them."""

from __future__ import annotations

from pathwatch.models.detectors.clock import ClockDetector
from pathwatch.models.detectors.diurnal import DiurnalDetector
from pathwatch.models.detectors.latency import LatencyDetector
from pathwatch.models.detectors.levels import LevelDetector
from pathwatch.models.detectors.loss import LossDetector
from pathwatch.models.detectors.mtu import MtuDetector
from pathwatch.models.detectors.route import RouteDetector
from pathwatch.models.detectors.silence import SilenceDetector

ALL = [RouteDetector, MtuDetector, LevelDetector, LatencyDetector, LossDetector, DiurnalDetector, ClockDetector, SilenceDetector]
