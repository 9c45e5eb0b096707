"""A saved monitor built by other detectors or another configuration is rebuilt, not patched."""

import pickle

from pathwatch.models.anomaly import DETECTOR_VERSION
from pathwatch.models.config import DetectorConfig
from pathwatch.models.monitor import PathMonitor
from tests.detector_series import T0, latency


def _shifted_monitor(config: DetectorConfig) -> PathMonitor:
    monitor = PathMonitor("a", "b", config)
    for i in range(60):
        monitor.observe(latency(T0 + 600 * i, 10.0 if i < 30 else 40.0))
    return monitor


def test_a_monitor_is_made_with_its_own_version_and_configuration_only():
    config = DetectorConfig()
    monitor = pickle.loads(pickle.dumps(_shifted_monitor(config)))
    assert monitor.made_by == (DETECTOR_VERSION, config.digest)
    assert monitor.made_with(DetectorConfig.from_mapping({}))
    assert not monitor.made_with(DetectorConfig.from_mapping({"latency": {"runs": 4}}))
    assert not monitor.made_with(DetectorConfig.from_mapping({"context": {"stall_s": 3.0}}))
    monitor.made_by = ("0.9.0", config.digest)
    assert not monitor.made_with(config)


def test_retiring_a_monitor_closes_what_it_held_open_at_its_last_observation():
    monitor = _shifted_monitor(DetectorConfig())
    held = monitor.open_anomalies()
    assert [a.kind for a in held] == ["latency_shift"]
    closed = monitor.retire()
    assert [a.id for a in closed] == [a.id for a in held]
    assert all(a.end == monitor.last_t and "rebuilt" in a.evidence["ended"] for a in closed)
    assert monitor.open_anomalies() == []
