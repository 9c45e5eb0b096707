"""The parse path's fast paths give exactly what the plain code they replace gives.

Each test keeps the straightforward version (the code before the speed-up) as its reference
and compares on many random inputs, including the edge cases where a fast path must step aside.
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


def test_traceroute_plain_hop_lines_read_as_the_tokenizer_reads_them():
    from pathwatch.ingest.formats.traceroute import _hop, _tokenized_hop

    rng = random.Random(5)
    pieces = ["10.0.0.1", "2001:db8::1", "r1.example.net", "r1.example.net (10.0.0.2)", "10.0.0.2 (10.0.0.2)",
              "x (y)", "5", "0.5", "F=1500", "AS5", "é.example", "a_b", "0.123 ms", "12 ms", "1.5 ms", "9" * 400 + " ms",
              "*", "**", "!H", "[AS64500]", "<MPLS:L=1>", "'-2'", "ms", "(", ")", "١٢ ms"]  # fmt: skip
    for _ in range(20_000):
        rest = rng.choice(["", "* "]) + rng.choice(pieces)
        for _ in range(rng.randrange(0, 5)):
            rest += rng.choice([" ", "  ", "\t", ""]) + rng.choice(pieces)
        rest = rest.strip() or "*"
        assert _outcome(_hop, 3, rest, "line 2", rest) == _outcome(_tokenized_hop, 3, rest, "line 2", rest), rest


def _owping_raw_line_by_line(payload: str, ctx):
    from pathwatch.ingest.formats.owping import _content_lines, _parse_raw, _raw_packet

    lines = _content_lines(payload)
    if not lines:
        raise ParseError("payload", "empty owping output")
    return _parse_raw((_raw_packet(number, line) for number, line in lines), ctx)


def test_owping_raw_payloads_read_in_one_pass_as_line_by_line():
    from pathwatch.ingest.context import Context
    from pathwatch.ingest.formats.owping import parse

    from .conftest import FIXTURES

    ctx = Context("owping", "a.example", "b.example", "2024-01-01T00:00:00Z")
    rng = random.Random(6)
    bases = [path.read_text() for path in sorted((FIXTURES / "owping").glob("raw-*.txt"))]
    garbles = ["0", "-1", "1e999", "..", " ", "\r", "9" * 21, "\u0663", "e", "+", "\n", "\n\n", "2"]
    for _ in range(3_000):
        lines = rng.choice(bases).splitlines()
        for _ in range(rng.randrange(0, 3)):
            index = rng.randrange(len(lines))
            at = rng.randrange(len(lines[index]) + 1)
            lines[index] = lines[index][:at] + rng.choice(garbles) + lines[index][at:]
        payload = rng.choice(["\n", "\r\n", "\n\n"]).join(lines) + rng.choice(["", "\n", " \n"])
        fast = _outcome(lambda: [r.model_dump_json() for r in parse(payload, ctx)])
        slow = _outcome(lambda: [r.model_dump_json() for r in _owping_raw_line_by_line(payload, ctx)])
        assert fast == slow, payload


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


def test_throughput_intervals_of_plain_values_read_as_the_checked_path_reads_them():
    from pathwatch.ingest.formats import iperf3, pscheduler

    rng = random.Random(8)
    iperf3_entry = {"streams": [{"socket": 5, "start": 0, "end": 1.0, "bits_per_second": 9.5e9, "retransmits": 0, "snd_cwnd": 3145728,
                                 "rtt": 85411, "omitted": False}, {"snd_cwnd": 100, "rtt": 0}],
                    "sum": {"start": 0, "end": 1.000094, "bits_per_second": 9.5e9, "retransmits": 2, "omitted": False}}  # fmt: skip
    pscheduler_entry = {"streams": [], "summary": {"start": 0.0, "end": 1.000094, "throughput-bits": 2309334074.5969877,
                                                   "retransmits": 0, "tcp-window-size": 30199500, "rtt": 85411, "omitted": False}}  # fmt: skip
    for module, entry in ((iperf3, iperf3_entry), (pscheduler, pscheduler_entry)):
        for mutated in _mutations(entry, rng, 4_000):
            assert _outcome(module._interval, mutated, "intervals[3]") == _outcome(module._checked_interval, mutated, "intervals[3]")


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


def test_scamper_replies_of_plain_values_read_as_the_checked_path_reads_them():
    from pathwatch.ingest.formats.scamper import _checked_reply, _reply

    rng = random.Random(11)
    replies = [
        {"addr": "10.77.1.1", "probe_ttl": 1, "probe_id": 1, "rtt": 0.061, "icmp_type": 11, "icmp_code": 0, "name": "r1.lab"},
        {"addr": "10.77.6.2", "probe_ttl": 4, "rtt": 0.05, "icmp_type": 3, "icmp_code": 4, "icmp_nhmtu:": 1500},
        {"addr": "2001:db8::1", "probe_ttl": 3, "rtt": 4294967.2, "icmp_type": 1, "icmp_code": 3, "icmp_nhmtu": 0},
        {"addr": "2001:db8::2", "probe_ttl": 255, "icmp_type": 2, "icmp_code": 0, "icmp_nhmtu": 1280},
    ]
    for reply in replies:
        for mutated in _mutations(reply, rng, 2_000):
            assert _outcome(_reply, mutated, "hops[2]") == _outcome(_checked_reply, mutated, "hops[2]"), mutated


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
