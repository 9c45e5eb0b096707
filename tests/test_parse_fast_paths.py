"""The parse path's one way of reading each thing gives exactly what a plain reference gives.

Each test compares with an oracle on many random inputs, including the edge cases where a plain
value test must hand a value to the field helpers: a library (uuid, strftime, isodate,
statistics, pydantic), a hop line built from known parts, or, kept here and only here, the
straightforward version of the code (field helper by field helper) as it was before its speed-up.
"""

from __future__ import annotations

import random
import statistics
import uuid
from datetime import datetime, timedelta, timezone

import isodate
import pytest

from pathwatch.contract import timefmt
from pathwatch.contract.ids import PATHWATCH_NAMESPACE, uuid5_text
from pathwatch.ingest.errors import ParseError
from pathwatch.ingest.formats import _stats
from pathwatch.ingest.formats.pscheduler import _duration_ms


def _outcome(function, *args):
    try:
        return repr(function(*args))
    except Exception as error:  # the same exception type and text count as the same outcome
        return f"{type(error).__name__}: {error}"


def test_uuid5_text_is_uuid5():
    rng = random.Random(1)
    alphabet = "abc|:-. é\u00ff\u4e00\U0001f600 0123456789"
    for _ in range(5_000):
        name = "".join(rng.choice(alphabet) for _ in range(rng.randrange(40)))
        assert uuid5_text(name) == str(uuid.uuid5(PATHWATCH_NAMESPACE, name))
    with pytest.raises(UnicodeEncodeError):
        uuid5_text("lone \ud800 surrogate")


def _format_utc_strftime(moment: datetime) -> str:
    moment = moment.astimezone(timezone.utc)
    text = moment.strftime("%Y-%m-%dT%H:%M:%S")
    if moment.microsecond:
        text += f".{moment.microsecond:06d}"
    return text + "Z"


def test_format_utc_is_the_strftime_rendering():
    rng = random.Random(2)
    for _ in range(20_000):
        moment = datetime(1970, 1, 1, tzinfo=timezone.utc) + timedelta(
            microseconds=rng.randrange(-62_135_596_800 * 10**6, 253_402_300_799 * 10**6)
        )
        if rng.random() < 0.3:
            moment = moment.replace(microsecond=0)
        if rng.random() < 0.3:
            try:
                moment = moment.astimezone(timezone(timedelta(minutes=rng.randrange(-1439, 1440))))
            except OverflowError:
                pass
        assert timefmt.format_utc(moment) == _format_utc_strftime(moment)


def _duration_ms_isodate(value) -> str:
    try:
        return repr(isodate.parse_duration(value).total_seconds() * 1000.0)
    except (isodate.ISO8601Error, ValueError, AttributeError, TypeError):
        return "rejected"


def test_pscheduler_durations_read_as_isodate_reads_them():
    rng = random.Random(3)
    for _ in range(20_000):
        whole = str(rng.randrange(10 ** rng.randrange(1, 8))).rjust(rng.randrange(1, 8), "0")
        fraction = "".join(rng.choice("0123456789") for _ in range(rng.randrange(0, 8)))
        value = rng.choice([f"PT{whole}.{fraction}S", f"PT{whole}S", f"PT{whole},{fraction}S", f"-PT{whole}S",
                            f"PT1M{whole}.{fraction}S", f"PT{whole}.S", "PT\u0663S"])  # fmt: skip
        try:
            ours = repr(_duration_ms(value, "rtt"))
        except ParseError:
            ours = "rejected"
        assert ours == _duration_ms_isodate(value), value


def _histogram_stats_loop(histogram: dict[float, int]) -> dict[str, float | None]:
    buckets = sorted((value, count) for value, count in histogram.items() if count > 0)
    total = sum(count for _, count in buckets)
    if not total:
        return _stats.delay_stats([])

    def rank(position: int) -> float:
        seen = 0
        for value, count in buckets:
            seen += count
            if seen >= position:
                return value
        return buckets[-1][0]

    median = rank((total + 1) // 2) if total % 2 else (rank(total // 2) + rank(total // 2 + 1)) / 2
    p95 = rank(max(1, -(-95 * total // 100)))
    return {
        "delay_min_ms": buckets[0][0],
        "delay_median_ms": median,
        "delay_mean_ms": sum(value * count for value, count in buckets) / total,
        "delay_p95_ms": p95,
        "delay_max_ms": buckets[-1][0],
        "jitter_ms": max(0.0, p95 - median),
    }


def test_histogram_stats_equal_the_rank_loop():
    rng = random.Random(4)
    for _ in range(5_000):
        histogram = {}
        for _ in range(rng.randrange(0, 40)):
            bucket = rng.choice([round(rng.uniform(-5, 100), rng.randrange(0, 4)), float(rng.randrange(50)), 1e-9 * rng.randrange(100)])
            histogram[bucket] = rng.choice([0, 1, 2, 3, rng.randrange(10_000)])
        assert repr(_stats.histogram_stats(histogram)) == repr(_histogram_stats_loop(histogram))


def test_traceroute_usual_hop_lines_give_the_hop_they_print():
    """The usual hop line (one address, bare or ``name (ip)``, each probe an RTT or a star) built
    from known parts: the hop is that address, its name, and the median of its RTTs."""
    from pathwatch.ingest.formats.traceroute import _hop

    rng = random.Random(5)
    for _ in range(5_000):
        ip = rng.choice(["10.0.0.1", "192.0.2.254", "2001:db8::1", "::1"])
        name = rng.choice([None, "r1.example.net", "a-b_c.example", ip])
        rtts = [rng.choice([round(rng.uniform(0, 300), rng.randrange(0, 4)), float(rng.randrange(100))])
                for _ in range(rng.randrange(0, 4))]
        probes = [f"{rtt} ms" for rtt in rtts] + ["*"] * rng.randrange(0, 3)
        rng.shuffle(probes)
        rest = "* " * rng.randrange(0, 2) + (f"{name} ({ip})" if name else ip) + "".join("  " + p for p in probes)
        hostname = name if name and name != ip else None
        assert _hop(3, rest, "line 2", rest) == {"ttl": 3, "ip": ip, "hostname": hostname, "asn": None,
                                                 "rtt_ms": round(statistics.median(rtts), 6) if rtts else None,
                                                 "other_ips": []}, rest
        assert _hop(3, " ".join(["*"] * len(probes) or ["*"]), "line 2", rest) == {"ttl": 3, "ip": None}


def test_plainly_valid_envelopes_open_as_pydantic_opens_them():
    from pathwatch.contract.envelope import RawEnvelope
    from pathwatch.ingest import envelope

    rng = random.Random(7)
    texts = [None, "", "a", "ps-a.example.edu", "é", "\ud800", 5, True, [], {}, "2024-01-01T00:00:00Z", "2024-01-01"]
    for _ in range(5_000):
        value = {"format": rng.choice(["ping", "iperf3", "nope", "pïng", 3, None]), "payload": rng.choice(["PING x", {}, [], 1, None])}
        for key in ("source", "destination", "collected_at", "meta", "extra"):
            if rng.random() < 0.5:
                value[key] = rng.choice(texts)
        fast = _outcome(envelope.open_envelope, value)
        original = envelope._plainly_valid
        envelope._plainly_valid = lambda value: False  # every envelope through RawEnvelope
        try:
            assert fast == _outcome(envelope.open_envelope, value), value
        finally:
            envelope._plainly_valid = original
        if envelope._plainly_valid(value):
            assert RawEnvelope.model_validate(value).model_dump(exclude_unset=True) == value


_ODD_VALUES = [None, True, False, 0, -1, 3, 2.0, 2.5, -0.5, float("nan"), float("inf"), 2**70, "1", "", [], {}]


def _mutations(document: dict, rng: random.Random, count: int):
    """Copies of a nested JSON object with one to three values (at any depth) replaced or removed."""
    import copy

    def places(value, path=()):
        if isinstance(value, dict):
            for key, child in value.items():
                yield path + (key,)
                yield from places(child, path + (key,))
        elif isinstance(value, list):
            for index, child in enumerate(value[:3]):
                yield path + (index,)
                yield from places(child, path + (index,))

    spots = list(places(document))
    for _ in range(count):
        mutated = copy.deepcopy(document)
        for _ in range(rng.randrange(0, 4)):
            path = rng.choice(spots)
            parent = mutated
            try:
                for step in path[:-1]:
                    parent = parent[step]
                if rng.random() < 0.2 and isinstance(parent, dict):
                    parent.pop(path[-1], None)
                else:
                    parent[path[-1]] = rng.choice(_ODD_VALUES)
            except (KeyError, IndexError, TypeError):
                pass
        yield mutated


def _iperf3_interval_checked(entry, where: str) -> dict:
    """iperf3._interval as it was before its fast path, field helper by field helper."""
    from pathwatch.ingest.fields import integer, join, need, number, obj, opt

    entry = obj(entry, where)
    total = need(entry, "sum", dict, where)
    streams = opt(entry, "streams", list, where, [])
    cwnds, rtts = [], []
    for index, stream in enumerate(streams):
        stream_where = join(join(where, "streams"), index)
        stream = obj(stream, stream_where)
        cwnd = integer(stream, "snd_cwnd", stream_where, required=False)
        rtt = number(stream, "rtt", stream_where, required=False, minimum=0)
        if cwnd:
            cwnds.append(cwnd)
        if rtt:
            rtts.append(rtt / 1000.0)
    sum_where = join(where, "sum")
    return {
        "start_s": number(total, "start", sum_where, minimum=0),
        "end_s": number(total, "end", sum_where, minimum=0),
        "throughput_bps": number(total, "bits_per_second", sum_where, minimum=0),
        "retransmits": integer(total, "retransmits", sum_where, required=False),
        "cwnd_bytes": sum(cwnds) if cwnds else None,
        "rtt_ms": sum(rtts) / len(rtts) if rtts else None,
        "omitted": bool(opt(total, "omitted", bool, sum_where, False)),
    }  # fmt: skip


def _pscheduler_interval_checked(entry, where: str) -> dict:
    """pscheduler._interval as it was before its fast path, field helper by field helper."""
    from pathwatch.ingest.fields import integer, need, number, obj, opt

    summary = need(obj(entry, where), "summary", dict, where)
    s_where = where + ".summary"
    cwnd = integer(summary, "tcp-window-size", s_where, required=False)
    i_rtt = number(summary, "rtt", s_where, required=False, minimum=0)
    return {
        "start_s": number(summary, "start", s_where, minimum=0),
        "end_s": number(summary, "end", s_where, minimum=0),
        "throughput_bps": number(summary, "throughput-bits", s_where, minimum=0),
        "retransmits": integer(summary, "retransmits", s_where, required=False),
        "cwnd_bytes": cwnd,
        "rtt_ms": i_rtt / 1000.0 if i_rtt else None,
        "omitted": bool(opt(summary, "omitted", bool, s_where, False)),
    }  # fmt: skip


def test_throughput_intervals_read_as_the_field_helpers_read_them():
    from pathwatch.ingest.formats import iperf3, pscheduler

    rng = random.Random(8)
    iperf3_entry = {"streams": [{"socket": 5, "start": 0, "end": 1.0, "bits_per_second": 9.5e9, "retransmits": 0, "snd_cwnd": 3145728,
                                 "rtt": 85411, "omitted": False}, {"snd_cwnd": 100, "rtt": 0}],
                    "sum": {"start": 0, "end": 1.000094, "bits_per_second": 9.5e9, "retransmits": 2, "omitted": False}}  # fmt: skip
    pscheduler_entry = {"streams": [], "summary": {"start": 0.0, "end": 1.000094, "throughput-bits": 2309334074.5969877,
                                                   "retransmits": 0, "tcp-window-size": 30199500, "rtt": 85411, "omitted": False}}  # fmt: skip
    for module, entry, reference in ((iperf3, iperf3_entry, _iperf3_interval_checked),
                                     (pscheduler, pscheduler_entry, _pscheduler_interval_checked)):
        for mutated in _mutations(entry, rng, 4_000):
            assert _outcome(module._interval, mutated, "intervals[3]") == _outcome(reference, mutated, "intervals[3]"), mutated


def _pscheduler_hops_checked(result: dict, where: str) -> list:
    """pscheduler._hops as it was before its fast path, field helper by field helper."""
    from pathwatch.ingest.fields import check, integer, need, obj, opt
    from pathwatch.ingest.formats.pscheduler import _duration_ms

    paths = need(result, "paths", list, where)
    if not paths:
        return []
    hops = []
    for index, hop in enumerate(check(paths[0], list, where + ".paths[0]")):
        at = f"{where}.paths[0][{index}]"
        hop = obj(hop, at)
        as_info = opt(hop, "as", dict, at, {})
        rtt = hop.get("rtt")
        hops.append({
            "ttl": index + 1, "ip": opt(hop, "ip", str, at), "hostname": opt(hop, "hostname", str, at),
            "rtt_ms": _duration_ms(rtt, at + ".rtt") if rtt is not None else None,
            "asn": integer(as_info, "number", at + ".as", required=False), "as_owner": opt(as_info, "owner", str, at + ".as"),
            "mtu": integer(hop, "mtu", at, required=False), "error": opt(hop, "error", str, at),
        })  # fmt: skip
    return hops


def test_pscheduler_hops_read_as_the_field_helpers_read_them():
    from pathwatch.ingest.formats.pscheduler import _hops

    rng = random.Random(9)
    result = {"succeeded": True, "paths": [[
        {"ip": "146.137.1.38", "rtt": "PT0.000346S", "as": {"number": 683, "owner": "ANL-AS"}},
        {"ip": "134.55.1.38", "hostname": "et-5.example.", "rtt": "PT0.000643S", "mtu": 9000, "as": {"number": 293}},
        {}, {"ip": "10.0.0.1", "error": "!H", "rtt": "PT1S"},
    ]]}  # fmt: skip
    for mutated in _mutations(result, rng, 6_000):
        assert _outcome(_hops, mutated, "result") == _outcome(_pscheduler_hops_checked, mutated, "result")


def _pscheduler_histograms_checked(result: dict, where: str):
    """The histogram loops of pscheduler._latency as they were before their fast paths."""
    from pathwatch.ingest.fields import integer, join, opt

    histogram = {}
    for bucket, count in opt(result, "histogram-latency", dict, where, {}).items():
        try:
            value = float(bucket)
        except ValueError:
            raise ParseError(join(where + ".histogram-latency", bucket), "bucket is not a number of milliseconds") from None
        histogram[value] = integer({bucket: count}, bucket, where + ".histogram-latency")
    ttls = []
    for ttl, count in opt(result, "histogram-ttl", dict, where, {}).items():
        if not ttl.isdigit():
            raise ParseError(join(where + ".histogram-ttl", ttl), "TTL is not a whole number")
        if integer({ttl: count}, ttl, where + ".histogram-ttl"):
            ttls.append(int(ttl))
    return histogram, ttls


def test_pscheduler_histograms_read_as_the_checked_loops_read_them():
    from pathwatch.ingest.fields import opt
    from pathwatch.ingest.formats.pscheduler import _histogram, _ttls

    def ours(result, where):
        histogram = _histogram(opt(result, "histogram-latency", dict, where, {}), where + ".histogram-latency")
        return histogram, _ttls(opt(result, "histogram-ttl", dict, where, {}), where + ".histogram-ttl")

    rng = random.Random(10)
    keys = ["44.70", "44.7", "45.00", "nan", "1e3", " 2 ", "x", "", "-1", "٣"]
    for _ in range(6_000):
        result = {
            "histogram-latency": {rng.choice(keys): rng.choice(_ODD_VALUES + [1, 5, 200]) for _ in range(rng.randrange(0, 6))},
            "histogram-ttl": {rng.choice(["246", "0", "x", "2.5", "٣", ""]): rng.choice([0, 6000, -1, 1.0, None]) for _ in range(rng.randrange(0, 3))},
        }
        if rng.random() < 0.3:
            result["histogram-latency"] = {"44.70": 2509, "44.80": 2105, "45.10": 0}
            result["histogram-ttl"] = {"246": 6000}
        assert _outcome(ours, result, "result") == _outcome(_pscheduler_histograms_checked, result, "result"), result


def _scamper_reply_checked(entry, where: str) -> dict:
    """scamper._reply as it was before its fast path, field helper by field helper."""
    from pathwatch.ingest.build import ip_version
    from pathwatch.ingest.fields import integer, need, number, obj, opt
    from pathwatch.ingest.formats.scamper import _reply_fields

    entry = obj(entry, where)
    address = need(entry, "addr", str, where)
    version = ip_version(address)
    if version is None:
        raise ParseError(f"{where}.addr", f"{address!r} is not an IP address")
    ttl = integer(entry, "probe_ttl", where, minimum=1)
    if ttl > 255:
        raise ParseError(f"{where}.probe_ttl", f"must be <= 255, got {ttl}")
    rtt = number(entry, "rtt", where, required=False, minimum=0)
    icmp_type = integer(entry, "icmp_type", where, required=False)
    icmp_code = integer(entry, "icmp_code", where, required=icmp_type is not None)
    nhmtu = integer(entry, "icmp_nhmtu", where, required=False) or integer(entry, "icmp_nhmtu:", where, required=False)
    return _reply_fields(address, version, ttl, rtt, icmp_type, icmp_code, nhmtu, opt(entry, "name", str, where))


def test_scamper_replies_read_as_the_field_helpers_read_them():
    from pathwatch.ingest.formats.scamper import _reply

    rng = random.Random(11)
    replies = [
        {"addr": "10.77.1.1", "probe_ttl": 1, "probe_id": 1, "rtt": 0.061, "icmp_type": 11, "icmp_code": 0, "name": "r1.lab"},
        {"addr": "10.77.6.2", "probe_ttl": 4, "rtt": 0.05, "icmp_type": 3, "icmp_code": 4, "icmp_nhmtu:": 1500},
        {"addr": "2001:db8::1", "probe_ttl": 3, "rtt": 4294967.2, "icmp_type": 1, "icmp_code": 3, "icmp_nhmtu": 0},
        {"addr": "2001:db8::2", "probe_ttl": 255, "icmp_type": 2, "icmp_code": 0, "icmp_nhmtu": 1280},
    ]
    for reply in replies:
        for mutated in _mutations(reply, rng, 2_000):
            assert _outcome(_reply, mutated, "hops[2]") == _outcome(_scamper_reply_checked, mutated, "hops[2]"), mutated


def _atlas_hop_checked(entry, where):
    """atlas._hop as it was before its fast path."""
    from pathwatch.ingest.fields import integer, need, number, obj

    entry = obj(entry, where)
    ttl = integer(entry, "hop", where, minimum=1)
    if ttl > 255:
        raise ParseError(where + ".hop", f"must be <= 255, got {ttl}")
    hop = {"ttl": ttl, "ip": None}
    if "error" in entry:
        hop["error"] = str(entry["error"])
        return hop
    rtts, order = {}, []
    for index, reply in enumerate(need(entry, "result", list, where)):
        if reply.__class__ is not dict:
            obj(reply, f"{where}.result[{index}]")
        if "from" not in reply:
            continue
        at = f"{where}.result[{index}]"
        address = need(reply, "from", str, at)
        if address not in rtts:
            rtts[address] = []
            order.append(address)
        rtt = number(reply, "rtt", at, required=False, minimum=0)
        if rtt is not None:
            rtts[address].append(rtt)
        if "err" in reply and "error" not in hop:
            err = reply["err"]
            hop["error"] = f"!{err}" if isinstance(err, str) else f"!<{integer(reply, 'err', at)}>"
        if "mtu" in reply:
            hop["mtu"] = integer(reply, "mtu", at, minimum=1)
    if order:
        hop["ip"] = order[0]
        hop["other_ips"] = order[1:]
        hop["rtt_ms"] = statistics.median(rtts[order[0]]) if rtts[order[0]] else None
    return hop


def test_atlas_hops_read_as_before():
    from pathwatch.ingest.formats.atlas import _hop

    rng = random.Random(12)
    entry = {"hop": 3, "result": [{"from": "10.0.0.1", "ttl": 253, "size": 28, "rtt": 1.5}, {"x": "*"},
                                  {"from": "10.0.0.2", "rtt": 2, "err": "H"}, {"from": "10.0.0.1", "rtt": 1.25, "mtu": 1400}]}  # fmt: skip
    for mutated in _mutations(entry, rng, 6_000):
        assert _outcome(_hop, mutated, "result[2]") == _outcome(_atlas_hop_checked, mutated, "result[2]"), mutated


def _mtr_hops_checked(hubs: list) -> list:
    """mtr._hops as it was before its fast path."""
    from pathwatch.ingest.fields import number, obj
    from pathwatch.ingest.formats.mtr import _asn, _count, _host

    by_count = {}
    for index, hub in enumerate(hubs):
        where = f"report.hubs[{index}]"
        hub = obj(hub, where)
        count = _count(hub, where)
        ip, hostname = _host(hub, where)
        loss = number(hub, "Loss%", where, required=False, minimum=0)
        average = number(hub, "Avg", where, required=False, minimum=0)
        hop = by_count.setdefault(count, {"ttl": count, "ip": None, "other_ips": []})
        if ip is None:
            continue
        if hop["ip"] is None:
            hop.update(ip=ip, hostname=hostname, asn=_asn(hub, where))
            hop["rtt_ms"] = average if average is not None and (loss is None or loss < 100) else None
        elif ip != hop["ip"] and ip not in hop["other_ips"]:
            hop["other_ips"].append(ip)
    return [by_count[count] for count in sorted(by_count)]


def test_mtr_hubs_read_as_before():
    from pathwatch.ingest.formats.mtr import _hops

    rng = random.Random(13)
    hubs = [{"count": 1, "host": "10.0.0.1", "ASN": "AS64501", "Loss%": 0.0, "Snt": 10, "Avg": 0.5},
            {"count": "2", "host": "r2 (10.0.0.2)", "Loss%": 100.0, "Avg": 0.0},
            {"count": 2, "host": "10.0.0.3", "Loss%": 10, "Avg": 1.25}, {"count": 3, "host": "???"}]  # fmt: skip
    for mutated in _mutations({"hubs": hubs}, rng, 6_000):
        value = mutated.get("hubs")
        if isinstance(value, list):
            assert _outcome(_hops, value) == _outcome(_mtr_hops_checked, value), value


def test_delay_stats_keep_their_order_and_match_statistics():
    """min <= median <= p95 <= max on every input, p95 within rounding of ``statistics.quantiles``.

    Equal delays are the case that broke it: ping on loopback printed three replies of 0.038 ms,
    and statistics' weighted sum made the p95 0.03799999999999999, below the median.
    """
    assert _stats.delay_stats([0.038, 0.038, 0.038])["delay_p95_ms"] == 0.038
    rng = random.Random(8)
    for _ in range(20_000):
        values = [rng.choice([0.038, 0.1, 1e-3, 12.345, round(rng.uniform(0, 50), rng.randrange(0, 4))])
                  for _ in range(rng.randrange(1, 30))]  # fmt: skip
        stats = _stats.delay_stats(values)
        assert stats["delay_min_ms"] <= stats["delay_median_ms"] <= stats["delay_p95_ms"] <= stats["delay_max_ms"], values
        assert stats["jitter_ms"] >= 0
        if len(values) > 1:
            reference = statistics.quantiles(values, n=20, method="inclusive")[18]
            assert stats["delay_p95_ms"] == pytest.approx(reference, rel=1e-12, abs=1e-15), values
