"""``pathwatch publish FILE...``: replay raw files into the raw topic."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Annotated, Any, Optional

import typer

from pathwatch.ingest.reader import DEFAULT_LIMITS


def _wrapper(fmt: str | None, source: str | None, destination: str | None, collected_at: str | None):
    from pathwatch.ingest import registry

    def wrap(value: Any) -> dict:
        name = registry.get(fmt).name if fmt else registry.detect(value).name
        envelope = {"format": name, "payload": value, "collected_at": collected_at}
        if source:
            envelope["source"] = source
        if destination:
            envelope["destination"] = destination
        return envelope

    return wrap


def _messages(origin: str, items, wrap, err, skipped: Counter, advance) -> Iterator:
    """The messages of ``items``; an item that cannot be sent is reported on ``err`` and counted instead."""
    from pathwatch.console import describe_reject
    from pathwatch.collector.publish import to_message, unsendable

    for item in items:
        advance(len(item.raw) + 1)
        message = to_message(item, wrap)
        reason = unsendable(item, message)
        if reason is None:
            yield message
        else:
            skipped[origin] += 1
            err.print(describe_reject(origin, item.location, None, f"not published: {reason}"), markup=False)


def publish(
    inputs: Annotated[list[Path], typer.Argument(help="Files of raw envelopes (JSON Lines, a JSON array or one document) or bare tool output.", exists=True, dir_okay=False)],
    rate: Annotated[Optional[float], typer.Option(help="At most this many messages per second (default: as fast as the broker takes them).")] = None,
    format: Annotated[Optional[str], typer.Option("--format", "-f", help="Format of bare inputs (default: detected).")] = None,
    source: Annotated[Optional[str], typer.Option(help="Source host for bare inputs.")] = None,
    destination: Annotated[Optional[str], typer.Option(help="Destination host for bare inputs.")] = None,
    collected_at: Annotated[Optional[str], typer.Option(help="RFC 3339 collection time for bare inputs (default: the file's mtime).")] = None,
    bootstrap: Annotated[Optional[str], typer.Option(envvar="PATHWATCH_KAFKA_BOOTSTRAP", help="Kafka bootstrap servers (default: the stack's).")] = None,
    topic: Annotated[Optional[str], typer.Option(help="Topic (default: the stack's raw topic).")] = None,
    max_line_bytes: Annotated[int, typer.Option(min=1, help="Longest line (or whole input that is not JSON Lines) read; longer ones are reported, not sent.")] = DEFAULT_LIMITS.max_line_bytes,
) -> None:
    """Publish raw inputs into the raw topic, one message per envelope, keyed by path.

    Envelopes (and input that will not parse — the pipeline dead-letters it with the reason)
    are sent byte for byte; bare tool output is wrapped into an envelope with the options
    above. JSON Lines are read one line at a time. A line over --max-line-bytes (64 MiB) or
    a message over the broker's (8 MiB) is not sent: it gets a line on standard error naming
    the file and line, and the exit status is 2. Prints how many messages the broker acknowledged.
    """
    from pathwatch.console import bytes_progress, err_console
    from pathwatch.ingest.files import open_input
    from pathwatch.collector.publish import RateLimit, RawPublisher, publish_messages
    from pathwatch.ingest.reader import Limits, read_stream

    err = err_console()
    if bootstrap is None or topic is None:
        from pathwatch import stack
        from pathwatch.stack.kafka import topic_names

        config = stack.resolve()
        bootstrap = bootstrap or stack.status(config).kafka_bootstrap
        topic = topic or topic_names(config)["raw"]
    limit = RateLimit(rate)
    total = 0
    skipped: Counter = Counter()
    progress = bytes_progress(err, [str(path) for path in inputs], label="publishing")
    advance = (lambda n: progress.advance(progress.task_ids[0], n)) if progress is not None else (lambda n: None)
    try:
        with RawPublisher(bootstrap, topic) as publisher:
            for path in inputs:
                with open_input(str(path)) as (stream, mtime):
                    wrap = _wrapper(format, source, destination, collected_at or mtime)
                    messages = _messages(str(path), read_stream(stream, Limits(max_line_bytes=max_line_bytes)), wrap, err, skipped, advance)
                    total += publish_messages(publisher, messages, limit)
    finally:
        if progress is not None:
            progress.stop()
    err.print(f"published {total} messages to {topic} at {bootstrap}: {publisher.delivered} acknowledged"
              + (f"; {sum(skipped.values())} not published (see above)" if skipped else ""), markup=False)
    if skipped:
        raise typer.Exit(2)
