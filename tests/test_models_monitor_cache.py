"""The monitor's per-type cache of bound methods (handlers and timed detectors' deadlines) is never
pickled, and a monitor restored mid-stream emits exactly what one that never left memory emits."""

from __future__ import annotations

import pickle
import types

from pathwatch.models.monitor import PathMonitor
from pathwatch.models.observe import LatencyObs, TraceObs
from tests.detector_series import HOUR, T0, latency, trace

HOPS = ["10.0.0.1", "10.0.1.1", "192.0.2.1", "10.9.0.1"]


def _series():
    """Two days of latency every 10 min and traces every 20 min, a 6-hour silence, then more."""
    for i in range(288):
        yield latency(T0 + 600 * i, 10.0)
        if i % 2 == 0:
            yield trace(T0 + 600 * i + 1, HOPS)
    resume = T0 + 600 * 288 + 6 * HOUR
    for i in range(12):
        yield latency(resume + 600 * i, 10.0)
        if i % 2 == 0:
            yield trace(resume + 600 * i + 1, HOPS)


def _bound_methods(value) -> bool:
    if isinstance(value, types.MethodType):
        return True
    if isinstance(value, dict):
        return any(_bound_methods(v) for v in value.values())
    if isinstance(value, (list, tuple)):
        return any(_bound_methods(v) for v in value)
    return False


def test_cache_holds_deadlines_and_handlers_and_stays_out_of_the_pickle():
    monitor = PathMonitor("a", "b")
    monitor.observe(latency(T0, 10.0))
    monitor.observe(trace(T0 + 1, HOPS))
    assert set(monitor.calls) == {LatencyObs, TraceObs}
    deadlines, handlers = monitor.calls[LatencyObs]
    assert [d.__self__ for d in deadlines] == monitor.timed and handlers
    state = monitor.__getstate__()
    assert "calls" not in state and not _bound_methods(state)


def test_a_monitor_restored_mid_stream_emits_the_same_anomalies():
    series = list(_series())
    plain, restored = PathMonitor("a", "b"), PathMonitor("a", "b")
    emitted_plain, emitted_restored = [], []
    for i, obs in enumerate(series):
        emitted_plain += plain.observe(obs)
        if i % 97 == 0:
            restored = pickle.loads(pickle.dumps(restored))
        emitted_restored += restored.observe(obs)
    end = series[-1].t + 12 * HOUR
    emitted_plain += plain.advance(end)
    emitted_restored += pickle.loads(pickle.dumps(restored)).advance(end)
    assert [a.kind for a in emitted_plain].count("no_data") == 3       # opened, closed, open again at the end
    assert emitted_restored == emitted_plain
