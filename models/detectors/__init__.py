"""The detectors, one module per family; ``ALL`` is the order a path monitor runs them."""

from __future__ import annotations

from pathwatch.models.detectors.silence import SilenceDetector

ALL = [SilenceDetector]
