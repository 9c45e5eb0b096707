"""DETECTOR_VERSION names the detectors' output: a fixed-seed output's digest is pinned to it.

When a change to ``models/`` changes what the detectors say on these inputs, this test fails
until ``DETECTOR_VERSION`` (models/anomaly.py) is bumped and the new digest pinned below: stored
anomalies then say which logic made them, and a restored streaming job rebuilds monitors that
an older version made (``PathMonitor.made_with``).
"""

import hashlib

import orjson

from pathwatch.contract.timefmt import from_epoch
from pathwatch.ingest.parse import parse_value
from pathwatch.models.anomaly import DETECTOR_VERSION
from pathwatch.models.engine import replay
from pathwatch.sim.config import SimConfig
from pathwatch.sim.generate import path_lines, plan
from tests.detector_series import DAY, T0
from tests.test_models_address_families import dual_stack
from tests.test_models_diurnal_delay import evening, rtt_series
from tests.test_models_latency_episodes import series

# DETECTOR_VERSION -> sha256 of the output below (anomaly states without their detector_version).
PINNED = {
    "2.1.0": "f24f41d58d8c801c7847b121342417e8577ad2615b1d03dda1e32cad3559b5df",
}


def _records() -> list[dict]:
    sim = plan(SimConfig(seed=7, hosts=4, days=8))
    records = []
    for path in sim.mesh.paths:
        for line in path_lines(sim, *path.key):
            records += parse_value(orjson.loads(line.data), as_dicts=True)[1]
    # An RTT series with a shift, a further step, a spike and a return (the latency episodes).
    levels = [(0, 200.0), (10, 240.0), (20, 290.0), (30, 200.0)]
    for i, obs in enumerate(series(levels, 40, spikes={200: 200.0})):
        records.append({"kind": "latency", "id": f"rtt-{i}", "source": "probe", "destination": "anchor",
                        "time": from_epoch(obs.t), "one_way": False, "packets_sent": 3, "packets_lost": 0,
                        "delay_min_ms": obs.delay_min_ms})
    # A ping-only path whose RTT rises every evening (a daily delay rise).
    for i, obs in enumerate(rtt_series(6, lambda t: 120.0 + evening(t, 35.0))):
        records.append({"kind": "latency", "id": f"evening-{i}", "source": "probe2", "destination": "anchor",
                        "time": from_epoch(obs.t), "one_way": False, "packets_sent": 3, "packets_lost": 0,
                        "delay_min_ms": obs.delay_min_ms})
    # A dual-stack pair whose IPv6 path shifts alone (address families are two paths).
    records += dual_stack(3, T0 + 2 * DAY)
    return records


def output_digest() -> tuple[str, int]:
    anomalies = replay(_records()).anomalies
    states = [{k: v for k, v in a.to_dict().items() if k != "detector_version"} for a in anomalies]
    return hashlib.sha256(orjson.dumps(states, option=orjson.OPT_SORT_KEYS)).hexdigest(), len(anomalies)


def test_the_detectors_output_is_the_one_pinned_to_their_version():
    digest, count = output_digest()
    assert count >= 10, "the fixed-seed input should exercise several detectors"
    assert DETECTOR_VERSION in PINNED, f"DETECTOR_VERSION {DETECTOR_VERSION} has no pinned digest (got {digest})"
    assert digest == PINNED[DETECTOR_VERSION], (
        f"the detectors' output changed (digest {digest}): bump DETECTOR_VERSION in models/anomaly.py "
        "and pin the new digest here")
