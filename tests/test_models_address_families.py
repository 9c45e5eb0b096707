"""A host pair measured over IPv4 and IPv6 is two paths: each family's series has its own
baseline and episodes, and the IPv6 path's anomalies say so (evidence ``ip_version``, summary
"IPv6:", ids of their own)."""

import numpy as np

from pathwatch.contract.timefmt import from_epoch
from pathwatch.models.anomaly import Anomaly
from pathwatch.models.engine import replay
from pathwatch.models.incidents import related
from pathwatch.models.config import IncidentParams
from pathwatch.models.monitor import PathMonitor
from tests.detector_series import DAY, HOUR, T0

EVERY = 240.0


def ping(i: int, t: float, rtt: float, family: int | None) -> dict:
    return {"kind": "latency", "id": f"p{family}-{i}", "source": "ps-a", "destination": "ps-b",
            "time": from_epoch(t), "one_way": False, "packets_sent": 3, "packets_lost": 0,
            "delay_min_ms": rtt, "ip_version": family}


def dual_stack(days: float, v6_shift_at: float | None, *, v4_family: int | None = 4) -> list[dict]:
    """Both families every 4 minutes: IPv4 at 20 ms, IPv6 at 45 ms (another route), IPv6 +29 ms
    from ``v6_shift_at``."""
    rng = np.random.default_rng(4)
    records = []
    for i in range(int(days * DAY / EVERY)):
        t = T0 + i * EVERY
        records.append(ping(i, t, 20.0 + abs(rng.normal(0, 0.3)), v4_family))
        shifted = v6_shift_at is not None and t >= v6_shift_at
        records.append(ping(i, t + 30.0, 45.0 + (29.0 if shifted else 0.0) + abs(rng.normal(0, 0.3)), 6))
    return records


def test_a_shift_on_ipv6_alone_is_found_and_says_its_family():
    onset = T0 + 2 * DAY + 5 * HOUR
    found = replay(dual_stack(4, onset)).anomalies
    assert [a.kind for a in found] == ["latency_shift"]
    shift = found[0]
    assert shift.evidence["ip_version"] == 6 and shift.summary.startswith("IPv6: ")
    assert abs(shift.start - onset) <= 2 * EVERY and 25.0 <= shift.evidence["step_ms"] <= 33.0


def test_two_families_on_one_pair_are_no_change_of_their_own():
    """Alternating 20 and 45 ms samples, each family steady: nothing (mixed, they were one series
    of two levels). Results that do not say their family share the IPv4 path."""
    assert replay(dual_stack(3, None)).anomalies == []
    assert replay(dual_stack(3, None, v4_family=None)).anomalies == []


def test_the_ipv6_path_has_ids_of_its_own_and_is_not_the_same_path_for_incidents():
    monitor, seen = PathMonitor("ps-a", "ps-b"), {}
    onset = T0 + 2 * DAY
    for record in dual_stack(4, onset):
        # the same shift on IPv4 too, at the same sample
        if record["ip_version"] == 4 and record["time"] >= from_epoch(onset):
            record = {**record, "delay_min_ms": record["delay_min_ms"] + 29.0}
        for anomaly in monitor.observe_record(record):
            seen[anomaly.id] = anomaly
    shifts = sorted(seen.values(), key=lambda a: a.evidence.get("ip_version") or 0)
    assert [a.evidence.get("ip_version") for a in shifts] == [None, 6]
    assert shifts[0].id != shifts[1].id
    assert monitor.v6 is not None and len(monitor.open_anomalies()) == 2


def test_a_route_change_explains_a_delay_shift_on_its_own_family_only():
    def anomaly(kind: str, family: int | None) -> Anomaly:
        return Anomaly.open(kind, "ps-a", "ps-b", start=T0, detected_at=T0 + 600, severity="warning", score=0.5,
                            summary="", evidence={}, family=family)
    route_v4 = anomaly("route_change", None)
    assert related(route_v4, anomaly("latency_shift", None), IncidentParams())
    assert not related(route_v4, anomaly("latency_shift", 6), IncidentParams())
