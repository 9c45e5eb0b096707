"""A raw-topic publisher that keeps each envelope in a :class:`~pathwatch.collector.spool.Spool`
until the broker acknowledges it, and sends again what failed (``pathwatch collect``'s sink).

On start it sends what an earlier run left unacknowledged. A delivery that fails (Kafka away
longer than the producer's ``message.timeout.ms``) is produced again ``retry_s`` later, while
the collector goes on measuring; a collector killed meanwhile sends it when it next starts. A
thread serves the producer's delivery reports every ``poll_s``.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

import orjson

from pathwatch.collector.publish import RawPublisher

from pathwatch.contract.keys import envelope_key
from pathwatch.collector.spool import Entry, Spool


class SpooledPublisher:
    """``send_envelope`` spools then produces; ``close`` flushes and says how many stay spooled."""

    def __init__(self, publisher: RawPublisher, spool: Spool, retry_s: float = 10.0, poll_s: float = 0.5,
                 clock: Callable[[], float] = time.monotonic):  # fmt: skip
        self.publisher, self.spool = publisher, spool
        self.retry_s, self.poll_s, self.clock = retry_s, poll_s, clock
        self.delivered = self.failed = self.resent = 0
        self.errors: list[str] = []
        self._retry: list[tuple[float, Entry]] = []
        self._retry_lock = threading.Lock()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._serve, name="spool-delivery", daemon=True)

    def start(self) -> int:
        """Send what an earlier run left in the spool and start serving deliveries; returns how many."""
        for entry in self.spool.pending():
            self._produce(entry)
            self.resent += 1
        self._thread.start()
        return self.resent

    def send_envelope(self, envelope: dict) -> None:
        """Write one envelope to the spool, then hand it to the producer."""
        self._produce(self.spool.append(orjson.dumps(envelope)))

    def _produce(self, entry: Entry) -> None:
        def on_delivery(error, _message) -> None:
            if error is None:
                self.delivered += 1
                self.spool.acknowledge(entry)
            else:
                self._failed(entry, str(error))

        try:
            self.publisher.producer.produce(self.publisher.topic, entry.value, envelope_key(orjson.loads(entry.value)),
                                            on_delivery=on_delivery)  # fmt: skip
        except BufferError:
            self._failed(entry, "the producer's local queue is full")

    def _failed(self, entry: Entry, reason: str) -> None:
        self.failed += 1
        self.errors = [*self.errors[-9:], reason]
        with self._retry_lock:
            self._retry.append((self.clock() + self.retry_s, entry))

    def _serve(self) -> None:
        while not self._stop.is_set():
            self.publisher.producer.poll(self.poll_s)
            now = self.clock()
            with self._retry_lock:
                due = [entry for at, entry in self._retry if at <= now]
                self._retry = [(at, entry) for at, entry in self._retry if at > now]
            for entry in due:
                self._produce(entry)

    def close(self, timeout: float = 60) -> int:
        """Stop, give the producer ``timeout`` seconds to deliver; returns how many stay in the spool."""
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join()
        with self._retry_lock:
            retry, self._retry = self._retry, []
        for _at, entry in retry:  # one last try for what failed before
            self._produce(entry)
        self.publisher.producer.flush(timeout)
        left = self.spool.unacknowledged
        self.spool.close()
        return left
