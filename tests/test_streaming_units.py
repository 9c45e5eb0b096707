"""The pipeline's pure steps without Flink: normalise (records or one dead letter per message) and
the detect job's ordering (buffer + release at watermarks gives the offline replay's anomalies)."""

from __future__ import annotations

import base64
import json
import random

import orjson

from pathwatch.models.engine import replay
from pathwatch.models.monitor import PathMonitor
from pathwatch.contract.timefmt import from_epoch
from pathwatch.models.observe import epoch
from pathwatch.streaming.normalise import DEAD, RECORD, Origin, normalise
from pathwatch.streaming.ordering import DUPLICATE, LATE, PENDING, PathState, states_to_emit
from tests.test_models_engine import DAY, T0, _latency_record, _mesh_records, latency_times

ORIGIN = Origin("pathwatch.raw", 2, 41)
PING = ("PING b (10.0.0.2) 56(84) bytes of data.\n64 bytes from 10.0.0.2: icmp_seq=1 ttl=64 time=0.040 ms\n\n"
        "--- b ping statistics ---\n1 packets transmitted, 1 received, 0% packet loss, time 0ms\n"
        "rtt min/avg/max/mdev = 0.040/0.040/0.040/0.000 ms\n")


def _envelope(**fields) -> bytes:
    value = {"format": "ping", "source": "a", "destination": "b", "collected_at": "2024-01-01T00:00:00Z",
             "payload": PING}
    value.update(fields)
    return orjson.dumps({key: item for key, item in value.items() if item is not None})


def test_a_good_envelope_gives_records_keyed_by_path_with_the_record_time():
    out = normalise(_envelope(), ORIGIN, 0)
    assert [o.target for o in out] == [RECORD]
    assert out[0].key == "a>b" and out[0].value["kind"] == "latency"
    assert out[0].time_ms == int(epoch(out[0].value["time"]) * 1000)


def test_each_bad_message_gives_exactly_one_dead_letter_naming_field_and_origin():
    cases = {
        b'{"format": "ping", "payload": ': None,                      # malformed JSON
        _envelope(format="netflow"): "format",                        # unknown format
        _envelope(collected_at=None): "time",                         # no time anywhere
        _envelope(payload=12): "payload",                             # not tool output
    }
    for body, field in cases.items():
        out = normalise(body, ORIGIN, 1_700_000_000_000)
        assert [o.target for o in out] == [DEAD], body
        letter = out[0].value
        assert letter["field"] == field and letter["reason"], body
        assert (letter["topic"], letter["kafka_partition"], letter["kafka_offset"]) == ("pathwatch.raw", 2, 41)
        assert letter["input"].encode() == body and letter["stage"] == "normalise"


def test_an_integer_beyond_64_bits_is_a_dead_letter_not_a_record_no_consumer_can_read():
    from pathwatch.ingest.examples import example_path
    from pathwatch.ingest.registry import get

    iperf = json.loads(example_path(get("iperf3")).read_bytes().splitlines()[0])  # holds big ints orjson refuses
    good = normalise(json.dumps(iperf).encode(), ORIGIN, 0)
    assert [o.target for o in good] == [RECORD] and orjson.loads(good[0].text) == good[0].value
    iperf["payload"]["start"]["tcp_mss_default"] = 10**20
    out = normalise(json.dumps(iperf).encode(), ORIGIN, 0)
    assert [o.target for o in out] == [DEAD]
    assert out[0].value["field"] == "mss_bytes" and "64 bits" in out[0].value["reason"]
    assert orjson.loads(out[0].text) == out[0].value


def test_dead_letters_keep_bytes_that_are_not_text_and_have_ids_unique_per_message():
    body = b"\xff\xfe\x00garbage"
    first = normalise(body, ORIGIN, 0)[0].value
    assert first["input_encoding"] == "base64" and base64.b64decode(first["input"]) == body
    again = normalise(body, ORIGIN, 5)[0].value
    elsewhere = normalise(body, Origin("pathwatch.raw", 2, 42), 0)[0].value
    assert first["id"] == again["id"] != elsewhere["id"]


def test_an_array_with_one_bad_item_is_dead_lettered_whole():
    body = b"[" + _envelope() + b"," + _envelope(format="netflow") + b"]"
    out = normalise(body, ORIGIN, 0)
    assert [o.target for o in out] == [DEAD] and out[0].value["reason"].startswith("item 2: ")


def _stream(records: list[dict], delay: float, seed: int) -> list:
    """Records arriving disordered by less than ``delay``, released at random watermarks."""
    rng = random.Random(seed)
    arrival = sorted(records, key=lambda r: epoch(r["time"]) + rng.uniform(0, delay * 0.9))
    states: dict[tuple, PathState] = {}
    emitted = []
    newest = None
    for record in arrival:
        key = (record["source"], record["destination"])
        state = states.setdefault(key, PathState(PathMonitor(*key)))
        assert state.accept(record) == PENDING
        newest = max(newest or 0.0, epoch(record["time"]))
        if rng.random() < 0.2:  # a watermark passes: every path releases up to it
            for path_state in states.values():
                emitted += path_state.release(newest - delay)
    return emitted, states, newest


def test_release_at_watermarks_equals_the_offline_replay():
    records = _mesh_records()
    delay = 900.0
    emitted, states, newest = _stream(records, delay, seed=7)
    for state in states.values():
        emitted += state.release(newest - delay)
    final = {a.id: (a.kind, a.start, a.end) for a in states_to_emit(emitted)}  # the last state wins
    offline = replay(records, until=newest - delay)
    assert final, "the mesh should give anomalies"
    assert final == {a.id: (a.kind, a.start, a.end) for a in offline.anomalies}


def test_one_release_over_the_whole_history_still_emits_each_episodes_opening():
    """A replay moves the watermark past whole episodes: their open state must still be emitted
    (before their last), or a ticket system sees only closed anomalies and opens nothing."""
    rng = random.Random(3)  # one day of +7 ms delay on path e, then back: an episode that ends
    records = [_latency_record("e", t, 20 + rng.gauss(0, 0.1) + (7 if T0 + 2 * DAY < t < T0 + 3 * DAY else 0), 0)
               for t in latency_times(5)] + _mesh_records()
    states: dict[tuple, PathState] = {}
    for record in sorted(records, key=lambda r: epoch(r["time"])):
        key = (record["source"], record["destination"])
        states.setdefault(key, PathState(PathMonitor(*key))).accept(record)
    until = max(epoch(r["time"]) for r in records)
    emitted = [a for state in states.values() for a in states_to_emit(state.release(until))]
    closed = {a.id for a in emitted if a.end is not None}
    assert closed, "the mesh should have episodes that end"
    first_seen = {}
    for anomaly in emitted:
        first_seen.setdefault(anomaly.id, anomaly)
    assert all(first_seen[aid].end is None for aid in closed)
    assert {a.id: a.end for a in emitted} == {a.id: a.end for a in replay(records, until=until).anomalies}


def test_duplicates_are_analysed_once_and_late_records_are_refused():
    records = [r for r in _mesh_records() if r["source"] == "a"][:50]
    state = PathState(PathMonitor("a", "z"))
    assert state.accept(records[10]) == PENDING
    assert state.accept(records[10]) == DUPLICATE
    state.release(epoch(records[10]["time"]))
    assert state.accept(records[10]) == DUPLICATE
    assert state.accept(records[3]) == LATE
    assert state.accept(records[11]) == PENDING


def test_a_pickled_path_state_leaves_its_buffer_to_the_list_state():
    import pickle

    records = [r for r in _mesh_records() if r["source"] == "a"][:20]
    state = PathState(PathMonitor("a", "z"))
    for record in records[:10]:
        state.accept(record)
    state.release(epoch(records[5]["time"]))
    for record in records[10:]:
        state.accept(record)
    copy = pickle.loads(pickle.dumps(state))
    assert copy.pending == [] and copy.pending_ids == set()
    assert copy.released_until == state.released_until and copy.recent_ids == state.recent_ids
    copy.restore_pending(pickle.loads(pickle.dumps(state.pending)))
    assert copy.due(epoch(records[-1]["time"])) and not copy.due(epoch(records[5]["time"]))
    assert copy.release(epoch(records[-1]["time"])) == state.release(epoch(records[-1]["time"]))


def test_the_earliest_buffered_time_is_kept_as_records_arrive_and_leave():
    """The detect job asks for the next wake-up after every record: kept, not scanned for."""
    import pickle

    records = [r for r in _mesh_records() if r["source"] == "a"][:30]
    disordered = records[10:20] + records[:10] + records[20:]
    state = PathState(PathMonitor("a", "z"))
    assert state.earliest() is None
    for n, record in enumerate(disordered, 1):
        state.accept(record)
        assert state.earliest() == min(entry[0][0] for entry in state.pending), n
    state.release(epoch(records[12]["time"]))
    assert state.earliest() == min(entry[0][0] for entry in state.pending)
    copy = pickle.loads(pickle.dumps(state))
    assert copy.earliest() is None
    copy.restore_pending(list(state.pending))
    assert copy.earliest() == state.earliest() and copy.next_wakeup() == state.next_wakeup()
    state.release(epoch(records[-1]["time"]))
    assert state.pending == [] and state.earliest() is None


def _arrivals(seed: int, hosts: int, days: int) -> list[tuple[float, dict]]:
    """A simulated mesh's records as they arrive: (collected time, record), in collected order
    (a 10-minute latency window arrives 10 minutes after its record time, a trace seconds after)."""
    from pathwatch.sim.config import SimConfig
    from pathwatch.sim.generate import envelope_lines, plan

    out = []
    for line in envelope_lines(plan(SimConfig(seed=seed, hosts=hosts, days=days))):
        for item in normalise(line.data, ORIGIN, 0):
            if item.target == RECORD:
                out.append((float(line.collected_at), item.value))
    return out


def _release_per_path(arrivals: list[tuple[float, dict]], delay: float) -> tuple[list, float, dict[str, float]]:
    """Records fed as they arrive, as the detect job feeds them: every one is buffered (none late or
    repeated), its path released once ready, and every path the mesh watermark passed (the job's
    timers); what remains is released up to the final watermark. Returns the anomaly states
    emitted, that final watermark, and the arrival time at which each record was judged."""
    states: dict[tuple, PathState] = {}
    emitted, judged_at = [], {}
    newest = None
    for arrived, record in arrivals:
        key = (record["source"], record["destination"])
        state = states.setdefault(key, PathState(PathMonitor(*key)))
        assert state.accept(record) == PENDING, record["id"]
        newest = epoch(record["time"]) if newest is None else max(newest, epoch(record["time"]))
        for other in states.values():     # this path when it is ready; any path the watermark passed (timers)
            until = max(newest - delay, other.ready_until(delay)) if other is state else newest - delay
            if other.due(until):
                waiting = {entry[0][2] for entry in other.pending}
                emitted += other.release(until)
                judged_at.update((rid, arrived) for rid in waiting - {entry[0][2] for entry in other.pending})
    for state in states.values():
        emitted += state.release(newest - delay)
    return emitted, newest - delay, judged_at


def test_per_path_release_judges_records_as_soon_as_their_path_is_ready_and_equals_the_replay():
    """Released per path at max(mesh watermark, the path's own ready time) after every record, as
    they arrive: nothing is late, the anomalies equal the offline replay's, a latency window is
    judged when it arrives, and every record sooner than the mesh watermark alone would judge it."""
    import numpy as np

    delay = 900.0
    arrivals = _arrivals(seed=5101, hosts=4, days=3)
    emitted, until, judged_at = _release_per_path(arrivals, delay)
    final = {a.id: (a.kind, a.start, a.end) for a in states_to_emit(emitted)}
    offline = replay([record for _, record in arrivals], until=until)
    assert final and final == {a.id: (a.kind, a.start, a.end) for a in offline.anomalies}
    # When the mesh watermark alone would judge each record: the first arrival that moves the
    # newest record time past the record's time plus the delay.
    arrived = np.array([at for at, _ in arrivals])
    mesh_front = np.maximum.accumulate([epoch(record["time"]) for _, record in arrivals]) - delay
    warm = arrivals[0][0] + 2 * delay      # each path waits the whole delay while it warms up
    waits: dict[str, list] = {"latency": [], "trace": [], "throughput": []}
    mesh_waits: dict[str, list] = {"latency": [], "trace": [], "throughput": []}
    for at, record in arrivals:
        if at > warm and record["id"] in judged_at:
            index = int(np.searchsorted(mesh_front, epoch(record["time"])))
            if index < len(arrived):
                waits[record["kind"]].append(judged_at[record["id"]] - at)
                mesh_waits[record["kind"]].append(arrived[index] - at)
    # Once warm, a latency window is judged when it arrives; a trace or throughput test waits for
    # the latency window it started in (10 minutes here), never longer than the mesh watermark
    # would make it wait and, typically, less than half as long.
    assert np.percentile(waits["latency"], 99) == 0.0, np.percentile(waits["latency"], 99)
    for kind in waits:
        own, mesh = np.array(waits[kind]), np.array(mesh_waits[kind])
        assert (own <= mesh).all(), (kind, (own - mesh).max())
        assert np.median(own) < np.median(mesh) / 2, (kind, np.median(own), np.median(mesh))


def test_mildly_disordered_arrivals_are_reordered_not_refused():
    """Messages shuffled within 4-minute batches (as an archiver's batches come, less than the
    slack apart): every record is analysed, in order, and the anomalies equal the offline replay's."""
    delay = 900.0
    rng = random.Random(515)
    arrivals = sorted(_arrivals(seed=515, hosts=5, days=3), key=lambda item: (item[0] // 240, rng.random()))
    emitted, until, _ = _release_per_path(arrivals, delay)
    offline = replay([record for _, record in arrivals], until=until)
    assert {a.id: (a.kind, a.end) for a in states_to_emit(emitted)} == {a.id: (a.kind, a.end) for a in offline.anomalies}


def test_a_stream_that_stops_holds_its_path_back_no_more_than_the_delay():
    state = PathState(PathMonitor("a", "b"))
    base = 1704067200.0
    for i in range(20):     # latency every 10 minutes, a trace stream that stops after two hours
        t = base + 600 * i
        assert state.accept({"kind": "latency", "tool": "owamp", "id": f"l{i}", "time": from_epoch(t),
                             "one_way": True, "packets_sent": 600, "packets_lost": 0, "delay_min_ms": 10.0}) == PENDING
        if i < 12:
            assert state.accept({"kind": "trace", "tool": "traceroute", "id": f"t{i}", "time": from_epoch(t + 1),
                                 "reached": True, "hops": []}) == PENDING
    newest = base + 600 * 19
    assert state.ready_until(900.0) == newest - 900.0
    assert state.ready_until(2 * 3600.0) == base + 600 * 11 + 1 + 570   # the stopped stream: its last + 0.95 of its interval


def test_a_collection_clock_years_ahead_is_not_trusted():
    """One trace collected 'in 2099' (a collector's clock) must not stop the latency stream from
    holding its path: its next windows, in order as ever, are analysed, not refused as late."""
    state = PathState(PathMonitor("a", "b"))
    base = 1704067200.0

    def latency(i):
        t = base + 60 * i
        return {"kind": "latency", "tool": "owamp", "id": f"l{i}", "time": from_epoch(t), "collected_at": from_epoch(t + 62),
                "one_way": True, "packets_sent": 600, "packets_lost": 0, "delay_min_ms": 10.0}

    def trace(i, collected=None):
        t = base + 300 * i + 5
        return {"kind": "trace", "tool": "traceroute", "id": f"t{i}", "time": from_epoch(t),
                "collected_at": collected or from_epoch(t + 10), "reached": True, "hops": []}

    arrivals = [latency(i) for i in range(60)] + [trace(i) for i in range(12)]
    arrivals.sort(key=lambda r: r["collected_at"])
    arrivals.append(trace(12, collected="2099-01-01T00:00:00Z"))
    later = sorted([latency(i) for i in range(60, 80)] + [trace(i) for i in range(13, 16)],
                   key=lambda r: r["collected_at"])
    for record in arrivals + later:
        assert state.accept(record) == PENDING, record["id"]
        state.release(state.ready_until(900.0))


def test_a_record_stamped_ahead_of_the_pipelines_clock_is_a_dead_letter_not_a_stalled_partition():
    """Kafka refuses messages stamped far ahead (1 h by default): such a record would fail the
    normalise job at every restart. It is refused with its reason instead; a small lead passes."""
    import orjson

    from pathwatch.streaming.normalise import DEAD, RECORD, Origin, normalise

    now_ms = 1_764_000_000_000

    def body(ahead_s: float) -> bytes:
        from pathwatch.contract.timefmt import from_epoch

        return orjson.dumps({"format": "ping", "source": "a", "destination": "b",
                             "collected_at": from_epoch(int(now_ms / 1000 + ahead_s)), "payload": "ping: unknown host b\n"})

    (ahead,) = normalise(body(7200), Origin("raw", 0, 5), now_ms, 600_000)
    assert ahead.target == DEAD and ahead.value["field"] == "time"
    assert "2.0 h ahead of the pipeline's clock" in ahead.value["reason"] and "clock is wrong" in ahead.value["reason"]
    assert [o.target for o in normalise(body(60), Origin("raw", 0, 6), now_ms, 600_000)] == [RECORD]
    assert [o.target for o in normalise(body(7200), Origin("raw", 0, 7), now_ms)] == [RECORD]  # no limit given


def test_a_restored_monitor_made_by_other_detectors_or_config_is_rebuilt_and_its_open_anomalies_closed():
    """What the detect job does with a path's saved state: kept as it is when these detectors
    with this configuration made it; else rebuilt from the configuration (the buffer bookkeeping
    kept), what the old monitor held open closed; an unreadable state starts afresh."""
    import pickle

    from pathwatch.models.config import DetectorConfig
    from pathwatch.models.detectors.latency import LatencyParams
    from pathwatch.streaming.ordering import restore_path_state

    config = DetectorConfig()
    state = PathState(PathMonitor("a", "z", config))
    start = 1_767_571_200.0
    for i in range(60):          # a one-way delay stepping up 20 ms halfway: a latency_shift held open
        state.accept({"kind": "latency", "id": f"r{i}", "source": "a", "destination": "z", "time": from_epoch(start + 600 * i),
                      "one_way": True, "packets_sent": 600, "packets_lost": 0,
                      "delay_min_ms": 10.0 + (20.0 if i >= 30 else 0.0) + 0.01 * (i % 3)})
    state.release(start + 600 * 59)
    assert [a.kind for a in state.monitor.open_anomalies()] == ["latency_shift"]
    saved = pickle.dumps(state)

    same, retired, unreadable = restore_path_state(saved, ("a", "z"), DetectorConfig.from_mapping({}))
    assert retired == [] and unreadable is None and same.monitor.open_anomalies()

    other = DetectorConfig.from_mapping({"latency": {"runs": 4}})
    rebuilt, retired, unreadable = restore_path_state(saved, ("a", "z"), other)
    assert unreadable is None and rebuilt.monitor.made_with(other) and rebuilt.monitor.open_anomalies() == []
    assert [(a.kind, a.end) for a in retired] == [("latency_shift", start + 600 * 59)]
    assert "rebuilt" in retired[0].evidence["ended"] and rebuilt.released_until == state.released_until
    assert rebuilt.monitor.detectors[[d.name for d in rebuilt.monitor.detectors].index("latency")].p == LatencyParams(runs=4)

    fresh, retired, unreadable = restore_path_state(b"not a pickle", ("a", "z"), config)
    assert retired == [] and "UnpicklingError" in unreadable and fresh.monitor.source == "a" and fresh.released_until is None
