"""window_limited on a real kernel (issue 16, found by the lab of issue 18).

The lab's small_buffers scenario capped one host's TCP buffers at 64 kB; the detectors named the
drop on its four site-to-site paths ``throughput_drop``. What the real runs do that the simulator
did not draw: Linux grows the congestion window iperf3 reports far past what the buffer lets the
flow put in flight, a window-bound run retransmits a segment now and then, a run's per-second
rate follows the RTT when other traffic moves it, and the tests themselves were paced (``-b``), so
the path's usual runs are as even as iperf3's pacer. The fixture is those runs, as published.
"""

from __future__ import annotations

import json
import pickle
from dataclasses import replace

import numpy as np
import pytest

from pathwatch.contract.records import Throughput
from pathwatch.models.config import DetectorConfig
from pathwatch.models.tcp import loss_cannot_pace
from pathwatch.models.engine import replay, replay_observations
from pathwatch.models.observe import epoch, observe

from .conftest import FIXTURES, parse_one

LEVELS = DetectorConfig(enabled=("levels",))
CAPPED_FROM, CAPPED_UNTIL = "2026-10-30T04:39:19Z", "2026-10-31T16:39:19Z"


def _records() -> list[dict]:
    lines = (FIXTURES / "lab" / "small_buffers_throughput.jsonl").read_text().splitlines()
    return [r.model_dump(mode="json") for line in lines for r in parse_one(json.loads(line))]


@pytest.fixture(scope="module")
def records() -> list[dict]:
    return _records()


def _capped(record: dict) -> bool:
    return record["succeeded"] and CAPPED_FROM <= record["time"] < CAPPED_UNTIL


def test_the_captured_runs_hold_what_the_old_rule_could_not_read(records):
    """The fixture is the hard case: capped runs report a window 3-6 times what they move per round
    trip, some retransmit, and every run asked iperf3 for 200 Mb/s."""
    capped = [r for r in records if _capped(r)]
    assert len(capped) >= 24 and {r["target_bitrate_bps"] for r in records if r["succeeded"]} == {2e8}
    fills = [r["throughput_bps"] * r["rtt_ms"] / 8000 / r["tcp_window_bytes"] for r in capped]
    assert max(fills) < 0.4
    assert any(r["retransmits"] for r in capped)
    assert all(r["throughput_bps"] < 0.35 * r["target_bitrate_bps"] for r in capped)


def test_a_host_whose_buffers_shrink_is_window_limited_on_every_path_it_sends_or_receives_on(records):
    found = replay(records, LEVELS).anomalies
    by_path = {(a.source.split(".")[0], a.destination.split(".")[0]): a for a in found}
    assert set(by_path) == {("a1", "b1"), ("a1", "b2"), ("b1", "a1"), ("b2", "a1")}, found
    assert {a.kind for a in found} == {"window_limited"}, [(a.kind, a.summary) for a in found]
    sent, received = by_path["a1", "b2"], by_path["b1", "a1"]
    assert 55_000 <= sent.evidence["window_bytes"] <= 66_000        # the 64 kB send buffer
    assert 30_000 <= received.evidence["window_bytes"] <= 45_000    # the receive window it allows
    assert all(epoch(CAPPED_FROM) <= a.start < epoch(CAPPED_UNTIL) for a in found)


def test_the_same_runs_losing_as_a_loss_limited_flow_would_are_a_drop_not_a_window(records):
    """Give each capped run half the retransmits a loss-based TCP needs to be held to its rate
    (Mathis): loss can pace them, so no window limit is named."""
    from pathwatch.models.context import ContextParams

    p = ContextParams()
    observations: dict[tuple[str, str], list] = {}
    for record in records:
        obs = observe(record)
        if _capped(record):
            packets = obs.bps * obs.duration_s / 8 / obs.mss_bytes
            pacing = (1.2247 * obs.mss_bytes * 8 / (obs.rtt_ms / 1000 * obs.bps)) ** 2
            obs = replace(obs, retransmits=max(2, round(0.5 * pacing * packets)))
            assert not loss_cannot_pace(obs, p.window_retrans_max, p.window_loss_share)
        observations.setdefault((record["source"], record["destination"]), []).append(obs)
    kinds = {a.kind for path, obs in observations.items() for a in replay_observations(*path, obs, config=LEVELS)}
    assert "window_limited" not in kinds and "throughput_drop" in kinds


def test_iperf3_and_pscheduler_say_what_rate_the_test_asked_for():
    paced = json.loads((FIXTURES / "lab" / "small_buffers_throughput.jsonl").read_text().splitlines()[0])
    unpaced = json.loads((FIXTURES / "iperf3" / "iperf3.12_tcp_sndbuf_64k_unpaced_bbr.json").read_text())
    assert parse_one(paced)[0].target_bitrate_bps == 2e8
    assert parse_one(unpaced, source="a1", destination="b2")[0].target_bitrate_bps is None   # -b absent: 0
    task = json.loads((FIXTURES / "pscheduler" / "throughput_run_tool_object_stall.json").read_text())
    assert parse_one(task)[0].target_bitrate_bps is None
    task["test"]["spec"]["bandwidth"] = 500_000_000
    assert parse_one(task)[0].target_bitrate_bps == 5e8
    assert isinstance(parse_one(task)[0], Throughput)


def test_records_of_older_contracts_still_validate_and_read_as_not_saying(records):
    v3_only = ("receive_window_bytes", "send_buffer_bytes")
    v2 = {key: value for key, value in records[0].items() if key not in v3_only} | {"schema_version": 2}
    v1 = {key: value for key, value in v2.items() if key != "target_bitrate_bps"} | {"schema_version": 1}
    assert Throughput.model_validate(v1).target_bitrate_bps is None
    assert Throughput.model_validate(v2).receive_window_bytes is None
    assert observe(v1).target_bps is None and records[0]["schema_version"] == 3
    assert observe(v2).receive_window_bytes is None and observe(v2).send_buffer_bytes is None
    assert observe(records[0]).receive_window_bytes == records[0]["receive_window_bytes"] > 0


def test_a_host_with_small_buffers_from_its_first_run_is_window_limited_with_no_before(records):
    """The same capped runs with nothing before them (an untuned host from its first test): no
    baseline to drop from, and the congestion window Linux reports is 3-6 times what they move.
    What they do fill every round trip is the window that holds them: the sender's 64 kB socket
    buffer on the paths out of a1 (iperf3 ``sndbuf_actual``, never grown), the 37 kB receive window
    a1 advertises on the paths into it (``max_snd_wnd``)."""
    capped = [r for r in records if _capped(r)]
    found = replay(capped, LEVELS).anomalies
    assert found and {a.kind for a in found} == {"window_limited"}, [(a.kind, a.summary) for a in found]
    by_window = {}
    for a in found:
        by_window.setdefault(a.evidence["window"], set()).add((a.source.split(".")[0], a.destination.split(".")[0]))
        times = sorted(epoch(r["time"]) for r in capped if (r["source"], r["destination"]) == (a.source, a.destination))
        assert a.start <= times[1], "from the path's first runs (the receiver's window shrank after the first)"
    assert by_window.keys() == {"send buffer", "receive window"}, by_window
    assert by_window["send buffer"] <= {("a1", "b1"), ("a1", "b2")}
    assert by_window["receive window"] <= {("b1", "a1"), ("b2", "a1")}
    free = [r for r in records if r["succeeded"] and not _capped(r)]
    assert not replay(free, LEVELS).anomalies      # the same paths' free runs fill no window they report


def test_iperf3_says_which_windows_held_the_flow():
    capped = json.loads(next(line for line in (FIXTURES / "lab" / "small_buffers_throughput.jsonl")
                             .read_text().splitlines() if '"sndbuf_actual":65536' in line))
    record = parse_one(capped)[0]
    assert (record.send_buffer_bytes, record.receive_window_bytes) == (65536, 322560)
    reverse = json.loads((FIXTURES / "iperf3" / "iperf3.12_tcp_reverse_2streams_loopback.json").read_text())
    assert parse_one(reverse, source="a", destination="b")[0].send_buffer_bytes is None   # the client received
    single = json.loads((FIXTURES / "iperf3" / "iperf3.12_tcp_single_loopback.json").read_text())
    assert parse_one(single, source="a", destination="b")[0].receive_window_bytes > 0


def test_a_send_buffer_that_linux_doubled_is_read_as_the_window_that_holds_the_flow():
    """iperf3 3.9 with ``-w 256K`` on a 10 Gb/s, 90 ms path: Linux reports ``sndbuf_actual``
    524288 (it doubles SO_SNDBUF) and the flow moves ~256 KiB a round trip, flat, without
    retransmits, every 6 hours from its first run: window_limited with no "before", naming the
    send buffer; the same runs moving 3 times as much (free of the buffer) are nothing."""
    from dataclasses import replace

    from pathwatch.models.engine import replay_observations
    from tests.detector_series import T0, run

    rng = np.random.default_rng(5)

    def runs(moved: float):
        out = []
        for i in range(8):
            bps = moved * 8 / 0.0902 * (1 + rng.normal(0, 0.01))
            out.append(replace(run(T0 + i * 6 * 3600.0, bps, rtt_ms=90.2, cv=0.01), rtt_min_ms=90.0, window_bytes=4_000_000,
                               send_buffer_bytes=524_288, mss_bytes=1448))
        return out

    found = replay_observations("a", "b", runs(262_144), config=LEVELS)
    assert [a.kind for a in found] == ["window_limited"] and found[0].evidence["window"] == "send buffer"
    assert found[0].start == T0
    assert replay_observations("a", "b", runs(3 * 262_144), config=LEVELS) == []
