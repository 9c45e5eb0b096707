"""The canonical measurement records: the one contract every part of pathwatch shares.

Three kinds of record, told apart by ``kind``: ``throughput``, ``latency`` and ``trace``.
Units are in the field names (``_bps``, ``_ms``, ``_s``, ``_bytes``); times are RFC 3339 UTC
strings ending in ``Z``. The committed JSON Schema (``schemas/measurement.v3.schema.json``; the v1
and v2 files stay for old readers) is generated from these classes by ``pathwatch schema --write`` and a
test keeps the two equal.

A record is built by a parser, never by hand; ``id`` is deterministic (see
:func:`pathwatch.contract.ids.measurement_id`), so parsing the same measurement twice yields
the same id and storage can upsert on it. :mod:`pathwatch.contract.plain` checks the same
fields by these classes' rules into the JSON-ready dicts they dump, without building them (the
lean path of the streaming normalise step).
"""

from __future__ import annotations

from typing import Annotated, Literal, Union

from pydantic import BaseModel, ConfigDict, Field, NonNegativeFloat, NonNegativeInt

# 2 added ``target_bitrate_bps`` (optional: a v1 record reads as a test that asked for no rate).
# 3 added ``receive_window_bytes`` and ``send_buffer_bytes`` (optional: an older record reads as not
# saying, and a window limit is then read from the congestion window alone).
SCHEMA_VERSION = 3

Rfc3339 = Annotated[str, Field(pattern=r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{1,6})?Z$")]
# A host name or address: the database indexes these (a B-tree entry holds at most 2704 bytes),
# so a longer one is refused here, with its field, instead of failing the store. DNS names are
# at most 253 characters; other text (hop host names, AS owners, errors) has no limit.
HOST_MAX = 255
Host = Annotated[str, Field(max_length=HOST_MAX)]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class _Common(_Strict):
    schema_version: Literal[1, 2, 3] = Field(SCHEMA_VERSION, description="Version of this record contract.")
    id: str = Field(description="Deterministic UUID of the measurement (same input, same id).")
    source: Host | None = Field(
        description="Host the measured traffic leaves from, as the envelope or payload names it; "
        "null only when neither does."
    )
    destination: Host | None = Field(description="Host the measured traffic goes to; null only when unnamed.")
    source_ip: Host | None = Field(None, description="Source address when the payload reports one.")
    destination_ip: Host | None = Field(None, description="Destination address when the payload reports one.")
    time: Rfc3339 = Field(description="Test start, RFC 3339 UTC.")
    tool: str = Field(description="Measuring tool, e.g. iperf3, owping, traceroute.")
    tool_version: str | None = None
    format: str = Field(description="Input format the record was parsed from (see `pathwatch formats`).")
    ip_version: Literal[4, 6] | None = None
    succeeded: bool = Field(True, description="False when the tool itself reported a failed run.")
    error: str | None = Field(None, description="The tool's own error message for a failed run.")
    collected_at: Rfc3339 | None = Field(None, description="When the collector wrapped the result.")


class ThroughputInterval(_Strict):
    start_s: NonNegativeFloat
    end_s: NonNegativeFloat
    throughput_bps: NonNegativeFloat
    retransmits: NonNegativeInt | None = None
    cwnd_bytes: NonNegativeInt | None = Field(None, description="Sum of the streams' congestion windows.")
    rtt_ms: NonNegativeFloat | None = Field(None, description="Mean smoothed RTT over the streams.")
    omitted: bool = False


class Throughput(_Common):
    kind: Literal["throughput"] = "throughput"
    protocol: Literal["tcp", "udp"] | None = None
    streams: int | None = Field(None, ge=1)
    reverse: bool = Field(False, description="The test ran reversed (server sent); source is still the sender.")
    duration_s: NonNegativeFloat | None = None
    target_bitrate_bps: NonNegativeFloat | None = Field(
        None, description="The rate the test asked for (iperf3 -b, pscheduler's bandwidth): a run at it was paced "
        "by the tester, not the network; null when the test asked for none (TCP as fast as it goes) or did not say.")
    throughput_bps: NonNegativeFloat | None = Field(None, description="Sender-side rate, as perfSONAR reports it.")
    receiver_throughput_bps: NonNegativeFloat | None = None
    retransmits: NonNegativeInt | None = None
    rtt_ms: NonNegativeFloat | None = Field(None, description="Mean smoothed RTT seen by the sender.")
    rtt_min_ms: NonNegativeFloat | None = None
    rtt_max_ms: NonNegativeFloat | None = None
    mss_bytes: NonNegativeInt | None = None
    mtu_bytes: NonNegativeInt | None = None
    tcp_window_bytes: NonNegativeInt | None = Field(None, description="Largest congestion window seen.")
    receive_window_bytes: NonNegativeInt | None = Field(
        None, description="Largest receive window the receiver advertised (iperf3 max_snd_wnd), summed over the "
        "streams: a flow that keeps it in flight every round trip is held by the receiver's buffer.")
    send_buffer_bytes: NonNegativeInt | None = Field(
        None, description="The sending socket's buffer per stream as iperf3 read it at the start (sndbuf_actual; "
        "forward runs only): a flow that keeps it in flight is held by the sender's buffer, which "
        "autotuning did not grow.")
    congestion_control: str | None = None
    sent_packets: NonNegativeInt | None = None
    lost_packets: NonNegativeInt | None = None
    jitter_ms: NonNegativeFloat | None = None
    intervals: list[ThroughputInterval] = Field(default_factory=list)


class Latency(_Common):
    kind: Literal["latency"] = "latency"
    one_way: bool = Field(description="True for one-way delay (owamp), false for round-trip (ping).")
    packets_sent: NonNegativeInt | None = None
    packets_received: NonNegativeInt | None = None
    packets_lost: NonNegativeInt | None = None
    loss_ratio: float | None = Field(None, ge=0.0, le=1.0)
    duplicates: NonNegativeInt | None = None
    reordered: NonNegativeInt | None = None
    delay_min_ms: float | None = Field(None, description="One-way delays can be negative with bad clocks.")
    delay_median_ms: float | None = None
    delay_mean_ms: float | None = None
    delay_p95_ms: float | None = None
    delay_max_ms: float | None = None
    jitter_ms: NonNegativeFloat | None = Field(
        None, description="p95 - median delay where per-packet data exists (owping's definition); ping's mdev otherwise."
    )
    max_clock_error_ms: NonNegativeFloat | None = None
    clock_synchronized: bool | None = None
    ttl_min: NonNegativeInt | None = None
    ttl_max: NonNegativeInt | None = None


class Hop(_Strict):
    ttl: int = Field(ge=1, le=255)
    ip: Host | None = Field(
        description="Responding address; its name when the tool printed only a name (tracepath, mtr "
        "without -n); null for a hop that did not answer."
    )
    hostname: str | None = None
    rtt_ms: NonNegativeFloat | None = Field(None, description="Median RTT of the answers from `ip`.")
    asn: NonNegativeInt | None = None
    as_owner: str | None = None
    mtu: NonNegativeInt | None = Field(None, description="Path MTU reported at this hop.")
    error: str | None = Field(None, description="ICMP error flag or text, e.g. !H, !N, net-unreachable.")
    other_ips: list[Host] = Field(default_factory=list, description="Other addresses that answered at this TTL.")


class Trace(_Common):
    kind: Literal["trace"] = "trace"
    hops: list[Hop]
    hop_count: NonNegativeInt
    path_id: str = Field(description="Fingerprint of the responding hop addresses in order.")
    as_path_id: str | None = Field(None, description="Fingerprint of the AS sequence; null without AS data.")
    reached: bool | None = Field(description="The destination answered; null when it cannot be told.")
    pmtu_bytes: NonNegativeInt | None = None
    probe_id: int | None = Field(None, description="RIPE Atlas probe id.")
    measurement_id: int | None = Field(None, description="RIPE Atlas measurement id.")
    protocol: str | None = Field(None, description="Probe protocol: udp, icmp, tcp.")


Measurement = Annotated[Union[Throughput, Latency, Trace], Field(discriminator="kind")]
RECORD_TYPES: dict[str, type[_Common]] = {"throughput": Throughput, "latency": Latency, "trace": Trace}
