"""``pathwatch publish FILE...``: replay raw files into the raw topic."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, Optional

import typer


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


def publish(
    inputs: Annotated[list[Path], typer.Argument(help="Files of raw envelopes (JSON Lines, a JSON array or one document) or bare tool output.", exists=True, dir_okay=False)],
    rate: Annotated[Optional[float], typer.Option(help="At most this many messages per second (default: as fast as the broker takes them).")] = None,
    format: Annotated[Optional[str], typer.Option("--format", "-f", help="Format of bare inputs (default: detected).")] = None,
    source: Annotated[Optional[str], typer.Option(help="Source host for bare inputs.")] = None,
    destination: Annotated[Optional[str], typer.Option(help="Destination host for bare inputs.")] = None,
    collected_at: Annotated[Optional[str], typer.Option(help="RFC 3339 collection time for bare inputs (default: the file's mtime).")] = None,
    bootstrap: Annotated[Optional[str], typer.Option(envvar="PATHWATCH_KAFKA_BOOTSTRAP", help="Kafka bootstrap servers (default: the stack's).")] = None,
    topic: Annotated[Optional[str], typer.Option(help="Topic (default: the stack's raw topic).")] = None,
) -> None:
    """Publish raw inputs into the raw topic, one message per envelope, keyed by path.

    Envelopes (and input that will not parse — the pipeline dead-letters it with the reason)
    are sent byte for byte; bare tool output is wrapped into an envelope with the options
    above. Prints how many messages the broker acknowledged.
    """
    from datetime import datetime, timezone

    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TaskProgressColumn, TimeRemainingColumn

    from pathwatch.console import err_console
    from pathwatch.contract.timefmt import format_utc
    from pathwatch.ingest.publish import RateLimit, RawPublisher, messages_of, publish_messages
    from pathwatch.ingest.reader import read_items

    err = err_console()
    if bootstrap is None or topic is None:
        from pathwatch import stack
        from pathwatch.stack.kafka import topic_names

        config = stack.resolve()
        bootstrap = bootstrap or stack.status(config).kafka_bootstrap
        topic = topic or topic_names(config)["raw"]
    limit = RateLimit(rate)
    total = 0
    with RawPublisher(bootstrap, topic) as publisher, Progress(
            "[progress.description]{task.description}", BarColumn(), MofNCompleteColumn(), TaskProgressColumn(),
            TimeRemainingColumn(), console=err, transient=True, disable=not err.is_terminal) as progress:
        for path in inputs:
            data = path.read_bytes()
            mtime = format_utc(datetime.fromtimestamp(path.stat().st_mtime, tz=timezone.utc))
            items = list(read_items(data))
            task = progress.add_task(path.name, total=len(items))
            wrap = _wrapper(format, source, destination, collected_at or mtime)
            total += publish_messages(publisher, messages_of(items, wrap), limit,
                                      lambda n: progress.advance(task, n))
    err.print(f"published {total} messages to {topic} at {bootstrap}: {publisher.delivered} acknowledged",
              markup=False)
