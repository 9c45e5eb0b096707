"""``pathwatch tickets run``: the anomalies topic in, tickets kept in step, offsets committed after.

Per message: parse and validate it against the anomaly contract (a bad one becomes a dead
letter with stage ``tickets``, naming the field, and is committed: it is not lost, and it does
not block the partition); then reconcile its ticket, retrying with backoff while the ticket
system is unavailable (nothing is skipped, and a retry repeats nothing, see reconcile.py);
record the ticket in the ``anomaly_tickets`` table when a database is configured; only then
commit the offset. A permanent refusal by the ticket system also becomes a dead letter.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from dataclasses import dataclass, field
from typing import Any, Callable

from pydantic import ValidationError

from pathwatch.contract.anomaly import AnomalyRecord
from pathwatch.tickets.backends.base import BackendError, BackendUnavailable, Ticket
from pathwatch.tickets.reconcile import Outcome, Reconciler

log = logging.getLogger(__name__)

STAGE = "tickets"


@dataclass(frozen=True)
class Retry:
    """Backoff while the ticket system (or the database) is unavailable: ``first`` seconds,
    doubling up to ``longest``; ``attempts`` 0 means until it works (or the service stops)."""

    first: float = 1.0
    longest: float = 60.0
    attempts: int = 0


class Interrupted(RuntimeError):
    """The service was asked to stop while a message was still being retried (it stays uncommitted)."""


class BadAnomaly(ValueError):
    """A message that is not an anomaly of the contract; says which field and why."""

    def __init__(self, field: str | None, reason: str):
        super().__init__(f"field {field}: {reason}" if field else reason)
        self.field, self.reason = field, reason


def parse(body: bytes | str | None) -> dict[str, Any]:
    """The anomaly of one message, validated against the contract (``BadAnomaly`` otherwise).

    >>> parse(b'{"id": "x"}')
    Traceback (most recent call last):
    ...
    pathwatch.tickets.service.BadAnomaly: field kind: Field required
    """
    if body is None:
        raise BadAnomaly(None, "empty message (no value)")
    try:
        data = json.loads(body)
    except (ValueError, UnicodeDecodeError) as error:
        raise BadAnomaly(None, f"not JSON: {error}") from None
    if not isinstance(data, dict):
        raise BadAnomaly(None, f"not a JSON object but {type(data).__name__}")
    try:
        return AnomalyRecord.model_validate(data).model_dump(mode="json")
    except ValidationError as error:
        first = error.errors()[0]
        raise BadAnomaly(".".join(str(p) for p in first["loc"]) or None, first["msg"]) from None


@dataclass
class Handled:
    """What became of one message."""

    outcome: Outcome | None = None
    dead_letter: dict[str, Any] | None = None
    attempts: int = 1


@dataclass
class Handler:
    """One message at a time: parse, reconcile with retries, record, or dead-letter.

    ``dead_letters`` receives each dead-letter object (the service produces it to the
    dead-letters topic); ``record`` (optional) receives each outcome with a ticket (the service
    writes ``anomaly_tickets``); ``stopping`` ends the retries when the service shuts down.
    """

    reconciler: Reconciler
    dead_letters: Callable[[dict[str, Any]], None]
    record: Callable[[Outcome], None] | None = None
    retry: Retry = field(default_factory=Retry)
    sleep: Callable[[float], None] = time.sleep
    stopping: threading.Event = field(default_factory=threading.Event)
    on_retry: Callable[[int, Exception], None] | None = None

    def handle(self, body: bytes | None, topic: str = "", partition: int | None = None, offset: int | None = None) -> Handled:
        from pathwatch.streaming.normalise import Origin, dead_letter

        origin = Origin(topic, partition, offset)
        try:
            anomaly = parse(body)
        except BadAnomaly as error:
            letter = dead_letter(body or b"", origin, int(time.time() * 1000), STAGE, f"not an anomaly: {error}", error.field)
            log.warning("tickets: %s, partition %s, offset %s: %s (dead-lettered)", topic, partition, offset, error)
            self.dead_letters(letter)
            return Handled(dead_letter=letter)
        delay, attempt = self.retry.first, 0
        while True:
            attempt += 1
            try:
                outcome = self.reconciler.handle(anomaly)
                if self.record is not None and outcome.ticket is not None:
                    self.record(outcome)
                return Handled(outcome=outcome, attempts=attempt)
            except BackendUnavailable as error:
                failure: Exception = error
            except BackendError as error:
                reason = f"the ticket system refused anomaly {anomaly['id']}: {error}"
                letter = dead_letter(body, origin, int(time.time() * 1000), STAGE, reason, None,
                                     identity=f"{anomaly['id']}|{topic}|{partition}|{offset}")
                log.error("tickets: %s (dead-lettered)", reason)
                self.dead_letters(letter)
                return Handled(dead_letter=letter, attempts=attempt)
            except Exception as error:  # the database behind record(): retried like the ticket system
                if not _is_database_error(error):
                    raise
                self.reconciler.forget()
                failure = error
            if self.retry.attempts and attempt >= self.retry.attempts:
                raise failure
            if self.on_retry is not None:
                self.on_retry(attempt, failure)
            log.warning("tickets: anomaly %s: %s; retrying in %.1f s", anomaly["id"], failure, delay)
            if self.stopping.is_set() or self._sleep(delay):
                raise Interrupted(f"stopped while retrying anomaly {anomaly['id']}: {failure}") from failure
            delay = min(delay * 2, self.retry.longest)

    def _sleep(self, seconds: float) -> bool:
        """Sleep; True if the service is stopping meanwhile."""
        if self.sleep is time.sleep:
            return self.stopping.wait(seconds)
        self.sleep(seconds)
        return self.stopping.is_set()


def _is_database_error(error: Exception) -> bool:
    try:
        import psycopg
    except ImportError:  # pragma: no cover - psycopg is a dependency
        return False
    return isinstance(error, psycopg.OperationalError)


class TicketTable:
    """Upserts ``anomaly_tickets`` (sql/004): every anomaly a ticket covers, with its ticket and state."""

    def __init__(self, database_url: str, system: str):
        self.database_url, self.system = database_url, system
        self._connection = None

    def _connect(self):
        import psycopg

        if self._connection is None or self._connection.closed:
            self._connection = psycopg.connect(self.database_url, autocommit=True, connect_timeout=10)
        return self._connection

    def __call__(self, outcome: Outcome) -> None:
        ticket: Ticket = outcome.ticket  # type: ignore[assignment]
        rows = [(anomaly_id, self.system, ticket.reference, ticket.url, ticket.status) for anomaly_id in ticket.state.members]
        try:
            with self._connect().cursor() as cursor:
                cursor.executemany(
                    "INSERT INTO anomaly_tickets (anomaly_id, system, reference, url, state) VALUES (%s, %s, %s, %s, %s) "
                    "ON CONFLICT (anomaly_id) DO UPDATE SET system = EXCLUDED.system, reference = EXCLUDED.reference, "
                    "url = EXCLUDED.url, state = EXCLUDED.state, updated_at = now()", rows)
        except Exception:
            self._connection = None
            raise


def _anomalies_consumer(bootstrap: str, topics: dict[str, str], group: str, config=None):
    """A consumer of the anomalies topic that commits only what was applied (read-committed)."""
    from confluent_kafka import Consumer

    from pathwatch.stack.kafka_security import client_config

    consumer = Consumer(client_config(bootstrap, config, **{"group.id": group, "enable.auto.commit": False,
                                                            "auto.offset.reset": "earliest",
                                                            "isolation.level": "read_committed"}))
    consumer.subscribe([topics["anomalies"]])
    return consumer


def _deliver(producer, topics: dict[str, str], letters: list[dict[str, Any]]) -> None:
    """Produce dead letters to the dead-letters topic and wait until Kafka has them."""
    from confluent_kafka import KafkaException

    for letter in letters:
        producer.produce(topics["deadletters"], key=letter["id"].encode(), value=json.dumps(letter).encode())
    if producer.flush(30) != 0:
        raise KafkaException("tickets: dead letters not delivered within 30 s")


def consume(handler: Handler, bootstrap: str, topics: dict[str, str], group: str,
            stopping: threading.Event, idle_exit_s: float | None = None, config=None) -> int:
    """The Kafka loop: read the anomalies topic, handle each message, then commit its offset.

    Dead letters are produced (and flushed) before the offset is committed. Returns the number
    of messages handled; stops when ``stopping`` is set, or after ``idle_exit_s`` seconds
    without a message (for tests and one-shot catch-up runs).
    """
    from confluent_kafka import KafkaException, Producer

    from pathwatch.stack.kafka_security import client_config

    producer = Producer(client_config(bootstrap, config, **{"enable.idempotence": True}))
    pending: list[dict] = []
    handler.dead_letters = pending.append
    handler.stopping = stopping
    consumer = _anomalies_consumer(bootstrap, topics, group, config)
    handled, idle_since = 0, time.monotonic()
    try:
        while not stopping.is_set():
            message = consumer.poll(0.5)
            if message is None:
                if idle_exit_s is not None and time.monotonic() - idle_since > idle_exit_s:
                    break
                continue
            if message.error():
                if message.error().fatal():
                    raise KafkaException(message.error())
                log.warning("tickets: kafka: %s", message.error())
                continue
            try:
                handler.handle(message.value(), message.topic(), message.partition(), message.offset())
            except Interrupted:
                break   # not committed: handled again next time
            if pending:
                _deliver(producer, topics, pending)
                pending.clear()
            try:
                consumer.commit(message=message, asynchronous=False)
            except KafkaException as error:
                # The group moved on while the message was handled (a rebalance; the broker back
                # after a restart: "Unknown member"). The partition is handed out again from its
                # last commit, so the message comes back, and handling it again repeats nothing.
                if error.args[0].fatal():
                    raise
                log.warning("tickets: kafka: commit of %s [%d] @%d failed (%s); it will be handled again",
                            message.topic(), message.partition(), message.offset(), error.args[0].str())
                continue
            handled += 1
            idle_since = time.monotonic()
    finally:
        consumer.close()
    return handled


def event_time(body: bytes | None) -> float:
    """When an anomaly state happened: its end when closed, else when it was detected (0 if unreadable).

    >>> event_time(b'{"detected_at": "2026-01-01T00:00:10Z", "end": null}')
    1767225610.0
    """
    from pathwatch.contract.timefmt import parse_rfc3339

    try:
        data = json.loads(body or b"")
        return parse_rfc3339(data.get("end") or data["detected_at"]).timestamp()
    except Exception:  # a malformed message: handled (dead-lettered) first
        return 0.0


def replay(handler: Handler, bootstrap: str, topics: dict[str, str], group: str, idle_exit_s: float = 10.0,
           config=None) -> int:
    """Catch up on history: read everything ``group`` has not committed, apply it in event-time
    order across partitions (the topic keeps order only within a partition, and a replay of
    weeks interleaves them far apart), then commit. For a topic that already holds history,
    as in ``pathwatch demo``; the live service is :func:`consume`. Returns the messages applied.
    """
    from confluent_kafka import KafkaException, Producer, TopicPartition

    from pathwatch.stack.kafka_security import client_config

    consumer = _anomalies_consumer(bootstrap, topics, group, config)
    read: list[tuple[float, int, int, str, bytes | None]] = []
    idle_since = time.monotonic()
    try:
        while time.monotonic() - idle_since <= idle_exit_s:
            message = consumer.poll(0.5)
            if message is None:
                continue
            if message.error():
                if message.error().fatal():
                    raise KafkaException(message.error())
                continue
            read.append((event_time(message.value()), message.partition(), message.offset(), message.topic(), message.value()))
            idle_since = time.monotonic()
        letters: list[dict] = []
        handler.dead_letters = letters.append
        for _, partition, offset, topic, value in sorted(read, key=lambda item: item[:3]):
            handler.handle(value, topic, partition, offset)
        if letters:
            _deliver(Producer(client_config(bootstrap, config, **{"enable.idempotence": True})), topics, letters)
        ends: dict[tuple[str, int], int] = {}
        for _, partition, offset, topic, _ in read:
            ends[(topic, partition)] = max(ends.get((topic, partition), -1), offset + 1)
        if ends:
            consumer.commit(offsets=[TopicPartition(t, p, o) for (t, p), o in ends.items()], asynchronous=False)
    finally:
        consumer.close()
    return len(read)
