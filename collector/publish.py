"""Publish raw envelopes into the raw topic, keyed by path, with optional rate control.

The raw topic carries what collectors produced, byte for byte: envelopes, pscheduler's own
archiver messages, and also input that will not parse (the normalise job dead-letters it
with the reason, so nothing is dropped before it can be accounted for). Bare tool output read
from a file is wrapped into an envelope first, since a bare payload says neither who measured
nor when.

Each message's key is :func:`pathwatch.contract.keys.envelope_key`.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any

import orjson

from pathwatch.contract.keys import envelope_key
from pathwatch.ingest.envelope import is_envelope
from pathwatch.ingest.errors import ParseError
from pathwatch.ingest.reader import Item

KAFKA_DEFAULTS = {
    # The Java client's partitioner (murmur2), as the Flink jobs use: a path's raw envelopes and its
    # records land in the same partition number, so each partition stays in collection order.
    "partitioner": "murmur2_random",
    "acks": "all",
    "enable.idempotence": True,
    "linger.ms": 20,
    "batch.num.messages": 10000,
    "compression.type": "lz4",
    "message.max.bytes": 8 * 2**20,
}


@dataclass(frozen=True)
class Message:
    """One raw-topic message: the bytes to send and its key."""

    value: bytes
    key: bytes | None


def to_message(item: Item, wrap: Callable[[Any], dict] | None = None) -> Message:
    """The message for one read item: envelopes and unreadable input as they are, bare payloads wrapped."""
    if item.error is not None or is_envelope(item.value) or wrap is None:
        return Message(item.raw, envelope_key(item.value))
    try:
        envelope = wrap(item.value)
    except ParseError:  # no format recognised: send as-is; the normalise job says why it is rejected
        return Message(item.raw, None)
    return Message(orjson.dumps(envelope), envelope_key(envelope))


class RateLimit:
    """Sleeps so that calls to :meth:`wait` average at most ``per_second`` (None: no limit)."""

    def __init__(self, per_second: float | None, clock: Callable[[], float] = time.monotonic,
                 sleep: Callable[[float], None] = time.sleep):
        self.per_second, self.clock, self.sleep = per_second, clock, sleep
        self.started: float | None = None
        self.count = 0

    def wait(self) -> None:
        if not self.per_second:
            return
        now = self.clock()
        if self.started is None:
            self.started = now
        due = self.started + self.count / self.per_second
        if due > now:
            self.sleep(due - now)
        self.count += 1


class RawPublisher:
    """A Kafka producer for the raw topic. Use as a context manager; ``close`` flushes.

    ``delivered`` and ``failed`` count broker acknowledgements, so a caller can reconcile what
    it sent with what the broker took.
    """

    def __init__(self, bootstrap: str, topic: str, settings: dict[str, Any] | None = None, config=None):
        from confluent_kafka import Producer

        from pathwatch.stack.kafka_security import client_config

        self.topic = topic
        # Security settings (SASL/TLS) from ``config``, else the stack configuration in force.
        self.producer = Producer(client_config(bootstrap, config, **{**KAFKA_DEFAULTS, **(settings or {})}))
        self.sent = self.delivered = self.failed = 0
        self.errors: list[str] = []

    def _on_delivery(self, error, _message) -> None:
        if error is None:
            self.delivered += 1
        else:
            self.failed += 1
            if len(self.errors) < 10:
                self.errors.append(str(error))

    def send(self, value: bytes, key: bytes | None = None, timestamp_ms: int | None = None) -> None:
        """Queue one message; waits for room when the local queue is full."""
        while True:
            try:
                if timestamp_ms is None:
                    self.producer.produce(self.topic, value, key, on_delivery=self._on_delivery)
                else:
                    self.producer.produce(self.topic, value, key, on_delivery=self._on_delivery,
                                          timestamp=timestamp_ms)
                break
            except BufferError:
                self.producer.poll(0.1)
        self.sent += 1
        self.producer.poll(0)

    def cluster_id(self, timeout: float = 10) -> str:
        """The id of the Kafka cluster this publisher talks to (a wiped broker gets a new one)."""
        return self.producer.list_topics(timeout=timeout).cluster_id

    def send_envelope(self, envelope: dict) -> None:
        """Serialise and queue one envelope dict (what collectors call)."""
        self.send(orjson.dumps(envelope), envelope_key(envelope))

    def close(self, timeout: float = 60) -> None:
        remaining = self.producer.flush(timeout)
        if remaining:
            raise RuntimeError(f"kafka: {remaining} messages to {self.topic} were not delivered within {timeout:.0f} s")
        if self.failed:
            raise RuntimeError(f"kafka: {self.failed} messages to {self.topic} failed: {'; '.join(self.errors)}")

    def __enter__(self) -> RawPublisher:
        return self

    def __exit__(self, kind, *_rest) -> None:
        if kind is None:
            self.close()
        else:
            self.producer.flush(10)


def publish_messages(publisher: RawPublisher, messages: Iterable[Message], rate: RateLimit,
                     progress: Callable[[int], None] | None = None) -> int:
    """Send ``messages`` at ``rate``; returns how many were queued."""
    count = 0
    for message in messages:
        rate.wait()
        publisher.send(message.value, message.key)
        count += 1
        if progress is not None:
            progress(1)
    return count


def messages_of(items: Iterable[Item], wrap: Callable[[Any], dict] | None) -> Iterator[Message]:
    for item in items:
        yield to_message(item, wrap)


def unsendable(item: Item, message: Message, max_bytes: int = KAFKA_DEFAULTS["message.max.bytes"]) -> str | None:
    """Why ``message`` (of ``item``) cannot go on the raw topic, or None: an item skipped unread
    (over the reader's line limit) has no bytes to send, and the broker refuses messages over
    ``max_bytes``.

    >>> unsendable(Item("line 1", b"{}"), Message(b"{}", None)) is None
    True
    >>> unsendable(Item("line 1", b"x" * 9), Message(b"x" * 9, None), max_bytes=8)
    'message of 9 bytes is over the broker limit of 8 bytes (message.max.bytes)'
    """
    if item.unread:
        return str(item.error)
    if len(message.value) > max_bytes:
        return f"message of {len(message.value)} bytes is over the broker limit of {max_bytes} bytes (message.max.bytes)"
    return None
